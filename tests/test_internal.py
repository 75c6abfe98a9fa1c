"""Internal topics (kafkadump.decoders.internal_topics): schema round trips, damage, CLI, hexdump, summaries.

Records are built by ``internal_encoder`` straight from Kafka's JSON schema
files (an encoder independent of kafkadump's tables and schema decoder) and
framed by ``builders``; expected offsets are worked out from the layouts,
never by decoding.  The real logs of the shared corpus are in
``test_internal_corpus.py``.
"""

from __future__ import annotations

import base64
import json
import struct

import builders as bld
import internal_encoder as E
import pytest
from conftest import SHARED
from typer.testing import CliRunner

from kafkadump.cli import app
from kafkadump.decoders.batches import Batch
from kafkadump.decoders.batches import iter_batches
from kafkadump.decoders.batches.walk import decode_spanned
from kafkadump.base.findings import Code
from kafkadump.base.findings import Severity
from kafkadump.decoders.internal_topics.decoded import Part
from kafkadump.decoders.internal_topics.kinds import kind_from_path
from kafkadump.decoders.internal_topics.kinds import resolve_kind
from kafkadump.decoders.internal_topics.record_decoder import decoder_for
from kafkadump.decoders.internal_topics.record_decoder import expand_spans
from kafkadump.decoders.internal_topics.summary import summarize
from kafkadump.render.hexdump import leaf_spans, tiling_errors

MUTATION_CODES = {"internal-type-unknown", "internal-version-unknown", "internal-malformed",
                  "internal-trailing-bytes"}

runner = CliRunner()


@pytest.fixture(autouse=True, scope="module")
def _schemas():
    if not E.SCHEMAS.exists():
        pytest.skip(f"Kafka's JSON schemas not present at {E.SCHEMAS} (they live beside the project)")


# --- helpers -----------------------------------------------------------------------------------------

def i16(v):
    return struct.pack(">h", v)


def frame(api_key, version, body):
    return E.uvarint(1) + E.uvarint(api_key) + E.uvarint(version) + body


def plain(v):
    """Decoded data with embedded Parts replaced by their raw bytes (to compare with a sample)."""
    if isinstance(v, Part):
        return v.raw
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


def batch_of(pairs, *, codec=0, control=False, base_offset=0):
    """One v2 batch of (key, value) records: ``(Batch, Layout)``."""
    lay = bld.v2_batch(base_offset, [bld.Rec(k, v) for k, v in pairs], codec=codec, control=control,
                       transactional=control, producer_id=7 if control else -1, producer_epoch=0 if control else -1)
    items = list(iter_batches(lay.data, "t"))
    assert len(items) == 1 and isinstance(items[0], Batch) and not items[0].findings, items
    return items[0], lay


def decode_all(kind, pairs, **kw):
    b, lay = batch_of(pairs, **kw)
    dec = decoder_for(kind, redact_secrets=False)  # the bytes as they are (masking: test_redact_secrets)
    return [dec.decode_record(r, b) for r in b.records], b, lay


def field_pos(lay, i, field):
    """Where field ``field`` ("key"/"value") of record ``i`` starts: (position, in decompressed bytes?)."""
    if lay.codec:
        plainbytes = b"".join(bld.encode_record(bld.Rec(r[2], r[3]), n) for n, r in enumerate(lay.records))
        return bld.record_fields(plainbytes, lay.record_positions[i])[field], True
    return bld.record_fields(lay.data, lay.record_positions[i])[field], False


def codes(d):
    return [f.code for f in d.findings]


def coordinator_cases(folder):
    """(key schema, key version, value schema) of one records/ folder."""
    out = []
    for name in E.names_in(folder):
        if name.endswith("Key"):
            for kv in E.valid_versions(E.load(name)):
                out.append((name, kv, name[:-3] + "Value"))
    return out


def subscription(version, topics=("orders", "payments"), owned=True):
    doc = E.load("ConsumerProtocolSubscription")
    value = {"topics": list(topics), "userData": b"ud"}
    if version >= 1:
        value["ownedPartitions"] = [{"topic": "orders", "partitions": [0, 2]}] if owned else []
    if version >= 2:
        value["generationId"] = 12
    if version >= 3:
        value["rackId"] = "rack-a"
    return i16(version) + E.encode(doc, min(version, 3), value), value


def assignment(version, parts=(("orders", [0, 1]),)):
    doc = E.load("ConsumerProtocolAssignment")
    value = {"assignedPartitions": [{"topic": t, "partitions": p} for t, p in parts], "userData": None}
    return i16(version) + E.encode(doc, min(version, 3), value), value


# --- kinds -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path,kind", [
    ("/var/kafka/__consumer_offsets-17/00000000000000000000.log", "offsets"),
    ("__consumer_offsets-17/00000000000000000000.log", "offsets"),
    ("/d/__transaction_state-44/00000000000000000000.log", "transactions"),
    ("/d/__cluster_metadata-0/00000000000000000000.log", "metadata"),
    ("/d/__cluster_metadata-0/00000000000000007364-0000000001.checkpoint", "metadata"),
    ("/d/bootstrap.checkpoint", "metadata"),
    ("/d/__share_group_state-3/00000000000000000000.log", "share-state"),
    ("/d/__remote_log_metadata-9/00000000000000000000.log", "remote-log-metadata"),
    ("/d/__consumer_offsets-17.0123456789abcdef0123456789abcdef-delete/00000000000000000000.log", "offsets"),
    ("/d/__consumer_offsets-17", "offsets"),
    ("/d/orders-3/00000000000000000000.log", None),
    ("/d/__consumer_offsets/00000000000000000000.log", None),
    ("00000000000000000000.log", None),
])
def test_kind_from_path(path, kind):
    assert kind_from_path(path) == kind


def test_resolve_kind():
    p = "/d/__consumer_offsets-1/0.log"
    assert resolve_kind("auto", p) == "offsets"
    assert resolve_kind("none", p) is None
    assert resolve_kind("metadata", p) == "metadata"
    with pytest.raises(ValueError):
        resolve_kind("bogus", p)


def test_key_version_map_comes_from_the_schemas():
    from kafkadump.decoders.internal_topics.record_decoder import key_schemas

    m = key_schemas("group-coordinator")
    assert m[0] == m[1] == "OffsetCommitKey" and m[2] == "GroupMetadataKey"
    assert {m[v] for v in range(3, 9)} == {"ConsumerGroupMetadataKey", "ConsumerGroupPartitionMetadataKey",
                                           "ConsumerGroupMemberMetadataKey",
                                           "ConsumerGroupTargetAssignmentMetadataKey",
                                           "ConsumerGroupTargetAssignmentMemberKey",
                                           "ConsumerGroupCurrentMemberAssignmentKey"}
    # every key schema of the folder, at every valid version, is reachable
    for name, kv, _ in coordinator_cases("group-coordinator"):
        assert m[kv] == name


# --- round trips: every key/value type and version ---------------------------------------------------

COORDINATOR = [(kind, name) for kind, folder in (("offsets", "group-coordinator"),
                                                 ("transactions", "transaction-coordinator"),
                                                 ("share-state", "share-coordinator"))
               for name in sorted({c[0] for c in coordinator_cases(folder)})] if E.SCHEMAS.exists() else []


def _value_sample(vdoc, vv, variant):
    over = {}
    if vdoc["name"] == "GroupMetadataValue":
        over["protocolType"] = "connect"  # not the consumer protocol: member payloads stay bytes
    value = E.sample(vdoc, vv, variant, over)
    classic = value.get("classicMemberMetadata")
    if isinstance(classic, dict):  # a classic member's metadata is a consumer protocol subscription
        for n, pr in enumerate(classic["supportedProtocols"]):
            pr["metadata"] = subscription(n % 4)[0]
    return value


@pytest.mark.parametrize("kind,key_schema", COORDINATOR)
def test_coordinator_round_trip_every_key_and_value_version(kind, key_schema):
    kdoc = E.load(key_schema)
    vdoc = E.load(key_schema[:-3] + "Value")
    pairs, expect = [], []
    for kv in E.valid_versions(kdoc):
        for vv in E.valid_versions(vdoc):
            for variant in (0, 1, 2):
                k = E.sample(kdoc, kv, variant)
                v = _value_sample(vdoc, vv, variant)
                pairs.append((i16(kv) + E.encode(kdoc, kv, k), i16(vv) + E.encode(vdoc, vv, v)))
                expect.append((kv, E.expected_decoded(kdoc, kv, k), vv, E.expected_decoded(vdoc, vv, v)))
        pairs.append((pairs[-1][0], None))  # a tombstone for the last key
        expect.append((expect[-1][0], expect[-1][1], None, None))
    decoded, _, _ = decode_all(kind, pairs)
    for d, (kv, kdata, vv, vdata) in zip(decoded, expect):
        assert d.findings == [], d.findings
        assert (d.kind, d.key.schema, d.key.version, d.key.data) == (kind, key_schema, kv, kdata)
        if vv is None:
            assert d.value is None and d.tombstone
        else:
            assert not d.tombstone
            assert (d.value.schema, d.value.version, d.value.partial) == (vdoc["name"], vv, False)
            assert plain(d.value.data) == vdata


METADATA = [(kind, name) for kind, folder in (("metadata", "metadata"), ("remote-log-metadata", "storage"))
            for name in E.names_in(folder) if E.load(name).get("type") == "metadata"] if E.SCHEMAS.exists() else []


@pytest.mark.parametrize("kind,schema", METADATA)
def test_frame_round_trip_every_record_type_and_version(kind, schema):
    doc = E.load(schema)
    pairs, expect = [], []
    for v in E.valid_versions(doc):
        for variant in (0, 1, 2):
            value = E.sample(doc, v, variant)
            pairs.append((None, frame(doc["apiKey"], v, E.encode(doc, v, value))))
            expect.append((v, E.expected_decoded(doc, v, value)))
    decoded, _, _ = decode_all(kind, pairs)
    for d, (v, data) in zip(decoded, expect):
        assert d.findings == [], d.findings
        assert d.key is None and not d.tombstone
        p = d.value
        assert (p.frame_version, p.api_key, p.schema, p.version) == (1, doc["apiKey"], schema, v)
        assert p.data == data


def test_every_metadata_schema_in_the_tables_is_tested():
    from kafkadump.decoders.internal_topics.newer_records import LAYOUTS
    from kafkadump.decoders.internal_topics.record_decoder import frame_schemas

    newer = {"ClearElrRecord", "UnregisterControllerRecord"}  # tested in test_kafka4_records.py
    assert newer <= set(LAYOUTS)
    assert set(frame_schemas("metadata").values()) - newer == {s for k, s in METADATA if k == "metadata"}
    assert set(frame_schemas("storage").values()) == {s for k, s in METADATA if k == "remote-log-metadata"}


@pytest.mark.parametrize("kind", ["metadata", "offsets", "transactions"])
def test_control_records_round_trip(kind):
    pairs, expect = [], []
    for ctype, name in ((2, "LeaderChangeMessage"), (3, "SnapshotHeaderRecord"), (4, "SnapshotFooterRecord"),
                        (5, "KRaftVersionRecord"), (6, "VotersRecord")):
        doc = E.load(name)
        for variant in (0, 1):
            value = E.sample(doc, 0, variant)
            pairs.append((i16(0) + i16(ctype), E.encode(doc, 0, value)))
            expect.append((ctype, name, E.expected_decoded(doc, 0, value)))
    for ctype in (0, 1):
        pairs.append((i16(0) + i16(ctype), i16(0) + struct.pack(">i", 42)))
        expect.append((ctype, "EndTxnMarker", {"version": 0, "coordinatorEpoch": 42}))
    decoded, _, _ = decode_all(kind, pairs, control=True)
    for d, (ctype, name, data) in zip(decoded, expect):
        assert d.findings == []
        assert d.control == ["ABORT", "COMMIT", "LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER",
                             "KRAFT_VERSION", "KRAFT_VOTERS"][ctype]
        assert (d.key.schema, d.key.data) == ("ControlRecordKey", {"version": 0, "type": ctype})
        assert (d.value.schema, d.value.data) == (name, data)
        assert not d.tombstone


@pytest.mark.parametrize("gv", [0, 1, 2, 3, 4])
def test_group_metadata_embeds_the_consumer_protocol_every_version(gv):
    doc = E.load("GroupMetadataValue")
    members = []
    for sv in range(4):
        sub, _ = subscription(sv)
        asg, _ = assignment(sv)
        m = E.sample(doc, gv, 0)["members"][0]
        m.update({"memberId": f"m{sv}", "subscription": sub, "assignment": asg})
        members.append(m)
    members[0]["assignment"] = b""  # a rebalance in progress: no assignment yet
    value = E.sample(doc, gv, 0, {"protocolType": "consumer", "members": members})
    (d,), _, _ = decode_all("offsets", [(i16(2) + E.encode(E.load("GroupMetadataKey"), 2, {"group": "g"}),
                                         i16(gv) + E.encode(doc, gv, value))])
    assert d.findings == []
    got = d.value.data["members"]
    for sv, m in enumerate(got):
        sub = m["subscription"]
        assert isinstance(sub, Part) and (sub.schema, sub.version) == ("ConsumerProtocolSubscription", sv)
        assert sub.data["topics"] == ["orders", "payments"] and sub.data["userData"] == b"ud"
        if sv >= 1:
            assert sub.data["ownedPartitions"] == [{"topic": "orders", "partitions": [0, 2]}]
        if sv >= 3:
            assert sub.data["rackId"] == "rack-a"
        if sv == 0:
            assert m["assignment"] == b""
        else:
            asg = m["assignment"]
            assert (asg.schema, asg.version) == ("ConsumerProtocolAssignment", sv)
            assert asg.data == {"assignedPartitions": [{"topic": "orders", "partitions": [0, 1]}],
                                "userData": None}


def test_consumer_protocol_is_not_applied_to_other_protocol_types():
    doc = E.load("GroupMetadataValue")
    value = E.sample(doc, 3, 0, {"protocolType": "connect"})
    (d,), _, _ = decode_all("offsets", [(i16(2) + E.encode(E.load("GroupMetadataKey"), 2, {"group": "g"}),
                                         i16(3) + E.encode(doc, 3, value))])
    assert d.findings == [] and all(isinstance(m["subscription"], bytes) for m in d.value.data["members"])


def test_legacy_messages_and_compressed_batches_decode_too():
    kdoc, vdoc = E.load("OffsetCommitKey"), E.load("OffsetCommitValue")
    key = i16(1) + E.encode(kdoc, 1, {"group": "g", "topic": "t", "partition": 3})
    value = i16(1) + E.encode(vdoc, 1, {"offset": 42, "metadata": "", "commitTimestamp": 5, "expireTimestamp": 9})
    wrapper, _ = bld.legacy_wrapper(1, [bld.legacy_message(0, value, key=key), bld.legacy_message(1, value, key=key)])
    data = bld.legacy_message(0, value, key=key) + wrapper + bld.v2_batch(2, [bld.Rec(key, value)], codec=bld.LZ4).data
    dec = decoder_for("offsets")
    got = [(r.offset, dec.decode_record(r, b)) for b in iter_batches(data, "t") for r in b.records]
    assert [o for o, _ in got] == [0, 0, 1, 2]
    for _, d in got:
        assert d.findings == [] and d.value.data["offset"] == 42 and d.key.data["partition"] == 3


# --- damage: the four internal-* codes -------------------------------------------------------------

def _offset_commit(group="g", offset=42, kv=1, vv=3):
    k = i16(kv) + E.encode(E.load("OffsetCommitKey"), kv, {"group": group, "topic": "t", "partition": 0})
    v = i16(vv) + E.encode(E.load("OffsetCommitValue"), vv, E.sample(E.load("OffsetCommitValue"), vv, 1, {
        "offset": offset, "leaderEpoch": -1, "metadata": "", "commitTimestamp": bld.T0, "expireTimestamp": -1}))
    return k, v


def check(decoded, i, code, pos, *, lay=None, field="key", rel=0, also=()):
    """Record ``i`` has exactly ``code`` (+ ``also``) at the exact position; the others are clean."""
    d = decoded[i]
    assert sorted(c.value for c in codes(d)) == sorted([code.value, *[a.value for a in also]]), d.findings
    f = next(f for f in d.findings if f.code is code)
    assert f.severity is {Code.INTERNAL_MALFORMED: Severity.ERROR}.get(code, Severity.WARNING)
    start, compressed = field_pos(lay, i, field) if lay is not None else (pos, False)
    if compressed:
        assert (f.offset, f.source_offset) == (61, start + rel)
    else:
        assert (f.offset, f.source_offset) == (start + rel, None)
    for j, other in enumerate(decoded):
        if j != i:
            assert other.findings == [], (j, other.findings)


@pytest.mark.parametrize("codec", [0, bld.GZIP])
def test_mutation_type_unknown_key_version(codec):
    good = _offset_commit()
    bad = (i16(99) + good[0][2:], good[1])
    decoded, _, lay = decode_all("offsets", [good, bad, good], codec=codec)
    check(decoded, 1, Code.INTERNAL_TYPE_UNKNOWN, None, lay=lay)
    d = decoded[1]
    assert d.key.schema is None and d.key.version == 99 and d.key.raw == bad[0]
    assert d.value.schema is None and d.value.data is None and d.value.raw == bad[1]
    assert decoded[2].value.data["offset"] == 42


def test_mutation_type_unknown_metadata_api_key():
    doc = E.load("TopicRecord")
    good = (None, frame(2, 0, E.encode(doc, 0, E.sample(doc, 0, 0))))
    bad = (None, frame(99, 0, b"\x00\x01\x02"))
    decoded, _, lay = decode_all("metadata", [good, bad])
    check(decoded, 1, Code.INTERNAL_TYPE_UNKNOWN, None, lay=lay, field="value")
    assert (decoded[1].value.api_key, decoded[1].value.schema, decoded[1].value.raw) == (99, None, bad[1])


@pytest.mark.parametrize("what", ["value", "frame", "record", "consumer"])
def test_mutation_version_unknown(what):
    good = _offset_commit()
    if what == "value":
        kind, bad = "offsets", (good[0], i16(9) + good[1][2:])
    elif what == "frame":
        doc = E.load("TopicRecord")
        kind, good = "metadata", (None, frame(2, 0, E.encode(doc, 0, E.sample(doc, 0, 0))))
        bad = (None, b"\x00" + good[1][1:])  # frame version 0 (KRaft 2.8 preview)
    elif what == "record":
        doc = E.load("TopicRecord")
        kind, good = "metadata", (None, frame(2, 0, E.encode(doc, 0, E.sample(doc, 0, 0))))
        bad = (None, frame(2, 7, E.encode(doc, 0, E.sample(doc, 0, 0))))
    else:
        kind = "offsets"
        doc = E.load("GroupMetadataValue")
        sub = i16(5) + subscription(3)[0][2:] + b"\x00\x00\x00\x07new"  # a future version: v3 layout + more
        m = {**E.sample(doc, 3, 0)["members"][0], "subscription": sub, "assignment": b""}
        value = i16(3) + E.encode(doc, 3, E.sample(doc, 3, 0, {"protocolType": "consumer", "members": [m]}))
        bad = (i16(2) + E.encode(E.load("GroupMetadataKey"), 2, {"group": "g"}), value)
    decoded, _, lay = decode_all(kind, [good, bad, good])
    if what == "consumer":
        d = decoded[1]
        assert codes(d) == [Code.INTERNAL_VERSION_UNKNOWN]
        sub_at = value.index(sub)  # the payload's first byte, inside the value
        check(decoded, 1, Code.INTERNAL_VERSION_UNKNOWN, None, lay=lay, field="value", rel=sub_at)
        s = d.value.data["members"][0]["subscription"]
        assert (s.schema, s.version, s.data["topics"], s.data["rackId"]) == \
            ("ConsumerProtocolSubscription", 5, ["orders", "payments"], "rack-a")
        return
    check(decoded, 1, Code.INTERNAL_VERSION_UNKNOWN, None, lay=lay, field="value")
    assert decoded[1].value.data is None and decoded[1].value.raw == bad[1]


@pytest.mark.parametrize("what,rel", [
    ("short-key", 0), ("null-key", 0), ("string-overrun", 2), ("short-value", 0), ("null-metadata", 0),
    ("frame-varint", 2), ("bad-utf8", 4), ("leader-change-null", 0)])
def test_mutation_malformed(what, rel):
    good = _offset_commit()
    kind, field = "offsets", "key"
    if what == "short-key":
        bad = (b"\x00", good[1])
    elif what == "null-key":
        bad = (None, good[1])
    elif what == "string-overrun":
        bad = (good[0][:2] + i16(500) + good[0][4:], good[1])  # group length 500 in a 20-byte key
    elif what == "short-value":
        bad, field = (good[0], b"\x03"), "value"
    elif what == "bad-utf8":
        k = bytearray(good[0])
        k[4] = 0xFF  # first byte of the group name
        bad = (bytes(k), good[1])
    elif what == "null-metadata":
        doc = E.load("TopicRecord")
        kind, field = "metadata", "value"
        good = (None, frame(2, 0, E.encode(doc, 0, E.sample(doc, 0, 0))))
        bad = (b"k", None)
    elif what == "frame-varint":
        doc = E.load("TopicRecord")
        kind, field = "metadata", "value"
        good = (None, frame(2, 0, E.encode(doc, 0, E.sample(doc, 0, 0))))
        bad = (None, b"\x01\x02\x80")  # the version varint runs off the end
    else:  # leader-change-null
        kind, field = "metadata", "value"
        doc = E.load("LeaderChangeMessage")
        good = (i16(0) + i16(2), E.encode(doc, 0, E.sample(doc, 0, 0)))
        bad = (i16(0) + i16(2), None)
    decoded, b, lay = decode_all(kind, [good, bad, good], control=what == "leader-change-null")
    if what == "null-metadata" or what == "leader-change-null":
        # a null value: anchored where the value would start (just after its -1 length)
        start, _ = field_pos(lay, 1, "value")
        check(decoded, 1, Code.INTERNAL_MALFORMED, start)
        return
    check(decoded, 1, Code.INTERNAL_MALFORMED, None, lay=lay, field=field, rel=rel)
    if what == "bad-utf8":
        assert decoded[1].key.data["group"].startswith("\ufffd")  # shown, replaced
    if what == "string-overrun":
        assert decoded[1].key.partial and decoded[1].value.data is not None


@pytest.mark.parametrize("what", ["value", "key", "frame", "marker"])
def test_mutation_trailing_bytes(what):
    good = _offset_commit()
    kind, field, control = "offsets", "value", False
    if what == "value":
        bad, rel = (good[0], good[1] + b"\xde\xad"), len(good[1])
    elif what == "key":
        bad, rel, field = (good[0] + b"\x00", good[1]), len(good[0]), "key"
    elif what == "frame":
        doc = E.load("FeatureLevelRecord")
        body = frame(12, 0, E.encode(doc, 0, {"name": "metadata.version", "featureLevel": 19}))
        kind, good, bad, rel = "metadata", (None, body), (None, body + b"\x00\x00\x00"), len(body)
    else:
        kind, control = "transactions", True
        good = (i16(0) + i16(1), i16(0) + struct.pack(">i", 3))
        bad, rel = (good[0], good[1] + b"\x01"), 6
    decoded, _, lay = decode_all(kind, [good, bad, good], control=control)
    check(decoded, 1, Code.INTERNAL_TRAILING, None, lay=lay, field=field, rel=rel)
    assert decoded[1].findings[0].length == (3 if what == "frame" else 2 if what == "value" else 1)


def test_findings_in_legacy_messages_and_wrappers_are_exact():
    good = _offset_commit(kv=1, vv=1)
    bad = (i16(42) + good[0][2:], good[1])
    data = bld.legacy_message(0, bad[1], key=bad[0])
    wrapper, positions = bld.legacy_wrapper(2, [bld.legacy_message(0, good[1], key=good[0]),
                                                bld.legacy_message(1, bad[1], key=bad[0])])
    data_all = data + wrapper
    dec = decoder_for("offsets")
    found = [(r.offset, f) for b in iter_batches(data_all, "t") for r in b.records
             for f in dec.decode_record(r, b).findings]
    key_at = 18 + 8 + 4  # magic 1: key bytes after offset, size, crc, magic, attributes, timestamp, key length
    wrapper_value = len(data) + bld.legacy_value_start(1)
    assert [(o, f.code, f.offset, f.source_offset) for o, f in found] == [
        (0, Code.INTERNAL_TYPE_UNKNOWN, key_at, None),
        (2, Code.INTERNAL_TYPE_UNKNOWN, wrapper_value, positions[1] + key_at)]


def test_cli_exit_codes_and_json_findings(tmp_path):
    good = _offset_commit()
    bad = (i16(99) + good[0][2:], good[1])
    d = tmp_path / "__consumer_offsets-3"
    d.mkdir()
    p = d / "00000000000000000000.log"
    p.write_bytes(batch_of([good, bad])[1].data)
    r = runner.invoke(app, ["records", "--json", str(p)])
    assert r.exit_code == 1
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["findings"] for x in lines][0] == []
    assert [f["code"] for f in lines[1]["findings"]] == ["internal-type-unknown"]
    assert lines[1]["key"]["schema"] is None and lines[1]["key"]["version"] == 99
    r = runner.invoke(app, ["records", "--json", "--decode", "none", str(p)])
    # the plain line: the binary key as bytes (the default encoding: {"base64": ...}), not decoded
    assert r.exit_code == 0 and json.loads(r.stdout.splitlines()[1])["key"] == \
        {"base64": base64.b64encode(bad[0]).decode()}
    r = runner.invoke(app, ["records", str(p)])
    assert r.exit_code == 1 and "internal-type-unknown" in r.stdout and "offset commit group=g" in r.stdout


# --- rendering: JSON, table, hexdump ---------------------------------------------------------------

def test_json_record_shape_and_undecoded_contract(tmp_path):
    good = _offset_commit(group="grp one", offset=77)
    d = tmp_path / "__consumer_offsets-0"
    d.mkdir()
    p = d / "00000000000000000000.log"
    p.write_bytes(batch_of([good, (good[0], None)])[1].data)
    for enc, rawkey in (("base64", None), ("hex", good[0].hex())):
        r = runner.invoke(app, ["records", "--json", "-e", enc, str(p)])
        assert r.exit_code == 0, r.output
        first, tomb = [json.loads(x) for x in r.stdout.splitlines()]
        assert first["key"]["schema"] == "OffsetCommitKey" and first["key"]["version"] == 1
        assert first["key"]["data"] == {"group": "grp one", "topic": "t", "partition": 0}
        assert first["value"]["data"]["offset"] == 77 and first["value"]["version"] == 3
        assert (first["decoded"], first["tombstone"], first["findings"]) == ("offsets", False, [])
        if rawkey:
            assert first["key"]["raw"] == rawkey
        assert tomb["value"] is None and tomb["tombstone"] is True
        # every field of the undecoded record line is still there, unchanged
        plain_line = json.loads(runner.invoke(app, ["records", "--json", "-e", enc, "--decode", "none",
                                                    str(p)]).stdout.splitlines()[0])
        assert {k: v for k, v in first.items() if k not in ("key", "value", "decoded", "tombstone",
                                                           "findings")} == \
            {k: v for k, v in plain_line.items() if k not in ("key", "value")}
        assert plain_line["key"] == first["key"]["raw"] and plain_line["value"] == first["value"]["raw"]


def test_decoded_lines_keep_every_field_of_plain_lines_legacy_headers_control():
    from kafkadump.render.jsonl import RecordLines

    good = _offset_commit(kv=1, vv=1)
    data = (bld.legacy_message(0, good[1], key=good[0])
            + bld.v2_batch(1, [bld.Rec(good[0], good[1], headers=(("h", b"\x00\xff"), ("n", None)))]).data
            + bld.control_batch(2, 1).data)
    dec = decoder_for("offsets")
    for enc in ("base64", "hex", "text"):
        lines = RecordLines(enc)
        for b in iter_batches(data, "f\u00fc.log"):
            for r in b.records:
                plain_line = json.loads(lines.line(r, b))
                decoded = json.loads(lines.decoded_line(r, b, dec.decode_record(r, b)))
                assert list(decoded)[:len(plain_line)] == list(plain_line)
                assert {k: v for k, v in decoded.items() if k in plain_line and k not in ("key", "value")} == \
                    {k: v for k, v in plain_line.items() if k not in ("key", "value")}
                assert decoded["key"]["raw"] == plain_line["key"] and decoded["findings"] == []


def test_json_names_enum_values_and_frames(tmp_path):
    doc = E.load("TransactionLogValue")
    key = i16(0) + E.encode(E.load("TransactionLogKey"), 0, {"transactionalId": "tx-1"})
    val = i16(1) + E.encode(doc, 1, E.sample(doc, 1, 1, {"transactionStatus": 2}))
    d = tmp_path / "__transaction_state-1"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(batch_of([(key, val)])[1].data)
    r = runner.invoke(app, ["records", "--json", str(d / "00000000000000000000.log")])
    line = json.loads(r.stdout)
    assert line["value"]["names"] == {"transactionStatus": "PrepareCommit"}
    r = runner.invoke(app, ["records", str(d / "00000000000000000000.log")])
    assert "transaction id=tx-1 state=PrepareCommit" in r.stdout


def test_decode_option_forces_a_kind(tmp_path):
    good = _offset_commit()
    p = tmp_path / "x.log"
    p.write_bytes(batch_of([good])[1].data)
    plain = json.loads(runner.invoke(app, ["records", "--json", str(p)]).stdout)["key"]
    assert plain == {"base64": base64.b64encode(good[0]).decode()}  # not decoded: the bytes
    line = json.loads(runner.invoke(app, ["records", "--json", "--decode", "offsets", str(p)]).stdout)
    assert line["key"]["schema"] == "OffsetCommitKey"
    assert runner.invoke(app, ["records", "--decode", "bogus", str(p)]).exit_code == 2


def _all_types_batch():
    """One batch holding a record of every coordinator key type and a metadata batch of every record type."""
    pairs = []
    for kind, name in COORDINATOR:
        if kind != "offsets":
            continue
        kdoc, vdoc = E.load(name), E.load(name[:-3] + "Value")
        kv, vv = E.valid_versions(kdoc)[-1], E.valid_versions(vdoc)[-1]
        k = E.sample(kdoc, kv, 0, {"group": f"g-{name}", "groupId": f"g-{name}"})
        pairs.append((i16(kv) + E.encode(kdoc, kv, k),
                      i16(vv) + E.encode(vdoc, vv, _value_sample(vdoc, vv, 0))))
    return pairs


@pytest.mark.parametrize("codec", [0, bld.GZIP])
def test_hexdump_spans_tile_decoded_keys_and_values(codec):
    good = _offset_commit()
    pairs = _all_types_batch() + [(i16(99) + good[0][2:], good[1]), (good[0], good[1] + b"xx"),
                                  (good[0][:5], good[1]), (good[0], None)]
    b, lay = batch_of(pairs, codec=codec)
    decoded, spans = decode_spanned(lay.data, b)
    new, findings = expand_spans("offsets", decoded, spans)
    leaves = leaf_spans(new, expand_records=True)
    assert not tiling_errors(leaves, 0, len(lay.data))
    if codec:
        assert not tiling_errors(leaves, 0, len(decoded.decompressed), "decompressed")
    assert {f.code for f in findings} == {Code.INTERNAL_TYPE_UNKNOWN, Code.INTERNAL_TRAILING,
                                          Code.INTERNAL_MALFORMED}
    # the same findings as the record path, at the same offsets
    dec = decoder_for("offsets")
    by_record = sorted((f.code.value, f.offset, f.source_offset) for r in b.records
                       for f in dec.decode_record(r, b).findings)
    assert sorted((f.code.value, f.offset, f.source_offset) for f in findings) == by_record
    paths = {s.path for s in new}
    assert "batch.records[0].key.groupId" in paths
    assert any(p.endswith("value.classicMemberMetadata.supportedProtocols[0].metadata.topics[0]") for p in paths)
    assert "batch.records[0].key" not in paths  # replaced by its fields


def test_hexdump_spans_of_metadata_and_control_batches_tile():
    docs = [E.load(n) for k, n in METADATA if k == "metadata"]
    pairs = [(None, frame(doc["apiKey"], v, E.encode(doc, v, E.sample(doc, v, 0))))
             for doc in docs for v in E.valid_versions(doc)]
    b, lay = batch_of(pairs)
    decoded, spans = decode_spanned(lay.data, b)
    new, findings = expand_spans("metadata", decoded, spans)
    assert findings == [] and not tiling_errors(leaf_spans(new, True), 0, len(lay.data))
    doc = E.load("VotersRecord")
    b, lay = batch_of([(i16(0) + i16(6), E.encode(doc, 0, E.sample(doc, 0, 0)))], control=True)
    decoded, spans = decode_spanned(lay.data, b)
    new, findings = expand_spans("metadata", decoded, spans)
    assert findings == [] and not tiling_errors(leaf_spans(new, True), 0, len(lay.data))
    assert {"batch.records[0].key.type", "batch.records[0].value.voters[0].endpoints[1].port"} <= {
        s.path for s in new}


def test_hexdump_cli_shows_fields(tmp_path):
    good = _offset_commit(group="hexgroup")
    d = tmp_path / "__consumer_offsets-9"
    d.mkdir()
    p = d / "00000000000000000000.log"
    p.write_bytes(batch_of([good])[1].data)
    r = runner.invoke(app, ["hexdump", "--no-color", "--records", str(p)])
    assert r.exit_code == 0 and "records[0].key.group = hexgroup" in r.stdout
    rows = [json.loads(x) for x in runner.invoke(app, ["hexdump", "--json", str(p)]).stdout.splitlines()]
    _, lay = batch_of([good])
    value_at, _ = field_pos(lay, 0, "value")
    assert {"path": "batch.records[0].value.offset", "offset": value_at + 2, "length": 8, "value": 42,
            "source": "file"} in rows
    r = runner.invoke(app, ["hexdump", "--json", "--decode", "none", str(p)])
    assert "batch.records[0].key" in {json.loads(x)["path"] for x in r.stdout.splitlines()}


def test_table_summaries():
    from kafkadump.render.internal_records import summary

    good = _offset_commit(group="g1", offset=5)
    gdoc = E.load("GroupMetadataValue")
    sub, _ = subscription(1)
    asg, _ = assignment(1, (("orders", [0, 1]), ("payments", [2])))
    m = {**E.sample(gdoc, 3, 0)["members"][0], "clientId": "c1", "clientHost": "/10.0.0.1",
         "subscription": sub, "assignment": asg}
    gval = i16(3) + E.encode(gdoc, 3, E.sample(gdoc, 3, 0, {"protocolType": "consumer", "generation": 4,
                                                          "protocol": "range", "leader": "m", "members": [m]}))
    gkey = i16(2) + E.encode(E.load("GroupMetadataKey"), 2, {"group": "g1"})
    decoded, _, _ = decode_all("offsets", [good, (good[0], None), (gkey, gval), (gkey, None)])
    lines = [summary(d) for d in decoded]
    assert lines[0].startswith("offset commit group=g1 topic=t partition=0 offset=5 committed=")
    assert lines[1] == "offset commit DELETED group=g1 topic=t partition=0"
    assert lines[2] == ("group metadata group=g1 protocolType=consumer generation=4 protocol=range leader=m "
                        "members=1: c1@/10.0.0.1 subscribed=orders,payments assigned=orders:0/1,payments:2")
    assert lines[3] == "group metadata DELETED group=g1"


# --- summaries ------------------------------------------------------------------------------------------

def test_summary_offsets_last_write_wins_and_tombstones():
    a5, a7 = _offset_commit("a", 5), _offset_commit("a", 7)
    b1 = _offset_commit("b", 1)
    decoded, _, _ = decode_all("offsets", [a5, a7, b1, (b1[0], None)])
    s = summarize("offsets", decoded)
    assert (s["records"], s["tombstones"], s["committedOffsets"], s["groupCount"]) == (4, 1, 1, 2)
    assert s["groups"]["a"]["offsets"]["t"]["0"]["offset"] == 7
    assert s["groups"]["a"]["offsets"]["t"]["0"]["recordOffset"] == 1
    assert s["groups"]["b"]["offsets"]["t"]["0"] == {**s["groups"]["b"]["offsets"]["t"]["0"], "deleted": True,
                                                     "offset": 1, "recordOffset": 3}
    json.dumps(s)


def test_summary_add_batch_and_pickle():
    import pickle

    from kafkadump.decoders.internal_topics.summary import Summary

    good = _offset_commit("a", 5)
    bad = (i16(99) + good[0][2:], good[1])
    b, lay = batch_of([good, bad])
    s = Summary("offsets")
    findings = s.add_batch(b)
    assert [f.code for f in findings] == [Code.INTERNAL_TYPE_UNKNOWN]
    s2 = pickle.loads(pickle.dumps(s))
    s2.add_batch(next(iter(iter_batches(batch_of([_offset_commit("a", 6)], base_offset=2)[1].data, "t"))))
    r = s2.result()
    assert (r["records"], r["undecoded"], r["findings"]) == (3, 1, 1)
    assert r["groups"]["a"]["offsets"]["t"]["0"]["offset"] == 6


def test_summary_new_protocol_groups():
    pairs = _all_types_batch()
    decoded, _, _ = decode_all("offsets", pairs)
    s = summarize("offsets", decoded)
    json.dumps(s)
    kinds = {g["type"] for g in s["groups"].values()}
    assert kinds == {None, "classic", "consumer", "share"}  # None: a group known only by its offsets
    assert s["undecoded"] == 0 and s["findings"] == 0


def test_summary_transactions_open_and_states():
    kdoc, vdoc = E.load("TransactionLogKey"), E.load("TransactionLogValue")

    def rec(tid, status):
        v = E.sample(vdoc, 0, 0, {"transactionStatus": status, "producerId": 9, "producerEpoch": 1,
                                  "transactionPartitions": [{"topic": "t", "partitionIds": [0, 1]}]})
        return i16(0) + E.encode(kdoc, 0, {"transactionalId": tid}), i16(0) + E.encode(vdoc, 0, v)
    decoded, _, _ = decode_all("transactions", [rec("a", 0), rec("a", 1), rec("b", 4), rec("c", 2),
                                                (rec("c", 2)[0], None)])
    s = summarize("transactions", decoded)
    assert s["open"] == ["a"]
    assert s["states"] == {"CompleteCommit": 1, "Ongoing": 1}
    assert s["transactionalIds"]["a"]["partitions"] == {"t": [0, 1]}
    assert s["transactionalIds"]["c"]["deleted"] is True


def test_summary_metadata_topics_partitions_brokers():
    tid = bytes(range(16))
    topic = E.encode(E.load("TopicRecord"), 0, {"name": "orders", "topicId": tid})
    pdoc = E.load("PartitionRecord")
    part = E.encode(pdoc, 0, E.sample(pdoc, 0, 1, {"partitionId": 0, "topicId": tid, "replicas": [1, 2],
                                                   "isr": [1, 2], "leader": 1, "leaderEpoch": 4,
                                                   "partitionEpoch": 6}))
    cdoc = E.load("PartitionChangeRecord")
    change = E.encode(cdoc, 0, {"partitionId": 0, "topicId": tid, "isr": [2], "leader": 2})
    isr_only = E.encode(cdoc, 0, {"partitionId": 0, "topicId": tid, "isr": [1, 2]})
    bdoc = E.load("RegisterBrokerRecord")
    broker = E.encode(bdoc, 3, E.sample(bdoc, 3, 1, {"brokerId": 3, "rack": "r1", "endPoints": [
        {"name": "PLAINTEXT", "host": "h", "port": 9092, "securityProtocol": 0}]}))
    remove = E.encode(E.load("RemoveTopicRecord"), 0, {"topicId": tid})
    decoded, _, _ = decode_all("metadata", [(None, frame(2, 0, topic)), (None, frame(3, 0, part)),
                                            (None, frame(5, 0, change)), (None, frame(5, 0, isr_only)),
                                            (None, frame(0, 3, broker)), (None, frame(9, 0, remove))])
    s = summarize("metadata", decoded)
    p = s["topics"][E.kafka_uuid(tid)]["partitions"]["0"]
    assert (p["leader"], p["isr"], p["leaderEpoch"], p["partitionEpoch"], p["changes"]) == (2, [1, 2], 5, 8, 2)
    assert s["topicsCreated"] == ["orders"] and s["topicsDeleted"] == ["orders"]
    assert s["brokers"]["3"]["endpoints"] == ["PLAINTEXT://h:9092"] and s["brokers"]["3"]["rack"] == "r1"


def test_summary_share_state_and_remote_log_metadata():
    tid = bytes(16)
    sk, su = E.load("ShareSnapshotKey"), E.load("ShareUpdateKey")
    sv, uv = E.load("ShareSnapshotValue"), E.load("ShareUpdateValue")
    snap = (i16(0) + E.encode(sk, 0, {"groupId": "sg", "topicId": tid, "partition": 1}),
            i16(0) + E.encode(sv, 0, E.sample(sv, 0, 0, {"startOffset": 10, "stateEpoch": 2})))
    upd = (i16(1) + E.encode(su, 1, {"groupId": "sg", "topicId": tid, "partition": 1}),
           i16(0) + E.encode(uv, 0, E.sample(uv, 0, 0, {"startOffset": 15})))
    decoded, _, _ = decode_all("share-state", [snap, upd])
    e = summarize("share-state", decoded)["shareGroups"]["sg"][E.kafka_uuid(tid)]["1"]
    assert (e["startOffset"], e["stateEpoch"], e["updates"], e["stateBatches"]) == (15, 2, 1, 2)

    rdoc, udoc = E.load("RemoteLogSegmentMetadataRecord"), E.load("RemoteLogSegmentMetadataUpdateRecord")
    seg_id = {"topicIdPartition": {"name": "orders", "id": tid, "partition": 4}, "id": bytes([7] * 16)}
    rec = E.encode(rdoc, 0, E.sample(rdoc, 0, 1, {"remoteLogSegmentId": seg_id, "remoteLogSegmentState": 0,
                                                  "startOffset": 0, "endOffset": 99}))
    upd = E.encode(udoc, 0, E.sample(udoc, 0, 1, {"remoteLogSegmentId": seg_id, "remoteLogSegmentState": 1}))
    decoded, _, _ = decode_all("remote-log-metadata", [(None, frame(0, 0, rec)), (None, frame(1, 0, upd))])
    s = summarize("remote-log-metadata", decoded)
    seg = s["segments"][E.kafka_uuid(bytes([7] * 16))]
    assert (seg["topic"], seg["partition"], seg["endOffset"], seg["state"]) == ("orders", 4, 99,
                                                                                 "COPY_SEGMENT_FINISHED")
    assert s["states"] == {"COPY_SEGMENT_FINISHED": 1}


def test_decoder_never_raises_on_random_bytes():
    import random

    rnd = random.Random(7)
    for kind in ("offsets", "transactions", "metadata", "share-state", "remote-log-metadata"):
        dec = decoder_for(kind)
        for n in range(400):
            key = None if n % 7 == 0 else bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 40)))
            value = None if n % 5 == 0 else bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 60)))
            if kind in ("offsets", "share-state") and key and len(key) >= 2 and n % 2:
                key = i16(n % 16) + key[2:]  # a known type, random body
            for control in (False, n % 3 == 0):
                d = dec.decode(key, value, control, spans=[])
                assert all("could not decode this record" not in f.message for f in d.findings)
                summarize(kind, [d])
