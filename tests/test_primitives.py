"""Kafka primitive types: every example table and rule of the protocol's
primitive-type specification (shared/spec/000_*.txt), decode and encode.

Decoders have the shape ``decode_x(buf, pos, end) -> (value, next_pos)``;
each example is decoded at offset 0 and again embedded at a non-zero offset
between junk bytes (so a decoder that ignores ``pos`` or reads past ``end``
is caught), and encoded back to the exact bytes.

Round-trip properties use kafka-python as an independent oracle:
``kafka.record.util.encode_varint/decode_varint`` apply the 64-bit zig-zag
transform (``(v << 1) ^ (v >> 63)``), which for values in the INT32 range is
the same as the 32-bit VARINT transform, so they are an oracle for both
VARINT and VARLONG.  ``kafka.protocol.old.types.UnsignedVarInt32`` is the
oracle for UNSIGNED_VARINT.
"""

from __future__ import annotations

import io
import math
import struct
import time
import uuid
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

with warnings.catch_warnings():  # kafka.protocol loads its schemas with deprecated importlib calls
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol.old.types import UnsignedVarInt32 as KpUnsignedVarInt32
import primitive_encoders as E
from kafka.record.util import decode_varint as kp_decode_varint
from kafka.record.util import encode_varint as kp_encode_varint

from kafkadump.decoders.batches import iter_batches
from kafkadump.decoders.batches import primitives as P
from kafkadump.base.findings import Code
from kafkadump.base.findings import DecodeError
from kafkadump.base.findings import Truncated

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

PREFIX = b"\xAA\xBB\xCC"   # junk before an embedded value
SUFFIX = b"\xEE\xFF"       # junk after it (a decoder must stop at the value's end)


def h(s: str) -> bytes:
    return bytes.fromhex(s.replace(" ", ""))


def check_decode(decode, raw: bytes, expected, *args, **kw):
    """``decode`` reads ``raw`` as ``expected`` at offset 0 and embedded at offset 3."""
    value, nxt = decode(raw, 0, len(raw), *args, **kw)
    assert value == expected and type(value) is type(expected), (value, expected)
    assert nxt == len(raw)
    buf = PREFIX + raw + SUFFIX
    value, nxt = decode(buf, len(PREFIX), len(PREFIX) + len(raw), *args, **kw)
    assert value == expected
    assert nxt == len(PREFIX) + len(raw)
    # and with the junk after it inside the readable range: still stops at the value's end
    value, nxt = decode(buf, len(PREFIX), len(buf), *args, **kw)
    assert value == expected
    assert nxt == len(PREFIX) + len(raw)


def raises_at(exc_type, decode, buf, pos, end, *args, **kw):
    with pytest.raises(exc_type) as ei:
        decode(buf, pos, end, *args, **kw)
    return ei.value


# --- fixed-width integers: the spec's "Encoding Examples" table -----------------------

INT_EXAMPLES = [
    (0, "INT8", "00"),
    (-1, "INT8", "FF"),
    (127, "INT8", "7F"),
    (-128, "INT8", "80"),
    (256, "INT16", "01 00"),
    (-1, "INT16", "FF FF"),
    (16909060, "INT32", "01 02 03 04"),
]

INT_CODECS = {
    "INT8": (P.decode_int8, E.encode_int8),
    "INT16": (P.decode_int16, E.encode_int16),
    "INT32": (P.decode_int32, E.encode_int32),
    "INT64": (P.decode_int64, E.encode_int64),
    "UINT16": (P.decode_uint16, E.encode_uint16),
    "UINT32": (P.decode_uint32, E.encode_uint32),
}


@pytest.mark.parametrize("value,typ,hexbytes", INT_EXAMPLES)
def test_fixed_int_examples(value, typ, hexbytes):
    dec, enc = INT_CODECS[typ]
    raw = h(hexbytes)
    check_decode(dec, raw, value)
    assert enc(value) == raw


@pytest.mark.parametrize("typ,value,hexbytes", [
    ("INT16", -32768, "80 00"), ("INT16", 32767, "7F FF"),
    ("INT32", INT32_MIN, "80 00 00 00"), ("INT32", INT32_MAX, "7F FF FF FF"), ("INT32", -1, "FF FF FF FF"),
    ("INT64", INT64_MIN, "80 00 00 00 00 00 00 00"), ("INT64", INT64_MAX, "7F FF FF FF FF FF FF FF"),
    ("INT64", -1, "FF FF FF FF FF FF FF FF"), ("INT64", 0x0102030405060708, "01 02 03 04 05 06 07 08"),
    ("UINT16", 65535, "FF FF"), ("UINT16", 256, "01 00"),
    ("UINT32", 4294967295, "FF FF FF FF"), ("UINT32", 16909060, "01 02 03 04"),
])
def test_fixed_int_ranges_big_endian(typ, value, hexbytes):
    dec, enc = INT_CODECS[typ]
    raw = h(hexbytes)
    check_decode(dec, raw, value)
    assert enc(value) == raw


@pytest.mark.parametrize("typ,size", [("INT8", 1), ("INT16", 2), ("INT32", 4), ("INT64", 8),
                                      ("UINT16", 2), ("UINT32", 4)])
def test_fixed_int_truncated_reports_value_start(typ, size):
    dec, _ = INT_CODECS[typ]
    buf = b"\x01" * 20
    for have in range(size):
        e = raises_at(Truncated, dec, buf, 5, 5 + have)   # bytes exist in buf, but not before `end`
        assert e.offset == 5
        assert e.code is Code.TRUNCATED
        assert e.needed == size and e.available == have


# --- VARINT (zig-zag) ----------------------------------------------------------------------

ZIGZAG_TABLE = [  # Signed Value -> Zig-zag Encoded
    (0, 0), (-1, 1), (1, 2), (-2, 3), (2, 4),
    (2147483647, 4294967294), (-2147483648, 4294967295),
]


@pytest.mark.parametrize("value,encoded", ZIGZAG_TABLE)
def test_zigzag_table(value, encoded):
    assert E.zigzag32(value) == encoded
    assert E.zigzag64(value) == encoded  # same transform for values in the INT32 range
    # and the wire form is the unsigned varint of the zig-zag value
    raw = E.encode_unsigned_varint(encoded)
    check_decode(P.decode_varint, raw, value)
    assert E.encode_varint(value) == raw


VARINT_EXAMPLES = [  # Value, Zig-zag Encoded, Bytes (hex)
    (0, 0, "00"),
    (-1, 1, "01"),
    (1, 2, "02"),
    (63, 126, "7E"),
    (64, 128, "80 01"),
    (-65, 129, "81 01"),
    (8191, 16382, "FE 7F"),
    (8192, 16384, "80 80 01"),
]


@pytest.mark.parametrize("value,zz,hexbytes", VARINT_EXAMPLES)
def test_varint_examples(value, zz, hexbytes):
    raw = h(hexbytes)
    assert E.zigzag32(value) == zz
    check_decode(P.decode_varint, raw, value)
    assert E.encode_varint(value) == raw
    # VARLONG uses the same zig-zag scheme; for these values the bytes are identical
    check_decode(P.decode_varlong, raw, value)
    assert E.encode_varlong(value) == raw
    # and the raw unsigned form is the zig-zag value
    check_decode(P.decode_unsigned_varint, raw, zz)


@pytest.mark.parametrize("value,hexbytes", [
    (INT32_MAX, "FE FF FF FF 0F"),
    (INT32_MIN, "FF FF FF FF 0F"),
])
def test_varint_extremes_are_five_bytes(value, hexbytes):
    raw = h(hexbytes)
    check_decode(P.decode_varint, raw, value)
    assert E.encode_varint(value) == raw


@pytest.mark.parametrize("value,hexbytes", [
    (INT64_MAX, "FE FF FF FF FF FF FF FF FF 01"),
    (INT64_MIN, "FF FF FF FF FF FF FF FF FF 01"),
    (1 << 31, "80 80 80 80 10"),          # just beyond INT32: fine for VARLONG
])
def test_varlong_extremes(value, hexbytes):
    raw = h(hexbytes)
    check_decode(P.decode_varlong, raw, value)
    assert E.encode_varlong(value) == raw


@pytest.mark.parametrize("raw", [
    "80 80 80 80 80 00",      # 6 bytes, terminated
    "80 80 80 80 80 80 80 00",
    "FF FF FF FF FF 01",
])
def test_varint_longer_than_5_bytes_rejected(raw):
    raw = h(raw)
    for dec in (P.decode_varint, P.decode_unsigned_varint):
        e = raises_at(DecodeError, dec, raw, 0, len(raw))
        assert not isinstance(e, Truncated), "an over-long varint is an error, not a truncation"
        assert e.offset == 0
        # embedded: the offset is where the varint starts
        e = raises_at(DecodeError, dec, PREFIX + raw, len(PREFIX), len(PREFIX) + len(raw))
        assert not isinstance(e, Truncated) and e.offset == len(PREFIX)


def test_varint_five_continuation_bytes_at_end_is_error_not_truncation():
    # 5 bytes all with the continuation bit: already longer than allowed whatever follows
    raw = h("80 80 80 80 80")
    e = raises_at(DecodeError, P.decode_varint, raw, 0, 5)
    assert not isinstance(e, Truncated)


@pytest.mark.parametrize("raw", ["FF FF FF FF 1F", "FF FF FF FF 7F", "80 80 80 80 10"])
def test_varint_beyond_32_bits_rejected(raw):
    raw = h(raw)
    for dec in (P.decode_varint, P.decode_unsigned_varint):
        e = raises_at(DecodeError, dec, raw, 0, len(raw))
        assert not isinstance(e, Truncated)


@pytest.mark.parametrize("raw", [
    "80 80 80 80 80 80 80 80 80 80 00",   # 11 bytes
    "FF FF FF FF FF FF FF FF FF FF 01",
])
def test_varlong_longer_than_10_bytes_rejected(raw):
    raw = h(raw)
    e = raises_at(DecodeError, P.decode_varlong, raw, 0, len(raw))
    assert not isinstance(e, Truncated) and e.offset == 0
    e = raises_at(DecodeError, P.decode_varlong, raw, 0, 10)   # ten continuation bytes, then the end
    assert not isinstance(e, Truncated)


def test_varlong_ten_bytes_accepted_varint_six_not():
    raw = E.encode_varlong(INT64_MIN)
    assert len(raw) == 10
    assert P.decode_varlong(raw, 0, 10) == (INT64_MIN, 10)
    with pytest.raises(DecodeError):
        P.decode_varint(raw, 0, 10)


@pytest.mark.parametrize("raw", ["", "80", "80 80", "FF FF FF", "80 80 80 80"])
@pytest.mark.parametrize("dec", [P.decode_varint, P.decode_varlong, P.decode_unsigned_varint])
def test_varint_truncated(raw, dec):
    raw = h(raw)
    buf = PREFIX + raw + b"\x00" * 4   # a terminator exists, but past `end`
    e = raises_at(Truncated, dec, buf, len(PREFIX), len(PREFIX) + len(raw))
    assert e.offset == len(PREFIX)
    assert e.code is Code.TRUNCATED
    assert e.available == len(raw)


def test_varint_encoders_reject_out_of_range():
    with pytest.raises(ValueError):
        E.encode_varint(INT32_MAX + 1)
    with pytest.raises(ValueError):
        E.encode_varint(INT32_MIN - 1)
    with pytest.raises(ValueError):
        E.encode_varlong(INT64_MAX + 1)
    with pytest.raises(ValueError):
        E.encode_unsigned_varint(-1)


# --- UNSIGNED_VARINT -----------------------------------------------------------------------

UVARINT_EXAMPLES = [
    (0, "00"), (1, "01"), (127, "7F"), (128, "80 01"),
    (16383, "FF 7F"), (16384, "80 80 01"),
    (4294967295, "FF FF FF FF 0F"),
]


@pytest.mark.parametrize("value,hexbytes", UVARINT_EXAMPLES)
def test_unsigned_varint_examples(value, hexbytes):
    raw = h(hexbytes)
    check_decode(P.decode_unsigned_varint, raw, value)
    assert E.encode_unsigned_varint(value) == raw


def test_unsigned_varint_is_not_zigzag():
    # 01 is 1 unsigned, but -1 as a (zig-zag) VARINT
    assert P.decode_unsigned_varint(b"\x01", 0, 1) == (1, 1)
    assert P.decode_varint(b"\x01", 0, 1) == (-1, 1)


# --- FLOAT64 -----------------------------------------------------------------------------------

@pytest.mark.parametrize("value,hexbytes", [
    (0.0, "00 00 00 00 00 00 00 00"),
    (1.0, "3F F0 00 00 00 00 00 00"),
    (-2.5, "C0 04 00 00 00 00 00 00"),
    (math.inf, "7F F0 00 00 00 00 00 00"),
    (-math.inf, "FF F0 00 00 00 00 00 00"),
    (5e-324, "00 00 00 00 00 00 00 01"),
])
def test_float64_big_endian(value, hexbytes):
    raw = h(hexbytes)
    check_decode(P.decode_float64, raw, value)
    assert E.encode_float64(value) == raw


def test_float64_negative_zero_keeps_sign():
    raw = h("80 00 00 00 00 00 00 00")
    v, n = P.decode_float64(raw, 0, 8)
    assert v == 0.0 and math.copysign(1.0, v) == -1.0 and n == 8
    assert E.encode_float64(-0.0) == raw


NAN_PATTERNS = ["7FF8000000000000", "7FF0000000000001", "7FFFFFFFFFFFFFFF", "FFF8000000000000",
                "FFF0000000000001", "7FF4000000000000", "FFFFFFFFFFFFFFFF", "7FF0000080000000"]


@pytest.mark.parametrize("pattern", NAN_PATTERNS)
def test_float64_any_nan_pattern_reads_as_nan(pattern):
    buf = PREFIX + h(pattern) + SUFFIX
    v, n = P.decode_float64(buf, len(PREFIX), len(PREFIX) + 8)
    assert math.isnan(v) and n == len(PREFIX) + 8


@pytest.mark.parametrize("pattern", NAN_PATTERNS)
def test_float64_nan_written_canonical(pattern):
    (nan,) = struct.unpack(">d", h(pattern))
    assert E.encode_float64(nan) == h("7FF8000000000000") == E.CANONICAL_NAN
    assert E.encode_float64(float("nan")) == E.CANONICAL_NAN
    assert E.encode_float64(-float("nan")) == E.CANONICAL_NAN


def test_float64_exponent_all_ones_zero_mantissa_is_infinity_not_nan():
    v, _ = P.decode_float64(h("7FF0000000000000"), 0, 8)
    assert v == math.inf and not math.isnan(v)


@given(st.floats(allow_nan=False))
@settings(max_examples=200, deadline=None)
def test_float64_round_trip(x):
    raw = E.encode_float64(x)
    assert raw == struct.pack(">d", x)
    v, n = P.decode_float64(raw, 0, 8)
    assert n == 8 and struct.pack(">d", v) == raw


def test_float64_truncated():
    e = raises_at(Truncated, P.decode_float64, b"\x00" * 16, 2, 9)
    assert e.offset == 2 and e.needed == 8 and e.available == 7


# --- UUID ----------------------------------------------------------------------------------

def test_null_uuid_is_sixteen_zero_bytes():
    raw = h("00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00")
    check_decode(P.decode_uuid, raw, uuid.UUID(int=0))
    assert E.encode_uuid(None) == raw
    assert E.encode_uuid(uuid.UUID(int=0)) == raw


def test_uuid_big_endian_msb_first():
    u = uuid.UUID("01234567-89ab-cdef-0123-456789abcdef")
    raw = h("0123456789abcdef0123456789abcdef")
    assert E.encode_uuid(u) == raw
    check_decode(P.decode_uuid, raw, u)


@given(st.uuids())
@settings(max_examples=100, deadline=None)
def test_uuid_round_trip(u):
    raw = E.encode_uuid(u)
    assert len(raw) == 16
    assert P.decode_uuid(PREFIX + raw, len(PREFIX), len(PREFIX) + 16) == (u, len(PREFIX) + 16)


def test_uuid_truncated():
    e = raises_at(Truncated, P.decode_uuid, b"\x01" * 32, 4, 19)
    assert e.offset == 4 and e.needed == 16 and e.available == 15


# --- BOOLEAN ---------------------------------------------------------------------------------

def test_boolean_zero_false():
    check_decode(P.decode_boolean, b"\x00", False)


@pytest.mark.parametrize("byte", [1, 2, 0x7F, 0x80, 0xFE, 0xFF])
def test_boolean_any_nonzero_true(byte):
    check_decode(P.decode_boolean, bytes([byte]), True)


def test_boolean_all_256_values():
    for b in range(256):
        assert P.decode_boolean(bytes([b]), 0, 1) == (b != 0, 1)


def test_boolean_writes_00_and_01():
    assert E.encode_boolean(False) == b"\x00"
    assert E.encode_boolean(True) == b"\x01"


def test_boolean_truncated():
    e = raises_at(Truncated, P.decode_boolean, b"\x01", 1, 1)
    assert e.offset == 1


# --- STRING family ---------------------------------------------------------------------------

@pytest.mark.parametrize("s,hexbytes", [("", "00 00"), ("a", "00 01 61"), ("hello", "00 05 68 65 6C 6C 6F")])
def test_string_examples(s, hexbytes):
    raw = h(hexbytes)
    check_decode(P.decode_string, raw, s)
    assert E.encode_string(s) == raw


@pytest.mark.parametrize("s,hexbytes", [(None, "FF FF"), ("", "00 00"), ("test", "00 04 74 65 73 74")])
def test_nullable_string_examples(s, hexbytes):
    raw = h(hexbytes)
    check_decode(P.decode_nullable_string, raw, s)
    assert E.encode_nullable_string(s) == raw


@pytest.mark.parametrize("s,hexbytes", [("", "01"), ("a", "02 61"), ("hello", "06 68 65 6C 6C 6F")])
def test_compact_string_examples(s, hexbytes):
    raw = h(hexbytes)
    check_decode(P.decode_compact_string, raw, s)
    assert E.encode_compact_string(s) == raw


@pytest.mark.parametrize("s,hexbytes", [(None, "00"), ("", "01"), ("test", "05 74 65 73 74")])
def test_compact_nullable_string_examples(s, hexbytes):
    raw = h(hexbytes)
    check_decode(P.decode_compact_nullable_string, raw, s)
    assert E.encode_compact_nullable_string(s) == raw


def test_string_length_minus_one_rejected():
    for raw in (h("FF FF"), h("FF FF 61 62")):
        e = raises_at(DecodeError, P.decode_string, raw, 0, len(raw))
        assert not isinstance(e, Truncated)
        assert e.offset == 0


def test_string_other_negative_lengths_rejected():
    for dec in (P.decode_string, P.decode_nullable_string):
        e = raises_at(DecodeError, dec, h("FF FE 61 62"), 0, 4)
        assert not isinstance(e, Truncated)


def test_compact_string_zero_rejected():
    e = raises_at(DecodeError, P.decode_compact_string, PREFIX + b"\x00" + SUFFIX, len(PREFIX), len(PREFIX) + 3)
    assert not isinstance(e, Truncated)
    assert e.offset == len(PREFIX)


def test_compact_string_long_length_prefix():
    s = "x" * 200  # length+1 = 201 -> two-byte unsigned varint C9 01
    raw = E.encode_compact_string(s)
    assert raw[:2] == h("C9 01")
    check_decode(P.decode_compact_string, raw, s)


def test_string_utf8_multibyte():
    s = "héllo wörld ✓ 𝄞"
    raw = E.encode_string(s)
    assert raw[:2] == struct.pack(">h", len(s.encode("utf-8")))
    check_decode(P.decode_string, raw, s)
    check_decode(P.decode_compact_nullable_string, E.encode_compact_nullable_string(s), s)


def test_string_invalid_utf8_is_decode_error_at_bad_byte():
    raw = h("00 03 61 FF 62")
    e = raises_at(DecodeError, P.decode_string, PREFIX + raw, len(PREFIX), len(PREFIX) + len(raw))
    assert not isinstance(e, Truncated)
    assert e.offset == len(PREFIX) + 3  # the 0xFF


def test_string_encoder_limits():
    assert E.encode_string("x" * 32767)[:2] == h("7F FF")
    with pytest.raises(ValueError):
        E.encode_string("x" * 32768)


@pytest.mark.parametrize("dec,raw,data_at,needed", [
    (P.decode_string, "00 05 68 65 6C", 2, 5),
    (P.decode_nullable_string, "00 04 74", 2, 4),
    (P.decode_compact_string, "06 68 65", 1, 5),
    (P.decode_compact_nullable_string, "05 74 65 73", 1, 4),
])
def test_string_data_truncated(dec, raw, data_at, needed):
    raw = h(raw)
    buf = PREFIX + raw + b"lots of bytes after end"
    e = raises_at(Truncated, dec, buf, len(PREFIX), len(PREFIX) + len(raw))
    # the offset names the missing bytes: where the string's data starts
    assert e.offset == len(PREFIX) + data_at
    assert e.needed == needed and e.available == len(raw) - data_at


@pytest.mark.parametrize("dec", [P.decode_string, P.decode_nullable_string])
def test_string_length_prefix_truncated(dec):
    e = raises_at(Truncated, dec, PREFIX + b"\x00", len(PREFIX), len(PREFIX) + 1)
    assert e.offset == len(PREFIX)


@given(st.text(max_size=60))
@settings(max_examples=100, deadline=None)
def test_string_round_trips(s):
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return  # lone surrogates are not UTF-8
    for enc, dec in ((E.encode_string, P.decode_string), (E.encode_nullable_string, P.decode_nullable_string),
                     (E.encode_compact_string, P.decode_compact_string),
                     (E.encode_compact_nullable_string, P.decode_compact_nullable_string)):
        raw = enc(s)
        assert dec(PREFIX + raw + SUFFIX, len(PREFIX), len(PREFIX) + len(raw) + 2) == (s, len(PREFIX) + len(raw))


# --- BYTES family ------------------------------------------------------------------------------

@pytest.mark.parametrize("b,hexbytes", [(b"", "00 00 00 00"), (b"\x00\xff", "00 00 00 02 00 FF")])
def test_bytes(b, hexbytes):
    raw = h(hexbytes)
    check_decode(P.decode_bytes, raw, b)
    assert E.encode_bytes(b) == raw


@pytest.mark.parametrize("b,hexbytes", [(None, "FF FF FF FF"), (b"", "00 00 00 00"), (b"ab", "00 00 00 02 61 62")])
def test_nullable_bytes(b, hexbytes):
    raw = h(hexbytes)
    check_decode(P.decode_nullable_bytes, raw, b)
    assert E.encode_nullable_bytes(b) == raw


@pytest.mark.parametrize("b,hexbytes", [(b"", "01"), (b"\x00", "02 00"), (b"\xff" * 3, "04 FF FF FF")])
def test_compact_bytes(b, hexbytes):
    raw = h(hexbytes)
    check_decode(P.decode_compact_bytes, raw, b)
    assert E.encode_compact_bytes(b) == raw


@pytest.mark.parametrize("b,hexbytes", [(None, "00"), (b"", "01"), (b"\x80", "02 80")])
def test_compact_nullable_bytes(b, hexbytes):
    raw = h(hexbytes)
    check_decode(P.decode_compact_nullable_bytes, raw, b)
    assert E.encode_compact_nullable_bytes(b) == raw


def test_bytes_null_rejected():
    e = raises_at(DecodeError, P.decode_bytes, h("FF FF FF FF"), 0, 4)
    assert not isinstance(e, Truncated) and e.offset == 0
    e = raises_at(DecodeError, P.decode_compact_bytes, h("00"), 0, 1)
    assert not isinstance(e, Truncated) and e.offset == 0


def test_nullable_bytes_below_minus_one_rejected():
    e = raises_at(DecodeError, P.decode_nullable_bytes, h("FF FF FF FE"), 0, 4)
    assert not isinstance(e, Truncated)


@pytest.mark.parametrize("dec,raw,data_at,needed", [
    (P.decode_bytes, "00 00 00 05 01 02", 4, 5),
    (P.decode_nullable_bytes, "7F FF FF FF 01", 4, INT32_MAX),
    (P.decode_compact_bytes, "04 01", 1, 3),
    (P.decode_compact_nullable_bytes, "FF FF FF FF 0F", 5, 0xFFFFFFFE),
])
def test_bytes_truncated(dec, raw, data_at, needed):
    raw = h(raw)
    e = raises_at(Truncated, dec, PREFIX + raw + b"\x00" * 8, len(PREFIX), len(PREFIX) + len(raw))
    assert e.offset == len(PREFIX) + data_at
    assert e.needed == needed and e.available == len(raw) - data_at


@given(st.binary(max_size=300))
@settings(max_examples=100, deadline=None)
def test_bytes_round_trips(b):
    for enc, dec in ((E.encode_bytes, P.decode_bytes), (E.encode_nullable_bytes, P.decode_nullable_bytes),
                     (E.encode_compact_bytes, P.decode_compact_bytes),
                     (E.encode_compact_nullable_bytes, P.decode_compact_nullable_bytes)):
        raw = enc(b)
        assert dec(PREFIX + raw + SUFFIX, len(PREFIX), len(PREFIX) + len(raw)) == (b, len(PREFIX) + len(raw))


# --- RECORDS / COMPACT_RECORDS ---------------------------------------------------------------

def test_records_null():
    check_decode(P.decode_records, h("FF FF FF FF"), None)
    check_decode(P.decode_compact_records, h("00"), None)


def test_records_empty_is_not_null():
    check_decode(P.decode_records, h("00 00 00 00"), b"")
    check_decode(P.decode_compact_records, h("01"), b"")


def test_records_hold_record_batches():
    from conftest import FIXTURES

    seg = (FIXTURES / "segment-v2" / "00000000000000000000.log").read_bytes()
    for enc, dec in ((E.encode_nullable_bytes, P.decode_records),
                     (E.encode_compact_nullable_bytes, P.decode_compact_records)):
        raw = enc(seg)
        data, nxt = dec(PREFIX + raw, len(PREFIX), len(PREFIX) + len(raw))
        assert nxt == len(PREFIX) + len(raw) and data == seg
        items = list(iter_batches(data))
        assert items and all(not i.findings for i in items)


def test_records_truncated():
    e = raises_at(Truncated, P.decode_records, h("00 00 00 10 00"), 0, 5)
    assert e.offset == 4


# --- ARRAY / COMPACT_ARRAY ---------------------------------------------------------------------

def test_array_null_vs_empty_distinct():
    v, n = P.decode_array(h("FF FF FF FF"), 0, 4, P.decode_int16)
    assert v is None and n == 4
    v, n = P.decode_array(h("00 00 00 00"), 0, 4, P.decode_int16)
    assert v == [] and v is not None and n == 4
    assert E.encode_array(None, E.encode_int16) == h("FF FF FF FF")
    assert E.encode_array([], E.encode_int16) == h("00 00 00 00")


def test_array_elements():
    raw = h("00 00 00 03 00 01 FF FF 7F FF")
    check_decode(P.decode_array, raw, [1, -1, 32767], P.decode_int16, 2)
    assert E.encode_array([1, -1, 32767], E.encode_int16) == raw


def test_array_of_strings():
    items = ["a", "", "héllo"]
    raw = E.encode_array(items, E.encode_string)
    check_decode(P.decode_array, raw, items, P.decode_string, 2)


def test_array_negative_count_below_minus_one_rejected():
    e = raises_at(DecodeError, P.decode_array, h("FF FF FF FE 00 00"), 0, 6, P.decode_int8)
    assert not isinstance(e, Truncated) and e.offset == 0


@pytest.mark.parametrize("wire,expected", [
    ("00", None),             # 0 = null
    ("01", []),               # 1 = empty
    ("02 2A", [42]),          # 2 = one element
    ("04 01 02 03", [1, 2, 3]),  # N = N-1 elements
])
def test_compact_array_count_semantics(wire, expected):
    raw = h(wire)
    check_decode(P.decode_compact_array, raw, expected, P.decode_int8)
    assert E.encode_compact_array(expected, E.encode_int8) == raw


def test_compact_array_null_vs_empty_distinct():
    assert P.decode_compact_array(b"\x00", 0, 1, P.decode_int8) == (None, 1)
    assert P.decode_compact_array(b"\x01", 0, 1, P.decode_int8) == ([], 1)


def _slow_element(buf, pos, end):  # pragma: no cover - must never be reached
    raise AssertionError("element decoder called: the count was not checked first")


def test_array_huge_count_checked_before_allocating():
    raw = h("7F FF FF FF") + b"\x01\x02\x03"   # count 2**31-1, 3 bytes left
    t0 = time.perf_counter()
    e = raises_at(DecodeError, P.decode_array, raw, 0, len(raw), _slow_element, 1)
    assert time.perf_counter() - t0 < 0.5
    assert isinstance(e, Truncated) and e.offset == 0
    assert e.available == 3


def test_compact_array_huge_count_checked_before_allocating():
    raw = h("FF FF FF FF 0F") + b"\x01\x02\x03"   # count 2**32-2
    t0 = time.perf_counter()
    e = raises_at(DecodeError, P.decode_compact_array, raw, 0, len(raw), _slow_element, 1)
    assert time.perf_counter() - t0 < 0.5
    assert isinstance(e, Truncated) and e.offset == 0


def test_array_count_uses_min_element_size():
    # 3 INT32 elements need 12 bytes; 11 are there -> rejected before decoding any element
    raw = h("00 00 00 03") + b"\x00" * 11
    e = raises_at(Truncated, P.decode_array, raw, 0, len(raw), _slow_element, 4)
    assert e.offset == 0


def test_array_element_truncated_reports_element_offset():
    raw = h("00 00 00 02 00 00 00 01 00 00")   # second INT32 cut short
    e = raises_at(Truncated, P.decode_array, raw, 0, len(raw), P.decode_int32, 1)
    assert e.offset == 8


# --- tagged fields -------------------------------------------------------------------------------

def test_tagged_fields_empty():
    check_decode(P.decode_tagged_fields, b"\x00", {})
    assert E.encode_tagged_fields({}) == b"\x00"


def test_tagged_fields_ascending_round_trip():
    fields = {0: b"a", 5: b"", 300: b"xyz"}
    raw = E.encode_tagged_fields(fields)
    assert raw == h("03" "00 01 61" "05 00" "AC 02 03 78 79 7A")
    check_decode(P.decode_tagged_fields, raw, fields)


def test_tagged_fields_encoder_sorts():
    assert E.encode_tagged_fields({7: b"b", 1: b"a"}) == h("02 01 01 61 07 01 62")


def test_tagged_fields_out_of_order_rejected():
    raw = h("02" "05 01 61" "03 01 62")
    e = raises_at(DecodeError, P.decode_tagged_fields, PREFIX + raw, len(PREFIX), len(PREFIX) + len(raw))
    assert not isinstance(e, Truncated)
    assert e.offset == len(PREFIX) + 4   # the second tag


def test_tagged_fields_duplicates_rejected():
    raw = h("02" "03 01 61" "03 01 62")
    e = raises_at(DecodeError, P.decode_tagged_fields, raw, 0, len(raw))
    assert not isinstance(e, Truncated) and e.offset == 4
    # also with a known decoder for the tag
    e = raises_at(DecodeError, P.decode_tagged_fields, raw, 0, len(raw), known={3: P.decode_int8})
    assert not isinstance(e, Truncated)


def test_tagged_fields_unknown_kept_raw_and_skipped():
    raw = h("03" "00 02 00 2A" "01 03 DE AD BE" "02 01 FF") + b"\x7E"
    fields, nxt = P.decode_tagged_fields(raw, 0, len(raw), known={0: P.decode_int16, 2: P.decode_boolean})
    assert fields == {0: 42, 1: h("DE AD BE"), 2: True}
    assert nxt == len(raw) - 1
    # the value after the tagged fields is read from the right place
    assert P.decode_varint(raw, nxt, len(raw)) == (63, len(raw))


def test_tagged_fields_known_decoder_must_consume_exactly_its_size():
    raw = h("01" "04 03 00 2A 00")   # tag 4, size 3, but INT16 uses 2
    e = raises_at(DecodeError, P.decode_tagged_fields, raw, 0, len(raw), known={4: P.decode_int16})
    assert not isinstance(e, Truncated)
    assert e.offset == 3


def test_tagged_fields_known_decoder_cannot_read_past_its_size():
    raw = h("01" "04 01 00") + h("2A 00 00 00")   # tag 4, size 1, INT32 would need 4
    e = raises_at(Truncated, P.decode_tagged_fields, raw, 0, len(raw), known={4: P.decode_int32})
    assert e.offset == 3 and e.available == 1


def test_tagged_fields_size_past_end_truncated():
    raw = h("01" "00 05 61 62")
    e = raises_at(Truncated, P.decode_tagged_fields, raw, 0, len(raw))
    assert e.offset == 3


def test_tagged_fields_huge_count_rejected_quickly():
    raw = h("FF FF FF FF 0F 00 00")
    t0 = time.perf_counter()
    with pytest.raises(DecodeError):
        P.decode_tagged_fields(raw, 0, len(raw))
    assert time.perf_counter() - t0 < 0.5


def test_tagged_field_tag_beyond_32_bits_rejected():
    raw = h("01" "FF FF FF FF 1F 00")
    with pytest.raises(DecodeError):
        P.decode_tagged_fields(raw, 0, len(raw))


@given(st.dictionaries(st.integers(0, 2 ** 32 - 1), st.binary(max_size=20), max_size=8))
@settings(max_examples=100, deadline=None)
def test_tagged_fields_round_trip(fields):
    raw = E.encode_tagged_fields(fields)
    got, nxt = P.decode_tagged_fields(PREFIX + raw + SUFFIX, len(PREFIX), len(PREFIX) + len(raw) + 2)
    assert got == fields and nxt == len(PREFIX) + len(raw)
    assert list(got) == sorted(fields)


# --- varints against kafka-python (independent oracle) ----------------------------------------

def kp_encode(v: int) -> bytes:
    out = bytearray()
    kp_encode_varint(v, out.append)
    return bytes(out)


def test_kafka_python_oracle_is_zigzag():
    # what the oracle does: zig-zag, so it can stand in for VARINT and VARLONG
    assert kp_encode(-1) == b"\x01" and kp_encode(1) == b"\x02" and kp_encode(-65) == h("81 01")
    assert kp_decode_varint(b"\x01", 0) == (-1, 1)


@given(st.integers(INT32_MIN, INT32_MAX))
@settings(max_examples=400, deadline=None)
def test_varint_matches_kafka_python(v):
    ours = E.encode_varint(v)
    assert ours == kp_encode(v)
    assert len(ours) <= 5
    assert kp_decode_varint(ours, 0) == (v, len(ours))
    assert P.decode_varint(PREFIX + ours + SUFFIX, len(PREFIX), len(PREFIX) + len(ours) + 2) == (v, len(PREFIX) + len(ours))


@given(st.integers(INT64_MIN, INT64_MAX))
@settings(max_examples=400, deadline=None)
def test_varlong_matches_kafka_python(v):
    ours = E.encode_varlong(v)
    assert ours == kp_encode(v)
    assert len(ours) <= 10
    assert kp_decode_varint(ours, 0) == (v, len(ours))
    assert P.decode_varlong(PREFIX + ours + SUFFIX, len(PREFIX), len(PREFIX) + len(ours) + 2) == (v, len(PREFIX) + len(ours))


@given(st.integers(0, 2 ** 32 - 1))
@settings(max_examples=400, deadline=None)
def test_unsigned_varint_matches_kafka_python(u):
    ours = E.encode_unsigned_varint(u)
    assert ours == KpUnsignedVarInt32.encode(u)
    # the same bytes are the zig-zag varint of the value whose zig-zag form is u
    assert ours == kp_encode((u >> 1) ^ -(u & 1))
    assert KpUnsignedVarInt32.decode(io.BytesIO(ours)) == u
    assert P.decode_unsigned_varint(PREFIX + ours + SUFFIX, len(PREFIX), len(PREFIX) + len(ours) + 2) == (
        u, len(PREFIX) + len(ours))


@given(st.binary(min_size=1, max_size=12))
@settings(max_examples=400, deadline=None)
def test_varint_decoders_agree_with_kafka_python_on_any_bytes(raw):
    """Where kafka-python reads a value from arbitrary bytes in range, kafkadump reads the same."""
    try:
        kv, kn = kp_decode_varint(raw, 0)
    except (IndexError, ValueError):
        kv = None
    for dec, lo, hi, maxlen in ((P.decode_varint, INT32_MIN, INT32_MAX, 5),
                                (P.decode_varlong, INT64_MIN, INT64_MAX, 10)):
        try:
            v, n = dec(raw, 0, len(raw))
        except Truncated as e:
            assert e.offset == 0
            assert kv is None  # kafka-python ran off the end too
            continue
        except DecodeError:
            continue  # too long / out of range: kafkadump is stricter, that is the spec
        assert n <= maxlen and lo <= v <= hi
        assert (v, n) == (kv, kn)
