"""The segment walk's trackers: each sees the batches of one segment and hands back a typed result.

:func:`kafkadump.reports.scan.scan_segment` walks a segment once and shows
every item to these small trackers, each owning one concern:

* :class:`OffsetTracker`: counts, offset continuity, damage, timestamps;
* :class:`LeaderEpochTracker`: where each partition leader epoch starts;
* :class:`ProducerTracker`: each producer's sequence numbers;
* :class:`TransactionTracker`: transactions opened and closed by markers.

(The index trackers, which walk ``.index`` and ``.timeindex`` entries along
the batches, are in :mod:`kafkadump.reports.scan`.)  A tracker reports the
findings it can judge inside one segment to a sink and keeps, for the
partition fold (:mod:`kafkadump.reports.partition`), a value of what
crosses segment boundaries: bounded per producer and per leader epoch, never
per batch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from kafkadump.base.findings import Code, Finding
from kafkadump.base.values import FrozenValue, Value
from kafkadump.decoders.batches import Batch, Gap

INT32_MAX = 0x7FFFFFFF
# producers whose sequences and transactions are followed, per segment and per partition: the state
# is bounded whatever the number of producer ids (later new ones are counted, not followed)
MAX_PRODUCERS = 20_000
# closed transactions listed per segment for ``kafkadump txn`` (more are counted, not listed)
MAX_SPANS = 10_000


def producer_limit(position: int, pid: int, where: str) -> Finding:
    """The ``tracking-limit`` finding: producer ``pid`` is the first one beyond :data:`MAX_PRODUCERS`."""
    return Finding(Code.TRACKING_LIMIT, position,
                   f"more than {MAX_PRODUCERS} producers in this {where}: from producer {pid} on, new producers' "
                   f"sequences and transactions are not checked (bounded memory)")

AddFinding = Callable[[Finding], None]


# --- typed results ---------------------------------------------------------------------------

class EpochStart(FrozenValue):
    """A partition leader epoch first seen at ``offset`` (the batch at ``position``)."""

    __match_args__ = ("epoch", "offset", "position")

    epoch: int
    offset: int
    position: int

    def __init__(self, epoch: int, offset: int, position: int) -> None:
        self._set(epoch=epoch, offset=offset, position=position)


class SequencePoint(FrozenValue):
    """A producer's first data batch with a sequence in a segment."""

    __match_args__ = ("epoch", "base_sequence", "base_offset", "position", "missing_before", "after_marker")

    epoch: int
    base_sequence: int
    base_offset: int
    position: int
    missing_before: int      # offsets missing in the segment before this batch
    after_marker: bool  # checked against a marker of the same segment that raised the epoch

    def __init__(self, epoch: int, base_sequence: int, base_offset: int, position: int, missing_before: int,
                 after_marker: bool = False) -> None:
        self._set(epoch=epoch, base_sequence=base_sequence, base_offset=base_offset, position=position,
                  missing_before=missing_before, after_marker=after_marker)


class ProducerRun(Value):
    """One producer's sequence facts in one segment: its first and last data batch with a sequence.

    After a marker that raised the epoch (transactions v2) ``epoch`` is the marker's and
    ``last_sequence`` is -1: the producer's next data batch must start at sequence 0."""

    __match_args__ = ("first", "epoch", "last_sequence", "last_offset", "last_position", "missing_at", "batches",
                       "bumps")

    first: SequencePoint | None
    epoch: int | None          # epoch of the last data batch with a sequence
    last_sequence: int | None
    last_offset: int | None
    last_position: int | None
    missing_at: int               # offsets missing in the segment up to the last such batch
    batches: int
    bumps: int                    # markers that raised the epoch (transactions v2, KIP-890)

    def __init__(self, first: SequencePoint | None = None, epoch: int | None = None,
                 last_sequence: int | None = None, last_offset: int | None = None,
                 last_position: int | None = None, missing_at: int = 0, batches: int = 0, bumps: int = 0) -> None:
        self.first = first
        self.epoch = epoch
        self.last_sequence = last_sequence
        self.last_offset = last_offset
        self.last_position = last_position
        self.missing_at = missing_at
        self.batches = batches
        self.bumps = bumps


class TxnStart(FrozenValue):
    """A transaction's first data batch: its offset and position."""

    __match_args__ = ("offset", "position")

    offset: int
    position: int

    def __init__(self, offset: int, position: int) -> None:
        self._set(offset=offset, position=position)


class Marker(FrozenValue):
    """A producer's first COMMIT or ABORT marker in a segment, and the transaction it found open."""

    __match_args__ = ("type", "offset", "position", "open_before", "epoch")

    type: str
    offset: int
    position: int
    open_before: TxnStart | None
    epoch: int | None

    def __init__(self, type: str, offset: int, position: int, open_before: TxnStart | None,
                 epoch: int | None) -> None:
        self._set(type=type, offset=offset, position=position, open_before=open_before, epoch=epoch)


def _first_timestamp(b: Batch) -> int | None:
    ts = b.base_timestamp if b.magic >= 2 and b.timestamp_type == "CreateTime" else batch_timestamp(b)
    return ts if ts is not None and ts >= 0 else None


def _last_timestamp(b: Batch) -> int | None:
    ts = batch_timestamp(b)
    return ts if ts is not None and ts >= 0 else None


class TxnSpan(Value):
    """One producer's transactional data in one partition, from its first data batch to the COMMIT or
    ABORT marker closing it (``marker`` None: still open where the log ends).  ``first_offset`` is None
    for a marker with no data before it in the segment (the data may be in an earlier segment)."""

    __match_args__ = ("producer_id", "producer_epoch", "first_offset", "first_position", "last_offset",
                       "first_timestamp", "last_timestamp", "batches", "marker", "marker_offset",
                       "marker_position", "marker_epoch", "marker_timestamp")
    __slots__ = __match_args__

    producer_id: int
    producer_epoch: int
    first_offset: int | None
    first_position: int | None
    last_offset: int | None
    first_timestamp: int | None
    last_timestamp: int | None
    batches: int
    marker: str | None
    marker_offset: int | None
    marker_position: int | None
    marker_epoch: int | None
    marker_timestamp: int | None

    def __init__(self, producer_id: int, producer_epoch: int, first_offset: int | None = None,
                 first_position: int | None = None, last_offset: int | None = None,
                 first_timestamp: int | None = None, last_timestamp: int | None = None, batches: int = 0,
                 marker: str | None = None, marker_offset: int | None = None, marker_position: int | None = None,
                 marker_epoch: int | None = None, marker_timestamp: int | None = None) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.first_offset = first_offset
        self.first_position = first_position
        self.last_offset = last_offset
        self.first_timestamp = first_timestamp
        self.last_timestamp = last_timestamp
        self.batches = batches
        self.marker = marker
        self.marker_offset = marker_offset
        self.marker_position = marker_position
        self.marker_epoch = marker_epoch
        self.marker_timestamp = marker_timestamp

    @classmethod
    def starting(cls, b: Batch) -> TxnSpan:
        span = cls(b.producer_id, b.producer_epoch, b.base_offset, b.position, first_timestamp=_first_timestamp(b))
        span.add(b)
        return span

    def add(self, b: Batch) -> None:
        """A later data batch of the same transaction."""
        self.batches += 1
        self.last_offset = b.last_offset
        ts = _last_timestamp(b)
        if ts is not None:
            self.last_timestamp = ts if self.last_timestamp is None else max(self.last_timestamp, ts)
        first = _first_timestamp(b)
        if first is not None and (self.first_timestamp is None or first < self.first_timestamp):
            self.first_timestamp = first

    def close(self, ctype: str, b: Batch) -> None:
        self.marker, self.marker_offset, self.marker_position = ctype, b.base_offset, b.position
        self.marker_epoch, self.marker_timestamp = b.producer_epoch, _last_timestamp(b)

    def joined(self, later: TxnSpan | None) -> TxnSpan:
        """This span (open at the end of a segment) continued by ``later`` (from the next one)."""
        if later is None:
            return self
        out = self.replace()
        if later.first_offset is not None:
            out.batches += later.batches
            out.last_offset = later.last_offset
            for ts in (later.first_timestamp, later.last_timestamp):
                if ts is not None:
                    out.last_timestamp = ts if out.last_timestamp is None else max(out.last_timestamp, ts)
        for f in ("marker", "marker_offset", "marker_position", "marker_epoch", "marker_timestamp"):
            setattr(out, f, getattr(later, f))
        return out


class ProducerTxns(Value):
    """One producer's transactions in one segment."""

    __match_args__ = ("open", "first_marker", "transactional", "span", "head")

    open: TxnStart | None          # opened in this segment and not closed in it
    first_marker: Marker | None
    transactional: bool
    span: TxnSpan | None           # the data of ``open``
    head: TxnSpan | None           # what the first marker closed (it may continue an earlier segment's)

    def __init__(self, open: TxnStart | None = None, first_marker: Marker | None = None,
                 transactional: bool = False, span: TxnSpan | None = None, head: TxnSpan | None = None) -> None:
        self.open = open
        self.first_marker = first_marker
        self.transactional = transactional
        self.span = span
        self.head = head


class AbortedTxn(FrozenValue):
    """A transaction opened and aborted inside one segment."""

    __match_args__ = ("producer_id", "first_offset", "marker_offset", "marker_position", "first_position")

    producer_id: int
    first_offset: int
    marker_offset: int
    marker_position: int
    first_position: int

    def __init__(self, producer_id: int, first_offset: int, marker_offset: int, marker_position: int,
                 first_position: int) -> None:
        self._set(producer_id=producer_id, first_offset=first_offset, marker_offset=marker_offset,
                  marker_position=marker_position, first_position=first_position)


class TxnIndexEntry(FrozenValue):
    """A valid ``.txnindex`` entry (an aborted transaction) and where it is in the file."""

    __match_args__ = ("producer_id", "first_offset", "last_offset", "last_stable_offset", "position")

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    position: int

    def __init__(self, producer_id: int, first_offset: int, last_offset: int, last_stable_offset: int,
                 position: int) -> None:
        self._set(producer_id=producer_id, first_offset=first_offset, last_offset=last_offset,
                  last_stable_offset=last_stable_offset, position=position)


class OffsetFacts(Value):
    """What the offsets tracker saw in one segment."""

    __match_args__ = ("base", "batches", "records", "first", "first_position", "last", "offset_gaps", "missing",
                       "compacted_batches", "damaged_ranges", "damaged_bytes", "crc_failures", "valid_bytes",
                       "ends_damaged", "first_timestamp", "max_timestamp", "codecs", "magics")

    base: int | None
    batches: int
    records: int
    first: int | None
    first_position: int | None
    last: int | None
    offset_gaps: int
    missing: int                 # offsets absent between good batches (compaction evidence)
    compacted_batches: int
    damaged_ranges: int
    damaged_bytes: int
    crc_failures: int
    valid_bytes: int | None   # where the first damage or zero tail starts (Kafka's recovery truncates there)
    ends_damaged: bool
    first_timestamp: int | None
    max_timestamp: int | None
    codecs: Counter
    magics: Counter

    def __init__(self, base: int | None, batches: int = 0, records: int = 0, first: int | None = None,
                 first_position: int | None = None, last: int | None = None, offset_gaps: int = 0,
                 missing: int = 0, compacted_batches: int = 0, damaged_ranges: int = 0, damaged_bytes: int = 0,
                 crc_failures: int = 0, valid_bytes: int | None = None, ends_damaged: bool = False,
                 first_timestamp: int | None = None, max_timestamp: int | None = None,
                 codecs: Counter | None = None, magics: Counter | None = None) -> None:
        self.base = base
        self.batches = batches
        self.records = records
        self.first = first
        self.first_position = first_position
        self.last = last
        self.offset_gaps = offset_gaps
        self.missing = missing
        self.compacted_batches = compacted_batches
        self.damaged_ranges = damaged_ranges
        self.damaged_bytes = damaged_bytes
        self.crc_failures = crc_failures
        self.valid_bytes = valid_bytes
        self.ends_damaged = ends_damaged
        self.first_timestamp = first_timestamp
        self.max_timestamp = max_timestamp
        self.codecs = Counter() if codecs is None else codecs
        self.magics = Counter() if magics is None else magics


class SegmentDigest(Value):
    """A segment's facts that cross segment boundaries: the input of the partition fold."""

    __match_args__ = ("offsets", "epochs", "producers", "transactions", "aborted", "sequence_gaps_explained",
                       "txnindex", "txnindex_path", "closed_spans", "closed_spans_dropped")

    offsets: OffsetFacts
    epochs: list[EpochStart]
    producers: dict[int, ProducerRun]
    transactions: dict[int, ProducerTxns]
    aborted: list[AbortedTxn]
    sequence_gaps_explained: int
    txnindex: list[TxnIndexEntry] | None
    txnindex_path: str | None
    closed_spans: list[TxnSpan]   # closed in this segment, after a first marker
    closed_spans_dropped: int                                # beyond MAX_SPANS: counted only

    def __init__(self, offsets: OffsetFacts, epochs: list[EpochStart], producers: dict[int, ProducerRun],
                 transactions: dict[int, ProducerTxns], aborted: list[AbortedTxn],
                 sequence_gaps_explained: int = 0, txnindex: list[TxnIndexEntry] | None = None,
                 txnindex_path: str | None = None, closed_spans: list[TxnSpan] | None = None,
                 closed_spans_dropped: int = 0) -> None:
        self.offsets = offsets
        self.epochs = epochs
        self.producers = producers
        self.transactions = transactions
        self.aborted = aborted
        self.sequence_gaps_explained = sequence_gaps_explained
        self.txnindex = txnindex
        self.txnindex_path = txnindex_path
        self.closed_spans = list() if closed_spans is None else closed_spans
        self.closed_spans_dropped = closed_spans_dropped


# --- the sequence rule -----------------------------------------------------------------------

def next_sequence(seq: int) -> int:
    return 0 if seq == INT32_MAX else seq + 1


def check_sequence(add: AddFinding, pid: int, epoch: int, base_seq: int, position: int, last_epoch: int,
                   last_seq: int, explained: bool) -> bool:
    """The producer-sequence rule shared by the segment walk and the partition fold.

    Reports ``sequence-gap`` / ``sequence-order`` findings to ``add``; returns
    True when a gap was seen but is explained by offsets missing in between
    (compaction or retention removed batches): listed, not a finding.
    """
    where = position + 53  # baseSequence field of the batch
    if epoch < last_epoch:
        add(Finding(Code.SEQUENCE_ORDER, position + 51,
                    f"producer {pid}: epoch {epoch} after epoch {last_epoch} (a fenced producer's write?)"))
        return False
    if epoch > last_epoch:
        if base_seq == 0:
            return False
        if not explained:
            add(Finding(Code.SEQUENCE_GAP, where,
                        f"producer {pid}: new epoch {epoch} starts at sequence {base_seq}, not 0, "
                        f"with no offsets missing since its previous batch"))
        return explained
    expected = next_sequence(last_seq)
    if base_seq == expected:
        return False
    if base_seq > expected:
        if not explained:
            add(Finding(Code.SEQUENCE_GAP, where,
                        f"producer {pid} epoch {epoch}: sequence {base_seq} after {last_seq} "
                        f"({base_seq - expected} missing) with no offsets missing in between"))
        return explained
    add(Finding(Code.SEQUENCE_ORDER, where,
                f"producer {pid} epoch {epoch}: sequence {base_seq} after {last_seq} "
                f"(repeated or out of order)"))
    return False


def batch_timestamp(b: Batch) -> int | None:
    """The batch's largest timestamp (v2), or its message's timestamp (v0/v1)."""
    return b.max_timestamp if b.magic >= 2 else b.timestamp


def control_type(b: Batch) -> str | None:
    """A control batch's marker type (``COMMIT``, ``ABORT``, ...), from its first record."""
    if b.records:
        ctl = b.records[0].control
        if ctl:
            return ctl.get("type")
    return None


# --- the trackers ------------------------------------------------------------------------------

class OffsetTracker:
    """Counts, offset continuity, damage and timestamps of one segment.

    ``base`` is the base offset of the file name; ``pending`` is True for a
    file with a ``.deleted``/``.cleaned``/``.swap`` suffix (its name's base
    need not match).
    """

    def __init__(self, add: AddFinding, base: int | None, pending: bool):
        self.add = add
        self.facts = OffsetFacts(base=base)
        self.pending = pending
        self.damage_since: int | None = None   # position of the first damage since the last good batch
        self.below_base: Batch | None = None
        self.name_gap: tuple[int, int, int] | None = None   # (name's base, first offset, its position)

    def damage(self, item: Batch | Gap, padding: bool, crc_failed: bool) -> None:
        """A gap or a batch whose CRC fails (a preallocated zero tail is no damage)."""
        f = self.facts
        f.crc_failures += crc_failed
        if f.valid_bytes is None:
            f.valid_bytes = item.position
        if padding:
            return
        f.damaged_ranges += 1
        f.damaged_bytes += item.size
        if self.damage_since is None:
            self.damage_since = item.position

    @property
    def damaged_before(self) -> bool:
        return self.damage_since is not None

    def batch(self, b: Batch) -> None:
        f = self.facts
        f.batches += 1
        f.records += b.record_count or 0
        f.codecs[b.compression] += 1
        f.magics[b.magic] += 1
        lo, hi = b.base_offset, b.last_offset
        if f.first is None:
            f.first, f.first_position = lo, b.position
            if f.base is not None and lo > f.base and not self.pending:
                self.name_gap = (f.base, lo, b.position)
        if f.base is not None and lo < f.base and self.below_base is None:
            self.below_base = b
        if f.last is not None and lo > f.last + 1:
            self._gap(b, f.last, lo)
        if hi is not None and (f.last is None or hi > f.last):
            f.last = hi
        self.damage_since = None
        self._timestamps(b)
        if (b.magic >= 2 and b.record_count is not None and b.last_offset_delta is not None
                and b.record_count < b.last_offset_delta + 1):
            f.compacted_batches += 1

    def _gap(self, b: Batch, prev_last: int, lo: int) -> None:
        n = lo - prev_last - 1
        self.facts.offset_gaps += 1
        if self.damage_since is not None:
            self.add(Finding(Code.OFFSET_GAP, b.position,
                             f"offsets {prev_last + 1}..{lo - 1} ({n}) are absent after the damaged bytes at "
                             f"{self.damage_since}: probably lost with them", length=None))
        else:
            self.facts.missing += n
            self.add(Finding(Code.OFFSET_GAP, b.position,
                             f"offsets {prev_last + 1}..{lo - 1} ({n}) are absent between batches "
                             f"(log compaction removes whole batches)"))

    def _timestamps(self, b: Batch) -> None:
        f = self.facts
        ts = batch_timestamp(b)
        if ts is None or ts < 0:
            return
        first_ts = b.base_timestamp if b.magic >= 2 and b.timestamp_type == "CreateTime" else ts
        if first_ts is not None and first_ts >= 0:
            f.first_timestamp = first_ts if f.first_timestamp is None else min(f.first_timestamp, first_ts)
        f.max_timestamp = ts if f.max_timestamp is None else max(f.max_timestamp, ts)

    def finish(self) -> OffsetFacts:
        f = self.facts
        f.ends_damaged = self.damage_since is not None
        b = self.below_base
        if b is not None:
            self.add(Finding(Code.SEGMENT_NAME_MISMATCH, b.position,
                             f"batch at {b.position} holds offset {b.base_offset}, below the base "
                             f"offset {f.base} of the file name"))
        if self.name_gap is not None:
            base, first, position = self.name_gap
            self.add(Finding(Code.OFFSET_GAP, position,
                             f"segment {base} starts at offset {first}: offsets {base}..{first - 1} "
                             f"are absent (removed by log compaction or retention)"))
        return f


class LeaderEpochTracker:
    """Where each partition leader epoch starts; an epoch going backwards is a finding."""

    def __init__(self, add: AddFinding):
        self.add = add
        self.starts: list[EpochStart] = []
        self.current: int | None = None

    def batch(self, b: Batch) -> None:
        e = b.partition_leader_epoch
        if e is None or e < 0 or e == self.current:
            return
        if self.current is not None and e < self.current:
            self.add(Finding(Code.LEADER_EPOCH_MISMATCH, b.position + 12,
                             f"partitionLeaderEpoch {e} after {self.current} (epochs never decrease in a log)"))
            return
        self.starts.append(EpochStart(e, b.base_offset, b.position))
        self.current = e

    def finish(self) -> list[EpochStart]:
        return self.starts


class ProducerTracker:
    """Each producer's sequence numbers across its data batches.

    ``missing`` (offsets missing so far in the segment) is handed in with
    each batch: a gap with offsets missing in between is explained.
    """

    def __init__(self, add: AddFinding):
        self.add = add
        self.runs: dict[int, ProducerRun] = {}
        self.explained_gaps = 0
        self.untracked = 0   # batches of producers beyond MAX_PRODUCERS

    def batch(self, b: Batch, missing: int) -> None:
        """Any v2 batch of a producer (``producerId >= 0``); data batches' sequences are checked."""
        pid = b.producer_id
        run = self.runs.get(pid)
        if run is None:
            if len(self.runs) >= MAX_PRODUCERS:
                self.untracked += 1
                if self.untracked == 1:
                    self.add(producer_limit(b.position, pid, "segment"))
                return
            run = self.runs[pid] = ProducerRun()
        run.batches += 1
        seq = b.base_sequence
        if b.is_control:
            self._marker(run, b)
            return
        if seq is None or seq < 0:
            return
        checked = False
        if run.epoch is not None and run.last_sequence is not None:
            checked = True
            self.explained_gaps += check_sequence(self.add, pid, b.producer_epoch, seq, b.position, run.epoch,
                                                  run.last_sequence, missing > run.missing_at)
        if run.first is None:
            # checked already when a marker of this segment came first (the fold must not check it again)
            run.first = SequencePoint(b.producer_epoch, seq, b.base_offset, b.position, missing, checked)
        run.epoch = b.producer_epoch
        run.last_sequence = b.last_sequence
        run.last_offset = b.last_offset
        run.last_position = b.position
        run.missing_at = missing

    @staticmethod
    def _marker(run: ProducerRun, b: Batch) -> None:
        """A COMMIT/ABORT marker one or more epochs above the producer's data: transactions v2
        (KIP-890) bump the epoch with every marker, and the producer state forgets its sequence, as
        Kafka's ``maybeUpdateProducerHigherEpoch`` does: the next data batch is of the marker's epoch
        and starts at sequence 0, and a data batch of an older epoch is a fenced (zombie) write.
        A marker of the data's own epoch (transactions v1) changes nothing."""
        epoch = b.producer_epoch
        if control_type(b) not in ("COMMIT", "ABORT") or epoch is None or epoch < 0:
            return
        if run.epoch is None or epoch > run.epoch:
            run.epoch = epoch
            run.last_sequence = -1   # next_sequence(-1) is 0
            run.bumps += 1

    def finish(self) -> dict[int, ProducerRun]:
        return self.runs


class TransactionTracker:
    """Transactions opened by transactional batches and closed by COMMIT/ABORT markers."""

    def __init__(self) -> None:
        self.txns: dict[int, ProducerTxns] = {}
        self.aborted: list[AbortedTxn] = []
        self.control_batches: Counter = Counter()
        self.transactional_batches = 0
        self.closed: list[TxnSpan] = []
        self.closed_dropped = 0

    def batch(self, b: Batch) -> None:
        """Any v2 batch."""
        pid = b.producer_id
        if pid is None or pid < 0:
            if b.is_control:
                self.control_batches[control_type(b) or "UNKNOWN"] += 1
            return
        t = self.txns.get(pid)
        if t is None:
            if len(self.txns) >= MAX_PRODUCERS:
                return  # beyond the bound (the producer tracker reports it)
            t = self.txns[pid] = ProducerTxns()
        if b.is_transactional:
            self.transactional_batches += 1
            t.transactional = True
        if b.is_control:
            self._marker(pid, t, b)
        elif b.is_transactional and t.open is None:
            t.open = TxnStart(b.base_offset, b.position)
            t.span = TxnSpan.starting(b)
        elif b.is_transactional and t.span is not None:
            t.span.add(b)

    def _marker(self, pid: int, t: ProducerTxns, b: Batch) -> None:
        ctype = control_type(b)
        self.control_batches[ctype or "UNKNOWN"] += 1
        if ctype not in ("COMMIT", "ABORT"):
            return
        span = t.span or TxnSpan(pid, b.producer_epoch)
        span.close(ctype, b)
        if t.first_marker is None:
            t.first_marker = Marker(ctype, b.base_offset, b.position, t.open, b.producer_epoch)
            t.head = span
        else:
            if t.open is not None and ctype == "ABORT":
                self.aborted.append(AbortedTxn(pid, t.open.offset, b.base_offset, b.position, t.open.position))
            if t.span is not None:
                self._closed(span)
        t.open = None
        t.span = None

    def _closed(self, span: TxnSpan) -> None:
        if len(self.closed) < MAX_SPANS:
            self.closed.append(span)
        else:
            self.closed_dropped += 1

    def open_at_end(self) -> int:
        return sum(1 for t in self.txns.values() if t.open is not None)


__all__ = ["MAX_PRODUCERS", "producer_limit", "OffsetTracker", "LeaderEpochTracker", "ProducerTracker", "TransactionTracker", "SegmentDigest",
           "OffsetFacts", "EpochStart", "SequencePoint", "ProducerRun", "ProducerTxns", "TxnStart", "Marker", "TxnSpan", "MAX_SPANS",
           "AbortedTxn", "TxnIndexEntry", "check_sequence", "next_sequence", "batch_timestamp", "control_type"]
