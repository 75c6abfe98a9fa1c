"""Renderers for log-dir files and carving: decoded objects in, text out (triage: :mod:`.triage`).

JSON objects use camelCase names (the spec's, where the spec names the
field) and the findings shape of ``batches --json``.  Tables are printed as
they go (:class:`~kafkadump.render.table.TableStream`) for entry dumps.
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

from kafkadump.decoders.batches.model import Gap
from kafkadump.decoders.logfiles import names
from kafkadump.decoders.logfiles.indexes import IndexEntry, TimeIndexEntry
from kafkadump.objects import logdir_file_objects as O
from kafkadump.objects.records import findings_list, item_object
from kafkadump.render import describe as d
from kafkadump.render.jsontext import dumps
from kafkadump.render.lines import LineWriter, terminal_safe
from kafkadump.render.table import Column, TableLayout, TableStream
from kafkadump.reports.dump import (
    BatchEvent,
    FileEvent,
    FindingsEvent,
    IndexEntryEvent,
    NoteEvent,
    ProducerEntryEvent,
    ReportEvent,
    SnapshotEvent,
    TextEvent,
)

if TYPE_CHECKING:
    from rich.console import Console

    from kafkadump.base.findings import Finding
    from kafkadump.decoders.batches.model import Batch
    from kafkadump.decoders.logfiles.carving import Damaged, Recovered
    from kafkadump.decoders.logfiles.indexes import TxnEntry
    from kafkadump.decoders.logfiles.snapshot import ProducerEntry, ProducerSnapshot
    from kafkadump.reports.carve import CarveTotals

    IndexRow = IndexEntry | TimeIndexEntry | TxnEntry

# --- entry dumps ------------------------------------------------------------------------

INDEX_COLUMNS = (Column("position", 10, True), Column("entry", 7, True), Column("relOffset", 10, True),
                 Column("offset", 20, True), Column("logPosition", 11, True))
TIMEINDEX_COLUMNS = (Column("position", 10, True), Column("entry", 7, True), Column("timestamp", 24),
                     Column("relOffset", 10, True), Column("offset", 20, True))
TXNINDEX_COLUMNS = (Column("position", 10, True), Column("entry", 7, True), Column("version", 7, True),
                    Column("producerId", 20, True), Column("firstOffset", 20, True),
                    Column("lastOffset", 20, True), Column("lastStableOffset", 20, True))
SNAPSHOT_COLUMNS = (Column("position", 10, True), Column("producerId", 20, True), Column("epoch", 6, True),
                    Column("lastSequence", 12, True), Column("lastOffset", 20, True), Column("offsetDelta", 11, True),
                    Column("timestamp", 24), Column("coordEpoch", 10, True), Column("txnFirstOffset", 20, True))

COLUMNS = {names.OFFSET_INDEX: INDEX_COLUMNS, names.TIME_INDEX: TIMEINDEX_COLUMNS, names.TXN_INDEX: TXNINDEX_COLUMNS}


def entry_cells(kind: str, e: IndexRow) -> list:
    if isinstance(e, IndexEntry):  # kind: names.OFFSET_INDEX
        return [e.position, e.index, e.relative_offset, e.offset, e.log_position]
    if isinstance(e, TimeIndexEntry):  # names.TIME_INDEX
        return [e.position, e.index, d.iso_ms(e.timestamp), e.relative_offset, e.offset]
    return [e.position, e.index, e.version, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset]


def producer_entry_cells(e: ProducerEntry) -> list:
    return [e.position, e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta,
            d.iso_ms(e.timestamp), e.coordinator_epoch, e.current_txn_first_offset]


def snapshot_header_line(file: str, s: ProducerSnapshot) -> str:
    crc = d.crc_verdict(s.crc_valid)
    return (f"version: {s.version}  crc: {s.crc}  computedCrc: {s.computed_crc}  crcValid: {crc}  "
            f"producers: {s.count}")


def text_lines(kind: str, content: dict) -> Iterable[str]:
    """A text file's decoded content as aligned lines (a checkpoint's produced as its entries are read)."""
    if kind == names.OFFSET_CHECKPOINT:
        lines = [f"version: {content.get('version')}  entries: {content.get('count')}"]
        es = sorted(content["entries"], key=lambda e: (e["topic"], e["partition"]))
        width = max((len(f"{e['topic']}-{e['partition']}") for e in es), default=10)
        lines.append(f"{'partition':<{width}}  {'offset':>20}")
        lines += [f"{e['topic'] + '-' + str(e['partition']):<{width}}  {e['offset']:>20}" for e in es]
        return lines
    if kind == names.LEADER_EPOCH_CHECKPOINT:
        lines = [f"version: {content.get('version')}  entries: {content.get('count')}", f"{'epoch':>10}  {'startOffset':>20}"]
        return itertools.chain(lines, (f"{e['epoch']:>10}  {e['startOffset']:>20}" for e in content["entries"]))
    if kind == names.PARTITION_METADATA:
        return [f"version: {content.get('version')}", f"topicId: {content.get('topicId')}"
                + (f"  ({content['topicUuid']})" if content.get("topicUuid") else "")]
    if kind == names.META_PROPERTIES:
        return [f"{k}={v}" for k, v in content.get("properties", {}).items()]
    if kind == names.QUORUM_STATE:
        return json.dumps(content.get("state"), indent=2).splitlines()
    return []


def findings_lines(findings: Iterable[Finding]) -> list[str]:
    return [f"  ! {f.severity.value} {f.code.value} @{f.offset}: {f.message}" for f in findings]


# --- carve --------------------------------------------------------------------------------

def damaged_line(dmg: Damaged) -> str:
    lost = O.lost_offsets_object(dmg)
    if lost is None:
        what = "no offsets lost (its intact neighbours are contiguous)"
    else:
        a = "?" if lost["first"] is None else lost["first"]
        b = "? (to the end)" if lost["last"] is None else lost["last"]
        what = f"lost offsets {a}..{b}" + (f" ({lost['count']})" if "count" in lost else "")
    if dmg.claimed_first is not None:
        what += f"; damaged headers claim {dmg.claimed_first}..{dmg.claimed_last}"
    codes = ",".join(sorted({f.code.value for f in dmg.findings}))
    return f"damaged [{dmg.start}, {dmg.end}) {dmg.size} bytes: {what}  [{codes}]"


def recovered_line(b: Batch) -> str:
    return (f"recovered position: {b.position} size: {b.size} magic: {b.magic} "
            f"offsets: {b.base_offset}..{b.last_offset} records: {b.record_count}")


__all__ = ["entry_cells", "text_lines", "damaged_line", "recovered_line", "COLUMNS", "SNAPSHOT_COLUMNS"]


# --- the dump command's report (events from kafkadump.reports.dump.dump_report) --------------------

def dump_object(ev: ReportEvent, path: str) -> dict | None:
    """The JSON object of a dump event (None for a file's start, a note, a segment's announcement)."""
    match ev:
        case BatchEvent(item=item):
            return item_object(item)
        case IndexEntryEvent(entry=e, findings=fs):
            return O.index_entry_object(path, e, fs)
        case SnapshotEvent(snapshot=snap):
            return O.snapshot_object(path, snap)
        case ProducerEntryEvent(entry=e):
            return O.producer_entry_object(path, e)
        case TextEvent(kind=kind, content=content, findings=fs):
            return O.text_file_object(kind, path, content, fs)
        case FindingsEvent(findings=fs):
            return O.loose_findings_object(path, fs)
    return None


def write_dump_json(events: Iterable[ReportEvent], out: TextIO) -> None:
    """A JSON line per entry, batch, snapshot header, producer, text file or loose findings."""
    path: str | None = None
    for ev in events:
        if isinstance(ev, FileEvent):
            path = ev.path
            continue
        if isinstance(ev, TextEvent) and "entries" in ev.content:
            write_text_json(ev.kind, path or "-", ev.content, ev.findings, out)
            continue
        obj = dump_object(ev, path or "-")
        if obj is not None:
            out.write(dumps(obj) + "\n")


def write_text_json(kind: str, file: str, content: dict, findings: list[Finding], out: TextIO) -> None:
    """A checkpoint's JSON line (:func:`~kafkadump.objects.logdir_file_objects.text_file_object`),
    its entries written one at a time as they are read, its findings (complete once the entries
    are) last."""
    head = O.text_file_head(kind, file, content)
    out.write(dumps(head)[:-1] + ',"entries":[')
    entries = iter(content["entries"])
    sep = ""
    while True:
        chunk = [dumps(e) for e in itertools.islice(entries, 4096)]  # a few writes, bounded memory
        if not chunk:
            break
        out.write(sep + ",".join(chunk))
        sep = ","
    out.write('],"findings":' + dumps(findings_list(findings)) + "}\n")


class _Lines(LineWriter):
    """Plain or styled lines, and one table per file (created by the first row)."""

    def __init__(self, out: TextIO, console: Console | None, layout: TableLayout | None = None):
        super().__init__(out, console)
        self.stream: TableStream | None = None
        self.layout = layout

    def table(self, columns: tuple[Column, ...]) -> TableStream:
        if self.stream is None:
            self.stream = TableStream(self.out, columns, self.console, self.layout)
        return self.stream

    def line(self, text: str, style: str | None = None, fold: bool = True) -> None:
        if self.layout is not None and self.layout.tsv:   # --fields: rows alone on stdout
            sys.stderr.write(terminal_safe(text) + "\n")
            return
        super().line(text, style, fold)


def write_dump_table(events: Iterable[ReportEvent], out: TextIO, console: Console | None = None,
                     layout: TableLayout | None = None) -> None:
    """Tables of entries or batches, snapshot headers, text files, findings as notes."""
    from kafkadump.render import table as t

    lines = _Lines(out, console, layout)
    path: str | None = None
    for ev in events:
        match ev:
            case FileEvent(path=path, count=count):
                lines.stream = None
                if count > 1:
                    lines.line(f"== {path}", "bold")
            case BatchEvent(item=item):
                batches = lines.table(t.BATCH_COLUMNS)
                if isinstance(item, Gap):
                    batches.row(t.gap_cells(item), "red")
                else:
                    batches.row(t.batch_cells(item), t.batch_style(item))
                for line in t.findings_lines(item):
                    batches.note(line, "yellow")
            case IndexEntryEvent(kind=kind, entry=e, findings=fs):
                stream = lines.table(COLUMNS[kind])
                stream.row(entry_cells(kind, e), "red" if fs else None)
                for line in findings_lines(fs):
                    stream.note(line, "yellow")
            case SnapshotEvent(snapshot=snap):
                assert path is not None, "a file's events come after its file event"
                lines.line(snapshot_header_line(path, snap), "bold")
                for line in findings_lines(snap.findings):
                    lines.line(line, "yellow")
            case ProducerEntryEvent(entry=e):
                lines.table(SNAPSHOT_COLUMNS).row(producer_entry_cells(e))
            case TextEvent(kind=kind, content=content, findings=fs):
                for line in text_lines(kind, content):
                    lines.line(line)
                for line in findings_lines(fs):
                    lines.line(line, "yellow")
            case FindingsEvent(findings=fs):
                for line in findings_lines(fs):
                    lines.line(line, "yellow")
            case NoteEvent(text=text):
                lines.line(f"# {text}", "dim")


# --- the carve command's report (items from kafkadump.reports.carve.carve_report) ----------------

def carve_totals_line(t: CarveTotals) -> str:
    offsets = "no offsets" if t.first_offset is None else f"offsets {t.first_offset}..{t.last_offset}"
    return (f"recovered: {t.recovered} batches ({t.recovered_bytes} bytes, {offsets})"
            f"  damaged: {t.damaged_ranges} ranges "
            f"({t.damaged_bytes} bytes)  zero padding: {t.padding_bytes} bytes"
            + (f"  length repaired: {t.length_repaired} batches" if t.length_repaired else "")
            + (f"  written: {t.output} (sha256 {t.output_sha256})" if t.output is not None else ""))


def write_carve_json(items: Iterable[Recovered | Damaged | CarveTotals], out: TextIO) -> None:
    from kafkadump.decoders.logfiles.carving import Recovered
    from kafkadump.reports.carve import CarveTotals

    for item in items:
        if isinstance(item, CarveTotals):
            obj = O.carve_summary_object(item)
        elif isinstance(item, Recovered):
            obj = O.recovered_object(item.batch.file, item.batch)
        else:
            obj = O.damaged_object(item)
        out.write(dumps(obj) + "\n")


def write_carve_table(items: Iterable[Recovered | Damaged | CarveTotals], out: TextIO, console: Console | None = None,
                      list_recovered: bool = False) -> None:
    from kafkadump.decoders.logfiles.carving import Recovered
    from kafkadump.reports.carve import CarveTotals

    lines = _Lines(out, console)
    for item in items:
        if isinstance(item, CarveTotals):
            lines.line(carve_totals_line(item), "bold")
        elif isinstance(item, Recovered):
            if list_recovered or item.length_repaired:
                lines.line(recovered_line(item.batch))
                for f in item.batch.findings:
                    lines.line(f"  {f.severity.value} {f.code.value} @{f.offset}: {f.message}",
                               "red" if f.severity.value == "error" else None)
        else:
            lines.line(damaged_line(item), "red")
