"""JSON Lines: the objects of :mod:`kafkadump.report.records`, one per line.

Every line is valid JSON whatever the input bytes: byte fields are encoded
per ``--encoding`` (base64 and hex are lossless, text replaces invalid
UTF-8 with U+FFFD), null stays null, and strings taken from the input are
escaped (:mod:`kafkadump.render.jsontext`).

Record lines are built with string formatting rather than ``json.dumps``
of :func:`~kafkadump.report.records.record_object`: they are the hot path
of ``records --json``; a test holds the two equal.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TextIO

from ..decode.model import Batch, Gap, Record, record_chunks
from ..report.records import ENCODERS, item_object, record_object
from .jsontext import dumps as _dumps_text

if TYPE_CHECKING:
    from ..internal_topics.decoded import DecodedRecord
    from ..segment_report import CrcTotals, FileStart, RecordsOf

_dumps = json.dumps
_Q = '"'
_b64 = binascii.b2a_base64


def item_line(item: Batch | Gap) -> str:
    """A batch or gap as its JSON line (no newline)."""
    return _dumps(item_object(item))


class RecordLines:
    """Formats record lines for one encoding; reuse across a whole run."""

    def __init__(self, encoding: str = "base64") -> None:
        self.encoding = encoding
        self.enc = ENCODERS[encoding]
        self._file: str | None = None
        self._file_json = "null"
        # base64/hex output never needs JSON escaping; text does.
        self._escape = encoding == "text"

    def _val(self, b: bytes | None) -> str:
        if b is None:
            return "null"
        s = self.enc(b)
        return _dumps_text(s) if self._escape else '"' + s + '"'

    def _headers(self, headers: Iterable[tuple[str, bytes | None]]) -> str:
        val = self._val
        return "[" + ",".join('{"key":' + _dumps(k) + ',"value":' + val(v) + "}" for k, v in headers) + "]"

    def line(self, r: Record, b: Batch) -> str:
        if b.file is not self._file:
            self._file = b.file
            self._file_json = _dumps(b.file)
        val = self._val
        headers = self._headers(r.headers) if r.headers else "[]"
        ts = r.timestamp
        tst = r.timestamp_type
        extra = ""
        if r.magic < 2:
            extra = f',"magic":{r.magic},"crc":{r.crc},"crcValid":{"true" if r.crc == r.computed_crc else "false"}'
        control = "null" if r.control is None else _dumps(r.control)
        return (
            f'{{"type":"record","file":{self._file_json},"batchPosition":{b.position},'
            f'"offset":{r.offset},"timestamp":{"null" if ts is None else ts},'
            f'"timestampType":{"null" if tst is None else chr(34) + tst + chr(34)},'
            f'"key":{val(r.key)},"value":{val(r.value)},"headers":{headers},'
            f'"offsetDelta":{"null" if r.offset_delta is None else r.offset_delta},'
            f'"timestampDelta":{"null" if r.timestamp_delta is None else r.timestamp_delta},'
            f'"control":{control}{extra}}}'
        )

    def batch_lines(self, b: Batch, recs: Sequence[Record]) -> str:
        """All of ``recs`` (records of ``b``) as newline-terminated lines: the hot path.

        Same output as :meth:`line` per record; per-batch constants are
        formatted once and the common case (no headers, not control, v2) is
        inlined.
        """
        if not recs:
            return ""
        if b.magic < 2 or b.is_control or self._escape:
            return "\n".join([self.line(r, b) for r in recs]) + "\n"
        if b.file is not self._file:
            self._file = b.file
            self._file_json = _dumps(b.file)
        enc = self.enc
        hdrs = self._headers
        tst = recs[0].timestamp_type
        prefix = (f'{{"type":"record","file":{self._file_json},"batchPosition":{b.position},'
                  f'"offset":')
        mid_ts = f',"timestampType":"{tst}","key":'
        out: list[str] = []
        append = out.append
        if self.encoding == "base64":
            # the benchmarked case: base64 inline, no per-field Python call
            b64 = _b64
            for r in recs:
                k = r.key
                v = r.value
                append(f'{prefix}{r.offset},"timestamp":{r.timestamp}{mid_ts}'
                       f'{"null" if k is None else _Q + b64(k, newline=False).decode() + _Q},'
                       f'"value":{"null" if v is None else _Q + b64(v, newline=False).decode() + _Q},'
                       f'"headers":{hdrs(r.headers) if r.headers else "[]"},'
                       f'"offsetDelta":{r.offset_delta},"timestampDelta":{r.timestamp_delta},"control":null}}\n')
            return "".join(out)
        for r in recs:
            k = r.key
            v = r.value
            headers = hdrs(r.headers) if r.headers else "[]"
            append(f'{prefix}{r.offset},"timestamp":{r.timestamp}{mid_ts}'
                   f'{"null" if k is None else _Q + enc(k) + _Q},'
                   f'"value":{"null" if v is None else _Q + enc(v) + _Q},"headers":{headers},'
                   f'"offsetDelta":{r.offset_delta},"timestampDelta":{r.timestamp_delta},"control":null}}\n')
        return "".join(out)


    def decoded_line(self, r: Record, b: Batch, dec: DecodedRecord) -> str:
        """A record of an internal topic with its key and value decoded (``dec``, a
        :class:`kafkadump.internal_topics.DecodedRecord`): the same fields as :meth:`line`,
        ``key``/``value`` as objects, plus ``decoded``, ``tombstone``, ``findings``
        (see :mod:`kafkadump.render.internal_records`)."""
        from .internal_records import record_dict

        return _dumps_text(record_dict(record_object(r, b, self.enc), dec, self.enc), separators=(",", ":"))


__all__ = ["item_line", "RecordLines"]


# --- whole reports (items from kafkadump.segment_report) ------------------------------------------------

def write_batch_report(items: Iterable[FileStart | Batch | Gap], out: TextIO, encoding: str = "base64") -> None:
    """``batches --json``: a line per batch or gap."""
    from ..segment_report import FileStart

    write = out.write
    for item in items:
        if not isinstance(item, FileStart):
            write(item_line(item) + "\n")


def write_record_report(items: Iterable[FileStart | Gap | RecordsOf], out: TextIO,
                        encoding: str = "base64") -> None:
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
        if item.decoded is None:
            # a stream of many records, or of large ones: a run at a time
            for chunk in record_chunks(item.records, b.payload_bytes):
                write(lines.batch_lines(b, chunk))
        else:
            write("".join(lines.decoded_line(r, b, dr) + "\n" for r, dr in zip(item.records, item.decoded)))


def write_crc_report(items: Iterable[FileStart | Batch | Gap | CrcTotals], out: TextIO,
                     encoding: str = "base64") -> None:
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
