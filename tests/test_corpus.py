"""The decoder against the shared reference corpus, read in place.

Three groups, each checked against what someone other than kafkadump wrote
down about the bytes:

* ``corpus/clients/batches``: files written by kafka-python's and aiokafka's
  own batch builders, with JSON sidecars recording the values fed in.
* ``corpus/real/segments``: log segments and KRaft snapshots written by real
  brokers (Kafka 0.10 .. 4.x), checked against ``corpus/real/MANIFEST.md``.
* ``corpus/real/vectors``: byte vectors from other implementations' test
  suites, checked against what those tests assert.

Nothing is copied: every file is read from ``../shared`` via ``need_corpus``,
which skips with a reason when the corpus is absent.
"""

from __future__ import annotations

import ast
import collections
import datetime
import functools
import hashlib
import re
import struct
from pathlib import Path

import pytest
from conftest import CORPUS, load_json, need_corpus
from crc32c import crc32c

from kafkadump.decoders.batches import Batch
from kafkadump.decoders.batches import Gap
from kafkadump.decoders.batches import iter_batches

BATCHES = "clients/batches"
SEGMENTS = "real/segments"
VECTORS = "real/vectors"


# --- helpers -------------------------------------------------------------------

def _listing(sub: str, select) -> list:
    """Parameters for the files under ``CORPUS/sub`` (relative paths), or one
    placeholder when the corpus is absent so that the test skips with a reason."""
    base = CORPUS / sub
    if not base.exists():
        return [pytest.param(None, id="corpus-absent")]
    return sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file() and select(p))


def _decode(data: bytes, name: str = "-"):
    items = list(iter_batches(data, name))
    return items, [i for i in items if isinstance(i, Batch)]


def _findings(items, severities=("error", "warning", "info")):
    return [(type(i).__name__, i.position, f.code.value)
            for i in items for f in i.findings if f.severity.value in severities]


def _codes(items) -> set:
    return {f.code.value for i in items for f in i.findings}


def _bytes_view(got, exp):
    """``got`` (bytes or None) in the sidecar's shape: only the keys the sidecar
    gives (``len``, ``sha256``, ``hex``; ``utf8`` is redundant with ``hex``)."""
    if got is None:
        return None
    got = bytes(got)
    full = {"len": len(got), "sha256": hashlib.sha256(got).hexdigest(), "hex": got.hex()}
    keys = [k for k in (exp or full) if k in full]
    return {k: full[k] for k in keys}


def _sidecar_bytes(exp):
    return None if exp is None else {k: v for k, v in exp.items() if k != "utf8"}


def _headers_view(headers, exp_headers):
    out = []
    for i, (k, v) in enumerate(headers):
        ev = exp_headers[i]["value"] if i < len(exp_headers) else None
        out.append({"key": k, "value": _bytes_view(v, ev)})
    return out


# =============================================================================
# 1. corpus/clients/batches: client builders' files against their sidecars
# =============================================================================

BATCH_FILES = _listing(BATCHES, lambda p: p.suffix in (".bin", ".log"))
# Magic-1 wrappers as a producer writes them (wrapper offset not yet assigned).
PRODUCER_SIDE_WRAPPERS = {"kp_mrb_v1_gzip.bin"}

V2_FIELDS = {
    "magic": lambda b: b.magic,
    "codec": lambda b: b.compression,
    "attributes": lambda b: b.attributes,
    "is_transactional": lambda b: b.is_transactional,
    "is_control": lambda b: b.is_control,
    "timestamp_type": lambda b: b.timestamp_type,
    "base_offset": lambda b: b.base_offset,
    "partition_leader_epoch": lambda b: b.partition_leader_epoch,
    "last_offset_delta": lambda b: b.last_offset_delta,
    "record_count": lambda b: b.record_count,
    "first_timestamp": lambda b: b.base_timestamp,
    "max_timestamp": lambda b: b.max_timestamp,
    "producer_id": lambda b: b.producer_id,
    "producer_epoch": lambda b: b.producer_epoch,
    "base_sequence": lambda b: b.base_sequence,
    "batch_length_field": lambda b: b.batch_length,
    "total_bytes": lambda b: b.size,
    "file_offset": lambda b: b.position,
}

WRAPPER_FIELDS = {
    "offset": lambda b: b.offset,
    "attributes": lambda b: b.attributes,
    "codec": lambda b: b.compression,
    "timestamp": lambda b: b.timestamp,
    "crc": lambda b: b.crc,
    "message_size_field": lambda b: b.message_size,
}


def _record_view(r, er: dict) -> dict:
    """kafkadump's record in the sidecar's field names (only those it gives)."""
    v = {
        "offset": r.offset,
        "timestamp": r.timestamp,
        "key": _bytes_view(r.key, er["key"]),
        "value": _bytes_view(r.value, er["value"]),
        "headers": _headers_view(r.headers, er["headers"]),
    }
    if "offset_delta" in er:  # v2
        v["offset_delta"] = r.offset_delta
        v["timestamp_delta"] = r.timestamp_delta
    if "stored_offset" in er:  # legacy: the offset as stored, its CRC, timestamp type
        v["stored_offset"] = r.stored_offset
        v["timestamp_type"] = r.timestamp_type
        v["crc"] = r.crc
    return v


def _expected_record(er: dict) -> dict:
    e = {k: er[k] for k in ("offset", "timestamp")}
    e["key"] = _sidecar_bytes(er["key"])
    e["value"] = _sidecar_bytes(er["value"])
    e["headers"] = [{"key": h["key"], "value": _sidecar_bytes(h["value"])} for h in er["headers"]]
    for k in ("offset_delta", "timestamp_delta", "stored_offset", "timestamp_type", "crc"):
        if k in er:
            e[k] = er[k]
    return e


def _group(batches, sb: dict) -> list:
    """The kafkadump batches making up one sidecar batch.

    A sidecar "batch" of an uncompressed legacy message set is the whole set;
    kafkadump reports each top-level legacy message as its own batch.
    """
    start, end = sb["file_offset"], sb["file_offset"] + sb["total_bytes"]
    g = [b for b in batches if start <= b.position < end]
    assert g, f"no batch decoded at {start}"
    assert g[0].position == start and g[-1].next_position == end, (start, end, [(b.position, b.size) for b in g])
    assert all(a.next_position == b.position for a, b in zip(g, g[1:]))
    return g


@pytest.mark.parametrize("name", BATCH_FILES)
def test_client_batch_file_matches_sidecar(name):
    base = need_corpus(BATCHES)
    path = base / name
    sc = load_json(path.with_suffix(".json"))
    data = path.read_bytes()
    assert (len(data), hashlib.sha256(data).hexdigest()) == (sc["size"], sc["sha256"])

    items, batches = _decode(data, name)
    assert not [i for i in items if isinstance(i, Gap)]
    # The only tolerated finding: kafka-python's magic-0 LZ4 frames carry the
    # pre-KIP-57 header checksum (the sidecar's wrapper note says so).
    legacy_lz4 = [sb for sb in sc["batches"] if "pre-KIP-57" in ((sb.get("wrapper") or {}).get("note") or "")]
    assert _findings(items) == [("Batch", sb["file_offset"], "lz4-legacy-checksum") for sb in legacy_lz4]
    assert all(b.crc_valid for b in batches)

    covered = []
    all_records = []
    for sb in sc["batches"]:
        g = _group(batches, sb)
        covered.extend(g)
        records = [r for b in g for r in b.records]
        all_records.extend(records)
        if sb["magic"] == 2:
            assert len(g) == 1
            b = g[0]
            assert {k: f(b) for k, f in V2_FIELDS.items()} == {k: sb[k] for k in V2_FIELDS}
        else:
            assert {b.magic for b in g} == {sb["magic"]}
            assert {b.compression for b in g} == {sb["codec"]}
            assert sum(b.size for b in g) == sb["total_bytes"]
            assert all(r.crc_valid for r in records)
            if sb["wrapper"] is None:
                # uncompressed set: one kafkadump batch per message
                assert sb["inner_offsets"] is None
                assert len(g) == sb["record_count"]
                assert [b.offset for b in g] == [er["stored_offset"] for er in sb["records"]]
            else:
                assert len(g) == 1
                b = g[0]
                w = sb["wrapper"]
                assert {k: f(b) for k, f in WRAPPER_FIELDS.items()} == {k: w[k] for k in WRAPPER_FIELDS}
                assert _bytes_view(b.key, w["key"]) == _sidecar_bytes(w["key"])
                stored = [er["stored_offset"] for er in sb["records"]]
                if sb["inner_offsets"] == "relative":      # magic 1: 0..n-1
                    assert stored == list(range(len(stored)))
                else:                                       # magic 0: stored absolute
                    assert sb["inner_offsets"] == "absolute"
                    assert stored == [er["offset"] for er in sb["records"]]
        assert len(records) == sb["record_count"]
        got = [_record_view(r, er) for r, er in zip(records, sb["records"])]
        exp = [_expected_record(er) for er in sb["records"]]
        if name in PRODUCER_SIDE_WRAPPERS:  # offsets: see test_client_batch_producer_side_wrapper_offsets
            for d in got + exp:
                del d["offset"]
        assert got == exp

    assert covered == batches  # every decoded batch belongs to a sidecar batch
    assert len(sc["batches"]) == sc["batch_count"]
    assert len(all_records) == sc["record_count"]
    if name not in PRODUCER_SIDE_WRAPPERS:
        assert (all_records[0].offset, all_records[-1].offset) == (sc["first_offset"], sc["last_offset"])


@pytest.mark.parametrize("name", sorted(PRODUCER_SIDE_WRAPPERS))
def test_client_batch_producer_side_wrapper_offsets(name):
    """kafka-python's MemoryRecordsBuilder leaves the magic-1 wrapper offset 0
    (its sidecar: "a broker would rewrite it to the last offset").  The
    spec's formula, wrapper offset - last inner offset + inner offset, gives
    -6..0 here; Kafka's AbstractLegacyRecordBatch.DeepRecordsIterator and
    kafka-python's LegacyRecordBatch apply it only when wrapper offset - last
    inner offset >= 0 and otherwise keep the stored offsets (0..6), which is
    what the sidecar records."""
    base = need_corpus(BATCHES)
    sc = load_json((base / name).with_suffix(".json"))
    _, batches = _decode((base / name).read_bytes(), name)
    (sb,) = sc["batches"]
    assert sb["wrapper"]["offset"] < sb["records"][-1]["stored_offset"]
    assert [r.offset for r in batches[0].records] == [er["offset"] for er in sb["records"]]
    assert batches[0].base_offset == sc["first_offset"]


def test_client_batches_verify_json():
    """kafka-python's own reader agreed with every sidecar; so does kafkadump."""
    base = need_corpus(BATCHES)
    verify = load_json(base / "verify.json")
    files = {p.name for p in base.iterdir() if p.suffix in (".bin", ".log")}
    assert {v["file"] for v in verify} == files
    for v in verify:
        assert v["kafka_python_reader_agrees"] is True and v["error"] is None, v
        sc = load_json((base / v["file"]).with_suffix(".json"))
        _, batches = _decode((base / v["file"]).read_bytes(), v["file"])
        n = sum(len(b.records) for b in batches)
        assert v["records_expected"] == v["records_read"] == sc["record_count"] == n, v["file"]


# =============================================================================
# 2. corpus/real/segments: broker-written segments against MANIFEST.md
# =============================================================================
#
# The MANIFEST's table has one row per file; for ``*.log`` and KRaft snapshot
# ``*.checkpoint`` files the last cell reads e.g.
#
#   segment: 1641 batches, magic=[2], records=1943, offsets 5151..7093,
#   codecs=['none'], control batches=2 {'LEADER_CHANGE': 2}, ...,
#   ts 2025-12-27..2025-12-27, metadata record apiKeys={0: 2, 5: 300, ...}
#
# "batches" counts each top-level legacy message as one (as kafkadump does)
# and "records" counts inner messages.  No on-disk segment holds a
# compressed legacy wrapper (the four magic-1 segments are all
# uncompressed), so the two cannot disagree here.  "offsets" is from the
# batch headers: first baseOffset .. largest baseOffset+lastOffsetDelta.
#
# Decoding all 173 files in full takes ~3 s, so no shallow mode is needed.

SEGMENT_ROW = re.compile(
    r"segment: (?P<batches>\d+) batches, magic=\[(?P<magic>[\d, ]+)\], records=(?P<records>\d+), "
    r"offsets (?P<first>-?\d+)\.\.(?P<last>-?\d+), codecs=\[(?P<codecs>[^\]]*)\]")

SEGMENT_FILES = _listing(SEGMENTS, lambda p: p.suffix in (".log", ".checkpoint"))

# MANIFEST caveat 3: matyama/codecrafters-kafka-rust's log comes from the
# CodeCrafters tester (synthetic), not a broker.  Its second batch's
# baseOffset 2 is below the first batch's last offset 4, and its last batch
# has a record at offsetDelta 2 while lastOffsetDelta is 1: kafkadump's
# warnings are right; the MANIFEST's row agrees with the headers.
EXPECTED_WARNINGS = {
    "matyama+codecrafters-kafka-rust/data/kraft-combined-logs/__cluster_metadata-0/00000000000000000000.log":
        [("Batch", 91, "offset-order"), ("Batch", 423, "offset-delta-mismatch")],
}


@functools.lru_cache(maxsize=None)
def _manifest_rows() -> dict:
    rows = {}
    text = (CORPUS / "real" / "MANIFEST.md").read_text(encoding="utf-8")
    for line in text.splitlines():
        if not line.startswith("| corpus/segments/"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if cells[-1].startswith("segment:"):
            rows[cells[0].removeprefix("corpus/segments/")] = cells[-1]
    return rows


def _uvarint(b, p: int = 0):
    v = shift = 0
    while True:
        c = b[p]
        p += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, p


def _day(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%d")


def test_manifest_lists_every_segment_file():
    base = need_corpus(SEGMENTS)
    on_disk = {str(p.relative_to(base)) for p in base.rglob("*")
               if p.is_file() and p.suffix in (".log", ".checkpoint")}
    assert on_disk == set(_manifest_rows())
    assert len(on_disk) == 173


@pytest.mark.parametrize("name", SEGMENT_FILES)
def test_real_segment_matches_manifest(name):
    base = need_corpus(SEGMENTS)
    desc = _manifest_rows()[name]
    m = SEGMENT_ROW.match(desc)
    assert m, desc
    items, batches = _decode((base / name).read_bytes(), name)

    # all CRCs are valid and nothing is damaged (MANIFEST: "no CRC mismatch was found")
    assert not [i for i in items if isinstance(i, Gap)]
    assert all(b.crc_valid for b in batches)
    assert _findings(items) == EXPECTED_WARNINGS.get(name, [])

    records = [r for b in batches for r in b.records]
    got = {
        "batches": len(batches),
        "magic": sorted({b.magic for b in batches}),
        "records": len(records),
        "offsets": (min(b.base_offset for b in batches), max(b.last_offset for b in batches)),
        "codecs": sorted({b.compression for b in batches}),
    }
    exp = {
        "batches": int(m["batches"]),
        "magic": [int(x) for x in m["magic"].split(",")],
        "records": int(m["records"]),
        "offsets": (int(m["first"]), int(m["last"])),
        "codecs": sorted(ast.literal_eval("[" + m["codecs"] + "]")),
    }
    assert got == exp
    assert sum(b.record_count for b in batches) == len(records)

    # control batches, by control record type
    ctl = re.search(r"control batches=(\d+) (\{[^}]*\})", desc)
    types = collections.Counter()
    for b in batches:
        if b.is_control:
            types.update({r.control["type"] for r in b.records})
    got_ctl = (sum(b.is_control for b in batches), dict(types))
    assert got_ctl == ((int(ctl[1]), ast.literal_eval(ctl[2])) if ctl else (0, {}))

    txn = re.search(r"transactional batches=(\d+)", desc)
    assert sum(b.is_transactional for b in batches) == (int(txn[1]) if txn else 0)
    pids = re.search(r"producerIds=(\d+)", desc)
    got_pids = {b.producer_id for b in batches if b.producer_id is not None and b.producer_id >= 0}
    assert len(got_pids) == (int(pids[1]) if pids else 0)


@pytest.mark.parametrize("name", SEGMENT_FILES)
def test_real_segment_contents_match_manifest(name):
    """The MANIFEST's content summaries: timestamps, KRaft metadata record
    apiKeys, __consumer_offsets key versions.  These depend on every record
    boundary, key and value being decoded right."""
    base = need_corpus(SEGMENTS)
    desc = _manifest_rows()[name]
    _, batches = _decode((base / name).read_bytes(), name)

    # The MANIFEST's "ts" range also counts the baseTimestamp of batches the
    # log cleaner stamped with a delete horizon (attributes bit 6): there
    # baseTimestamp is the horizon, not a record's time (record timestamps
    # are still baseTimestamp + delta).  That is why two compacted
    # __consumer_offsets segments show a later day than any record has.
    ts = re.search(r", ts (\d{4}-\d\d-\d\d)\.\.(\d{4}-\d\d-\d\d)", desc)
    stamps = [r.timestamp for b in batches for r in b.records if r.timestamp is not None and r.timestamp >= 0]
    stamps += [b.base_timestamp for b in batches if b.has_delete_horizon]
    assert ts and (_day(min(stamps)), _day(max(stamps))) == (ts[1], ts[2])

    md = re.search(r"metadata record apiKeys=(\{[^}]*\})", desc)
    if md:  # KRaft metadata record value: frameVersion UVARINT, apiKey UVARINT, ...
        keys = collections.Counter()
        for b in batches:
            if not b.is_control:
                for r in b.records:
                    _, p = _uvarint(r.value)
                    keys[_uvarint(r.value, p)[0]] += 1
        assert dict(keys) == ast.literal_eval(md[1])

    co = re.search(r"offsets-topic key versions=(\{[^}]*\})", desc)
    if co:  # __consumer_offsets key: version INT16, ...
        versions = collections.Counter(struct.unpack_from(">h", r.key)[0]
                                       for b in batches for r in b.records if r.key)
        assert dict(versions) == ast.literal_eval(co[1])


# =============================================================================
# 3. corpus/real/vectors: other implementations' test vectors
# =============================================================================
#
# Only vectors whose bytes are a record batch or a message set are decoded
# here.  A few are framed slightly differently and get the framing they lack:
# sarama's legacy messages start at the CRC (we add offset + message_size),
# kafkajs' message sets carry their INT32 size prefix (we check and drop it),
# rskafka's fuzzer batch body lacks the header up to the CRC (we add it).
# The records field of a few single-partition Fetch v0..v4 response bodies
# (sarama, pykafka, kafka-protocol-rs) is sliced out by a 10-line reader;
# decoding protocol frames proper is a later feature.

def _vec(rel: str) -> Path:
    return need_corpus(VECTORS) / rel


def _vec_sidecar(rel: str) -> dict:
    p = _vec(rel)
    side = p.with_suffix(".json")
    if not side.exists():
        side = p.with_suffix(".meta.json")
    return load_json(side)


def _fetch_records(body: bytes, version: int) -> bytes:
    """The records field of a one-topic, one-partition Fetch response body, v0..v4."""
    p = 4 if version >= 1 else 0                       # throttle_time_ms (v1+)
    (topics,) = struct.unpack_from(">i", body, p)
    p += 4
    assert topics == 1
    (name_len,) = struct.unpack_from(">h", body, p)
    p += 2 + name_len
    (partitions,) = struct.unpack_from(">i", body, p)
    p += 4
    assert partitions == 1
    p += 4 + 2 + 8                                     # partition, error_code, high_watermark
    if version >= 4:
        p += 8                                         # last_stable_offset
        (aborted,) = struct.unpack_from(">i", body, p)
        p += 4 + max(aborted, 0) * 16                  # [producer_id, first_offset]
    (size,) = struct.unpack_from(">i", body, p)
    p += 4
    assert p + size <= len(body)
    return body[p:p + size]


def _parse_bytes_literal(s):
    """rskafka sidecars write keys as text or as ``b'x'*100``."""
    if s is None:
        return None
    m = re.fullmatch(r"b'(.)'\*(\d+)", s)
    return m[1].encode() * int(m[2]) if m else s.encode()


# --- single record batches: rskafka, sarama, kafkajs ---------------------------

RSKAFKA_BATCHES = ["batch_gzip", "batch_lz4", "batch_nocompression", "batch_snappy",
                   "batch_snappy_java", "batch_zstd"]


@pytest.mark.parametrize("name", RSKAFKA_BATCHES)
def test_vector_rskafka_record_batch(name):
    a = _vec_sidecar(f"rskafka/{name}.bin")["asserts"]
    items, batches = _decode(_vec(f"rskafka/{name}.bin").read_bytes(), name)
    assert len(items) == 1 and len(batches) == 1
    b = batches[0]
    assert _findings(items) == [] and b.crc_valid
    assert b.compression == a["compression"].split()[0]
    got = {"base_offset": b.base_offset, "partition_leader_epoch": b.partition_leader_epoch,
           "producer_id": b.producer_id, "producer_epoch": b.producer_epoch,
           "base_sequence": b.base_sequence, "is_transactional": b.is_transactional,
           "timestamp_type": b.timestamp_type, "first_timestamp": b.base_timestamp,
           "max_timestamp": b.max_timestamp, "last_offset_delta": b.last_offset_delta}
    assert got == {k: a[k] for k in got}
    assert len(b.records) == len(a["records"])
    for r, ar in zip(b.records, a["records"]):
        assert r.offset_delta == ar["offset_delta"]
        if "timestamp_delta" in ar:
            assert r.timestamp_delta == ar["timestamp_delta"]
        assert bytes(r.key) == _parse_bytes_literal(ar["key"])
        assert bytes(r.value) == _parse_bytes_literal(ar["value"])
        assert [(k, bytes(v)) for k, v in r.headers] == [(h["key"], h["value"].encode()) for h in ar["headers"]]


SARAMA_BATCHES = ["rb_control_empty", "rb_empty", "rb_gzip_1rec", "rb_lz4_1rec",
                  "rb_snappy_1rec", "rb_uncompressed_1rec"]


@pytest.mark.parametrize("name", SARAMA_BATCHES)
def test_vector_sarama_record_batch(name):
    a = _vec_sidecar(f"sarama/{name}.bin")["asserts"]
    items, batches = _decode(_vec(f"sarama/{name}.bin").read_bytes(), name)
    assert len(items) == 1 and len(batches) == 1
    b = batches[0]
    assert b.crc_valid
    got = {"magic": b.magic, "baseOffset": b.base_offset, "partitionLeaderEpoch": b.partition_leader_epoch,
           "codec": b.compression, "records": len(b.records), "maxTimestamp": b.max_timestamp,
           "lastOffsetDelta": b.last_offset_delta, "producerId": b.producer_id,
           "producerEpoch": b.producer_epoch, "baseSequence": b.base_sequence,
           "firstTimestamp": b.base_timestamp, "firstTimestamp_ms": b.base_timestamp,
           "control": b.is_control, "attributes_isControl_bit5": bool(b.attributes & 0x20)}
    assert {k: got[k] for k in a if k in got} == {k: a[k] for k in a if k in got}
    assert a.get("control", False) == b.is_control
    if "record0" in a:
        r, ar = b.records[0], a["record0"]
        assert r.timestamp_delta == ar["timestampDelta_ms"]
        assert r.timestamp == b.base_timestamp + ar["timestampDelta_ms"]
        assert (bytes(r.key).hex(), bytes(r.value).hex()) == (ar["key_hex"], ar["value_hex"])
        assert [(k.encode().hex(), bytes(v).hex()) for k, v in r.headers] == \
               [(h["key_hex"], h["value_hex"]) for h in ar["headers"]]
        # sarama's test batches keep maxTimestamp 0 below the record's time:
        # the spec's maxTimestamp is the largest record timestamp, so a warning.
        assert _findings(items) == [("Batch", 0, "timestamp-mismatch")]
    else:
        assert _findings(items) == []


def test_vector_kafkajs_record_batch():
    rel = "kafkajs/src/protocol/recordBatch/fixtures/v0_recordbatch.bin"
    exp = _vec_sidecar(rel)["used_by_tests"][0]["expectations"][0]["expected"]
    items, batches = _decode(_vec(rel).read_bytes(), "v0_recordbatch")
    assert len(items) == 1 and _findings(items) == []
    b = batches[0]
    assert b.crc_valid
    got = {"firstOffset": str(b.base_offset), "firstTimestamp": str(b.base_timestamp),
           "partitionLeaderEpoch": b.partition_leader_epoch, "inTransaction": b.is_transactional,
           "isControlBatch": b.is_control, "lastOffsetDelta": b.last_offset_delta,
           "producerId": str(b.producer_id), "producerEpoch": b.producer_epoch,
           "firstSequence": b.base_sequence, "maxTimestamp": str(b.max_timestamp),
           "timestampType": (b.attributes >> 3) & 1}
    assert got == {k: v for k, v in exp.items() if k != "records"}
    # LogAppendTime: every record carries the batch's maxTimestamp
    assert [r.timestamp for r in b.records] == [b.max_timestamp]


def test_vector_kafkajs_zstd_payload_under_codec_none():
    """The sidecar: attributes say codec NONE but the records are a zstd frame;
    the CRC is valid.  Going by the attributes (the spec), the records cannot be
    decoded, and kafkadump must say so rather than guess."""
    rel = "kafkajs/src/protocol/recordBatch/fixtures/v0_recordbatch_zstd.bin"
    assert "codec bits say NONE" in _vec_sidecar(rel)["observed_by_us"]
    data = _vec(rel).read_bytes()
    assert data[61:65] == b"\x28\xb5\x2f\xfd"
    items, batches = _decode(data, "v0_recordbatch_zstd")
    b = batches[0]
    assert len(items) == 1 and b.crc_valid and b.compression == "none"
    assert b.records == []
    assert {"record-malformed", "record-count-mismatch"} <= _codes(items)


def test_vector_kafka_python_control_batch_wrong_crc():
    """MANIFEST caveat 4: hand-made, stored CRC 0x6597ffd0 != CRC-32C 0xd56b5fb4."""
    rel = "kafka-python/record/control_batch_data_v2.bin"
    sc = _vec_sidecar(rel)
    items, batches = _decode(_vec(rel).read_bytes(), "control_batch_data_v2")
    assert len(items) == 1
    b = batches[0]
    assert (b.crc, b.computed_crc) == (0x6597FFD0, 0xD56B5FB4)
    assert b.crc_valid is False
    assert _findings(items) == [("Batch", 0, "crc-mismatch")]
    assert b.findings[0].offset == 17  # the crc field
    a = sc["asserts"]
    assert b.is_control is a["is_control_batch"] and len(b.records) == a["records"]
    ctl = b.records[0].control
    assert (ctl["version"], ctl["type"]) == (a["control_record"]["version"], "ABORT")
    assert bytes(b.records[0].value) == b"opaque-control-message"


def test_vector_rskafka_fuzz_java_snappy_chunk_length():
    """rskafka's fuzzer input: a xerial-snappy chunk declaring 4227860745 bytes
    with 38 left.  It must be reported, never allocated.

    The sidecar says the body starts at partitionLeaderEpoch; its bytes say it
    starts at attributes (codec bits 2 = snappy at byte 1, the xerial magic at
    byte 40 = 61 - 21), so the header is completed up to the CRC field."""
    body = _vec("rskafka/fuzz_java_snappy_oom_batchbody.bin").read_bytes()
    assert body[40:48] == b"\x82SNAPPY\x00"
    data = struct.pack(">qiibI", 0, len(body) + 9, 0, 2, crc32c(body)) + body
    items, batches = _decode(data, "fuzz")
    assert len(items) == 1 and batches[0].crc_valid
    assert batches[0].records == []
    # the second xerial chunk's length field, as rskafka's error names it
    expected_error = _vec_sidecar("rskafka/fuzz_java_snappy_oom_batchbody.bin")["asserts"]["expected_error"]
    (chunk,) = struct.unpack_from(">I", body, 40 + 16 + 4 + 3)
    assert f"got {chunk} bytes" in expected_error
    failed = [f for f in batches[0].findings if f.code.value == "decompression-failed"]
    assert [(f.offset, f.severity.value) for f in failed] == [(61, "error")]


# --- message sets: kafka-python, kafkajs, sarama legacy messages ---------------

@pytest.mark.parametrize("magic", [0, 1])
def test_vector_kafka_python_message_set(magic):
    rel = f"kafka-python/record/record_batch_data_v{magic}.bin"
    a = _vec_sidecar(rel)["asserts"]
    data = _vec(rel).read_bytes()
    assert len(data) == a["valid_bytes"]
    items, batches = _decode(data, rel)
    assert _findings(items) == [] and len(batches) == a["messages"]
    assert all(b.magic == magic and b.crc_valid for b in batches)
    recs = [r for b in batches for r in b.records]
    m0 = a["msg0"]
    assert (recs[0].key, bytes(recs[0].value).decode(), recs[0].timestamp, recs[0].crc) == \
           (m0["key"], m0["value"], m0["timestamp"], m0["crc"])
    assert recs[0].timestamp_type == (None if m0["timestamp_type"] is None else
                                      ("CreateTime", "LogAppendTime")[m0["timestamp_type"]])
    assert [bytes(r.value).decode() for r in recs[1:]] == [a["msg1_value"], a["msg2_value"], a["msg3_value"]]
    assert [r.offset for r in recs] == [0, 1, 2, 3]
    # the test appends 4 zero bytes: not a message, just padding
    items, _ = _decode(data + b"\0" * 4, rel)
    assert len(data) + 4 == a["size_with_4_trailing_zero_bytes"]
    assert _findings(items) == [("Gap", a["valid_bytes"], "zero-padding")]
    assert _findings(items, ("error", "warning")) == []


def test_vector_kafka_python_v2_batches():
    rel = "kafka-python/record/record_batch_data_v2.bin"
    a = _vec_sidecar(rel)["asserts"]
    data = _vec(rel).read_bytes()
    assert len(data) == a["valid_bytes"]
    items, batches = _decode(data, rel)
    assert len(items) == len(batches) == a["batches"]
    assert all(b.crc_valid for b in batches)
    # the 4th batch was appended to the test data later and restarts at
    # offset 0: true for these bytes, so kafkadump warns
    assert _findings(items) == [("Batch", 218, "offset-order")]
    b0 = batches[0].records
    assert len(b0) == a["batch0"]["records"]
    assert (b0[0].key, bytes(b0[0].value).decode(), b0[0].timestamp, b0[0].timestamp_type, b0[0].headers) == \
           (a["batch0"]["key"], a["batch0"]["value"], a["batch0"]["timestamp"], "CreateTime", a["batch0"]["headers"])
    assert [bytes(r.value) for r in batches[1].records] == [b"", b""]
    assert [bytes(r.value) for r in batches[2].records] == [b"123"]
    b3 = batches[3].records
    assert len(b3) == a["batch3"]["records"] and bytes(b3[0].value).decode() == a["batch3"]["value"]
    assert [[k, bytes(v).decode()] for k, v in b3[0].headers] == a["batch3"]["headers"]
    items, _ = _decode(data + b"\0" * 4, rel)
    assert _findings(items)[-1] == ("Gap", a["valid_bytes"], "zero-padding")


def test_vector_kafka_python_corrupt_related_cases():
    """The sidecar's related cases: no bytes, and 3 zero bytes, hold no batch."""
    rel = _vec_sidecar("kafka-python/record/corrupt_length3.bin")["related"]
    assert rel["empty"]["size"] == 0 and _decode(b"")[0] == []
    items, batches = _decode(b"\0" * rel["three_zero_bytes"]["size"])
    assert batches == [] and _findings(items, ("error", "warning")) == []


def test_vector_kafka_python_corrupt_length():
    """offset 3, message_size 3, then the 3 bytes: all present, but 3 bytes
    cannot hold crc + magic + attributes + key + value (14 at least).
    kafka-python raises CorruptRecordError; Kafka's legacy reader throws
    CorruptRecordException "Record size is less than the minimum record
    overhead (14)".  Nothing is missing, so "truncated" is the wrong word."""
    rel = "kafka-python/record/corrupt_length3.bin"
    a = _vec_sidecar(rel)["asserts"]
    data = _vec(rel).read_bytes()
    assert struct.unpack_from(">qi", data) == (a["offset"], a["length"]) and len(data) == 12 + a["length"]
    items, batches = _decode(data, rel)
    assert batches == []
    assert [c for _, _, c in _findings(items)] == ["length-invalid"]


KAFKAJS_MESSAGE_SETS = ["messages_v0_GZIP", "messages_v0_uncompressed.json"]


@pytest.mark.parametrize("name", KAFKAJS_MESSAGE_SETS)
def test_vector_kafkajs_message_set(name):
    """kafkajs' message-set fixtures (their tests assert nothing about them):
    an INT32 size, then a magic-0 set of 3 messages; it decodes cleanly."""
    data = _vec(f"kafkajs/src/protocol/messageSet/fixtures/{name}.bin").read_bytes()
    (size,) = struct.unpack_from(">i", data)
    assert size == len(data) - 4
    items, batches = _decode(data[4:], name)
    assert _findings(items) == []
    recs = [r for b in batches for r in b.records]
    assert all(b.crc_valid and b.magic == 0 for b in batches) and all(r.crc_valid for r in recs)
    assert [r.offset for r in recs] == [0, 1, 2]


SARAMA_MESSAGES = ["msg_emptyBulkGzipMessage", "msg_emptyBulkLZ4Message", "msg_emptyBulkSnappyMessage",
                   "msg_emptyBulkZSTDMessage", "msg_emptyGzipMessage", "msg_emptyLZ4Message",
                   "msg_emptyMessage", "msg_emptyV1Message", "msg_emptyZSTDMessage"]


@pytest.mark.parametrize("name", SARAMA_MESSAGES)
def test_vector_sarama_legacy_message(name):
    """A sarama Message (from its CRC on) behind an offset-0 log entry header.
    The offset is ours, so inner-offset warnings it causes are not checked."""
    a = _vec_sidecar(f"sarama/{name}.bin")["asserts"]
    msg = _vec(f"sarama/{name}.bin").read_bytes()
    items, batches = _decode(struct.pack(">qi", 0, len(msg)) + msg, name)
    assert len(items) == len(batches) == 1
    if "ZSTD" in name:
        # zstd exists only in record batches (magic 2); Kafka rejects it in a legacy message
        assert _findings(items, ("error",)) == [("Batch", 0, "unknown-codec")]
        assert batches[0].magic < 2 and batches[0].records == []
        return
    assert _findings(items, ("error",)) == []
    b = batches[0]
    assert b.crc_valid and all(r.crc_valid for r in b.records)
    assert (b.magic, b.compression, b.key) == (a["magic"], a["codec"], a["key"])
    if "crc" in a:
        assert b.crc == a["crc"]
    if "timestamp" in a:
        assert b.timestamp == a["timestamp"]
    if "timestamp_ms" in a:
        assert b.timestamp == a["timestamp_ms"]
    if a.get("timestamp_negative"):
        assert b.timestamp < 0
    if "inner_message_set_count" in a:
        assert len(b.records) == b.record_count == a["inner_message_set_count"]
    if "value_decompressed_len" in a:  # an empty compressed set: no inner messages
        assert a["value_decompressed_len"] == 0 and b.decompressed_size == 0 and b.records == []
    if a["codec"] == "none":
        assert [(r.key, r.value) for r in b.records] == [(a["key"], a["value"])]


def test_vector_sarama_magic2_in_legacy_message():
    """sarama rejects legacy framing with magic 2.  In a log, magic 2 means a
    v2 batch, and 14 bytes are far below a batch's 49-byte minimum."""
    a = _vec_sidecar("sarama/msg_emptyV2Message.bin")["asserts"]
    assert "unknown magic byte (2)" in a["expected_error"]
    msg = _vec("sarama/msg_emptyV2Message.bin").read_bytes()
    items, batches = _decode(struct.pack(">qi", 0, len(msg)) + msg, "emptyV2")
    assert batches == []
    assert [c for _, _, c in _findings(items)] == ["length-invalid"]


# --- records fields of Fetch responses: sarama, kafka-protocol-rs, pykafka -----

SARAMA_FETCH = ["oneMessageFetchResponse", "oneMessageFetchResponseV4", "oneRecordFetchResponse",
                "overflowMessageFetchResponse", "partialFetchResponse"]


@pytest.mark.parametrize("name", SARAMA_FETCH)
def test_vector_sarama_fetch_records(name):
    rel = f"sarama/fetchresp_{name}.bin"
    sc = _vec_sidecar(rel)
    a = sc["asserts"]
    records = _fetch_records(_vec(rel).read_bytes(), sc["api_version"])
    items, batches = _decode(records, name)
    recs = [r for b in batches for r in b.records]
    assert all(b.crc_valid for b in batches)
    assert len(recs) == a["num_records"]
    if a.get("partial"):
        # batchLength 70 declares an 82-byte batch; fewer bytes came
        assert batches == [] and _findings(items) == [("Gap", 0, "truncated")]
        assert f"batch of {a['partialBatchSize']} bytes declared" in items[0].findings[0].message
        return
    if a.get("overflow"):
        # a message cut off after the whole one: the tail is truncated
        assert _findings(items) == [("Gap", batches[0].next_position, "truncated")]
    elif "rec0" in a:
        assert _findings(items) == [("Batch", 0, "timestamp-mismatch")]  # sarama's maxTimestamp 0
    else:
        assert _findings(items) == []
    if "msg0" in a:
        m, r = a["msg0"], recs[0]
        assert (r.offset, batches[0].compression, r.key, bytes(r.value).hex()) == \
               (m["offset"], m["codec"], m["key"], m["value_hex"])
    if "rec0" in a:
        assert (bytes(recs[0].key).hex(), bytes(recs[0].value).hex()) == (a["rec0"]["key_hex"], a["rec0"]["value_hex"])


PROTOCOL_RS_FETCH = ["first_record", "second_record", "multiple_records"]


@pytest.mark.parametrize("name", PROTOCOL_RS_FETCH)
def test_vector_kafka_protocol_rs_fetch_records(name):
    rel = f"kafka-protocol-rs/fetchresp_v4_{name}.bin"
    sc = _vec_sidecar(rel)
    a = sc["asserts"]
    body = _vec(rel).read_bytes()
    records = _fetch_records(body, sc["api_version"])
    items, batches = _decode(records, name)
    # hand-assembled: maxTimestamp 1099511627776 while the one record's timestamp is 1000
    assert _findings(items) == [("Batch", 0, "timestamp-mismatch")]
    assert (batches[0].max_timestamp, batches[0].records[0].timestamp) == (1099511627776, 1000)
    assert len(batches) == a.get("batches_decoded", 1)
    b = batches[0]
    assert b.crc_valid and b.magic == a["batch_version"] and b.compression == a["compression"].lower()
    assert len(b.records) == a["records"]
    if "key" in a:
        assert (bytes(b.records[0].key).decode(), bytes(b.records[0].value).decode()) == (a["key"], a["value"])
    if name == "multiple_records":
        # the second batch lies past the records field: intact, but not part of it
        rest = body[len(body) - 79:]
        _, more = _decode(rest)
        assert len(more) == 1 and more[0].crc_valid


PYKAFKA_FETCH = ["fetchresp_v0", "fetchresp_v0_gzip_magic0", "fetchresp_v0_snappy_xerial_magic0",
                 "fetchresp_v1", "fetchresp_v1_gzip_magic1", "fetchresp_v1_snappy_xerial_magic1"]


@pytest.mark.parametrize("name", PYKAFKA_FETCH)
def test_vector_pykafka_fetch_records(name):
    rel = f"pykafka/{name}.bin"
    a = _vec_sidecar(rel)["asserts"]
    version = int(name[len("fetchresp_v")])
    items, batches = _decode(_fetch_records(_vec(rel).read_bytes(), version), name)
    assert _findings(items) == []
    recs = [r for b in batches for r in b.records]
    assert all(b.crc_valid for b in batches) and all(r.crc_valid for r in recs)
    if isinstance(a.get("messages"), list):
        expected = a["messages"]
        count = len(expected)
    else:
        expected = [a["msg0"]]
        count = a["messages"]
    # pykafka's test checks the first len(expected) messages only: the magic-0
    # gzip wrapper actually holds 5 (offsets 0..4, two more after the three)
    if name == "fetchresp_v0_gzip_magic0":
        assert len(recs) == 5 and batches[0].offset == 4
    else:
        assert len(recs) == count
    skip_ts = 3 if "ignores timestamps of the first 3" in a.get("note", "") else 0
    for i, (r, m) in enumerate(zip(recs, expected)):
        assert r.offset == m["offset"]
        assert (None if r.key is None else bytes(r.key).decode()) == m["key"]
        assert bytes(r.value).decode() == m["value"]
        if "magic" in m:
            assert r.magic == m["magic"]
        if m.get("magic") == 1 and i >= skip_ts:
            assert r.timestamp == m["timestamp"]
        if m.get("magic") == 0:
            assert r.timestamp is None  # pykafka shows 0 for "no timestamp"
