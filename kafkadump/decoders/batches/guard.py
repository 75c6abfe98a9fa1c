"""Walking a file that may change under the walk: :func:`guarded_walk`.

A file truncated while it is mapped (log retention or recovery on a live
broker) faults (SIGBUS) on the pages past its new end.  The walk is
checked against the file's current size at item boundaries, after any
pause long enough for the file to have changed: when it shrank, the walk
stops, a ``file-changed`` finding says so, and the bytes still there are
walked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from time import monotonic
from typing import Any

from kafkadump.base.findings import Code, Finding
from kafkadump.decoders.batches.model import Gap
from kafkadump.sources.segment import Segment

Walk = Callable[[int, int], Iterator[Any]]


def file_changed(was: int, now: int) -> Finding:
    """The ``file-changed`` finding: the file shrank from ``was`` to ``now`` bytes while it was read."""
    return Finding(Code.FILE_CHANGED, now, f"the file shrank from {was} to {now} bytes while it was read; "
                                           f"the bytes still there are decoded")


def shrunk_gap(path: str, was: int, now: int) -> Gap:
    """A zero-size gap at the file's new end holding its ``file-changed`` finding."""
    return Gap(path, now, 0, [file_changed(was, now)])


# the size is checked after an item when this long has passed since the last check: a consumer that
# paused (a full pipe, a slow terminal) is checked before the walk reads on; a busy walk costs nothing
CHECK_EVERY = 0.002


def guarded_walk(seg: Segment, path: str, walk: Walk, changed: Callable[[str, int, int], Any] | None = None
                 ) -> Iterator[Any]:
    """The items of ``walk(start, end)`` over ``seg`` (anything with a ``position`` and a ``size``),
    its size checked at item boundaries.

    A file truncated while it is read (the broker's retention or recovery)
    must not fault on the pages past its new end: the walk stops, a
    ``file-changed`` finding says so (in a zero-size :class:`Gap`, or the
    item ``changed(path, was, now)`` makes), and the bytes still there are walked.
    """
    marker = changed or shrunk_gap
    end = seg.current_size()
    if end < seg.size:
        yield marker(path, seg.size, end)
    items = walk(0, end)
    last = monotonic()
    while True:
        for item in items:
            yield item
            t = monotonic()
            if t - last < CHECK_EVERY:
                continue
            last = t
            now = seg.current_size()
            if now < end:
                close = getattr(items, "close", None)  # a generator: finish it now
                if close is not None:
                    close()
                yield marker(path, end, now)
                items = walk(min(item.position + item.size, now), now)
                end = now
                break
        else:
            break
    now = seg.current_size()
    if now < end:
        yield marker(path, end, now)


__all__ = ["Walk", "CHECK_EVERY", "file_changed", "shrunk_gap", "guarded_walk"]
