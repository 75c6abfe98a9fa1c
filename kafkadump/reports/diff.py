"""``kafkadump diff A B``: two copies of one partition compared by offset, as a stream of items.

A and B are partition directories (their segments in offset order) or
segment files: replicas from two brokers, a backup and the live log, a
mirror.  They are aligned by offset, not by file (segment boundaries differ
between replicas), and walked together:

* where both copies are at a batch boundary and the two batches agree
  (base offset, last offset delta, length, leader epoch, valid CRC-32C and
  the same CRC: the CRC covers attributes, timestamps, producer fields and
  every record), the whole batch is the same, and no record is decoded;
* elsewhere, record by record: an offset in both copies is the same when the
  records agree (timestamp, key, value, headers) and so do their batches'
  leader epoch, producer id and epoch, sequence, transactional and control
  flags; else it is different.  An offset in one copy only is ``only-in-a``
  or ``only-in-b``, with the pattern its absence has in the other copy:
  ``compaction-hole`` (the other copy has offsets before and after it: log
  compaction removed it, not loss), ``log-start`` (before the other copy's
  first offset: its retention or log start), ``tail`` (after the other
  copy's last offset: it never had it, or lost it), ``damaged`` (the other
  copy's bytes there are damaged: a gap, a batch whose CRC fails or whose
  records do not decode; a record of a CRC-failed batch is no evidence, so
  the offset counts as the intact copy's only).

Runs of offsets of one kind and one pair of leader epochs become
:class:`Divergence` items as they end (runs of agreeing offsets are only
counted); the :class:`DiffSummary` comes last, with the verdict:

* ``identical``: every offset in one copy is in the other, the same;
* ``diverged``: some offset holds different records (the usual cause: one
  copy was truncated and rewritten after an unclean election), or each copy
  lost (tail, damage) records the other has;
* ``a-contains-b`` / ``b-contains-a``: no offset differs and the copy named
  first has everything the other has, or has records the other lost (its
  tail, or to damage); offsets one lacks by compaction or retention are
  not counted as loss;
* ``equivalent``: no offset differs, neither goes on past the other, and
  each lacks only offsets the other's compaction or retention removed.

Memory: one batch per copy, the current run, and the summary's counters.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator

from kafkadump.base.errors import InputError
from kafkadump.base.findings import DecodeError, Finding
from kafkadump.base.status import Tally
from kafkadump.base.values import Value
from kafkadump.decoders.batches import Batch, Gap, Options, Record, iter_batches
from kafkadump.decoders.batches.guard import Walk, guarded_walk
from kafkadump.decoders.batches.step import decode_item
from kafkadump.decoders.logfiles import names
from kafkadump.sources.input_paths import expand
from kafkadump.sources.inputs import open_segments
from kafkadump.sources.segment import Segment

SAME, ONLY_A, ONLY_B, DIFFERENT = "same", "only-in-a", "only-in-b", "different"
TAIL, HOLE, LOG_START, DAMAGED = "tail", "compaction-hole", "log-start", "damaged"
LOST = (TAIL, DAMAGED)  # what one copy lacks for real (the rest: compaction or retention)
MAX_DAMAGE = 64     # damaged offset ranges remembered per copy (the latest)
NO_END = 1 << 63
MAX_EPOCHS = 1000   # leader epoch starts kept per copy for the summary


class CopyInfo(Value):
    """One copy, as far as the walk read it."""

    __match_args__ = ("path", "files", "batches", "records", "first_offset", "last_offset", "leader_epochs",
                       "log_start")

    path: str
    files: list[str]
    batches: int
    records: int
    first_offset: int | None
    last_offset: int | None
    leader_epochs: list[tuple[int, int]]   # (epoch, first offset)
    log_start: int | None     # the first segment's base offset, from its name

    def __init__(self, path: str, files: list[str] | None = None, batches: int = 0, records: int = 0,
                 first_offset: int | None = None, last_offset: int | None = None,
                 leader_epochs: list[tuple[int, int]] | None = None, log_start: int | None = None) -> None:
        self.path = path
        self.files = list() if files is None else files
        self.batches = batches
        self.records = records
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.leader_epochs = list() if leader_epochs is None else leader_epochs
        self.log_start = log_start

    def saw(self, b: Batch) -> None:
        self.batches += 1
        epoch = b.partition_leader_epoch
        first = b.base_offset if b.base_offset is not None else b.offset
        if epoch is not None and epoch >= 0 and first is not None and len(self.leader_epochs) < MAX_EPOCHS and (
                not self.leader_epochs or self.leader_epochs[-1][0] != epoch):
            self.leader_epochs.append((epoch, first))

    def holds(self, first: int, last: int, n: int) -> None:
        self.records += n
        if self.first_offset is None:
            self.first_offset = first
        self.last_offset = last


class Divergence(Value):
    """A run of offsets of one kind and one pair of leader epochs."""

    __match_args__ = ("kind", "from_offset", "to_offset", "leader_epoch_a", "leader_epoch_b", "records",
                       "pattern", "fields", "file_a", "position_a", "file_b", "position_b")

    kind: str
    from_offset: int
    to_offset: int
    leader_epoch_a: int | None
    leader_epoch_b: int | None
    records: int
    pattern: str | None                              # for only-in-a / only-in-b
    fields: list[str]         # for different: what differs
    file_a: str | None
    position_a: int | None                           # the batch holding fromOffset in A
    file_b: str | None
    position_b: int | None

    def __init__(self, kind: str, from_offset: int, to_offset: int, leader_epoch_a: int | None,
                 leader_epoch_b: int | None, records: int = 0, pattern: str | None = None,
                 fields: list[str] | None = None, file_a: str | None = None, position_a: int | None = None,
                 file_b: str | None = None, position_b: int | None = None) -> None:
        self.kind = kind
        self.from_offset = from_offset
        self.to_offset = to_offset
        self.leader_epoch_a = leader_epoch_a
        self.leader_epoch_b = leader_epoch_b
        self.records = records
        self.pattern = pattern
        self.fields = list() if fields is None else fields
        self.file_a = file_a
        self.position_a = position_a
        self.file_b = file_b
        self.position_b = position_b


class CopyProblems(Value):
    """Problem findings met in one copy (``side``: a or b)."""

    __match_args__ = ("side", "file", "position", "findings")

    side: str
    file: str
    position: int
    findings: list[Finding]

    def __init__(self, side: str, file: str, position: int, findings: list[Finding]) -> None:
        self.side = side
        self.file = file
        self.position = position
        self.findings = findings


class DiffSummary(Value):
    """The closing item."""

    __match_args__ = ("verdict", "identical_through", "first_divergent_offset", "same", "only_in_a", "only_in_b",
                       "different", "only_in_a_by_pattern", "only_in_b_by_pattern", "identical_batches",
                       "records_compared", "a", "b")

    verdict: str
    identical_through: int | None
    first_divergent_offset: int | None
    same: int
    only_in_a: int
    only_in_b: int
    different: int
    only_in_a_by_pattern: dict[str, int]
    only_in_b_by_pattern: dict[str, int]
    identical_batches: int
    records_compared: int
    a: CopyInfo
    b: CopyInfo

    def __init__(self, verdict: str, identical_through: int | None, first_divergent_offset: int | None, same: int,
                 only_in_a: int, only_in_b: int, different: int, only_in_a_by_pattern: dict[str, int],
                 only_in_b_by_pattern: dict[str, int], identical_batches: int, records_compared: int, a: CopyInfo,
                 b: CopyInfo) -> None:
        self.verdict = verdict
        self.identical_through = identical_through
        self.first_divergent_offset = first_divergent_offset
        self.same = same
        self.only_in_a = only_in_a
        self.only_in_b = only_in_b
        self.different = different
        self.only_in_a_by_pattern = only_in_a_by_pattern
        self.only_in_b_by_pattern = only_in_b_by_pattern
        self.identical_batches = identical_batches
        self.records_compared = records_compared
        self.a = a
        self.b = b


DiffItem = Divergence | CopyProblems | DiffSummary

# the fields of a record compared at one offset, with the batch fields that belong to it
_FIELDS = ("timestamp", "key", "value", "headers", "leaderEpoch", "producerId", "producerEpoch", "sequence",
           "isTransactional", "isControl")


def _record_fields(r: Record, b: Batch) -> tuple:
    seq = None
    if b.magic >= 2 and b.base_sequence is not None and b.base_sequence >= 0 and b.base_offset is not None:
        seq = (b.base_sequence + r.offset - b.base_offset) & 0x7FFFFFFF
    return (r.timestamp, r.key, r.value, tuple(r.headers or ()), _epoch(b), b.producer_id, b.producer_epoch, seq,
            b.is_transactional, b.is_control)


def _epoch(b: Batch) -> int | None:
    e = b.partition_leader_epoch
    return e if e is not None and e >= 0 else None


def same_batch(a: Batch, b: Batch) -> bool:
    """Two v2 batches that are the same batch: offsets, length, leader epoch, and CRC (valid on both)."""
    return (a.magic == b.magic == 2 and a.crc_valid is True and b.crc_valid is True and a.crc == b.crc
            and a.base_offset == b.base_offset and a.last_offset_delta == b.last_offset_delta
            and a.batch_length == b.batch_length and a.partition_leader_epoch == b.partition_leader_epoch
            and a.record_count == b.record_count)


def copy_files(path: str) -> list[str]:
    """The segment files of one copy: a partition directory's segments in offset order, or one file."""
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file or directory")
    if os.path.isdir(path):
        files = expand([path]).files
        parents = {os.path.dirname(f) for f in files}
        if not files:
            raise InputError(f"{path}: no segment files (*.log) in it")
        if len(parents) > 1:
            raise InputError(f"{path}: holds several partition directories; diff compares one partition "
                             f"(give a partition directory or a segment file)")
        return files
    return [path]


def _walker(seg: Segment, path: str, opt: Options) -> Walk:
    """``iter_batches`` over ``seg`` from ``start`` to ``end`` (for :func:`guarded_walk`)."""
    def walk(start: int, end: int) -> Iterator[Batch | Gap]:
        return iter_batches(seg.buf, path, start=start, end=end, options=opt)
    return walk


class _Copy:
    """One copy walked batch by batch, the records of a batch decoded only when asked for."""

    def __init__(self, side: str, path: str, options: Options, tally: Tally):
        self.side, self.info, self.tally = side, CopyInfo(path, copy_files(path)), tally
        first = names.classify(self.info.files[0])
        self.info.log_start = first.offset if first.kind == names.SEGMENT else None
        self.options = options.replace(records=False)
        self.problems: list[CopyProblems] = []
        self._batches = self._walk()
        self.batch: Batch | None = None
        self.seg: Segment | None = None
        self._records: Iterator[Record] | None = None
        self.record: Record | None = None
        self.damage: deque[tuple[int, int]] = deque(maxlen=MAX_DAMAGE)
        self._after_gap = False
        self._walked: int | None = None     # the last offset of the last batch walked
        self.next_batch()

    def _walk(self) -> Iterator[tuple[Segment, Batch]]:
        for path, seg in open_segments(self.info.files, self.tally):
            for item in guarded_walk(seg, path, _walker(seg, path, self.options)):
                problems = [f for f in item.findings if f.severity.value != "info"]
                if problems:
                    self.tally.see(problems)
                    self.problems.append(CopyProblems(self.side, path, item.position, problems))
                if isinstance(item, Batch):
                    self._note_damage(item)
                    yield seg, item
                elif problems:
                    self._after_gap = True
        if self._after_gap:
            self.damage.append((self._next_offset(), NO_END))

    def _next_offset(self) -> int:
        return self._walked + 1 if self._walked is not None else (self.info.log_start or 0)

    def _note_damage(self, b: Batch) -> None:
        """Offsets this copy lost to damage: those between a gap's neighbours, those of a batch whose
        CRC fails."""
        first = b.base_offset if b.base_offset is not None else b.offset
        if self._after_gap and first is not None and first - 1 >= self._next_offset():
            self.damage.append((self._next_offset(), first - 1))
        self._after_gap = False
        if b.crc_valid is False and first is not None and b.last_offset is not None:
            self.damage.append((first, b.last_offset))
        if b.last_offset is not None:
            self._walked = b.last_offset

    def damaged(self, offset: int) -> bool:
        """Whether this copy lost ``offset`` to damage (as far as the ranges remembered say)."""
        return any(lo <= offset <= hi for lo, hi in self.damage)

    def next_batch(self) -> None:
        """Move to the next batch (None at the end)."""
        nxt = next(self._batches, None)
        self.seg, self.batch = (None, None) if nxt is None else nxt
        self._records, self.record = None, None
        if self.batch is not None:
            self.info.saw(self.batch)

    @property
    def at_batch_start(self) -> bool:
        return self._records is None

    def skip_batch(self) -> None:
        """The whole current batch is accounted for (the same as the other copy's)."""
        b = self.batch
        assert b is not None and b.base_offset is not None and b.last_offset is not None
        self.info.holds(b.base_offset, b.last_offset, b.record_count or 0)
        self.next_batch()

    def peek(self) -> Record | None:
        """The next record (decoding the current batch's records when first needed); None at the end."""
        while self.record is None:
            if self.batch is None:
                return None
            if self._records is None:
                self._records = iter(self._decoded_records())
            r = next(self._records, None)
            if r is None:
                self.next_batch()
                continue
            self.record = r
        return self.record

    def take(self) -> None:
        """The current record is accounted for; the next one is read ahead, so that the copy is at a
        batch boundary (where whole batches compare) as soon as its batch's records are used up."""
        r = self.record
        assert r is not None and self._records is not None
        self.info.holds(r.offset, r.offset, 1)
        self.record = next(self._records, None)
        if self.record is None:
            self.next_batch()

    @property
    def exhausted(self) -> bool:
        return self.batch is None

    def covers(self, offset: int) -> bool:
        """Whether this copy's log starts at or before ``offset`` (it held a record before it, its current
        batch starts at or before it, or its first segment's name says so)."""
        if self.info.first_offset is not None and self.info.first_offset <= offset:
            return True
        b = self.batch
        if b is not None and b.base_offset is not None and b.base_offset <= offset:
            return True
        return self.info.log_start is not None and self.info.log_start <= offset

    def span(self) -> tuple[int, int] | None:
        """The offsets the copy's next records lie in, known without decoding when at the start of a v2
        batch; None at the end."""
        b = self.batch
        if b is None:
            return None
        if self.record is not None and b.last_offset is not None:
            return self.record.offset, b.last_offset
        if self.at_batch_start and b.base_offset is not None and b.last_offset is not None:
            return b.base_offset, b.last_offset
        r = self.peek()
        if r is None or self.batch is None or self.batch.last_offset is None:
            return None if r is None else (r.offset, r.offset)
        return r.offset, max(r.offset, self.batch.last_offset)

    def _decoded_records(self) -> list[Record] | Iterator[Record]:
        b, seg = self.batch, self.seg
        assert b is not None and seg is not None
        if b.position + b.size > seg.current_size():
            return []   # the file shrank under the walk: a file-changed finding says so
        chunk = bytes(seg.buf[b.position:b.position + b.size])
        try:
            full = decode_item(chunk, b.magic, b.file, b.position, self.options.replace(records=True),
                               True)
        except DecodeError:
            full = None
        if full is None or not full.records:
            if b.record_count and b.base_offset is not None and b.last_offset is not None:
                self.damage.append((b.base_offset, b.last_offset))
            return []
        return full.records


class _Runs:
    """Offsets classified one by one, folded into runs; closed runs of problems come out as Divergences."""

    def __init__(self) -> None:
        self.run: Divergence | None = None
        self.closed: list[Divergence] = []
        self.counts = {SAME: 0, ONLY_A: 0, ONLY_B: 0, DIFFERENT: 0}
        self.by_pattern: dict[str, dict[str, int]] = {ONLY_A: {}, ONLY_B: {}}
        self.first_different: int | None = None
        self.first_lost: int | None = None        # the first offset one copy lacks for real (tail, damage)
        self.last_same: int | None = None         # the last same offset before the first problem
        self.problem = False                      # an offset different, or lost (tail, damage), was seen

    def add(self, kind: str, first: int, last: int, n: int, ea: int | None, eb: int | None,
            a: Batch | None, b: Batch | None, fields: list[str] | None = None, pattern: str | None = None) -> None:
        r = self.run
        if r is None or r.kind != kind or r.leader_epoch_a != ea or r.leader_epoch_b != eb or r.pattern != pattern:
            self.close()
            r = self.run = Divergence(kind, first, last, ea, eb, pattern=pattern,
                                      file_a=a.file if a else None, position_a=a.position if a else None,
                                      file_b=b.file if b else None, position_b=b.position if b else None)
        r.to_offset = last
        r.records += n
        self.counts[kind] += n
        if kind == SAME:
            if not self.problem:
                self.last_same = last
        elif pattern in LOST:
            self.problem = True
        elif kind == DIFFERENT:
            self.problem = True
            if self.first_different is None:
                self.first_different = first
            for f in fields or ():
                if f not in r.fields:
                    r.fields.append(f)

    def close(self) -> None:
        r, self.run = self.run, None
        if r is None or r.kind == SAME:
            return
        if r.kind in (ONLY_A, ONLY_B):
            pattern = r.pattern or TAIL
            counts = self.by_pattern[r.kind]
            counts[pattern] = counts.get(pattern, 0) + r.records
            if pattern in LOST and (self.first_lost is None or r.from_offset < self.first_lost):
                self.first_lost = r.from_offset
        self.closed.append(r)

    def take_closed(self) -> list[Divergence]:
        out, self.closed = self.closed, []
        return out


class _Diff:
    def __init__(self, a: _Copy, b: _Copy):
        self.a, self.b = a, b
        self.runs = _Runs()
        self.identical_batches = 0
        self.records_compared = 0

    def steps(self) -> Iterator[DiffItem]:
        a, b = self.a, self.b
        while a.batch is not None or b.batch is not None:
            self._step()
            yield from self._flush()
        self.runs.close()
        yield from self._flush()

    def _flush(self) -> Iterator[DiffItem]:
        for c in (self.a, self.b):
            yield from c.problems
            c.problems.clear()
        yield from self.runs.take_closed()

    def _step(self) -> None:
        a, b = self.a, self.b
        ba, bb = a.batch, b.batch
        if ba is not None and bb is not None and a.at_batch_start and b.at_batch_start and same_batch(ba, bb):
            assert ba.base_offset is not None and ba.last_offset is not None
            self.runs.add(SAME, ba.base_offset, ba.last_offset, ba.record_count or 0, _epoch(ba), _epoch(bb), ba, bb)
            self.identical_batches += 1
            a.skip_batch()
            b.skip_batch()
            return
        sa, sb = a.span(), b.span()
        # a batch wholly before anything the other copy has next: only its own records are decoded
        if sa is not None and (sb is None or sa[1] < sb[0]):
            self._alone(ONLY_A, a, b)
            return
        if sb is not None and (sa is None or sb[1] < sa[0]):
            self._alone(ONLY_B, b, a)
            return
        ra, rb = a.peek(), b.peek()
        if ra is None or rb is None:
            return
        if ra.offset < rb.offset:
            self._only(ONLY_A, a, b, ra)
        elif rb.offset < ra.offset:
            self._only(ONLY_B, b, a, rb)
        else:
            self._both(ra, rb)

    def _alone(self, kind: str, mine: _Copy, other: _Copy) -> None:
        """The next record of ``mine``, when its batch lies before anything ``other`` has next."""
        batch = mine.batch
        r = mine.peek()
        if r is not None and mine.batch is batch:
            self._only(kind, mine, other, r)

    def _only(self, kind: str, mine: _Copy, other: _Copy, r: Record) -> None:
        batch = mine.batch
        assert batch is not None
        pattern = (DAMAGED if other.damaged(r.offset) else TAIL if other.exhausted
                   else HOLE if other.covers(r.offset) else LOG_START)
        mine.take()
        ea = _epoch(batch) if kind == ONLY_A else None
        eb = _epoch(batch) if kind == ONLY_B else None
        self.runs.add(kind, r.offset, r.offset, 1, ea, eb, batch if kind == ONLY_A else None,
                      batch if kind == ONLY_B else None, pattern=pattern)

    def _both(self, ra: Record, rb: Record) -> None:
        ba, bb = self.a.batch, self.b.batch
        assert ba is not None and bb is not None
        if (ba.crc_valid is False) != (bb.crc_valid is False):
            # one copy's batch fails its CRC: its record is not evidence; the offset is the other's only
            self.records_compared += 1
            kind, good, good_batch = (ONLY_B, rb, bb) if ba.crc_valid is False else (ONLY_A, ra, ba)
            self.a.take()
            self.b.take()
            ea = _epoch(good_batch) if kind == ONLY_A else None
            eb = _epoch(good_batch) if kind == ONLY_B else None
            self.runs.add(kind, good.offset, good.offset, 1, ea, eb, good_batch if kind == ONLY_A else None,
                          good_batch if kind == ONLY_B else None, pattern=DAMAGED)
            return
        fa, fb = _record_fields(ra, ba), _record_fields(rb, bb)
        self.records_compared += 1
        self.a.take()
        self.b.take()
        if fa == fb:
            self.runs.add(SAME, ra.offset, ra.offset, 1, _epoch(ba), _epoch(bb), ba, bb)
            return
        fields = [name for name, x, y in zip(_FIELDS, fa, fb) if x != y]
        self.runs.add(DIFFERENT, ra.offset, ra.offset, 1, _epoch(ba), _epoch(bb), ba, bb, fields)

    def summary(self) -> DiffSummary:
        r = self.runs
        c = r.counts
        verdict = _verdict(c, r.by_pattern)
        # copies that each lost records the other has diverge where the first of them is
        first = r.first_different if r.first_different is not None or verdict != "diverged" else r.first_lost
        return DiffSummary(verdict, r.last_same, first, c[SAME], c[ONLY_A], c[ONLY_B],
                           c[DIFFERENT], dict(r.by_pattern[ONLY_A]), dict(r.by_pattern[ONLY_B]),
                           self.identical_batches, self.records_compared, self.a.info, self.b.info)


def _verdict(counts: dict[str, int], by_pattern: dict[str, dict[str, int]]) -> str:
    lost_from_b = sum(by_pattern[ONLY_A].get(p, 0) for p in LOST)   # A has them, B does not
    lost_from_a = sum(by_pattern[ONLY_B].get(p, 0) for p in LOST)
    if counts[DIFFERENT] or lost_from_a and lost_from_b:
        return "diverged"
    if not counts[ONLY_A] and not counts[ONLY_B]:
        return "identical"
    if lost_from_b or not counts[ONLY_B]:
        return "a-contains-b"
    if lost_from_a or not counts[ONLY_A]:
        return "b-contains-a"
    return "equivalent"


def diff_report(path_a: str, path_b: str, options: Options, tally: Tally) -> Iterator[DiffItem]:
    """``diff``: the divergent runs of ``path_a`` against ``path_b`` as they are found, then the summary.

    A divergence (some offset holding different records) is a problem in ``tally``.
    """
    a = _Copy("a", path_a, options, tally)
    b = _Copy("b", path_b, options, tally)
    diff = _Diff(a, b)
    yield from diff.steps()
    summary = diff.summary()
    if summary.verdict == "diverged":
        tally.add_problem()
    yield summary


__all__ = ["Divergence", "CopyProblems", "DiffSummary", "DiffItem", "CopyInfo", "diff_report", "same_batch",
           "copy_files"]
