"""Record batch v2 (magic 2): header, CRC-32C, records, control records.

    RecordBatch =>
        baseOffset: INT64              offset 0
        batchLength: INT32             offset 8   bytes from partitionLeaderEpoch to the end
        partitionLeaderEpoch: INT32    offset 12
        magic: INT8                    offset 16  (= 2)
        crc: UINT32                    offset 17  CRC-32C of bytes 21 .. end
        attributes: INT16              offset 21  bits 0-2 codec, 3 timestampType,
                                                  4 isTransactional, 5 isControlBatch,
                                                  6 hasDeleteHorizonMs, 7-15 unused
        lastOffsetDelta: INT32         offset 23
        baseTimestamp: INT64           offset 27
        maxTimestamp: INT64            offset 35
        producerId: INT64              offset 43
        producerEpoch: INT16           offset 51
        baseSequence: INT32            offset 53
        recordCount: INT32             offset 57
        records: [Record]              offset 61  (compressed as a whole when codec != 0)

    Record =>
        length: VARINT                 bytes from attributes to the end of headers
        attributes: INT8               unused
        timestampDelta: VARLONG
        offsetDelta: VARINT
        keyLength: VARINT              -1 = null key
        key: BYTES
        valueLength: VARINT            -1 = null value
        value: BYTES
        headersCount: VARINT
        headers: [Header]

    Header =>
        headerKeyLength: VARINT
        headerKey: STRING (UTF-8)
        headerValueLength: VARINT      -1 = null value
        value: BYTES

    Control record (isControlBatch): key = version INT16, type INT16
        (0 ABORT, 1 COMMIT, 2 LEADER_CHANGE, 3 SNAPSHOT_HEADER, 4 SNAPSHOT_FOOTER,
         5 KRAFT_VERSION, 6 KRAFT_VOTERS);
        ABORT/COMMIT value = version INT16, coordinatorEpoch INT32.

Two speeds, one logic: the record loop keeps each field's start in a local
variable (free) and only when a ``spans`` list is passed turns them into
:class:`Span` objects, once per record.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable, Iterator
from operator import attrgetter

from kafkadump.accel import compiled
from kafkadump.base.findings import Code, DecodeError, Finding, Truncated
from kafkadump.decoders.batches.compression import DEFAULT_MAX_DECOMPRESSED, DEFAULT_MAX_RATIO, decompress
from kafkadump.decoders.batches.control import decode_control
from kafkadump.decoders.batches.crc import crc32c
from kafkadump.decoders.batches.inplace import checksum
from kafkadump.decoders.batches.model import (
    SPAN_RECORDS,  # noqa: F401
    STREAM_RECORDS,  # noqa: F401
    Batch,  # noqa: F401
    Record,  # noqa: F401
    RecordSource,  # noqa: F401
    Span,  # noqa: F401
    record_chunks,  # noqa: F401
)
from kafkadump.decoders.batches.primitives import ByteBuffer, decode_varint, decode_varlong
from kafkadump.decoders.batches.work import WORK

HEADER_SIZE = 61
MIN_BATCH_LENGTH = HEADER_SIZE - 12  # 49: a batch with no records
CRC_START = 21

# (spec name, struct code) in wire order: drives both the struct and the spans.
HEADER_FIELDS = (
    ("baseOffset", "q"), ("batchLength", "i"), ("partitionLeaderEpoch", "i"),
    ("magic", "b"), ("crc", "I"), ("attributes", "h"), ("lastOffsetDelta", "i"),
    ("baseTimestamp", "q"), ("maxTimestamp", "q"), ("producerId", "q"),
    ("producerEpoch", "h"), ("baseSequence", "i"), ("recordCount", "i"),
)
HEADER = struct.Struct(">" + "".join(code for _, code in HEADER_FIELDS))
assert HEADER.size == HEADER_SIZE

_unpack_header = HEADER.unpack_from
# the compiled twin of the record loop (None: the pure-Python path; see kafkadump.accel)
_HOT = compiled("recordloop", Record)
_OFFSET_DELTA = attrgetter("offset_delta")
_TIMESTAMP = attrgetter("timestamp")


def header_spans(position: int, values: tuple[int, ...]) -> list[Span]:
    """Spans of the 13 header fields of a batch at ``position``."""
    spans = []
    off = position
    for (name, code), value in zip(HEADER_FIELDS, values):
        size = struct.calcsize(">" + code)
        spans.append(Span("batch." + name, off, size, value))
        off += size
    return spans


def decode_batch_header(buf: ByteBuffer, pos: int, file: str, base: int = 0) -> Batch:
    """Fill a :class:`Batch` from the 61 header bytes at ``buf[pos:]``.

    ``base`` is added to ``pos`` to make the batch's absolute position.
    Caller guarantees 61 bytes are present.
    """
    (base_offset, batch_length, leader_epoch, magic, crc, attributes, lod,
     base_ts, max_ts, pid, pepoch, bseq, count) = _unpack_header(buf, pos)
    b = Batch(file, base + pos, batch_length + 12, magic)
    b.base_offset = base_offset
    b.batch_length = batch_length
    b.partition_leader_epoch = leader_epoch
    b.crc = crc
    b.attributes = attributes & 0xFFFF
    b.last_offset_delta = lod
    b.base_timestamp = base_ts
    b.max_timestamp = max_ts
    b.producer_id = pid
    b.producer_epoch = pepoch
    b.base_sequence = bseq
    b.record_count = count
    return b


def check_header(b: Batch) -> None:
    """Findings about header values that no writer produces."""
    pos = b.position
    if b.attributes & 0xFF80:
        b.findings.append(Finding(Code.RESERVED_ATTRIBUTES, pos + 21,
                                  f"attributes 0x{b.attributes:04x} set unused bits 7-15"))
    if b.codec > 4:
        b.findings.append(Finding(Code.UNKNOWN_CODEC, pos + 21, f"compression codec {b.codec} is unknown"))
    if b.record_count < 0:
        b.findings.append(Finding(Code.HEADER_INVALID, pos + 57, f"recordCount is {b.record_count}"))
    elif b.record_count > 0 and b.last_offset_delta < 0:
        b.findings.append(Finding(Code.HEADER_INVALID, pos + 23,
                                  f"lastOffsetDelta is {b.last_offset_delta} with {b.record_count} records"))


def decode_batch(buf: bytes | mmap.mmap, pos: int, file: str, *, base: int = 0, records: bool = True,
                 max_decompressed: int = DEFAULT_MAX_DECOMPRESSED, max_ratio: int = DEFAULT_MAX_RATIO,
                 spans: list[Span] | None = None, select: Callable[[Batch], bool] | None = None) -> Batch:
    """Decode the whole v2 batch at ``buf[pos:]`` (the caller checked it fits).

    ``buf`` holds bytes (records keep slices of it); absolute positions are ``base + pos``.  CRC is
    always verified; records are decoded when ``records`` is true (and
    ``select``, if given, says yes), decompressing at most ``max_decompressed``
    bytes and at most ``max_ratio`` times the payload (0: no ratio limit).
    """
    b = decode_batch_header(buf, pos, file, base)
    end = pos + b.size
    b.computed_crc = checksum(crc32c, buf, pos + CRC_START, end)
    check_header(b)
    if b.crc != b.computed_crc:
        b.findings.append(Finding(Code.CRC_MISMATCH, b.position + 17,
                                  f"stored crc {b.crc} != computed {b.computed_crc}"))
    if spans is not None:
        spans.extend(header_spans(b.position, _unpack_header(buf, pos)))
        b.spans = spans
    if records and (select is None or select(b)):
        decode_batch_records(b, buf, pos + HEADER_SIZE, end, base, max_decompressed, max_ratio, spans)
    return b


def decode_batch_records(b: Batch, buf: bytes | mmap.mmap, pos: int, end: int, base: int,
                         max_decompressed: int, max_ratio: int, spans: list | None) -> None:
    """Decode the records of ``b`` from ``buf[pos:end]`` into ``b.records``."""
    codec = b.codec
    if codec > 4 or b.record_count < 0:
        b.records = []
        return
    if codec == 0:
        data, start, stop, source, shift = buf, pos, end, "file", base
    else:
        notes: list = []
        # the payload's first byte; an empty payload is blamed on the codec bits
        payload_pos = base + pos if end > pos else b.position + 21
        try:
            data = decompress(codec, memoryview(buf)[pos:end], max_decompressed, notes, max_ratio)
        except DecodeError as e:
            b.records = []
            b.findings.append(Finding(e.code, payload_pos, e.message, length=end - pos))
            if spans is not None:
                spans.append(Span("batch.records", payload_pos, end - pos, f"<{b.compression}, undecodable>"))
            return
        for code, message in notes:
            b.findings.append(Finding(code, payload_pos, message))
        b.decompressed_size = len(data)
        if spans is not None:
            b.decompressed = data
            spans.append(Span("batch.records", payload_pos, end - pos,
                              f"<{b.compression}, {len(data)} bytes decompressed>"))
        start, stop, source, shift = 0, len(data), "decompressed", 0
    limit = SPAN_RECORDS if spans is not None else STREAM_RECORDS
    if spans is None and compiled_records(b, data, start, stop, source, shift):
        return
    fast = _compiled_run(data, start, stop, b, source, shift, 0, limit) if spans is None else None
    if fast is not None and fast[4]:
        b.records = fast[0]
        _check_records(b, fast[0], fast[5], fast[6])
        return
    recs, findings, p, n, done = fast[:5] if fast is not None else \
        decode_record_run(data, start, stop, b, source, shift, spans, 0, limit)
    if not done and spans is not None:
        _span_rest(b, spans, findings, p, stop, n, source, shift)
    if not done:
        # a batch of many records: check them all a run at a time, keep none; they stream
        # out of the batch later (decoded again from the same bytes, a run at a time)
        total = _check_streamed(b, recs, findings, data, p, stop, n, source, shift)
        b.records = RecordStream(b, data, start, stop, source, shift, total)
        return
    b.records = recs
    if findings:
        b.findings.extend(findings)
    _check_records(b, recs)


def _span_rest(b: Batch, spans: list, findings: list, pos: int, stop: int, n: int, source: str,
               shift: int) -> None:
    """The records after the first :data:`SPAN_RECORDS` of a spanned batch: one block and a finding."""
    at = shift + pos if source == "file" else pos
    spans.append(Span(f"batch.records[{n}:]", at, stop - pos, f"<records {n} on, not annotated>", source,
                      raw="block"))
    off, srel = _anchor(b, source, shift, pos)
    findings.append(Finding(Code.SPAN_LIMIT, off, f"records {n} on ({stop - pos} bytes) are shown as one block: "
                                                  f"a hexdump annotates {SPAN_RECORDS} records of a batch",
                            length=stop - pos, source_offset=srel))


# The header fields a record run reads (decode_record_run, _compiled_run, _anchor).
_RUN_FIELDS = ("position", "record_count", "base_offset", "base_timestamp", "max_timestamp", "attributes",
               "last_offset_delta")


def _stream_header(b: Batch) -> Batch:
    """A copy of the header fields of ``b`` that its record stream decodes with.  The stream must
    not hold ``b`` itself: ``b.records`` is the stream, and that cycle is freed only when the
    cycle collector runs, which kept a walk's mapped or decompressed batches alive until then."""
    header = Batch.__new__(Batch)
    for name in _RUN_FIELDS:
        setattr(header, name, getattr(b, name))
    return header


class RecordStream(RecordSource):
    """The records of a v2 batch of many records, decoded again from its (mapped or
    decompressed) bytes each time they are read (see :class:`RecordSource`)."""

    def __init__(self, batch: Batch, data: bytes | mmap.mmap, start: int, stop: int, source: str, shift: int, decoded: int,
                 keep: Callable[[Record], bool] | None = None):
        super().__init__(decoded, keep)
        self.batch = _stream_header(batch)
        self.data = data
        self.start = start
        self.stop = stop
        self.source = source
        self.shift = shift

    def runs(self) -> Iterator[list[Record]]:
        pos, n, done = self.start, 0, False
        while not done:
            recs, _, pos, n, done = decode_record_run(self.data, pos, self.stop, self.batch, self.source,
                                                      self.shift, None, n, STREAM_RECORDS)
            if recs:
                yield recs


class _RunningChecks:
    """:func:`_check_records` over records seen a run at a time."""

    __slots__ = ("b", "count", "prev", "violation", "prev_at_violation", "top")

    def __init__(self, b: Batch):
        self.b = b
        self.count = 0
        self.prev = -1
        self.violation: Record | None = None
        self.prev_at_violation = -1
        self.top: int | None = None

    def add(self, recs: list[Record]) -> None:
        if not recs:
            return
        self.count += len(recs)
        top = max(map(_TIMESTAMP, recs))
        self.top = top if self.top is None or top > self.top else self.top
        if self.violation is not None:
            return
        lod = self.b.last_offset_delta
        deltas = list(map(_OFFSET_DELTA, recs))
        if deltas[0] > self.prev and deltas[-1] <= lod and (
                deltas == list(range(deltas[0], deltas[-1] + 1)) or sorted(set(deltas)) == deltas):
            self.prev = deltas[-1]
            return
        for r in recs:
            if r.offset_delta <= self.prev or r.offset_delta > lod:
                self.violation, self.prev_at_violation = r, self.prev
                return
            self.prev = r.offset_delta


def _anchor(b: Batch, source: str, shift: int, rel: int) -> tuple[int, int | None]:
    """Absolute offset for a finding at ``rel`` in the record data (and the decompressed offset)."""
    if source == "file":
        return shift + rel, None
    return b.position + HEADER_SIZE, rel


def decode_records(data: bytes, pos: int, end: int, b: Batch, source: str, shift: int,
                   spans: list[Span] | None = None) -> tuple[list[Record], list[Finding]]:
    """The record loop.  Returns ``(records, findings)``.

    ``shift`` turns a position in ``data`` into an absolute file offset when
    ``source`` is ``file``.  A malformed record whose length is sane is
    skipped by its length; otherwise decoding of this batch stops there.
    """
    out, findings, _, _, _ = decode_record_run(data, pos, end, b, source, shift, spans)
    return out, findings


def decode_record_run(data: bytes | mmap.mmap, pos: int, end: int, b: Batch, source: str, shift: int,
                      spans: list | None = None, n: int = 0,
                      limit: int | None = None) -> tuple[list[Record], list[Finding], int, int, bool]:
    """The record loop, resumable: decode at most ``limit`` records (None: all), the first of
    them record number ``n`` of the batch, starting at ``pos``.

    Returns ``(records, findings, next position, next record number, done)``; ``done`` is
    false when the run stopped at ``limit`` with bytes left (call again from there).
    """
    if source != "file":
        shift = 0  # positions in decompressed data are relative to it
    if spans is None:
        fast = _compiled_run(data, pos, end, b, source, shift, n, limit)
        if fast is not None:
            return fast[:5]
    out: list[Record] = []
    findings: list[Finding] = []
    append = out.append
    count = b.record_count
    base_offset = b.base_offset
    base_ts = b.base_timestamp
    log_append = (b.attributes & 0x08) != 0
    max_ts = b.max_timestamp
    ts_type = "LogAppendTime" if log_append else "CreateTime"
    control = (b.attributes & 0x20) != 0
    stop_n = count if limit is None else min(count, n + limit)
    n0 = n
    done = True
    while pos < end:
        if n >= stop_n:
            if n < count:  # the run is full; bytes are left
                done = False
                break
            rel = pos
            off, srel = _anchor(b, source, shift, rel)
            findings.append(Finding(Code.TRAILING_BYTES, off,
                                    f"{end - pos} bytes after the {count} records the header declares",
                                    length=end - pos, source_offset=srel))
            if spans is not None:
                spans.append(Span("batch.trailing", shift + pos if source == "file" else pos,
                                  end - pos, None, source))
            break
        start = pos
        rend = length = -1
        try:
            # length: VARINT (fast path for one byte)
            c = data[pos]
            if c < 0x80:
                length = (c >> 1) ^ -(c & 1)
                pos += 1
            else:
                d = data[pos + 1]
                if d < 0x80:  # two-byte varint, also inline
                    c = (c & 0x7F) | (d << 7)
                    length = (c >> 1) ^ -(c & 1)
                    pos += 2
                else:
                    length, pos = decode_varint(data, pos, end)
            rend = pos + length
            if length < 6 or rend > end:
                raise DecodeError(Code.RECORD_MALFORMED, start,
                                  f"record length {length} does not fit the batch")
            p_attr = pos
            attributes = data[pos]
            pos += 1
            p_ts = pos
            c = data[pos]
            if c < 0x80:
                ts_delta = (c >> 1) ^ -(c & 1)
                pos += 1
            else:
                d = data[pos + 1]
                if d < 0x80:  # two-byte varint, also inline
                    c = (c & 0x7F) | (d << 7)
                    ts_delta = (c >> 1) ^ -(c & 1)
                    pos += 2
                else:
                    ts_delta, pos = decode_varlong(data, pos, rend)
            p_od = pos
            c = data[pos]
            if c < 0x80:
                off_delta = (c >> 1) ^ -(c & 1)
                pos += 1
            else:
                d = data[pos + 1]
                if d < 0x80:  # two-byte varint, also inline
                    c = (c & 0x7F) | (d << 7)
                    off_delta = (c >> 1) ^ -(c & 1)
                    pos += 2
                else:
                    off_delta, pos = decode_varint(data, pos, rend)
            p_kl = pos
            c = data[pos]
            if c < 0x80:
                klen = (c >> 1) ^ -(c & 1)
                pos += 1
            else:
                d = data[pos + 1]
                if d < 0x80:  # two-byte varint, also inline
                    c = (c & 0x7F) | (d << 7)
                    klen = (c >> 1) ^ -(c & 1)
                    pos += 2
                else:
                    klen, pos = decode_varint(data, pos, rend)
            p_key = pos
            if klen >= 0:
                pos += klen
                if pos > rend:
                    raise DecodeError(Code.RECORD_MALFORMED, p_kl,
                                      f"key length {klen} runs past the record's end")
                key = data[p_key:pos]
            elif klen == -1:
                key = None
            else:
                raise DecodeError(Code.RECORD_MALFORMED, p_kl, f"key length {klen}")
            p_vl = pos
            c = data[pos]
            if c < 0x80:
                vlen = (c >> 1) ^ -(c & 1)
                pos += 1
            else:
                d = data[pos + 1]
                if d < 0x80:  # two-byte varint, also inline
                    c = (c & 0x7F) | (d << 7)
                    vlen = (c >> 1) ^ -(c & 1)
                    pos += 2
                else:
                    vlen, pos = decode_varint(data, pos, rend)
            p_val = pos
            if vlen >= 0:
                pos += vlen
                if pos > rend:
                    raise DecodeError(Code.RECORD_MALFORMED, p_vl,
                                      f"value length {vlen} runs past the record's end")
                value = data[p_val:pos]
            elif vlen == -1:
                value = None
            else:
                raise DecodeError(Code.RECORD_MALFORMED, p_vl, f"value length {vlen}")
            p_hc = pos
            c = data[pos]
            if c < 0x80:
                hcount = (c >> 1) ^ -(c & 1)
                pos += 1
            else:
                d = data[pos + 1]
                if d < 0x80:  # two-byte varint, also inline
                    c = (c & 0x7F) | (d << 7)
                    hcount = (c >> 1) ^ -(c & 1)
                    pos += 2
                else:
                    hcount, pos = decode_varint(data, pos, rend)
            if hcount == 0:
                headers: list[tuple[str, bytes | None]] = []
                hspans: list[tuple[int, ...]] | None = None
            else:
                if hcount < 0 or hcount > (rend - pos) // 2:
                    raise DecodeError(Code.RECORD_MALFORMED, p_hc, f"header count {hcount}")
                headers, pos, hspans = _decode_headers(data, pos, rend, hcount, spans is not None)
            if pos != rend:
                raise DecodeError(Code.RECORD_MALFORMED, start,
                                  f"record fields end at {pos - start} of its {rend - start} bytes")
        except (DecodeError, IndexError) as e:
            # IndexError: a field ran off the end of the data (only possible
            # when the record length lied); the position check names it.
            rel = e.offset if isinstance(e, DecodeError) else start
            msg = e.message if isinstance(e, DecodeError) else "record runs past the end of the batch"
            code = Code.RECORD_MALFORMED
            off, srel = _anchor(b, source, shift, rel)
            findings.append(Finding(code, off, f"record {n}: {msg}", source_offset=srel))
            sane = start < rend <= end and length >= 6
            if spans is not None:
                stop = rend if sane else end
                spans.append(Span(f"batch.records[{n}]", shift + start if source == "file" else start,
                                  stop - start, None, source, raw="unparsed"))
            if sane:
                pos = rend
                n += 1
                continue
            pos = end
            break
        rec = Record(base_offset + off_delta,
                     max_ts if log_append else base_ts + ts_delta,
                     ts_type, key, value, headers, off_delta, ts_delta, attributes,
                     shift + start, rend - start, source, shift + p_key, shift + p_val)
        if control:
            rec.control = _control(key, value, b, source, shift, p_key, p_val, findings)
        append(rec)
        if spans is not None:
            _record_spans(spans, n, source, shift if source == "file" else 0, start, p_attr, p_ts, p_od,
                          p_kl, p_key, p_vl, p_val, p_hc, rend, rec, length, klen, vlen, hcount, hspans, pos)
        n += 1
    WORK.records += n - n0
    return out, findings, pos, n, done


def compiled_records(b: Batch, data: bytes | mmap.mmap, start: int, stop: int, source: str, shift: int) -> bool:
    """The records of ``b`` in ``data[start:stop]``, checked by the compiled loop: plain
    records (and the header's cross-checks) make ``b.records`` a stream decoded from the bytes
    when read (no objects until then); False when there is nothing plain to say (no
    compiled loop, a control batch, records that are not plain: see :func:`_compiled_check`)."""
    checked = _compiled_check(data, start, stop, b)
    if checked is None:
        return False
    b.records = RecordStream(b, data, start, stop, source, shift, checked) if checked else []
    return True


def _compiled_check(data: bytes | mmap.mmap, start: int, stop: int, b: Batch) -> int | None:
    """The compiled check of a batch's records (no objects made): the number of records, their
    cross-checks with the header done (:func:`_check_records`' findings); None when there is no
    compiled loop, the batch is a control batch, or its records are not plain (a malformed
    record, trailing bytes, offset deltas out of order): the Python loop then says what is wrong."""
    if _HOT is None or b.attributes & 0x20:
        return None
    log_append = (b.attributes & 0x08) != 0
    got = _HOT.record_check(data, start, stop, b.record_count, b.base_offset, b.base_timestamp, b.max_timestamp,
                            log_append, b.last_offset_delta)
    if got is None or not got[1]:
        return None
    n, _, top = got
    WORK.records += n
    if n != b.record_count:  # (the checks of _check_records, skipped where they can find nothing)
        _count_check(b, n)
    if n and top != b.max_timestamp:
        _timestamp_check(b, n, top)
    return n


def _compiled_run(data: bytes | mmap.mmap, pos: int, end: int, b: Batch, source: str, shift: int, n: int,
                  limit: int | None) -> tuple[list[Record], list[Finding], int, int, bool, bool, int | None] | None:
    """:func:`decode_record_run` by the compiled loop (no spans): its result, then whether the
    offset deltas rise from 0 up to lastOffsetDelta and the largest timestamp (for
    :func:`_check_records`); None when there is no compiled loop, the batch is a control
    batch, or the run is not plain (a malformed record, trailing bytes): the Python loop
    then decodes it and says what is wrong."""
    if _HOT is None or b.attributes & 0x20:
        return None
    count = b.record_count
    stop_n = count if limit is None else min(count, n + limit)
    log_append = (b.attributes & 0x08) != 0
    got = _HOT.record_run(data, pos, end, n, stop_n, count, b.base_offset, b.base_timestamp, b.max_timestamp,
                          log_append, "LogAppendTime" if log_append else "CreateTime", source,
                          shift if source == "file" else 0, b.last_offset_delta)
    if got is None:
        return None
    recs, nxt, n_end, done, ordered, top = got
    WORK.records += n_end - n
    return recs, [], nxt, n_end, done, ordered, top


def _decode_headers(data: ByteBuffer, pos: int, rend: int, hcount: int, want_spans: bool
                    ) -> tuple[list[tuple[str, bytes | None]], int, list[tuple[int, ...]] | None]:
    headers: list[tuple[str, bytes | None]] = []
    # per header, when asked for: positions of its start, key, value length, value and end; key and value lengths
    hspans: list[tuple[int, ...]] | None = [] if want_spans else None
    for _ in range(hcount):
        p0 = pos
        c = data[pos]
        if c < 0x80:
            hk = (c >> 1) ^ -(c & 1)
            pos += 1
        else:
            d = data[pos + 1]
            if d < 0x80:  # two-byte varint, also inline
                c = (c & 0x7F) | (d << 7)
                hk = (c >> 1) ^ -(c & 1)
                pos += 2
            else:
                hk, pos = decode_varint(data, pos, rend)
        if hk < 0:
            raise DecodeError(Code.RECORD_MALFORMED, p0, f"header key length {hk}")
        p1 = pos
        pos += hk
        if pos > rend:
            raise DecodeError(Code.RECORD_MALFORMED, p0, "header key runs past the record")
        try:
            hkey = bytes(data[p1:pos]).decode("utf-8")
        except UnicodeDecodeError:
            # Keep going: the spec says UTF-8, but a forensic tool shows what is there.
            hkey = bytes(data[p1:pos]).decode("utf-8", "backslashreplace")
        p2 = pos
        c = data[pos]
        if c < 0x80:
            hv = (c >> 1) ^ -(c & 1)
            pos += 1
        else:
            d = data[pos + 1]
            if d < 0x80:  # two-byte varint, also inline
                c = (c & 0x7F) | (d << 7)
                hv = (c >> 1) ^ -(c & 1)
                pos += 2
            else:
                hv, pos = decode_varint(data, pos, rend)
        p3 = pos
        if hv >= 0:
            pos += hv
            if pos > rend:
                raise DecodeError(Code.RECORD_MALFORMED, p2, "header value runs past the record")
            hval = bytes(data[p3:pos])
        elif hv == -1:
            hval = None
        else:
            raise DecodeError(Code.RECORD_MALFORMED, p2, f"header value length {hv}")
        headers.append((hkey, hval))
        if hspans is not None:
            hspans.append((p0, p1, p2, p3, pos, hk, hv))
    return headers, pos, hspans


def _control(key: bytes | None, value: bytes | None, b: Batch, source: str, shift: int, p_key: int,
             p_val: int, findings: list[Finding]) -> dict:
    """A control record's ``control`` dict; its problems as findings at its key or value."""
    ctl, problems = decode_control(key, value)
    for code, where, message in problems:
        off, srel = _anchor(b, source, shift, p_key if where == "key" else p_val)
        findings.append(Finding(code, off, message, source_offset=srel))
    return ctl


def _record_spans(spans, n, source, shift, start, p_attr, p_ts, p_od, p_kl, p_key, p_vl, p_val,
                  p_hc, rend, rec, length, klen, vlen, hcount, hspans, pos):
    pre = f"batch.records[{n}]."

    def add(name, a, z, value, raw=None):
        spans.append(Span(pre + name, shift + a, z - a, value, source, raw))

    add("length", start, p_attr, length)
    add("attributes", p_attr, p_ts, rec.attributes)
    add("timestampDelta", p_ts, p_od, rec.timestamp_delta)
    add("offsetDelta", p_od, p_kl, rec.offset_delta)
    add("keyLength", p_kl, p_key, klen)
    if klen > 0:
        add("key", p_key, p_vl, rec.key)
    add("valueLength", p_vl, p_val, vlen)
    if vlen > 0:
        add("value", p_val, p_hc, rec.value)
    hstart = p_hc
    # headersCount ends where the first header starts (or at the record end)
    first = hspans[0][0] if hspans else rend
    add("headersCount", hstart, first, hcount)
    for i, (p0, p1, p2, p3, p4, hk, hv) in enumerate(hspans or ()):
        hk_name, hv_val = rec.headers[i]
        add(f"headers[{i}].keyLength", p0, p1, hk)
        if hk > 0:
            add(f"headers[{i}].key", p1, p2, hk_name)
        add(f"headers[{i}].valueLength", p2, p3, hv)
        if hv > 0:
            add(f"headers[{i}].value", p3, p4, hv_val)


def _check_streamed(b: Batch, recs: list, findings: list, data: bytes | mmap.mmap, pos: int, stop: int, n: int,
                    source: str, shift: int) -> int:
    """Decode the rest of a many-record batch a run at a time, keeping only its findings and
    the running cross-checks of :func:`_check_records` (same findings, same order); the
    number of records decoded."""
    checks = _RunningChecks(b)
    checks.add(recs)
    done = False
    while not done:
        recs, more, pos, n, done = decode_record_run(data, pos, stop, b, source, shift, None, n, STREAM_RECORDS)
        findings.extend(more)
        checks.add(recs)
    b.findings.extend(findings)
    _count_check(b, checks.count)
    if checks.count:
        if checks.violation is not None:
            _order_finding(b, checks.violation, checks.prev_at_violation)
        if checks.top is not None:
            _timestamp_check(b, checks.count, checks.top)
    return checks.count


def _count_check(b: Batch, count: int) -> None:
    if count != b.record_count and not any(f.code in (Code.DECOMPRESSION_FAILED, Code.DECOMPRESSION_LIMIT)
                                           for f in b.findings):
        b.findings.append(Finding(Code.RECORD_COUNT_MISMATCH, b.position + 57,
                                  f"recordCount {b.record_count}, {count} records decoded"))


def _order_finding(b: Batch, r: Record, prev: int) -> None:
    if r.source == "file":
        where, rel = r.position, None
    else:
        where, rel = b.position + HEADER_SIZE, r.position
    b.findings.append(Finding(Code.OFFSET_DELTA_MISMATCH, where,
                              f"offsetDelta {r.offset_delta} after {prev} "
                              f"(lastOffsetDelta {b.last_offset_delta})", source_offset=rel))


def _timestamp_check(b: Batch, count: int, top: int) -> None:
    complete = count == b.record_count and not any(
        f.code in (Code.RECORD_MALFORMED, Code.TRAILING_BYTES) for f in b.findings)
    if not (b.attributes & 0x08) and not b.has_delete_horizon:
        # a writer sets maxTimestamp to the largest record timestamp; compaction keeps
        # the largest record, so a difference is only explainable when records are missing
        if top > b.max_timestamp or (complete and top != b.max_timestamp):
            b.findings.append(Finding(Code.TIMESTAMP_MISMATCH, b.position + 35,
                                      f"maxTimestamp {b.max_timestamp} != largest record timestamp {top}"))


def _check_records(b: Batch, recs: list, in_order: bool | None = None, top: int | None = None) -> None:
    """Cross-check the decoded records against the header (``in_order`` and ``top``, when the
    compiled loop gives them: the offset deltas rise from 0 up to lastOffsetDelta; the largest
    timestamp)."""
    _count_check(b, len(recs))
    if not recs:
        return
    if in_order is None:
        deltas = list(map(_OFFSET_DELTA, recs))
        # the common case in C: strictly increasing (consecutive, or after compaction with gaps),
        # from >= 0, up to lastOffsetDelta
        first, last = deltas[0], deltas[-1]
        in_order = first >= 0 and last <= b.last_offset_delta and (
            deltas == list(range(first, last + 1)) or sorted(set(deltas)) == deltas)
    prev = -1
    for r in () if in_order else recs:
        if r.offset_delta <= prev or r.offset_delta > b.last_offset_delta:
            _order_finding(b, r, prev)
            break
        prev = r.offset_delta
    _timestamp_check(b, len(recs), max(map(_TIMESTAMP, recs)) if top is None else top)


def plausible_v2_header(buf: ByteBuffer, pos: int, end: int) -> bool:
    """Cheap checks that the bytes at ``pos`` could start a v2 batch (no CRC)."""
    if pos + HEADER_SIZE > end:
        return False
    (_, blen, _, magic, _, attrs, lod, _, _, _, _, _, count) = _unpack_header(buf, pos)
    if magic != 2 or blen < MIN_BATCH_LENGTH or pos + 12 + blen > end:
        return False
    if attrs & 0xFF80 or (attrs & 7) > 4 or count < 0 or count > blen or lod < -1:
        return False
    return True


def crc_ok_v2(buf: ByteBuffer, pos: int) -> bool:
    (blen,) = struct.unpack_from(">i", buf, pos + 8)
    (crc,) = struct.unpack_from(">I", buf, pos + 17)
    return checksum(crc32c, buf, pos + CRC_START, pos + 12 + blen) == crc


__all__ = ["decode_batch", "decode_batch_header", "compiled_records", "decode_records", "decode_record_run", "RecordStream",
           "record_chunks", "STREAM_RECORDS", "plausible_v2_header",
           "crc_ok_v2", "HEADER", "HEADER_SIZE", "MIN_BATCH_LENGTH", "Truncated"]
