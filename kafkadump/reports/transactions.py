"""Transactions across partitions: data and markers joined with the coordinator's records.

Input: the partition folds (:mod:`kafkadump.reports.partition`), which hold
each partition's transaction spans (a producer's transactional data up to the
COMMIT/ABORT marker closing it, or open where the log ends), and the scans of
``__transaction_state-N`` segments, whose decoded summaries hold the
coordinator's latest record per transactional id.  Nothing here reads a file.

**One transaction** is one producer id and epoch's data in one or more
partitions, up to its markers.  Transactions v2 (KIP-890) bump the epoch at
the marker, so a producer id and *data* epoch name one transaction; with
transactions v1 one epoch serves many transactions in a row, so closed spans
of the same producer, epoch and marker type are joined when their time
ranges (first data timestamp to marker timestamp) overlap: a producer cannot
start its next transaction before the markers of the previous one are
written.  An open span joins the closed transaction of its producer and
epoch whose time range holds its first timestamp (markers written to some
partitions and not to this one), else the other open spans of that producer
and epoch.

**States** of an open span (data with no marker after it in its partition),
the rule of Kafka's ``kafka-transactions.sh find-hanging``:

* *hanging* when the coordinator's latest record for the transactional id
  has completed it (CompleteCommit, CompleteAbort, Empty, Dead, a tombstone:
  Kafka's describe lists no partition then), or the id moved to another
  producer id (Kafka finds no transactional id for the data's producer id),
  or its transaction does not list that partition; or, with no coordinator
  record, when the data's last write is older than the broker's default
  timeout (15 minutes: find-hanging's default candidate window).  "Older" is
  measured against the newest timestamp in that partition (the snapshot's
  "now").
* *ongoing* otherwise: the coordinator lists the partition as Ongoing,
  PrepareCommit or PrepareAbort, whatever the epoch (a later epoch's marker
  ends the older epoch's data too) and however old (past its timeout, the
  coordinator aborts it itself); or, with no record, the data is within the
  default timeout.

A transaction is hanging when any of its partitions is, ongoing when any is
open, else committed or aborted.  Memory: the open spans are bounded by the
producers the folds follow; closed ones by :data:`MAX_TRANSACTIONS` (more are
counted, and the count is a ``tracking-limit`` finding of the report).
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from kafkadump.base.findings import Code, Finding
from kafkadump.base.values import FrozenValue, Value
from kafkadump.decoders.internal_topics.coordinator import DEFAULT_PARTITIONS, IdLookup, coordinator_partition
from kafkadump.decoders.logfiles import names
from kafkadump.decoders.logfiles.trackers import MAX_SPANS, TxnSpan
from kafkadump.reports.partition import MAX_PARTITION_SPANS, PartitionFacts
from kafkadump.reports.scan import FileScan

DEFAULT_TIMEOUT_MS = 15 * 60 * 1000   # transaction.max.timeout.ms: the longest a transaction may stay open
MAX_TRANSACTIONS = 100_000            # closed transactions listed by one report (about 1 kB each in memory)
OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")
COMMITTED, ABORTED, ONGOING, HANGING = "committed", "aborted", "ongoing", "hanging"
STATES = (COMMITTED, ABORTED, ONGOING, HANGING)


BOOTSTRAP_PLACEHOLDER = "<host:port>"


def abort_command(topic: str | None, partition: int | None, start_offset: int | None,
                  bootstrap: str = BOOTSTRAP_PLACEHOLDER) -> str:
    """The ``kafka-transactions.sh`` command that aborts the hanging transaction starting at ``start_offset``."""
    return (f"kafka-transactions.sh --bootstrap-server {bootstrap} abort --topic {topic} "
            f"--partition {partition} --start-offset {start_offset}")


class CoordinatorRecord(FrozenValue):
    """The coordinator's latest record for one transactional id (``__transaction_state``)."""

    __match_args__ = ("transactional_id", "state", "producer_id", "producer_epoch", "previous_producer_id",
                       "next_producer_id", "timeout_ms", "partitions", "start_timestamp", "last_update_timestamp",
                       "record_offset", "state_partition", "deleted")

    transactional_id: str
    state: str
    producer_id: int | None
    producer_epoch: int | None
    previous_producer_id: int
    next_producer_id: int
    timeout_ms: int | None
    partitions: tuple[tuple[str, int], ...]
    start_timestamp: int | None
    last_update_timestamp: int | None
    record_offset: int | None
    state_partition: int | None        # the __transaction_state partition it was read from
    deleted: bool

    def __init__(self, transactional_id: str, state: str, producer_id: int | None, producer_epoch: int | None,
                 previous_producer_id: int, next_producer_id: int, timeout_ms: int | None,
                 partitions: tuple[tuple[str, int], ...], start_timestamp: int | None,
                 last_update_timestamp: int | None, record_offset: int | None, state_partition: int | None,
                 deleted: bool) -> None:
        self._set(transactional_id=transactional_id, state=state, producer_id=producer_id,
                  producer_epoch=producer_epoch, previous_producer_id=previous_producer_id,
                  next_producer_id=next_producer_id, timeout_ms=timeout_ms, partitions=partitions,
                  start_timestamp=start_timestamp, last_update_timestamp=last_update_timestamp,
                  record_offset=record_offset, state_partition=state_partition, deleted=deleted)

    def lists(self, topic: str | None, partition: int | None) -> bool:
        return (topic, partition) in self.partitions


class TxnPartition(Value):
    """A transaction's data in one partition (slotted: a report lists up to :data:`MAX_TRANSACTIONS`)."""

    __match_args__ = ("topic", "partition", "path", "span", "state", "reason", "last_stable_offset",
                       "log_end_offset", "anchor")
    __slots__ = __match_args__

    topic: str | None
    partition: int | None
    path: str
    span: TxnSpan
    state: str                          # committed / aborted / ongoing / hanging
    reason: str | None           # why open data is hanging or ongoing
    last_stable_offset: int | None   # open data: where read_committed consumers stop
    log_end_offset: int | None
    anchor: FileScan | None      # open data: the segment scan of its first batch

    def __init__(self, topic: str | None, partition: int | None, path: str, span: TxnSpan, state: str,
                 reason: str | None = None, last_stable_offset: int | None = None,
                 log_end_offset: int | None = None, anchor: FileScan | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self.path = path
        self.span = span
        self.state = state
        self.reason = reason
        self.last_stable_offset = last_stable_offset
        self.log_end_offset = log_end_offset
        self.anchor = anchor


class Transaction(Value):
    """One transaction: its partitions, its state, the coordinator's word on it."""

    __match_args__ = ("producer_id", "producer_epoch", "partitions", "state", "transactional_id", "coordinator",
                       "coordinator_partition")
    __slots__ = __match_args__

    producer_id: int
    producer_epoch: int
    partitions: list[TxnPartition]
    state: str
    transactional_id: str | None
    coordinator: CoordinatorRecord | None
    coordinator_partition: int | None

    def __init__(self, producer_id: int, producer_epoch: int, partitions: list[TxnPartition],
                 state: str = COMMITTED, transactional_id: str | None = None,
                 coordinator: CoordinatorRecord | None = None, coordinator_partition: int | None = None) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.partitions = partitions
        self.state = state
        self.transactional_id = transactional_id
        self.coordinator = coordinator
        self.coordinator_partition = coordinator_partition

    @property
    def first_timestamp(self) -> int | None:
        return _min(p.span.first_timestamp for p in self.partitions)

    @property
    def last_timestamp(self) -> int | None:
        return _max(x for p in self.partitions for x in (p.span.last_timestamp, p.span.marker_timestamp))


class TxnReport(Value):
    """What the join found: the transactions (hanging and ongoing first), counts, bounds met."""

    __match_args__ = ("transactions", "not_listed", "partitions", "state_partitions", "coordinators", "lookups",
                       "findings")

    transactions: list[Transaction]
    not_listed: int                   # closed transactions beyond the bounds: counted only
    partitions: int                   # partitions with data on disk
    state_partitions: list[int]   # __transaction_state partitions read
    coordinators: int                 # transactional ids known from them
    lookups: list[IdLookup]   # the ids asked about: where they live
    findings: list[Finding]

    def __init__(self, transactions: list[Transaction] | None = None, not_listed: int = 0, partitions: int = 0,
                 state_partitions: list[int] | None = None, coordinators: int = 0,
                 lookups: list[IdLookup] | None = None, findings: list[Finding] | None = None) -> None:
        self.transactions = list() if transactions is None else transactions
        self.not_listed = not_listed
        self.partitions = partitions
        self.state_partitions = list() if state_partitions is None else state_partitions
        self.coordinators = coordinators
        self.lookups = list() if lookups is None else lookups
        self.findings = list() if findings is None else findings

    def listed(self, states: Iterable[str] | None = None) -> list[Transaction]:
        """The transactions in ``states`` (None: all), in report order."""
        if states is None:
            return self.transactions
        keep = set(states)
        return [t for t in self.transactions if t.state in keep]

    def count(self, state: str) -> int:
        return sum(1 for t in self.transactions if t.state == state)

    def stuck_partitions(self) -> list[TxnPartition]:
        """One entry per partition holding hanging data (its last stable offset), in topic order."""
        seen: dict[str, TxnPartition] = {}
        for t in self.transactions:
            for p in t.partitions:
                if p.state == HANGING:
                    seen.setdefault(p.path, p)
        return sorted(seen.values(), key=lambda p: (str(p.topic), p.partition or 0, p.path))


def _min(xs: Iterable[int | None]) -> int | None:
    vals = [x for x in xs if x is not None]
    return min(vals) if vals else None


def _max(xs: Iterable[int | None]) -> int | None:
    vals = [x for x in xs if x is not None]
    return max(vals) if vals else None


# --- the coordinator's records --------------------------------------------------------------------

def coordinator_records(scans: Iterable[FileScan]) -> dict[str, CoordinatorRecord]:
    """The latest record per transactional id in the ``__transaction_state`` segment scans (any
    order, several copies of a partition too): the one with the greatest record offset wins."""
    best: dict[str, tuple[int, dict, int | None]] = {}
    for s in scans:
        internal = s.summary.get("internal") if s.kind == names.SEGMENT else None
        if not internal or internal.get("kind") != "transactions":
            continue
        pdir = names.parse_partition_dir(os.path.dirname(s.path))
        for tid, e in (internal.get("transactionalIds") or {}).items():
            off = e.get("recordOffset", -1)
            if tid is not None and (tid not in best or off >= best[tid][0]):
                best[tid] = (off, e, pdir.partition if pdir else None)
    return {tid: _record(tid, e, part) for tid, (_, e, part) in best.items()}


def _record(tid: str, e: dict[str, Any], part: int | None) -> CoordinatorRecord:
    parts = tuple((t, int(p)) for t, ps in (e.get("partitions") or {}).items() for p in ps or ()
                  if isinstance(p, int))
    deleted = bool(e.get("deleted"))
    # a tombstone: the coordinator expired the id (it writes one when the id goes Dead)
    return CoordinatorRecord(tid, "Dead" if deleted else str(e.get("state")),
                             e.get("producerId"), e.get("producerEpoch"), e.get("previousProducerId", -1),
                             e.get("nextProducerId", -1), e.get("timeoutMs"), parts, e.get("startTimestamp"),
                             e.get("lastUpdateTimestamp"), e.get("recordOffset"), part, deleted)


def _by_producer(records: dict[str, CoordinatorRecord]) -> dict[int, CoordinatorRecord]:
    """Producer id -> the record of the transactional id using it (or that used it before: v2
    moves an id to a new producer id when its epoch runs out)."""
    out: dict[int, CoordinatorRecord] = {}
    for r in records.values():
        for pid in (r.producer_id, r.previous_producer_id, r.next_producer_id):
            if isinstance(pid, int) and pid >= 0:
                out.setdefault(pid, r)
    return out


# --- classification ---------------------------------------------------------------------------------

def classify_open(span: TxnSpan, topic: str | None, partition: int | None, newest: int | None,
                  coord: CoordinatorRecord | None) -> tuple[str, str]:
    """``(hanging|ongoing, why)`` for open data ``span`` of a partition whose newest timestamp is ``newest``:
    Kafka's find-hanging rule (the coordinator does not list the partition for that producer id), and,
    with no coordinator record, its default candidate window (the data's last write older than the
    default timeout)."""
    if coord is None:
        return _without_coordinator(span, newest)
    if coord.deleted:
        return HANGING, "the coordinator deleted the transactional id (a tombstone: it expired)"
    if coord.state not in OPEN_STATES:
        return HANGING, f"the coordinator's latest record says {coord.state}: the transaction was completed"
    if coord.producer_id != span.producer_id:
        return HANGING, f"the coordinator moved the transactional id to producer id {coord.producer_id}"
    if not coord.lists(topic, partition):
        return HANGING, f"the coordinator's {coord.state} transaction does not list {topic}-{partition}"
    return ONGOING, _listed_reason(span, newest, coord)


def _without_coordinator(span: TxnSpan, newest: int | None) -> tuple[str, str]:
    age = None if newest is None or span.last_timestamp is None else newest - span.last_timestamp
    if age is not None and age > DEFAULT_TIMEOUT_MS:
        return HANGING, (f"no coordinator record, and the data's last write is {age} ms older than the partition's "
                         f"newest timestamp (beyond the default timeout of {DEFAULT_TIMEOUT_MS} ms)")
    return ONGOING, "no coordinator record; within the default timeout"


def _listed_reason(span: TxnSpan, newest: int | None, coord: CoordinatorRecord) -> str:
    """Why open data the coordinator lists is not hanging (Kafka's find-hanging does not report it)."""
    if coord.producer_epoch is not None and coord.producer_epoch > span.producer_epoch:
        return (f"the coordinator's {coord.state} transaction of a later epoch ({coord.producer_epoch} > "
                f"{span.producer_epoch}) lists it: that transaction's marker ends this data too")
    timeout = coord.timeout_ms if coord.timeout_ms is not None else DEFAULT_TIMEOUT_MS
    age = None if newest is None or span.first_timestamp is None else newest - span.first_timestamp
    if age is not None and age > timeout:
        return (f"the coordinator lists it as {coord.state}, and the data is {age} ms older than the partition's "
                f"newest timestamp (timeout {timeout} ms): timed out, the coordinator aborts it itself")
    return f"the coordinator lists it as {coord.state}, within its timeout"


# --- the join ---------------------------------------------------------------------------------------

def _overlaps(t: Transaction, span: TxnSpan) -> bool:
    lo, hi = t.first_timestamp, t.last_timestamp
    s_lo = span.first_timestamp
    s_hi = span.marker_timestamp if span.marker_timestamp is not None else span.last_timestamp
    if None in (lo, hi, s_lo, s_hi):
        return False
    return s_lo <= hi and lo <= s_hi  # type: ignore[operator]


def _join_closed(pieces: list[TxnPartition]) -> list[Transaction]:
    """Closed pieces of one producer, epoch and marker type: one transaction per overlapping run."""
    pieces.sort(key=lambda p: (p.span.first_timestamp if p.span.first_timestamp is not None else -1,
                               p.span.first_offset or 0))
    out: list[Transaction] = []
    for p in pieces:
        t = out[-1] if out else None
        if t is not None and _overlaps(t, p.span) and all(q.path != p.path for q in t.partitions):
            t.partitions.append(p)
        else:
            out.append(Transaction(p.span.producer_id, p.span.producer_epoch, [p],
                                   COMMITTED if p.span.marker == "COMMIT" else ABORTED))
    return out


# a producer's transactions follow one another in time: an open piece can overlap only the few closed
# transactions starting just before its end (a window allows for clocks that disagree a little)
OVERLAP_WINDOW = 8


def _attach_open(closed: dict[tuple[int, int], list[Transaction]], opened: list[TxnPartition]) -> list[Transaction]:
    """Open pieces join the closed transaction of their producer and epoch whose time range holds them,
    else one transaction per producer and epoch."""
    starts: dict[tuple[int, int], list[int]] = {}
    for key, ts in closed.items():
        ts.sort(key=lambda t: t.first_timestamp if t.first_timestamp is not None else -1)
        starts[key] = [t.first_timestamp if t.first_timestamp is not None else -1 for t in ts]
    alone: dict[tuple[int, int], Transaction] = {}
    for p in opened:
        key = (p.span.producer_id, p.span.producer_epoch)
        ts = closed.get(key, [])
        end = p.span.last_timestamp if p.span.last_timestamp is not None else -1
        i = bisect_right(starts.get(key, []), end)
        home = next((t for t in reversed(ts[max(0, i - OVERLAP_WINDOW):i]) if _overlaps(t, p.span)
                     and all(q.path != p.path for q in t.partitions)), None)
        if home is None:
            home = alone.get(key)
            if home is None:
                home = alone[key] = Transaction(key[0], key[1], [])
        home.partitions.append(p)
    return list(alone.values())


class TransactionJoin:
    """Joins the partitions' transactions with the coordinator's records (see the module's docstring)."""

    def __init__(self, txn_partitions: int = DEFAULT_PARTITIONS):
        self.txn_partitions = txn_partitions
        self.report = TxnReport()
        self.newest: dict[str, int | None] = {}   # partition path -> its newest timestamp
        self.closed: dict[tuple[int, int, str], list[TxnPartition]] = defaultdict(list)
        self.opened: list[TxnPartition] = []
        self.listed = 0

    def add_partition(self, facts: PartitionFacts) -> None:
        """One partition's fold: its open spans (all) and closed ones (as the fold kept them)."""
        r = self.report
        if facts.segments:
            r.partitions += 1
        lso = _min(s.first_offset for s, _ in facts.open_spans)
        for span, scan in facts.open_spans:
            self.opened.append(TxnPartition(facts.topic, facts.partition, facts.path, span, ONGOING,
                                            last_stable_offset=lso, log_end_offset=facts.log_end_offset,
                                            anchor=scan))
        r.not_listed += facts.closed_spans_dropped
        for span in facts.closed_spans:
            if self.listed >= MAX_TRANSACTIONS:
                r.not_listed += 1
                continue
            self.listed += 1
            self.closed[(span.producer_id, span.producer_epoch, span.marker or "")].append(
                TxnPartition(facts.topic, facts.partition, facts.path, span,
                             COMMITTED if span.marker == "COMMIT" else ABORTED, log_end_offset=facts.log_end_offset))
        self.newest[facts.path] = facts.max_timestamp

    def finish(self, records: dict[str, CoordinatorRecord], state_partitions: Iterable[int] = (),
               lookups: Iterable[str] = ()) -> TxnReport:
        """Classify and group; the report (hanging first, then ongoing, then by first offset)."""
        r = self.report
        r.coordinators = len(records)
        r.state_partitions = sorted(set(state_partitions))
        for tid in lookups:
            part = coordinator_partition(tid, self.txn_partitions)
            r.lookups.append(IdLookup(tid, part, part in r.state_partitions, tid in records))
        by_pid = _by_producer(records)
        for p in self.opened:
            p.state, p.reason = classify_open(p.span, p.topic, p.partition, self.newest.get(p.path),
                                              by_pid.get(p.span.producer_id))
        closed_by_key: dict[tuple[int, int], list[Transaction]] = defaultdict(list)
        for (pid, epoch, _), pieces in self.closed.items():
            closed_by_key[(pid, epoch)] += _join_closed(pieces)
        txns = [t for ts in closed_by_key.values() for t in ts] + _attach_open(closed_by_key, self.opened)
        for t in txns:
            self._finish(t, by_pid.get(t.producer_id))
        rank = {HANGING: 0, ONGOING: 1, ABORTED: 2, COMMITTED: 2}
        txns.sort(key=lambda t: (rank[t.state], t.first_timestamp if t.first_timestamp is not None else -1,
                                 t.producer_id, t.producer_epoch))
        r.transactions = txns
        if r.not_listed:
            r.findings.append(Finding(Code.TRACKING_LIMIT, 0,
                                      f"{r.not_listed} closed transactions are counted but not listed (bounded "
                                      f"memory: at most {MAX_TRANSACTIONS} per report, {MAX_PARTITION_SPANS} per "
                                      f"partition, {MAX_SPANS} per segment); every open one is listed"))
        return r

    def _finish(self, t: Transaction, coord: CoordinatorRecord | None) -> None:
        t.partitions.sort(key=lambda p: (str(p.topic), p.partition or 0, p.path))
        states = {p.state for p in t.partitions}
        if HANGING in states:
            t.state = HANGING
        elif ONGOING in states:
            t.state = ONGOING
        if coord is not None:
            t.coordinator = coord
            t.transactional_id = coord.transactional_id
            t.coordinator_partition = coordinator_partition(coord.transactional_id, self.txn_partitions)


def join_transactions(partitions: Iterable[PartitionFacts], state_scans: Iterable[FileScan],
                      txn_partitions: int = DEFAULT_PARTITIONS, lookups: Iterable[str] = ()) -> TxnReport:
    """The transactions of ``partitions`` (their folds) with the coordinator records of ``state_scans``."""
    join = TransactionJoin(txn_partitions)
    for facts in partitions:
        join.add_partition(facts)
    scans = list(state_scans)
    parts = []
    for s in scans:
        pdir = names.parse_partition_dir(os.path.dirname(s.path))
        if pdir is not None and pdir.topic == "__transaction_state":
            parts.append(pdir.partition)
    return join.finish(coordinator_records(scans), parts, lookups)


def hanging_finding(t: Transaction, p: TxnPartition, command: str) -> Finding:
    """The ``hanging-transaction`` finding of a partition's hanging data, at its first batch."""
    who = f"producer {t.producer_id} epoch {t.producer_epoch}"
    if t.transactional_id is not None:
        who += f" (transactional id {t.transactional_id!r})"
    return Finding(Code.HANGING_TRANSACTION, p.span.first_position or 0,
                   f"{who}: transaction from offset {p.span.first_offset} is hanging ({p.reason}); "
                   f"read_committed consumers of {p.topic}-{p.partition} stop at offset {p.last_stable_offset}; "
                   f"end it with: {command}")


__all__ = ["CoordinatorRecord", "Transaction", "TxnPartition", "TxnReport", "TransactionJoin", "join_transactions",
           "coordinator_records", "classify_open", "hanging_finding", "DEFAULT_TIMEOUT_MS", "MAX_TRANSACTIONS",
           "STATES", "COMMITTED", "ABORTED", "ONGOING", "HANGING"]
