"""The first or the last N records of a record report (``records --count N`` / ``--last N``).

Both work on the items :func:`kafkadump.reports.segments.record_report` yields:
``--count`` stops the walk after the N-th record; ``--last`` holds at most N
records (never the whole input) and passes damage on as it comes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from itertools import islice

from kafkadump.decoders.batches.model import Gap
from kafkadump.reports.segments import FileStart, RecordsOf

ReportItem = FileStart | Gap | RecordsOf


def first_records(items: Iterable[ReportItem], count: int) -> Iterator[ReportItem]:
    """The items of a record report up to its ``count``-th record; the walk stops there.

    Items are :class:`~kafkadump.reports.segments.RecordsOf` (cut to what is left)
    and anything else (file starts, gaps), passed on as they are.
    """
    left = count
    for item in items:
        if not isinstance(item, RecordsOf):
            yield item
            continue
        if left <= 0:
            return
        records = list(islice(item.records, left))
        decoded = None if item.decoded is None else item.decoded[:len(records)]
        views = None if item.views is None else item.views[:len(records)]
        left -= len(records)
        yield item.replace(records=records, decoded=decoded, views=views)
        if left <= 0:
            return


def last_records(items: Iterable[ReportItem], count: int) -> Iterator[ReportItem]:
    """The items of a record report with only its last ``count`` records (at most ``count`` held).

    Damage (gaps, batches with findings) is passed on as it comes, under its
    file; the last records follow, grouped by their batch again.
    """
    window: deque = deque(maxlen=count)
    start: FileStart | None = None
    shown_file: FileStart | None = None
    for item in items:
        if isinstance(item, FileStart):
            start = item
            continue
        if isinstance(item, RecordsOf):
            decoded: list = item.decoded if item.decoded is not None else [None] * len(item.records)
            views: list = item.views if item.views is not None else [None] * len(item.records)
            window.extend((start, item.batch, r, (d, v)) for r, d, v in zip(item.records, decoded, views))
            if not item.batch.findings:
                continue
            item = item.replace(records=[], decoded=None if item.decoded is None else [],
                                views=None if item.views is None else [])
        if shown_file is not start and start is not None:
            shown_file = start
            yield start
        yield item
    yield from _regrouped(window, shown_file)


def _regrouped(window: deque, shown_file: FileStart | None) -> Iterator[ReportItem]:
    group: list = []
    for start, batch, r, d in window:
        if group and group[0][1] is not batch:
            yield _records_of(group)
            group = []
        if not group and shown_file is not start:
            shown_file = start
            yield start
        group.append((start, batch, r, d))
    if group:
        yield _records_of(group)


def _records_of(group: list) -> RecordsOf:
    """A batch's records from the window; its findings were shown when it passed."""
    import copy  # (only for --last: start-up)

    batch = copy.copy(group[0][1])
    batch.findings = []
    decoded = None if group[0][3][0] is None else [d for *_, (d, _v) in group]
    views = None if group[0][3][1] is None else [v for *_, (_d, v) in group]   # payload views (redaction)
    return RecordsOf(batch, [r for _, _, r, _ in group], decoded, views=views)


__all__ = ["first_records", "last_records"]
