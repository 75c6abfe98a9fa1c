"""JSON Lines: the objects of :mod:`kafkadump.objects.records`, one per line.

Every line is valid JSON whatever the input bytes: byte fields are encoded
per ``--encoding`` (auto, the default, is text or ``{"base64": ...}``; base64 and
hex are lossless; text replaces invalid UTF-8 with U+FFFD), null stays null,
and strings taken from the input are escaped (:mod:`kafkadump.render.jsontext`).

Record lines are built with string formatting rather than ``json.dumps``
of :func:`~kafkadump.objects.records.record_object`: they are the hot path
of ``records --json``; a test holds the two equal.
"""

from __future__ import annotations

import binascii
import functools
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from json.encoder import encode_basestring as _json_str
from types import ModuleType
from typing import TYPE_CHECKING, Any, TextIO

from kafkadump.accel import compiled
from kafkadump.decoders.batches.batch import RecordStream
from kafkadump.decoders.batches.model import (
    STREAM_RECORDS,
    TIMESTAMP_TYPES,
    Batch,
    Gap,
    PlainRun,
    Record,
    RecordSource,
    record_chunks,
)
from kafkadump.decoders.batches.walk import run_batches, run_records
from kafkadump.objects.records import (
    CONTROL_BYTES,
    DEFAULT_ENCODING,
    ENCODERS,
    Place,
    findings_list,
    item_object,
    place_of_file,
    record_object,
    side_object,
    sighting_object,
)
from kafkadump.objects.records import (
    as_text as _as_text,
)
from kafkadump.render import generated_lines
from kafkadump.render.jsontext import dumps as _dumps_text
from kafkadump.render.jsontext import escape_unsafe as _escape_unsafe
from kafkadump.render.payload_fields import PAYLOADS, payload_fields

if TYPE_CHECKING:
    from kafkadump.decoders.internal_topics.decoded import DecodedRecord
    from kafkadump.decoders.payloads.model import Framing
    from kafkadump.decoders.payloads.view import PayloadSide, RecordView
    from kafkadump.reports.segments import CrcTotals, FileStart, RecordsOf

# the one JSON style of every command (jsontext.dumps): no space after a separator, non-ASCII text
# (a file, topic or header name) written as it is, the unsafe characters escaped
_dumps = _dumps_text
_control_bytes = CONTROL_BYTES.search
_Q = '"'
_b64 = binascii.b2a_base64


_NAMES_JSON: dict[str, str] = {}


def _name_json(v: object) -> str:
    """``jsontext.dumps(v)``, a name's text (a timestamp type, a kind) made once."""
    if type(v) is str:
        text = _NAMES_JSON.get(v)
        if text is None:
            text = _dumps_text(v)
            if len(_NAMES_JSON) < 64:
                _NAMES_JSON[v] = text
        return text
    return _dumps_text(v)


def _no_headers(headers: object) -> str:  # pragma: no cover - decoded lines with headers go the other way
    raise AssertionError("a record with headers")


def item_line(item: Batch | Gap) -> str:
    """A batch or gap as its JSON line (no newline)."""
    if type(item) is Batch and item.magic >= 2:
        return batch_line(item)
    return _dumps(item_object(item))


def run_batch_lines(run: PlainRun) -> str:
    """The lines of the batches of a window of plain batches (newline-terminated), by the compiled
    writer when there is one (:func:`python_run_batch_lines` is the reference)."""
    hot = _batch_hot()
    if hot is not None:
        text = hot.window_batch_lines(run.data, run.position - run.base, run.position - run.base + run.size,
                                      run.base, batch_head_json(run.file))
        if text is not None:
            return text
    return python_run_batch_lines(run)


def python_run_batch_lines(run: PlainRun) -> str:
    """:func:`run_batch_lines` by the pure-Python code: each batch decoded and written alone."""
    return "".join(item_line(b) + "\n" for b in run_batches(run))


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
    hot = _batch_hot()
    if hot is not None:
        line = hot.batch_json(b, batch_head_json(b.file))
        if line is not None:
            return line
    return python_batch_line(b)


def python_batch_line(b: Batch) -> str:
    """:func:`batch_line` by the pure-Python code (the reference of the compiled twin)."""
    return generated_lines.v2_batch_line(b, batch_head_json(b.file), _dumps)


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
# see kafkadump.accel), each loaded when first used (_record_hot, _batch_hot: batches --json does not load
# the record writer, records --json not the batch writer); the first writes the encodings it knows itself
# (ASCII text under auto, base64, hex) and calls VALUE_JSON for the rest
_UNLOADED: Any = object()
_HOT: ModuleType | None = _UNLOADED
_BATCH_HOT: ModuleType | None = _UNLOADED


def _record_hot() -> ModuleType | None:
    global _HOT
    if _HOT is _UNLOADED:
        _HOT = compiled("recordlines", Record)
    return _HOT


def _batch_hot() -> ModuleType | None:
    global _BATCH_HOT
    if _BATCH_HOT is _UNLOADED:
        _BATCH_HOT = compiled("batchlines", batch_class=Batch)
    return _BATCH_HOT


_COMPILED_MODES = {"auto": 0, "base64": 1, "hex": 2}
_CALL_MODE = 3


class RecordLines:
    """Formats record lines for one encoding; reuse across a whole run.

    ``place`` (where the records belong, :class:`~kafkadump.objects.records.Place`)
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
        self.compiled = _record_hot() is not None
        self._run_segs: tuple[str, tuple[str, ...], tuple[str, ...], str] | None = None  # (file, the segs ...)
        self._mode = _COMPILED_MODES.get(encoding, _CALL_MODE)
        self._decoded_for: str | None = None   # the file of _decoded_head: the head of decoded lines
        self._decoded_head = ""
        self._part_text: Callable[..., str] | None = None   # decoded_json.part_text, from the first decoded line

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
        self._head = generated_lines.record_head(b, where, _dumps)
        self._sight = "" if where.sighting is None else \
            "," + _dumps(sighting_object(where.sighting), separators=(",", ":"))[1:-1]

    def line(self, r: Record, b: Batch, place: Place | None = None, payloads: str | None = None) -> str:
        """A record's line (no newline); ``payloads``: its ``,"keyPayload":...,"valuePayload":...``
        when the payload options made them (else the cheap default of ``record_object``)."""
        self._place(b, place)
        return (generated_lines.record_line(r, b, self._head, self._val, self._headers, _dumps) + self._sight
                + (payload_fields(r) if payloads is None else payloads) + "}")

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
        segs = generated_lines.plain_segments(self._head, b, recs[0].timestamp_type, self._sight)
        if self.compiled and _HOT is not None and type(recs) is list:
            text = _HOT.format_lines(recs, segs, self._mode, self._val_json, _dumps)
            if text is not None:  # None: something not plain; the loop below writes it
                return text
        return generated_lines.plain_lines(recs, segs, self._val_json, self._headers,
                                       lambda r: self.line(r, b, place) + "\n")

    def view_line(self, r: Record, b: Batch, view: RecordView, place: Place | None = None) -> str:
        """A record with what the payload options made of it (``view``): ``record_object`` with
        ``keyPayload``/``valuePayload`` and redacted byte fields.  Without redaction the record's
        own fields are the fast :meth:`line`, the payload fields appended (they come last in
        ``record_object`` too)."""
        if view.hides_bytes("key") or view.hides_bytes("value") or view.redaction.headers:
            return _dumps_text(record_object(r, b, self.enc, place, view), separators=(",", ":"))
        if not view.detected:
            return self.line(r, b, place)
        return self.line(r, b, place, PAYLOADS + self._payload_json(view.key)
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
        return "".join(line[:line.rindex(PAYLOADS)] + PAYLOADS + pj(v.key) + ',"valuePayload":' + pj(v.value)
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

        A plain stream (:class:`~kafkadump.decoders.batches.batch.RecordStream`, unfiltered, of a v2
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
        segs = generated_lines.plain_segments(self._head, b, b.timestamp_type, self._sight)
        log_append = (b.attributes & 0x08) != 0
        pos, done = records.start, 0
        while pos < records.stop:
            got = _HOT.format_run(records.data, pos, records.stop, STREAM_RECORDS, b.base_offset, b.base_timestamp,
                                  b.max_timestamp, log_append, segs, self._mode, self._val_json, _dumps)
            if got is None:
                return done
            text, pos, n = got
            done += n
            yield text
        return None

    def run_text(self, run: PlainRun) -> str:
        """The lines of the records of a window of plain batches that its bounds keep (newline-terminated):
        by the compiled writer, straight from the bytes, when it can (:meth:`python_run_text` is the
        reference)."""
        segs = self._window_segments(run.file) if self.compiled and _HOT is not None else None
        if segs is not None:
            assert _HOT is not None
            start = run.position - run.base
            text = _HOT.window_record_lines(run.data, start, start + run.size, run.base, segs[1], segs[2], segs[3],
                                            self._mode, self._val_json, _dumps, run.bounds)
            if text is not None:
                return text
        return self.python_run_text(run)

    def python_run_text(self, run: PlainRun) -> str:
        """:meth:`run_text` by the pure-Python code: each batch decoded alone, its kept records written."""
        return "".join(text for b, kept in run_records(run) for text in self.record_text(b, kept))

    def _window_segments(self, file: str) -> tuple[str, tuple[str, ...], tuple[str, ...], str] | None:
        """:func:`generated_lines.plain_segments` of ``file``'s batches of each timestamp type, the first
        segment cut where the batch's position goes (and what follows it), for the window writer; None
        when the segments do not have the position in one place (the pure path then writes)."""
        if self._run_segs is not None and self._run_segs[0] == file:
            return self._run_segs
        marker = -8_070_450_532_247_928_832  # (a position no batch has)
        probe = Batch(file, marker, 0, 2)
        probe.attributes = 0
        self._place(probe, None)
        both = []
        for tst in TIMESTAMP_TYPES:
            segs = generated_lines.plain_segments(self._head, probe, tst, self._sight)
            cut = segs[0].split(str(marker))
            if len(cut) != 2 or any(str(marker) in s for s in segs[1:]):
                return None
            both.append((cut[0], *segs[1:]))
        self._run_segs = (file, both[0], both[1], cut[1])
        return self._run_segs

    def decoded_line(self, r: Record, b: Batch, dec: DecodedRecord, place: Place | None = None) -> str:
        """A record of an internal topic with its key and value decoded (``dec``, a
        :class:`kafkadump.decoders.internal_topics.DecodedRecord`): the same fields as :meth:`line`,
        ``key``/``value`` as objects, plus ``decoded``, ``tombstone``, ``findings``
        (see :mod:`kafkadump.render.internal_records`)."""
        if place is None and not r.headers and (dec.key is None) == (r.key is None) \
                and (dec.value is None) == (r.value is None):
            return self._decoded_line(r, b, dec)
        from kafkadump.render.internal_records import record_dict

        return _dumps_text(record_dict(record_object(r, b, self.enc, place), dec, self.enc), separators=(",", ":"))

    def _decoded_line(self, r: Record, b: Batch, dec: DecodedRecord) -> str:
        """:meth:`decoded_line` of a record without headers, at its file's place: the record's fields
        by the one record writer (``generated_lines.record_line``, as :meth:`line` writes them), its
        key and value by the writers of their record types (:mod:`kafkadump.render.decoded_json`)."""
        part_text = self._part_text
        if part_text is None:
            from kafkadump.render.decoded_json import part_text as writer  # not at start-up: it reads the plans

            self._part_text = part_text = writer
        if b.file != self._decoded_for or not self._decoded_head:
            self._decoded_for = b.file
            self._decoded_head = generated_lines.record_head(b, place_of_file(b.file), _dumps_text)
        enc, ej = self.enc, self._val_json
        # record_line writes the key's text, then the value's, each where its bytes are not null (then
        # the part is not null either): handed to it in that order
        parts = iter([part_text(p, enc, ej) for p in (dec.key, dec.value) if p is not None]).__next__
        findings = dec.findings
        return (generated_lines.record_line(r, b, self._decoded_head, lambda _: parts(), _no_headers, _name_json)
                + payload_fields(r) + ',"decoded":' + _name_json(dec.kind)
                + (',"tombstone":true' if dec.tombstone else ',"tombstone":false')
                + (',"findings":[]}' if not findings else
                   ',"findings":' + _dumps_text(findings_list(findings)) + "}"))


__all__ = ["item_line", "batch_line", "run_batch_lines", "python_run_batch_lines", "RecordLines"]


# --- whole reports (items from kafkadump.reports.segments) ------------------------------------------------

def write_batch_report(items: Iterable[FileStart | Batch | Gap | PlainRun], out: TextIO,
                       encoding: str = DEFAULT_ENCODING) -> None:
    """``batches --json``: a line per batch or gap."""
    from kafkadump.reports.segments import FileStart

    write = out.write
    for item in items:
        if isinstance(item, PlainRun):
            write(run_batch_lines(item))
        elif not isinstance(item, FileStart):
            write(item_line(item) + "\n")


def write_record_report(items: Iterable[FileStart | Gap | RecordsOf | PlainRun], out: TextIO,
                        encoding: str = DEFAULT_ENCODING) -> None:
    """``records --json``: a line per kept record; damage (gaps, a batch's findings) in the same stream."""
    from kafkadump.objects.records import findings_object, gap_object
    from kafkadump.reports.segments import FileStart

    lines = RecordLines(encoding)
    write = out.write
    for item in items:
        if isinstance(item, FileStart):
            continue
        if isinstance(item, PlainRun):
            write(lines.run_text(item))
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
    from kafkadump.objects.records import crc_summary_object
    from kafkadump.reports.segments import CrcTotals, FileStart

    for item in items:
        if isinstance(item, FileStart):
            continue
        if isinstance(item, CrcTotals):
            out.write(_dumps(crc_summary_object(item.files, item.batches, item.bytes, item.bad, item.findings,
                                                item.valid)) + "\n")
        else:
            out.write(item_line(item) + "\n")
