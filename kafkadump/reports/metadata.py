"""``kafkadump metadata``: a KRaft ``__cluster_metadata-0`` directory replayed, as a stream of items.

Which files are read (:func:`metadata_files`): the newest snapshot
(``OFFSET-EPOCH.checkpoint``, holding the records before OFFSET) whose
offset is not past the point asked for, then the log segments' records
from that offset on; without a snapshot, the log alone (when it does not
start at offset 0, the history before its first offset is unknown and the
summary says so).  A single ``.checkpoint`` or ``.log`` file is read alone.

Every record goes through the shared decoder and the internal-topic
decoder, then :class:`~kafkadump.decoders.internal_topics.metadata_replay.MetadataReplay`;
the items are its events (partition, topic and, when asked, broker
changes), the problems of the bytes (:class:`FileProblems`), the cluster's
state at ``--at`` (:class:`~kafkadump.decoders.internal_topics.metadata_replay.ClusterState`),
and a closing :class:`MetadataSummary`.  Memory: the replay's state (bounded
by the cluster's size, capped) and one batch.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from kafkadump.base.errors import InputError, UsageError
from kafkadump.base.findings import Finding
from kafkadump.base.status import Tally
from kafkadump.base.values import FrozenValue, Value
from kafkadump.decoders.batches import Batch, Gap, Options, iter_batches
from kafkadump.decoders.batches.guard import Walk, guarded_walk
from kafkadump.decoders.batches.primitives import ByteBuffer
from kafkadump.decoders.internal_topics import constants as K
from kafkadump.decoders.internal_topics.metadata_replay import (
    BrokerChange,
    ClusterState,
    MetadataEvent,
    MetadataReplay,
    PartitionChange,
    RecordPlace,
    ReplayCounts,
    TopicChange,
)
from kafkadump.decoders.internal_topics.record_decoder import decoder_for
from kafkadump.decoders.logfiles import names
from kafkadump.reports.query import parse_time
from kafkadump.sources.inputs import open_segments

# a number below this given to --at is an offset; from it on, epoch milliseconds (2001-09-09 onwards)
OFFSET_OR_TIME = 10 ** 12
# where a v2 batch's records (its payload) start: findings inside a compressed payload anchor here
V2_PAYLOAD = 61


class At(FrozenValue):
    """The point ``--at`` names: an offset (the state after it) or a time (after the last record at or before it)."""

    __match_args__ = ("offset", "time")

    offset: int | None
    time: int | None

    def __init__(self, offset: int | None = None, time: int | None = None) -> None:
        self._set(offset=offset, time=time)

    @classmethod
    def parse(cls, text: str | None) -> At | None:
        if text is None:
            return None
        t = text.strip()
        if t.isdigit() and int(t) < OFFSET_OR_TIME:
            return cls(offset=int(t))
        ms = parse_time(t, "--at")
        assert ms is not None
        return cls(time=ms)

    def past(self, offset: int, timestamp: int | None) -> bool:
        """Whether a record at ``offset``/``timestamp`` comes after this point."""
        if self.offset is not None:
            return offset > self.offset
        return timestamp is not None and self.time is not None and timestamp > self.time


class MetadataFiles(Value):
    """What is replayed: a snapshot (or none), then the log segments from its offset on."""

    __match_args__ = ("snapshot", "snapshot_offset", "logs")

    snapshot: str | None
    snapshot_offset: int | None
    logs: list[str]

    def __init__(self, snapshot: str | None, snapshot_offset: int | None, logs: list[str]) -> None:
        self.snapshot = snapshot
        self.snapshot_offset = snapshot_offset
        self.logs = logs


class FileProblems(Value):
    """Problem findings met while reading a file (damage in a batch or between batches)."""

    __match_args__ = ("file", "position", "findings")

    file: str
    position: int
    findings: list[Finding]

    def __init__(self, file: str, position: int, findings: list[Finding]) -> None:
        self.file = file
        self.position = position
        self.findings = findings


class MetadataSummary(Value):
    """The closing item: what was read and what the replay found."""

    __match_args__ = ("path", "files", "counts", "first_offset", "last_offset", "history_from", "topics",
                       "partitions", "brokers", "at", "problems", "unclean", "recreated")

    path: str
    files: MetadataFiles
    counts: ReplayCounts
    first_offset: int | None
    last_offset: int | None
    history_from: int | None     # the first offset whose state before it is known (0: complete)
    topics: int
    partitions: int
    brokers: int
    at: At | None
    problems: int
    unclean: list[str]      # "topic-partition@offset", the first few
    recreated: list[str]    # topic names re-created, the first few

    def __init__(self, path: str, files: MetadataFiles, counts: ReplayCounts, first_offset: int | None = None,
                 last_offset: int | None = None, history_from: int | None = None, topics: int = 0,
                 partitions: int = 0, brokers: int = 0, at: At | None = None, problems: int = 0,
                 unclean: list[str] | None = None, recreated: list[str] | None = None) -> None:
        self.path = path
        self.files = files
        self.counts = counts
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.history_from = history_from
        self.topics = topics
        self.partitions = partitions
        self.brokers = brokers
        self.at = at
        self.problems = problems
        self.unclean = list() if unclean is None else unclean
        self.recreated = list() if recreated is None else recreated


MetadataItem = MetadataEvent | FileProblems | ClusterState | MetadataSummary

SHOWN_IN_SUMMARY = 20
METADATA_DIR = "__cluster_metadata-0"


def metadata_files(path: str, at: At | None = None) -> MetadataFiles:
    """The snapshot and log segments to replay for ``path`` (a ``__cluster_metadata-0`` directory, the
    log dir holding it, a ``.checkpoint`` snapshot or a ``.log`` segment), for the state at ``at`` (None:
    the end)."""
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file or directory")
    if not os.path.isdir(path):
        fn = names.classify(path)
        if fn.kind == names.KRAFT_SNAPSHOT:
            return MetadataFiles(path, fn.offset, [])
        return MetadataFiles(None, None, [path])
    snaps, logs = [], []
    try:
        entries = sorted(os.listdir(path))
    except OSError as e:
        raise InputError(f"{path}: cannot list: {e.strerror or e}") from None
    if METADATA_DIR in entries and os.path.isdir(os.path.join(path, METADATA_DIR)):
        return metadata_files(os.path.join(path, METADATA_DIR), at)   # a log dir: its metadata partition
    for name in entries:
        fn = names.classify(name)
        if fn.suffix is not None:
            continue
        if fn.kind == names.KRAFT_SNAPSHOT and fn.offset is not None:
            snaps.append((fn.offset, os.path.join(path, name)))
        elif fn.kind == names.SEGMENT and fn.offset is not None:
            logs.append((fn.offset, os.path.join(path, name)))
    if not snaps and not logs:
        raise InputError(f"{path}: no KRaft snapshot (*.checkpoint) or log segment (*.log) in it")
    snap = _chosen_snapshot(sorted(snaps), at)
    return MetadataFiles(snap[1] if snap else None, snap[0] if snap else None, [p for _, p in sorted(logs)])


def _chosen_snapshot(snaps: list[tuple[int, str]], at: At | None) -> tuple[int, str] | None:
    """The newest snapshot holding nothing past ``at``."""
    for end, path in reversed(snaps):
        if at is None or at.offset is not None and end <= at.offset + 1:
            return end, path
        if at.time is not None:
            t = _snapshot_time(path)
            if t is not None and t <= at.time:
                return end, path
    return None


def _snapshot_time(path: str) -> int | None:
    """A snapshot's SNAPSHOT_HEADER lastContainedLogTimestamp (None when it cannot be read)."""
    dec = decoder_for(K.METADATA)
    try:
        for _, seg in open_segments([path]):
            for item in iter_batches(seg.buf, path, end=seg.current_size()):
                if isinstance(item, Batch) and item.records:
                    d = dec.decode_record(item.records[0], item)
                    data = d.value.data if d.control == "SNAPSHOT_HEADER" and d.value is not None else None
                    t = data.get("lastContainedLogTimestamp") if isinstance(data, dict) else None
                    return t if isinstance(t, int) else None
                if isinstance(item, Batch):
                    return None
    except InputError:
        return None
    return None


class _Reader:
    """Walks the files into the replay, yielding what the command shows."""

    def __init__(self, files: MetadataFiles, options: Options, tally: Tally, at: At | None, brokers: bool,
                 topics: frozenset[str] | None = None):
        self.files, self.options, self.tally, self.at, self.brokers = files, options, tally, at, brokers
        self.topics = topics
        self.replay = MetadataReplay()
        self.decoder = decoder_for(K.METADATA)
        self.first: int | None = None
        self.stopped = False
        self.unclean: list[str] = []
        self.recreated: list[str] = []

    def items(self) -> Iterator[MetadataItem]:
        f = self.files
        paths = ([f.snapshot] if f.snapshot else []) + f.logs
        for path, seg in open_segments(paths, self.tally):
            snapshot = path == f.snapshot
            start = None if snapshot else f.snapshot_offset
            opt = self.options.replace(records=True, select=_from_offset(start))
            walk = _walker(seg.buf, path, opt)
            for item in guarded_walk(seg, path, walk):
                yield from self._item(path, item, snapshot, start)
                if self.stopped:
                    return

    def _item(self, path: str, item: Batch | Gap, snapshot: bool, start: int | None) -> Iterator[MetadataItem]:
        problems = [x for x in item.findings if x.severity.value != "info"]
        if problems:
            self.tally.see(problems)
            yield FileProblems(path, item.position, problems)
        if not isinstance(item, Batch) or not item.records:
            return
        for r in item.records:
            if start is not None and r.offset < start:
                continue
            if self.at is not None and not snapshot and self.at.past(r.offset, r.timestamp):
                self.stopped = True
                return
            d = self.decoder.decode_record(r, item)
            if d.findings:
                self.tally.see(d.findings)
                yield FileProblems(path, item.position, list(d.findings))
            place = (RecordPlace(path, r.position) if r.source == "file"
                     else RecordPlace(path, item.position + V2_PAYLOAD, r.position))
            if snapshot:
                # a snapshot's records are numbered from 0 in it: their state is the log's before its offset
                d.offset = self.files.snapshot_offset - 1 if self.files.snapshot_offset else d.offset
            elif self.first is None:
                self.first = r.offset
            for ev in self.replay.apply(d, place, snapshot):
                yield from self._event(ev)

    def _event(self, ev: MetadataEvent) -> Iterator[MetadataItem]:
        if isinstance(ev, PartitionChange) and ev.findings:
            self.tally.see(ev.findings)
            if len(self.unclean) < SHOWN_IN_SUMMARY:
                self.unclean.append(f"{ev.topic if ev.topic is not None else ev.topic_id}-{ev.partition}@{ev.offset}")
        elif isinstance(ev, TopicChange) and ev.findings:
            self.tally.see(ev.findings)
            if len(self.recreated) < SHOWN_IN_SUMMARY:
                self.recreated.append(ev.topic if ev.topic is not None else ev.topic_id)
        if self.at is not None or isinstance(ev, BrokerChange) and not self.brokers:
            return
        if self.topics is not None and not isinstance(ev, BrokerChange) and not (
                ev.topic_id in self.topics or ev.topic is not None and ev.topic in self.topics):
            return
        yield ev

    def summary(self, path: str) -> MetadataSummary:
        st = self.replay.state()
        f = self.files
        # the history is known from 0 when the log starts at 0 or right where the snapshot ends
        known_from = f.snapshot_offset if f.snapshot is not None and f.snapshot_offset is not None else 0
        history_from = 0 if self.first is None or self.first <= known_from else self.first
        return MetadataSummary(path, f, self.replay.counts, self.first, st.offset, history_from,
                               len(st.topics), len(st.partitions), len(st.brokers), self.at, self.tally.problems,
                               self.unclean, self.recreated)


def _walker(buf: ByteBuffer, path: str, opt: Options) -> Walk:
    """``iter_batches`` over ``buf`` from ``start`` to ``end`` (for :func:`guarded_walk`)."""
    def walk(start: int, end: int) -> Iterator[Batch | Gap]:
        return iter_batches(buf, path, start=start, end=end, options=opt)
    return walk


def _from_offset(start: int | None) -> Callable[[Batch], bool] | None:
    """Decode the records of the batches that reach ``start`` (all when None)."""
    if start is None:
        return None
    return lambda b: b.last_offset is None or b.last_offset >= start


def metadata_report(path: str, options: Options, tally: Tally, *, at: str | None = None,
                    brokers: bool = False, topics: list[str] | None = None) -> Iterator[MetadataItem]:
    """``metadata``: the history of ``path``'s partitions, topics (and brokers), or its state ``at`` a
    point; then the summary.  ``topics`` (names or topic ids) keeps the changes of those topics only
    (the summary still counts everything).  Unclean elections and re-created topics are problems in
    ``tally``."""
    point = At.parse(at)
    files = metadata_files(path, point)
    if not files.snapshot and not files.logs:
        raise UsageError(f"{path}: nothing to replay")
    reader = _Reader(files, options, tally, point, brokers, frozenset(topics) if topics else None)
    yield from reader.items()
    if point is not None:
        yield _of_topics(reader.replay.state(), reader.topics)
    yield reader.summary(path)


def _of_topics(st: ClusterState, topics: frozenset[str] | None) -> ClusterState:
    """The state with only ``topics`` (names or ids) and their partitions (all when None)."""
    if topics is None:
        return st
    kept = {tid: name for tid, name in st.topics.items() if tid in topics or name in topics}
    parts = {k: p for k, p in st.partitions.items() if k[0] in kept or k[0] in topics}
    configs = {k: c for k, c in st.configs.items() if k[0] != "TOPIC" or k[1] in kept.values()}
    return ClusterState(st.offset, st.timestamp, kept, parts, st.brokers, st.features, configs, st.controllers)


class MetadataCheck(Value):
    """What triage reports about a ``__cluster_metadata`` directory: the replay's problems, each with
    the file it is anchored in (at most :data:`MAX_CHECK_FINDINGS`; the counts are exact)."""

    __match_args__ = ("unclean_elections", "topics_recreated", "findings")

    unclean_elections: int
    topics_recreated: int
    findings: list[tuple[str, Finding]]

    def __init__(self, unclean_elections: int = 0, topics_recreated: int = 0,
                 findings: list[tuple[str, Finding]] | None = None) -> None:
        self.unclean_elections = unclean_elections
        self.topics_recreated = topics_recreated
        self.findings = list() if findings is None else findings


MAX_CHECK_FINDINGS = 10_000


def check_metadata(path: str, options: Options | None = None,
                   on_change: Callable[[PartitionChange], None] | None = None) -> MetadataCheck | None:
    """Replay the metadata directory ``path`` for triage: unclean elections and re-created topics.

    Damage is not reported again (the file scans report it); a directory with
    nothing to replay (or unreadable) gives None.  ``on_change`` is handed every
    partition change of the replay (``kafkadump report`` draws them; one replay).
    """
    check = MetadataCheck()
    try:
        items = metadata_report(path, options or Options(), Tally())
        for item in items:
            if on_change is not None and isinstance(item, PartitionChange):
                on_change(item)
            if isinstance(item, (PartitionChange, TopicChange)) and item.findings:
                if len(check.findings) < MAX_CHECK_FINDINGS:
                    check.findings += [(item.place.file or path, f) for f in item.findings]
            elif isinstance(item, MetadataSummary):
                check.unclean_elections = item.counts.unclean_elections
                check.topics_recreated = item.counts.topics_recreated
    except (InputError, UsageError, OSError):
        return None
    return check


__all__ = ["At", "MetadataCheck", "check_metadata", "MetadataFiles", "FileProblems", "MetadataSummary", "MetadataItem", "metadata_files",
           "metadata_report"]
