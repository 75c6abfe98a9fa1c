"""A small hand encoder for Kafka record batches v2 and legacy messages (tests only).

Independent of kafkadump's decoder: it uses only kafkadump's *encoders* for
the primitive types, CRC-32C / zlib CRC-32 for checksums, and the codec
libraries directly.  Every builder also returns the layout it produced
(record positions, offsets, values), so a test can say where a byte is
without decoding anything.

    v2 batch header (absolute offsets from the batch start)
        0 baseOffset  8 batchLength  12 partitionLeaderEpoch  16 magic  17 crc
        21 attributes  23 lastOffsetDelta  27 baseTimestamp  35 maxTimestamp
        43 producerId  51 producerEpoch  53 baseSequence  57 recordCount  61 records

    legacy message (magic 0 / 1)
        0 offset  8 message_size  12 crc  16 magic  17 attributes  [18 timestamp (magic 1)]
        then key (INT32 length + bytes), value (INT32 length + bytes)
"""

from __future__ import annotations

import gzip
import io
import struct
import zlib
from dataclasses import dataclass, field

from crc32c import crc32c
from primitive_encoders import (
    encode_int8,
    encode_int16,
    encode_int32,
    encode_int64,
    encode_uint32,
    encode_varint,
    encode_varlong,
)

T0 = 1_700_000_000_000
HEADER_SIZE = 61
LOG_OVERHEAD = 12

# v2 header field offsets
BASE_OFFSET, BATCH_LENGTH, LEADER_EPOCH, MAGIC, CRC = 0, 8, 12, 16, 17
ATTRIBUTES, LAST_OFFSET_DELTA, BASE_TIMESTAMP, MAX_TIMESTAMP = 21, 23, 27, 35
PRODUCER_ID, PRODUCER_EPOCH, BASE_SEQUENCE, RECORD_COUNT = 43, 51, 53, 57

# legacy field offsets
L_CRC, L_MAGIC, L_ATTRIBUTES, L_TIMESTAMP = 12, 16, 17, 18

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4


# --- codecs ---------------------------------------------------------------------

def gzip_compress(data: bytes) -> bytes:
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9, mtime=0) as gz:
        gz.write(data)
    return out.getvalue()


def compress(codec: int, data: bytes) -> bytes:
    if codec == GZIP:
        return gzip_compress(data)
    if codec == SNAPPY:
        from kafka.codec import snappy_encode  # xerial framing, as the Java client writes it

        return snappy_encode(data)
    if codec == LZ4:
        import lz4.frame

        return lz4.frame.compress(data)
    if codec == ZSTD:
        import zstandard

        return zstandard.ZstdCompressor().compress(data)
    raise ValueError(codec)


# --- v2 ---------------------------------------------------------------------------

@dataclass
class Rec:
    """One record to encode.  ``offset_delta`` None means its index in the batch."""

    key: bytes | None
    value: bytes | None
    ts_delta: int = 0
    offset_delta: int | None = None
    headers: tuple = ()
    attributes: int = 0


def encode_record(r: Rec, offset_delta: int) -> bytes:
    def blob(b):
        return encode_varint(-1) if b is None else encode_varint(len(b)) + b

    body = [encode_int8(r.attributes), encode_varlong(r.ts_delta), encode_varint(offset_delta),
            blob(r.key), blob(r.value), encode_varint(len(r.headers))]
    for hk, hv in r.headers:
        body.append(blob(hk.encode("utf-8")))
        body.append(blob(hv))
    raw = b"".join(body)
    return encode_varint(len(raw)) + raw


@dataclass
class Layout:
    """What a builder wrote: bytes plus the facts a test needs about them."""

    data: bytes
    magic: int
    base_offset: int
    last_offset: int
    # (offset, timestamp, key, value) of every record, in order
    records: list
    # record start positions, relative to the batch start (uncompressed v2) or
    # to the decompressed stream (compressed v2 / legacy wrappers)
    record_positions: list = field(default_factory=list)
    codec: int = 0
    payload_start: int = HEADER_SIZE  # relative position of the (compressed) payload

    @property
    def size(self) -> int:
        return len(self.data)


def v2_batch(base_offset: int, recs: list[Rec], *, codec: int = 0, attributes: int = 0,
             base_ts: int = T0, max_ts: int | None = None, last_offset_delta: int | None = None,
             record_count: int | None = None, producer_id: int = -1, producer_epoch: int = -1,
             base_sequence: int = -1, leader_epoch: int = 0, control: bool = False,
             transactional: bool = False) -> Layout:
    """Encode one v2 batch with a correct CRC-32C."""
    deltas = [i if r.offset_delta is None else r.offset_delta for i, r in enumerate(recs)]
    encoded = [encode_record(r, d) for r, d in zip(recs, deltas)]
    positions, p = [], 0
    for e in encoded:
        positions.append(p)
        p += len(e)
    plain = b"".join(encoded)
    payload = compress(codec, plain) if codec else plain
    if not codec:
        positions = [HEADER_SIZE + q for q in positions]
    attrs = attributes | codec | (0x10 if transactional else 0) | (0x20 if control else 0)
    lod = (len(recs) - 1) if last_offset_delta is None else last_offset_delta
    if max_ts is None:
        max_ts = max((base_ts + r.ts_delta for r in recs), default=base_ts)
    count = len(recs) if record_count is None else record_count
    after_crc = (encode_int16(attrs) + encode_int32(lod) + encode_int64(base_ts) + encode_int64(max_ts)
                 + encode_int64(producer_id) + encode_int16(producer_epoch) + encode_int32(base_sequence)
                 + encode_int32(count) + payload)
    length = 4 + 1 + 4 + len(after_crc)  # leaderEpoch + magic + crc + rest
    data = (encode_int64(base_offset) + encode_int32(length) + encode_int32(leader_epoch) + encode_int8(2)
            + encode_uint32(crc32c(after_crc)) + after_crc)
    log_append = bool(attrs & 0x08)
    records = [(base_offset + d, max_ts if log_append else base_ts + r.ts_delta, r.key, r.value)
               for r, d in zip(recs, deltas)]
    return Layout(data, 2, base_offset, base_offset + lod, records, positions, codec)


def simple_batch(base_offset: int, n: int = 3, *, codec: int = 0, tag: str = "v", value_size: int = 0,
                 **kw) -> Layout:
    """A batch of ``n`` ordinary records with distinct keys/values (and a header on each)."""
    recs = []
    for i in range(n):
        o = base_offset + i
        value = f"{tag}-{o}".encode() + (b"x" * value_size)
        recs.append(Rec(f"k{o}".encode(), value, ts_delta=i * 10, headers=(("h", f"{o}".encode()),)))
    return v2_batch(base_offset, recs, codec=codec, **kw)


def control_batch(base_offset: int, ctype: int, *, value: bytes | None = None, key: bytes | None = None,
                  producer_id: int = 5000, producer_epoch: int = 2) -> Layout:
    """A control batch holding one control record (COMMIT/ABORT value by default)."""
    if key is None:
        key = encode_int16(0) + encode_int16(ctype)
    if value is None:
        value = encode_int16(0) + encode_int32(7)
    return v2_batch(base_offset, [Rec(key, value)], control=True, transactional=True,
                    producer_id=producer_id, producer_epoch=producer_epoch)


# --- legacy -----------------------------------------------------------------------

def legacy_message(offset: int, value: bytes | None, *, key: bytes | None = None, magic: int = 1,
                   attributes: int = 0, timestamp: int = T0) -> bytes:
    """One legacy entry (offset, size, message) with a correct zlib CRC-32."""
    def blob(b):
        return encode_int32(-1) if b is None else encode_int32(len(b)) + b

    body = encode_int8(magic) + encode_int8(attributes)
    if magic == 1:
        body += encode_int64(timestamp)
    body += blob(key) + blob(value)
    msg = encode_uint32(zlib.crc32(body)) + body
    return encode_int64(offset) + encode_int32(len(msg)) + msg


def legacy_value_start(magic: int, key: bytes | None = None) -> int:
    """Position (relative to the entry start) of a legacy message's value bytes."""
    p = 18 + (8 if magic == 1 else 0)
    p += 4 + (0 if key is None else len(key))
    return p + 4


def legacy_wrapper(offset: int, inner: list[bytes], *, codec: int = GZIP, magic: int = 1,
                   timestamp: int = T0, attributes: int = 0) -> tuple[bytes, list[int]]:
    """A compressed wrapper around ``inner`` entries; also the inner entries' positions in the stream."""
    positions, p = [], 0
    for m in inner:
        positions.append(p)
        p += len(m)
    value = compress(codec, b"".join(inner))
    return legacy_message(offset, value, magic=magic, attributes=attributes | codec,
                          timestamp=timestamp), positions


# --- patching ----------------------------------------------------------------------

def fix_crc(buf: bytearray, pos: int = 0) -> None:
    """Recompute the CRC of the batch / legacy message at ``pos`` (in place)."""
    (length,) = struct.unpack_from(">i", buf, pos + 8)
    end = pos + LOG_OVERHEAD + length
    if buf[pos + MAGIC] == 2:
        struct.pack_into(">I", buf, pos + CRC, crc32c(bytes(buf[pos + 21:end])))
    else:
        struct.pack_into(">I", buf, pos + L_CRC, zlib.crc32(bytes(buf[pos + 16:end])))


def patch(data: bytes, pos: int, fmt: str, value, *, crc_at: int | None = None) -> bytes:
    """Return ``data`` with ``struct.pack(fmt, value)`` written at ``pos``; CRC fixed for the batch at ``crc_at``."""
    buf = bytearray(data)
    struct.pack_into(fmt, buf, pos, value)
    if crc_at is not None:
        fix_crc(buf, crc_at)
    return bytes(buf)


# --- xxh32 (for kafka-python's magic-0 LZ4 encoder when the xxhash package is absent) ----

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M = 0xFFFFFFFF


def _rotl(x, r):
    return ((x << r) | (x >> (32 - r))) & _M


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 from the reference specification (only short inputs matter here)."""
    n, p = len(data), 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed & _M, (seed - _P1) & _M]
        while p + 16 <= n:
            for i in range(4):
                (k,) = struct.unpack_from("<I", data, p + 4 * i)
                v[i] = (_rotl((v[i] + k * _P2) & _M, 13) * _P1) & _M
            p += 16
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while p + 4 <= n:
        (k,) = struct.unpack_from("<I", data, p)
        h = (_rotl((h + k * _P3) & _M, 17) * _P4) & _M
        p += 4
    while p < n:
        h = (_rotl((h + data[p] * _P5) & _M, 11) * _P1) & _M
        p += 1
    h = ((h ^ (h >> 15)) * _P2) & _M
    h = ((h ^ (h >> 13)) * _P3) & _M
    return h ^ (h >> 16)


class _Xxh32Shim:
    """Just enough of the ``xxhash`` package for ``kafka.codec.lz4_encode_old_kafka``."""

    class xxh32:  # noqa: N801 - mirrors xxhash.xxh32
        def __init__(self, data=b""):
            self._h = xxh32(bytes(data))

        def digest(self) -> bytes:
            return self._h.to_bytes(4, "big")


def kafka_python_legacy_lz4(magic: int, messages: list[tuple[int, bytes | None, bytes | None]],
                            timestamp: int = T0) -> bytes:
    """A legacy LZ4 wrapper built by kafka-python's LegacyRecordBatchBuilder.

    For magic 0 kafka-python writes the pre-0.10 (wrong) LZ4 frame-header
    checksum.  It needs the ``xxhash`` package for that; without it a shim
    built on :func:`xxh32` stands in.
    """
    import kafka.codec
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    if kafka.codec.xxhash is None:
        kafka.codec.xxhash = _Xxh32Shim
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=LZ4, batch_size=1 << 20)
    for offset, key, value in messages:
        assert b.append(offset, timestamp=timestamp, key=key, value=value) is not None
    buf = bytearray(b.build())
    # kafka-python leaves the wrapper offset 0; a broker writes the last inner offset
    struct.pack_into(">q", buf, 0, messages[-1][0])
    return bytes(buf)


# --- reading back (a minimal walk over record framing, for positions only) ----------------

def read_varint(buf, p: int) -> tuple[int, int]:
    """Zig-zag VARINT/VARLONG at ``p``: ``(value, next)``."""
    u = shift = 0
    while True:
        b = buf[p]
        p += 1
        u |= (b & 0x7F) << shift
        if b < 0x80:
            return (u >> 1) ^ -(u & 1), p
        shift += 7


def record_fields(buf, start: int) -> dict:
    """Field positions of the v2 record at ``start`` (keys named as in the spec)."""
    length, p = read_varint(buf, start)
    f = {"length": start, "attributes": p, "end": p + length}
    p += 1
    f["timestampDelta"] = p
    _, p = read_varint(buf, p)
    f["offsetDelta"] = p
    _, p = read_varint(buf, p)
    f["keyLength"] = p
    klen, p = read_varint(buf, p)
    f["key"] = p
    p += max(klen, 0)
    f["valueLength"] = p
    vlen, p = read_varint(buf, p)
    f["value"] = p
    p += max(vlen, 0)
    f["headersCount"] = p
    return f


def record_starts(buf, start: int, end: int) -> list[int]:
    """Start positions of the records laid end to end in ``buf[start:end]``."""
    out = []
    p = start
    while p < end:
        out.append(p)
        p = record_fields(buf, p)["end"]
    assert p == end, (p, end)
    return out
