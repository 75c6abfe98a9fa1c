"""Filters Spark pushes to the ``kafkadump`` data source: which it takes, and what they skip.

PySpark (4.1 and later) hands :meth:`DataSourceReader.pushFilters` the
conjuncts of a query's ``WHERE`` as small filter objects; the reader keeps
those :func:`push` takes and gives the others back for Spark to apply.  A
filter is taken only when the scan then yields exactly the rows Spark's own
filter would keep, so Spark drops it from the plan:

* ``topic``, ``partition``, ``logDir`` equal to / in (any level): files whose
  directory names say otherwise are not opened (:meth:`Pushed.keeps_file`);
* ``type`` equal to / in (any level): rows of other types are not built;
* records level, ``offset`` and ``timestamp`` / ``timestampMs`` ranges
  (``=``, ``<``, ``<=``, ``>``, ``>=``) and ``key`` equal to / in: a
  :class:`kafkadump.reports.query.RecordQuery`, the CLI's own ``records --from-offset
  ...`` filter, which skips whole batches by their header (``lastOffset``
  below the range, ``baseOffset`` above it, ``maxTimestamp`` before it) before
  decoding their records, and keeps records one by one after; only record rows
  remain (gap, findings and error rows have these columns null);
* ``IS NOT NULL`` where it follows from the above.

The filter objects are read by class name and fields (``attribute``,
``value``), so this module imports no pyspark.  Everything it keeps is plain
data: the reader is pickled to the executors.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from kafkadump.reports.query import RecordQuery
from kafkadump.spark.row_schema import TIMESTAMP_MS_MAX, TIMESTAMP_MS_MIN
from kafkadump.spark.splits import log_dir, topic_partition

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
RANGE_FILTERS = ("EqualTo", "GreaterThan", "GreaterThanOrEqual", "LessThan", "LessThanOrEqual")
WHERE_COLUMNS = ("topic", "partition", "logDir", "type")
RECORD_COLUMNS = ("offset", "timestamp", "timestampMs", "key")


@dataclass(frozen=True)
class Pushed:
    """What the pushed filters keep (None: no condition)."""

    topics: frozenset | None = None
    partitions: frozenset | None = None
    log_dirs: frozenset | None = None
    types: frozenset | None = None
    offsets: tuple[int | None, int | None] = (None, None)    # inclusive bounds
    times: tuple[int | None, int | None] = (None, None)      # epoch ms, inclusive
    keys: frozenset | None = None
    empty: bool = False                                      # bounds no row can meet
    taken: tuple[str, ...] = field(default=(), compare=False)  # the filters taken, as text (for tests, explain)

    def keeps_file(self, path: str) -> bool:
        """False when no row of the file ``path`` can pass (judged from its name alone)."""
        if self.empty:
            return False
        if self.topics is not None or self.partitions is not None:
            topic, partition = topic_partition(path)
            if self.topics is not None and topic not in self.topics:
                return False
            if self.partitions is not None and partition not in self.partitions:
                return False
        return self.log_dirs is None or log_dir(path) in self.log_dirs

    def query(self, base: RecordQuery | None) -> RecordQuery | None:
        """``base`` (the reader's option filters) narrowed by the pushed bounds and keys."""
        if self.offsets == (None, None) and self.times == (None, None) and self.keys is None:
            return base
        q = base or RecordQuery()
        lo, hi = _narrow((q.from_offset, q.to_offset), self.offsets)
        t_lo, t_hi = _narrow((q.from_time, q.to_time), self.times)
        keys = self.keys if q.keys is None else (self.keys & set(q.keys) if self.keys is not None else q.keys)
        return q.replace(from_offset=lo, to_offset=hi, from_time=t_lo, to_time=t_hi,
                         keys=None if keys is None else tuple(sorted(keys, key=lambda k: (k is None, k or b""))))

    def impossible(self, base: RecordQuery | None) -> bool:
        """True when the bounds, with ``base``'s, leave nothing."""
        if self.empty:
            return True
        if base is None:
            return False
        lo, hi = _narrow((base.from_offset, base.to_offset), self.offsets)
        t_lo, t_hi = _narrow((base.from_time, base.to_time), self.times)
        keys = self.keys if base.keys is None or self.keys is None else self.keys & set(base.keys)
        return _empty(lo, hi) or _empty(t_lo, t_hi) or keys == frozenset()


def _empty(lo: int | None, hi: int | None) -> bool:
    return lo is not None and hi is not None and lo > hi


def _narrow(a: tuple[int | None, int | None], b: tuple[int | None, int | None]) -> tuple[int | None, int | None]:
    lo = max((x for x in (a[0], b[0]) if x is not None), default=None)
    hi = min((x for x in (a[1], b[1]) if x is not None), default=None)
    return lo, hi


def _column(f: Any) -> str | None:
    attr: tuple[str, ...] = tuple(getattr(f, "attribute", ()))
    return attr[0] if len(attr) == 1 else None


def _micros(v: Any) -> int | None:
    """A timestamp filter's value as epoch microseconds (Spark gives a time-zone-aware datetime)."""
    if not isinstance(v, datetime):
        return None
    if v.tzinfo is None:
        v = v.replace(tzinfo=timezone.utc)
    return (v - EPOCH) // timedelta(microseconds=1)


def _ms_bounds(kind: str, micros: int) -> tuple[int | None, int | None]:
    """The epoch-ms bounds of records whose ``timestamp`` (ms x 1000 microseconds) meets ``kind micros``."""
    floor, ceil = micros // 1000, -(-micros // 1000)
    return {
        "EqualTo": (ceil, floor),                 # empty unless micros is a whole millisecond
        "GreaterThan": (floor + 1, None),
        "GreaterThanOrEqual": (ceil, None),
        "LessThan": (None, ceil - 1),
        "LessThanOrEqual": (None, floor),
    }[kind]


def _int_bounds(kind: str, v: int) -> tuple[int | None, int | None]:
    return {
        "EqualTo": (v, v), "GreaterThan": (v + 1, None), "GreaterThanOrEqual": (v, None),
        "LessThan": (None, v - 1), "LessThanOrEqual": (None, v),
    }[kind]


def _values(f: Any, kind: type | tuple[type, ...]) -> frozenset | None:
    """The values an EqualTo / In filter accepts, when all are of ``kind``; else None."""
    name = type(f).__name__
    vals = [f.value] if name == "EqualTo" else list(f.value) if name == "In" else None
    if vals is None or not all(isinstance(v, kind) and not isinstance(v, bool) for v in vals):
        return None
    return frozenset(bytes(v) if isinstance(v, (bytes, bytearray)) else v for v in vals)


class _Pushing:
    """The state of one :func:`push` call."""

    def __init__(self, level: str):
        self.level = level
        self.sets: dict[str, frozenset] = {}
        self.offsets: tuple[int | None, int | None] = (None, None)
        self.times: tuple[int | None, int | None] = (None, None)
        self.records_only = False
        self.clamped = False   # a ``timestamp`` filter was taken: out-of-range (null) timestamps are dropped
        self.taken: list[str] = []

    def take_set(self, col: str, values: frozenset) -> None:
        self.sets[col] = self.sets[col] & values if col in self.sets else values

    def take(self, f: Any) -> bool:
        """Whether ``f`` is taken (and noted)."""
        col, name = _column(f), type(f).__name__
        if col is None:
            return False
        if col in WHERE_COLUMNS and name in ("EqualTo", "In"):
            values = _values(f, int if col == "partition" else str)
            if values is None:
                return False
            self.take_set(col, values)
            return True
        if self.level != "records" or col not in RECORD_COLUMNS:
            return False
        if col == "key":
            values = _values(f, (bytes, bytearray))
            if values is None:
                return False
            self.take_set("key", values)
        elif name not in RANGE_FILTERS:
            return False
        elif col == "timestamp":
            micros = _micros(f.value)
            if micros is None:
                return False
            # a record whose ms Spark cannot hold has a null timestamp: no comparison keeps it
            self.times = _narrow(self.times, _narrow(_ms_bounds(name, micros), (TIMESTAMP_MS_MIN, TIMESTAMP_MS_MAX)))
            self.clamped = True
        elif isinstance(f.value, int) and not isinstance(f.value, bool):
            bounds = _int_bounds(name, f.value)
            if col == "offset":
                self.offsets = _narrow(self.offsets, bounds)
            else:
                self.times = _narrow(self.times, bounds)
        else:
            return False
        self.records_only = True
        return True

    def take_not_null(self, f: Any) -> bool:
        """``IS NOT NULL`` on a column the taken filters already keep non-null."""
        col = _column(f)
        if col == "type":
            return True
        if col in ("topic", "partition", "logDir"):
            return col in self.sets
        if col == "offset" and self.level == "records":
            self.records_only = True
            return True
        if col == "timestamp":
            return self.clamped
        if col == "timestampMs":
            return self.times != (None, None)
        return col == "key" and "key" in self.sets

    def result(self) -> Pushed:
        types = self.sets.get("type")
        if self.records_only:
            types = frozenset({"record"}) if types is None else types & {"record"}
        keys = self.sets.get("key")
        empty = _empty(*self.offsets) or _empty(*self.times) or any(not v for v in self.sets.values()) \
            or types == frozenset()
        return Pushed(self.sets.get("topic"), self.sets.get("partition"), self.sets.get("logDir"), types,
                      self.offsets, self.times, keys, empty, tuple(self.taken))


def push(level: str, filters: Iterable[Any]) -> tuple[Pushed, list[Any]]:
    """``(what the taken filters keep, the filters not taken)``, for rows of ``level``."""
    state = _Pushing(level)
    rest = []
    filters = list(filters)
    for f in filters:
        if type(f).__name__ == "IsNotNull":
            continue
        if state.take(f):
            state.taken.append(repr(f))
        else:
            rest.append(f)
    for f in filters:
        if type(f).__name__ != "IsNotNull":
            continue
        if state.take_not_null(f):
            state.taken.append(repr(f))
        else:
            rest.append(f)
    return state.result(), rest


__all__ = ["Pushed", "push"]
