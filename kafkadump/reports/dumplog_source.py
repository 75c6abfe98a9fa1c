"""What Kafka's ``DumpLogSegments`` reads from each file, for ``kafkadump dump --format dump-log``.

Kafka's tool reads every slot of an index (``.index``: ``file size / 8`` entries; it stops at
the first entry after the first whose offset is the segment's base offset, a preallocated zero
slot) and checks each entry against the ``.log`` beside it:

* an offset index entry names the batch at its position: that batch's last offset must be the
  entry's offset (else a mismatch: ``(entry offset, batch last offset)``);
* a time index entry's offset must be the last offset of the first batch, from the offset
  index's position for it on, whose last offset is not below it (else "not found", with that
  batch's last offset or -1), and its timestamp the largest record timestamp of that batch.

Events, as small named classes (never printed here):

    FileEvent(path, count)                              (of :mod:`.dump`)
    SlotsEvent(kind, slots)                             .index / .timeindex: Kafka's entry count
    OffsetEntryEvent(entry, log_last_offset)            None: no batch at that position
    TimeEntryEvent(entry, batch_last_offset, max_timestamp)
    TxnEntryEvent(entry)
    SnapshotEvent(snapshot)                             then a ProducerEntryEvent(entry) each (of :mod:`.dump`)
    RecordsEvent(item)                                  segments and KRaft snapshots: a RecordsOf or Gap, every
                                                        record, control records decoded (``segments.record_report``)
    UnknownFileEvent(path)                              a kind Kafka's tool ignores
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeAlias

from kafkadump.base.errors import UsageError
from kafkadump.base.status import Tally
from kafkadump.base.values import FrozenValue
from kafkadump.decoders.batches import Options, iter_batches
from kafkadump.decoders.batches.model import Batch, Gap
from kafkadump.decoders.logfiles import names
from kafkadump.decoders.logfiles.indexes import IndexEntry, OffsetIndex, TimeIndex, TimeIndexEntry, TxnEntry, TxnIndex
from kafkadump.decoders.logfiles.snapshot import ProducerSnapshot
from kafkadump.reports.dump import FileEvent, ProducerEntryEvent, SnapshotEvent, sibling_log
from kafkadump.sources.segment import open_segment

if TYPE_CHECKING:
    from kafkadump.reports.segments import RecordsOf

# the file kinds Kafka's DumpLogSegments reads (by suffix: .log, .checkpoint, .index, .timeindex,
# .snapshot, .txnindex)
KAFKA_KINDS = (names.SEGMENT, names.KRAFT_SNAPSHOT, names.OFFSET_INDEX, names.TIME_INDEX,
               names.PRODUCER_SNAPSHOT, names.TXN_INDEX)



class SlotsEvent(FrozenValue):
    """An offset or time index (``kind``): how many entries Kafka's tool counts in it."""

    __match_args__ = ("kind", "slots")
    __slots__ = __match_args__

    kind: str
    slots: int

    def __init__(self, kind: str, slots: int) -> None:
        self._set(kind=kind, slots=slots)


class OffsetEntryEvent(FrozenValue):
    """An offset index entry and the last offset of the batch at its position (None: no batch there)."""

    __match_args__ = ("entry", "log_last_offset")
    __slots__ = __match_args__

    entry: IndexEntry
    log_last_offset: int | None

    def __init__(self, entry: IndexEntry, log_last_offset: int | None) -> None:
        self._set(entry=entry, log_last_offset=log_last_offset)


class TimeEntryEvent(FrozenValue):
    """A time index entry and the batch Kafka checks it against: its last offset and largest record
    timestamp (None, None: no such batch)."""

    __match_args__ = ("entry", "batch_last_offset", "max_timestamp")
    __slots__ = __match_args__

    entry: TimeIndexEntry
    batch_last_offset: int | None
    max_timestamp: int | None

    def __init__(self, entry: TimeIndexEntry, batch_last_offset: int | None, max_timestamp: int | None) -> None:
        self._set(entry=entry, batch_last_offset=batch_last_offset, max_timestamp=max_timestamp)


class TxnEntryEvent(FrozenValue):
    """A transaction index entry."""

    __match_args__ = ("entry",)
    __slots__ = __match_args__

    entry: TxnEntry

    def __init__(self, entry: TxnEntry) -> None:
        self._set(entry=entry)


class RecordsEvent(FrozenValue):
    """A batch of a segment or KRaft snapshot with its records (or a gap)."""

    __match_args__ = ("item",)
    __slots__ = __match_args__

    item: RecordsOf | Gap

    def __init__(self, item: RecordsOf | Gap) -> None:
        self._set(item=item)


class UnknownFileEvent(FrozenValue):
    """A file of a kind Kafka's tool ignores."""

    __match_args__ = ("path",)
    __slots__ = __match_args__

    path: str

    def __init__(self, path: str) -> None:
        self._set(path=path)


Event: TypeAlias = (FileEvent | SlotsEvent | OffsetEntryEvent | TimeEntryEvent | TxnEntryEvent | SnapshotEvent
                    | ProducerEntryEvent | RecordsEvent | UnknownFileEvent)


class LogBatches:
    """The batches of a ``.log`` as Kafka's index checks see them: position, last offset and the
    largest record timestamp of each intact batch, in file order."""

    def __init__(self, path: str | None) -> None:
        self.positions: list[int] = []
        self.last_offsets: list[int] = []
        self.max_timestamps: list[int] = []
        if path is not None:
            with open_segment(path) as seg:
                for item in iter_batches(seg.buf, path, options=Options(records=True)):
                    if isinstance(item, Batch) and item.last_offset is not None:
                        self._add(item)

    def _add(self, b: Batch) -> None:
        self.positions.append(b.position)
        self.last_offsets.append(b.last_offset or 0)
        stamps = [r.timestamp for r in (b.records or ()) if r.timestamp is not None]
        self.max_timestamps.append(max(stamps, default=-1))

    def last_offset_at(self, position: int) -> int | None:
        """The last offset of the batch starting at ``position``, or None."""
        i = bisect.bisect_left(self.positions, position)
        if i < len(self.positions) and self.positions[i] == position:
            return self.last_offsets[i]
        return None

    def first_reaching(self, position: int, offset: int) -> tuple[int | None, int | None]:
        """From ``position`` on, the first batch whose last offset is not below ``offset``: its
        last offset and largest record timestamp (None, None: no such batch)."""
        for i in range(bisect.bisect_left(self.positions, position), len(self.positions)):
            if self.last_offsets[i] >= offset:
                return self.last_offsets[i], self.max_timestamps[i]
        return None, None


def _kafka_entries(reader: OffsetIndex | TimeIndex) -> Iterator[Any]:
    """Every slot, up to Kafka's stop: an entry after the first at the base offset."""
    for e in reader:
        if e.relative_offset == 0 and e.index > 0:
            return
        yield e


class OffsetLookup:
    """Kafka's ``OffsetIndex.lookup(offset).position`` over a ``.index`` (read once): the position
    of the last entry at or below the offset, 0 when none (or no index)."""

    def __init__(self, index_path: str, base: int) -> None:
        self.offsets: list[int] = []
        self.positions: list[int] = []
        if os.path.isfile(index_path):
            with open_segment(index_path) as seg:
                for e in _kafka_entries(OffsetIndex(seg.buf, index_path, base, zero_tail=False)):
                    self.offsets.append(e.offset)
                    self.positions.append(e.log_position)

    def position(self, offset: int) -> int:
        i = bisect.bisect_right(self.offsets, offset)
        return self.positions[i - 1] if i else 0


def _offset_index_events(path: str, fn: names.FileName, tally: Tally) -> Iterator[Event]:
    log = LogBatches(sibling_log(path))
    with open_segment(path) as seg:
        reader = OffsetIndex(seg.buf, path, fn.offset, zero_tail=False)
        tally.see(reader.findings)
        yield SlotsEvent(names.OFFSET_INDEX, reader.slots)
        for e in _kafka_entries(reader):
            yield OffsetEntryEvent(e, log.last_offset_at(e.log_position))


def _time_index_events(path: str, fn: names.FileName, tally: Tally) -> Iterator[Event]:
    log = LogBatches(sibling_log(path))
    index_path = os.path.join(os.path.dirname(path), f"{fn.stem}.index{fn.suffix or ''}")
    lookup = OffsetLookup(index_path, fn.offset or 0)
    with open_segment(path) as seg:
        reader = TimeIndex(seg.buf, path, fn.offset, zero_tail=False)
        tally.see(reader.findings)
        yield SlotsEvent(names.TIME_INDEX, reader.slots)
        for e in _kafka_entries(reader):
            yield TimeEntryEvent(e, *log.first_reaching(lookup.position(e.offset), e.offset))


def _plain_events(path: str, kind: str, tally: Tally) -> Iterator[Event]:
    with open_segment(path) as seg:
        if kind == names.TXN_INDEX:
            txn = TxnIndex(seg.buf, path)
            tally.see(txn.findings)
            for t in txn:
                tally.see(t.findings)
                yield TxnEntryEvent(t)
            return
        if kind == names.PRODUCER_SNAPSHOT:
            snap = ProducerSnapshot(seg.buf, path)
            tally.see(snap.findings)
            yield SnapshotEvent(snap)
            for p in snap.entries:
                yield ProducerEntryEvent(p)

def _batch_events(path: str, tally: Tally) -> Iterator[Event]:
    """A segment's or KRaft snapshot's batches with every record, control records decoded (as
    ``records --format dump-log``)."""
    from kafkadump.reports.query import RecordQuery
    from kafkadump.reports.segments import FileStart, record_report

    for item in record_report([path], Options(), RecordQuery(), tally, "none", control_values=True):
        if not isinstance(item, FileStart):
            yield RecordsEvent(item)


def dumplog_events(paths: list[str], kind: str | None, tally: Tally) -> Iterator[Event]:
    """``kafkadump dump --format dump-log``: each path's events as Kafka's DumpLogSegments reads
    the file (kind from its name unless given); problems found pass through ``tally``."""
    for path in paths:
        if os.path.isdir(path):
            raise UsageError(f"{path}: is a directory; dump reads files")
        open_segment(path).close()  # a missing or unreadable file: one error line, before any output
        fn = names.classify(path)
        k = kind or fn.kind
        yield FileEvent(path, len(paths))
        if k == names.OFFSET_INDEX:
            yield from _offset_index_events(path, fn, tally)
        elif k == names.TIME_INDEX:
            yield from _time_index_events(path, fn, tally)
        elif k in (names.SEGMENT, names.KRAFT_SNAPSHOT):
            yield from _batch_events(path, tally)
        elif k in KAFKA_KINDS:
            yield from _plain_events(path, k, tally)
        else:
            yield UnknownFileEvent(path)


__all__ = ["KAFKA_KINDS", "LogBatches", "dumplog_events", "Event", "SlotsEvent", "OffsetEntryEvent", "TimeEntryEvent",
           "TxnEntryEvent", "RecordsEvent", "UnknownFileEvent"]
