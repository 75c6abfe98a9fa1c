"""librdkafka (through confluent-kafka) as an independent oracle *encoder*.

librdkafka has no API that returns encoded batches, so each case starts a
tiny fake broker (``fakebroker.py``, 127.0.0.1, ephemeral port, stops by
itself) and lets a real ``confluent_kafka.Producer`` send it Produce
requests.  The fake keeps each partition's raw ``records`` bytes exactly as
librdkafka encoded them; kafkadump decodes them and must give back exactly
what was produced: keys, values, headers in order, timestamps, the offsets
as the producer writes them, valid CRCs, the configured codec, no findings.

Which message format librdkafka writes is chosen the way an old cluster
would choose it: ``api.version.request=false`` plus ``broker.version.fallback``.

    fallback   ApiVersions?                 Produce  Metadata  magic  codecs
    0.9.0      no (legacy table)            v1       v0        0      none gzip snappy lz4
    0.10.0.0   yes: librdkafka treats any   v2       v1        1      none gzip snappy lz4
    0.11.0.0   fallback >= 0.10 as          v3       v4        2      none gzip snappy lz4
    2.1.0      "queryable" and asks anyway  v7       v7        2      zstd

(librdkafka opens with ApiVersions v3, a flexible version; the fake answers
the KIP-511 way -- UNSUPPORTED_VERSION in a v0 body -- and librdkafka retries
with v0 and gets the fake's table for that release.)

librdkafka's encodings seen here (asserted below, independently of kafkadump):
snappy is one raw snappy block (no xerial framing) in every magic; lz4 is an
LZ4 frame whose header checksum is right in magic 1 and 2 but computed the
pre-0.10 way (over the magic number too) in magic 0, which kafkadump repairs
and reports as the info finding ``lz4-legacy-checksum``; magic 0 carries no
timestamps; a compressed legacy wrapper has offset 0 and inner offsets
0..n-1 (the broker assigns the real ones).
"""

from __future__ import annotations

import gzip
import logging
import struct
import time

import pytest

confluent_kafka = pytest.importorskip(
    "confluent_kafka", reason="confluent-kafka (librdkafka) is not installed: the librdkafka oracle cannot run")

import fakebroker as fb  # noqa: E402  (tests/ is on sys.path, as for conftest)

from kafkadump.decoders.batches import Batch  # noqa: E402
from kafkadump.decoders.batches import iter_batches  # noqa: E402

T0 = 1_700_000_000_000
TOPIC = "oracle"
PARTITIONS = 2
PRODUCER_ID = 4242
XERIAL_MAGIC = b"\x82SNAPPY\x00"
LZ4_MAGIC = b"\x04\x22\x4d\x18"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

# magic -> (broker.version.fallback, the fake broker's ApiVersions table, expected Produce version)
FORMATS = {
    0: ("0.9.0", fb.KAFKA_0_9_0, 1),
    1: ("0.10.0.0", fb.KAFKA_0_10_0, 2),
    2: ("0.11.0.0", fb.KAFKA_0_11_0, 3),
    "zstd": ("2.1.0", fb.KAFKA_2_1_0, 7),
}

CASES = ([(2, c) for c in ("none", "gzip", "snappy", "lz4", "zstd")]
         + [(1, c) for c in ("none", "gzip", "snappy", "lz4")]
         + [(0, c) for c in ("none", "gzip", "snappy", "lz4")])

HEADER_SETS = [
    None,
    [("h", b"1"), ("h", b"2"), ("h", None)],            # duplicate keys, a null value
    [("", b""), ("null", None), ("bin", bytes(range(200)))],  # empty key / value, 2-byte varint length
    [("utf8-ключ", "значение".encode())],
]


# --- what we produce -------------------------------------------------------------

def make_messages(magic: int) -> list[dict]:
    """The records to produce; ``ts`` None means "let the producer stamp it".

    Every batch of three gets some compressible bytes: librdkafka sends a
    batch uncompressed when compressing would not make it smaller.
    """
    base = [
        dict(key=b"k0", value=bytes(range(256)), ts=T0),                 # binary value, multi-byte varints
        dict(key=None, value=b"", ts=T0 + 1),                            # null key, empty value
        dict(key=b"", value=None, ts=T0 + 2),                            # empty key, null value (tombstone)
        dict(key=b"\x00\xffkey", value=b"abc" * 1500, ts=T0 - 5_000),    # compressible; earlier timestamp
        dict(key=b"k4", value=b"v4" * 100, ts=None),                     # producer's own timestamp
        dict(key="ключ".encode(), value="значение ".encode() * 20, ts=T0 + 86_400_000),
        dict(key=None, value=b"\x00" * 70, ts=T0 + 3),
        dict(key=b"k7", value=b"seven " * 20, ts=T0 + 3),                # same timestamp twice
        dict(key=None, value=None, ts=T0 + 4),                           # null key and value
        dict(key=b"k9", value=b"x" * 129, ts=T0 + 5),
        dict(key=b"k10", value=b"ten " * 20, ts=T0 + 6),
        dict(key=b"k11", value=b"eleven " * 20, ts=T0 + 7),
        dict(key=b"k12", value=b"twelve " * 20, ts=T0 + 8),
    ]
    for i, m in enumerate(base):
        m["partition"] = i % PARTITIONS
        m["headers"] = HEADER_SETS[i % len(HEADER_SETS)] if magic == 2 else None
    return base


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(f"{record.levelname} {record.getMessage()}")


def produce(magic, codec, messages, idempotent=False):
    """Produce ``messages`` through librdkafka into a fake broker; returns (broker, t_before, t_after, logs)."""
    fallback, table, _ = FORMATS["zstd" if codec == "zstd" else magic]
    logger = logging.getLogger(f"kafkadump.tests.rdkafka.{magic}.{codec}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    handler = _Collect()
    logger.handlers[:] = [handler]
    errors = []
    broker = fb.FakeBroker(api_versions=table, topics={TOPIC: PARTITIONS}, producer_id=PRODUCER_ID,
                           lifetime=30.0)
    with broker:
        conf = {
            "bootstrap.servers": broker.bootstrap,
            "api.version.request": False,
            "broker.version.fallback": fallback,
            "compression.codec": codec,
            "linger.ms": 50,                   # batches fill to batch.num.messages well before this
            "batch.num.messages": 3,           # several batches per partition
            "message.timeout.ms": 5000,
            "socket.timeout.ms": 3000,
            "reconnect.backoff.ms": 10,
            "error_cb": lambda e: errors.append(str(e)),
        }
        if idempotent:
            conf["enable.idempotence"] = True
        p = confluent_kafka.Producer(conf, logger=logger)
        delivered = []
        t_before = int(time.time() * 1000)
        for m in messages:
            kw = {}
            if m["headers"] is not None:
                kw["headers"] = m["headers"]
            p.produce(TOPIC, value=m["value"], key=m["key"], partition=m["partition"],
                      timestamp=m["ts"] or 0,
                      on_delivery=lambda err, msg: delivered.append(err), **kw)
        left = p.flush(10)
        t_after = int(time.time() * 1000)
        p.close()
    logs = handler.lines
    assert left == 0, f"librdkafka could not deliver {left} messages; its log: {logs}; broker: {broker.unexpected}"
    assert delivered == [None] * len(messages), (delivered, logs)
    assert errors == [], (errors, logs)
    assert broker.unexpected == [], broker.unexpected
    assert broker.errors == [], broker.errors
    return broker, t_before, t_after, logs


# --- independent look at the raw bytes (no kafkadump) -----------------------------

def raw_payloads(blob: bytes):
    """(magic, codec, compressed payload) of each top-level batch / message in ``blob``."""
    out = []
    pos = 0
    while pos < len(blob):
        _, length = struct.unpack_from(">qi", blob, pos)
        end = pos + 12 + length
        magic = blob[pos + 16]
        if magic == 2:
            (attrs,) = struct.unpack_from(">h", blob, pos + 21)
            out.append((2, attrs & 7, blob[pos + 61:end]))
        else:
            attrs = blob[pos + 17]
            p = pos + 18 + (8 if magic == 1 else 0)
            (klen,) = struct.unpack_from(">i", blob, p)
            p += 4 + max(klen, 0)
            (vlen,) = struct.unpack_from(">i", blob, p)
            out.append((magic, attrs & 7, blob[p + 4:p + 4 + max(vlen, 0)]))
        pos = end
    return out


def check_framing(magic, codec, blobs):
    """What librdkafka put on the wire, checked with the codec libraries themselves."""
    import lz4.frame
    import snappy

    want = ("none", "gzip", "snappy", "lz4", "zstd").index(codec)
    for blob in blobs:
        for m, c, payload in raw_payloads(blob):
            assert (m, c) == (magic, want)
            if codec == "gzip":
                assert payload[:2] == b"\x1f\x8b"
                gzip.decompress(payload)
            elif codec == "snappy":
                assert not payload.startswith(XERIAL_MAGIC), "librdkafka wrote xerial framing"
                snappy.uncompress(payload)  # one raw block
            elif codec == "lz4":
                assert payload[:4] == LZ4_MAGIC
                if magic == 0:
                    with pytest.raises(RuntimeError, match="(?i)checksum"):
                        lz4.frame.decompress(payload)  # the broken pre-0.10 header checksum
                else:
                    lz4.frame.decompress(payload)
            elif codec == "zstd":
                assert payload[:4] == ZSTD_MAGIC


# --- the checks ----------------------------------------------------------------------

def decode_partition(broker, partition):
    """kafkadump's view of one partition: [(blob, [Batch, ...]), ...] in request order."""
    out = []
    for prod in broker.records_for(TOPIC, partition):
        assert prod.records, f"empty records for partition {partition}"
        items = list(iter_batches(prod.records, f"{TOPIC}-{partition}"))
        assert all(isinstance(i, Batch) for i in items), [i for i in items if not isinstance(i, Batch)]
        out.append((prod.records, items))
    return out


def assert_record(r, m, magic, t_before, t_after):
    assert r.key == m["key"]
    assert r.value == m["value"]
    if magic == 2:
        assert r.headers == [(k, v) for k, v in (m["headers"] or [])]
    else:
        assert r.headers == []
    if magic == 0:
        assert r.timestamp is None and r.timestamp_type is None
    else:
        assert r.timestamp_type == "CreateTime"
        if m["ts"] is None:
            assert t_before <= r.timestamp <= t_after, (t_before, r.timestamp, t_after)
        else:
            assert r.timestamp == m["ts"]


def check_case(broker, messages, magic, codec, t_before, t_after, allowed=(), idempotent=False):
    """Decode everything the fake broker captured and compare with ``messages``."""
    produce_version = FORMATS["zstd" if codec == "zstd" else magic][2]
    assert broker.versions_used(fb.PRODUCE) == {produce_version}
    if magic == 0:
        assert fb.API_VERSIONS not in {k for k, _, _ in broker.requests}, "0.9.0 fallback must not ask ApiVersions"
    seen_findings = set()
    for part in range(PARTITIONS):
        want = [m for m in messages if m["partition"] == part]
        decoded = decode_partition(broker, part)
        check_framing(magic, codec, [blob for blob, _ in decoded])
        got = []
        next_seq = 0
        for _, batches in decoded:
            for b in batches:
                assert b.magic == magic
                assert b.crc_valid is True, (b.crc, b.computed_crc)
                assert b.compression == codec
                for f in b.findings:
                    seen_findings.add(f.code.value)
                assert {f.code.value for f in b.findings} <= set(allowed), b.findings
                recs = b.records
                assert recs, "a batch without records"
                if magic == 2:
                    # as the producer writes it: baseOffset 0, offsetDelta 0..n-1
                    assert b.base_offset == 0
                    assert [r.offset_delta for r in recs] == list(range(len(recs)))
                    assert [r.offset for r in recs] == list(range(len(recs)))
                    assert b.last_offset_delta == len(recs) - 1 == b.record_count - 1
                    assert b.timestamp_type == "CreateTime"
                    assert not b.is_transactional and not b.is_control
                    assert b.base_timestamp == recs[0].timestamp
                    assert b.max_timestamp == max(r.timestamp for r in recs)
                    if idempotent:
                        assert (b.producer_id, b.producer_epoch, b.base_sequence) == (PRODUCER_ID, 0, next_seq)
                        next_seq += len(recs)
                    else:
                        assert (b.producer_id, b.producer_epoch, b.base_sequence) == (-1, -1, -1)
                elif codec == "none":
                    assert len(recs) == 1 and recs[0].stored_offset == b.offset
                else:
                    # one wrapper; inner messages with relative offsets 0..n-1 as librdkafka writes them
                    assert b.key is None
                    assert [r.stored_offset for r in recs] == list(range(len(recs)))
                    assert all(r.crc_valid for r in recs)
                    assert all(r.attributes & 7 == 0 and r.magic == magic for r in recs)
                    # magic 1: absolute = wrapper offset - last inner offset + inner offset
                    # when that is >= 0; a producer's wrapper has offset 0, so (as Kafka's
                    # reader does) the stored offsets stand.  magic 0: stored offsets.
                    assert b.offset == 0
                    assert [r.offset for r in recs] == list(range(len(recs)))
                got.extend(recs)
            if magic in (0, 1) and codec == "none":
                # an uncompressed message set: offsets 0..n-1 within each request
                assert [b.offset for b in batches] == list(range(len(batches)))
        assert len(got) == len(want), (part, len(got), len(want))
        for r, m in zip(got, want):
            assert_record(r, m, magic, t_before, t_after)
        assert len(decoded) >= 2, f"partition {part}: expected several batches, got {len(decoded)} requests"
    return seen_findings


@pytest.mark.parametrize("magic,codec", CASES, ids=[f"magic{m}-{c}" for m, c in CASES])
def test_librdkafka_encodes_kafkadump_decodes(magic, codec):
    messages = make_messages(magic)
    broker, t0, t1, _ = produce(magic, codec, messages)
    allowed = set()
    if magic == 0 and codec == "lz4":
        allowed.add("lz4-legacy-checksum")
    seen = check_case(broker, messages, magic, codec, t0, t1, allowed)
    if magic == 0 and codec == "lz4":
        assert "lz4-legacy-checksum" in seen, "librdkafka's magic-0 lz4 checksum quirk not reported"


def test_librdkafka_idempotent_producer():
    """enable.idempotence: InitProducerId v0, then producerId/epoch/baseSequence in every batch."""
    messages = make_messages(2)
    broker, t0, t1, _ = produce(2, "lz4", messages, idempotent=True)
    assert broker.versions_used(fb.INIT_PRODUCER_ID) == {0}
    assert all(p.acks == -1 for p in broker.produced)  # idempotence forces acks=all
    check_case(broker, messages, 2, "lz4", t0, t1, idempotent=True)


def test_librdkafka_request_versions():
    """The fake broker saw exactly the old, non-flexible versions the table above promises."""
    seen = {}
    for magic, codec in [(0, "none"), (1, "none"), (2, "none"), (2, "zstd")]:
        broker, *_ = produce(magic, codec, make_messages(magic)[:2])
        seen[(magic, codec)] = sorted({(k, v) for k, v, _ in broker.requests})
    assert seen[(0, "none")] == [(fb.PRODUCE, 1), (fb.METADATA, 0)]
    # librdkafka starts at ApiVersions v3 (flexible), is told UNSUPPORTED_VERSION, retries with v0
    assert seen[(1, "none")] == [(fb.PRODUCE, 2), (fb.METADATA, 1), (fb.API_VERSIONS, 0), (fb.API_VERSIONS, 3)]
    assert seen[(2, "none")] == [(fb.PRODUCE, 3), (fb.METADATA, 4), (fb.API_VERSIONS, 0), (fb.API_VERSIONS, 3)]
    assert seen[(2, "zstd")] == [(fb.PRODUCE, 7), (fb.METADATA, 7), (fb.API_VERSIONS, 0), (fb.API_VERSIONS, 3)]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
def test_magic0_wrapper_offset_no_finding(codec):
    """A magic-0 wrapper as producers write it (offset 0, inner 0..n-1) is not damage."""
    messages = make_messages(0)
    broker, *_ = produce(0, codec, messages)
    codes = set()
    for part in range(PARTITIONS):
        for _, batches in decode_partition(broker, part):
            codes.update(f.code.value for b in batches for f in b.findings)
    assert codes - {"lz4-legacy-checksum"} == set(), codes
