"""Cross-checks that span the files of one partition, and of one log dir.

The per-file scans (:mod:`kafkadump.reports.scan`) run independently, in any
process; this module folds their digests in offset order, in the main
process, with state bounded per partition (per producer: last epoch,
sequence, offset and open transaction; per leader epoch: where it starts):

* offsets continue from one segment to the next (a gap is compaction or
  retention, unless damage borders it; an overlap is reported);
* each producer's sequence continues across segments, unless offsets are
  missing in between (compaction removes whole batches);
* every transaction is closed by a COMMIT or ABORT marker, possibly in a
  later segment; aborted ones are listed (info) and compared with the
  ``.txnindex`` of the segment holding their ABORT marker;
* the leader epochs stamped on batches match ``leader-epoch-checkpoint``;
* a producer snapshot taken at offset N matches the producers' last batches
  before N;
* at log-dir level, the broker checkpoints (recovery point, high watermark,
  log start, cleaner) are not beyond a partition's log end, and the
  partitions of one topic carry the same topic id.

Findings are attached to the :class:`~kafkadump.reports.scan.FileScan` of the
file they are anchored in.
"""

from __future__ import annotations

import os
from collections import Counter

from kafkadump.base.findings import Code, Finding
from kafkadump.base.values import FrozenValue, Value
from kafkadump.decoders.internal_topics.constants import REMOTE_LOG_METADATA
from kafkadump.decoders.internal_topics.kinds import kind_from_path
from kafkadump.decoders.logfiles import names
from kafkadump.decoders.logfiles.trackers import (
    MAX_PRODUCERS,
    EpochStart,
    ProducerRun,
    ProducerTxns,
    SegmentDigest,
    TxnSpan,
    TxnStart,
    check_sequence,
    producer_limit,
)
from kafkadump.reports.remote import RemoteSegment, check_remote_segments, remote_segments
from kafkadump.reports.scan import FileScan

MAX_PARTITION_SPANS = 100_000   # closed transactions listed per partition when kept


class PartitionFacts(Value):
    """What the fold of one partition directory found (the report's partition object is built from it)."""

    __match_args__ = ("path", "log_dir", "topic", "partition", "state", "files", "segments", "bytes", "batches",
                       "records", "first_offset", "log_end_offset", "missing_offsets", "first_timestamp",
                       "max_timestamp", "crc_failures", "damaged_ranges", "damaged_bytes", "producers",
                       "aborted_transactions", "open_transactions", "sequence_gaps_explained", "leader_epochs",
                       "snapshots_checked", "snapshots_beyond_log", "topic_id", "unclean_elections",
                       "topics_recreated", "hanging_transactions", "open_spans", "closed_spans",
                       "closed_spans_dropped", "remote_segments", "outside_findings")
    __slots__ = __match_args__

    path: str
    log_dir: str | None
    topic: str | None
    partition: int | None
    state: str | None
    files: int
    segments: int
    bytes: int
    batches: int
    records: int
    first_offset: int | None
    log_end_offset: int | None
    missing_offsets: int
    first_timestamp: int | None
    max_timestamp: int | None
    crc_failures: int
    damaged_ranges: int
    damaged_bytes: int
    producers: int
    aborted_transactions: int
    open_transactions: int
    sequence_gaps_explained: int
    leader_epochs: list[int]
    snapshots_checked: int
    snapshots_beyond_log: int
    topic_id: str | None
    unclean_elections: int | None    # a __cluster_metadata partition: what its replay found
    topics_recreated: int | None
    hanging_transactions: int     # set by the transaction join (:mod:`kafkadump.reports.transactions`)
    # transactions (:mod:`kafkadump.reports.transactions` joins them across partitions): the open ones
    # with the segment scan holding their first batch (bounded by the producers followed), and, when
    # the fold is asked to keep them, the closed ones (at most MAX_PARTITION_SPANS, the rest counted)
    open_spans: list[tuple[TxnSpan, FileScan]]
    closed_spans: list[TxnSpan]
    closed_spans_dropped: int
    # a __remote_log_metadata partition: segment id -> its last metadata (for the remote files' check)
    remote_segments: dict[str, RemoteSegment] | None
    # findings about this partition anchored in files outside its directory (a log dir's checkpoints),
    # by code: they count in its verdict
    outside_findings: Counter

    def __init__(self, path: str, log_dir: str | None, topic: str | None, partition: int | None, state: str | None,
                 files: int, segments: int = 0, bytes: int = 0, batches: int = 0, records: int = 0,
                 first_offset: int | None = None, log_end_offset: int | None = None, missing_offsets: int = 0,
                 first_timestamp: int | None = None, max_timestamp: int | None = None, crc_failures: int = 0,
                 damaged_ranges: int = 0, damaged_bytes: int = 0, producers: int = 0, aborted_transactions: int = 0,
                 open_transactions: int = 0, sequence_gaps_explained: int = 0, leader_epochs: list[int] | None = None,
                 snapshots_checked: int = 0, snapshots_beyond_log: int = 0, topic_id: str | None = None,
                 unclean_elections: int | None = None, topics_recreated: int | None = None,
                 hanging_transactions: int = 0, open_spans: list[tuple[TxnSpan, FileScan]] | None = None,
                 closed_spans: list[TxnSpan] | None = None, closed_spans_dropped: int = 0, remote_segments: dict[str,
                 RemoteSegment] | None = None, outside_findings: Counter | None = None) -> None:
        self.path = path
        self.log_dir = log_dir
        self.topic = topic
        self.partition = partition
        self.state = state
        self.files = files
        self.segments = segments
        self.bytes = bytes
        self.batches = batches
        self.records = records
        self.first_offset = first_offset
        self.log_end_offset = log_end_offset
        self.missing_offsets = missing_offsets
        self.first_timestamp = first_timestamp
        self.max_timestamp = max_timestamp
        self.crc_failures = crc_failures
        self.damaged_ranges = damaged_ranges
        self.damaged_bytes = damaged_bytes
        self.producers = producers
        self.aborted_transactions = aborted_transactions
        self.open_transactions = open_transactions
        self.sequence_gaps_explained = sequence_gaps_explained
        self.leader_epochs = list() if leader_epochs is None else leader_epochs
        self.snapshots_checked = snapshots_checked
        self.snapshots_beyond_log = snapshots_beyond_log
        self.topic_id = topic_id
        self.unclean_elections = unclean_elections
        self.topics_recreated = topics_recreated
        self.hanging_transactions = hanging_transactions
        self.open_spans = list() if open_spans is None else open_spans
        self.closed_spans = list() if closed_spans is None else closed_spans
        self.closed_spans_dropped = closed_spans_dropped
        self.remote_segments = remote_segments
        self.outside_findings = Counter() if outside_findings is None else outside_findings


class _ProducerState(Value):
    """One producer across the segments folded so far."""

    __match_args__ = ("epoch", "last_seq", "last_offset", "missing_at", "open", "span")

    epoch: int | None
    last_seq: int | None
    last_offset: int | None
    missing_at: int
    open: tuple[TxnStart, FileScan] | None
    span: TxnSpan | None     # the data of ``open``

    def __init__(self, epoch: int | None = None, last_seq: int | None = None, last_offset: int | None = None,
                 missing_at: int = 0, open: tuple[TxnStart, FileScan] | None = None,
                 span: TxnSpan | None = None) -> None:
        self.epoch = epoch
        self.last_seq = last_seq
        self.last_offset = last_offset
        self.missing_at = missing_at
        self.open = open
        self.span = span


class _ExpectedAbort(FrozenValue):
    __match_args__ = ("producer_id", "first_offset", "marker_offset", "marker_position")

    producer_id: int
    first_offset: int
    marker_offset: int
    marker_position: int

    def __init__(self, producer_id: int, first_offset: int, marker_offset: int, marker_position: int) -> None:
        self._set(producer_id=producer_id, first_offset=first_offset, marker_offset=marker_offset,
                  marker_position=marker_position)


def _digest(s: FileScan) -> SegmentDigest:
    assert isinstance(s.digest, SegmentDigest)
    return s.digest


def _decoded(s: FileScan) -> dict:
    """The decoded content a non-segment file's scan keeps for the fold (``snapshot``, ``content``)."""
    assert isinstance(s.digest, dict)
    return s.digest


def _order_key(s: FileScan) -> tuple[int, str]:
    f = _digest(s).offsets
    return (f.base if f.base is not None else (f.first if f.first is not None else -1), s.path)


class _Fold:
    """The running state of one partition's fold, segment by segment in offset order."""

    def __init__(self, facts: PartitionFacts, snaps: list, keep_spans: bool = False):
        self.facts = facts
        self.keep_spans = keep_spans
        self.producers: dict[int, _ProducerState] = {}
        self.untracked = 0   # producers beyond MAX_PRODUCERS, not followed
        self.epochs: list[tuple[EpochStart, FileScan]] = []
        self.prev_last: int | None = None
        self.prev_scan: FileScan | None = None
        self.snaps = snaps
        self.snap_i = 0

    # producer snapshots -----------------------------------------------------------------------
    def compare_snapshots(self, upto: int | None) -> None:
        """Compare snapshots taken at offsets <= upto (None: all) with the state so far."""
        while self.snap_i < len(self.snaps) and (upto is None or self.snaps[self.snap_i][0] <= upto):
            off, s = self.snaps[self.snap_i]
            self.snap_i += 1
            if self.prev_last is None or off <= self.prev_last:
                continue   # nothing folded yet, or taken inside what we folded: not a boundary we stopped at
            if off > self.prev_last + 1:
                self.facts.snapshots_beyond_log += 1   # taken when the log was longer than this copy of it
                continue
            self.facts.snapshots_checked += 1
            self._compare_snapshot(off, s)

    def _compare_snapshot(self, off: int, s: FileScan) -> None:
        for pid, _epoch, last_seq, last_off, pos in _decoded(s)["snapshot"]:
            st = self.producers.get(pid)
            if last_off < 0 or st is None or st.last_offset is None:
                continue
            if st.last_offset != last_off or st.last_seq != last_seq:
                s.add(Finding(Code.PRODUCER_SNAPSHOT_MISMATCH, pos,
                              f"producer {pid}: the snapshot at offset {off} says last offset {last_off}, "
                              f"sequence {last_seq}; the log's last batch of this producer before {off} "
                              f"ends at {st.last_offset} with sequence {st.last_seq}"))

    # one segment ------------------------------------------------------------------------------
    def segment(self, seg: FileScan, txn_scans: dict) -> None:
        d = _digest(seg)
        o = d.offsets
        self._counts(seg, d)
        if o.first is None:
            return
        self.compare_snapshots(o.first)
        if self.facts.first_offset is None:
            self.facts.first_offset = o.first
        if self.prev_last is not None and self.prev_scan is not None:
            self._boundary(seg, o.first, o.first_position or 0, self.prev_last, self.prev_scan)
        base_missing = self.facts.missing_offsets
        expected = self._producers(seg, d, base_missing)
        self.facts.aborted_transactions += len(expected)
        for a in expected:
            seg.add(Finding(Code.ABORTED_TRANSACTION, a.marker_position,
                            f"producer {a.producer_id}: transaction from offset {a.first_offset} aborted by the "
                            f"marker at offset {a.marker_offset}"))
        _check_txnindex(seg, expected, txn_scans)
        self._epochs(seg, d)
        self.facts.missing_offsets += o.missing
        if o.last is not None and (self.prev_last is None or o.last > self.prev_last):
            self.prev_last = o.last
            self.prev_scan = seg

    def _counts(self, seg: FileScan, d: SegmentDigest) -> None:
        f, o = self.facts, d.offsets
        f.bytes += seg.size or 0
        f.records += o.records
        f.batches += o.batches
        f.crc_failures += o.crc_failures
        f.damaged_ranges += o.damaged_ranges
        f.damaged_bytes += o.damaged_bytes
        f.sequence_gaps_explained += d.sequence_gaps_explained
        if o.first_timestamp is not None:
            f.first_timestamp = o.first_timestamp if f.first_timestamp is None else min(f.first_timestamp,
                                                                                         o.first_timestamp)
        if o.max_timestamp is not None:
            f.max_timestamp = o.max_timestamp if f.max_timestamp is None else max(f.max_timestamp, o.max_timestamp)

    def _boundary(self, seg: FileScan, first: int, position: int, prev_last: int, prev: FileScan) -> None:
        """Offsets continue from the previous segment: an overlap, or a gap (compaction, retention, damage)."""
        if first <= prev_last:
            seg.add(Finding(Code.OFFSET_ORDER, position,
                            f"segment starts at offset {first}, not after offset {prev_last} where "
                            f"{os.path.basename(prev.path)} ends (segments overlap)"))
            return
        if first == prev_last + 1:
            return
        self.facts.missing_offsets += first - prev_last - 1
        base = _digest(seg).offsets.base
        lo = prev_last + 1
        hi = first - 1 if base is None or base > first else min(first, base) - 1
        if hi < lo:
            return
        why = ("probably lost: the previous segment ends in damaged bytes" if _digest(prev).offsets.ends_damaged
               else "removed by log compaction, or the segments between were deleted")
        seg.add(Finding(Code.OFFSET_GAP, position,
                        f"offsets {lo}..{hi} ({hi - lo + 1}) are absent between "
                        f"{os.path.basename(prev.path)} and this segment ({why})"))

    def _producers(self, seg: FileScan, d: SegmentDigest, base_missing: int) -> list[_ExpectedAbort]:
        """Sequences and transactions across the boundary; the transactions this segment aborts."""
        expected = []
        for pid, run in d.producers.items():
            st = self.producers.get(pid)
            if st is None:
                if len(self.producers) >= MAX_PRODUCERS:
                    self._beyond_limit(seg, pid, run)
                    continue
                st = self.producers[pid] = _ProducerState()
            first = run.first
            if first is not None and not first.after_marker and st.epoch is not None and st.last_seq is not None:
                self.facts.sequence_gaps_explained += check_sequence(
                    seg.add, pid, first.epoch, first.base_sequence, first.position, st.epoch, st.last_seq,
                    base_missing + first.missing_before > st.missing_at)
            txn = d.transactions.get(pid)
            if txn is not None:
                expected += self._transactions(seg, pid, st, txn)
            if run.last_sequence is not None:
                st.epoch, st.last_seq = run.epoch, run.last_sequence
                if run.last_offset is not None:  # None: only a marker raised the epoch (transactions v2)
                    st.last_offset = run.last_offset
                st.missing_at = base_missing + run.missing_at
        for a in d.aborted:
            expected.append(_ExpectedAbort(a.producer_id, a.first_offset, a.marker_offset, a.marker_position))
        for span in d.closed_spans:
            self.closed_span(span)
        if self.keep_spans:
            self.facts.closed_spans_dropped += d.closed_spans_dropped
        return expected

    def _beyond_limit(self, seg: FileScan, pid: int, run: ProducerRun) -> None:
        """Producer ``pid`` is new and the partition already follows :data:`MAX_PRODUCERS`: not followed."""
        self.untracked += 1
        if self.untracked == 1:
            first = run.first
            seg.add(producer_limit(first.position if first is not None else 0, pid, "partition"))

    def _transactions(self, seg: FileScan, pid: int, st: _ProducerState, txn: ProducerTxns) -> list[_ExpectedAbort]:
        marker = txn.first_marker
        if marker is None:
            if txn.open is not None and st.open is None:
                st.open = (txn.open, seg)
            if txn.span is not None:
                st.span = txn.span if st.span is None else st.span.joined(txn.span)
            return []
        out = []
        start = st.open[0] if st.open else marker.open_before
        if start is not None and marker.type == "ABORT":
            out.append(_ExpectedAbort(pid, start.offset, marker.offset, marker.position))
        closed = st.span.joined(txn.head) if st.span is not None else txn.head
        if closed is not None and closed.first_offset is not None:
            self.closed_span(closed)
        st.open = (txn.open, seg) if txn.open else None
        st.span = txn.span
        return out

    def closed_span(self, span: TxnSpan) -> None:
        """A transaction closed in this partition: listed when the fold keeps them (counted beyond the bound)."""
        f = self.facts
        if not self.keep_spans:
            return
        if len(f.closed_spans) < MAX_PARTITION_SPANS:
            f.closed_spans.append(span)
        else:
            f.closed_spans_dropped += 1

    def _epochs(self, seg: FileScan, d: SegmentDigest) -> None:
        for e in d.epochs:
            if self.epochs and e.epoch <= self.epochs[-1][0].epoch:
                last = self.epochs[-1][0].epoch
                if e.epoch < last:
                    seg.add(Finding(Code.LEADER_EPOCH_MISMATCH, e.position + 12,
                                    f"partitionLeaderEpoch {e.epoch} at offset {e.offset} after epoch {last} "
                                    f"(epochs never decrease in a log)"))
                continue
            self.epochs.append((e, seg))

    # the end -----------------------------------------------------------------------------------
    def open_transactions(self) -> None:
        for pid, st in self.producers.items():
            if st.open is None:
                continue
            self.facts.open_transactions += 1
            start, s = st.open
            if st.span is not None:
                self.facts.open_spans.append((st.span, s))
            s.add(Finding(Code.OPEN_TRANSACTION, start.position,
                          f"producer {pid}: transaction from offset {start.offset} has no COMMIT or ABORT marker "
                          f"up to the end of the log (still in flight, or hanging)"))


def log_dir_of(path: str) -> str | None:
    """The log dir holding a partition directory (its parent), or None when ``path`` is not one."""
    if names.parse_partition_dir(path) is None:
        return None
    return os.path.dirname(os.path.normpath(path)) or None


def fold_partition(path: str, scans: list[FileScan], keep_spans: bool = False) -> PartitionFacts:
    """Cross-check the scans of one partition directory; return what was found.

    ``scans`` are every file scan of the directory (any order).  Findings
    are added to the scans they concern.  ``keep_spans``: list the closed
    transactions too (``kafkadump txn``), not only the open ones.
    """
    pdir = names.parse_partition_dir(path)
    live = [s for s in scans if names.classify(s.path).suffix is None and not s.error]
    segs = sorted((s for s in live if s.kind == names.SEGMENT and isinstance(s.digest, SegmentDigest)),
                  key=_order_key)
    # a remote segment's producer snapshot and leader epoch checkpoint describe that segment's copy,
    # named by its start offset: not the partition's snapshots and checkpoint
    local = [s for s in live if names.classify(s.path).tier is None]
    snaps = sorted(((_snapshot_offset(s), s) for s in local
                    if s.kind == names.PRODUCER_SNAPSHOT and s.digest and names.classify(s.path).offset is not None),
                   key=lambda x: x[0])
    lec = next((s for s in local if s.kind == names.LEADER_EPOCH_CHECKPOINT and s.digest), None)
    meta = next((s for s in live if s.kind == names.PARTITION_METADATA and s.digest), None)
    txn_scans = {s.path: s for s in live if s.kind == names.TXN_INDEX}
    facts = PartitionFacts(path=path, log_dir=log_dir_of(path), topic=pdir.topic if pdir else None,
                           partition=pdir.partition if pdir else None, state=pdir.state if pdir else None,
                           files=len(scans), segments=len(segs),
                           topic_id=_decoded(meta)["content"].get("topicId") if meta else None)
    fold = _Fold(facts, snaps, keep_spans)
    for seg in segs:
        fold.segment(seg, txn_scans)
    fold.compare_snapshots(None)
    fold.open_transactions()
    if lec is not None and fold.epochs:
        _check_leader_epochs(lec, fold.epochs)
    facts.log_end_offset = None if fold.prev_last is None else fold.prev_last + 1
    facts.producers = len(fold.producers)
    facts.leader_epochs = [e.epoch for e, _ in fold.epochs[-20:]]
    if pdir and pdir.state:
        _pending_partition(path, pdir.state, segs[0] if segs else (scans[0] if scans else None))
    if kind_from_path(path) == REMOTE_LOG_METADATA:
        facts.remote_segments = remote_segments(segs)
        check_remote_segments(facts.remote_segments)
    return facts


def _snapshot_offset(s: FileScan) -> int:
    return names.classify(s.path).offset or 0


def _pending_partition(path: str, state: str, anchor: FileScan | None) -> None:
    what = {"delete": "being deleted", "future": "a replica being moved to this log dir",
            "stray": "left behind (stray)"}[state]
    if anchor is not None:
        anchor.add(Finding(Code.PENDING_FILE, 0, f"partition directory {os.path.basename(path)}: {what}"))


def _check_txnindex(seg: FileScan, expected: list[_ExpectedAbort], txn_scans: dict) -> None:
    """The aborted transactions a segment closes against the entries of its ``.txnindex``."""
    d = _digest(seg)
    if d.txnindex is None:
        if expected:
            e0 = expected[0]
            seg.add(Finding(Code.TXNINDEX_MISMATCH, e0.marker_position,
                            f"{len(expected)} aborted transactions (first: producer {e0.producer_id}, offsets "
                            f"{e0.first_offset}..{e0.marker_offset}) but no .txnindex beside the segment"))
        return
    tscan = txn_scans.get(d.txnindex_path)
    want = {(a.producer_id, a.marker_offset): a for a in expected}
    seen = set()
    for e in d.txnindex:
        key = (e.producer_id, e.last_offset)
        a = want.get(key)
        if a is None:
            if tscan is not None:
                tscan.add(Finding(Code.TXNINDEX_MISMATCH, e.position,
                                  f"aborted transaction of producer {e.producer_id}, offsets {e.first_offset}.."
                                  f"{e.last_offset}: the segment has no ABORT marker of that producer at offset "
                                  f"{e.last_offset} closing a transaction"))
            continue
        seen.add(key)
        if e.first_offset > a.first_offset and tscan is not None:
            tscan.add(Finding(Code.TXNINDEX_MISMATCH, e.position,
                              f"aborted transaction of producer {e.producer_id} starts at {e.first_offset} in the "
                              f"index, but its data starts at offset {a.first_offset} in the log"))
    for key, a in want.items():
        if key not in seen:
            seg.add(Finding(Code.TXNINDEX_MISMATCH, a.marker_position,
                            f"producer {key[0]}: transaction {a.first_offset}..{key[1]} was aborted but the "
                            f".txnindex has no entry for it"))


def _check_leader_epochs(lec: FileScan, epochs: list[tuple[EpochStart, FileScan]]) -> None:
    """Batch leader epochs against leader-epoch-checkpoint.

    When the log start offset advances, the broker drops the checkpoint's
    entries below it and moves the first remaining entry's start offset up
    to it, while the segment holding those offsets may still be on disk.  So
    epochs older than the checkpoint's first, and a first entry starting
    after the batches carrying it, are not disagreements.
    """
    entries = _decoded(lec)["content"]["entries"]
    if not entries:
        return
    by_epoch = {e["epoch"]: e for e in entries}
    first_epoch = entries[0]["epoch"]
    for start, seg in epochs:
        e, off, pos = start.epoch, start.offset, start.position
        ent = by_epoch.get(e)
        if ent is None:
            if e < first_epoch:
                continue
            seg.add(Finding(Code.LEADER_EPOCH_MISMATCH, pos + 12,
                            f"batches of leader epoch {e} from offset {off}, but leader-epoch-checkpoint has no "
                            f"epoch {e}"))
        elif ent["startOffset"] > off and e != first_epoch:
            lec.add(Finding(Code.LEADER_EPOCH_MISMATCH, ent["position"],
                            f"epoch {e} starts at offset {ent['startOffset']} here, but the batch at offset {off} "
                            f"({os.path.basename(seg.path)}, position {pos}) already carries it"))


def fold_logdir(path: str, scans: list[FileScan], partitions: dict[str, PartitionFacts],
                meta_scans: dict[str, FileScan]) -> None:
    """Log-dir-level checks: broker checkpoints and topic ids against the partitions.

    ``scans`` are the files directly in the log dir; ``partitions`` maps a
    partition directory name (``orders-3``) to its summary, ``meta_scans``
    to its partition.metadata scan.
    """
    for s in scans:
        if s.kind != names.OFFSET_CHECKPOINT or s.error or not s.digest:
            continue
        which = names.classify(s.path).checkpoint or ""
        what = {"recovery-point-offset-checkpoint": "recovery point",
                "replication-offset-checkpoint": "high watermark",
                "log-start-offset-checkpoint": "log start offset",
                "cleaner-offset-checkpoint": "cleaner checkpoint"}[which]
        for e in _decoded(s)["content"]["entries"]:
            p = partitions.get(f"{e['topic']}-{e['partition']}")
            if p is None or p.log_end_offset is None:
                continue
            if e["offset"] > p.log_end_offset:
                s.add(Finding(Code.CHECKPOINT_MISMATCH, e["position"],
                              f"{e['topic']}-{e['partition']}: {what} {e['offset']} is beyond the partition's "
                              f"log end offset {p.log_end_offset} on disk"))
                p.outside_findings[Code.CHECKPOINT_MISMATCH] += 1
    ids: dict = {}
    for p in partitions.values():
        if p.topic_id and p.state is None:
            ids.setdefault(p.topic, Counter())[p.topic_id] += 1
    for name, p in sorted(partitions.items()):
        c = ids.get(p.topic)
        ms = meta_scans.get(name)
        if not c or len(c) < 2 or ms is None or p.state is not None:
            continue
        common, n = c.most_common(1)[0]
        if p.topic_id != common:
            ms.add(Finding(Code.CHECKPOINT_MISMATCH, 0,
                           f"topic id {p.topic_id} differs from {common}, held by {n} other partitions of "
                           f"{p.topic} in this log dir (a deleted and re-created topic?)"))


__all__ = ["PartitionFacts", "fold_partition", "fold_logdir", "log_dir_of"]
