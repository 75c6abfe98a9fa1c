"""One file of a log dir in, its summary and findings out: the unit of triage.

:func:`scan_file` is a pure function of a path (it reads the file, never
writes, never prints) and works on any file a Kafka log dir holds; Spark
executors and other callers can use it on its own.  For a segment it can
also take the segment's sibling index files and check them against the log
in the same single pass (:func:`scan_segment`): the offset index entries
are visited in position order as the batches go by, the time index entries
in offset order, so nothing grows with the file.

The segment walk shows each batch to small trackers (:mod:`.trackers`:
offsets, leader epochs, producers, transactions; and the two index checks
here).  What crosses segments (offset continuity, producer sequences, open
transactions, leader epochs) cannot be judged from one file: the trackers'
typed results make the segment's ``digest`` (a
:class:`~kafkadump.decoders.logfiles.trackers.SegmentDigest`) that
:mod:`kafkadump.reports.partition` folds, segment by segment, into the
partition's verdict.  It holds per-producer first/last facts and leader-epoch
transitions, not batches.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

from kafkadump.base.errors import InputError
from kafkadump.base.findings import Code, Finding, Severity
from kafkadump.base.findings import worst_severity as worst_of
from kafkadump.decoders.batches import Batch, Gap, Options, iter_batches
from kafkadump.decoders.batches.guard import guarded_walk
from kafkadump.decoders.batches.primitives import ByteBuffer
from kafkadump.decoders.batches.step import plausible_at
from kafkadump.decoders.logfiles import names
from kafkadump.decoders.logfiles.indexes import IndexEntry, OffsetIndex, TimeIndex, TimeIndexEntry, TxnEntry, TxnIndex
from kafkadump.decoders.logfiles.names import FileName
from kafkadump.decoders.logfiles.snapshot import ProducerSnapshot
from kafkadump.decoders.logfiles.textfiles import DECODERS, MAX_TEXT_BYTES
from kafkadump.sources.filetype import SNIFF_BYTES
from kafkadump.sources.filetype import describe as describe_file
from kafkadump.sources.filetype import identify as identify_file
from kafkadump.sources.segment import Segment, open_segment, page_releaser

if TYPE_CHECKING:
    from kafkadump.decoders.internal_topics.summary import Summary

from kafkadump.decoders.logfiles.trackers import (
    LeaderEpochTracker,
    OffsetTracker,
    ProducerTracker,
    SegmentDigest,
    TransactionTracker,
    TxnIndexEntry,
    batch_timestamp,
    check_sequence,
    control_type,
)

DEFAULT_MAX_FINDINGS = 100   # kept per code per file; counts are always complete
PROGRESS_STEP = 4 << 20      # a segment walk tells its progress every this many bytes


class FindingSink:
    """Findings of one file, at most ``cap`` kept per code; counts stay exact."""

    def __init__(self, cap: int | None = DEFAULT_MAX_FINDINGS):
        self.cap = cap
        self.kept: list[Finding] = []
        self.counts: Counter = Counter()

    def add(self, f: Finding) -> None:
        self.counts[f.code] += 1
        if self.cap is None or self.counts[f.code] <= self.cap:
            self.kept.append(f)

    def extend(self, fs: Iterable[Finding]) -> None:
        for f in fs:
            self.add(f)

    @property
    def dropped(self) -> int:
        return sum(self.counts.values()) - len(self.kept)


def tier_summary(fn: FileName) -> dict:
    """``{"tier": "remote" | "index-cache", "remoteSegmentId": ...}`` for a tiered storage file, else {}."""
    return {"tier": fn.tier, "remoteSegmentId": fn.remote_id} if fn.tier is not None else {}


class FileScan:
    """What a scan found in one file.  Picklable (crosses process boundaries).

    ``summary`` is JSON-ready (camelCase); ``findings`` are
    :class:`~kafkadump.base.findings.Finding` objects with offsets in this file;
    ``finding_counts`` counts every finding by code (``findings`` may be
    capped); ``digest`` is for the partition-level fold (segments only).
    """

    def __init__(self, path: str, kind: str):
        self.path = path
        self.kind = kind
        self.size: int | None = None
        self.mtime: str | None = None      # UTC ISO-8601
        self.sha256: str | None = None
        self.summary: dict = tier_summary(names.classify(path))
        self.findings: list[Finding] = []
        self.finding_counts: Counter = Counter()
        self.digest: SegmentDigest | dict | None = None   # SegmentDigest for a segment
        self.error: str | None = None   # the file could not be read at all
        self.cap: int | None = DEFAULT_MAX_FINDINGS

    def take(self, sink: FindingSink) -> None:
        self.findings = sink.kept
        self.finding_counts = sink.counts
        self.cap = sink.cap

    def add(self, f: Finding) -> None:
        """A finding from a later stage (the partition fold); kept within the same cap per code."""
        self.finding_counts[f.code] += 1
        if self.cap is None or self.finding_counts[f.code] <= self.cap:
            self.findings.append(f)

    def worst(self) -> Severity | None:
        """The most severe finding's severity (an unreadable file counts as an error)."""
        if self.error:
            return Severity.ERROR
        return worst_of(self.finding_counts)


def _hash_mapped(path: str, buf: ByteBuffer, h: Any) -> None:
    """Hash ``buf`` (the file's mapping) a MiB at a time, handing the pages behind back; a file
    truncated meanwhile is hashed to its new end (the walk reports ``file-changed``)."""
    release = page_releaser(buf)
    step = 1 << 20
    mv = memoryview(buf)
    try:
        for p in range(0, len(buf), step):
            now = _size_now(path)
            if now < p + step and now < len(buf):
                h.update(mv[p:max(p, now)])
                return
            h.update(mv[p:p + step])
            if release is not None and p % (32 << 20) == 0:
                release(p)
    finally:
        mv.release()
        if release is not None:  # the walk after the hash starts over from the file's start
            release(len(buf))


def _size_now(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


# files smaller than this are hashed by Python's own SHA-256: importing hashlib loads OpenSSL (its
# _hashlib costs a quarter of a bare Python start), which hashes ~3x faster per byte and pays off
# only on larger files
SMALL_HASH = 256 << 10


def sha256_hasher(size: int) -> Any:
    """A SHA-256 hash object for ``size`` bytes: the same digest either way, at the least cost."""
    if size < SMALL_HASH:
        for module in ("_sha2", "_sha256"):  # Python 3.12+, 3.11 (absent from some builds)
            try:
                return __import__(module).sha256()
            except ImportError:
                continue
    import hashlib  # (triage's digests only: dump and carve start without it)

    return hashlib.sha256()


def custody(path: str, scan: FileScan, buf: ByteBuffer | None = None) -> None:
    """Chain of custody: size, modification time (UTC ISO-8601), SHA-256."""
    from datetime import datetime, timezone

    st = os.stat(path)
    scan.size = st.st_size
    try:
        scan.mtime = datetime.fromtimestamp(st.st_mtime, timezone.utc).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):  # an mtime set beyond the calendar: kept as a number
        scan.mtime = str(st.st_mtime)
    h = sha256_hasher(st.st_size)
    if buf is not None:
        _hash_mapped(path, buf, h)
    else:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    scan.sha256 = h.hexdigest()


# --- segments --------------------------------------------------------------------------------

def scan_segment(path: str, *, index: str | None = None, timeindex: str | None = None,
                 txnindex: str | None = None, options: Options | None = None,
                 max_findings: int | None = DEFAULT_MAX_FINDINGS, custody_of: bool = True,
                 on_bytes: Callable[[int], None] | None = None) -> list[FileScan]:
    """Scan a segment and, when given, its index files against it.

    Returns the scans ``[log, index?, timeindex?, txnindex?]`` (only those
    given).  An unreadable sibling gets a scan with ``error`` set.
    ``on_bytes(n)`` is told, every few MiB, how far into the log the walk is.
    """
    name = names.classify(path)
    opt = options or Options()
    log = FileScan(path, names.SEGMENT)
    sink = FindingSink(max_findings)
    try:
        seg = open_segment(path)
    except InputError as e:
        log.error = str(e)
        # the indexes can still be decoded on their own
        return [log] + [scan_file(p, options=options, max_findings=max_findings, custody_of=custody_of)
                        for p in (index, timeindex, txnindex) if p]
    extra: list[FileScan] = []
    try:
        if custody_of:
            custody(path, log, seg.buf)
        else:
            log.size = seg.size
        if name.offset is None and _foreign(seg.buf) is not None:
            # a .log that is not a segment (a broker's own text log, an image named .log)
            log.kind = names.UNKNOWN
            _scan_unknown(seg.buf, names.UNKNOWN, log, sink, path)
            log.take(sink)
            return [log] + [scan_file(p, options=options, max_findings=max_findings, custody_of=custody_of)
                            for p in (index, timeindex, txnindex) if p]
        base = name.offset
        idx_ctx = _open_index(index, names.OFFSET_INDEX, OffsetIndex, base, max_findings, custody_of)
        tix_ctx = _open_index(timeindex, names.TIME_INDEX, TimeIndex, base, max_findings, custody_of)
        txn_ctx = _open_index(txnindex, names.TXN_INDEX, TxnIndex, base, max_findings, custody_of)
        try:
            _walk_segment(seg, path, name, opt, log, sink, idx_ctx, tix_ctx, on_bytes)
            if txn_ctx is not None:
                _scan_txnindex(txn_ctx, log.digest if isinstance(log.digest, SegmentDigest) else None)
        finally:
            for ctx in (idx_ctx, tix_ctx, txn_ctx):
                if ctx is not None:
                    extra.append(ctx.finish())
    finally:
        seg.close()
    log.take(sink)
    if name.suffix:
        log.add(Finding(Code.PENDING_FILE, 0, f"{names.SUFFIXES[name.suffix]}"))
    return [log] + extra


class _IndexCtx:
    """An index file being checked alongside its log."""

    def __init__(self, path, kind, reader, seg, scan, sink):
        self.path = path
        self.kind = kind
        self.reader = reader
        self.seg = seg
        self.scan = scan
        self.sink = sink
        self.entries = 0
        self.verified = 0
        self.unverified = 0
        self.first = None
        self.last = None

    def finish(self) -> FileScan:
        if self.seg is not None:
            self.seg.close()
        s = self.scan
        s.take(self.sink)
        if self.reader is not None:
            s.summary.update({"entries": self.reader.count, "zeroEntries": self.reader.zero_tail,
                              "firstEntry": self.first, "lastEntry": self.last, "checkedAgainstLog": True})
            if self.kind != names.TXN_INDEX:
                s.summary.update({"verifiedEntries": self.verified, "unverifiedEntries": self.unverified})
        return s


def _open_index(path, kind, cls, base, max_findings, custody_of):
    if path is None:
        return None
    scan = FileScan(path, kind)
    sink = FindingSink(max_findings)
    try:
        seg = open_segment(path)
    except InputError as e:
        scan.error = str(e)
        return _IndexCtx(path, kind, None, None, scan, sink)
    if custody_of:
        custody(path, scan, seg.buf)
    else:
        scan.size = seg.size
    reader = cls(seg.buf, path, base)
    sink.extend(reader.findings)
    if names.classify(path).suffix:
        sink.add(Finding(Code.PENDING_FILE, 0, names.SUFFIXES[names.classify(path).suffix]))
    return _IndexCtx(path, kind, reader, seg, scan, sink)


def _entries(ctx):
    """Valid entries of an index (order-broken ones are reported and skipped)."""
    if ctx is None or ctx.reader is None:
        return
    for e in ctx.reader:
        ctx.entries += 1
        if ctx.first is None:
            ctx.first = _entry_json(e)
        ctx.last = _entry_json(e)
        if e.findings:
            ctx.sink.extend(e.findings)
            continue
        yield e


def _entry_json(e: IndexEntry | TimeIndexEntry | TxnEntry) -> dict:
    if isinstance(e, TimeIndexEntry):
        return {"timestamp": e.timestamp, "offset": e.offset}
    if isinstance(e, TxnEntry):
        return {"producerId": e.producer_id, "firstOffset": e.first_offset, "lastOffset": e.last_offset}
    return {"offset": e.offset, "position": e.log_position}


class _IndexCheck:
    """Shared by the two index checks: mismatches are held back until the end.

    If some entries point outside the log (beyond its end, or before its
    first offset), the index describes another version of the log -- the
    log was truncated or rewritten, or the files were copied out of step --
    and its other disagreements follow from that: one ``index-out-of-step``
    warning says so.  Otherwise every mismatching entry is reported.
    """

    code = Code.INDEX_ENTRY_MISMATCH

    def __init__(self, ctx):
        self.ctx = ctx
        self.it = _entries(ctx)
        self.pending = next(self.it, None)
        self.bad: list[Finding] = []
        self.nbad = 0
        self.outside = []     # (entry, why) of the first few outside entries
        self.noutside = 0

    def _bad(self, e, msg):
        self.nbad += 1
        if len(self.bad) < (self.ctx.sink.cap or 1 << 30):
            self.bad.append(Finding(self.code, e.position, f"entry {e.index} ({self._describe(e)}): {msg}"))

    def _outside(self, e, why):
        self.noutside += 1
        if not self.outside:
            self.outside.append((e, why))

    def _next(self):
        self.pending = next(self.it, None)

    def _flush(self, log_size, first_offset, last_offset):
        while self.pending is not None:
            self._outside(self.pending, "beyond the end of the log")
            self._next()
        if self.noutside:
            e, why = self.outside[0]
            more = (f"; {self.nbad} of the entries inside it do not match it either" if self.nbad else "")
            self.ctx.sink.add(Finding(
                Code.INDEX_OUT_OF_STEP, e.position,
                f"{self.noutside} of {self.ctx.entries} entries point outside the log (first: entry {e.index}, "
                f"{self._describe(e)}, {why}; the log has {log_size} bytes, offsets {first_offset}..{last_offset})"
                f"{more}: the index describes another version of the log (truncated, rewritten, or copied "
                f"out of step with it)"))
        else:
            self.ctx.sink.extend(self.bad)
            if self.nbad > len(self.bad):
                self.ctx.sink.counts[self.code] += self.nbad - len(self.bad)


class _OffsetIndexCheck(_IndexCheck):
    """Walks offset index entries (in position order) along the batches.

    An entry (offset o, position p) says: a batch starts at byte p, and o is
    the last offset of the append that started there -- the last offset of
    the batch at p, or (brokers before 3.7, and the log cleaner, index whole
    multi-batch appends) of a later batch before the next entry.
    """

    def __init__(self, ctx, log_size):
        super().__init__(ctx)
        self.claim = None
        self.log_size = log_size
        self.first = None   # the log's first offset, once a good batch was seen

    @staticmethod
    def _describe(e):
        return f"offset {e.offset}, position {e.log_position}"

    def item(self, it: Batch | Gap, valid: bool) -> None:  # valid: an intact batch (a Gap never is)
        # offsets are read only from a valid item, which is a Batch (a gap is never valid)
        b = cast(Batch, it)
        start = it.position
        end = start + it.size
        if valid and self.first is None:
            self.first = b.base_offset
        c = self.claim
        if c is not None:
            if valid:
                if b.last_offset == c.offset:
                    self.ctx.verified += 1
                    self.claim = None
                elif b.last_offset > c.offset:
                    self._bad(c, f"no batch from position {c.log_position} on ends at offset {c.offset} "
                                 f"(the batch at {start} holds {b.base_offset}..{b.last_offset})")
                    self.claim = None
            else:
                self.ctx.unverified += 1   # damage in the way: cannot tell
                self.claim = None
        while self.pending is not None and self.pending.log_position < end:
            e = self.pending
            self._next()
            if e.log_position < start:
                self._bad(e, f"position {e.log_position} is not a batch boundary")
                continue
            if not valid:
                self.ctx.unverified += 1
                continue
            if e.offset < self.first:
                self._outside(e, f"offset {e.offset} is before the log's first offset {self.first}")
                continue
            if e.log_position > start:
                self._bad(e, f"position {e.log_position} is inside the batch at {start} "
                             f"(offsets {b.base_offset}..{b.last_offset}), not at a batch boundary")
                continue
            if b.base_offset > e.offset:
                self._bad(e, f"the batch at {start} holds offsets {b.base_offset}..{b.last_offset}, "
                             f"all after {e.offset}")
            elif b.last_offset == e.offset:
                self.ctx.verified += 1
            elif b.last_offset > e.offset:
                self._bad(e, f"offset {e.offset} is inside the batch at {start} "
                             f"({b.base_offset}..{b.last_offset}), not its last offset")
            else:
                if self.claim is not None:
                    self.ctx.unverified += 1
                self.claim = e  # a multi-batch append: a later batch must end at e.offset

    def finish(self, first_offset, last_offset):
        if self.claim is not None:
            c = self.claim
            if last_offset is None or c.offset > last_offset:
                self._outside(c, f"offset {c.offset} is after the log's last offset")
            else:
                self._bad(c, f"no batch from position {c.log_position} on ends at offset {c.offset}")
        self._flush(self.log_size, first_offset, last_offset)


class _TimeIndexCheck(_IndexCheck):
    """Walks time index entries (in offset order) along the batches.

    An entry (t, o) says: t is the largest timestamp of the segment up to
    offset o, and o holds it -- so the batch holding o has maxTimestamp t.
    """

    code = Code.TIMEINDEX_MISMATCH

    def __init__(self, ctx):
        super().__init__(ctx)
        self.seen_batch = False

    @staticmethod
    def _describe(e):
        return f"timestamp {e.timestamp}, offset {e.offset}"

    def batch(self, b: Batch, damaged_before: bool) -> None:
        while self.pending is not None and self.pending.offset <= b.last_offset:
            e = self.pending
            self._next()
            if e.offset < b.base_offset:
                if not self.seen_batch:
                    self._outside(e, f"before the log's first offset {b.base_offset}")
                elif damaged_before:
                    self.ctx.unverified += 1
                else:
                    self._bad(e, f"no batch holds offset {e.offset} (the next batch starts at {b.base_offset})")
                continue
            ts = batch_timestamp(b)
            if ts != e.timestamp:
                self._bad(e, f"the batch at {b.position} holding it has max timestamp {ts}")
            else:
                self.ctx.verified += 1
        self.seen_batch = True

    def finish(self, first_offset, last_offset, log_size):
        self._flush(log_size, first_offset, last_offset)


def _walk_segment(seg: Segment, path: str, name: FileName, opt: Options, log: FileScan, sink: FindingSink,
                  idx_ctx: _IndexCtx | None, tix_ctx: _IndexCtx | None,
                  on_bytes: Callable[[int], None] | None = None) -> None:
    """One pass over the segment; every item is shown to the trackers (see :mod:`.trackers`)."""
    internal = _internal_summary(path)
    # control batches always get their records decoded (marker types), even when shallow; so do the
    # coordinator records of __transaction_state (the transaction join reads their summary)
    if not opt.records:
        every = internal is not None and internal.kind == "transactions"
        opt = Options(**{**opt.__dict__, "records": True, "select": None if every else lambda b: b.is_control})
    buf = seg.buf
    icheck = _OffsetIndexCheck(idx_ctx, len(buf)) if idx_ctx is not None and idx_ctx.reader else None
    tcheck = _TimeIndexCheck(tix_ctx) if tix_ctx is not None and tix_ctx.reader else None
    offsets = OffsetTracker(sink.add, name.offset, name.suffix is not None)
    epochs = LeaderEpochTracker(sink.add)
    producers = ProducerTracker(sink.add)
    txns = TransactionTracker()
    told = 0
    for it in guarded_walk(seg, path, lambda start, end: iter_batches(buf, path, start=start, end=end,
                                                                       options=opt)):
        if on_bytes is not None and it.position - told >= PROGRESS_STEP:
            told = it.position
            on_bytes(told)
        sink.extend(it.findings)
        if internal is not None and isinstance(it, Batch) and it.crc_valid:
            sink.extend(internal.add_batch(it))
        if isinstance(it, Gap) or it.crc_valid is not True:
            padding = isinstance(it, Gap) and all(f.code is Code.ZERO_PADDING for f in it.findings)
            offsets.damage(it, padding, isinstance(it, Batch) and it.crc_valid is False)
            if icheck:
                icheck.item(it, False)
            continue
        if icheck:
            icheck.item(it, True)
        if tcheck and it.last_offset is not None:
            tcheck.batch(it, offsets.damaged_before)
        offsets.batch(it)
        if it.magic < 2:
            continue
        epochs.batch(it)
        txns.batch(it)
        if it.producer_id is not None and it.producer_id >= 0:
            producers.batch(it, offsets.facts.missing)
    facts = offsets.finish()
    if facts.valid_bytes is None:
        facts.valid_bytes = len(buf)
    if not facts.batches and len(buf):
        what = _foreign(buf)
        if what is not None:
            sink.add(Finding(Code.NOT_KAFKA, 0, f"no record batch in it: seems to be {what}"))
    if icheck:
        icheck.finish(facts.first, facts.last)
    if tcheck:
        tcheck.finish(facts.first, facts.last, len(buf))
    log.digest = SegmentDigest(facts, epochs.finish(), producers.finish(), txns.txns, txns.aborted,
                               producers.explained_gaps, closed_spans=txns.closed,
                               closed_spans_dropped=txns.closed_dropped)
    log.summary.update(_segment_summary(log.digest, txns))
    if internal is not None:
        log.summary["internal"] = internal.result()


def _internal_summary(path: str) -> Summary | None:
    """Kafka's internal topics: a decoded summary (committed offsets per group, transactions, metadata
    changes) when the segment is one of theirs, else None."""
    from kafkadump.decoders.internal_topics.kinds import kind_from_path

    kind = kind_from_path(path)
    if kind is None:  # a user topic's segment: the heavy decoder is not imported
        return None
    from kafkadump.decoders.internal_topics.summary import Summary  # noqa: F811 (imported lazily: it is heavy)

    return Summary(kind)


def _segment_summary(d: SegmentDigest, txns: TransactionTracker) -> dict:
    f = d.offsets
    return {
        "baseOffset": f.base, "batches": f.batches, "records": f.records,
        "firstOffset": f.first, "lastOffset": f.last,
        "firstTimestamp": f.first_timestamp, "maxTimestamp": f.max_timestamp,
        "codecs": dict(sorted(f.codecs.items())), "magic": {str(k): v for k, v in sorted(f.magics.items())},
        "controlBatches": dict(sorted(txns.control_batches.items())),
        "transactionalBatches": txns.transactional_batches,
        "producers": len(d.producers),
        "producerIds": sorted(d.producers)[:50],
        "openTransactionsAtEnd": txns.open_at_end(),
        "offsetGaps": f.offset_gaps, "missingOffsets": f.missing, "compactedBatches": f.compacted_batches,
        "sequenceGapsExplained": d.sequence_gaps_explained,
        "crcFailures": f.crc_failures, "damagedRanges": f.damaged_ranges, "damagedBytes": f.damaged_bytes,
        "validBytes": f.valid_bytes, "leaderEpochs": sorted({e.epoch for e in d.epochs}),
    }


def _txnindex_entries(ctx: _IndexCtx | None) -> list[TxnIndexEntry]:
    return [TxnIndexEntry(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset, e.position)
            for e in _entries(ctx)]


def _scan_txnindex(ctx: _IndexCtx, digest: SegmentDigest | None) -> None:
    """Decode a .txnindex; its entries go into the log's digest for the partition fold."""
    entries = _txnindex_entries(ctx)
    if digest is not None:
        digest.txnindex = entries
        digest.txnindex_path = ctx.path


# --- other files -----------------------------------------------------------------------------

def scan_file(path: str, *, options: Options | None = None, max_findings: int | None = DEFAULT_MAX_FINDINGS,
              custody_of: bool = True) -> FileScan:
    """Scan any one file of a log dir on its own: ``FileScan`` with summary and findings.

    A segment is scanned without its indexes (use :func:`scan_segment` for
    those); an index is decoded and checked for order and tail only.
    """
    fn = names.classify(path)
    if fn.kind == names.SEGMENT:
        return scan_segment(path, options=options, max_findings=max_findings, custody_of=custody_of)[0]
    scan = FileScan(path, fn.kind)
    sink = FindingSink(max_findings)
    try:
        seg = open_segment(path)
    except InputError as e:
        scan.error = str(e)
        return scan
    try:
        if custody_of:
            custody(path, scan, seg.buf)
        else:
            scan.size = seg.size
        _scan_other(seg.buf, path, fn, scan, sink, options)
    finally:
        seg.close()
    if fn.suffix:
        sink.add(Finding(Code.PENDING_FILE, 0, names.SUFFIXES[fn.suffix]))
    scan.take(sink)
    return scan


def _scan_other(buf: ByteBuffer, path: str, fn: FileName, scan: FileScan, sink: FindingSink,
                options: Options | None) -> None:
    kind = fn.kind
    if kind in (names.OFFSET_INDEX, names.TIME_INDEX, names.TXN_INDEX):
        cls = {names.OFFSET_INDEX: OffsetIndex, names.TIME_INDEX: TimeIndex, names.TXN_INDEX: TxnIndex}[kind]
        r = cls(buf, path, fn.offset)
        sink.extend(r.findings)
        n = 0
        first = last = None
        entries = []
        for e in r:
            sink.extend(e.findings)
            n += 1
            j = _entry_json(e)
            first = first or j
            last = j
            if kind == names.TXN_INDEX and not e.findings:
                entries.append(TxnIndexEntry(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset,
                                             e.position))
        scan.summary.update({"baseOffset": fn.offset, "entries": n, "zeroEntries": r.zero_tail,
                             "firstEntry": first, "lastEntry": last, "checkedAgainstLog": False})
        if kind == names.TXN_INDEX:
            scan.digest = {"txnindex": entries}
        return
    if kind == names.PRODUCER_SNAPSHOT:
        s = ProducerSnapshot(buf, path)
        sink.extend(s.findings)
        scan.summary.update({"offset": fn.offset, "version": s.version, "crcValid": s.crc_valid,
                             "producers": len(s.entries),
                             "openTransactions": sum(1 for e in s.entries if e.current_txn_first_offset >= 0)})
        if s.crc_valid and not s.findings:
            scan.digest = {"snapshot": [(e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.position)
                                        for e in s.entries]}
        return
    if kind == names.KRAFT_SNAPSHOT:
        _scan_kraft_snapshot(buf, path, fn, scan, sink, options)
        return
    if kind in DECODERS:
        if len(buf) > MAX_TEXT_BYTES:
            sink.add(Finding(Code.FILE_MALFORMED, 0, f"{len(buf)} bytes: far larger than a {kind} file can be"))
            return
        content, findings = DECODERS[kind](bytes(buf))
        sink.extend(findings)
        scan.summary.update(_text_summary(kind, content, fn))
        scan.digest = {"content": content}
        return
    _scan_unknown(buf, kind, scan, sink, path)


def _foreign(buf: ByteBuffer) -> str | None:
    """What a file holding no batch at its start seems to be, when its first bytes say (else None)."""
    if not len(buf) or plausible_at(buf, 0, len(buf), check_crc=False):
        return None
    return identify_file(bytes(buf[:SNIFF_BYTES]), len(buf))


def _scan_unknown(buf: ByteBuffer, kind: str, scan: FileScan, sink: FindingSink, path: str) -> None:
    """A file no Kafka name fits: a broker's marker or temporary file, record batches under another
    name, or a file that is not Kafka's at all (a ``not-kafka`` finding saying what it seems to be)."""
    if kind == names.MARKER:
        scan.summary["note"] = "a broker's marker file"
        return
    written = names.classify(path[:-len(".tmp")]).kind if path.endswith(".tmp") else names.UNKNOWN
    if written != names.UNKNOWN:
        scan.summary["note"] = f"a broker's temporary file ({written}) being written"
        return
    if plausible_at(buf, 0, len(buf)):
        scan.summary["note"] = "holds record batches under a name that is not a segment's; not scanned"
        return
    what = describe_file(bytes(buf[:SNIFF_BYTES]), len(buf))
    scan.summary["note"] = f"not Kafka: {what}"
    hint = "; read it with 'kafkadump capture'" if what.startswith("a packet capture") else ""
    sink.add(Finding(Code.NOT_KAFKA, 0, f"not a file of Kafka's: seems to be {what}{hint}"))


def _text_summary(kind: str, content: dict, fn: FileName) -> dict:
    if kind == names.OFFSET_CHECKPOINT:
        return {"checkpoint": fn.checkpoint, "version": content.get("version"), "entries": len(content["entries"])}
    if kind == names.LEADER_EPOCH_CHECKPOINT:
        es = content["entries"]
        return {"version": content.get("version"), "entries": len(es),
                "epochs": [[e["epoch"], e["startOffset"]] for e in es[:1000]]}
    if kind == names.PARTITION_METADATA:
        return {"version": content.get("version"), "topicId": content.get("topicId")}
    if kind == names.META_PROPERTIES:
        return {"version": content.get("version"), "nodeId": content.get("nodeId"),
                "clusterId": content.get("clusterId"), "directoryId": content.get("directoryId")}
    if kind == names.QUORUM_STATE:
        return {"dataVersion": content.get("dataVersion"), "leaderId": content.get("leaderId"),
                "leaderEpoch": content.get("leaderEpoch")}
    return {}


def _scan_kraft_snapshot(buf: ByteBuffer, path: str, fn: FileName, scan: FileScan, sink: FindingSink,
                         options: Options | None) -> None:
    """A KRaft snapshot: record batches opening with SNAPSHOT_HEADER and closing with SNAPSHOT_FOOTER."""
    opt = options or Options()
    n_batches = n_records = 0
    first_ctl = last_ctl = None
    first_item = True
    last_pos = 0
    for it in iter_batches(buf, path, options=opt):
        sink.extend(it.findings)
        if isinstance(it, Gap):
            first_item = False
            last_ctl = None
            continue
        n_batches += 1
        n_records += it.record_count or 0
        ctl = control_type(it) if it.is_control else None
        if first_item:
            first_ctl = ctl
            first_item = False
        last_ctl = ctl if it.is_control else None
        last_pos = it.position
    if (n_batches or len(buf)) and fn.suffix != ".part":   # a .part snapshot is still being written
        if first_ctl != "SNAPSHOT_HEADER":
            sink.add(Finding(Code.SNAPSHOT_INCOMPLETE, 0, "the snapshot does not open with a SNAPSHOT_HEADER "
                                                          "control record"))
        if last_ctl != "SNAPSHOT_FOOTER":
            sink.add(Finding(Code.SNAPSHOT_INCOMPLETE, last_pos, "the snapshot does not end with a SNAPSHOT_FOOTER "
                                                                 "control record"))
    scan.summary.update({"endOffset": fn.offset, "epoch": fn.epoch, "batches": n_batches, "records": n_records})


__all__ = ["FileScan", "FindingSink", "scan_file", "scan_segment", "custody", "check_sequence",
           "DEFAULT_MAX_FINDINGS"]
