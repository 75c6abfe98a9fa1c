"""Legacy message sets: magic 0 (Kafka 0.8-0.9) and magic 1 (0.10).

    MessageSet => [offset message_size message]      (no count prefix)
        offset => INT64                              offset 0
        message_size => INT32                        offset 8   bytes of message
        message =>
            crc => UINT32                            offset 12  CRC-32 (not C) of magic .. end of value
            magic_byte => INT8                       offset 16
            attributes => INT8                       offset 17  bits 0-2 codec (0 none, 1 gzip,
                                                                2 snappy, 3 lz4), bit 3 timestampType (v1)
            timestamp => INT64                       offset 18  (magic 1 only)
            key => BYTES                             INT32 length, -1 = null
            value => BYTES                           INT32 length, -1 = null

A compressed message ("wrapper") carries in its value a whole message set
compressed with its codec.  Its offset is the offset of its last inner
message.  In magic 1 the inner offsets are relative (0..n-1) and
absolute = wrapper offset - last inner offset + inner offset; in magic 0
they are stored absolute.  A wrapper with LogAppendTime gives its timestamp
to every inner message.  Wrappers inside wrappers are not written by Kafka;
they are decoded to a bounded depth and reported.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator

from kafkadump.base.findings import Code, DecodeError, Finding
from kafkadump.decoders.batches.compression import DEFAULT_MAX_DECOMPRESSED, DEFAULT_MAX_RATIO, decompress
from kafkadump.decoders.batches.inplace import checksum
from kafkadump.decoders.batches.model import SPAN_RECORDS, STREAM_RECORDS, Batch, Record, RecordSource, Span
from kafkadump.decoders.batches.primitives import ByteBuffer, int32_at, int64_at
from kafkadump.decoders.batches.work import WORK

_PREFIX = struct.Struct(">qiIbb")  # offset, message_size, crc, magic, attributes

LOG_OVERHEAD = 12
MIN_MESSAGE_SIZE = {0: 14, 1: 22}  # crc magic attributes [timestamp] keylen valuelen
DEFAULT_MAX_DEPTH = 4


class InflateBudget:
    """Bytes one top-level message may inflate to, summed over every wrapper at every depth.

    A width bomb (each level holding many copies of a compressed wrapper of
    the level below) inflates exponentially if each wrapper had its own cap;
    one budget per top-level message bounds the whole expansion.
    """

    __slots__ = ("left", "exhausted")

    def __init__(self, total: int):
        self.left = total
        self.exhausted = False


class _Msg:
    __slots__ = ("pos", "size", "offset", "message_size", "crc", "computed_crc", "magic",
                 "attributes", "timestamp", "key", "value", "p_key", "p_value", "p_ts")

    # declared for the type checker only: annotations without values add no class attributes
    pos: int
    size: int  # LOG_OVERHEAD + message_size
    offset: int
    message_size: int
    crc: int
    computed_crc: int
    magic: int
    attributes: int
    timestamp: int | None  # None in magic 0
    key: bytes | None
    value: bytes | None
    p_key: int
    p_value: int
    p_ts: int | None  # None in magic 0


def framing_error(buf: ByteBuffer, pos: int, end: int) -> DecodeError | None:
    """What breaks the framing of the legacy entry at ``pos`` (None: nothing), read in place.

    Checks the header, the size and that the key and value lengths tile the
    message exactly: no CRC, no copy, constant work.  Offsets are positions in ``buf``.
    """
    if pos + LOG_OVERHEAD > end:
        return DecodeError(Code.TRUNCATED, pos, f"message header needs 12 bytes, {end - pos} left")
    size = int32_at(buf, pos + 8)
    if pos + 17 > end:
        return DecodeError(Code.TRUNCATED, pos, f"message of {size} bytes at {pos} is cut short")
    magic = buf[pos + 16]
    if magic not in (0, 1):
        return DecodeError(Code.UNKNOWN_MAGIC, pos + 16, f"magic {magic} in a legacy message set")
    if size < MIN_MESSAGE_SIZE[magic]:
        return DecodeError(Code.LENGTH_INVALID, pos + 8,
                           f"message_size {size} below the {MIN_MESSAGE_SIZE[magic]}-byte minimum for magic {magic}")
    mend = pos + LOG_OVERHEAD + size
    if mend > end:
        return DecodeError(Code.TRUNCATED, pos, f"message of {size} bytes at {pos} runs {mend - end} bytes past the end")
    p = pos + (26 if magic == 1 else 18)
    for what in ("key", "value"):
        if p + 4 > mend:
            return DecodeError(Code.RECORD_MALFORMED, p, f"{what} length runs past the message")
        n = int32_at(buf, p)
        p += 4
        if n == -1:
            continue
        if n < 0 or p + n > mend:
            return DecodeError(Code.RECORD_MALFORMED, p - 4, f"{what} length {n} does not fit the message")
        p += n
    if p != mend:
        return DecodeError(Code.RECORD_MALFORMED, p, f"{mend - p} bytes after the value inside message_size")
    return None


def parse_message(buf: ByteBuffer, pos: int, end: int) -> _Msg:
    """Parse one legacy entry (offset, size, message) at ``pos``; raise on damage.

    Offsets in raised errors are positions in ``buf``.  The framing is checked
    in place (:func:`framing_error`) before anything is copied or checksummed.
    """
    err = framing_error(buf, pos, end)
    if err is not None:
        raise err
    offset = int64_at(buf, pos)
    size = int32_at(buf, pos + 8)
    magic = buf[pos + 16]
    mend = pos + LOG_OVERHEAD + size
    m = _Msg()
    m.pos = pos
    m.size = LOG_OVERHEAD + size
    m.offset = offset
    m.message_size = size
    _, _, m.crc, _, attributes = _PREFIX.unpack_from(buf, pos)
    m.magic = magic
    m.attributes = attributes & 0xFF
    m.computed_crc = checksum(zlib.crc32, buf, pos + 16, mend)
    p = pos + 18
    if magic == 1:
        m.p_ts = p
        m.timestamp = int64_at(buf, p)
        p += 8
    else:
        m.p_ts = None
        m.timestamp = None
    m.p_key = p
    m.key, p = _bytes(buf, p, mend, "key")
    m.p_value = p
    m.value, p = _bytes(buf, p, mend, "value")
    return m


def _bytes(buf: ByteBuffer, p: int, end: int, what: str) -> tuple[bytes | None, int]:
    if p + 4 > end:
        raise DecodeError(Code.RECORD_MALFORMED, p, f"{what} length runs past the message")
    n = int32_at(buf, p)
    p += 4
    if n == -1:
        return None, p
    if n < 0 or p + n > end:
        raise DecodeError(Code.RECORD_MALFORMED, p - 4, f"{what} length {n} does not fit the message")
    return bytes(buf[p:p + n]), p + n


def _message_spans(spans: list[Span], m: _Msg, prefix: str, source: str, shift: int) -> None:
    def add(name: str, a: int, n: int, value: object) -> None:
        spans.append(Span(prefix + name, shift + a, n, value, source))

    p = m.pos
    add("offset", p, 8, m.offset)
    add("messageSize", p + 8, 4, m.message_size)
    add("crc", p + 12, 4, m.crc)
    add("magic", p + 16, 1, m.magic)
    add("attributes", p + 17, 1, m.attributes)
    if m.p_ts is not None:
        add("timestamp", m.p_ts, 8, m.timestamp)
    add("keyLength", m.p_key, 4, -1 if m.key is None else len(m.key))
    if m.key:
        add("key", m.p_key + 4, len(m.key), m.key)
    add("valueLength", m.p_value, 4, -1 if m.value is None else len(m.value))
    if m.value:
        codec = m.attributes & 7
        add("value", m.p_value + 4, len(m.value),
            m.value if codec == 0 else f"<compressed message set, {len(m.value)} bytes>")


def decode_legacy(buf: ByteBuffer, pos: int, end: int, file: str, *, base: int = 0, records: bool = True,
                  max_decompressed: int = DEFAULT_MAX_DECOMPRESSED, max_ratio: int = DEFAULT_MAX_RATIO,
                  max_depth: int = DEFAULT_MAX_DEPTH, spans: list[Span] | None = None) -> Batch:
    """Decode the top-level legacy message at ``buf[pos:]`` as a :class:`Batch`.

    Raises :class:`DecodeError` only when the message's own framing is
    broken (the walker then resynchronises); everything inside becomes
    findings on the returned batch.
    """
    m = parse_message(buf, pos, end)
    b = Batch(file, base + pos, m.size, m.magic)
    b.offset = m.offset
    b.message_size = m.message_size
    b.crc = m.crc
    b.computed_crc = m.computed_crc
    b.attributes = m.attributes
    b.timestamp = m.timestamp
    b.key = m.key
    if m.crc != m.computed_crc:
        b.findings.append(Finding(Code.CRC_MISMATCH, b.position + 12,
                                  f"stored crc {m.crc} != computed crc32 {m.computed_crc}"))
    if m.attributes & (0xF0 if m.magic == 1 else 0xF8):
        b.findings.append(Finding(Code.RESERVED_ATTRIBUTES, b.position + 17,
                                  f"attributes 0x{m.attributes:02x} set unused bits"))
    if spans is not None:
        _message_spans(spans, m, "message.", "file", base)
        b.spans = spans
    codec = m.attributes & 7
    if codec == 0:
        b.base_offset = m.offset
        b.record_count = 1
        if records:
            b.records = [_record(m, m.offset, m.timestamp, b.timestamp_type, "file", base)]
        return b
    if codec > 3:  # zstd (4) exists only in record batches v2
        b.findings.append(Finding(Code.UNKNOWN_CODEC, b.position + 17,
                                  f"compression codec {codec} is not valid in a magic {m.magic} message"))
        b.records = [] if records else None
        return b
    # A wrapper: its records are its inner messages.  We decode them even for
    # a shallow walk so that baseOffset and recordCount are known.
    # A shallow walk counts them without holding them; a wrapper of many holds none either:
    # its records stream (expanded again when read).
    limits = (max_decompressed, max_ratio, max_depth)
    anchor = (b.position + (m.p_value - m.pos) + 4, None)
    kept: list[Record] | None = [] if records else None
    count = 0
    first = None
    for r in _expand(m, b, 1, (InflateBudget(max_decompressed), max_ratio), max_depth, spans, m.offset, anchor):
        if count == 0:
            first = r.offset
        count += 1
        if kept is not None:
            kept.append(r)
            if len(kept) > STREAM_RECORDS:
                kept = None
    WORK.records += count
    b.record_count = count
    b.base_offset = first if count else m.offset
    if not records:
        b.records = None
    elif kept is not None:
        b.records = kept
    else:
        b.records = WrapperRecords(m, b, limits, anchor, count)
    return b


class WrapperRecords(RecordSource):
    """The inner records of a legacy wrapper of many messages, expanded again (within a fresh
    budget, findings dropped: they were taken the first time) each time they are read."""

    def __init__(self, m: _Msg, b: Batch, limits: tuple, anchor: tuple, decoded: int,
                 keep: Callable[[Record], bool] | None = None):
        super().__init__(decoded, keep)
        self.m = m
        self.batch = b
        self.limits = limits
        self.anchor = anchor

    def runs(self) -> Iterator[list[Record]]:
        b = self.batch
        scratch = Batch(b.file, b.position, b.size, b.magic)
        max_decompressed, max_ratio, max_depth = self.limits
        run: list[Record] = []
        for r in _expand(self.m, scratch, 1, (InflateBudget(max_decompressed), max_ratio), max_depth, None,
                         self.m.offset, self.anchor):
            run.append(r)
            if len(run) >= STREAM_RECORDS:
                yield run
                run = []
        if run:
            yield run


def _record(m: _Msg, offset: int, timestamp: int | None, ts_type: str | None, source: str, shift: int) -> Record:
    at = shift if source == "file" else 0
    # key and value positions: after their INT32 length prefixes
    return Record(offset, timestamp, ts_type, m.key, m.value, [], None, None, m.attributes,
                  at + m.pos, m.size, source, at + m.p_key + 4, at + m.p_value + 4, None, m.magic,
                  m.crc, m.computed_crc, m.offset)


def _expand(wrapper: _Msg, b: Batch, depth: int, limits: tuple, max_depth: int, spans: list[Span] | None,
            wrapper_offset: int, anchor: tuple) -> Iterator[Record]:
    """Decompress a wrapper and yield the records of its inner message set, flattening nested wrappers.

    ``limits`` is ``(budget, max_ratio)``: one :class:`InflateBudget` shared by
    every level (once spent, no further wrapper is expanded), the ratio
    applied to each wrapper.  ``wrapper_offset`` is the wrapper's absolute
    offset; ``anchor`` is ``(file offset, decompressed offset or None)`` of
    the wrapper's value, where findings about this wrapper are anchored.
    Inner messages of the top-level wrapper are addressed in its
    decompressed data; deeper ones are anchored at the nested wrapper that
    holds them.  Two passes over the decompressed data, holding no message
    between them: the first checks framing and CRCs and finds the last inner
    offset, the second makes the records.
    """
    a_off, a_src = anchor

    def at(p: int | None) -> tuple[int, int | None]:
        return (a_off, p) if depth == 1 else (a_off, a_src)

    data = _inflate(wrapper, b, depth, limits, max_depth, spans, anchor)
    if data is None:
        return
    count, stop, last_rel, sequential = _check_inner(data, b, depth, spans, at)
    if not count or last_rel is None:
        return
    wrapper_lat = wrapper.magic == 1 and (wrapper.attributes & 0x08)
    ts_type = None if wrapper.magic == 0 else ("LogAppendTime" if wrapper_lat else "CreateTime")
    # magic 1: inner offsets are relative to the wrapper's, which is the last
    # inner's absolute offset.  A producer's own request (wrapper offset 0)
    # has no absolute offsets yet: then, as Kafka's reader does, keep the
    # stored ones.
    relative = wrapper.magic >= 1 and wrapper_offset - last_rel >= 0
    prev = None
    p = 0
    while p < stop:
        im = parse_message(data, p, stop)
        p += im.size
        absolute = wrapper_offset - last_rel + im.offset if relative else im.offset
        if prev is not None and im.offset <= prev:
            o, so = at(im.pos)
            b.findings.append(Finding(Code.INNER_OFFSETS, o, f"inner offset {im.offset} after {prev}",
                                      source_offset=so))
        prev = im.offset
        if im.attributes & 7:
            o, so = at(im.pos)
            b.findings.append(Finding(Code.NESTED_COMPRESSION, o, "compressed message inside a compressed wrapper",
                                      source_offset=so))
            yield from _expand(im, b, depth + 1, limits, max_depth, None, absolute, (o, so))
            continue
        ts = wrapper.timestamp if wrapper_lat else im.timestamp
        yield _record(im, absolute, ts, ts_type if im.magic else None, "decompressed", 0)
    producer_form = wrapper_offset == 0 and sequential
    if wrapper.magic == 0 and last_rel != wrapper_offset and not producer_form:
        o, so = at(None) if depth > 1 else (a_off, None)
        b.findings.append(Finding(Code.INNER_OFFSETS, o,
                                  f"last inner offset {last_rel} != wrapper offset {wrapper_offset}",
                                  source_offset=so))


def _inflate(wrapper: _Msg, b: Batch, depth: int, limits: tuple, max_depth: int, spans: list[Span] | None,
             anchor: tuple) -> bytes | None:
    """The wrapper's decompressed value within the budget, or None (with a finding) when there is none."""
    a_off, a_src = anchor
    if depth > max_depth:
        b.findings.append(Finding(Code.NESTING_TOO_DEEP, a_off,
                                  f"wrappers nested deeper than {max_depth} levels; not expanded",
                                  source_offset=a_src))
        return None
    if wrapper.value is None:
        # anchored at the value's length field (-1) when it is in the file
        b.findings.append(Finding(Code.RECORD_MALFORMED, a_off - 4 if depth == 1 else a_off,
                                  "compressed wrapper has a null value", source_offset=a_src))
        return None
    budget = limits[0]
    if budget.exhausted:
        return None
    notes: list = []
    try:
        data = decompress(wrapper.attributes & 7, wrapper.value, budget.left, notes, limits[1])
    except DecodeError as e:
        if e.code is Code.DECOMPRESSION_LIMIT:
            if depth > 1:
                e = DecodeError(e.code, 0, f"{e.message}: the decompression budget of the top-level "
                                           f"message is spent; inner wrappers left unexpanded")
            budget.exhausted = True
        empty = not wrapper.value
        # an empty value has no first byte: anchor at its length field
        b.findings.append(Finding(e.code, a_off - 4 if empty and depth == 1 else a_off, e.message,
                                  length=(len(wrapper.value) or None) if depth == 1 else None,
                                  source_offset=a_src))
        return None
    budget.left -= len(data)
    WORK.inflated += len(data)
    for code, message in notes:
        b.findings.append(Finding(code, a_off, message, source_offset=a_src))
    if depth == 1:
        b.decompressed_size = len(data)
        if spans is not None:
            b.decompressed = data
    return data


def _close_span_block(spans: list[Span], b: Batch, block_at: int | None, stop: int, count: int,
                      at: Callable[[int | None], tuple[int, int | None]]) -> None:
    """The inner messages past the first :data:`SPAN_RECORDS` of a hexdump: one block, one finding."""
    if block_at is None:
        return
    spans.append(Span(f"message.inner[{SPAN_RECORDS}:]", block_at, stop - block_at,
                      f"<inner messages {SPAN_RECORDS} on, not annotated>", "decompressed", raw="block"))
    o, so = at(block_at)
    b.findings.append(Finding(Code.SPAN_LIMIT, o, f"inner messages {SPAN_RECORDS}..{count - 1} ({stop - block_at} "
                                                  f"bytes) are shown as one block: a hexdump annotates "
                                                  f"{SPAN_RECORDS} messages of a wrapper",
                              length=stop - block_at, source_offset=so))


def _check_inner(data: bytes, b: Batch, depth: int, spans: list[Span] | None,
                 at: Callable[[int | None], tuple[int, int | None]]) -> tuple[int, int, int | None, bool]:
    """First pass over an inner message set: framing and CRC findings (and spans at depth 1, of the
    first :data:`SPAN_RECORDS` messages; the rest is one block with a ``span-limit`` finding).

    Returns ``(messages, end of the last whole message, last inner offset, offsets are 0..n-1)``.
    """
    count = 0
    last_rel = None
    sequential = True
    p = 0
    end = len(data)
    spanned = spans if depth == 1 else None
    block_at: int | None = None
    while p < end:
        try:
            im = parse_message(data, p, end)
        except DecodeError as e:
            if spanned is not None:
                _close_span_block(spanned, b, block_at, p, count, at)
                block_at = None
                spanned.append(Span("message.inner.unparsed", p, end - p, None, "decompressed", "unparsed"))
            o, so = at(e.offset)
            b.findings.append(Finding(e.code, o, f"inner message: {e.message}", source_offset=so))
            break
        if spanned is not None:
            if count < SPAN_RECORDS:
                _message_spans(spanned, im, f"message.inner[{count}].", "decompressed", 0)
            elif block_at is None:
                block_at = p
        if im.crc != im.computed_crc:
            o, so = at(p + 12)
            b.findings.append(Finding(Code.CRC_MISMATCH, o,
                                      f"inner message at {p}: stored crc {im.crc} != computed {im.computed_crc}",
                                      source_offset=so))
        sequential = sequential and im.offset == count
        count += 1
        last_rel = im.offset
        p += im.size
    if spanned is not None:
        _close_span_block(spanned, b, block_at, p, count, at)
    return count, p, last_rel, sequential
