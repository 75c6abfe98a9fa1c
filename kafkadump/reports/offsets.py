"""Offsets and consumer lag, offline: what ListOffsets and the group coordinator would have answered.

Per partition directory, one pass over its segments' batch headers (the
shared decoder's walk, records not decoded) gives the earliest offset, the
log end offset and the batch with the largest timestamp; with a time ``T``,
the first batch whose largest timestamp is >= T.  Those one or two batches
are then decoded to name the record, as the broker does
(``LogSegment.findOffsetByTimestamp``: the first record with timestamp >= T
in the first batch whose max timestamp is >= T; for the max timestamp, the
first record holding it).  ``replication-offset-checkpoint`` and
``log-start-offset-checkpoint`` in the log dir give the high watermark and
the log start offset (the earliest offset a consumer can fetch, when it is
inside the log on disk; the broker writes an entry only when the log start
offset is past the first segment's base offset, which is the log start
offset otherwise: compaction empties a segment's head without moving it).

``__consumer_offsets`` partitions are decoded by the internal-topic decoder
(:mod:`kafkadump.decoders.internal_topics`): every ``OffsetCommitKey`` record is a
commit, a null value a tombstone that deletes the group's offset.  The
latest commit per group, topic and partition (at most
:data:`MAX_GROUP_OFFSETS`, then a ``tracking-limit`` finding) is compared
with the log end offset of that partition when it is on disk: its lag, or
``committed-beyond-log-end`` when the group committed past what the log
holds.  With ``history`` every commit is listed, in log order.

Items, in order: one :class:`PartitionOffsets` per partition directory
(``__consumer_offsets`` last), the :class:`GroupOffset` items, then one
:class:`OffsetsSummary`.  Memory: one batch, one checkpoint file, and the
latest commits.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from kafkadump.base.errors import InputError
from kafkadump.base.findings import Code, Finding
from kafkadump.base.status import Tally
from kafkadump.base.values import FrozenValue, Value
from kafkadump.decoders.batches import Batch, Options, iter_batches
from kafkadump.decoders.batches.guard import guarded_walk
from kafkadump.decoders.internal_topics.coordinator import (
    DEFAULT_PARTITIONS,
    IdLookup,
    coordinator_partition,
    placement_note,
)
from kafkadump.decoders.logfiles import names
from kafkadump.decoders.logfiles.textfiles import DECODERS, MAX_TEXT_BYTES
from kafkadump.decoders.logfiles.trackers import batch_timestamp
from kafkadump.reports.triage import plan
from kafkadump.sources.segment import open_segment

OFFSETS_TOPIC = "__consumer_offsets"
MAX_GROUP_OFFSETS = 200_000   # latest commits kept (group, topic, partition); more are counted


class OffsetsQuery(FrozenValue):
    """What ``kafkadump offsets`` asks: a time to look up, every commit or the latest, which groups."""

    __match_args__ = ("time", "history", "groups", "offsets_partitions")

    time: int | None
    history: bool
    groups: tuple[str, ...] | None
    offsets_partitions: int

    def __init__(self, time: int | None = None, history: bool = False, groups: tuple[str, ...] | None = None,
                 offsets_partitions: int = DEFAULT_PARTITIONS) -> None:
        self._set(time=time, history=history, groups=groups, offsets_partitions=offsets_partitions)


class PartitionOffsets(Value):
    """One partition directory's offsets."""

    __match_args__ = ("path", "topic", "partition", "segments", "first_offset", "log_start_offset", "log_end",
                       "high_watermark", "max_timestamp", "max_timestamp_offset", "offset_for_time",
                       "finding_counts", "segment_base")

    path: str
    topic: str | None
    partition: int | None
    segments: int
    first_offset: int | None        # of the first batch on disk
    log_start_offset: int | None    # log-start-offset-checkpoint
    log_end: int | None
    high_watermark: int | None      # replication-offset-checkpoint
    max_timestamp: int | None
    max_timestamp_offset: int | None
    offset_for_time: int | None
    finding_counts: Counter

    segment_base: int | None        # the first segment's base offset (its file name)

    def __init__(self, path: str, topic: str | None, partition: int | None, segments: int = 0,
                 first_offset: int | None = None, log_start_offset: int | None = None, log_end: int | None = None,
                 high_watermark: int | None = None, max_timestamp: int | None = None,
                 max_timestamp_offset: int | None = None, offset_for_time: int | None = None,
                 finding_counts: Counter | None = None, segment_base: int | None = None) -> None:
        self.path = path
        self.topic = topic
        self.partition = partition
        self.segments = segments
        self.first_offset = first_offset
        self.log_start_offset = log_start_offset
        self.log_end = log_end
        self.high_watermark = high_watermark
        self.max_timestamp = max_timestamp
        self.max_timestamp_offset = max_timestamp_offset
        self.offset_for_time = offset_for_time
        self.finding_counts = Counter() if finding_counts is None else finding_counts
        self.segment_base = segment_base

    @property
    def earliest(self) -> int | None:
        """ListOffsets EARLIEST, the log start offset as the broker loads it: the checkpoint's, when the log
        on disk holds it, else the first segment's base offset (compaction empties the head of a segment
        without moving it), else the first batch's offset."""
        base = self.segment_base if self.segment_base is not None else self.first_offset
        lso = self.log_start_offset
        if lso is not None and base is not None and self.log_end is not None and base <= lso <= self.log_end:
            return lso
        return base


class GroupOffset(Value):
    """A group's commit for one partition (the latest, or, with ``history``, any)."""

    __match_args__ = ("group", "topic", "partition", "committed", "commit_timestamp", "leader_epoch", "metadata",
                       "expire_timestamp", "deleted", "record_offset", "file", "position", "offsets_partition",
                       "coordinator_partition", "log_end", "findings")

    group: str
    topic: str
    partition: int
    committed: int | None
    commit_timestamp: int | None
    leader_epoch: int | None
    metadata: str | None
    expire_timestamp: int | None
    deleted: bool                 # a tombstone: the group's offset was deleted
    record_offset: int
    file: str                     # the __consumer_offsets segment holding the record
    position: int                 # of the batch holding it
    offsets_partition: int | None
    coordinator_partition: int
    log_end: int | None
    findings: list[Finding]

    def __init__(self, group: str, topic: str, partition: int, committed: int | None, commit_timestamp: int | None,
                 leader_epoch: int | None, metadata: str | None, expire_timestamp: int | None, deleted: bool,
                 record_offset: int, file: str, position: int, offsets_partition: int | None,
                 coordinator_partition: int, log_end: int | None = None,
                 findings: list[Finding] | None = None) -> None:
        self.group = group
        self.topic = topic
        self.partition = partition
        self.committed = committed
        self.commit_timestamp = commit_timestamp
        self.leader_epoch = leader_epoch
        self.metadata = metadata
        self.expire_timestamp = expire_timestamp
        self.deleted = deleted
        self.record_offset = record_offset
        self.file = file
        self.position = position
        self.offsets_partition = offsets_partition
        self.coordinator_partition = coordinator_partition
        self.log_end = log_end
        self.findings = list() if findings is None else findings

    @property
    def lag(self) -> int | None:
        if self.log_end is None or self.committed is None or self.deleted:
            return None
        return self.log_end - self.committed


class OffsetsSummary(Value):
    __match_args__ = ("partitions", "groups", "group_offsets", "commits", "tombstones", "beyond_log_end",
                      "not_tracked", "lookups", "seen_groups", "findings")

    partitions: int
    groups: int
    group_offsets: int
    commits: int
    tombstones: int
    beyond_log_end: int
    not_tracked: int
    lookups: list[IdLookup]   # the --group ids: where they live
    seen_groups: set[str]
    findings: list[Finding]

    def __init__(self, partitions: int = 0, groups: int = 0, group_offsets: int = 0, commits: int = 0,
                 tombstones: int = 0, beyond_log_end: int = 0, not_tracked: int = 0,
                 lookups: list[IdLookup] | None = None, seen_groups: set[str] | None = None,
                 findings: list[Finding] | None = None) -> None:
        self.partitions = partitions
        self.groups = groups
        self.group_offsets = group_offsets
        self.commits = commits
        self.tombstones = tombstones
        self.beyond_log_end = beyond_log_end
        self.not_tracked = not_tracked
        self.lookups = list() if lookups is None else lookups
        self.seen_groups = set() if seen_groups is None else seen_groups
        self.findings = list() if findings is None else findings


# --- checkpoints ----------------------------------------------------------------------------------

class _Checkpoints:
    """The broker checkpoints of each log dir, read once: (topic, partition) -> offset."""

    def __init__(self, tally: Tally):
        self.tally = tally
        self.cache: dict[tuple[str, str], dict[tuple[str, int], int]] = {}

    def get(self, log_dir: str, name: str) -> dict[tuple[str, int], int]:
        key = (log_dir, name)
        if key not in self.cache:
            self.cache[key] = self._read(os.path.join(log_dir, name))
        return self.cache[key]

    def _read(self, path: str) -> dict[tuple[str, int], int]:
        if not os.path.isfile(path):
            return {}
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_TEXT_BYTES + 1)
        except OSError as e:
            self.tally.input_errors.append(f"{path}: {e.strerror or e}")
            return {}
        if len(data) > MAX_TEXT_BYTES:
            return {}
        content, findings = DECODERS[names.OFFSET_CHECKPOINT](data)
        self.tally.see(findings)
        return {(e["topic"], e["partition"]): e["offset"] for e in content.get("entries") or ()}


# --- one partition --------------------------------------------------------------------------------

class _Hit(Value):
    __match_args__ = ("path", "position", "size", "timestamp")

    path: str
    position: int
    size: int
    timestamp: int

    def __init__(self, path: str, position: int, size: int, timestamp: int) -> None:
        self.path = path
        self.position = position
        self.size = size
        self.timestamp = timestamp


def _segments(files: Iterable[str]) -> list[str]:
    segs = [(names.classify(p), p) for p in files]
    live = [(fn.offset if fn.offset is not None else -1, p) for fn, p in segs
            if fn.kind == names.SEGMENT and fn.suffix is None]
    return [p for _, p in sorted(live)]


def _walk(path: str, options: Options, tally: Tally, counts: Counter) -> Iterator[Batch]:
    """The intact batches of one segment (damage counted and tallied)."""
    try:
        seg = open_segment(path)
    except InputError as e:
        tally.input_errors.append(str(e))
        return
    try:
        buf = seg.buf
        for it in guarded_walk(seg, path, lambda s, e: iter_batches(buf, path, start=s, end=e, options=options)):
            for f in it.findings:
                counts[f.code] += 1
            tally.see(it.findings)
            if isinstance(it, Batch) and it.crc_valid is not False and it.last_offset is not None:
                yield it
    finally:
        seg.close()


def _record_offset(hit: _Hit, at_least: int) -> int | None:
    """The offset of the first record of the batch at ``hit`` with timestamp >= ``at_least``."""
    try:
        seg = open_segment(hit.path)
    except InputError:
        return None
    try:
        for it in iter_batches(seg.buf, hit.path, start=hit.position, end=hit.position + hit.size,
                               options=Options(records=True)):
            if not isinstance(it, Batch):
                return None
            if it.magic >= 2 and it.timestamp_type == "LogAppendTime":
                return it.base_offset   # every record has the batch's time
            for r in it.records or ():
                if r.timestamp is not None and r.timestamp >= at_least:
                    return r.offset
            return it.last_offset
    finally:
        seg.close()
    return None


def partition_offsets(path: str, files: Iterable[str], query: OffsetsQuery, tally: Tally,
                      checkpoints: _Checkpoints) -> PartitionOffsets:
    """One partition directory's offsets (see the module's docstring)."""
    pdir = names.parse_partition_dir(path)
    p = PartitionOffsets(path, pdir.topic if pdir else None, pdir.partition if pdir else None)
    segs = _segments(files)
    p.segments = len(segs)
    p.segment_base = names.classify(segs[0]).offset if segs else None
    best: _Hit | None = None
    at_time: _Hit | None = None
    last: int | None = None
    for seg in segs:
        for b in _walk(seg, Options(records=False), tally, p.finding_counts):
            if p.first_offset is None or b.base_offset < p.first_offset:
                p.first_offset = b.base_offset
            hi = b.last_offset if b.last_offset is not None else b.base_offset
            last = hi if last is None else max(last, hi)
            ts = batch_timestamp(b)
            if ts is None or ts < 0:
                continue
            if best is None or ts > best.timestamp:
                best = _Hit(seg, b.position, b.size, ts)
            if query.time is not None and at_time is None and ts >= query.time:
                at_time = _Hit(seg, b.position, b.size, ts)
    p.log_end = None if last is None else last + 1
    if last is None and segs:   # no batch on disk: the log starts and ends at its newest segment's base offset
        p.first_offset = p.log_end = names.classify(segs[-1]).offset
    if best is not None:
        p.max_timestamp = best.timestamp
        p.max_timestamp_offset = _record_offset(best, best.timestamp)
    if at_time is not None and query.time is not None:
        p.offset_for_time = _record_offset(at_time, query.time)
    if pdir is not None and pdir.state is None:
        log_dir = os.path.dirname(os.path.normpath(path))
        key = (pdir.topic, pdir.partition)
        p.high_watermark = checkpoints.get(log_dir, "replication-offset-checkpoint").get(key)
        p.log_start_offset = checkpoints.get(log_dir, "log-start-offset-checkpoint").get(key)
    return p


# --- __consumer_offsets ---------------------------------------------------------------------------

def iter_commits(path: str, files: Iterable[str], query: OffsetsQuery, tally: Tally,
                 counts: Counter) -> Iterator[GroupOffset]:
    """Every offset commit and tombstone in one ``__consumer_offsets`` partition directory, in log order."""
    from kafkadump.decoders.internal_topics.record_decoder import decoder_for

    dec = decoder_for("offsets")
    pdir = names.parse_partition_dir(path)
    for seg in _segments(files):
        for b in _walk(seg, Options(records=True), tally, counts):
            if b.is_control:
                continue
            for r in b.records or ():
                d = dec.decode_record(r, b)
                for f in d.findings:
                    counts[f.code] += 1
                tally.see(d.findings)
                key = d.key
                if key is None or key.schema != "OffsetCommitKey" or not isinstance(key.data, dict):
                    continue
                group = key.data.get("group")
                if not isinstance(group, str) or (query.groups is not None and group not in query.groups):
                    continue
                v = d.value.data if d.value is not None and isinstance(d.value.data, dict) else None
                if d.value is not None and v is None:
                    continue   # a value that did not decode: its finding says why
                yield GroupOffset(
                    group, str(key.data.get("topic")), int(key.data.get("partition", -1)),
                    None if v is None else v.get("offset"), None if v is None else v.get("commitTimestamp"),
                    None if v is None else v.get("leaderEpoch"), None if v is None else v.get("metadata"),
                    None if v is None else v.get("expireTimestamp"), v is None, d.offset, seg, b.position,
                    pdir.partition if pdir else None, coordinator_partition(group, query.offsets_partitions))


def _judge(g: GroupOffset, log_ends: dict[tuple[str, int], int]) -> GroupOffset:
    """Lag against the log end on disk; a commit beyond it is a finding."""
    g.log_end = log_ends.get((g.topic, g.partition))
    if g.log_end is not None and g.committed is not None and not g.deleted and g.committed > g.log_end:
        g.findings.append(Finding(Code.COMMITTED_BEYOND_LOG_END, g.position,
                                  f"group {g.group!r} committed offset {g.committed} for {g.topic}-{g.partition} "
                                  f"(record at offset {g.record_offset}), beyond its log end offset {g.log_end} "
                                  f"on disk"))
    return g


# --- the report -----------------------------------------------------------------------------------

def _partition_order(g: Any) -> tuple:
    """``__consumer_offsets`` last (their commits need every log end); else by topic, partition, path."""
    pdir = names.parse_partition_dir(g.path)
    return (pdir.topic == OFFSETS_TOPIC, pdir.topic, pdir.partition, g.path) if pdir else (True, "", 0, g.path)


def offsets_report(paths: list[str], query: OffsetsQuery, tally: Tally
                   ) -> Iterator[PartitionOffsets | GroupOffset | OffsetsSummary]:
    """The items of ``kafkadump offsets`` (see the module's docstring); problems counted in ``tally``."""
    groups = [g for g in plan(paths) if names.parse_partition_dir(g.path) is not None]
    groups.sort(key=_partition_order)
    checkpoints = _Checkpoints(tally)
    summary = OffsetsSummary()
    log_ends: dict[tuple[str, int], int] = {}
    offsets_dirs = []
    for g in groups:
        p = partition_offsets(g.path, g.files, query, tally, checkpoints)
        summary.partitions += 1
        live = names.parse_partition_dir(g.path).state is None  # type: ignore[union-attr]
        if live and p.topic is not None and p.partition is not None and p.log_end is not None:
            key = (p.topic, p.partition)
            log_ends[key] = max(log_ends.get(key, 0), p.log_end)
        if p.topic == OFFSETS_TOPIC:
            offsets_dirs.append(g)
        yield p
    found: dict[str, int] = {}
    for c in _group_offsets(offsets_dirs, query, tally, log_ends, summary):
        if c.offsets_partition is not None:
            found.setdefault(c.group, c.offsets_partition)
        yield c
    note = placement_note(OFFSETS_TOPIC, "--offsets-partitions", found, query.offsets_partitions)
    if note:
        tally.notes.append(note)
    read = {names.parse_partition_dir(g.path).partition for g in offsets_dirs}  # type: ignore[union-attr]
    for group in query.groups or ():
        part = coordinator_partition(group, query.offsets_partitions)
        summary.lookups.append(IdLookup(group, part, part in read, group in summary.seen_groups))
    tally.see(summary.findings)
    if not summary.partitions:
        tally.notes.append("no partition directory among the inputs (give log dirs, or TOPIC-N partition "
                           "directories)")
    yield summary


def _group_offsets(dirs: list[Any], query: OffsetsQuery, tally: Tally, log_ends: dict[tuple[str, int], int],
                   summary: OffsetsSummary) -> Iterator[GroupOffset]:
    latest: dict[tuple[str, str, int], GroupOffset] = {}
    groups: set[str] = set()
    counts: Counter = Counter()
    for g in dirs:
        for c in iter_commits(g.path, g.files, query, tally, counts):
            summary.commits += not c.deleted
            summary.tombstones += c.deleted
            if len(groups) < MAX_GROUP_OFFSETS:
                groups.add(c.group)
            if query.history:
                summary.group_offsets += 1
                yield _counted(_judge(c, log_ends), summary, tally)
                continue
            key = (c.group, c.topic, c.partition)
            old = latest.get(key)
            if old is None and len(latest) >= MAX_GROUP_OFFSETS:
                summary.not_tracked += 1
                continue
            if old is None or c.record_offset >= old.record_offset:
                latest[key] = c
    summary.groups = len(groups)
    summary.seen_groups = groups
    for key in sorted(latest):
        c = latest[key]
        if c.deleted:
            continue
        summary.group_offsets += 1
        yield _counted(_judge(c, log_ends), summary, tally)
    if summary.not_tracked:
        summary.findings.append(Finding(Code.TRACKING_LIMIT, 0,
                                        f"more than {MAX_GROUP_OFFSETS} group offsets: {summary.not_tracked} "
                                        f"commits of further group/partition pairs are not followed (bounded memory)"))


def _counted(g: GroupOffset, summary: OffsetsSummary, tally: Tally) -> GroupOffset:
    summary.beyond_log_end += bool(g.findings)
    tally.see(g.findings)
    return g


__all__ = ["OffsetsQuery", "PartitionOffsets", "GroupOffset", "OffsetsSummary", "offsets_report",
           "partition_offsets", "iter_commits", "MAX_GROUP_OFFSETS"]
