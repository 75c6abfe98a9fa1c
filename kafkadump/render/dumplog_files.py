"""``kafkadump dump --format dump-log``: every file kind Kafka's ``DumpLogSegments`` reads, in its
lines (as ``kafka-dump-log.sh --files A,B --deep-iteration --print-data-log`` prints them).

On ``out``, per file::

    Dumping PATH
    offset: O position: P                          .index (or "PATH is empty." for no slot)
    timestamp: T offset: O                         .timeindex
    version: V producerId: P firstOffset: F lastOffset: L lastStableOffset: S      .txnindex
    producerId: P producerEpoch: E coordinatorEpoch: C currentTxnFirstOffset: OptionalLong[X]
        lastTimestamp: T firstSequence: F lastSequence: L lastOffset: O offsetDelta: D timestamp: T
                                                   .snapshot (one line per producer)
    Log starting offset: N / Snapshot end offset: N, epoch: E, then batches and records
                                                   .log, .checkpoint (as ``records -f dump-log``)

On ``err``, after every file, what Kafka's tool writes to stderr: the offset index mismatches
(``Mismatches in :ABSPATH`` and ``  Index offset: O, log offset: L``, latest first, as Kafka
prepends them), the time index's (``Found timestamp mismatch in :ABSPATH``, ``Found out of order
timestamp in :ABSPATH``, ``The following indexed offsets are not found in the log.``), the
records' (``Non-consecutive offsets in ABSPATH`` and ``  A is followed by B``, latest first), and
``Ignoring unknown file PATH``, and why a producer snapshot is refused (``Snapshot is corrupt (CRC is
no longer valid). Stored crc: X. Computed crc: Y``, ``Snapshot failed schema validation: ...``; its
producers are then not printed, as Kafka prints none).  Files are in the order given (Kafka's are a
hash map's order).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

from kafkadump.decoders.batches.model import Gap
from kafkadump.decoders.logfiles.indexes import IndexEntry, TimeIndexEntry, TxnEntry
from kafkadump.decoders.logfiles.snapshot import ENTRY_SIZE, HEAD_SIZE, ProducerEntry, ProducerSnapshot
from kafkadump.render import dumplog
from kafkadump.render.lines import terminal_safe
from kafkadump.reports.dump import FileEvent, ProducerEntryEvent, SnapshotEvent
from kafkadump.reports.dumplog_source import (
    Event,
    OffsetEntryEvent,
    RecordsEvent,
    SlotsEvent,
    TimeEntryEvent,
    TxnEntryEvent,
    UnknownFileEvent,
)

if TYPE_CHECKING:
    from kafkadump.reports.segments import RecordsOf

_INT_MAX = 0x7FFFFFFF


class KafkaErrors:
    """The sections Kafka's DumpLogSegments writes to stderr once every file is dumped."""

    def __init__(self) -> None:
        self.index_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.time_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.out_of_order: dict[str, list[tuple[int, int]]] = {}
        self.not_found: dict[str, list[tuple[int, int]]] = {}
        self.non_consecutive: dict[str, list[tuple[int, int]]] = {}

    def lines(self) -> list[str]:
        out: list[str] = []
        for path, pairs in self.index_mismatches.items():
            out.append(f"Mismatches in :{path}")
            out.extend(f"  Index offset: {a}, log offset: {b}" for a, b in reversed(pairs))
        for path, pairs in self.time_mismatches.items():
            out.append(f"Found timestamp mismatch in :{path}")
            out.extend(f"  Index timestamp: {a}, log timestamp: {b}" for a, b in pairs)
        for path, pairs in self.out_of_order.items():
            out.append(f"Found out of order timestamp in :{path}")
            out.extend(f"  Index timestamp: {a}, Previously indexed timestamp: {b}" for a, b in pairs)
        for pairs in self.not_found.values():
            out.append("The following indexed offsets are not found in the log.")
            out.extend(f"Indexed offset: {a}, found log offset: {b}" for a, b in pairs)
        for path, pairs in self.non_consecutive.items():
            out.append(f"Non-consecutive offsets in {path}")
            out.extend(f"  {a} is followed by {b}" for a, b in reversed(pairs))
        return out


def offset_entry_line(e: IndexEntry) -> str:
    return f"offset: {e.offset} position: {e.log_position}"


def time_entry_line(e: TimeIndexEntry) -> str:
    return f"timestamp: {e.timestamp} offset: {e.offset}"


def txn_entry_line(e: TxnEntry) -> str:
    return (f"version: {e.version} producerId: {e.producer_id} firstOffset: {e.first_offset} "
            f"lastOffset: {e.last_offset} lastStableOffset: {e.last_stable_offset}")


def _decrement_sequence(seq: int, dec: int) -> int:
    """Kafka's DefaultRecordBatch.decrementSequence (wraps below 0 to INT32_MAX)."""
    return _INT_MAX - (dec - seq) + 1 if seq < dec else seq - dec


def producer_entry_line(p: ProducerEntry) -> str:
    """A producer as Kafka's ProducerStateManager.readSnapshot reads it: the last batch's metadata
    only when its last offset is not negative (the line then ends with a space, as Kafka's)."""
    txn = (f"OptionalLong[{p.current_txn_first_offset}]" if p.current_txn_first_offset >= 0
           else "OptionalLong.empty")
    line = (f"producerId: {p.producer_id} producerEpoch: {p.epoch} coordinatorEpoch: {p.coordinator_epoch} "
            f"currentTxnFirstOffset: {txn} lastTimestamp: {p.timestamp} ")
    if p.last_offset >= 0:
        line += (f"firstSequence: {_decrement_sequence(p.last_sequence, p.offset_delta)} "
                 f"lastSequence: {p.last_sequence} lastOffset: {p.last_offset} offsetDelta: {p.offset_delta} "
                 f"timestamp: {p.timestamp}")
    return line


_SCHEMA = "Snapshot failed schema validation: "


def snapshot_error(snap: ProducerSnapshot) -> str | None:
    """Why Kafka's ProducerStateManager.readSnapshot refuses ``snap`` (the message DumpLogSegments
    prints on stderr, and then no producer), or None: the header and entries must be read whole, the
    version be 1, the CRC-32C of every byte after the crc field match."""
    if snap.count is None or snap.version is None:
        return _SCHEMA + "null"              # the header cut short: Java's buffer underflow, no message
    remaining = snap.size - HEAD_SIZE
    if snap.count < 0:
        return _SCHEMA + "non-nullable field producerEntries was serialized as null"
    if snap.count > remaining:
        return (f"{_SCHEMA}Tried to allocate a collection of size {snap.count}, but there are only "
                f"{remaining} bytes remaining.")
    if snap.count * ENTRY_SIZE > remaining:
        return _SCHEMA + "null"
    if snap.version != 1:
        return f"{_SCHEMA}Snapshot contained an unknown file version {snap.version}"
    if snap.crc != snap.computed_crc:
        return (f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {snap.crc}. "
                f"Computed crc: {snap.computed_crc}")
    return None


class _FileState:
    """What one file's lines depend on: its path (as given and absolute), the previous time index
    timestamp, the previous record offset, whether Kafka refuses the producer snapshot."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.abs = os.path.abspath(path)
        self.prev_timestamp = -1
        self.last_offset = -1
        self.refused = False


def _time_entry(st: _FileState, errors: KafkaErrors, e: TimeIndexEntry, last: int | None,
                max_ts: int | None) -> None:
    if last is None or last != e.offset:
        errors.not_found.setdefault(st.abs, []).append((e.offset, -1 if last is None else last))
    else:
        if max_ts != e.timestamp:
            errors.time_mismatches.setdefault(st.abs, []).append((e.timestamp, -1 if max_ts is None else max_ts))
        if st.prev_timestamp >= e.timestamp:
            errors.out_of_order.setdefault(st.abs, []).append((e.timestamp, st.prev_timestamp))
    st.prev_timestamp = e.timestamp


def _batch(st: _FileState, errors: KafkaErrors, item: RecordsOf | Gap) -> str:
    if isinstance(item, Gap):
        return dumplog.render(item)
    records = list(item.records)  # read once: a stream of records makes new objects each time (ids reused)
    for r in records:
        if st.last_offset != -1 and r.offset != st.last_offset + 1:
            errors.non_consecutive.setdefault(st.abs, []).append((st.last_offset, r.offset))
        st.last_offset = r.offset
    by_record = None if item.decoded is None else {id(r): d for r, d in zip(records, item.decoded)}
    by_view = None if item.views is None else {id(r): v for r, v in zip(records, item.views)}
    return dumplog.render(item.batch, records=[]) + dumplog.record_lines(item.batch, records,
                                                                           decoded=by_record, views=by_view)


def _event_text(ev: Event, st: _FileState, errors: KafkaErrors) -> str:
    match ev:
        case SlotsEvent(kind=kind, slots=slots):
            return f"{st.path} is empty.\n" if kind == "offset-index" and slots == 0 else ""
        case OffsetEntryEvent(entry=e, log_last_offset=log_last):
            if log_last != e.offset:
                errors.index_mismatches.setdefault(st.abs, []).append((e.offset, -1 if log_last is None else log_last))
            return offset_entry_line(e) + "\n"
        case TimeEntryEvent(entry=e, batch_last_offset=last, max_timestamp=max_ts):
            _time_entry(st, errors, e, last, max_ts)
            return time_entry_line(e) + "\n"
        case TxnEntryEvent(entry=e):
            return txn_entry_line(e) + "\n"
        case ProducerEntryEvent(entry=e):
            return "" if st.refused else producer_entry_line(e) + "\n"
        case RecordsEvent(item=item):
            return _batch(st, errors, item)
    return ""


def write_dump_dumplog(events: Iterable[Event], out: TextIO, err: TextIO) -> None:
    """Kafka's DumpLogSegments' lines for the events of
    :func:`kafkadump.reports.dumplog_source.dumplog_events`: the files' lines on ``out``, then
    the error sections on ``err``."""
    errors = KafkaErrors()
    st: _FileState | None = None
    for ev in events:
        if isinstance(ev, FileEvent):
            st = _FileState(ev.path)
            out.write(terminal_safe(dumplog.file_header(ev.path), keep_newlines=True))
            continue
        if isinstance(ev, UnknownFileEvent):
            err.write(terminal_safe(f"Ignoring unknown file {ev.path}\n", keep_newlines=True))
            continue
        if isinstance(ev, SnapshotEvent) and st is not None:
            why = snapshot_error(ev.snapshot)
            st.refused = why is not None
            if why is not None:
                err.write(why + "\n")
            continue
        assert st is not None, "a file's events come after its file event"
        text = _event_text(ev, st, errors)
        if text:
            out.write(terminal_safe(text, keep_newlines=True))
    out.flush()
    for line in errors.lines():
        err.write(terminal_safe(line + "\n", keep_newlines=True))
