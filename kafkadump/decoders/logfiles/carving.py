"""Carving: every intact batch out of a damaged segment, and what was lost.

The shared walk step (:func:`kafkadump.decoders.batches.step.decode_at`) already skips
damage: bytes that are not a batch are scanned past to the next position
holding a plausible header whose CRC passes.  Carving adds one thing: a
batch whose CRC fails is not trusted to be as long as it says (its length
is outside the CRC), so its bytes are searched too, and an intact batch
inside them -- behind a length that was damaged into a larger one -- is
recovered rather than skipped.

Every damaged range ``[start, end)`` is reported with the offsets that it
must have held, inferred from its intact neighbours (the previous intact
batch's last offset and the next one's base offset; at the start of the
file, the base offset in the segment's name), plus the offsets that the
damaged batch headers claim (unverified: the header may be what is
damaged).  An all-zero tail is a preallocated segment's unused space, not
damage.

:func:`carve` yields items as it goes; nothing is held but the current
range, and of its findings the first few of each code (the rest summarised:
count, first and last offset).  Writing the recovered batches is the command's job.
"""

from __future__ import annotations

from collections.abc import Iterator

from kafkadump.base.findings import BoundedFindings, Code, Finding
from kafkadump.decoders.batches import Batch, Gap, Options
from kafkadump.decoders.batches.inplace import RELEASE_STEP, page_releaser
from kafkadump.decoders.batches.primitives import ByteBuffer
from kafkadump.decoders.batches.step import ScanBudget, decode_at, find_next_batch


class Recovered:
    """An intact batch (CRC passes) at ``position``; ``length_repaired`` when its length field was
    damaged and the CRC over the bytes up to the next intact batch recovered it (see
    :func:`kafkadump.decoders.batches.step.decode_at`: its ``length-repaired`` finding says so)."""

    __slots__ = ("batch",)

    def __init__(self, batch: Batch):
        self.batch = batch

    @property
    def length_repaired(self) -> bool:
        return any(f.code is Code.LENGTH_REPAIRED for f in self.batch.findings)

    @property
    def position(self) -> int:
        return self.batch.position

    @property
    def size(self) -> int:
        return self.batch.size


class Damaged:
    """A damaged byte range ``[start, end)`` and what it held."""

    __slots__ = ("file", "start", "end", "findings", "lost_first", "lost_last", "claimed_first", "claimed_last",
                 "batches", "nothing_lost", "log")

    def __init__(self, file: str, start: int):
        self.file = file
        self.start = start
        self.end = start
        self.findings: list[Finding] = []  # set when the range closes: the log's, bounded
        self.log = BoundedFindings()
        self.lost_first: int | None = None     # inferred from the neighbours; None: unknown (no intact batch before)
        self.lost_last: int | None = None      # None: unknown (no intact batch after: damage to the end)
        self.nothing_lost = False  # the intact neighbours are contiguous
        self.claimed_first: int | None = None  # from damaged batch headers (unverified)
        self.claimed_last: int | None = None
        self.batches = 0           # damaged batch headers seen in the range

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def position(self):
        return self.start

    def claim(self, b: Batch) -> None:
        self.batches += 1
        lo, hi = b.base_offset, b.last_offset
        if lo is None or hi is None or hi < lo:
            return
        self.claimed_first = lo if self.claimed_first is None else min(self.claimed_first, lo)
        self.claimed_last = hi if self.claimed_last is None else max(self.claimed_last, hi)


class Padding:
    """A zero tail: preallocated space, nothing lost."""

    __slots__ = ("start", "end")

    def __init__(self, start: int, end: int):
        self.start = start
        self.end = end

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def position(self):
        return self.start

def carve(buf: ByteBuffer, file: str = "-", *, base_offset: int | None = None, options: Options | None = None,
          start: int = 0, end: int | None = None) -> Iterator[Recovered | Damaged | Padding]:
    """Yield :class:`Recovered`, :class:`Damaged` and :class:`Padding` items of ``buf[start:end]`` in
    file order."""
    end = len(buf) if end is None else end
    opt = (options or Options()).shallow()
    budget = ScanBudget.for_walk(opt, end - start)
    pos = start
    prev_last = None if base_offset is None else base_offset - 1
    damage: Damaged | None = None
    release = page_releaser(buf)   # hand the mapped pages behind back, as the other walks do
    released = pos

    def close(next_base):
        nonlocal damage
        d = damage
        damage = None
        d.findings = d.log.findings()
        d.lost_first = None if prev_last is None else prev_last + 1
        d.lost_last = None if next_base is None else next_base - 1
        if d.lost_first is not None and d.lost_last is not None and d.lost_last < d.lost_first:
            d.nothing_lost = True   # the neighbours are contiguous: no offset was lost
        return d

    while pos < end:
        items, nxt = decode_at(buf, pos, end, file, opt, 0, budget)
        for it in items:
            if isinstance(it, Batch) and it.crc_valid:
                if damage is not None:
                    yield close(it.base_offset)
                yield Recovered(it)
                if it.last_offset is not None and (prev_last is None or it.last_offset > prev_last):
                    prev_last = it.last_offset
                continue
            if isinstance(it, Gap) and it.findings and all(f.code is Code.ZERO_PADDING for f in it.findings):
                if damage is not None:
                    yield close(None)
                yield Padding(it.position, it.position + it.size)
                continue
            if damage is None:
                damage = Damaged(file, it.position)
            damage.end = max(damage.end, it.position + it.size)
            damage.log.extend(it.findings)
            if isinstance(it, Batch):
                damage.claim(it)
        # a batch whose CRC failed may hide intact batches behind a damaged length
        bad = next((it for it in items if isinstance(it, Batch) and not it.crc_valid), None)
        if bad is not None and _may_rescan(budget, bad.size):
            found = find_next_batch(buf, bad.position + 1, end, opt.resync_window, budget)
            if found is not None and found < nxt:
                nxt = found
                # a batch with a bad CRC is never followed by an intact one in one step's items,
                # so the damage it opened is still open
                assert damage is not None
                damage.end = found
        pos = nxt
        if release is not None and pos - released >= RELEASE_STEP:
            release(pos)
            released = pos
    if damage is not None:
        yield close(None)


def _may_rescan(budget: ScanBudget | None, size: int) -> bool:
    """May the carver look inside a batch whose CRC failed?  Its checksum is charged to the
    resync budget: headers faked inside headers would otherwise cost quadratic work."""
    if budget is None:
        return True
    if budget.spent >= budget.limit:
        return False
    budget.spent += size
    return True


__all__ = ["carve", "Recovered", "Damaged", "Padding"]
