"""Decompression of record data, as real producers write it, with a size cap.

Codecs (the low three attribute bits of a batch or legacy message):

    0 none
    1 gzip    RFC 1952; several concatenated members are one stream
    2 snappy  raw snappy block (librdkafka), or xerial framing (Java, kafka-python):
              magic 82 'SNAPPY' 00, int32 version, int32 compat, then
              repeated (int32 blockLength, raw snappy block)
    3 lz4     LZ4 frame format.  Kafka before 0.10 (magic 0 messages) computed the
              frame-header checksum over the wrong bytes (including the magic
              number); a strict reader rejects it, so we repair the checksum on a
              copy of the header and say so with an info finding.
    4 zstd    zstd frames, possibly without a content size (the Java client)

Every codec is decoded through a streaming interface that stops one byte
past the cap, so a compression bomb costs at most ``cap`` bytes of memory
and becomes a ``decompression-limit`` finding.
"""

from __future__ import annotations

import io
import struct
import zlib

from kafkadump.base.findings import Code, DecodeError
from kafkadump.decoders.batches.primitives import ByteBuffer

CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")

DEFAULT_MAX_DECOMPRESSED = 64 * 1024 * 1024
DEFAULT_MAX_RATIO = 1000       # gzip tops out near 1032:1; only a bomb goes further
RATIO_FLOOR = 1 << 20          # outputs up to this size are never refused for their ratio
_CHUNK = 1 << 16               # input fed to the streaming decoders at most this much at a time,
_OUT_PIECE = 1 << 20           # output taken from a streaming decoder at most this much a call
_FIRST_PIECE = 64              # starting this small and doubling: what a decoder copies after a
                               # member's end is at most about the member's size (linear in total)

XERIAL_MAGIC = b"\x82SNAPPY\x00"
LZ4_MAGIC = b"\x04\x22\x4d\x18"


class DecompressionLimit(DecodeError):
    def __init__(self, codec: str, cap: int):
        super().__init__(Code.DECOMPRESSION_LIMIT, 0,
                         f"{codec} output exceeds the {cap}-byte decompression cap")


class RatioLimit(DecodeError):
    def __init__(self, codec: str, ratio: int, size: int):
        super().__init__(Code.DECOMPRESSION_RATIO, 0,
                         f"{codec} output exceeds {ratio} times its {size} compressed bytes "
                         f"(a decompression bomb's ratio); not expanded")


def _failed(codec: str, why: object) -> DecodeError:
    """The finding for data ``codec`` cannot decompress; ``why`` is a reason or the library's
    exception (named by its type when it says nothing itself)."""
    text = str(why).strip()
    if not text:
        name = f"{type(why).__name__}: " if isinstance(why, BaseException) else ""
        text = f"{name}the data is not valid {codec}"
    return DecodeError(Code.DECOMPRESSION_FAILED, 0, f"{codec}: {text}")


def decompress(codec: int, data: ByteBuffer, cap: int = DEFAULT_MAX_DECOMPRESSED, notes: list | None = None,
               ratio: int = 0) -> bytes:
    """Decompress ``data`` written with ``codec``; at most ``cap`` bytes out.

    Raises :class:`DecodeError` (offset relative to ``data``: always 0, the
    payload start) on failure.  ``notes`` collects ``(Code, message)`` for
    quirks that were tolerated (the legacy LZ4 checksum).  With a ``ratio``
    (0: none), output beyond ``ratio`` times the input (and beyond
    :data:`RATIO_FLOOR`) raises :class:`RatioLimit`.
    """
    limit = cap
    by_ratio = False
    if ratio and codec in (1, 2, 3, 4):
        r = max(RATIO_FLOOR, ratio * len(data))
        if r < limit:
            limit, by_ratio = r, True
    try:
        if codec == 1:
            return _gunzip(data, limit)
        if codec == 2:
            return _unsnappy(data, limit)
        if codec == 3:
            return _unlz4(data, limit, notes)
        if codec == 4:
            return _unzstd(data, limit)
    except DecompressionLimit:
        if by_ratio:
            raise RatioLimit(CODEC_NAMES[codec], ratio, len(data)) from None
        raise
    raise DecodeError(Code.UNKNOWN_CODEC, 0, f"unknown compression codec {codec}")


def _growing_buffer() -> io.BytesIO:
    """Where a codec's output pieces are gathered: a BytesIO grows in place (realloc), and its
    getvalue() hands over its buffer without a copy, so the decompressed bytes are held once, not
    twice as a list of pieces and their join would (a 64 MiB output: 64 MiB, not 128)."""
    return io.BytesIO()


# --- gzip ------------------------------------------------------------------------

def _gunzip(data: ByteBuffer, cap: int) -> bytes:
    # The input is fed in growing pieces so that many concatenated members cost
    # linear time (zlib copies everything after a member's end into unused_data).
    out = _growing_buffer()
    total = 0
    mv = memoryview(bytes(data))
    n = len(mv)
    pos = 0
    members = 0
    while pos < n:
        start = pos
        d = zlib.decompressobj(wbits=31)
        step = _FIRST_PIECE
        try:
            while not d.eof and pos < n:
                piece: ByteBuffer = mv[pos:pos + step]
                pos += len(piece)
                step = min(step * 2, _CHUNK)
                while piece and not d.eof:  # the output at most _OUT_PIECE bytes a call
                    chunk = d.decompress(piece, min(cap - total + 1, _OUT_PIECE))
                    total += len(chunk)
                    if total > cap:
                        raise DecompressionLimit("gzip", cap)
                    out.write(chunk)
                    piece = d.unconsumed_tail
        except zlib.error as e:
            if members and not bytes(mv[start:]).strip(b"\x00"):
                break  # zero padding after the last member
            raise _failed("gzip", e) from None
        if not d.eof:
            raise _failed("gzip", "stream ends before the end of the gzip member")
        members += 1
        pos -= len(d.unused_data)
    if not members:
        raise _failed("gzip", "empty input")
    return out.getvalue()


# --- snappy -----------------------------------------------------------------------

def _snappy_declared_len(block: bytes, what: str) -> int:
    """A raw snappy block starts with its uncompressed length as a varint."""
    value = shift = 0
    for i in range(min(5, len(block))):
        b = block[i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value
        shift += 7
    raise _failed("snappy", f"{what}: bad length preamble")


def _raw_snappy(block: bytes, cap_left: int, what: str) -> bytes:
    import snappy  # python-snappy

    n = _snappy_declared_len(block, what)
    if n > cap_left:
        raise DecompressionLimit("snappy", cap_left)
    try:
        out = snappy.decompress(bytes(block))
    except Exception as e:  # the binding raises its own error types
        raise _failed("snappy", f"{what}: {e}") from None
    return bytes(out)


def _unsnappy(data: ByteBuffer, cap: int) -> bytes:
    data = bytes(data)
    if not data.startswith(XERIAL_MAGIC):
        return _raw_snappy(data, cap, "raw block")
    if len(data) < 16:
        raise _failed("snappy", "xerial header truncated")
    pos = 16  # magic(8) version(4) compat(4)
    out = _growing_buffer()
    total = 0
    n = len(data)
    while pos < n:
        if pos + 4 > n:
            raise _failed("snappy", f"xerial block length truncated at {pos}")
        (blen,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if blen < 0 or pos + blen > n:
            raise _failed("snappy", f"xerial block of {blen} bytes at {pos - 4} runs past the data")
        chunk = _raw_snappy(data[pos:pos + blen], cap - total, f"xerial block at {pos - 4}")
        total += len(chunk)
        out.write(chunk)
        pos += blen
    return out.getvalue()


# --- lz4 --------------------------------------------------------------------------

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32, used only for the few bytes of an LZ4 frame descriptor."""
    n = len(data)
    p = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed
        v4 = (seed - _P1) & _M32
        while p + 16 <= n:
            a, b, c, d = struct.unpack_from("<IIII", data, p)
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
            p += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while p + 4 <= n:
        (k,) = struct.unpack_from("<I", data, p)
        h = (_rotl((h + k * _P3) & _M32, 17) * _P4) & _M32
        p += 4
    while p < n:
        h = (_rotl((h + data[p] * _P5) & _M32, 11) * _P1) & _M32
        p += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def _lz4_descriptor_end(data: bytes) -> int:
    """Index of the header-checksum byte of the LZ4 frame at the start of ``data``."""
    flg = data[4]
    end = 6  # magic(4) FLG BD
    if flg & 0x08:
        end += 8  # content size
    if flg & 0x01:
        end += 4  # dictionary id
    return end


def lz4_fix_legacy_checksum(data: bytes) -> bytes | None:
    """If the frame carries Kafka's old header checksum, return a repaired copy.

    The correct checksum is byte 1 of XXH32 over the frame descriptor (FLG to
    the end of the optional fields); old Kafka hashed from the magic number
    on.  Returns None when the header is already right or is not that quirk.
    """
    if len(data) < 7 or data[:4] != LZ4_MAGIC:
        return None
    hc = _lz4_descriptor_end(data)
    if hc >= len(data):
        return None
    good = (xxh32(data[4:hc]) >> 8) & 0xFF
    if data[hc] == good:
        return None
    legacy = (xxh32(data[0:hc]) >> 8) & 0xFF
    if data[hc] != legacy:
        return None
    return data[:hc] + bytes([good]) + data[hc + 1:]


def _unlz4(data: ByteBuffer, cap: int, notes: list | None) -> bytes:
    import lz4.frame

    data = bytes(data)
    fixed = lz4_fix_legacy_checksum(data)
    if fixed is not None:
        data = fixed
        if notes is not None:
            notes.append((Code.LZ4_LEGACY_CHECKSUM,
                          "LZ4 frame header checksum computed the pre-0.10 Kafka way; repaired to decode"))
    # fed in chunks, like gzip: many tiny frames cost linear time
    out = _growing_buffer()
    total = 0
    mv = memoryview(data)
    n = len(mv)
    pos = 0
    while pos < n:
        d = lz4.frame.LZ4FrameDecompressor()
        step = _FIRST_PIECE
        while True:
            piece = mv[pos:pos + step]
            pos += len(piece)
            step = min(step * 2, _CHUNK)
            total = _lz4_drain(d, piece, out, total, cap)
            if d.eof:
                break
            if pos >= n:
                raise _failed("lz4", "frame ends before its end mark")
        pos -= len(d.unused_data or b"")
        if pos < n and bytes(mv[pos:pos + 4]) != LZ4_MAGIC:
            if not bytes(mv[pos:]).strip(b"\x00"):
                break
            raise _failed("lz4", f"{n - pos} bytes after the last frame")
    return out.getvalue()


def _lz4_drain(d, piece: ByteBuffer, out: io.BytesIO, total: int, cap: int) -> int:  # noqa: ANN001
    """Feed one piece, taking the output at most :data:`_OUT_PIECE` bytes a call (the binding allocates
    ``max_length`` bytes up front); the running total, or DecompressionLimit past ``cap``."""
    while True:
        try:
            chunk = d.decompress(piece, max_length=min(cap - total + 1, _OUT_PIECE))
        except RuntimeError as e:
            raise _failed("lz4", e) from None
        piece = b""
        total += len(chunk)
        if total > cap:
            raise DecompressionLimit("lz4", cap)
        out.write(chunk)
        if d.eof or d.needs_input:
            return total
        if not chunk:
            raise _failed("lz4", "the decoder neither needs input nor gives output")


# --- zstd -------------------------------------------------------------------------

ZSTD_MAGIC = 0xFD2FB528


def zstd_frames_end(data: ByteBuffer) -> int | None:
    """Walk the zstd frames in ``data`` by their block headers (no decoding).

    Returns where the last complete frame ends, or None when a frame is cut
    short: the streaming reader returns partial output for a truncated
    frame without complaint, so completeness is checked here.
    Skippable frames (magic 0x184D2A5?) are stepped over.
    """
    n = len(data)
    pos = 0
    while pos < n:
        if pos + 4 > n:
            return None
        (magic,) = struct.unpack_from("<I", data, pos)
        if magic & 0xFFFFFFF0 == 0x184D2A50:
            if pos + 8 > n:
                return None
            (size,) = struct.unpack_from("<I", data, pos + 4)
            pos += 8 + size
            continue
        if magic != ZSTD_MAGIC:
            return pos if pos else None
        if pos + 5 > n:
            return None
        fhd = data[pos + 4]
        single = (fhd >> 5) & 1
        fcs_size = (0 if not single else 1, 2, 4, 8)[fhd >> 6]
        did_size = (0, 1, 2, 4)[fhd & 3]
        checksum = (fhd >> 2) & 1
        p = pos + 5 + (0 if single else 1) + did_size + fcs_size
        while True:
            if p + 3 > n:
                return None
            h = data[p] | (data[p + 1] << 8) | (data[p + 2] << 16)
            last, btype, bsize = h & 1, (h >> 1) & 3, h >> 3
            if btype == 3:
                return None  # reserved block type: corrupt
            p += 3 + (1 if btype == 1 else bsize)
            if last:
                break
        p += 4 * checksum
        if p > n:
            return None
        pos = p
    return pos


def _unzstd(data: ByteBuffer, cap: int) -> bytes:
    import zstandard

    if zstd_frames_end(data) is None:
        raise _failed("zstd", "a frame is cut short (its blocks run past the end of the data)")
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(bytes(data), read_across_frames=True)
        out = reader.read(cap + 1)
        # stream_reader.read() may return less than asked before the end
        chunks = [out]
        total = len(out)
        while out and total <= cap:
            out = reader.read(cap + 1 - total)
            chunks.append(out)
            total += len(out)
    except zstandard.ZstdError as e:
        raise _failed("zstd", e) from None
    if total > cap:
        raise DecompressionLimit("zstd", cap)
    return b"".join(chunks)
