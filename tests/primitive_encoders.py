"""Encoders of Kafka's primitive types, for tests and fixtures only (kafkadump itself never encodes).

The inverse of :mod:`kafkadump.decoders.batches.primitives`: ``encode_x(value) -> bytes``.
"""

from __future__ import annotations

import math
import struct

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_F64 = struct.Struct(">d")

CANONICAL_NAN = bytes.fromhex("7ff8000000000000")


def encode_int8(v: int) -> bytes:
    return _I8.pack(v)


def encode_int16(v: int) -> bytes:
    return _I16.pack(v)


def encode_int32(v: int) -> bytes:
    return _I32.pack(v)


def encode_int64(v: int) -> bytes:
    return _I64.pack(v)


def encode_uint16(v: int) -> bytes:
    return _U16.pack(v)


def encode_uint32(v: int) -> bytes:
    return _U32.pack(v)


def encode_float64(v: float) -> bytes:
    """FLOAT64, writing every NaN as the canonical 7FF8000000000000."""
    if math.isnan(v):
        return CANONICAL_NAN
    return _F64.pack(v)


def encode_boolean(v: bool) -> bytes:
    return b"\x01" if v else b"\x00"


def encode_uuid(v) -> bytes:
    return bytes(16) if v is None else v.bytes


def encode_unsigned_varint(v: int) -> bytes:
    if v < 0:
        raise ValueError("unsigned varint must be >= 0")
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zigzag32(v: int) -> int:
    return ((v << 1) ^ (v >> 31)) & 0xFFFFFFFF


def zigzag64(v: int) -> int:
    return ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF


def encode_varint(v: int) -> bytes:
    if not -(1 << 31) <= v < (1 << 31):
        raise ValueError("VARINT out of range")
    return encode_unsigned_varint(zigzag32(v))


def encode_varlong(v: int) -> bytes:
    if not -(1 << 63) <= v < (1 << 63):
        raise ValueError("VARLONG out of range")
    return encode_unsigned_varint(zigzag64(v))


def encode_string(s: str) -> bytes:
    raw = s.encode("utf-8")
    if len(raw) > 32767:
        raise ValueError("STRING longer than 32767 bytes")
    return encode_int16(len(raw)) + raw


def encode_nullable_string(s: str | None) -> bytes:
    return encode_int16(-1) if s is None else encode_string(s)


def encode_compact_string(s: str) -> bytes:
    raw = s.encode("utf-8")
    return encode_unsigned_varint(len(raw) + 1) + raw


def encode_compact_nullable_string(s: str | None) -> bytes:
    return b"\x00" if s is None else encode_compact_string(s)


def encode_bytes(b: bytes) -> bytes:
    return encode_int32(len(b)) + bytes(b)


def encode_nullable_bytes(b: bytes | None) -> bytes:
    return encode_int32(-1) if b is None else encode_bytes(b)


def encode_compact_bytes(b: bytes) -> bytes:
    return encode_unsigned_varint(len(b) + 1) + bytes(b)


def encode_compact_nullable_bytes(b: bytes | None) -> bytes:
    return b"\x00" if b is None else encode_compact_bytes(b)


def encode_array(items, element) -> bytes:
    if items is None:
        return encode_int32(-1)
    return encode_int32(len(items)) + b"".join(element(i) for i in items)


def encode_compact_array(items, element) -> bytes:
    if items is None:
        return b"\x00"
    return encode_unsigned_varint(len(items) + 1) + b"".join(element(i) for i in items)


def encode_tagged_fields(fields: dict[int, bytes]) -> bytes:
    out = [encode_unsigned_varint(len(fields))]
    for tag in sorted(fields):
        data = fields[tag]
        out.append(encode_unsigned_varint(tag) + encode_unsigned_varint(len(data)) + data)
    return b"".join(out)
