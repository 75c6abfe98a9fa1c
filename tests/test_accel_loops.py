"""The compiled loops at the edges of what they take: varints at their limits, lengths that lie,
a Record they do not know.  Each case is judged against the pure-Python path (the reference)."""

from __future__ import annotations

import json
import os

import pytest
from builders import HEADER_SIZE, T0, Rec, fix_crc, v2_batch
from hypothesis import given, settings
from hypothesis import strategies as st
from primitive_encoders import encode_varint
from test_accel_parity import assert_same, compiled

from kafkadump import accel
from kafkadump.decoders.batches import iter_batches
from kafkadump.decoders.batches import step
from kafkadump.decoders.batches.batch import decode_batch_header
from kafkadump.decoders.batches.crc import crc32c
from kafkadump.decoders.batches.model import Batch
from kafkadump.base.findings import Code
from kafkadump.base.findings import Finding
from kafkadump.render import jsonl
from kafkadump.objects.records import item_object


def _with_record_body(body: bytes) -> bytes:
    """A one-record batch whose record is ``body`` (after its length varint), CRC fixed."""
    lay = v2_batch(0, [Rec(b"k", b"v")])
    data = bytearray(lay.data[:HEADER_SIZE]) + encode_varint(len(body)) + body
    data[8:12] = (len(data) - 12).to_bytes(4, "big")
    fix_crc(data, 0)
    return bytes(data)


# attributes, timestampDelta (varlong), offsetDelta, key length, key, value length, value, header count
PLAIN_TAIL = b"\x00" + b"\x02k" + b"\x02v" + b"\x00"
CASES = {
    "one-byte fields": b"\x00" + b"\x00" + b"\x00" + PLAIN_TAIL[1:],
    "non-minimal varints": b"\x00" + b"\x80\x00" + b"\x80\x80\x00" + PLAIN_TAIL[1:],
    "largest varlong": b"\x00" + b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01" + b"\x00" + PLAIN_TAIL[1:],
    "varlong past 64 bits": b"\x00" + b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x02" + b"\x00" + PLAIN_TAIL[1:],
    "varlong of 11 bytes": b"\x00" + b"\xff" * 10 + b"\x00" + b"\x00" + PLAIN_TAIL[1:],
    "varint of 32 bits": b"\x00" + b"\x00" + b"\xff\xff\xff\xff\x0f" + PLAIN_TAIL[1:],
    "varint past 32 bits": b"\x00" + b"\x00" + b"\xff\xff\xff\xff\x1f" + PLAIN_TAIL[1:],
    "varint of 6 bytes": b"\x00" + b"\x00" + b"\x80\x80\x80\x80\x80\x00" + PLAIN_TAIL[1:],
    "key length -2": b"\x00\x00\x00" + b"\x03" + b"\x02v\x00",
    "null key and value": b"\x00\x00\x00" + b"\x01" + b"\x01" + b"\x00",
    "key past the record": b"\x00\x00\x00" + b"\x7e" + b"\x02v\x00",
    "header count past the record": b"\x00\x00\x00\x02k\x02v" + b"\x7e",
    "header key not UTF-8": b"\x00\x00\x00\x02k\x02v" + b"\x02" + b"\x04\xff\xfe" + b"\x02\x00",
    "header key length -1": b"\x00\x00\x00\x02k\x02v" + b"\x02" + b"\x01" + b"\x01",
    "header value null": b"\x00\x00\x00\x02k\x02v" + b"\x02" + b"\x02h" + b"\x01",
    "bytes after the headers": b"\x00\x00\x00\x02k\x02v\x00" + b"\x00",
}


@compiled
@pytest.mark.parametrize("body", CASES.values(), ids=CASES.keys())
def test_record_edges(body):
    assert_same(_with_record_body(body))


@compiled
def test_record_length_running_past_the_batch():
    data = bytearray(_with_record_body(CASES["one-byte fields"]))
    data[HEADER_SIZE] = 0x7E
    fix_crc(data, 0)
    text = assert_same(bytes(data))
    assert "record-malformed" in text


def test_a_record_class_the_loops_do_not_know_keeps_the_pure_path():
    class Other:
        offset = 1

    assert accel.compiled_loops(Other) is None or not accel.hotloops_built()
    from kafkadump.decoders.batches.model import Record

    accel.compiled_loops(Record)  # the real one again: the path is back
    items = list(iter_batches(v2_batch(0, [Rec(b"k", b"v")]).data, "x"))
    assert isinstance(items[0], Batch) and items[0].records[0].key == b"k"


# --- batch lines: render.jsonl.batch_line's compiled twin --------------------------------------------------

def _batch(**fields: object) -> Batch:
    """A v2 batch as the header decoder makes it (CRC valid, no findings), with ``fields`` changed."""
    b = Batch("logs/orders-3/00000000000000000000.log", 4096, 80, 2)
    header = dict(base_offset=10, batch_length=68, partition_leader_epoch=3, crc=123, computed_crc=123,
                  attributes=0, last_offset_delta=2, base_timestamp=1700000000000, max_timestamp=1700000000002,
                  producer_id=-1, producer_epoch=-1, base_sequence=-1, record_count=3)
    for name, value in {**header, **fields}.items():
        setattr(b, name, value)
    return b


I64 = (1 << 63) - 1
# batches the compiled writer writes itself: every attribute bit pattern of the low 7 bits and some high, the
# edges of lastSequence (no sequence, -2, a sum wrapping past INT32_MAX), lastOffset and the CRC
WRITTEN = [dict(attributes=a) for a in (*range(0x80), 0x80, 0xFF80, 0xFFFF)] + [
    dict(base_sequence=0), dict(base_sequence=-2), dict(base_sequence=0x7FFFFFFF, last_offset_delta=1),
    dict(base_sequence=0x7FFFFFFE, last_offset_delta=1), dict(base_sequence=5, last_offset_delta=-7),
    dict(base_offset=I64 - 2, last_offset_delta=2), dict(base_offset=-(1 << 63), last_offset_delta=0),
    dict(computed_crc=None), dict(computed_crc=124), dict(decompressed_size=1 << 20),
    dict(producer_id=I64, producer_epoch=32767, base_timestamp=-(1 << 63), max_timestamp=I64),
    dict(record_count=-1, last_offset_delta=-1), dict(magic=3),
]
# batches it hands back to the Python writer (which is then the only one that writes them)
HANDED_BACK = [
    dict(findings=[Finding(Code.CRC_MISMATCH, 4113, "stored crc 123 != computed 124")]),
    dict(base_offset=I64, last_offset_delta=1), dict(base_offset=1 << 64), dict(position=True),
    dict(base_sequence=I64, last_offset_delta=1), dict(attributes=-1),
    dict(magic=1), dict(base_sequence=None), dict(computed_crc=1.5), dict(decompressed_size=False),
]


@compiled
@pytest.mark.parametrize("fields", WRITTEN + HANDED_BACK, ids=lambda f: ",".join(f"{k}={v!r:.20}" for k, v in f.items()))
def test_batch_lines_are_the_same_on_both_paths(fields):
    b = _batch(**fields)
    text = jsonl._HOT.batch_json(b, jsonl.batch_head_json(b.file))
    assert (text is not None) == (fields in WRITTEN)
    assert jsonl.batch_line(b) == jsonl.python_batch_line(b)
    if text is not None:
        assert text == jsonl.python_batch_line(b) == json.dumps(item_object(b), separators=(",", ":"))
        assert json.loads(text)["lastSequence"] == b.last_sequence


@compiled
def test_a_batch_class_the_loops_do_not_know_is_handed_back():
    class Other:
        __slots__ = ("file",)

    assert jsonl._HOT.batch_json(Other(), '"x"') is None
    assert jsonl._HOT.batch_json(_batch(), '"x"') is not None
    with pytest.raises(TypeError):
        jsonl._HOT.configure_batch(Other)

    class Wider(Batch):  # a slot the hop would leave unset
        __slots__ = ("extra",)

    with pytest.raises(TypeError):
        jsonl._HOT.configure_batch(Wider)
    assert jsonl._HOT.batch_json(_batch(), '"x"') is not None  # the configured class is kept


@compiled
def test_every_loop_over_a_buffer_hands_back_positions_outside_it():
    hot = jsonl._HOT
    data = v2_batch(0, [Rec(b"k", b"v")]).data
    n = len(data)
    loops = {
        "record_check": lambda p, e, base=0: hot.record_check(data, p, e, 1, base, T0, T0, False, 0),
        "record_run": lambda p, e, base=0: hot.record_run(data, p, e, 0, 1, 1, base, T0, T0, False, "CreateTime",
                                                          "file", 0, 0),
        "format_run": lambda p, e, base=0: hot.format_run(data, p, e, 8, base, T0, T0, False, '{"offset":', ",",
                                                          ',"keyPayload":', 0, str, json.dumps),
        "crc_hop": lambda p, e, base=0: hot.crc_hop(data, p, e, e + base, 1 << 20),
        "batch_hop": lambda p, e, base=0: hot.batch_hop(data, p, e, 1 << 20, (1 << 20) + base, crc32c, "x", 0),
    }
    start = {"crc_hop": 0, "batch_hop": 0}  # the record loops start after the header
    for name, loop in loops.items():
        first = start.get(name, HEADER_SIZE)
        assert loop(first, n) is not None, name
        for p, e in ((-1, n), (first + 1, first), (first, n + 1)):
            assert loop(p, e) is None, (name, p, e)
        assert loop(first, n, 1 << 64) is None, name  # an argument past 64 bits
    assert hot.crc_hop(data, 0, n, n, 1 << 20) == (n, 1, n)


# --- the step's hop makes the Batch the header decoder makes ------------------------------------------------

@st.composite
def _headers(draw) -> bytes:
    """One plain batch (the hop takes it) with header values at their edges."""
    i64 = st.integers(-(1 << 63), (1 << 63) - 1)
    i32 = st.integers(-(1 << 31), (1 << 31) - 1)
    return v2_batch(draw(i64), [Rec(b"k", b"v")], base_ts=draw(st.integers(-(1 << 62), 1 << 62)),
                    max_ts=draw(i64), producer_id=draw(i64), producer_epoch=draw(st.integers(-(1 << 15), (1 << 15) - 1)),
                    base_sequence=draw(i32), leader_epoch=draw(i32), last_offset_delta=draw(st.integers(0, (1 << 31) - 1)),
                    record_count=draw(st.integers(0, (1 << 31) - 1)),
                    attributes=draw(st.sampled_from([0, 0x08, 0x10, 0x40, 0x58]))).data


@compiled
@settings(max_examples=200, deadline=None)
@given(_headers(), st.integers(0, 1 << 40))
def test_the_hop_makes_the_batch_the_header_decoder_makes(data, base):
    got = step._HOT.batch_hop(data, 0, len(data), 1 << 20, 1 << 20, crc32c, "dir/x.log", base)
    assert got is not None
    b, chunk = got
    ref = decode_batch_header(chunk, 0, "dir/x.log", base)
    ref.computed_crc = crc32c(chunk[21:])
    assert chunk == data and type(b) is Batch
    for name in Batch.__slots__:
        mine, theirs = getattr(b, name), getattr(ref, name)
        assert (type(mine), mine) == (type(theirs), theirs), name
    assert b.findings is not ref.findings and b.crc_valid


@compiled
def test_the_hop_hands_back_what_the_python_step_judges():
    plain = v2_batch(0, [Rec(b"k", b"v")])
    for data in (v2_batch(0, [Rec(b"k", b"v")], codec=1).data, v2_batch(0, [Rec(b"k", b"v")], control=True).data,
                 v2_batch(0, [Rec(b"k", b"v")], attributes=0x80).data, v2_batch(0, [Rec(b"k", b"v")], record_count=-1).data,
                 plain.data[:-1], plain.data[:21] + bytes([plain.data[21] ^ 1]) + plain.data[22:]):
        assert step._HOT.batch_hop(data, 0, len(data), 1 << 20, 1 << 20, crc32c, "x", 0) is None
    assert step._HOT.batch_hop(plain.data, 0, plain.size, 1 << 20, plain.size - 1, crc32c, "x", 0) is None  # copy_max
    assert step._HOT.batch_hop(plain.data, 0, plain.size, plain.size - 13, 1 << 20, crc32c, "x", 0) is None


def test_the_compiled_loops_know_record_and_batch():
    """A slot added to Record or Batch must be taught to hotloops.c (else every loop falls back to Python)."""
    if not accel.hotloops_built() or os.environ.get(accel.PURE_ENV, "") not in ("", "0"):
        pytest.skip("the compiled hot path is not built here (or KAFKADUMP_PURE_PYTHON is set)")
    from kafkadump.decoders.batches.model import Record

    assert accel.compiled_loops(Record, Batch) is not None
