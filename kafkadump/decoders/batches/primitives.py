"""Kafka protocol primitive types: the one layer of readers every decoder builds on.

Grammar, from the protocol's primitive-type specification:

    INT8 INT16 INT32 INT64      two's complement, big-endian
    UINT16 UINT32               unsigned, big-endian
    VARINT                      zig-zag, 7 bits per byte, little-endian groups, <= 5 bytes
    VARLONG                     zig-zag, <= 10 bytes
    UNSIGNED_VARINT             no zig-zag, <= 5 bytes
    FLOAT64                     IEEE 754 binary64, big-endian (canonical NaN on write)
    UUID                        16 bytes; all-zero is the null UUID
    BOOLEAN                     1 byte, 0 false, any other value true
    STRING                      INT16 length, UTF-8 bytes; -1 rejected
    NULLABLE_STRING             INT16 length, -1 = null
    COMPACT_STRING              UNSIGNED_VARINT length+1; 0 rejected
    COMPACT_NULLABLE_STRING     UNSIGNED_VARINT length+1; 0 = null
    BYTES / NULLABLE_BYTES      INT32 length (-1 = null for the nullable one)
    COMPACT_(NULLABLE_)BYTES    UNSIGNED_VARINT length+1
    ARRAY                       INT32 count, -1 = null (distinct from empty)
    COMPACT_ARRAY               UNSIGNED_VARINT count+1, 0 = null
    RECORDS / COMPACT_RECORDS   as NULLABLE_BYTES / COMPACT_NULLABLE_BYTES, holding record batches
    TaggedFields                UNSIGNED_VARINT count, then (tag:UVARINT size:UVARINT data[size])*,
                                tags strictly ascending, duplicates rejected, unknown skipped

Every decoder has the shape ``decode_x(buf, pos, end) -> (value, next_pos)``:
offset in, next offset out, never reading at or past ``end``.  Errors are
raised as :class:`~kafkadump.base.findings.Truncated` (not enough bytes) or
:class:`~kafkadump.base.findings.DecodeError` (bytes present but not valid;
:class:`MalformedVarint` for varints), both carrying the offset where the
value starts.  ``int16_at`` / ``int32_at`` read a value whose bytes the caller
has already checked are there (size prefixes peeked at while framing).

Users: the record loop (its one- and two-byte varints are inlined there, the
longer ones come here), the protocol decoder (its schema field readers add
paths, spans and findings on top of these), the frame splitter and the
internal-topic decoder.  Encoders live with the tests
(``tests/primitive_encoders.py``): kafkadump never writes Kafka bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from mmap import mmap
from typing import TYPE_CHECKING, Any

from kafkadump.base.findings import Code, DecodeError, Truncated

if TYPE_CHECKING:
    import uuid as _uuid

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_F64 = struct.Struct(">d")
_unpack_i16 = _I16.unpack_from
_unpack_i32 = _I32.unpack_from
_unpack_i64 = _I64.unpack_from

# what the decoders read: a file's read-only mapping, or bytes in memory
ByteBuffer = bytes | bytearray | memoryview | mmap


class MalformedVarint(DecodeError):
    """A varint longer than its type allows, or with more bits than its type holds.

    ``reason`` says which, for callers that word their own message.
    """

    def __init__(self, pos: int, reason: str):
        super().__init__(Code.RECORD_MALFORMED, pos, f"varint at {pos} {reason}")
        self.reason = reason


def _need(pos: int, n: int, end: int, what: str) -> None:
    if pos + n > end:
        raise Truncated(pos, n, end - pos, what)


# --- fixed width ------------------------------------------------------------

# a primitive decoder: (buf, pos, end) -> (value, next)
Decoder = Callable[[ByteBuffer, int, int], tuple[Any, int]]

# the byte width of each fixed-size decoder below (the protocol decoder's field readers need it)
FIXED_SIZES: dict[Decoder, int] = {}


def _fixed(st: struct.Struct, what: str) -> Decoder:
    size = st.size
    unpack_from = st.unpack_from

    def decode(buf: ByteBuffer, pos: int, end: int) -> tuple[Any, int]:
        if pos + size > end:
            raise Truncated(pos, size, end - pos, what)
        return unpack_from(buf, pos)[0], pos + size

    decode.__name__ = "decode_" + what.lower()
    decode.__doc__ = f"Decode {what} ({size} bytes) at ``pos``."
    FIXED_SIZES[decode] = size
    return decode


decode_int8 = _fixed(_I8, "INT8")
decode_int16 = _fixed(_I16, "INT16")
decode_int32 = _fixed(_I32, "INT32")
decode_int64 = _fixed(_I64, "INT64")
decode_uint16 = _fixed(_U16, "UINT16")
decode_uint32 = _fixed(_U32, "UINT32")


# FLOAT64: struct reads every exponent-all-ones, non-zero-mantissa pattern as NaN.
decode_float64 = _fixed(_F64, "FLOAT64")


def int16_at(buf: ByteBuffer, pos: int) -> int:
    """INT16 at ``pos``; the caller has checked that its two bytes are there."""
    return _unpack_i16(buf, pos)[0]


def int32_at(buf: ByteBuffer, pos: int) -> int:
    """INT32 at ``pos``; the caller has checked that its four bytes are there."""
    return _unpack_i32(buf, pos)[0]


def int64_at(buf: ByteBuffer, pos: int) -> int:
    """INT64 at ``pos``; the caller has checked that its eight bytes are there."""
    return _unpack_i64(buf, pos)[0]


def decode_boolean(buf: ByteBuffer, pos: int, end: int) -> tuple[bool, int]:
    """BOOLEAN: 0 is false, any non-zero value is true."""
    _need(pos, 1, end, "BOOLEAN")
    return buf[pos] != 0, pos + 1


def decode_uuid(buf: ByteBuffer, pos: int, end: int) -> tuple[_uuid.UUID, int]:
    """UUID as a :class:`uuid.UUID` (the null UUID is all zeros, returned as such)."""
    import uuid as _uuid  # imported when a schema has a UUID (start-up: uuid imports platform)

    _need(pos, 16, end, "UUID")
    return _uuid.UUID(bytes=bytes(buf[pos:pos + 16])), pos + 16


FIXED_SIZES[decode_boolean] = 1
FIXED_SIZES[decode_uuid] = 16


# --- variable length ----------------------------------------------------------

def decode_unsigned_varint(buf: ByteBuffer, pos: int, end: int, max_bytes: int = 5) -> tuple[int, int]:
    """UNSIGNED_VARINT (``max_bytes`` 5) or the raw part of a VARLONG (10).

    Rejects encodings longer than ``max_bytes`` and, for the 32-bit form,
    values that do not fit in 32 bits.
    """
    value = 0
    shift = 0
    p = pos
    limit = min(end, pos + max_bytes)
    while p < limit:
        b = buf[p]
        p += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if max_bytes == 5 and value > 0xFFFFFFFF:
                raise MalformedVarint(pos, "exceeds 32 bits")
            if max_bytes == 10 and value > 0xFFFFFFFFFFFFFFFF:
                raise MalformedVarint(pos, "exceeds 64 bits")
            return value, p
        shift += 7
    if p >= end and p - pos < max_bytes:
        raise Truncated(pos, p - pos + 1, end - pos, "varint")
    raise MalformedVarint(pos, f"is longer than {max_bytes} bytes")


def decode_varint(buf: ByteBuffer, pos: int, end: int) -> tuple[int, int]:
    """VARINT: zig-zag signed 32-bit, at most 5 bytes."""
    b = buf[pos] if pos < end else -1
    if 0 <= b < 0x80:  # fast path: one byte
        return (b >> 1) ^ -(b & 1), pos + 1
    u, p = decode_unsigned_varint(buf, pos, end, 5)
    return (u >> 1) ^ -(u & 1), p


def decode_varlong(buf: ByteBuffer, pos: int, end: int) -> tuple[int, int]:
    """VARLONG: zig-zag signed 64-bit, at most 10 bytes."""
    b = buf[pos] if pos < end else -1
    if 0 <= b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    u, p = decode_unsigned_varint(buf, pos, end, 10)
    return (u >> 1) ^ -(u & 1), p


# --- strings and bytes -----------------------------------------------------------

def _utf8(raw: ByteBuffer, pos: int) -> str:
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError as e:
        raise DecodeError(Code.RECORD_MALFORMED, pos + e.start,
                          f"invalid UTF-8 in string at {pos}") from None


def decode_length(buf: ByteBuffer, pos: int, end: int, compact: bool, wide: bool) -> tuple[int, int]:
    """A length or count prefix: ``(n, next)``, n = -1 for null.

    ``compact``: UNSIGNED_VARINT n+1 (0 = null); else INT32 (``wide``) or INT16.
    Values below -1 are returned as they are: the caller decides.
    """
    if compact:
        n, p = decode_unsigned_varint(buf, pos, end)
        return n - 1, p
    return (decode_int32 if wide else decode_int16)(buf, pos, end)


def take(buf: ByteBuffer, pos: int, n: int, end: int, what: str) -> tuple[bytes, int]:
    """The ``n`` raw bytes at ``pos`` (after their length prefix): ``(bytes, next)``."""
    if n < 0:
        raise DecodeError(Code.LENGTH_INVALID, pos, f"negative {what} length {n}")
    if pos + n > end:
        raise Truncated(pos, n, end - pos, what)
    return bytes(buf[pos:pos + n]), pos + n


def decode_string(buf: ByteBuffer, pos: int, end: int) -> tuple[str, int]:
    n, p = decode_int16(buf, pos, end)
    if n < 0:
        raise DecodeError(Code.RECORD_MALFORMED, pos, f"STRING at {pos} has length {n} (null not allowed)")
    raw, p = take(buf, p, n, end, "STRING")
    return _utf8(raw, pos + 2), p


def decode_nullable_string(buf: ByteBuffer, pos: int, end: int) -> tuple[str | None, int]:
    n, p = decode_int16(buf, pos, end)
    if n == -1:
        return None, p
    if n < -1:
        raise DecodeError(Code.RECORD_MALFORMED, pos, f"NULLABLE_STRING at {pos} has length {n}")
    raw, p = take(buf, p, n, end, "NULLABLE_STRING")
    return _utf8(raw, pos + 2), p


def decode_compact_string(buf: ByteBuffer, pos: int, end: int) -> tuple[str, int]:
    n, p = decode_unsigned_varint(buf, pos, end)
    if n == 0:
        raise DecodeError(Code.RECORD_MALFORMED, pos, f"COMPACT_STRING at {pos} is null (not allowed)")
    raw, p2 = take(buf, p, n - 1, end, "COMPACT_STRING")
    return _utf8(raw, p), p2


def decode_compact_nullable_string(buf: ByteBuffer, pos: int, end: int) -> tuple[str | None, int]:
    n, p = decode_unsigned_varint(buf, pos, end)
    if n == 0:
        return None, p
    raw, p2 = take(buf, p, n - 1, end, "COMPACT_NULLABLE_STRING")
    return _utf8(raw, p), p2


def decode_bytes(buf: ByteBuffer, pos: int, end: int) -> tuple[bytes, int]:
    n, p = decode_int32(buf, pos, end)
    if n < 0:
        raise DecodeError(Code.RECORD_MALFORMED, pos, f"BYTES at {pos} has length {n} (null not allowed)")
    return take(buf, p, n, end, "BYTES")


def decode_nullable_bytes(buf: ByteBuffer, pos: int, end: int) -> tuple[bytes | None, int]:
    n, p = decode_int32(buf, pos, end)
    if n == -1:
        return None, p
    if n < -1:
        raise DecodeError(Code.RECORD_MALFORMED, pos, f"NULLABLE_BYTES at {pos} has length {n}")
    return take(buf, p, n, end, "NULLABLE_BYTES")


def decode_compact_bytes(buf: ByteBuffer, pos: int, end: int) -> tuple[bytes, int]:
    n, p = decode_unsigned_varint(buf, pos, end)
    if n == 0:
        raise DecodeError(Code.RECORD_MALFORMED, pos, f"COMPACT_BYTES at {pos} is null (not allowed)")
    return take(buf, p, n - 1, end, "COMPACT_BYTES")


def decode_compact_nullable_bytes(buf: ByteBuffer, pos: int, end: int) -> tuple[bytes | None, int]:
    n, p = decode_unsigned_varint(buf, pos, end)
    if n == 0:
        return None, p
    return take(buf, p, n - 1, end, "COMPACT_NULLABLE_BYTES")


# RECORDS are NULLABLE_BYTES whose content is record batches; the caller
# hands the returned bytes to the batch walker.
decode_records = decode_nullable_bytes
decode_compact_records = decode_compact_nullable_bytes


# --- arrays ------------------------------------------------------------------------

def decode_array(buf: ByteBuffer, pos: int, end: int, element: Decoder, min_element_size: int = 1) -> tuple[list[Any] | None, int]:
    """ARRAY<T>: INT32 count, -1 = null.  Returns None for null, [] for empty.

    The count is checked against the bytes that remain (each element takes
    at least ``min_element_size`` bytes) before anything is allocated.
    """
    n, p = decode_int32(buf, pos, end)
    if n == -1:
        return None, p
    return _elements(buf, pos, p, end, n, element, min_element_size, "ARRAY")


def decode_compact_array(buf: ByteBuffer, pos: int, end: int, element: Decoder, min_element_size: int = 1) -> tuple[list[Any] | None, int]:
    """COMPACT_ARRAY<T>: UNSIGNED_VARINT count+1, 0 = null."""
    n, p = decode_unsigned_varint(buf, pos, end)
    if n == 0:
        return None, p
    return _elements(buf, pos, p, end, n - 1, element, min_element_size, "COMPACT_ARRAY")


def _elements(buf: ByteBuffer, start: int, p: int, end: int, n: int, element: Decoder, min_size: int,
              what: str) -> tuple[list[Any], int]:
    if n < 0:
        raise DecodeError(Code.RECORD_MALFORMED, start, f"{what} at {start} has count {n}")
    if min_size > 0 and n * min_size > end - p:
        raise Truncated(start, n * min_size, end - p, f"{what} of {n} elements")
    out: list[Any] = []
    for _ in range(n):
        v, p = element(buf, p, end)
        out.append(v)
    return out, p


# --- tagged fields -------------------------------------------------------------------

def decode_tagged_fields(buf: ByteBuffer, pos: int, end: int, known: dict[int, Decoder] | None = None) -> tuple[dict[int, object], int]:
    """TaggedFields: returns ``({tag: value_or_raw_bytes}, next_pos)``.

    ``known`` maps a tag to a decoder ``(buf, pos, end) -> (value, next)`` that
    must consume exactly the field's declared size.  Unknown tags are kept as
    raw bytes (skipped, as the spec requires, but not thrown away: this is a
    forensic tool).  Tags out of ascending order or repeated are errors.
    """
    count, p = decode_unsigned_varint(buf, pos, end)
    if count > end - p:  # each field takes at least two bytes
        raise Truncated(pos, count, end - p, f"tagged fields ({count})")
    fields: dict[int, object] = {}
    last = -1
    for _ in range(count):
        tag_pos = p
        tag, p = decode_unsigned_varint(buf, p, end)
        size, p = decode_unsigned_varint(buf, p, end)
        if tag in fields:
            raise DecodeError(Code.RECORD_MALFORMED, tag_pos, f"duplicate tag {tag} at {tag_pos}")
        if tag < last:
            raise DecodeError(Code.RECORD_MALFORMED, tag_pos,
                              f"tag {tag} at {tag_pos} after tag {last} (tags must ascend)")
        last = tag
        if p + size > end:
            raise Truncated(p, size, end - p, f"tagged field {tag}")
        if known and tag in known:
            value, q = known[tag](buf, p, p + size)
            if q != p + size:
                raise DecodeError(Code.RECORD_MALFORMED, p,
                                  f"tagged field {tag} at {p} used {q - p} of its {size} bytes")
            fields[tag] = value
        else:
            fields[tag] = bytes(buf[p:p + size])
        p += size
    return fields, p
