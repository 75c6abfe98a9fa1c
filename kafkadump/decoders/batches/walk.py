"""Walking a byte range batch by batch: :func:`iter_batches`, the verify-crc
fast path :class:`CrcScan`, and finding one item again (:func:`locate`,
:func:`decode_spanned`).

Each step is :func:`kafkadump.decoders.batches.step.decode_at` (what is at ``p``, with
resync over damage); this module strings the steps together, adds the one
finding that needs the previous batch (``offset-order``), and hands the
mapped pages behind it back to the kernel.

Memory: each batch is copied out of the mapping on its own (bounded by the
batch size); nothing else is held.
"""

from __future__ import annotations

import struct
from types import ModuleType
from typing import Any, Callable, Iterator, Sequence, cast

from kafkadump.accel import compiled
from kafkadump.base.findings import Code, Finding
from kafkadump.decoders.batches.batch import CRC_START, MIN_BATCH_LENGTH
from kafkadump.decoders.batches.crc import crc32c as _crc32c
from kafkadump.decoders.batches.inplace import RELEASE_STEP, page_releaser
from kafkadump.decoders.batches.model import Batch, Gap, PlainRun, Record, RecordSource, Span
from kafkadump.decoders.batches.options import (
    DEFAULT_MAX_SCAN,  # noqa: F401 (re-exported)
    SCAN_FLOOR,  # noqa: F401 (re-exported)
    Options,  # noqa: F401 (re-exported)
)
from kafkadump.decoders.batches.primitives import ByteBuffer
from kafkadump.decoders.batches.step import (
    ScanBudget,  # noqa: F401 (re-exported)
    compiled_step,
    decode_at,  # noqa: F401 (re-exported)
    decode_item,  # noqa: F401 (re-exported)
    decode_spanned_at,  # noqa: F401 (re-exported)
    find_next_batch,  # noqa: F401 (re-exported)
    plausible_at,  # noqa: F401 (re-exported)
)
from kafkadump.decoders.batches.work import WORK

_UNLOADED: Any = object()
# the compiled twin of CrcScan's hop over intact batches (None: pure Python; see kafkadump.accel), loaded on
# first use (``_crc_hop``: a command that checks no CRC this way does not load it)
_HOT: ModuleType | None = _UNLOADED
# the hop's CRC-32C: its own (None), unless it has only its portable tables, slower than the crc32c package's
# hardware code on such a CPU: then the package's, called per batch
_HOP_CRC: Callable[..., int] | None = _UNLOADED

# a window of plain batches (PlainRun) spans at most this many bytes, and each of its batches at most
# WINDOW_BATCH (larger ones are walked one by one: their lines stream a run of records at a time)
WINDOW_BYTES = 256 << 10
WINDOW_BATCH = 64 << 10


def _crc_hop() -> tuple[ModuleType | None, Callable[..., int] | None]:
    """The compiled hop and the CRC-32C it is to call (see ``_HOT``, ``_HOP_CRC``), loaded on first use."""
    global _HOT, _HOP_CRC
    if _HOT is _UNLOADED:
        _HOT = compiled("crchop")
    if _HOP_CRC is _UNLOADED:
        _HOP_CRC = None if _HOT is None or _HOT.crc32c_codes()[0] != "table" else _crc32c
    return _HOT, _HOP_CRC


def iter_batches(buf: ByteBuffer, file: str = "-", *, start: int = 0, end: int | None = None,
                 options: Options | None = None, base: int = 0) -> Iterator[Batch | Gap]:
    """Yield :class:`Batch` and :class:`Gap` objects for ``buf[start:end]`` in order.

    Positions are absolute: ``base + position in buf``.  Never raises on
    bad bytes.
    """
    return cast(Iterator[Batch | Gap], _walk(buf, file, start, end, options, base, None))


def iter_windows(buf: ByteBuffer, file: str = "-", *, start: int = 0, end: int | None = None,
                 options: Options | None = None, base: int = 0,
                 runs: tuple[int, int, int, int] | None = None) -> Iterator[Batch | Gap | PlainRun]:
    """:func:`iter_batches`, windows of plain batches as :class:`PlainRun` items (checked by the compiled
    walk, when it is there; the pure path yields none).  ``runs``: the record bounds of the windows
    (``model.EVERY_RECORD`` or a query's: those of ``options.select``); None: no windows."""
    return _walk(buf, file, start, end, options, base, runs)


def _walk(buf: ByteBuffer, file: str, start: int, end: int | None, options: Options | None, base: int,
          runs: tuple[int, int, int, int] | None) -> Iterator[Batch | Gap | PlainRun]:
    """The loop of :func:`iter_batches` and :func:`iter_windows`."""
    opt = options or Options()
    if end is None:
        end = len(buf)
    budget = ScanBudget.for_walk(opt, end - start)
    pos = start
    prev_last = None
    release = page_releaser(buf)
    released = start
    window = compiled_step() if runs is not None else None
    max_window_batch = min(opt.max_batch_bytes, WINDOW_BATCH)
    while pos < end:
        if release is not None and pos - released >= RELEASE_STEP:
            release(pos)
            released = pos
        if window is not None:
            until = min(end, released + RELEASE_STEP, pos + WINDOW_BYTES)
            got = window.plain_window(buf, pos, end, until, max_window_batch, opt.records, prev_last, runs, _crc32c)
            if got is not None:
                nxt, n, records, prev_last = got
                WORK.steps += n
                WORK.records += records
                WORK.crc_bytes += nxt - pos - n * CRC_START
                yield PlainRun(file, base + pos, nxt - pos, buf, base, n, records, runs, opt)  # type: ignore[arg-type]
                pos = nxt
                continue
        items, pos = decode_at(buf, pos, end, file, opt, base, budget)
        WORK.steps += 1
        for b in items:
            if isinstance(b, Batch) and b.crc_valid:
                if prev_last is not None and b.base_offset is not None and b.base_offset <= prev_last:
                    b.findings.append(Finding(Code.OFFSET_ORDER, b.position,
                                              f"baseOffset {b.base_offset} not after previous lastOffset {prev_last}"))
                if b.last_offset is not None:
                    prev_last = b.last_offset
            yield b


def run_batches(run: PlainRun) -> Iterator[Batch]:
    """The batches of ``run`` decoded one by one by the walk (the pure-Python twin of the window: the
    same batches, without findings)."""
    start = run.position - run.base
    for item in iter_batches(run.data, run.file, start=start, end=start + run.size, options=run.options,
                             base=run.base):
        assert isinstance(item, Batch)
        yield item


def run_records(run: PlainRun) -> Iterator[tuple[Batch, Sequence[Record]]]:
    """Each batch of ``run`` (:func:`run_batches`) with the records its bounds keep (none of a batch the
    walk's ``select`` pruned: its records are not decoded); a stream stays a stream."""
    lo, hi, t_lo, t_hi = run.bounds

    def keep(r: Record) -> bool:
        return lo <= r.offset <= hi and t_lo <= r.timestamp <= t_hi

    for b in run_batches(run):
        records = b.records or []
        if isinstance(records, RecordSource):
            yield b, cast(Sequence[Record], records.filtered(keep))
        else:
            yield b, [r for r in records if keep(r)]


def locate(buf: ByteBuffer, file: str, *, position: int | None = None, offset: int | None = None,
           index: int | None = None, options: Options | None = None) -> Batch | Gap | None:
    """Find one item of the walk: the one containing byte ``position``, the
    batch holding Kafka ``offset``, or the ``index``-th batch (0-based; gaps
    are not counted).  Default: the first item.  None when there is none.
    """
    opt = (options or Options()).shallow()
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


def decode_spanned(buf: ByteBuffer, item: Batch | Gap, options: Options | None = None, base: int = 0) -> tuple:
    """Decode one located item again, recording every field's span.

    Returns ``(item, spans)``: for a batch, the fully decoded batch (records
    included; its ``decompressed`` payload kept); for a gap, the gap and
    one unparsed span covering it.  ``base`` is the absolute position of
    ``buf[0]``.
    """
    opt = options or Options()
    if isinstance(item, Gap):
        return item, [Span("unparsed", item.position, item.size, None, "file", raw="unparsed")]
    rel = item.position - base
    spans: list = []
    declared = item.batch_length
    if item.magic != 2 or declared is None or declared == item.size - 12:
        return decode_spanned_at(buf, rel, item.size, item.magic, item.file, base, opt, spans), spans
    chunk = bytes(buf[rel:rel + item.size])
    # a batch the walk recovered with its length repaired (length-repaired): decoded with the length
    # its bytes give, its batchLength field shown as the file holds it
    fixed = bytearray(chunk)
    struct.pack_into(">i", fixed, 8, item.size - 12)
    b = decode_item(bytes(fixed), 2, item.file, item.position, opt, True, spans)
    b.batch_length = declared
    b.findings[:0] = [f for f in item.findings if f.code is Code.LENGTH_REPAIRED]
    for sp in spans:
        if sp.path == "batch.batchLength":
            sp.value = declared
    return b, spans


def _bad_crcs(mv: memoryview, runs: list[tuple[int, int, int]]) -> list[int]:
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

    On the compiled path the intact batches up to each page release are
    walked and checksummed in C, the GIL released (``accel``'s ``crc_hop``,
    CRC-32C by ``crc32c.h``), on this thread: that costs less CPU than
    the pure path's threads.  On the pure path, large inputs have their
    CRCs computed by ``threads`` worker threads, a window of batches at a
    time, while this thread walks the lengths ahead; results are consumed
    in file order.

    Iterating yields only the problem items; the counters say the rest.
    """

    _HEAD = struct.Struct(">qiibI")
    WINDOW = 2048            # batches per unit of threaded work (at most)
    WINDOW_BYTES = 4 << 20   # bytes per unit of threaded work (at most): bounds the mapped pages ahead
    THREAD_MIN_BYTES = 8 << 20

    def __init__(self, buf: ByteBuffer, file: str = "-", options: Options | None = None, threads: int = 2):
        self.buf = buf
        self.file = file
        self.opt = (options or Options()).shallow()
        self.budget = ScanBudget.for_walk(self.opt, len(buf))
        self.release = page_releaser(buf)
        self.threads = threads
        self.batches = 0
        self.bytes = 0
        self.bad = 0

    def _problem(self, pos: int, end: int) -> tuple[list[Batch | Gap], int]:
        """Decode at ``pos`` with the full decoder; count; return (problem items, next)."""
        items, new = decode_at(self.buf, pos, end, self.file, self.opt, 0, self.budget)
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

    def __iter__(self) -> Iterator[Batch | Gap]:
        # the compiled hop costs less CPU on one core than the pure path's crc32c calls on two threads
        if _crc_hop()[0] is None and self.threads > 1 and len(self.buf) >= self.THREAD_MIN_BYTES:
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
        release = self.release
        released = 0
        hot, hop_crc = _crc_hop()
        hop = None if hot is None else hot.crc_hop
        try:
            while pos < end:
                if release is not None and pos - released >= RELEASE_STEP:
                    release(pos)
                    released = pos
                # the intact batches up to the next page release, in C; then the batch there, below
                hopped = None if hop is None else hop(buf, pos, end, released + RELEASE_STEP, self.WINDOW_BYTES, hop_crc)
                if hopped is not None:  # (None: positions the hop does not take; the loop below judges)
                    pos, n, size = hopped
                    self.batches += n
                    self.bytes += size
                    if pos >= end:
                        break
                if end - pos >= 61:
                    _, length, _, magic, stored = unpack(buf, pos)
                    nxt = pos + 12 + length
                    if magic == 2 and MIN_BATCH_LENGTH <= length <= self.WINDOW_BYTES and nxt <= end:
                        if crc(mv[pos + 21:nxt]) == stored:
                            self.batches += 1
                            self.bytes += length + 12
                            pos = nxt
                            continue
                items, pos = self._problem(pos, end)
                yield from items
        finally:
            mv.release()

    def _collect(self, pos: int, end: int, limit: int) -> tuple[list[tuple[int, int, int]], int]:
        """Walk plausible v2 batches by length from ``pos``: ``(runs, stop)``.

        Stops after ``limit`` batches or at the first position that is not a
        plausible v2 batch (the caller decodes that one in full).
        """
        buf = self.buf
        unpack = self._HEAD.unpack_from
        runs: list[tuple[int, int, int]] = []  # (start, next, stored crc) of each batch
        append = runs.append
        stop_at = pos + self.WINDOW_BYTES * self.threads
        while pos < end and len(runs) < limit and pos < stop_at:
            if end - pos < 61:
                break
            _, length, _, magic, stored = unpack(buf, pos)
            nxt = pos + 12 + length
            if magic != 2 or not MIN_BATCH_LENGTH <= length <= self.WINDOW_BYTES or nxt > end:
                break  # (a huge batch is checksummed in place, piece by piece, by the decoder)
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
                if self.release is not None and runs[0][0] - released >= RELEASE_STEP:
                    self.release(runs[0][0])  # workers are past it: every earlier window is done
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


__all__ = ["Options", "iter_batches", "iter_windows", "run_batches", "run_records", "WINDOW_BYTES", "WINDOW_BATCH", "decode_at", "CrcScan", "locate", "decode_spanned", "find_next_batch",
           "plausible_at", "page_releaser", "ScanBudget", "DEFAULT_MAX_SCAN", "SCAN_FLOOR", "Batch", "Gap"]
