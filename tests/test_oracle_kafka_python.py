"""kafkadump against kafka-python: batches built with kafka-python's builders
(an encoder independent of kafkadump) must decode to exactly what went in, and
to exactly what kafka-python's own reader (``MemoryRecords``) reports, field
by field.

Builders cannot set what only a broker sets (base offset, partition leader
epoch, LogAppendTime, control flag, a legacy wrapper's offset); those are
patched into the built bytes here and the CRC recomputed where it covers them
(CRC-32C over bytes 21.. for v2; zlib CRC-32 over magic.. for v0/v1).

A compressed legacy wrapper is given the offset a broker writes (the absolute
offset of its last inner message), except in the test of the producer form:
kafka-python's builders leave it 0, and then both kafka-python and Kafka's
Java reader keep the stored inner offsets (a magic-1 wrapper offset of 0 means
"not assigned yet"), which kafkadump must match too.
"""

from __future__ import annotations

import struct
import zlib

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record import MemoryRecords, MemoryRecordsBuilder
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder

from kafkadump.decoders.batches import Batch
from kafkadump.decoders.batches import iter_batches
from kafkadump.base.findings import Code

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
TS_TYPES = {None: None, 0: "CreateTime", 1: "LogAppendTime"}
INT32_MAX = (1 << 31) - 1
T0 = 1_700_000_000_000
BROKER_TIME = 1_700_000_099_000
BIG = 1 << 22  # batch_size: never full in these tests


# --- building and patching -------------------------------------------------------------------

def build_v2(records, codec=0, pid=-1, epoch=-1, seq=-1, transactional=False):
    """``records``: dicts with offset (delta), timestamp, key, value, headers."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=transactional,
                                  producer_id=pid, producer_epoch=epoch, base_sequence=seq, batch_size=BIG)
    for r in records:
        assert b.append(r["offset"], timestamp=r["timestamp"], key=r["key"], value=r["value"],
                        headers=r["headers"]) is not None
    return bytes(b.build())


def patch_v2(data: bytes, *, base_offset=None, leader_epoch=None, attrs_or=0, max_ts=None) -> bytes:
    """Set broker-assigned header fields of the v2 batch at the start of ``data``; fix the CRC."""
    d = bytearray(data)
    if base_offset is not None:
        struct.pack_into(">q", d, 0, base_offset)       # outside the CRC
    if leader_epoch is not None:
        struct.pack_into(">i", d, 12, leader_epoch)     # outside the CRC
    if attrs_or:
        (a,) = struct.unpack_from(">h", d, 21)
        struct.pack_into(">h", d, 21, a | attrs_or)
    if max_ts is not None:
        struct.pack_into(">q", d, 35, max_ts)
    (length,) = struct.unpack_from(">i", d, 8)
    struct.pack_into(">I", d, 17, crc32c(bytes(d[21:12 + length])))
    return bytes(d)


def build_legacy(magic, codec, records):
    """``records``: dicts with offset, timestamp, key, value.  Returns the built bytes."""
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=BIG)
    for r in records:
        assert b.append(r["offset"], timestamp=r["timestamp"], key=r["key"], value=r["value"]) is not None
    return bytes(b.build())


def patch_legacy(data: bytes, pos: int = 0, *, offset=None, attrs_or=0, timestamp=None) -> bytes:
    d = bytearray(data)
    if offset is not None:
        struct.pack_into(">q", d, pos, offset)          # outside the CRC
    if attrs_or or timestamp is not None:
        d[pos + 17] |= attrs_or
        if timestamp is not None:
            assert d[pos + 16] == 1
            struct.pack_into(">q", d, pos + 18, timestamp)
        (size,) = struct.unpack_from(">i", d, pos + 8)
        struct.pack_into(">I", d, pos + 12, zlib.crc32(bytes(d[pos + 16:pos + 12 + size])))
    return bytes(d)


# --- reading with both -----------------------------------------------------------------------

def kp_read(data: bytes):
    """kafka-python's view: [(batch, crc_ok, [records])]."""
    out = []
    mr = MemoryRecords(data)
    while mr.has_next():
        kb = mr.next_batch()
        crc_ok = kb.validate_crc()   # must be called before iterating
        out.append((kb, crc_ok, list(kb)))
    return out


def kd_read(data: bytes):
    items = []
    pos = 0
    for it in iter_batches(data, "oracle"):   # checked as they come: a walk that stops advancing fails
        assert isinstance(it, Batch), (it.position, it.findings)
        assert it.position == pos and it.size > 0
        pos += it.size
        items.append(it)
    assert pos == len(data)
    return items


def assert_v2_equal(b: Batch, kb: DefaultRecordBatch, crc_ok: bool, krecs: list):
    assert b.magic == kb.magic == 2
    assert b.base_offset == kb.base_offset
    assert b.size == kb.size_in_bytes
    assert b.batch_length == kb.size_in_bytes - 12
    assert b.partition_leader_epoch == kb.leader_epoch
    assert b.crc == kb.crc
    assert b.crc_valid is True and crc_ok is True
    assert b.computed_crc == kb.crc
    assert b.attributes == kb.attributes & 0xFFFF
    assert b.codec == kb.compression_type
    assert b.compression == CODECS[kb.compression_type]
    assert b.timestamp_type == TS_TYPES[kb.timestamp_type]
    assert b.is_transactional == kb.is_transactional
    assert b.is_control == kb.is_control_batch
    assert b.last_offset_delta == kb.last_offset_delta
    assert b.last_offset == kb.last_offset
    assert b.base_timestamp == kb.first_timestamp
    assert b.max_timestamp == kb.max_timestamp
    assert b.producer_id == kb.producer_id
    assert b.producer_epoch == kb.producer_epoch
    assert b.base_sequence == kb.base_sequence
    assert b.last_sequence == kb.last_sequence
    assert b.record_count == kb.records_count == len(krecs)
    assert b.records is not None and len(b.records) == len(krecs)
    for r, kr in zip(b.records, krecs):
        assert r.offset == kr.offset
        assert r.timestamp == kr.timestamp
        assert r.timestamp_type == TS_TYPES[kr.timestamp_type]
        assert r.key == kr.key and (r.key is None) == (kr.key is None)
        assert r.value == kr.value and (r.value is None) == (kr.value is None)
        assert list(r.headers) == list(kr.headers)
        assert [v is None for _, v in r.headers] == [v is None for _, v in kr.headers]
        assert r.magic == 2 and r.offset_delta == kr.offset - kb.base_offset
        if kb.is_control_batch:
            assert r.control is not None
            assert r.control["version"] == kr.version
            assert r.control["type"] == {0: "ABORT", 1: "COMMIT"}[kr.type]
        else:
            assert r.control is None


def assert_v2_input(b: Batch, records, base_offset=0):
    """kafkadump's records are what went into the builder."""
    assert len(b.records) == len(records)
    for r, e in zip(b.records, records):
        assert r.offset == base_offset + e["offset"]
        assert r.offset_delta == e["offset"]
        if not (b.attributes & 0x08):
            assert r.timestamp == e["timestamp"]
            assert r.timestamp_delta == e["timestamp"] - records[0]["timestamp"]
        assert r.key == e["key"] and (r.key is None) == (e["key"] is None)
        assert r.value == e["value"] and (r.value is None) == (e["value"] is None)
        assert [(k, v) for k, v in r.headers] == [(k, None if v is None else bytes(v)) for k, v in e["headers"]]
    assert b.record_count == len(records)
    assert b.last_offset_delta == records[-1]["offset"]
    assert b.base_timestamp == records[0]["timestamp"]
    if not (b.attributes & 0x08):
        assert b.max_timestamp == max(e["timestamp"] for e in records)


def assert_legacy_equal(b: Batch, kb: LegacyRecordBatch, crc_ok: bool, krecs: list):
    assert b.magic == kb.magic
    assert b.offset == kb.base_offset          # kafka-python's "base_offset" of a legacy batch is the wrapper offset
    assert b.last_offset == kb.base_offset
    assert b.size == kb.size_in_bytes
    assert b.codec == kb.compression_type
    assert b.compression == CODECS[kb.compression_type]
    assert b.timestamp_type == TS_TYPES[kb.timestamp_type]
    assert b.crc_valid is True and crc_ok is True
    assert b.is_transactional is False and b.is_control is False
    assert b.record_count == len(krecs) == len(b.records)
    assert b.base_offset == krecs[0].offset
    for r, kr in zip(b.records, krecs):
        assert r.magic == kr.magic
        assert r.offset == kr.offset
        assert r.timestamp == kr.timestamp
        assert r.timestamp_type == TS_TYPES[kr.timestamp_type]
        assert r.key == kr.key and (r.key is None) == (kr.key is None)
        assert r.value == kr.value and (r.value is None) == (kr.value is None)
        assert r.headers == [] == list(kr.headers)
        assert r.crc == kr.checksum
        assert r.crc_valid is True and kr.validate_crc() is True
        assert r.offset_delta is None and r.timestamp_delta is None


def compare_all(data: bytes):
    kd = kd_read(data)
    kp = kp_read(data)
    assert len(kd) == len(kp)
    for b, (kb, crc_ok, krecs) in zip(kd, kp):
        if b.magic == 2:
            assert_v2_equal(b, kb, crc_ok, krecs)
        else:
            assert_legacy_equal(b, kb, crc_ok, krecs)
    return kd, kp


def no_findings(b: Batch, allowed=()):
    assert [f for f in b.findings if f.code not in allowed] == [], b.findings


# --- v2: every codec, every record shape --------------------------------------------------------

def rich_records():
    """Null/empty keys and values, header edge cases, a negative timestamp delta, an offset gap."""
    return [
        dict(offset=0, timestamp=T0 + 100, key=b"key-0", value=b"value " * 40,
             headers=[("trace", b"abc"), ("trace", b"def"), ("nullhdr", None), ("empty", b"")]),
        dict(offset=1, timestamp=T0 + 50, key=None, value=b"null key " * 20, headers=[]),      # negative delta
        dict(offset=2, timestamp=T0 + 300, key=b"tombstone", value=None, headers=[("h", None)]),
        dict(offset=3, timestamp=T0 - 7, key=b"", value=b"", headers=[("", b"")]),              # empty key/value
        dict(offset=4, timestamp=T0 + 300, key=b"\x00\xff\xfe binary", value=bytes(range(256)),
             headers=[("ключ-✓", "значение".encode()), ("bin", b"\x80\x81")]),
        dict(offset=7, timestamp=T0 + 1, key=b"after a gap", value=b"x" * 500, headers=[]),     # offset gap 4 -> 7
    ]


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4], ids=lambda c: CODECS[c])
def test_v2_every_codec(codec):
    recs = rich_records()
    data = patch_v2(build_v2(recs, codec), base_offset=1000, leader_epoch=7)
    (b,), ((kb, _, _),) = compare_all(data)
    assert b.compression == CODECS[codec]  # the builder really compressed (the data is compressible)
    assert_v2_input(b, recs, base_offset=1000)
    assert b.partition_leader_epoch == 7
    assert b.producer_id == -1 and b.producer_epoch == -1 and b.base_sequence == -1 and b.last_sequence == -1
    no_findings(b)
    if codec:
        assert b.decompressed_size is not None and b.decompressed_size > len(data) - 61


@pytest.mark.parametrize("codec", [0, 1, 4], ids=lambda c: CODECS[c])
def test_v2_single_record_with_everything_null(codec):
    recs = [dict(offset=0, timestamp=0, key=None, value=None, headers=[])]
    data = build_v2(recs, codec)
    (b,), _ = compare_all(data)
    assert_v2_input(b, recs)
    assert b.records[0].key is None and b.records[0].value is None


def test_v2_many_headers_and_large_record():
    headers = [(f"h{i % 7}", None if i % 5 == 0 else bytes([i]) * i) for i in range(150)]
    recs = [dict(offset=0, timestamp=T0, key=b"k" * 300, value=b"v" * 70000, headers=headers),
            dict(offset=1, timestamp=T0 + 1, key=b"k", value=b"w", headers=headers[:3])]
    for codec in (0, 3):
        data = build_v2(recs, codec)
        (b,), _ = compare_all(data)
        assert_v2_input(b, recs)
        no_findings(b)


@pytest.mark.parametrize("transactional", [False, True], ids=["idempotent", "transactional"])
@pytest.mark.parametrize("codec", [0, 2])
def test_v2_producer_state(transactional, codec):
    recs = rich_records()
    data = patch_v2(build_v2(recs, codec, pid=4000, epoch=3, seq=10, transactional=transactional), base_offset=40)
    (b,), _ = compare_all(data)
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (4000, 3, 10)
    assert b.last_sequence == 10 + 7
    assert b.is_transactional is transactional
    assert bool(b.attributes & 0x10) is transactional
    assert_v2_input(b, recs, base_offset=40)
    no_findings(b)


def test_v2_producer_state_via_set_producer_state():
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=BIG)
    b.set_producer_state(producer_id=123456789012, producer_epoch=32767, base_sequence=5, is_transactional=True)
    for i in range(3):
        b.append(i, timestamp=T0 + i, key=None, value=b"v", headers=[])
    (kd,), _ = compare_all(bytes(b.build()))
    assert (kd.producer_id, kd.producer_epoch, kd.base_sequence, kd.last_sequence) == (123456789012, 32767, 5, 7)
    assert kd.is_transactional


@pytest.mark.parametrize("base_seq,n,expected_last", [
    (0, 5, 4),
    (INT32_MAX - 4, 5, INT32_MAX),   # ends exactly at INT32_MAX
    (INT32_MAX, 1, INT32_MAX),
    (INT32_MAX, 2, 0),               # wraps past INT32_MAX to 0
    (INT32_MAX - 1, 5, 2),
    (INT32_MAX - 2, 10, 6),
])
def test_v2_last_sequence_wraps_at_int32_max(base_seq, n, expected_last):
    recs = [dict(offset=i, timestamp=T0, key=None, value=b"v", headers=[]) for i in range(n)]
    data = build_v2(recs, 0, pid=77, epoch=0, seq=base_seq)
    (b,), ((kb, _, _),) = compare_all(data)
    assert kb.last_sequence == expected_last          # the oracle agrees with the table
    assert b.last_sequence == expected_last
    assert b.base_sequence == base_seq


def test_v2_log_append_time():
    recs = rich_records()
    for codec in (0, 1):
        data = patch_v2(build_v2(recs, codec), base_offset=5, attrs_or=0x08, max_ts=BROKER_TIME)
        (b,), _ = compare_all(data)
        assert b.timestamp_type == "LogAppendTime"
        assert all(r.timestamp == BROKER_TIME and r.timestamp_type == "LogAppendTime" for r in b.records)
        assert_v2_input(b, recs, base_offset=5)
        no_findings(b)


@pytest.mark.parametrize("ctype,name", [(0, "ABORT"), (1, "COMMIT")])
def test_v2_control_batch(ctype, name):
    recs = [dict(offset=0, timestamp=T0, key=struct.pack(">hh", 0, ctype), value=struct.pack(">hi", 0, 7),
                 headers=[])]
    # build_v2 would do, but say it plainly: kafka-python refuses a transactional batch without a sequence; a marker has baseSequence -1
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True, producer_id=5000,
                                  producer_epoch=2, base_sequence=-1, batch_size=BIG)
    b.append(0, timestamp=T0, key=recs[0]["key"], value=recs[0]["value"], headers=[])
    data = patch_v2(bytes(b.build()), base_offset=99, attrs_or=0x20)
    (kd,), _ = compare_all(data)
    assert kd.is_control and kd.is_transactional and kd.attributes == 0x30
    ctl = kd.records[0].control
    assert ctl["type"] == name and ctl["version"] == 0
    assert ctl["coordinatorEpoch"] == 7 and ctl["valueVersion"] == 0
    no_findings(kd)


def test_v2_several_batches_in_one_segment():
    parts = []
    base = 0
    expected = []
    for i, codec in enumerate([0, 1, 2, 3, 4, 0]):
        recs = rich_records()[: 2 + i % 4] + [dict(offset=9, timestamp=T0, key=b"k", value=b"z" * 300, headers=[])]
        parts.append(patch_v2(build_v2(recs, codec), base_offset=base, leader_epoch=i))
        expected.append((base, recs))
        base += 10
    data = b"".join(parts)
    kd, _ = compare_all(data)
    for b, (bo, recs) in zip(kd, expected):
        assert_v2_input(b, recs, base_offset=bo)
        no_findings(b)
    assert [b.partition_leader_epoch for b in kd] == list(range(6))


# --- legacy message sets (magic 0 and 1) -------------------------------------------------------

def legacy_records(magic, base):
    recs = [
        dict(key=b"k0", value=b"plain value " * 10),
        dict(key=None, value=b"null key " * 10),
        dict(key=b"tombstone", value=None),
        dict(key=b"", value=b""),
        dict(key=b"\x00\xff", value=bytes(range(256))),
    ]
    for i, r in enumerate(recs):
        r["offset"] = base + i
        r["timestamp"] = T0 + 10 * i if magic == 1 else None
    return recs


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [0, 1, 2, 3], ids=lambda c: CODECS[c])
def test_legacy(magic, codec):
    base = 500
    recs = legacy_records(magic, base)
    if codec == 0:
        # one message per entry in the message set
        data = b"".join(build_legacy(magic, 0, [r]) for r in recs)
    else:
        # magic 0: inner offsets are absolute; magic 1: relative 0..n-1
        inner = [dict(r, offset=(r["offset"] if magic == 0 else i)) for i, r in enumerate(recs)]
        data = build_legacy(magic, codec, inner)
        # the broker gives the wrapper the absolute offset of its last inner message
        data = patch_legacy(data, offset=base + len(recs) - 1)
    kd, kp = compare_all(data)
    records = [r for b in kd for r in b.records]
    assert [r.offset for r in records] == [r["offset"] for r in recs]
    assert [r.key for r in records] == [r["key"] for r in recs]
    assert [r.value for r in records] == [r["value"] for r in recs]
    assert [r.timestamp for r in records] == [r["timestamp"] for r in recs]
    assert all(r.timestamp_type == (None if magic == 0 else "CreateTime") for r in records)
    for b in kd:
        assert b.compression == CODECS[codec]
        # kafka-python writes magic-0 LZ4 with the old Kafka frame checksum
        no_findings(b, allowed=(Code.LZ4_LEGACY_CHECKSUM,) if (magic == 0 and codec == 3) else ())
        if magic == 0 and codec == 3:
            assert [f.code for f in b.findings] == [Code.LZ4_LEGACY_CHECKSUM]
        assert b.producer_id is None and b.partition_leader_epoch is None
    if codec:
        (b,) = kd
        assert (b.base_offset, b.last_offset, b.record_count) == (base, base + 4, 5)
        if magic == 1:
            assert b.timestamp == 0  # kafka-python's wrapper timestamp


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [1, 2, 3], ids=lambda c: CODECS[c])
def test_legacy_producer_form_wrapper_offset_zero(magic, codec):
    """As a producer sends it: wrapper offset 0, inner offsets as the builder wrote them."""
    recs = legacy_records(magic, 0)
    data = build_legacy(magic, codec, [dict(r, offset=i) for i, r in enumerate(recs)])
    assert struct.unpack_from(">q", data, 0)[0] == 0
    kd, kp = compare_all(data)
    (b,) = kd
    assert [r.offset for r in b.records] == list(range(len(recs))) == [r.offset for r in kp[0][2]]
    assert b.offset == 0


@pytest.mark.parametrize("codec", [0, 1, 2])
def test_legacy_v1_log_append_time(codec):
    recs = legacy_records(1, 0)
    if codec == 0:
        parts = [patch_legacy(build_legacy(1, 0, [r]), attrs_or=0x08, timestamp=BROKER_TIME + i)
                 for i, r in enumerate(recs)]
        data = b"".join(parts)
        expected_ts = [BROKER_TIME + i for i in range(len(recs))]
    else:
        data = build_legacy(1, codec, [dict(r, offset=i) for i, r in enumerate(recs)])
        data = patch_legacy(data, offset=20, attrs_or=0x08, timestamp=BROKER_TIME)
        expected_ts = [BROKER_TIME] * len(recs)
    kd, _ = compare_all(data)
    records = [r for b in kd for r in b.records]
    assert [r.timestamp for r in records] == expected_ts
    assert all(r.timestamp_type == "LogAppendTime" for r in records)
    assert all(b.timestamp_type == "LogAppendTime" for b in kd)
    for b in kd:
        no_findings(b)


# --- MemoryRecordsBuilder: a mixed segment --------------------------------------------------------

def mrb(magic, codec, offset, values, pid=-1, epoch=-1, seq=-1, transactional=False, headers=True):
    m = MemoryRecordsBuilder(magic=magic, compression_type=codec, batch_size=BIG, offset=offset,
                             transactional=transactional, producer_id=pid, producer_epoch=epoch,
                             base_sequence=seq)
    for i, v in enumerate(values):
        hdrs = [("i", str(i).encode()), ("n", None)] if (magic == 2 and headers) else None
        ts = T0 + i if magic else None
        assert m.append(timestamp=ts, key=None if i % 3 == 0 else b"k%d" % i, value=v, headers=hdrs) is not None
    m.close()
    return bytes(m.buffer())


def test_memory_records_builder_mixed_segment():
    """An upgraded broker's segment: magic 0, then 1, then 2, every codec, offsets 0.. without gaps."""
    parts = []
    off = 0
    vals = [b"value-%d " % i * 8 for i in range(4)] + [None, b""]
    for magic, codecs in ((0, (0, 1, 2, 3)), (1, (0, 1, 2, 3)), (2, (0, 1, 2, 3, 4))):
        for codec in codecs:
            buf = mrb(magic, codec, 0 if magic == 2 else off, vals)
            if magic == 2:
                # producer-side baseOffset is 0 with offset deltas 0..; the broker sets baseOffset
                buf = patch_v2(buf, base_offset=off)
            elif codec:
                # producer-side wrapper offset is 0; a broker writes the last inner offset
                buf = patch_legacy(buf, offset=off + len(vals) - 1)
            parts.append(buf)
            off += len(vals)
    pid_buf = mrb(2, 4, 0, vals, pid=9, epoch=1, seq=INT32_MAX - 2, transactional=True)
    parts.append(patch_v2(pid_buf, base_offset=off))
    off += len(vals)
    data = b"".join(parts)
    kd, kp = compare_all(data)
    records = [r for b in kd for r in b.records]
    assert [r.offset for r in records] == list(range(off))
    assert [r.value for r in records] == vals * (len(parts))
    for b in kd:
        no_findings(b, allowed=(Code.LZ4_LEGACY_CHECKSUM,))
    last = kd[-1]
    assert last.is_transactional and last.base_sequence == INT32_MAX - 2
    assert last.last_sequence == kp[-1][0].last_sequence == 2  # wrapped
    assert all(b.base_offset == b.records[0].offset for b in kd)
    assert all(b.last_offset == b.records[-1].offset for b in kd)


def test_memory_records_builder_v2_skip_makes_offset_gaps():
    m = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=BIG, offset=0)
    m.append(timestamp=T0, key=b"a", value=b"1")
    m.skip(5)
    m.append(timestamp=T0 + 1, key=b"b", value=b"2")
    m.close()
    (b,), _ = compare_all(bytes(m.buffer()))
    assert [r.offset for r in b.records] == [0, 6]
    assert b.last_offset_delta == 6 and b.record_count == 2
    no_findings(b)


# --- hypothesis: random record lists ------------------------------------------------------------

key_or_value = st.one_of(st.none(), st.just(b""), st.binary(min_size=1, max_size=40))
header_key = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)
headers_st = st.lists(st.tuples(header_key, st.one_of(st.none(), st.binary(max_size=12))), max_size=4)
record_st = st.fixed_dictionaries({
    "key": key_or_value,
    "value": key_or_value,
    "headers": headers_st,
    "ts_delta": st.integers(-(1 << 40), 1 << 40),
    "gap": st.integers(0, 3),
})
batch_st = st.fixed_dictionaries({
    "records": st.lists(record_st, min_size=1, max_size=12),
    "first_ts": st.one_of(st.just(-1), st.just(0), st.integers(0, 1 << 42)),
    "base_offset": st.integers(0, (1 << 62)),
    "leader_epoch": st.integers(-1, INT32_MAX),
    "producer": st.one_of(
        st.none(),
        st.tuples(st.integers(0, (1 << 63) - 1), st.integers(0, 32767), st.integers(0, INT32_MAX), st.booleans()),
    ),
})


def _to_records(spec, padding=False):
    out = []
    off = 0
    for i, r in enumerate(spec["records"]):
        off += r["gap"] if i else 0
        ts = spec["first_ts"] if i == 0 else spec["first_ts"] + r["ts_delta"]
        out.append(dict(offset=off, timestamp=ts, key=r["key"], value=r["value"], headers=r["headers"]))
        off += 1
    if padding:  # a compressible record so that the builder keeps the compression
        out.append(dict(offset=off, timestamp=spec["first_ts"], key=None, value=b"\x00" * 400, headers=[]))
    return out


def _check_random_v2(spec, codec):
    recs = _to_records(spec, padding=codec != 0)
    prod = spec["producer"]
    if prod is None:
        data = build_v2(recs, codec)
    else:
        pid, epoch, seq, txn = prod
        data = build_v2(recs, codec, pid=pid, epoch=epoch, seq=seq, transactional=txn)
    data = patch_v2(data, base_offset=spec["base_offset"], leader_epoch=spec["leader_epoch"])
    (b,), ((kb, _, _),) = compare_all(data)
    assert b.compression == CODECS[codec]
    assert_v2_input(b, recs, base_offset=spec["base_offset"])
    if prod is not None:
        assert (b.producer_id, b.producer_epoch, b.base_sequence) == prod[:3]
        assert b.is_transactional is prod[3]
        expected_last = prod[2] + recs[-1]["offset"]
        if expected_last > INT32_MAX:
            expected_last -= 1 << 31
        assert b.last_sequence == expected_last == kb.last_sequence
    no_findings(b)


FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(batch_st)
def test_random_v2_uncompressed(spec):
    _check_random_v2(spec, 0)


@FAST
@given(batch_st, st.sampled_from([1, 2, 3, 4]))
def test_random_v2_compressed(spec, codec):
    _check_random_v2(spec, codec)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(key_or_value, key_or_value, st.integers(0, 1 << 42)), min_size=1, max_size=8),
       st.sampled_from([0, 1]), st.sampled_from([0, 1, 2]), st.integers(0, 1 << 40))
def test_random_legacy(kvs, magic, codec, base):
    recs = [dict(offset=(base + i if (magic == 0 or codec == 0) else i), key=k, value=v,
                 timestamp=ts if magic else None) for i, (k, v, ts) in enumerate(kvs)]
    if codec == 0:
        data = b"".join(build_legacy(magic, 0, [r]) for r in recs)
    else:
        data = patch_legacy(build_legacy(magic, codec, recs), offset=base + len(recs) - 1)
    kd, _ = compare_all(data)
    records = [r for b in kd for r in b.records]
    assert [r.offset for r in records] == [base + i for i in range(len(recs))]
    assert [(r.key, r.value, r.timestamp) for r in records] == [(r["key"], r["value"], r["timestamp"]) for r in recs]
    for b in kd:
        no_findings(b)
