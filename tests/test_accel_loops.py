"""The compiled loops at the edges of what they take: varints at their limits, lengths that lie,
a Record they do not know.  Each case is judged against the pure-Python path (the reference)."""

from __future__ import annotations

import pytest
from builders import HEADER_SIZE, Rec, fix_crc, v2_batch
from primitive_encoders import encode_varint
from test_accel_parity import assert_same, compiled

from kafkadump import accel
from kafkadump.decode import iter_batches
from kafkadump.decode.model import Batch


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
    from kafkadump.decode.model import Record

    accel.compiled_loops(Record)  # the real one again: the path is back
    items = list(iter_batches(v2_batch(0, [Rec(b"k", b"v")]).data, "x"))
    assert isinstance(items[0], Batch) and items[0].records[0].key == b"k"
