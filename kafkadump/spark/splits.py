"""Where a distributed read's tasks come from: listing files, naming their
topic-partition, and cutting large segments into byte ranges at batch
boundaries.  Pure Python: no pyspark here, so this is tested on its own.

The cut rule
------------
A file of ``size`` bytes read with split size ``S`` becomes
``n = ceil(size / S)`` tasks.  Task ``k`` owns the items of the whole-file
walk (:func:`kafkadump.decoders.batches.iter_batches`) whose position lies in
``[c_k, c_k+1)``, where ``c_k`` is the first position *the walk itself
visits* at or after ``k * S`` (``c_0 = 0``, ``c_n = end``).  Every task
computes its own two cuts, without coordination, by replaying the walk's
steps from the start of the file:

* an intact-looking v2 batch whose declared end is the end of the data or a
  plausible next header is stepped over by its length, reading only its
  header (the same predicates ``decode_at`` applies, so it would step there
  too, whatever the CRC says);
* anything else (legacy messages, damage, resync) is handed to the shared
  decoder's ``decode_at`` with records off, and the walk goes where it says.

So the positions are exactly the whole-file walk's, damage included, while
the bytes between headers are not read.  The one piece of walk state that
crosses a cut, the last offset of the last CRC-valid batch (for
``offset-order`` findings), is restored by starting the decoder at that batch
(its records are not decoded) and dropping what precedes the cut.

Small files (and the last shares of large ones) are packed several to a
task, as Spark packs small files (:func:`plan`).

Each task maps the file read-only (``open_segment``) and streams it; the
header replay touches one page per batch.  Memory is bounded by one batch
plus, for the replay, 8 bytes per batch since the last batch whose CRC was
confirmed (checked every :data:`CHECK_EVERY` batches).
"""

from __future__ import annotations

import fnmatch
import glob
import math
import os
import re
from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from kafkadump.base.errors import InputError
from kafkadump.decoders.batches import Batch, Gap, Options, iter_batches
from kafkadump.decoders.batches.primitives import ByteBuffer
from kafkadump.decoders.batches.step import decode_at, intact_batch_at, length_step
from kafkadump.decoders.logfiles.names import topic_partition

SPLIT_BYTES_DEFAULT = 128 << 20
OPEN_COST_DEFAULT = 4 << 20      # as Spark's spark.sql.files.openCostInBytes
DEFAULT_INCLUDE = ("*.log",)
CHECK_EVERY = 4096

T = TypeVar("T")


def log_dir(path: str) -> str | None:
    """The directory holding the file's partition directory (a broker's log dir), or None
    when the file is not in a partition directory."""
    if topic_partition(path)[0] is None:
        return None
    return os.path.dirname(os.path.dirname(path.rstrip("/"))) or None


class ListingError(InputError):
    """A path given to the read names nothing readable."""


def local_path(path: str) -> str | None:
    """The local filesystem path for ``path`` (plain or ``file:`` URI), else None."""
    if path.startswith("file://"):
        rest = path[len("file://"):]
        if rest.startswith("/"):
            return rest                 # file:///abs
        host, _, tail = rest.partition("/")
        return "/" + tail if host in ("", "localhost") else None
    if path.startswith("file:"):
        return path[len("file:"):]      # file:/abs (Hadoop's form)
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", path):
        return None                     # hdfs://, s3a://, gs://, ...
    return path


def _included(name: str, include: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pat) for pat in include)


def list_local(paths: Iterable[str], include: Iterable[str] = DEFAULT_INCLUDE) -> list[tuple[str, int]]:
    """``(absolute path, size)`` of every file the paths name, sorted, no duplicates.

    A file named directly is always taken; directories are walked recursively
    for files whose name matches one of ``include``; a path that is neither is
    expanded as a glob.  A path that names nothing raises :class:`ListingError`.
    """
    out: dict[str, int] = {}
    for given in paths:
        p = local_path(given)
        if p is None:
            raise ListingError(f"{given}: not a local path; read URIs with kafkadump.spark.read(spark, [PATH], "
                               "level) or kafkadump spark scan (through Spark's own Hadoop FileSystem)")
        hits = [p] if os.path.exists(p) else sorted(glob.glob(p))
        if not hits:
            raise ListingError(f"{given}: no such file or directory")
        for h in hits:
            h = os.path.abspath(h)
            if os.path.isdir(h):
                for root, dirs, files in os.walk(h):
                    dirs.sort()
                    for f in sorted(files):
                        if _included(f, include):
                            fp = os.path.join(root, f)
                            try:
                                out[fp] = os.stat(fp).st_size
                            except OSError:
                                out[fp] = -1  # listed but unreadable: the task reports it
            else:
                try:
                    out[h] = os.stat(h).st_size
                except OSError as e:
                    raise ListingError(f"{given}: {e.strerror}") from None
    return sorted(out.items())


def pack(items: Iterable[T], cost: Callable[[T], int], target: int, max_items: int | None = None) -> list[list[T]]:
    """``items`` cut into consecutive tasks, the packing rule of every kafkadump Spark read (Spark's own
    for small files: ``spark.sql.files.maxPartitionBytes`` and ``openCostInBytes``): a task takes items
    while the sum of their ``cost`` (bytes plus the open cost) stays within ``target``; an item that
    alone exceeds it is a task by itself.  That many tasks, and no more, are then evened out: the
    items are cut at the smallest cap (at most ``target``) that needs no more tasks, so 4 files of
    36 MiB are 2 tasks of 2 files, not 3 files and 1 (two cores busy to the end, not one).  It
    depends only on the items, never on the cluster's cores, so the same files are packed the same
    way whoever plans them (``KafkaSegmentInputFormat.pack`` is the same rule in the JVM)."""
    listed = list(items)
    costs = [cost(item) for item in listed]
    cuts = _next_fit(costs, target, max_items)
    if len(cuts) > 2:
        lo, hi = min(target, max(1, -(-sum(costs) // (len(cuts) - 1)))), target
        while lo < hi:      # the task count only falls as the cap grows (next fit is optimal for it)
            mid = (lo + hi) // 2
            if len(_next_fit(costs, mid, max_items)) <= len(cuts):
                hi = mid
            else:
                lo = mid + 1
        cuts = _next_fit(costs, lo, max_items)
    return [listed[a:b] for a, b in zip(cuts, cuts[1:])]


def _next_fit(costs: list[int], cap: int, max_items: int | None) -> list[int]:
    """Where consecutive tasks of at most ``cap`` (and ``max_items``) start, and the end: ``[0, ..., len]``."""
    cuts = [0]
    load = 0
    for i, c in enumerate(costs):
        if i > cuts[-1] and (load + c > cap or (max_items is not None and i - cuts[-1] >= max_items)):
            cuts.append(i)
            load = 0
        load += c
    if costs:
        cuts.append(len(costs))
    return cuts


def plan(files: Iterable[tuple[str, int]], split_bytes: int = SPLIT_BYTES_DEFAULT, open_cost: int = OPEN_COST_DEFAULT,
         pack_bytes: int | None = None) -> list[list[tuple]]:
    """Tasks for ``[(path, size), ...]``: each a list of units ``(path, size, k, n)``.

    A file larger than ``split_bytes`` is cut into ``n = ceil(size / split_bytes)``
    units (share ``k`` of ``n``, see the module doc).  Units are packed into
    tasks in listing order by :func:`pack`: a task takes units while their
    bytes, plus ``open_cost`` for each, stay within ``pack_bytes`` (default,
    and at most, ``split_bytes``).  ``kafkadump.spark.read`` and
    ``spark.read.format("kafkadump").load`` both plan with this function and
    the same defaults, so they cut and pack the same files the same way.
    """
    if split_bytes < 1:
        raise ValueError("split size must be positive")
    target = split_bytes if pack_bytes is None else max(1, min(pack_bytes, split_bytes))
    units: list[tuple[tuple, int]] = []
    for path, size in files:
        n = max(1, math.ceil(size / split_bytes)) if size > 0 else 1
        for k in range(n):
            share = min(max(size, 0) - k * split_bytes, split_bytes) if n > 1 else max(size, 0)
            units.append(((path, size, k, n), share + open_cost))
    return [[u for u, _ in task] for task in pack(units, lambda u: u[1], target)]


# --- the walk replay -------------------------------------------------------------------

class _LastValid:
    """The position of the last walk batch that is CRC-valid (and has a last offset).

    Batches stepped over by header alone are candidates until checked; the
    check runs backwards from the newest, so normally one CRC is computed.
    """

    def __init__(self, buf: ByteBuffer, end: int, file: str, opt: Options):
        self.buf, self.end, self.file, self.opt = buf, end, file, opt
        self.known: int | None = None  # position of the last confirmed-valid batch
        self.cands = array("q")      # unchecked positions after ``known``
        self.checked = 0             # cands[:checked] are known invalid

    def confirmed(self, pos: int) -> None:
        self.known = pos
        self.cands = array("q")
        self.checked = 0

    def add(self, pos: int) -> None:
        self.cands.append(pos)
        if len(self.cands) - self.checked >= CHECK_EVERY:
            self.resolve()

    def resolve(self):
        c = self.cands
        for i in range(len(c) - 1, self.checked - 1, -1):
            if intact_batch_at(self.buf, c[i], self.end, self.file, self.opt) is not None:
                self.confirmed(c[i])
                return self.known
        self.checked = len(c)
        return self.known


def cuts(buf: ByteBuffer, end: int, file: str, opt: Options, split_bytes: int, k: int, n: int
         ) -> tuple[int, int, int]:
    """``(start, stop, resume)`` for task ``k`` of ``n``: walk positions.

    The task yields the walk's items in ``[start, stop)``; it starts its
    decoder at ``resume`` (the last CRC-valid batch before ``start``, or
    ``start``) so that walk state is as in a whole-file walk.
    """
    if n <= 1:
        return 0, end, 0
    lo = k * split_bytes
    hi = (k + 1) * split_bytes if k + 1 < n else None
    shallow = opt.replace(records=False, select=None)
    last = _LastValid(buf, end, file, shallow)
    start = 0 if k == 0 else None
    resume = 0
    pos = 0
    while pos < end:
        if start is None and pos >= lo:
            start = pos
            r = last.resolve()
            resume = start if r is None else r
            if hi is None:
                return start, end, resume
        if hi is not None and pos >= hi:
            assert start is not None  # pos >= hi > lo: start was set at the first pos >= lo
            return start, pos, resume
        nxt = length_step(buf, pos, end, shallow)
        if nxt is not None:
            # decode_at would return ([batch], nxt) whatever the batch's CRC
            last.add(pos)
            pos = nxt
            continue
        items, nxt = decode_at(buf, pos, end, file, shallow)
        b = items[0]
        if isinstance(b, Batch) and b.crc_valid and b.last_offset is not None:
            last.confirmed(pos)
        pos = nxt
    if start is None:
        return end, end, end
    return start, end, resume


def iter_task(buf: ByteBuffer, end: int, file: str, opt: Options, split_bytes: int, k: int, n: int
              ) -> Iterator[Batch | Gap]:
    """The items of task ``k`` of ``n`` over ``buf[:end]``: exactly the whole-file
    walk's items whose position falls in the task's range."""
    if n <= 1:
        yield from iter_batches(buf, file, end=end, options=opt)
        return
    start, stop, resume = cuts(buf, end, file, opt, split_bytes, k, n)
    yield from iter_share(buf, file, opt, start, stop, resume, end)


def iter_share(buf: ByteBuffer, file: str, opt: Options, start: int, stop: int, resume: int, end: int,
               base: int = 0) -> Iterator[Batch | Gap]:
    """The whole-file walk's items whose position lies in ``[start, stop)``, the walk started at
    ``resume`` (the last CRC-valid batch before ``start``, or ``start``: see :func:`cuts`) and run
    to ``end``.  Positions are absolute; ``buf[0]`` is at ``base`` (a byte range read from a file,
    as :mod:`.hadoop_files` reads them)."""
    if start >= stop:
        return
    o = opt
    if resume < start:
        user = opt.select

        def select(b, _start=start, _user=user):
            # batches before the cut are decoded only for the walk state: skip their records
            return b.position >= _start and (_user is None or _user(b))

        o = opt.replace(select=select)
    for item in iter_batches(buf, file, start=resume - base, end=end - base, options=o, base=base):
        p = item.position
        if p < start:
            continue
        if p >= stop:
            break
        yield item


__all__ = ["SPLIT_BYTES_DEFAULT", "OPEN_COST_DEFAULT", "DEFAULT_INCLUDE", "topic_partition", "local_path", "list_local",
           "pack", "plan", "cuts", "iter_task", "iter_share", "ListingError", "log_dir"]
