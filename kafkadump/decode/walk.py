"""Walking a byte range batch by batch, by length and magic alone, with resync.

Every batch, whatever its magic, starts with ``offset: INT64, length: INT32``
and has its magic byte at offset 16 (v2: after partitionLeaderEpoch; v0/v1:
after the CRC).  So the walker reads 17 bytes, picks the decoder by magic,
and goes on at ``position + 12 + length``.

When the bytes at the current position are not a batch (impossible length,
unknown magic, a legacy message whose framing is broken), the walker scans
forward for the next position that holds a plausible header whose CRC
passes, reports the skipped bytes as a :class:`Gap` with a finding, and
goes on from there.  A batch whose CRC fails but whose length is sane is
still walked past by its length (the length is outside the CRC, but a
following plausible header confirms it); otherwise the walker resyncs.

An all-zero tail is a preallocated segment's unused space (info finding).
A tail shorter than the batch it starts is reported as truncated.

Memory: each batch is copied out of the mapping on its own (bounded by the
batch size); nothing else is held.
"""

from __future__ import annotations

import struct
import zlib

from crc32c import crc32c as _crc32c
from dataclasses import dataclass

from ..findings import Code, DecodeError, Finding
from .batch import HEADER_SIZE, MIN_BATCH_LENGTH, crc_ok_v2, decode_batch, plausible_v2_header
from .compression import DEFAULT_MAX_DECOMPRESSED, DEFAULT_MAX_RATIO, Cap
from .legacy import DEFAULT_MAX_DEPTH, LOG_OVERHEAD, MIN_MESSAGE_SIZE, decode_legacy
from .model import Batch, Gap

_PREFIX = struct.Struct(">qi")
# The walkers tell the source (Options.release) every this many bytes that the
# bytes behind them are done with, so a mapped segment's resident pages stay
# bounded (see sources/segment.py).
RELEASE_STEP = 32 << 20
_ZERO_CHUNK = 1 << 16
DEFAULT_MAX_SCAN = 16      # resync CRC work on failed candidates: this many times the input ...
SCAN_FLOOR = 64 << 20      # ... and at least this many bytes


@dataclass
class Options:
    """Decoder limits and switches, shared by every command."""

    records: bool = True                       # decode records (else header + CRC only)
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
    max_depth: int = DEFAULT_MAX_DEPTH
    max_batch_bytes: int = 1 << 31             # larger declared lengths are not trusted
    resync_window: int | None = None           # bytes to scan for the next batch (None: to the end)
    select: object = None                      # batch -> bool: decode this batch's records?
    release: object = None                     # position -> None: the bytes before it are done with
    max_ratio: int = DEFAULT_MAX_RATIO         # decompressed/compressed beyond this is a bomb (0: off)
    max_scan: int = DEFAULT_MAX_SCAN           # resync CRC work, as a multiple of the input size (0: no limit)
    scan: object = None                        # the walk's ScanBudget (set by the walkers)

    def __post_init__(self):
        # the cap carries the ratio limit through every decoder that takes max_decompressed
        self.max_decompressed = Cap(self.max_decompressed, self.max_ratio)


class ScanBudget:
    """CRC work spent on candidates that turned out not to be intact while resynchronising.

    A hostile file can put a plausible header with a wrong CRC and a length
    reaching the end at every few bytes: checking every candidate's CRC
    would cost quadratic time.  The whole walk may spend ``limit`` bytes on
    such failed checks (``max_scan`` times the input, at least 64 MiB); past
    that, a candidate is accepted when its header is plausible and its
    declared end lands on another plausible header, the end, or padding
    (its CRC is then checked once, by the decoder, like any batch's), and a
    ``scan-limit`` finding says where.
    """

    __slots__ = ("limit", "spent", "hit", "reported")

    def __init__(self, limit):
        self.limit = limit
        self.spent = 0
        self.hit = None
        self.reported = False

    @classmethod
    def for_walk(cls, opt: "Options", size: int) -> "ScanBudget | None":
        if not opt.max_scan:
            return None
        return cls(max(SCAN_FLOOR, opt.max_scan * size))


def _with_budget(opt: "Options", size: int) -> "Options":
    if opt.scan is not None or not opt.max_scan:
        return opt
    from dataclasses import replace

    return replace(opt, scan=ScanBudget.for_walk(opt, size))


def _zero_run_end(buf, pos: int, end: int) -> int:
    """First position >= pos that is not a zero byte (or ``end``)."""
    p = pos
    while p < end:
        q = min(end, p + _ZERO_CHUNK)
        chunk = buf[p:q]
        stripped = len(chunk) - len(chunk.lstrip(b"\x00"))
        if stripped < q - p:
            return p + stripped
        p = q
    return end


def _legacy_ok(buf, pos: int, end: int) -> bool:
    if pos + LOG_OVERHEAD + 5 > end:
        return False
    _, size = _PREFIX.unpack_from(buf, pos)
    magic = buf[pos + 16]
    if magic not in (0, 1) or size < MIN_MESSAGE_SIZE[magic] or pos + 12 + size > end:
        return False
    (crc,) = struct.unpack_from(">I", buf, pos + 12)
    return zlib.crc32(memoryview(buf)[pos + 16:pos + 12 + size]) == crc


def plausible_at(buf, pos: int, end: int, check_crc: bool = True) -> bool:
    """Could a batch or legacy message start at ``pos``?  (With ``check_crc``: and it is intact.)"""
    if pos + 17 > end:
        return False
    magic = buf[pos + 16]
    if magic == 2:
        if not plausible_v2_header(buf, pos, end):
            return False
        return crc_ok_v2(buf, pos) if check_crc else True
    if magic in (0, 1):
        if check_crc:
            return _legacy_ok(buf, pos, end)
        _, size = _PREFIX.unpack_from(buf, pos)
        return size >= MIN_MESSAGE_SIZE[magic] and pos + 12 + size <= end
    return False


def find_next_batch(buf, start: int, end: int, limit: int | None = None,
                    budget: ScanBudget | None = None) -> int | None:
    """Scan forward from ``start`` for an intact batch or message; its position, or None.

    With a ``budget`` (see :class:`ScanBudget`), CRC work on failed candidates is bounded.
    """
    stop = end - 17 if limit is None else min(end - 17, start + limit)
    p = start
    while p <= stop:
        m = buf[p + 16]
        if m <= 2:
            if budget is None:
                if plausible_at(buf, p, end):
                    return p
            elif plausible_at(buf, p, end, check_crc=False):
                (_, length) = _PREFIX.unpack_from(buf, p)
                if budget.spent < budget.limit:
                    if plausible_at(buf, p, end):
                        return p
                    budget.spent += length
                elif _next_ok(buf, p + 12 + length, end):
                    if budget.hit is None:
                        budget.hit = p
                    return p
        p += 1
    return None


def iter_batches(buf, file: str = "-", *, start: int = 0, end: int | None = None,
                 options: Options | None = None, base: int = 0):
    """Yield :class:`Batch` and :class:`Gap` objects for ``buf[start:end]`` in order.

    Positions are absolute: ``base + position in buf``.  Never raises on
    bad bytes.
    """
    opt = options or Options()
    if end is None:
        end = len(buf)
    opt = _with_budget(opt, end - start)
    pos = start
    prev_last = None
    release = opt.release
    released = start
    while pos < end:
        if release is not None and pos - released >= RELEASE_STEP:
            release(pos)
            released = pos
        items, pos = decode_at(buf, pos, end, file, opt, base)
        for b in items:
            if isinstance(b, Batch) and b.crc_valid:
                if prev_last is not None and b.base_offset is not None and b.base_offset <= prev_last:
                    b.findings.append(Finding(Code.OFFSET_ORDER, b.position,
                                              f"baseOffset {b.base_offset} not after previous lastOffset {prev_last}"))
                if b.last_offset is not None:
                    prev_last = b.last_offset
            yield b


def decode_at(buf, pos: int, end: int, file: str, opt: Options, base: int = 0):
    """Decode what is at ``pos``: ``([Batch or Gap, ...], next_position)``.

    The one step of the walk, shared by :func:`iter_batches` and the
    verify-crc fast path (which calls it for anything that is not an
    intact v2 batch).
    """
    if end - pos < 17 or buf[pos + 16] not in (0, 1, 2) or _bad_length(buf, pos, end, opt):
        gap = _damage(buf, pos, end, file, base, opt)
        return [gap], pos + gap.size
    magic = buf[pos + 16]
    (_, length) = _PREFIX.unpack_from(buf, pos)
    size = length + LOG_OVERHEAD
    chunk = buf[pos:pos + size]
    if type(chunk) is not bytes:  # bytearray / memoryview input: records must hold bytes
        chunk = bytes(chunk)
    if magic == 2:
        b = decode_batch(chunk, 0, file, base=base + pos, records=opt.records,
                         max_decompressed=opt.max_decompressed, select=opt.select)
    else:
        try:
            b = decode_legacy(chunk, 0, size, file, base=base + pos, records=opt.records,
                              max_decompressed=opt.max_decompressed, max_depth=opt.max_depth)
        except DecodeError as e:
            # the message's own framing is broken: treat like damage
            gap = _damage(buf, pos, end, file, base, opt, first=Finding(e.code, base + pos + e.offset, e.message))
            return [gap], pos + gap.size
    nxt = pos + size
    if b.crc_valid is False and nxt < end and not _next_ok(buf, nxt, end):
        # CRC failed and the declared end does not land on a batch: the
        # length itself may be damaged.  Report the batch, then resync from
        # just after its start instead of trusting the length.
        found = find_next_batch(buf, pos + 1, end, opt.resync_window, opt.scan)
        stop = end if found is None else found
        if stop < nxt:
            # an intact batch starts inside the declared length: the length is
            # wrong, and what lies before that batch is not a batch we can trust
            a = base + pos
            return [Gap(file, a, stop - pos, [
                Finding(Code.LENGTH_INVALID, a + 8,
                        f"length {size - 12} runs into the intact batch at {base + stop}"),
                Finding(Code.GARBAGE, a, f"skipped {stop - pos} bytes to the next intact batch at {base + stop}",
                        length=stop - pos)])], stop
        if stop > nxt:
            g = Gap(file, base + nxt, stop - nxt,
                    [Finding(Code.GARBAGE, base + nxt, f"{stop - nxt} bytes after a damaged batch are not a batch",
                             length=stop - nxt)])
            return [b, g], stop
    return [b], nxt


def _next_ok(buf, pos: int, end: int) -> bool:
    if end - pos < 17:
        return not any(buf[pos:end])  # a few zero bytes: padding, fine
    if not any(buf[pos:pos + 17]):
        return True  # zero padding follows
    return plausible_at(buf, pos, end, check_crc=False)


def _bad_length(buf, pos: int, end: int, opt: Options) -> bool:
    _, length = _PREFIX.unpack_from(buf, pos)
    magic = buf[pos + 16]
    minimum = MIN_BATCH_LENGTH if magic == 2 else MIN_MESSAGE_SIZE.get(magic, 0)
    if length < minimum or length > opt.max_batch_bytes:
        return True
    if pos + LOG_OVERHEAD + length > end:
        return True
    if magic == 2 and end - pos < HEADER_SIZE:
        return True
    return False


def _damage(buf, pos: int, end: int, file: str, base: int, opt: Options, first: Finding | None = None) -> Gap:
    """Describe the bad bytes at ``pos`` and find where good data resumes."""
    absolute = base + pos
    remaining = end - pos
    # 1. all-zero tail: preallocated segment space
    zend = _zero_run_end(buf, pos, end)
    if zend == end:
        return Gap(file, absolute, remaining,
                   [Finding(Code.ZERO_PADDING, absolute, f"{remaining} zero bytes to the end (preallocated space)",
                            length=remaining)])
    # 2. a header whose declared length runs past the end: truncated tail,
    #    unless an intact batch can be found further on.
    findings = [first] if first is not None else []
    nxt = find_next_batch(buf, pos + 1, end, opt.resync_window, opt.scan)
    sc = opt.scan
    if sc is not None and sc.hit is not None and not sc.reported:
        sc.reported = True
        findings.append(Finding(Code.SCAN_LIMIT, absolute,
                                f"looking for the next intact batch spent {sc.spent} bytes of CRC checks on "
                                f"candidates that were not (--max-scan); from {base + sc.hit} on, candidates "
                                f"are accepted by their headers", length=remaining))
    if nxt is not None and nxt - pos < 17 and first is None:
        # fewer than 17 junk bytes: there is no header here to describe
        findings.append(Finding(Code.GARBAGE, absolute, f"skipped {nxt - pos} bytes to the next intact batch "
                                                        f"at {base + nxt}", length=nxt - pos))
        return Gap(file, absolute, nxt - pos, findings)
    if nxt is None:
        if first is None:
            findings.append(_describe_head(buf, pos, end, base, tail=True))
        return Gap(file, absolute, remaining, findings)
    if first is None:
        findings.append(_describe_head(buf, pos, end, base, tail=False))
    findings.append(Finding(Code.GARBAGE, absolute, f"skipped {nxt - pos} bytes to the next intact batch at {base + nxt}",
                            length=nxt - pos))
    return Gap(file, absolute, nxt - pos, findings)


def _describe_head(buf, pos: int, end: int, base: int, tail: bool) -> Finding:
    """Say why the bytes at ``pos`` are not a batch."""
    absolute = base + pos
    remaining = end - pos
    if remaining < 17:
        if remaining < 12:
            return Finding(Code.TRUNCATED, absolute, f"{remaining} bytes left, too few for a batch header",
                           length=remaining)
        _, length = _PREFIX.unpack_from(buf, pos)
        if 0 <= length and 12 + length <= remaining:
            # every declared byte is here: the length itself is too small to hold a message
            return Finding(Code.LENGTH_INVALID, absolute + 8,
                           f"length {length} is too small for any batch or message", length=4)
        return Finding(Code.TRUNCATED, absolute,
                       f"batch of {length + 12} bytes declared, {remaining} bytes left", length=remaining)
    _, length = _PREFIX.unpack_from(buf, pos)
    magic = buf[pos + 16]
    if magic not in (0, 1, 2):
        return Finding(Code.UNKNOWN_MAGIC, absolute + 16, f"magic byte {magic} is not 0, 1 or 2")
    minimum = MIN_BATCH_LENGTH if magic == 2 else MIN_MESSAGE_SIZE[magic]
    if length < minimum:
        return Finding(Code.LENGTH_INVALID, absolute + 8, f"length {length} below the minimum {minimum}")
    if pos + 12 + length > end:
        if tail:
            return Finding(Code.TRUNCATED, absolute,
                           f"batch of {length + 12} bytes declared, {remaining} bytes left", length=remaining)
        return Finding(Code.LENGTH_INVALID, absolute + 8,
                       f"length {length} runs past the end of the data ({remaining} bytes left)")
    return Finding(Code.LENGTH_INVALID, absolute + 8, f"length {length} is not trusted")


def locate(buf, file: str, *, position: int | None = None, offset: int | None = None,
           index: int | None = None, options: Options | None = None):
    """Find one item of the walk: the one containing byte ``position``, the
    batch holding Kafka ``offset``, or the ``index``-th batch (0-based; gaps
    are not counted).  Default: the first item.  None when there is none.
    """
    opt = Options(**{**(options or Options()).__dict__, "records": False})
    n = 0
    for item in iter_batches(buf, file, options=opt):
        if position is not None:
            if item.position <= position < item.position + item.size:
                return item
            continue
        if not isinstance(item, Batch):
            if offset is None and index is None:
                return item
            continue
        if offset is not None:
            lo = item.base_offset if item.base_offset is not None else item.offset
            hi = item.last_offset
            if lo is not None and hi is not None and lo <= offset <= hi:
                return item
            continue
        if index is None or n == index:
            return item
        n += 1
    return None


def decode_spanned(buf, item, options: Options | None = None):
    """Decode one located item again, recording every field's span.

    Returns ``(item, spans)``: for a batch, the fully decoded batch (records
    included; its ``decompressed`` payload kept); for a gap, the gap and
    one unparsed span covering it.
    """
    from .model import Span

    opt = options or Options()
    if isinstance(item, Gap):
        return item, [Span("unparsed", item.position, item.size, None, "file", raw="unparsed")]
    pos = item.position
    chunk = bytes(buf[pos:pos + item.size])
    spans: list = []
    if item.magic == 2:
        b = decode_batch(chunk, 0, item.file, base=pos, records=True,
                         max_decompressed=opt.max_decompressed, spans=spans)
    else:
        b = decode_legacy(chunk, 0, item.size, item.file, base=pos, records=True,
                          max_decompressed=opt.max_decompressed, max_depth=opt.max_depth, spans=spans)
    return b, spans


def _bad_crcs(mv, runs) -> list:
    """CRC-32C of each ``(pos, nxt, stored)`` run; the positions that fail.

    Runs in a worker thread: crc32c releases the GIL for large buffers, so
    two of these use both cores.
    """
    crc = _crc32c
    # gil_release_mode=1: release the GIL for every buffer (by default only for
    # 32 KiB and more, so 16 KiB batches would never overlap on two threads)
    return [pos for pos, nxt, stored in runs if crc(mv[pos + 21:nxt], 0, 1) != stored]


class CrcScan:
    """The verify-crc fast path over one buffer.

    Intact v2 batches cost one ``struct`` unpack and one CRC-32C call over
    a view of the mapping (no copy, no objects); anything else, and every
    batch whose CRC fails, goes through :func:`decode_at`, so legacy
    messages (including the inner messages of compressed wrappers) and
    damage are judged by the one decoder, and the walk takes the same path
    as :func:`iter_batches`.

    On large inputs the CRCs are computed by ``threads`` worker threads,
    a window of batches at a time, while this thread walks the lengths
    ahead; results are consumed in file order.

    Iterating yields only the problem items; the counters say the rest.
    """

    _HEAD = struct.Struct(">qiibI")
    WINDOW = 2048            # batches per unit of threaded work (at most)
    WINDOW_BYTES = 4 << 20   # bytes per unit of threaded work (at most): bounds the mapped pages ahead
    THREAD_MIN_BYTES = 8 << 20

    def __init__(self, buf, file: str = "-", options: Options | None = None, threads: int = 2):
        self.buf = buf
        self.file = file
        self.opt = _with_budget(Options(**{**(options or Options()).__dict__, "records": False}), len(buf))
        self.threads = threads
        self.batches = 0
        self.bytes = 0
        self.bad = 0

    def _problem(self, pos: int, end: int):
        """Decode at ``pos`` with the full decoder; count; return (problem items, next)."""
        items, new = decode_at(self.buf, pos, end, self.file, self.opt)
        out = []
        for it in items:
            if isinstance(it, Batch):
                self.batches += 1
                self.bytes += it.size
            if it.findings:
                if any(f.severity.value != "info" for f in it.findings):
                    self.bad += 1
                out.append(it)
        return out, new

    def __iter__(self):
        if self.threads > 1 and len(self.buf) >= self.THREAD_MIN_BYTES:
            yield from self._threaded()
        else:
            yield from self._serial()

    def _serial(self):
        buf = self.buf
        end = len(buf)
        mv = memoryview(buf)
        unpack = self._HEAD.unpack_from
        crc = _crc32c
        pos = 0
        release = self.opt.release
        released = 0
        try:
            while pos < end:
                if release is not None and pos - released >= RELEASE_STEP:
                    release(pos)
                    released = pos
                if end - pos >= 61:
                    _, length, _, magic, stored = unpack(buf, pos)
                    nxt = pos + 12 + length
                    if magic == 2 and length >= MIN_BATCH_LENGTH and nxt <= end:
                        if crc(mv[pos + 21:nxt]) == stored:
                            self.batches += 1
                            self.bytes += length + 12
                            pos = nxt
                            continue
                items, pos = self._problem(pos, end)
                yield from items
        finally:
            mv.release()

    def _collect(self, pos: int, end: int, limit: int):
        """Walk plausible v2 batches by length from ``pos``: ``(runs, stop)``.

        Stops after ``limit`` batches or at the first position that is not a
        plausible v2 batch (the caller decodes that one in full).
        """
        buf = self.buf
        unpack = self._HEAD.unpack_from
        runs = []
        append = runs.append
        stop_at = pos + self.WINDOW_BYTES * self.threads
        while pos < end and len(runs) < limit and pos < stop_at:
            if end - pos < 61:
                break
            _, length, _, magic, stored = unpack(buf, pos)
            nxt = pos + 12 + length
            if magic != 2 or length < MIN_BATCH_LENGTH or nxt > end:
                break
            append((pos, nxt, stored))
            pos = nxt
        return runs, pos

    def _threaded(self):
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        buf = self.buf
        end = len(buf)
        mv = memoryview(buf)
        pool = ThreadPoolExecutor(self.threads, thread_name_prefix="kafkadump-crc")
        pending: deque = deque()   # (runs, futures) in file order
        pos = 0                    # where the walk-ahead has got to
        released = 0
        try:
            while True:
                # keep the workers fed: a few windows ahead of the consumer
                while pos < end and len(pending) < 2 * self.threads:
                    runs, stop = self._collect(pos, end, self.WINDOW * self.threads)
                    if not runs:
                        break
                    k = (len(runs) + self.threads - 1) // self.threads
                    futs = [pool.submit(_bad_crcs, mv, runs[i:i + k]) for i in range(0, len(runs), k)]
                    pending.append((runs, futs))
                    pos = stop
                if not pending:
                    if pos >= end:
                        break
                    # the walk-ahead stopped at something that is not an intact-looking v2 batch
                    items, pos = self._problem(pos, end)
                    yield from items
                    continue
                runs, futs = pending.popleft()
                if self.opt.release is not None and runs[0][0] - released >= RELEASE_STEP:
                    self.opt.release(runs[0][0])  # workers are past it: every earlier window is done
                    released = runs[0][0]
                bad = set()
                for f in futs:
                    bad.update(f.result())
                if not bad:
                    self.batches += len(runs)
                    self.bytes += runs[-1][1] - runs[0][0]
                    continue
                # a CRC failed: hand those batches to the decoder, in order
                resynced = None
                for rpos, rnxt, _ in runs:
                    if rpos not in bad:
                        self.batches += 1
                        self.bytes += rnxt - rpos
                        continue
                    items, new = self._problem(rpos, end)
                    yield from items
                    if new != rnxt:
                        resynced = new  # the decoder distrusted the length: restart the walk there
                        break
                if resynced is not None:
                    for _, fs in pending:
                        for f in fs:
                            f.cancel()
                    pending.clear()
                    pos = resynced
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            mv.release()


__all__ = ["Options", "iter_batches", "decode_at", "CrcScan", "locate", "decode_spanned", "find_next_batch", "plausible_at", "Batch", "Gap"]
