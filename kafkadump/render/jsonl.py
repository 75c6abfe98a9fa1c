"""JSON Lines: the objects of :mod:`kafkadump.report.records`, one per line.

Every line is valid JSON whatever the input bytes: byte fields are encoded
per ``--encoding`` (auto, the default, is text or ``{"base64": ...}``; base64 and
hex are lossless; text replaces invalid UTF-8 with U+FFFD), null stays null,
and strings taken from the input are escaped (:mod:`kafkadump.render.jsontext`).

Record lines are built with string formatting rather than ``json.dumps``
of :func:`~kafkadump.report.records.record_object`: they are the hot path
of ``records --json``; a test holds the two equal.
"""

from __future__ import annotations

import binascii
import functools
import json
from collections.abc import Generator, Iterable, Iterator, Sequence
from json.encoder import encode_basestring as _json_str
from typing import TYPE_CHECKING, TextIO

from ..accel import compiled
from ..decode.batch import RecordStream
from ..decode.model import STREAM_RECORDS, Batch, Gap, Record, RecordSource, record_chunks
from ..payloads.header_names import SCHEMA_ID_HEADERS
from ..report.records import (
    CONTROL_BYTES,
    DEFAULT_ENCODING,
    ENCODERS,
    PLAIN_FRAMING,
    Place,
    findings_list,
    framing_object,
    item_object,
    place_of_file,
    record_object,
    side_object,
    sighting_object,
)
from ..report.records import (
    as_text as _as_text,
)
from .jsontext import dumps as _dumps_text
from .jsontext import escape_unsafe as _escape_unsafe

if TYPE_CHECKING:
    from ..internal_topics.decoded import DecodedRecord
    from ..payloads.model import Framing
    from ..payloads.view import PayloadSide, RecordView
    from ..segment_report import CrcTotals, FileStart, RecordsOf

_dumps = functools.partial(json.dumps, separators=(",", ":"))  # the one JSON style (jsontext.SEPARATORS)
_control_bytes = CONTROL_BYTES.search
_Q = '"'
_b64 = binascii.b2a_base64
_PLAIN = json.dumps(PLAIN_FRAMING, separators=(",", ":"))  # keyPayload/valuePayload of unframed bytes
_PAYLOADS = ',"keyPayload":'  # where the payload fields start: the last fields of a record line
_PLAIN_END = ',"valuePayload":' + _PLAIN + "}\n"  # a line's end after keyPayload, for an unframed value
_NULL_END = ',"valuePayload":null}\n'
_ONE = b"\x01"  # bytes >= _ONE: not empty, the first byte not the magic byte 0 (one comparison)


def _framing_json(data: bytes | None, headers: Sequence[tuple[str, bytes | None]], which: str,
                  control: object = None) -> str:
    """``framing_object`` as JSON text (the common cases without a call: null, unframed bytes)."""
    if data is None or control is not None:
        return "null"
    if (not data or data[0]) and not headers:
        return _PLAIN
    o = framing_object(data, headers, which, control)
    return _dumps(o, separators=(",", ":"))




# in the headers' JSON of a record whose header names a schema (the JSON of a header's value never
# holds it: a quote in it is escaped): a cheap test before _names_schema's
_SCHEMA_HEADER_HINT = '_schema_id","value":'


def _names_schema(headers: list[tuple[str, bytes | None]]) -> bool:
    """Whether a header names the key's or value's schema (else the headers change no framing)."""
    for k, _ in headers:
        if k in SCHEMA_ID_HEADERS:
            return True
    return False


def _fj_end(v: bytes) -> str:
    """A line's end after keyPayload, for a value with magic byte 0 and no header naming a schema."""
    return ',"valuePayload":' + _framing_json(v, (), "value") + "}\n"


def _payload_fields(r: Record) -> str:
    """``,"keyPayload":...,"valuePayload":...`` of a record without the payload options."""
    hs = r.headers if r.headers and _names_schema(r.headers) else ()
    return (_PAYLOADS + _framing_json(r.key, hs, "key", r.control)
            + ',"valuePayload":' + _framing_json(r.value, hs, "value", r.control))


def item_line(item: Batch | Gap) -> str:
    """A batch or gap as its JSON line (no newline)."""
    if type(item) is Batch and item.magic >= 2:
        return batch_line(item)
    return _dumps(item_object(item))


_JSON_CONST = {None: "null", True: "true", False: "false"}


def _scalar(v: int | bool | None) -> str:
    """An int, a bool or None as json.dumps writes it."""
    return _JSON_CONST[v] if v is None or v is True or v is False else str(v)


@functools.lru_cache(maxsize=256)
def batch_head_json(name: str) -> str:
    """A batch line's ``file``, ``topic`` and ``partition`` values, as they follow ``"file":``."""
    where = place_of_file(name)
    return f'{_dumps(name)},"topic":{_dumps(where.topic)},"partition":{_dumps(where.partition)}'


def batch_line(b: Batch) -> str:
    """``json.dumps(batch_object(b))`` for a v2 batch, built without the dict (the hot path of
    ``batches --json``); a test holds the two equal.  The 13 header fields are ints (a v2
    batch is only made by the header decoder).  A batch without findings is written by the
    compiled twin when there is one (:func:`python_batch_line` is the reference)."""
    if _BATCH_HOT is not None:
        line = _BATCH_HOT.batch_json(b, batch_head_json(b.file))
        if line is not None:
            return line
    return python_batch_line(b)


def python_batch_line(b: Batch) -> str:
    """:func:`batch_line` by the pure-Python code (the reference of the compiled twin)."""
    dsize = "" if b.decompressed_size is None else f'"decompressedSize":{b.decompressed_size},'
    findings = _dumps(findings_list(b.findings)) if b.findings else "[]"
    tst = b.timestamp_type
    a = b.attributes
    return (f'{{"type":"batch","file":{batch_head_json(b.file)},"position":{b.position},"size":{b.size},'
            f'"baseOffset":{b.base_offset},"batchLength":{b.batch_length},'
            f'"partitionLeaderEpoch":{b.partition_leader_epoch},"magic":{b.magic},'
            f'"crc":{b.crc},"attributes":{a},"lastOffsetDelta":{b.last_offset_delta},'
            f'"baseTimestamp":{b.base_timestamp},"maxTimestamp":{b.max_timestamp},'
            f'"producerId":{b.producer_id},"producerEpoch":{b.producer_epoch},'
            f'"baseSequence":{b.base_sequence},"recordCount":{b.record_count},'
            f'"lastOffset":{_scalar(b.last_offset)},"lastSequence":{_scalar(b.last_sequence)},'
            f'"compression":{_dumps(b.compression)},"timestampType":{"null" if tst is None else _dumps(tst)},'
            f'"isTransactional":{"true" if a & 0x10 else "false"},'
            f'"isControlBatch":{"true" if a & 0x20 else "false"},'
            f'"hasDeleteHorizonMs":{"true" if a & 0x40 else "false"},"crcValid":{_scalar(b.crc_valid)},'
            f'"computedCrc":{_scalar(b.computed_crc)},{dsize}"findings":{findings}}}')


def _base64_json(b: bytes) -> str:
    return '"' + _b64(b, newline=False).decode("ascii") + '"'


def _hex_json(b: bytes) -> str:
    return '"' + b.hex() + '"'


def _text_json(b: bytes) -> str:
    return _dumps_text(b.decode("utf-8", "replace"))


def _auto_json(b: bytes) -> str:
    """``encode_auto`` as JSON text: a string when ``b`` is text, else ``{"base64": ...}``."""
    if b.isascii() and not _control_bytes(b):  # the common case, inline
        return _json_str(b.decode("ascii"))
    s = _as_text(b)
    if s is None:
        return '{"base64":"' + _b64(b, newline=False).decode("ascii") + '"}'
    return _json_str(s) if s.isascii() else _escape_unsafe(_json_str(s))


# a non-null byte field as JSON text, per --encoding (null is written by the caller)
VALUE_JSON = {"auto": _auto_json, "base64": _base64_json, "hex": _hex_json, "text": _text_json}

# the compiled twins of batch_lines' loop (and of the stream writer's) and of batch_line (None: pure Python;
# see kafkadump.accel); the first writes the encodings it knows itself (ASCII text under auto, base64, hex)
# and calls VALUE_JSON for the rest
_HOT = compiled("recordlines", Record)
_BATCH_HOT = compiled("batchlines", batch_class=Batch)
_COMPILED_MODES = {"auto": 0, "base64": 1, "hex": 2}
_CALL_MODE = 3


class RecordLines:
    """Formats record lines for one encoding; reuse across a whole run.

    ``place`` (where the records belong, :class:`~kafkadump.report.records.Place`)
    defaults to what the batch's file name says, as in ``record_object``.
    """

    def __init__(self, encoding: str = DEFAULT_ENCODING) -> None:
        self.encoding = encoding
        self.enc = ENCODERS[encoding]
        self._val_json = VALUE_JSON[encoding]
        self._for: tuple[str, Place | None] | None = None
        self._head = ""   # '{"type":"record","file":...,"topic":...,"partition":...,'
        self._sight = ""  # a capture's sighting fields
        self._framings: dict[Framing, str] = {}  # keyPayload/valuePayload JSON of a framing without schema
        # batch_lines by the compiled loop: it writes exactly the fields of record_object listed in
        # batch_lines (plus the per-run _head and _sight, and keyPayload/valuePayload); an option that adds or changes record
        # fields must set this False so that its lines come from the Python code
        self.compiled = _HOT is not None
        self._mode = _COMPILED_MODES.get(encoding, _CALL_MODE)

    def _val(self, b: bytes | None) -> str:
        return "null" if b is None else self._val_json(b)

    def _headers(self, headers: Iterable[tuple[str, bytes | None]]) -> str:
        val = self._val
        return "[" + ",".join('{"key":' + _dumps(k) + ',"value":' + val(v) + "}" for k, v in headers) + "]"

    def _place(self, b: Batch, place: Place | None) -> None:
        """The per-file and per-place parts of the lines, formatted once for a run of them."""
        key = (b.file, place)
        if key == self._for:
            return
        self._for = key
        where = place_of_file(b.file) if place is None else place
        self._head = (f'{{"type":"record","file":{_dumps(b.file)},"topic":{_dumps(where.topic)},'
                      f'"partition":{_dumps(where.partition)},')
        self._sight = "" if where.sighting is None else \
            "," + _dumps(sighting_object(where.sighting), separators=(",", ":"))[1:-1]

    def line(self, r: Record, b: Batch, place: Place | None = None, payloads: str | None = None) -> str:
        """A record's line (no newline); ``payloads``: its ``,"keyPayload":...,"valuePayload":...``
        when the payload options made them (else the cheap default of ``record_object``)."""
        self._place(b, place)
        val = self._val
        headers = self._headers(r.headers) if r.headers else "[]"
        ts = r.timestamp
        tst = r.timestamp_type
        extra = ""
        if r.magic < 2:
            extra = f',"magic":{r.magic},"crc":{r.crc},"crcValid":{"true" if r.crc == r.computed_crc else "false"}'
        control = "null" if r.control is None else _dumps(r.control)
        return (
            f'{self._head}"batchPosition":{b.position},'
            f'"offset":{r.offset},"timestamp":{"null" if ts is None else ts},'
            f'"timestampType":{"null" if tst is None else chr(34) + tst + chr(34)},'
            f'"key":{val(r.key)},"value":{val(r.value)},"headers":{headers},'
            f'"offsetDelta":{"null" if r.offset_delta is None else r.offset_delta},'
            f'"timestampDelta":{"null" if r.timestamp_delta is None else r.timestamp_delta},'
            f'"control":{control}{extra}{self._sight}{_payload_fields(r) if payloads is None else payloads}}}'
        )

    def batch_lines(self, b: Batch, recs: Sequence[Record], place: Place | None = None) -> str:
        """All of ``recs`` (records of ``b``) as newline-terminated lines: the hot path.

        Same output as :meth:`line` per record; per-batch constants are
        formatted once and the common case (no headers, not control, v2) is
        inlined.
        """
        if not recs:
            return ""
        if b.magic < 2 or b.is_control:
            return "\n".join([self.line(r, b, place) for r in recs]) + "\n"
        self._place(b, place)
        hdrs = self._headers
        tst = recs[0].timestamp_type
        prefix = f'{self._head}"batchPosition":{b.position},"offset":'
        mid_ts = f',"timestampType":"{tst}","key":'
        tail = ',"control":null' + self._sight + _PAYLOADS
        if self.compiled and _HOT is not None and type(recs) is list:
            text = _HOT.format_lines(recs, prefix, mid_ts, tail, self._mode, self._val_json, _dumps)
            if text is not None:  # None: something not plain; the loop below writes it
                return text
        out: list[str] = []
        append = out.append
        _fj = _framing_json
        if self.encoding == "base64":
            # the benchmarked case: base64 inline, no per-field Python call
            b64 = _b64
            for r in recs:
                k = r.key
                v = r.value
                hs = r.headers
                hj = hdrs(hs) if hs else "[]"
                if _SCHEMA_HEADER_HINT in hj and _names_schema(hs):
                    append(self.line(r, b, place) + "\n")
                    continue
                append(f'{prefix}{r.offset},"timestamp":{r.timestamp}{mid_ts}'
                       f'{"null" if k is None else _Q + b64(k, newline=False).decode() + _Q},'
                       f'"value":{"null" if v is None else _Q + b64(v, newline=False).decode() + _Q},'
                       f'"headers":{hj},"offsetDelta":{r.offset_delta},"timestampDelta":{r.timestamp_delta}{tail}'
                       f'{"null" if k is None else _PLAIN if k >= _ONE else _fj(k, (), "key")}'
                       f'{_NULL_END if v is None else _PLAIN_END if v >= _ONE else _fj_end(v)}')
            return "".join(out)
        val = self._val_json
        for r in recs:
            k = r.key
            v = r.value
            hs = r.headers
            hj = hdrs(hs) if hs else "[]"
            if _SCHEMA_HEADER_HINT in hj and _names_schema(hs):
                append(self.line(r, b, place) + "\n")
                continue
            append(f'{prefix}{r.offset},"timestamp":{r.timestamp}{mid_ts}'
                   f'{"null" if k is None else val(k)},'
                   f'"value":{"null" if v is None else val(v)},'
                   f'"headers":{hj},"offsetDelta":{r.offset_delta},"timestampDelta":{r.timestamp_delta}{tail}'
                   f'{"null" if k is None else _PLAIN if k >= _ONE else _fj(k, (), "key")}'
                   f'{_NULL_END if v is None else _PLAIN_END if v >= _ONE else _fj_end(v)}')
        return "".join(out)

    def view_line(self, r: Record, b: Batch, view: RecordView, place: Place | None = None) -> str:
        """A record with what the payload options made of it (``view``): ``record_object`` with
        ``keyPayload``/``valuePayload`` and redacted byte fields.  Without redaction the record's
        own fields are the fast :meth:`line`, the payload fields appended (they come last in
        ``record_object`` too)."""
        if view.hides_bytes("key") or view.hides_bytes("value") or view.redaction.headers:
            return _dumps_text(record_object(r, b, self.enc, place, view), separators=(",", ":"))
        if not view.detected:
            return self.line(r, b, place)
        return self.line(r, b, place, _PAYLOADS + self._payload_json(view.key)
                         + ',"valuePayload":' + self._payload_json(view.value))

    def view_lines(self, b: Batch, recs: Sequence[Record], views: Sequence[RecordView],
                   place: Place | None = None) -> str:
        """``recs`` with their ``views`` as newline-terminated lines, as :meth:`view_line` writes
        them; without redaction the record fields come from :meth:`batch_lines` (the fast path)."""
        if not recs:
            return ""
        if any(v.redaction.active or v.hides_bytes("key") or v.hides_bytes("value") for v in views):
            return "".join(self.view_line(r, b, v, place) + "\n" for r, v in zip(recs, views))
        lines = self.batch_lines(b, recs, place)
        if not views[0].detected:
            return lines
        pj = self._payload_json
        return "".join(line[:line.rindex(_PAYLOADS)] + _PAYLOADS + pj(v.key) + ',"valuePayload":' + pj(v.value)
                       + "}\n" for line, v in zip(lines.split("\n"), views))

    def _payload_json(self, side: PayloadSide | None) -> str:
        """A ``keyPayload``/``valuePayload`` object as JSON; the common ones (no schema: the
        framing alone says everything) formatted once per framing."""
        if side is None:
            return "null"
        if side.schema is None and side.decoded is None:
            text = self._framings.get(side.framing)
            if text is None:
                if len(self._framings) > 4096:
                    self._framings.clear()
                text = self._framings[side.framing] = _dumps(side_object(side, False), separators=(",", ":"))
            return text
        return _dumps_text(side_object(side, False), separators=(",", ":"))

    def record_text(self, b: Batch, records: Sequence[Record] | RecordSource,
                    place: Place | None = None) -> Iterator[str]:
        """All of ``records`` (records of ``b``: a list or a stream) as newline-terminated lines,
        a bounded run at a time: :meth:`batch_lines` of each run.

        A plain stream (:class:`~kafkadump.decode.batch.RecordStream`, unfiltered, of a v2
        batch that is not a control batch) goes to the compiled loop, which writes the lines
        straight from the records' bytes (the same lines; a test holds them equal)."""
        if self.compiled and _HOT is not None and type(records) is RecordStream and records.keep is None \
                and b.magic >= 2 and not b.is_control:
            done = yield from self._compiled_stream(b, records, place)
            if done is None:
                return
        else:
            done = 0
        for chunk in record_chunks(records, b.payload_bytes):
            if done >= len(chunk):
                done -= len(chunk)
                continue
            yield self.batch_lines(b, chunk[done:], place)
            done = 0

    def _compiled_stream(self, b: Batch, records: RecordStream, place: Place | None
                         ) -> Generator[str, None, int | None]:
        """The lines of a plain stream by the compiled loop; None when all are written, else how
        many were (the rest is handed back)."""
        assert _HOT is not None
        self._place(b, place)
        prefix = f'{self._head}"batchPosition":{b.position},"offset":'
        mid_ts = f',"timestampType":"{b.timestamp_type}","key":'
        tail = ',"control":null' + self._sight + _PAYLOADS
        log_append = (b.attributes & 0x08) != 0
        pos, done = records.start, 0
        while pos < records.stop:
            got = _HOT.format_run(records.data, pos, records.stop, STREAM_RECORDS, b.base_offset, b.base_timestamp,
                                  b.max_timestamp, log_append, prefix, mid_ts, tail, self._mode, self._val_json,
                                  _dumps)
            if got is None:
                return done
            text, pos, n = got
            done += n
            yield text
        return None

    def decoded_line(self, r: Record, b: Batch, dec: DecodedRecord, place: Place | None = None) -> str:
        """A record of an internal topic with its key and value decoded (``dec``, a
        :class:`kafkadump.internal_topics.DecodedRecord`): the same fields as :meth:`line`,
        ``key``/``value`` as objects, plus ``decoded``, ``tombstone``, ``findings``
        (see :mod:`kafkadump.render.internal_records`)."""
        from .internal_records import record_dict

        return _dumps_text(record_dict(record_object(r, b, self.enc, place), dec, self.enc), separators=(",", ":"))


__all__ = ["item_line", "batch_line", "RecordLines"]


# --- whole reports (items from kafkadump.segment_report) ------------------------------------------------

def write_batch_report(items: Iterable[FileStart | Batch | Gap], out: TextIO,
                       encoding: str = DEFAULT_ENCODING) -> None:
    """``batches --json``: a line per batch or gap."""
    from ..segment_report import FileStart

    write = out.write
    for item in items:
        if not isinstance(item, FileStart):
            write(item_line(item) + "\n")


def write_record_report(items: Iterable[FileStart | Gap | RecordsOf], out: TextIO,
                        encoding: str = DEFAULT_ENCODING) -> None:
    """``records --json``: a line per kept record; damage (gaps, a batch's findings) in the same stream."""
    from ..report.records import findings_object, gap_object
    from ..segment_report import FileStart

    lines = RecordLines(encoding)
    write = out.write
    for item in items:
        if isinstance(item, FileStart):
            continue
        if isinstance(item, Gap):
            write(_dumps(gap_object(item)) + "\n")
            continue
        b = item.batch
        if b.findings:
            write(_dumps(findings_object(b)) + "\n")
        if not item.records:
            continue
        if item.views is not None:
            # payload options: each record from its object (framing, decoded payloads, redaction)
            write(lines.view_lines(b, item.records, item.views))
        elif item.decoded is None:
            # a stream of many records, or of large ones: a run at a time
            for text in lines.record_text(b, item.records):
                write(text)
        else:
            write("".join(lines.decoded_line(r, b, dr) + "\n" for r, dr in zip(item.records, item.decoded)))


def write_crc_report(items: Iterable[FileStart | Batch | Gap | CrcTotals], out: TextIO,
                     encoding: str = DEFAULT_ENCODING) -> None:
    """``verify-crc --json``: a line per bad batch, message or gap, then the summary object."""
    from ..report.records import crc_summary_object
    from ..segment_report import CrcTotals, FileStart

    for item in items:
        if isinstance(item, FileStart):
            continue
        if isinstance(item, CrcTotals):
            out.write(_dumps(crc_summary_object(item.files, item.batches, item.bytes, item.bad, item.findings,
                                                item.valid)) + "\n")
        else:
            out.write(item_line(item) + "\n")
