"""``--format blocks``: a batch or a record per block, every value whole (as ``kcat`` and ``tshark -V`` do).

For a terminal too narrow for the table's columns: each record is a block of ``name: value``
lines, its key, value and headers never cut (a line longer than the terminal folds between
words under its name); findings follow the block they belong to.  The cells are the table's
(:func:`.table.record_cells`, :func:`.table.batch_cells`), shown whole; nothing is decoded here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

from kafkadump.render.generated_cells import RECORD_CELL_INDEX
from kafkadump.render.lines import LineWriter
from kafkadump.render.table import (
    BATCH_COLUMNS,
    WHOLE,
    batch_cells,
    batch_style,
    decoded_record_cells,
    findings_lines,
    gap_cells,
    record_cells,
)

if TYPE_CHECKING:
    from rich.console import Console

    from kafkadump.decoders.batches.model import Batch, Gap
    from kafkadump.render.table import TableLayout
    from kafkadump.reports.segments import CrcTotals, FileStart, RecordsOf

# a record block's lines after its first two: the other cells of record_cells (the field registry's
# table columns), by name
_CELL = RECORD_CELL_INDEX
_RECORD_FIELDS = tuple((i, title) for title, i in _CELL.items() if title not in ("offset", "timestamp", "Δoff", "Δts"))


def write_batch_report(items: Iterable[FileStart | Batch | Gap], out: TextIO, console: Console | None = None,
                       layout: TableLayout | None = None) -> None:
    """``batches --format blocks``: a block per batch, a line per header field."""
    from kafkadump.decoders.batches.model import Gap
    from kafkadump.reports.segments import FileStart

    w = LineWriter(out, console)
    for item in items:
        if isinstance(item, FileStart):
            w.line(f"== {item.path}", "bold")
            continue
        cells = gap_cells(item) if isinstance(item, Gap) else batch_cells(item)
        style = "red" if isinstance(item, Gap) else batch_style(item)
        w.line(f"batch at position {cells[0]}", style or "bold")
        for column, cell in zip(BATCH_COLUMNS[1:], cells[1:]):
            w.line(f"  {column.title}: {cell}", style)
        for line in findings_lines(item):
            w.line(line, "red" if isinstance(item, Gap) else "yellow")
        w.line("")


def write_record_report(items: Iterable[FileStart | Gap | RecordsOf], out: TextIO, console: Console | None = None,
                        layout: TableLayout | None = None) -> None:
    """``records --format blocks``: a block per kept record (its batch's findings before it)."""
    from kafkadump.decoders.batches.model import Gap
    from kafkadump.reports.segments import FileStart

    w = LineWriter(out, console)
    for item in items:
        if isinstance(item, FileStart):
            w.line(f"== {item.path}", "bold")
            continue
        batch = item if isinstance(item, Gap) else item.batch
        for line in findings_lines(batch):
            w.line(f"batch at position {batch.position}:" + line, "red")
        if isinstance(item, Gap):
            continue
        if item.decoded is not None:
            for r, dr in zip(item.records, item.decoded):
                offset, timestamp, summary = decoded_record_cells(r, dr)
                w.line(f"offset {offset}  {timestamp}", "bold")
                w.line(f"  record: {summary}", "yellow" if dr.findings else None)
                for line in findings_lines(dr):
                    w.line(line, "yellow")
                w.line("")
            continue
        views = item.views if item.views is not None else [None] * len(item.records)
        for r, v in zip(item.records, views):
            cells = record_cells(r, v, WHOLE, WHOLE)
            control = " (control)" if r.control is not None else ""
            w.line(f"offset {cells[_CELL['offset']]}  {cells[_CELL['timestamp']]}{control}", "bold")
            w.line(f"  batch: position {item.batch.position}, offsetDelta {cells[_CELL['Δoff']]}, "
                   f"timestampDelta {cells[_CELL['Δts']]}")
            for index, name in _RECORD_FIELDS:
                if cells[index] != "":
                    w.line(f"  {name}: {cells[index]}", "cyan" if control else None)
            w.line("")


def write_crc_report(items: Iterable[FileStart | Batch | Gap | CrcTotals], out: TextIO,
                     console: Console | None = None) -> None:
    """``verify-crc --format blocks``: its lines are whole already (the table's writer)."""
    from kafkadump.render.table import write_crc_report as lines

    lines(items, out, console)


__all__ = ["write_batch_report", "write_record_report", "write_crc_report"]
