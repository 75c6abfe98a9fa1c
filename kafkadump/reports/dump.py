"""Decoding one log-dir file for ``kafkadump dump``: a stream of events, never printed here.

Index entries are streamed from the mapped file with their findings
attached (order findings from the reader; with ``verify`` and a sibling
``.log``, the cross-check findings of :func:`~kafkadump.reports.scan.scan_segment`,
matched to the entry by byte position).  Findings that belong to no entry
(a zero tail, a partial last entry, a summary) come last.

Events, as small named classes (read them with ``match`` on the class):

    IndexEntryEvent(kind, entry, findings)      .index / .timeindex / .txnindex entry
    SnapshotEvent(snapshot)                     producer snapshot header, then
    ProducerEntryEvent(entry)                   one per producer
    TextEvent(kind, content, findings)          a checkpoint / properties / metadata file
    BatchesEvent(kind)                          a segment or KRaft snapshot: the caller walks its batches
    FindingsEvent(findings)                     findings not attached to an entry
    NoteEvent(text)                             e.g. which log the index was checked against

:func:`dump_report` adds ``FileEvent(path, count)`` before each file's events and
walks a segment's batches itself: ``BatchEvent(item)`` (a ``Batch`` or ``Gap``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, TypeAlias

from kafkadump.base.findings import Code, Finding
from kafkadump.base.status import Tally
from kafkadump.base.values import FrozenValue
from kafkadump.decoders.batches import Options
from kafkadump.decoders.batches.model import Batch, Gap
from kafkadump.decoders.logfiles import names
from kafkadump.decoders.logfiles.indexes import IndexEntry, OffsetIndex, TimeIndex, TimeIndexEntry, TxnEntry, TxnIndex
from kafkadump.decoders.logfiles.snapshot import ProducerEntry, ProducerSnapshot
from kafkadump.decoders.logfiles.textfiles import CHECKPOINT_KINDS, DECODERS, MAX_TEXT_BYTES, CheckpointText
from kafkadump.reports.scan import scan_segment
from kafkadump.sources.segment import open_segment


class IndexEntryEvent(FrozenValue):
    """An entry of an offset, time or transaction index (``kind``), with its findings."""

    __match_args__ = ("kind", "entry", "findings")
    __slots__ = __match_args__

    kind: str
    entry: IndexEntry | TimeIndexEntry | TxnEntry
    findings: list[Finding]

    def __init__(self, kind: str, entry: IndexEntry | TimeIndexEntry | TxnEntry, findings: list[Finding]) -> None:
        self._set(kind=kind, entry=entry, findings=findings)


class SnapshotEvent(FrozenValue):
    """A producer snapshot's header; a :class:`ProducerEntryEvent` per producer follows."""

    __match_args__ = ("snapshot",)
    __slots__ = __match_args__

    snapshot: ProducerSnapshot

    def __init__(self, snapshot: ProducerSnapshot) -> None:
        self._set(snapshot=snapshot)


class ProducerEntryEvent(FrozenValue):
    """One producer of a producer snapshot."""

    __match_args__ = ("entry",)
    __slots__ = __match_args__

    entry: ProducerEntry

    def __init__(self, entry: ProducerEntry) -> None:
        self._set(entry=entry)


class TextEvent(FrozenValue):
    """A checkpoint, properties, partition metadata or quorum state file (``kind``): its decoded
    content (a checkpoint's ``entries`` read as they are asked for) and findings (a checkpoint's
    complete once its entries are read)."""

    __match_args__ = ("kind", "content", "findings")
    __slots__ = __match_args__

    kind: str
    content: dict[str, Any]
    findings: list[Finding]

    def __init__(self, kind: str, content: dict[str, Any], findings: list[Finding]) -> None:
        self._set(kind=kind, content=content, findings=findings)


class BatchesEvent(FrozenValue):
    """A segment or KRaft snapshot (``kind``): the caller walks its batches."""

    __match_args__ = ("kind",)
    __slots__ = __match_args__

    kind: str

    def __init__(self, kind: str) -> None:
        self._set(kind=kind)


class FindingsEvent(FrozenValue):
    """Findings of the file that belong to no entry."""

    __match_args__ = ("findings",)
    __slots__ = __match_args__

    findings: list[Finding]

    def __init__(self, findings: list[Finding]) -> None:
        self._set(findings=findings)


class NoteEvent(FrozenValue):
    """A line about the dump itself (which log an index was checked against)."""

    __match_args__ = ("text",)
    __slots__ = __match_args__

    text: str

    def __init__(self, text: str) -> None:
        self._set(text=text)


class FileEvent(FrozenValue):
    """The start of a file's events: its path, and how many files the dump reads."""

    __match_args__ = ("path", "count")
    __slots__ = __match_args__

    path: str
    count: int

    def __init__(self, path: str, count: int) -> None:
        self._set(path=path, count=count)


class BatchEvent(FrozenValue):
    """A batch or gap of a segment (or KRaft snapshot) the dump walked."""

    __match_args__ = ("item",)
    __slots__ = __match_args__

    item: Batch | Gap

    def __init__(self, item: Batch | Gap) -> None:
        self._set(item=item)


# the events of iter_dump (see the module docstring)
DumpEvent: TypeAlias = (IndexEntryEvent | SnapshotEvent | ProducerEntryEvent | TextEvent | BatchesEvent
                        | FindingsEvent | NoteEvent)
# ... and of dump_report, which adds these two
ReportEvent: TypeAlias = DumpEvent | FileEvent | BatchEvent

DUMP_MAX_FINDINGS = 10_000
_READERS: dict[str, type[OffsetIndex] | type[TimeIndex] | type[TxnIndex]] = {
    names.OFFSET_INDEX: OffsetIndex, names.TIME_INDEX: TimeIndex, names.TXN_INDEX: TxnIndex}
_EXT = {names.OFFSET_INDEX: ".index", names.TIME_INDEX: ".timeindex", names.TXN_INDEX: ".txnindex"}


def sibling_log(path: str) -> str | None:
    """The ``.log`` beside an index file (same base offset, same pending suffix), if present."""
    fn = names.classify(path)
    if fn.stem is None:
        return None
    p = os.path.join(os.path.dirname(path), fn.stem + ".log" + (fn.suffix or ""))
    return p if os.path.isfile(p) else None


def iter_dump(path: str, kind: str | None = None, *, verify: bool = True,
              options: Options | None = None) -> Iterator[DumpEvent]:
    """Yield the events of ``path`` (kind from its name unless given)."""
    fn = names.classify(path)
    kind = kind or fn.kind
    if kind in (names.SEGMENT, names.KRAFT_SNAPSHOT):
        yield BatchesEvent(kind)
        return
    if kind in _READERS:
        yield from _index_events(path, kind, fn, verify, options)
        return
    with open_segment(path) as seg:
        buf = seg.buf
        if kind == names.PRODUCER_SNAPSHOT:
            s = ProducerSnapshot(buf, path)
            yield SnapshotEvent(s)
            for e in s.entries:
                yield ProducerEntryEvent(e)
            return
        if kind in CHECKPOINT_KINDS:
            # read line by line as the renderer asks for the entries: memory is one line
            text = CheckpointText(buf, kind)
            content = text.content()
            content["entries"] = text.entries()
            yield TextEvent(kind, content, text.findings)
            return
        if kind in DECODERS:
            if len(buf) > MAX_TEXT_BYTES:
                yield FindingsEvent([Finding(Code.FILE_MALFORMED, 0, f"{len(buf)} bytes: far larger than a {kind} "
                                                                     f"file can be; not decoded")])
                return
            content, findings = DECODERS[kind](bytes(buf))
            yield TextEvent(kind, content, findings)
            return
    yield NoteEvent(f"{path}: not a file kafkadump knows by its name; give --type")


def _index_events(path: str, kind: str, fn: names.FileName, verify: bool,
                  options: Options | None) -> Iterator[DumpEvent]:
    extra: dict[int, list[Finding]] = {}
    loose: list[Finding] = []
    log = sibling_log(path) if verify and kind != names.TXN_INDEX else None
    if log is not None:
        scans = scan_segment(log, index=path if kind == names.OFFSET_INDEX else None,
                             timeindex=path if kind == names.TIME_INDEX else None, options=options or Options(records=False), max_findings=DUMP_MAX_FINDINGS,
                             custody_of=False)
        for f in scans[1].findings:
            extra.setdefault(f.offset, []).append(f)
        yield NoteEvent(f"checked against {log}")
    elif verify and kind != names.TXN_INDEX and fn.tier == names.INDEX_CACHE:
        yield NoteEvent(f"{os.path.basename(path)}: the broker's cached copy of remote segment {fn.remote_id}'s "
                       f"index (the segment is in remote storage): entries not checked against a log")
    elif verify and kind != names.TXN_INDEX:
        yield NoteEvent(f"no {fn.stem}.log beside {os.path.basename(path)}: entries not checked against a log")
    with open_segment(path) as seg:
        reader = _READERS[kind](seg.buf, path, fn.offset)
        file_level = {(f.code, f.offset) for f in reader.findings}
        for e in reader:
            fs = list(e.findings)
            for f in extra.pop(e.position, ()):
                if (f.code, f.offset) not in {(g.code, g.offset) for g in fs}:
                    fs.append(f)
            yield IndexEntryEvent(kind, e, fs)
        for _off, fs in sorted(extra.items()):
            for f in fs:
                if (f.code, f.offset) in file_level or f.code in (Code.ZERO_PADDING, Code.TRUNCATED):
                    continue
                loose.append(f)
        loose = list(reader.findings) + loose
    if loose:
        yield FindingsEvent(loose)


__all__ = ["iter_dump", "sibling_log", "dump_report", "event_findings", "DumpEvent", "ReportEvent", "IndexEntryEvent",
           "SnapshotEvent", "ProducerEntryEvent", "TextEvent", "BatchesEvent", "FindingsEvent", "NoteEvent",
           "FileEvent", "BatchEvent"]


def dump_report(paths: list[str], kind: str | None, tally: Tally, *,
                verify: bool = True) -> Iterator[ReportEvent]:
    """``kafkadump dump``: for each path a :class:`FileEvent`, then its events, a segment's
    batches walked here (as :class:`BatchEvent`).  Every problem finding passes
    through ``tally`` (a :class:`kafkadump.base.status.Tally`).

    A name that says nothing (without ``kind``) or an unreadable file raises before any
    event of that file.
    """
    from kafkadump.base.errors import UsageError
    from kafkadump.decoders.batches import iter_batches

    for path in paths:
        if os.path.isdir(path):
            raise UsageError(f"{path}: is a directory; dump reads files (for a partition or log dir use "
                             f"'kafkadump triage {path}', for its segments 'kafkadump batches {path}')")
        # a missing, unreadable or special file (a device): one error line, before any output, as the
        # other commands word it; then a name that says nothing
        open_segment(path).close()
        if kind is None and names.classify(path).kind == names.UNKNOWN:
            raise UsageError(f"{path}: cannot tell what kind of file this is from its name; give --type")
        yield FileEvent(path, len(paths))
        for ev in iter_dump(path, kind, verify=verify):
            if isinstance(ev, TextEvent) and not isinstance(ev.content.get("entries", ()), (list, tuple)):
                yield ev  # a checkpoint's entries are read as the renderer writes them:
                tally.see(ev.findings)  # its findings are complete once it has
                continue
            if not isinstance(ev, BatchesEvent):
                tally.see(event_findings(ev))
                yield ev
                continue
            with open_segment(path) as seg:
                for item in iter_batches(seg.buf, path, options=Options(records=True)):
                    tally.see(item.findings)
                    yield BatchEvent(item)


def event_findings(ev: DumpEvent) -> list[Finding]:
    """The findings an event carries (those of a snapshot's header for a :class:`SnapshotEvent`)."""
    match ev:
        case IndexEntryEvent(findings=fs) | TextEvent(findings=fs) | FindingsEvent(findings=fs):
            return fs
        case SnapshotEvent(snapshot=s):
            return s.findings
    return []
