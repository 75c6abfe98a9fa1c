"""Streaming tables: aligned rows printed as they are decoded.

A rich ``Table`` must hold every row before it renders (and renders about
3 000 rows/s), so a million-record listing cannot be one.  Instead the
columns have fixed widths chosen up front; each row is printed at once.
On a terminal rows are styled with rich (damage in red); when piped they
are plain text with no escape codes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from .. import describe as d
from ..decode.model import Batch, Gap, Record
from .lines import LineWriter, terminal_safe

if TYPE_CHECKING:
    from rich.console import Console

    from ..internal_topics.decoded import DecodedRecord
    from ..segment_report import CrcTotals, FileStart, RecordsOf


@dataclass(frozen=True)
class Column:
    title: str
    width: int
    right: bool = False


BATCH_COLUMNS = (
    Column("position", 10, True), Column("baseOffset", 11, True), Column("lastOffset", 11, True),
    Column("size", 7, True), Column("magic", 5, True), Column("codec", 6), Column("tsType", 13),
    Column("flags", 5), Column("producerId", 10, True), Column("epoch", 5, True), Column("seq", 10, True),
    Column("count", 6, True), Column("leaderEpoch", 11, True), Column("maxTimestamp", 24),
    Column("crc", 4),
)

RECORD_COLUMNS = (
    Column("offset", 11, True), Column("timestamp", 24), Column("Δoff", 5, True), Column("Δts", 7, True),
    Column("key", 24), Column("value", 40), Column("headers", 24),
)


# records of internal topics (--decode): the decoded record as one line of text
DECODED_COLUMNS = (
    Column("offset", 11, True), Column("timestamp", 24), Column("record", 0),
)


def _cell(text: str, col: Column) -> str:
    if col.width == 0:  # the last column: as wide as its text
        return text
    if len(text) > col.width and not col.right:
        text = text[: col.width - 1] + "…"
    return text.rjust(col.width) if col.right else text.ljust(col.width)


class TableStream(LineWriter):
    """Prints a header once, then rows as they come."""

    def __init__(self, out: TextIO, columns: Sequence[Column], console: Console | None = None) -> None:
        super().__init__(out, console)
        self.columns = columns
        self._header = False

    def header(self) -> None:
        if not self._header:
            self._header = True
            self.line("  ".join(_cell(c.title, c) for c in self.columns).rstrip(), "bold")

    def row(self, cells: Iterable[object], style: str | None = None) -> None:
        self.header()
        self.line("  ".join(_cell(str(v), c) for v, c in zip(cells, self.columns)).rstrip(), style)

    def note(self, text: str, style: str | None = None) -> None:
        self.line(text, style)


def batch_cells(b: Batch) -> list[object]:
    seq = "-" if b.base_sequence is None else (
        str(b.base_sequence) if b.base_sequence < 0 else f"{b.base_sequence}..{b.last_sequence}")
    return [
        b.position,
        "-" if b.base_offset is None else b.base_offset,
        "-" if b.last_offset is None else b.last_offset,
        b.size, b.magic, b.compression, b.timestamp_type or "-", d.flags(b),
        "-" if b.producer_id is None else b.producer_id,
        "-" if b.producer_epoch is None else b.producer_epoch,
        seq,
        "-" if b.record_count is None else b.record_count,
        "-" if b.partition_leader_epoch is None else b.partition_leader_epoch,
        d.iso_ms(b.max_timestamp if b.magic >= 2 else b.timestamp),
        d.crc_verdict(b.crc_valid),
    ]


def batch_style(b: Batch) -> str | None:
    if any(f.severity.value == "error" for f in b.findings):
        return "red"
    if b.findings:
        return "yellow"
    if b.is_control:
        return "cyan"
    return None


def findings_lines(item: Batch | Gap | DecodedRecord) -> list[str]:
    return [f"  ! {f.code.value} @{f.offset}"
            + (f" (+{f.source_offset} decompressed)" if f.source_offset is not None else "")
            + f": {f.message}" for f in item.findings]


def gap_line(g: Gap) -> str:
    return f"{g.position:>10}  {'':>11}  {'':>11}  {g.size:>7}  (not a batch)"


def record_cells(r: Record) -> list[object]:
    if r.control is not None:
        ctl = r.control
        value = f"<{ctl.get('type')}" + (f" coordinatorEpoch={ctl['coordinatorEpoch']}" if "coordinatorEpoch" in ctl else "") + ">"
        key = "<control>"
    else:
        key = d.preview(r.key, 24)
        value = d.preview(r.value, 40)
    headers = ",".join(f"{k}={d.preview(v, 12)}" for k, v in r.headers) if r.headers else ""
    return [
        r.offset, d.iso_ms(r.timestamp),
        "-" if r.offset_delta is None else r.offset_delta,
        "-" if r.timestamp_delta is None else r.timestamp_delta,
        key, value, headers,
    ]


def decoded_record_cells(r: Record, dec: DecodedRecord) -> list[object]:
    """offset, timestamp and the one-line summary of a decoded internal-topic record."""
    from .internal_records import summary

    return [r.offset, d.iso_ms(r.timestamp), summary(dec)]


def gap_cells(g: Gap) -> list[object]:
    return [g.position, "-", "-", g.size, "-", "-", "(not a batch)", "", "", "", "", "", "", "", "BAD"]


def verify_line(item: Batch | Gap) -> str:
    """One line per bad batch/message/gap for verify-crc."""
    if isinstance(item, Gap):
        codes = ",".join(sorted({f.code.value for f in item.findings}))
        return f"position: {item.position} size: {item.size} not-a-batch: {codes}"
    head = (f"position: {item.position} size: {item.size} magic: {item.magic} "
            f"baseOffset: {item.base_offset} lastOffset: {item.last_offset} "
            f"storedCrc: {item.crc} computedCrc: {item.computed_crc} crcValid: {str(item.crc_valid).lower()}")
    extra = "; ".join(f"{f.code.value}@{f.offset}: {f.message}" for f in item.findings
                      if f.code.value != "crc-mismatch")
    return head + (f"  [{extra}]" if extra else "")


# --- whole reports (items from kafkadump.segment_report) ------------------------------------------------

def write_batch_report(items: Iterable[FileStart | Batch | Gap], out: TextIO, console: Console | None = None) -> None:
    """``batches`` as a table: a header per file (named when there are several), a row per item."""
    from ..segment_report import FileStart

    t: TableStream | None = None
    for item in items:
        if isinstance(item, FileStart):
            t = TableStream(out, BATCH_COLUMNS, console)
            if item.files > 1:
                t.note(f"== {item.path}", "bold")
            continue
        assert t is not None, "a file's items come after its FileStart"
        if isinstance(item, Gap):
            t.row(gap_cells(item), "red")
            for line in findings_lines(item):
                t.note(line, "red")
        else:
            t.row(batch_cells(item), batch_style(item))
            for line in findings_lines(item):
                t.note(line, "yellow")


def write_record_report(items: Iterable[FileStart | Gap | RecordsOf], out: TextIO,
                        console: Console | None = None) -> None:
    """``records`` as a table: findings as notes, a row per kept record (decoded ones as one line)."""
    from ..segment_report import FileStart

    t: TableStream | None = None
    for item in items:
        if isinstance(item, FileStart):
            t = TableStream(out, DECODED_COLUMNS if item.decoded else RECORD_COLUMNS, console)
            if item.files > 1:
                t.note(f"== {item.path}", "bold")
            continue
        assert t is not None, "a file's items come after its FileStart"
        batch = item if isinstance(item, Gap) else item.batch
        for line in findings_lines(batch):
            t.note(f"{batch.position}:" + line, "red")
        if isinstance(item, Gap):
            continue
        if item.decoded is None:
            for r in item.records:
                t.row(record_cells(r), "cyan" if r.control is not None else None)
            continue
        for r, dr in zip(item.records, item.decoded):
            t.row(decoded_record_cells(r, dr), "yellow" if dr.findings else "cyan" if r.control is not None else None)
            for line in findings_lines(dr):
                t.note(line, "yellow")


def write_crc_report(items: Iterable[FileStart | Batch | Gap | CrcTotals], out: TextIO,
                     console: Console | None = None) -> None:
    """``verify-crc`` as text: a line per bad batch, message or gap, then the totals."""
    from ..segment_report import CrcTotals, FileStart

    for item in items:
        if isinstance(item, FileStart):
            continue
        if isinstance(item, CrcTotals):
            verdict = "all valid" if item.valid else f"{item.bad} bad"
            out.write(f"files: {item.files}  batches: {item.batches}  bytes: {item.bytes}  "
                      f"bad: {item.bad}  ({verdict})\n")
        else:
            out.write(terminal_safe(verify_line(item)) + "\n")
