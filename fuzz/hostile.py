"""Scaled hostile inputs for the bounded-work tests (issue 12, defect classes 1-4).

Each generator takes a scale and returns bytes (or writes a sparse file) in
a fraction of a second; doubling the scale doubles the input, so a test can
check that the decoder's work counters (:data:`kafkadump.decoders.batches.work.WORK`)
double too.  Self-contained: no kafkadump imports, so a generator is an
independent description of the attack.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib

from crc32c import crc32c

_V2_HEAD = struct.Struct(">qiibIhiqqqhii")


def legacy_message(offset: int, value: bytes | None, *, key: bytes | None = None, magic: int = 1,
                   attributes: int = 0, timestamp: int = 0) -> bytes:
    """One legacy entry (offset, size, message) with a right CRC-32."""
    body = bytes([magic, attributes]) + (struct.pack(">q", timestamp) if magic == 1 else b"")
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    msg = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(msg)) + msg


def tiny_inner_wrapper(n: int, magic: int = 1) -> bytes:
    """Class 1: one gzip wrapper of ``n`` tiny inner messages of ``magic`` (0 or 1; offsets 0..n-1:
    relative in magic 1, absolute in magic 0, whose wrapper carries the last)."""
    rest = legacy_message(0, b"v", magic=magic)[8:]  # the same message at every offset: one CRC
    inner = b"".join([struct.pack(">q", i) + rest for i in range(n)])
    return legacy_message(n - 1, gzip.compress(inner, 9, mtime=0), attributes=1, magic=magic)


def width_bomb(width: int, levels: int = 3, leaf: int = 1 << 20) -> bytes:
    """Class 2: each level holds ``width`` copies of a gzip wrapper of the level below; the leaf
    value is ``leaf`` zero bytes.  Inflated naively: width**(levels-1) * leaf bytes."""
    msg = legacy_message(0, gzip.compress(legacy_message(0, bytes(leaf), magic=0), 9), magic=0, attributes=1)
    for _ in range(levels - 1):
        msg = legacy_message(0, gzip.compress(msg * width, 9), magic=0, attributes=1)
    return msg


def v2_batch(base_offset: int, values: list[bytes], *, crc: int | None = None) -> bytes:
    """An uncompressed v2 batch of one record per value (null keys), CRC right unless given."""
    recs = b""
    for i, v in enumerate(values):
        body = b"\x00" + _varint(0) + _varint(i) + _varint(-1) + _varint(len(v)) + v + _varint(0)
        recs += _varint(len(body)) + body
    n = len(values)
    head = _V2_HEAD.pack(base_offset, 49 + len(recs), 0, 2, 0, 0, n - 1, 0, 0, -1, -1, -1, n)
    raw = bytearray(head + recs)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])) if crc is None else crc)
    return bytes(raw)


def _varint(v: int) -> bytes:
    z = (v << 1) ^ (v >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def sparse_declared_batch(path: str, size: int) -> None:
    """Class 3: a sparse file of ``size`` bytes whose first header declares one batch of all of it
    (wrong CRC, zero records area): nothing but the header is on disk."""
    with open(path, "wb") as f:
        f.write(_V2_HEAD.pack(0, size - 12, 0, 2, 0x1234, 0, 0, 0, 0, -1, -1, -1, 1))
        f.truncate(size)


def zero_run_between(path: str, zeros: int) -> None:
    """Class 3: an intact batch, a sparse run of ``zeros`` zero bytes, another intact batch."""
    with open(path, "wb") as f:
        f.write(v2_batch(0, [b"first"]))
        f.seek(zeros, os.SEEK_CUR)
        f.write(v2_batch(1, [b"second"]))


def legacy_fake_headers(size: int, step: int = 26) -> bytes:
    """Class 4: a magic-0 header every ``step`` bytes, each one's size reaching the end of the data
    and its framing right (null key, the value running to the end), every CRC wrong."""
    out = bytearray(size)
    for p in range(0, size - 26, step):
        value = size - p - 26
        out[p:p + 26] = struct.pack(">qiIbbii", p, size - p - 12, 0, 0, 0, -1, value)
    return bytes(out)


def v2_fake_headers(size: int, step: int = 61) -> bytes:
    """Class 4: a plausible v2 header every ``step`` bytes, each one's length reaching the end,
    every CRC wrong."""
    out = bytearray(b"\x07" * size)
    for p in range(0, size - 61, step):
        out[p:p + 61] = _V2_HEAD.pack(p, size - p - 12, 0, 2, 0, 0, 0, 0, 0, -1, -1, -1, 0)
    return bytes(out)


def random_bytes(size: int, seed: int = 12) -> bytes:
    """Class 4: bytes to resynchronise through (deterministic)."""
    import random

    return random.Random(seed).randbytes(size)


__all__ = ["legacy_message", "tiny_inner_wrapper", "width_bomb", "v2_batch", "sparse_declared_batch",
           "zero_run_between", "legacy_fake_headers", "v2_fake_headers", "random_bytes"]
