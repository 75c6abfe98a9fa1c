"""Decoded items to rows of the three levels (a renderer: objects in, columns out).

Batch and gap rows are built from ``kafkadump.objects.records.batch_object`` /
``gap_object``, the functions behind ``batches --json``, so a row holds the
very values of the JSON line.  Record rows are built field by field (the hot
path), with the values ``RecordLines`` writes; the tests hold the two equal.

Rows are accumulated column-wise (one Python list per column, a record
batch's records added a column at a time) and handed out in chunks, which the
data source turns into Arrow record batches.  With ``fast`` (the data source's
tasks), a plain run of records is appended instead to Arrow buffers by the
compiled loop (:mod:`kafkadump.spark.record_buffers`: no object per record),
and a chunk is a list of parts (:meth:`Columns.take_parts`), each of list
columns or of buffers, in row order.  Only the columns asked for are
built (``names``: the pruned schema), and only the row types asked for
(``types``: what a pushed-down filter keeps).  ``timestamp`` holds epoch ms
here, as ``timestampMs`` does; the data source makes it a timestamp column.
No pyspark or pyarrow here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeAlias

from kafkadump.decoders.batches.batch import RecordStream
from kafkadump.decoders.batches.model import Batch, Gap, Record, RecordSource
from kafkadump.objects.records import batch_object as batch_dict
from kafkadump.objects.records import file_error_object, findings_object, item_findings_objects
from kafkadump.objects.records import gap_object as gap_dict
from kafkadump.reports.query import RecordQuery
from kafkadump.spark.generated_rows import FILLS, PLAIN_NULL_COLUMNS
from kafkadump.spark.record_buffers import (
    BUFFER_COLUMNS,
    CONSTANT_COLUMNS,
    RecordBuffers,
    available,
    plain_stream,
    run_records,
)
from kafkadump.spark.row_schema import BATCH_FIELDS, FINDING_FIELDS, RECORD_FIELDS, Fields

CHUNK_ROWS = 8192            # rows held as Python lists (an object per cell) before a chunk is handed out
# rows held in the compiled loop's buffers: larger Arrow batches cost less per row on both sides (Spark's
# per-batch work, the worker's per-part work): 65536 against 8192 rows took 9-12 % less CPU per scan
# (bench/spark_bench.py's data, local[1]); the bytes stay bounded by CHUNK_BYTES
BUFFER_CHUNK_ROWS = 65536
CHUNK_BYTES = 32 << 20       # key + value bytes held before a chunk is handed out

# a column's dict key in a JSON-contract line, where it is another column's
LINE_KEY = {"timestampMs": "timestamp"}


class ListPart:
    """Rows as one Python list per column (``rows`` of them)."""

    __slots__ = ("cols", "rows")

    def __init__(self, cols: list[list], rows: int):
        self.cols = cols
        self.rows = rows


Part: TypeAlias = "ListPart | RecordBuffers"


class Columns:
    """Column lists for one level (only ``names``, in that order, when given; rows of the
    types in ``types`` only, when given); ``take()`` returns and resets them.

    ``decoded`` counts the records handed in (those of the batches whose records were
    decoded), ``values`` the cells built: what pruning and pushdown save, counted."""

    def __init__(self, fields: Fields, topic: str | None, partition: int | None, log_dir: str | None = None,
                 names: Sequence[str] | None = None, types: Iterable[str] | None = None):
        every = [n for n, _ in fields]
        self.names = every if names is None else list(names)
        unknown = [n for n in self.names if n not in every]
        if unknown:
            raise ValueError(f"no column {', '.join(unknown)} at this level")
        self.keys = [LINE_KEY.get(n, n) for n in self.names]
        self.index = {n: i for i, n in enumerate(self.names)}
        self.topic = topic
        self.partition = partition
        self.log_dir = log_dir
        self.types = None if types is None else frozenset(types)
        self.query: RecordQuery | None = None  # records level: the records kept (kafkadump.reports.query)
        self.decoded = 0
        self.values = 0
        self._reset()

    def _reset(self) -> None:
        self.cols: list[list] = [[] for _ in self.names]
        self.rows = 0          # rows of the chunk (in parts and in the lists)
        self.bytes = 0
        self.parts: list[Part] = []
        self.listed = 0        # rows in the lists
        self.list_rows = 0     # rows of the chunk in lists (sealed or not)
        self.buffers: RecordBuffers | None = None

    def full(self) -> bool:
        return self.list_rows >= CHUNK_ROWS or self.rows >= BUFFER_CHUNK_ROWS or self.bytes >= CHUNK_BYTES

    def take(self) -> tuple[list[list], int]:
        """The rows held, as list columns (for a reader without the fast path: no buffers)."""
        assert not self.parts and self.buffers is None
        cols, n = self.cols, self.rows
        self._reset()
        return cols, n

    def take_parts(self) -> list[Part]:
        """The rows held, as parts in row order."""
        self._seal_lists()
        self._seal_buffers()
        parts = self.parts
        self._reset()
        return parts

    def _seal_lists(self) -> None:
        if self.listed:
            self.parts.append(ListPart(self.cols, self.listed))
            self.cols = [[] for _ in self.names]
            self.listed = 0

    def _seal_buffers(self) -> None:
        if self.buffers is not None:
            if self.buffers.rows:
                self.parts.append(self.buffers)
            self.buffers = None

    def _listing(self, n: int) -> None:
        """``n`` rows are being added to the lists (after the buffers' rows)."""
        self._seal_buffers()
        self.rows += n
        self.listed += n
        self.list_rows += n

    def keeps(self, row_type: str) -> bool:
        return self.types is None or row_type in self.types

    def add_dict(self, d: dict) -> None:
        """One row from a JSON-contract dict (absent keys are null), unless its type is not kept."""
        if not self.keeps(d.get("type", "")):
            return
        self._listing(1)
        get = d.get
        for key, col in zip(self.keys, self.cols):
            col.append(get(key))
        self.values += len(self.cols)

    def where(self, d: dict) -> dict:
        d["topic"] = self.topic
        d["partition"] = self.partition
        d["logDir"] = self.log_dir
        return d

    def error(self, file: str, message: str) -> None:
        self.add_dict(self.where(file_error_object(file, message)))

    def add(self, item: Batch | Gap) -> None:
        """The rows of one decoded item (each level has its own)."""
        raise NotImplementedError

    def count_decoded(self, item: Batch | Gap) -> None:
        recs = item.records if isinstance(item, Batch) else None
        if recs is not None:
            self.decoded += recs.decoded if isinstance(recs, RecordSource) else len(recs)


class BatchColumns(Columns):
    def __init__(self, topic: str | None, partition: int | None, log_dir: str | None = None,
                 names: Sequence[str] | None = None, types: Iterable[str] | None = None):
        super().__init__(BATCH_FIELDS, topic, partition, log_dir, names, types)

    def add(self, item: Batch | Gap) -> None:
        self.count_decoded(item)
        d = gap_dict(item) if isinstance(item, Gap) else batch_dict(item)
        self.add_dict(self.where(d))


class FindingColumns(Columns):
    def __init__(self, topic: str | None, partition: int | None, log_dir: str | None = None,
                 names: Sequence[str] | None = None, types: Iterable[str] | None = None):
        super().__init__(FINDING_FIELDS, topic, partition, log_dir, names, types)

    def add(self, item: Batch | Gap) -> None:
        self.count_decoded(item)
        if not item.findings:
            return
        for obj in item_findings_objects(item):
            self.add_dict(self.where(obj))


_ABSENT = ("position", "size", "findings", "error")  # a record line has none
# the columns the compiled column loop (record_buffers) fills for the rows of a plain run: its buffers,
# the part's constants, and those null in every row of a plain v2 batch (a registry field outside these
# sends the records through the fills)
_FAST_COLUMNS = frozenset(BUFFER_COLUMNS + CONSTANT_COLUMNS + PLAIN_NULL_COLUMNS + _ABSENT)

# one column's values for ``n`` records ``recs`` of batch ``b``, added to ``cols`` by the caller
Fill: TypeAlias = "Callable[[RecordColumns, Batch, Sequence[Record], int], Iterable[Any]]"


def _fill(name: str) -> Fill:
    registered = FILLS.get(name)   # the field registry's (objects/fields.py)
    if registered is not None:
        return lambda _c, b, recs, n: registered(b, recs, n)
    if name in _ABSENT:
        return lambda _c, _b, _recs, n: [None] * n
    fixed: dict[str, Callable[[RecordColumns], Any]] = {
        "topic": lambda c: c.topic, "partition": lambda c: c.partition, "logDir": lambda c: c.log_dir,
    }
    value = fixed[name]
    return lambda c, _b, _recs, n: [value(c)] * n


class RecordColumns(Columns):
    """``records --json`` lines as rows: a gap line per gap, a findings line for a
    batch with findings (before its records), a record line per record."""

    def __init__(self, topic: str | None, partition: int | None, log_dir: str | None = None,
                 names: Sequence[str] | None = None, types: Iterable[str] | None = None, fast: bool = False):
        super().__init__(RECORD_FIELDS, topic, partition, log_dir, names, types)
        self._fills = [(i, _fill(n)) for i, n in enumerate(self.names)]
        self._sized = [i for i, n in enumerate(self.names) if n in ("key", "value")]
        self._records = self.keeps("record")
        self.fast = fast and available() and _FAST_COLUMNS.issuperset(self.names)
        self.fast_rows = 0     # rows the compiled loop built (what the tests check it did)

    def add(self, item: Batch | Gap) -> None:
        self.count_decoded(item)
        if isinstance(item, Gap):
            self.add_dict(self.where(gap_dict(item)))
            return
        if item.findings:
            self.add_dict(self.where(findings_object(item)))
        if not self._records or item.records is None:
            return
        recs = item.records if self.query is None else self.query.select(item.records)
        if self.fast and plain_stream(item, recs):
            self.add_stream(item, recs)  # type: ignore[arg-type]
        elif isinstance(recs, RecordSource):
            for run in recs.chunks():
                self.add_records(item, run)
        elif recs:
            self.add_records(item, recs)

    def add_stream(self, b: Batch, recs: RecordStream) -> None:
        """The records of the plain stream ``recs`` of ``b``, into the buffers by the compiled
        loop, a run at a time; a run it hands back goes to the lists (:meth:`add_records`)."""
        pos, n, done = recs.start, 0, False
        while not done:
            buffers = self.buffers
            if buffers is None or buffers.constants["file"] != b.file:
                self._seal_buffers()
                self._seal_lists()
                buffers = self.buffers = RecordBuffers(self.names, b.file, self.topic, self.partition, self.log_dir)
            rows, held = buffers.rows, buffers.bytes
            got = buffers.add_run(b, recs, pos, n)
            if got is None:
                run, pos, n, done = run_records(b, recs, pos, n)
                if run:
                    self.add_records(b, run)
                continue
            pos, n, done = got
            added = buffers.rows - rows
            self.rows += added
            self.fast_rows += added
            self.bytes += buffers.bytes - held
            self.values += added * len(self.names)

    def add_records(self, b: Batch, recs: Sequence[Record]) -> None:
        """The records ``recs`` of ``b``, a column at a time."""
        n = len(recs)
        self._listing(n)
        cols = self.cols
        for i, fill in self._fills:
            cols[i] += fill(self, b, recs, n)
        for i in self._sized:
            self.bytes += sum(map(len, filter(None, cols[i][-n:])))   # null and empty: nothing
        self.values += n * len(cols)


COLUMNS = {"batches": BatchColumns, "records": RecordColumns, "findings": FindingColumns}


__all__ = ["COLUMNS", "BatchColumns", "RecordColumns", "FindingColumns", "ListPart", "Part", "CHUNK_ROWS",
           "LINE_KEY"]
