"""The plain path of the internal-topic decoder and of its JSON lines, against the reference.

``decoders/internal_topics/plain_records`` reads a plain record by plans made once per record
type (the schema decoder's plans compiled to straight-line Python); ``render/decoded_json``
writes a decoded key or value by writers made once per record type.  The reference is the pure
interpreter (``Decoder.reference_record`` with the schema decoder's compiled plans off) and
``jsontext.dumps`` of the record's object.  Both must give the same records, findings and text
on every record of the corpus's internal topics, on records generated from Kafka's own schemas
(``internal_encoder``) of every record type and version, and on damaged bytes, where the plain
path hands back to the reference and never raises.
"""

from __future__ import annotations

import contextlib
import random
import struct

import builders as bld
import internal_encoder as E
import pytest
from conftest import need_corpus

from kafkadump.objects.generated_fields import finding_fields
from kafkadump.decoders.batches import Batch, iter_batches
from kafkadump.decoders.internal_topics.decoded import DecodedRecord, Part
from kafkadump.decoders.internal_topics.kinds import kind_from_path
from kafkadump.decoders.internal_topics.record_decoder import decoder_for
from kafkadump.decoders.protocol import decoder as schema_decoder
from kafkadump.objects.records import ENCODERS, record_object
from kafkadump.render import decoded_json
from kafkadump.render.internal_records import record_dict
from kafkadump.render.jsonl import RecordLines
from kafkadump.render.jsontext import dumps as dumps_text

ENCODINGS = ("auto", "base64", "hex", "text")


@pytest.fixture(autouse=True)
def _compile_at_once(monkeypatch):
    """Plans and writers compiled at their first use (not after a number of uses): every test
    below runs the compiled code."""
    monkeypatch.setattr(schema_decoder, "COMPILE_AFTER", 0)
    monkeypatch.setattr(decoded_json, "COMPILE_AFTER", 0)


@contextlib.contextmanager
def _interpreter_only():
    old = schema_decoder.COMPILED_PLANS
    schema_decoder.COMPILED_PLANS = False
    try:
        yield
    finally:
        schema_decoder.COMPILED_PLANS = old


def shape(v):
    """A decoded value as plain data, types kept (True is not 1), Parts by every attribute."""
    if isinstance(v, Part):
        return ("Part", v.schema, v.version, shape(v.data), v.raw, v.partial, v.frame_version, v.api_key)
    if isinstance(v, dict):
        return ("dict", [(k, shape(x)) for k, x in v.items()])
    if isinstance(v, list):
        return ("list", [shape(x) for x in v])
    return (type(v).__name__, v)


def record_shape(d: DecodedRecord):
    return (d.kind, d.offset, d.timestamp, d.control, d.tombstone, shape(d.key), shape(d.value),
            [finding_fields(f) for f in d.findings])


def reference_text(r, b, d, encoding):
    enc = ENCODERS[encoding]
    return dumps_text(record_dict(record_object(r, b, enc), d, enc))


class Tally:
    def __init__(self):
        self.records = self.plain = 0


def check(kind, b, tally=None, encodings=ENCODINGS, redact=(True, False)):
    """Every record of batch ``b``: the plain path's record and lines equal the reference's."""
    for secrets in redact:
        dec = decoder_for(kind, secrets)
        for r in b.records or ():
            with _interpreter_only():
                ref = dec.reference_record(r, b)
            got = dec.decode_record(r, b)
            assert record_shape(got) == record_shape(ref), (kind, r.offset)
            if tally is not None and secrets:
                tally.records += 1
                tally.plain += r.control is None and dec.plain.read(r.key, r.value, r.offset, r.timestamp) is not None
            for encoding in encodings:
                assert RecordLines(encoding).decoded_line(r, b, got) == reference_text(r, b, ref, encoding), \
                    (kind, r.offset, encoding)


# --- the corpus -----------------------------------------------------------------------------------------

def _corpus_files():
    root = need_corpus("real/segments")
    return sorted(p for p in root.rglob("*") if p.is_file() and kind_from_path(str(p))
                  and (p.suffix == ".log" or p.name.endswith(".checkpoint")) and p.stat().st_size)


def test_every_internal_record_of_the_corpus_reads_and_writes_as_the_reference():
    tally = Tally()
    files = _corpus_files()
    for n, p in enumerate(files):
        kind = kind_from_path(str(p))
        for b in iter_batches(p.read_bytes(), str(p)):
            if isinstance(b, Batch):
                # every encoding on a few files, the default one on all (the line text is the same code)
                check(kind, b, tally, ENCODINGS if n % 8 == 0 else ("auto",), (True,) if n % 4 else (True, False))
    assert len(files) >= 80 and tally.records >= 120_000
    # the plain path reads all but the control records (the corpus is clean: test_internal_corpus.py)
    assert tally.plain >= tally.records - 300, (tally.plain, tally.records)


# --- records generated from Kafka's schemas ----------------------------------------------------------------

def i16(v):
    return struct.pack(">h", v)


def frame(api_key, version, body):
    return E.uvarint(1) + E.uvarint(api_key) + E.uvarint(version) + body


def batch_of(pairs):
    lay = bld.v2_batch(0, [bld.Rec(k, v) for k, v in pairs])
    (b,) = list(iter_batches(lay.data, "t"))
    assert isinstance(b, Batch) and not b.findings
    return b


def _coordinator_pairs(folder):
    pairs = []
    for kname in E.names_in(folder):
        if not kname.endswith("Key"):
            continue
        kdoc, vdoc = E.load(kname), E.load(kname[:-3] + "Value")
        for kv in E.valid_versions(kdoc):
            for vv in E.valid_versions(vdoc):
                for variant in (0, 1, 2):
                    key = i16(kv) + E.encode(kdoc, kv, E.sample(kdoc, kv, variant))
                    pairs.append((key, i16(vv) + E.encode(vdoc, vv, E.sample(vdoc, vv, variant))))
            pairs.append((pairs[-1][0], None))  # a tombstone
    return pairs


def _framed_pairs(folder):
    pairs = []
    for name in E.names_in(folder):
        doc = E.load(name)
        if doc.get("type") != "metadata":
            continue
        for v in E.valid_versions(doc):
            for variant in (0, 1, 2):
                pairs.append((None, frame(doc["apiKey"], v, E.encode(doc, v, E.sample(doc, v, variant)))))
    return pairs


def _subscription(version):
    value = {"topics": ["orders", "pay\u2028ments"], "userData": b"ud"}
    if version >= 1:
        value["ownedPartitions"] = [{"topic": "orders", "partitions": [0, 2]}]
    if version >= 2:
        value["generationId"] = 12
    if version >= 3:
        value["rackId"] = "rack-a"
    return i16(version) + E.encode(E.load("ConsumerProtocolSubscription"), min(version, 3), value)


def _assignment(version):
    value = {"assignedPartitions": [{"topic": "orders", "partitions": [0, 1]}], "userData": None}
    return i16(version) + E.encode(E.load("ConsumerProtocolAssignment"), min(version, 3), value)


def _group_pairs():
    """GroupMetadataValue of the consumer protocol: payloads of every version embedded (one newer than the tables)."""
    doc = E.load("GroupMetadataValue")
    key = i16(2) + E.encode(E.load("GroupMetadataKey"), 2, {"group": "g"})
    pairs = []
    for gv in E.valid_versions(doc):
        members = []
        for sv in range(5):
            m = E.sample(doc, gv, 0)["members"][0]
            m.update({"memberId": f"m{sv}", "subscription": _subscription(sv), "assignment": _assignment(sv)})
            members.append(m)
        pairs.append((key, i16(gv) + E.encode(doc, gv, E.sample(doc, gv, 0, {"protocolType": "consumer",
                                                                             "members": members[:4]}))))
        pairs.append((key, i16(gv) + E.encode(doc, gv, E.sample(doc, gv, 0, {"protocolType": "consumer",
                                                                             "members": members}))))
    return pairs


def _secret_pairs():
    scram, config = E.load("UserScramCredentialRecord"), E.load("ConfigRecord")
    pairs = []
    for v in E.valid_versions(scram):
        pairs.append((None, frame(scram["apiKey"], v, E.encode(scram, v, E.sample(scram, v, 0)))))
    for name in ("sasl.jaas.config", "retention.ms", "ssl.key.password"):
        for v in E.valid_versions(config):
            value = E.sample(config, v, 0, {"name": name, "value": "s3cr\u00e9t"})
            pairs.append((None, frame(config["apiKey"], v, E.encode(config, v, value))))
    return pairs


GENERATED = {"offsets": lambda: _coordinator_pairs("group-coordinator") + _group_pairs(),
             "transactions": lambda: _coordinator_pairs("transaction-coordinator"),
             "share-state": lambda: _coordinator_pairs("share-coordinator"),
             "metadata": lambda: _framed_pairs("metadata") + _secret_pairs(),
             "remote-log-metadata": lambda: _framed_pairs("storage")}


@pytest.mark.parametrize("kind", sorted(GENERATED))
def test_generated_records_of_every_type_and_version_read_and_write_as_the_reference(kind):
    pairs = GENERATED[kind]()
    tally = Tally()
    for i in range(0, len(pairs), 50):
        check(kind, batch_of(pairs[i:i + 50]), tally)
    assert tally.records == len(pairs) > 0
    # all plain but the records the reference words a finding for (a payload newer than the tables)
    assert tally.plain >= tally.records - (len(pairs) if kind == "offsets" else 0) // 2


def test_secret_masking_is_decided_per_record_type():
    from kafkadump.decoders.payloads.redact import SECRET_MASK

    dec = decoder_for("metadata", True)
    b = batch_of(_secret_pairs())
    masked = [dec.decode_record(r, b).value for r in b.records]
    assert all(p.raw is None for p in masked if p.schema == "UserScramCredentialRecord")
    assert all(p.data["salt"] == SECRET_MASK for p in masked if p.schema == "UserScramCredentialRecord")
    configs = [p for p in masked if p.schema == "ConfigRecord"]
    assert [p.data["value"] for p in configs].count(SECRET_MASK) == 2 * len(configs) // 3
    rps = dec.plain.plans
    assert {rp.name for rp in rps.values() if rp.secrets} == {"UserScramCredentialRecord", "ConfigRecord"}


# --- damaged bytes --------------------------------------------------------------------------------------

def _damaged(pairs, seed):
    """Each pair cut short at every length and with a byte changed at random."""
    rnd = random.Random(seed)
    out = []
    for k, v in pairs:
        for n in range(len(v) if v else 0):
            out.append((k, v[:n]))
        if k:
            for n in range(len(k)):
                out.append((k[:n], v))
        if v:
            for _ in range(8):
                i = rnd.randrange(len(v))
                out.append((k, v[:i] + bytes([rnd.randrange(256)]) + v[i + 1:]))
            out.append((k, v + b"\x00"))
    return out


@pytest.mark.parametrize("kind", sorted(GENERATED))
def test_damaged_records_go_back_to_the_reference_and_never_raise(kind):
    pairs = GENERATED[kind]()[::7]
    damaged = _damaged(pairs, seed=29)
    tally = Tally()
    for i in range(0, len(damaged), 200):
        check(kind, batch_of(damaged[i:i + 200]), tally, encodings=("auto",), redact=(True,))
    assert tally.records == len(damaged) > 100
