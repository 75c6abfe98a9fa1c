"""The ``kafkadump`` Spark data source (PySpark's Python Data Source API, Spark 4).

    df = spark.read.format("kafkadump").option("level", "records").load("/var/lib/kafka/data")

(installed, kafkadump is registered in every session: ``pyspark_kafkadump``;
``kafkadump.spark.register(spark)`` also turns filter pushdown on.)

Options (all optional):

``level``           ``batches`` (default), ``records`` or ``findings``
``splitBytes``      byte size of a task's share of a large file (default 134217728);
                    a file larger than this is read by several tasks, cut at batch
                    boundaries (see :mod:`kafkadump.spark.splits`)
``openCostBytes``   what opening a file is reckoned to cost, in bytes, when small files are
                    packed into one task (default 4194304, as Spark's openCostInBytes)
``packBytes``       the most bytes (plus open costs) of small files packed into one task
                    (default: splitBytes; :func:`kafkadump.spark.read` sets it from the
                    data size and the session's default parallelism, as Spark does)
``include``         comma-separated file-name globs taken from directories (default ``*.log``)
``shallow``         ``true``: batches/findings without decoding records (header and CRC only)
``maxDecompressed`` / ``maxDepth``   the decoder limits of the CLI's ``--max-decompressed`` / ``--max-depth``
``files``           a JSON list of ``[path, size]``: the file list, already made (by
                    :func:`kafkadump.spark.read` with Spark's own listing); ``load()``'s paths
                    are then not listed again
``columns``         comma-separated column names: only these are built (the schema is
                    pruned to them; a schema given to ``spark.read.schema(...)`` naming
                    some of the level's columns does the same)
``fromOffset`` ... ``keys``   records level: the CLI's ``records`` filters (see :func:`_query`)

Filters Spark pushes (PySpark 4.1+) are taken where the rows stay exactly those
Spark's own filter would keep (:mod:`kafkadump.spark.pushdown`): files skipped by
topic/partition/log dir, batches by their header, records by key.

Planning (``partitions()``) lists local paths and stats them; it reads no
data.  Each task (``read()``) opens its file itself on the executor, maps it
read-only and streams it through the shared decoder, yielding Arrow record
batches of about 8192 rows (65536 from the compiled loop's buffers).  At level ``records`` the records of a plain batch
go from its bytes to Arrow buffers in one compiled loop
(:mod:`kafkadump.spark.record_buffers`), without a Python object per record.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kafkadump.base.errors import UsageError
from kafkadump.reports.query import RecordQuery
from kafkadump.spark.pushdown import Pushed, push
from kafkadump.spark.row_schema import (
    LEVELS,
    TIMESTAMP_FROM_MS,
    TIMESTAMP_MS_MAX,
    TIMESTAMP_MS_MIN,
    column_names,
    struct_type,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from pyarrow import RecordBatch
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType
from kafkadump.spark.record_buffers import buffer_arrays
from kafkadump.spark.rows import ListPart, Part
from kafkadump.spark.splits import DEFAULT_INCLUDE, OPEN_COST_DEFAULT, SPLIT_BYTES_DEFAULT, ListingError, plan
from kafkadump.spark.tasks import options_for, read_task
from kafkadump.spark.worker_files import list_for_workers

FORMAT = "kafkadump"


class FilePart(InputPartition):
    """One task: a list of units ``(path, size, k, n)``, share ``k`` of ``n`` of the file
    ``path`` (``size`` bytes when planned), read one after the other."""

    def __init__(self, units: list[tuple]):
        super().__init__(units)
        self.units = [tuple(u) for u in units]


def _opt(options: Mapping[str, Any], name: str, default: Any = None) -> Any:
    # the options mapping is case-insensitive in Spark; be lenient with plain dicts too
    for key in (name, name.lower()):
        if key in options:
            return options[key]
    return default


def _bool(text: object, name: str) -> bool:
    t = str(text).strip().lower()
    if t in ("true", "1", "yes"):
        return True
    if t in ("false", "0", "no", ""):
        return False
    raise ValueError(f"kafkadump: option {name}={text!r} is not true or false")


def _int(text: object, name: str, default: int, minimum: int = 1) -> int:
    if text is None:
        return default
    try:
        v = int(str(text).strip())
    except ValueError:
        raise ValueError(f"kafkadump: option {name}={text!r} is not an integer") from None
    if v < minimum:
        raise ValueError(f"kafkadump: option {name}={text!r} must be at least {minimum}")
    return v


QUERY_OPTIONS = ("fromOffset", "toOffset", "fromTime", "toTime", "key", "keys")


def _query(options: Mapping[str, Any], level: str) -> RecordQuery | None:
    """The records query the options give (the CLI's ``records`` filters), or None.

    ``fromOffset``/``toOffset`` (inclusive), ``fromTime``/``toTime`` (ISO-8601 or epoch ms),
    ``key`` (one, as ``--key`` takes it: text, ``hex:``, ``base64:``, ``null``) or ``keys``
    (a JSON list of them).  Records level only.
    """
    given = {name: _opt(options, name) for name in QUERY_OPTIONS}
    if all(v is None for v in given.values()):
        return None
    if level != "records":
        raise ValueError("kafkadump: fromOffset/toOffset/fromTime/toTime/key select records: use level records")
    keys = json.loads(given["keys"]) if given["keys"] is not None else None
    if given["key"] is not None:
        keys = [*(keys or []), given["key"]]
    try:
        return RecordQuery.parse(
            None if given["fromOffset"] is None else _int(given["fromOffset"], "fromOffset", 0, minimum=-(1 << 63)),
            None if given["toOffset"] is None else _int(given["toOffset"], "toOffset", 0, minimum=-(1 << 63)),
            given["fromTime"], given["toTime"], keys)
    except UsageError as e:
        raise ValueError(f"kafkadump: {e}") from None


def _columns(options: Mapping[str, Any], level: str) -> list[str] | None:
    """The ``columns`` option: the columns to build, comma-separated (None: all of the level's)."""
    text = _opt(options, "columns")
    if text is None:
        return None
    names = [n.strip() for n in str(text).split(",") if n.strip()]
    if not names:
        raise ValueError("kafkadump: option columns is empty: name at least one column")
    struct_type(level, names)  # ValueError for a name the level lacks
    return names


def _names_of(schema: Any, level: str) -> list[str] | None:
    """The columns of ``schema`` (the one Spark reads with), checked against the level's;
    None when it is the level's whole schema."""
    names = [f.name for f in schema.fields]
    if names == column_names(level):
        return None
    want = struct_type(level, names)  # ValueError for a name the level lacks
    for got, expected in zip(schema.fields, want.fields):
        if got.dataType != expected.dataType:
            raise ValueError(f"kafkadump: column {got.name} of level {level} is "
                             f"{expected.dataType.simpleString()}, not {got.dataType.simpleString()}")
    return names


def _level(options: Mapping[str, Any]) -> str:
    level = str(_opt(options, "level", "batches")).strip().lower()
    if level not in LEVELS:
        raise ValueError(f"kafkadump: option level={level!r}: expected one of {', '.join(LEVELS)}")
    return level


class KafkaDumpDataSource(DataSource):
    """``spark.read.format("kafkadump")``: Kafka segments as batches, records or findings."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        level = _level(self.options)
        return struct_type(level, _columns(self.options, level))

    def reader(self, schema: StructType) -> KafkaDumpReader:
        return KafkaDumpReader(dict(self.options), schema)


class _BoundPush:
    """``reader.pushFilters``: calls ``reader.push``.

    PySpark refuses (DATA_SOURCE_PUSHDOWN_DISABLED) to read with a reader that overrides
    ``pushFilters`` while ``spark.sql.python.filterPushdown.enabled`` is false (its
    default), to warn that the filters would not be pushed.  Nothing is lost for this
    reader then (Spark applies every filter itself; the rows are the same), and the format
    is registered in sessions that never set that option (``pyspark_kafkadump``), so the
    method shows that check the base method it stands for: pushdown happens where the
    option is on (:func:`register` turns it on), and reading works where it is off."""

    __func__ = staticmethod(getattr(DataSourceReader, "pushFilters", lambda self, filters: filters))  # 4.0: none

    def __init__(self, reader: KafkaDumpReader):
        self.__self__ = reader

    def __call__(self, filters: list) -> list:
        return self.__self__.push(filters)


class _PushFilters:
    def __get__(self, reader: KafkaDumpReader | None, owner: type | None = None) -> Any:
        return self if reader is None else _BoundPush(reader)


class KafkaDumpReader(DataSourceReader):
    """Plans the tasks (:meth:`partitions`) and reads one (:meth:`read`); takes the filters it
    can apply exactly (:meth:`pushFilters`, :mod:`kafkadump.spark.pushdown`) and builds only
    the columns of the schema Spark reads with (a ``columns`` option, or a schema given to
    ``spark.read.schema(...)`` naming some of the level's columns)."""

    def __init__(self, options: dict, schema: StructType | None = None):
        self.level = _level(options)
        self.names = None if schema is None else _names_of(schema, self.level)
        self.pushed = Pushed()
        self.split_bytes = _int(_opt(options, "splitBytes"), "splitBytes", SPLIT_BYTES_DEFAULT)
        cost = _opt(options, "openCostBytes")
        self.open_cost = OPEN_COST_DEFAULT if cost is None else _int(cost, "openCostBytes", 0, minimum=0)
        pack = _opt(options, "packBytes")
        self.pack_bytes = None if pack is None else _int(pack, "packBytes", 0)
        max_dec = _opt(options, "maxDecompressed")
        max_depth = _opt(options, "maxDepth")
        self.opt = options_for(
            shallow=_bool(_opt(options, "shallow", "false"), "shallow"),
            max_decompressed=None if max_dec is None else _int(max_dec, "maxDecompressed", 0),
            max_depth=None if max_depth is None else _int(max_depth, "maxDepth", 0),
            level=self.level)
        self.query = _query(options, self.level)
        include = _opt(options, "include")
        self.include = tuple(p.strip() for p in include.split(",") if p.strip()) if include else DEFAULT_INCLUDE
        files = _opt(options, "files")
        if files is not None:
            self.files = [(str(p), int(s)) for p, s in json.loads(files)]
        else:
            paths = _opt(options, "paths")
            paths = json.loads(paths) if paths else []
            single = _opt(options, "path")
            if single:
                paths.append(single)
            if not paths:
                raise ValueError("kafkadump: no path: spark.read.format('kafkadump').load(PATH, ...)")
            try:
                self.files = list_for_workers(paths, self.include)  # URIs: through pyarrow.fs, or a one-line error
            except ListingError as e:
                raise ValueError(f"kafkadump: {e}") from None

    def push(self, filters: list) -> list:
        """Take the filters :func:`kafkadump.spark.pushdown.push` can apply; return the others."""
        self.pushed, rest = push(self.level, filters)
        return rest

    pushFilters = _PushFilters()  # PySpark 4.1+ calls it with the query's filters (see _PushFilters)

    def partitions(self) -> list[FilePart]:
        if self.pushed.impossible(self.query):
            return []
        files = [(p, s) for p, s in self.files if self.pushed.keeps_file(p)]
        return [FilePart(units) for units in plan(files, self.split_bytes, self.open_cost, self.pack_bytes)]

    def read(self, partition: InputPartition) -> Iterator[RecordBatch]:
        if not isinstance(partition, FilePart):
            return  # Spark's placeholder partition when there are no files
        yield from self.read_units(partition.units)

    def read_units(self, units: Iterable[tuple], counts: dict | None = None) -> Iterator[RecordBatch]:
        """The Arrow record batches of ``units`` (a task's); ``counts`` as :func:`read_task`'s."""
        from pyspark.sql.pandas.types import to_arrow_schema

        schema = to_arrow_schema(struct_type(self.level, self.names), timezone="UTC")
        query = self.pushed.query(self.query)
        names = self.names or column_names(self.level)
        for path, size, k, n in units:
            for parts in read_task(self.level, path, size, k, n, self.split_bytes, self.opt, query,
                                   self.names, self.pushed.types, counts):
                for part in parts:
                    yield part_batch(part, names, schema)


def part_batch(part: Part, names: list[str], schema: Any) -> RecordBatch:
    """One Arrow record batch of ``schema`` (the columns ``names``) from a part of a task's rows."""
    import pyarrow as pa

    if isinstance(part, ListPart):
        return arrow_batch(part.cols, schema)
    arrays = buffer_arrays(part, names, schema)
    batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
    batch.validate()   # every buffer long enough for its rows before the JVM reads it (see session.py)
    for name, array in zip(names, arrays):
        if name in OFFSET_COLUMNS:
            array.validate(full=True)   # and the offsets the compiled loop wrote in bounds
    return batch


# the columns whose offsets come from the compiled loop (the others are fixed-width, or made by pyarrow
# itself from one value: their full validation, UTF-8 of the same string on every row, was 1.7 % of a
# Spark scan's CPU)
OFFSET_COLUMNS = frozenset(("key", "value", "headers"))


def arrow_batch(cols: list[list], schema: Any) -> RecordBatch:
    """One Arrow record batch of ``schema`` from column lists (a timestamp column holds epoch ms)."""
    import pyarrow as pa

    arrays = []
    for col, f in zip(cols, schema):
        if f.name in TIMESTAMP_FROM_MS:
            arrays.append(timestamps(col, f.type))
        else:
            arrays.append(pa.array(col, type=f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def timestamps(ms: Any, arrow_type: Any) -> Any:
    """Epoch ms (ints or None, or an Arrow int64 array) as an Arrow timestamp array of ``arrow_type`` (microseconds);
    null where the value is outside Spark's timestamp range."""
    import pyarrow as pa
    import pyarrow.compute as pc

    raw = ms if isinstance(ms, pa.Array) else pa.array(ms, type=pa.int64())
    ok = pc.and_(pc.greater_equal(raw, TIMESTAMP_MS_MIN), pc.less_equal(raw, TIMESTAMP_MS_MAX))
    kept = pc.if_else(ok, raw, pa.scalar(None, pa.int64()))
    return pc.multiply(kept, 1000).cast(arrow_type)


def map_read(spark: SparkSession, options: dict) -> DataFrame:
    """The rows of ``format("kafkadump")`` with ``options`` (a ``files`` list given), planned here on the
    driver by the same reader (:meth:`KafkaDumpReader.partitions`: the same packing rule, the same
    shares) and read by ``mapInArrow`` over one row per planned task: each task runs
    :meth:`KafkaDumpReader.read_units` on its units, as the data source's tasks do, and Spark takes its
    Arrow batches as they are (one copy of each row on the JVM side, where the Python data source
    API makes two).  What :func:`kafkadump.spark.read` and ``spark scan`` run; the columns are
    those of the ``columns`` option (all of the level's without it); filters given to the DataFrame
    afterwards are Spark's (the records filters go in ``options``: ``fromOffset``, ...)."""
    level = _level(options)
    schema = struct_type(level, _columns(options, level))
    reader = KafkaDumpReader(options, schema)
    tasks = [part.units for part in reader.partitions()]
    reader.files = []    # the plan is all the tasks need
    ids = spark.range(0, len(tasks), 1, max(1, len(tasks)))
    return map_in_arrow(ids, partial(read_planned, reader=reader, tasks=tasks), schema)


def read_planned(batches: Iterable[RecordBatch], reader: KafkaDumpReader, tasks: list[list[tuple]]
                 ) -> Iterator[RecordBatch]:
    """What a task of :func:`map_read` runs in ``mapInArrow``: the task numbers of its input (its
    ``id`` column) in, the Arrow record batches of those planned tasks out."""
    for batch in batches:
        for task in batch.column(0).to_pylist():
            yield from reader.read_units(tasks[task])


def map_in_arrow(df: DataFrame, fn: Any, schema: Any) -> DataFrame:
    """``df.mapInArrow(fn, schema)``.  PySpark's ``mapInArrow`` insists on pandas on the driver,
    although an Arrow map never uses it (the executors run it with pyarrow alone); without pandas
    the same plan is built from PySpark's own ``UserDefinedFunction``, so kafkadump needs no pandas."""
    try:
        import pandas  # noqa: F401
    except ImportError:
        pass
    else:
        return df.mapInArrow(fn, schema)
    from pyspark.sql import DataFrame as Frame
    from pyspark.sql.udf import UserDefinedFunction
    from pyspark.util import PythonEvalType

    udf = UserDefinedFunction(fn, returnType=schema, name="kafkadump_decode",
                              evalType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF)
    column = udf(*[df[c] for c in df.columns])
    return Frame(df._jdf.mapInArrow(column._jc, False, None), df.sparkSession)


PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: SparkSession) -> None:
    """Make ``spark.read.format("kafkadump")`` available in this session (installed, kafkadump
    is registered in every session already: see ``pyspark_kafkadump``), and turn on the pushing
    of filters to Python data sources (PySpark 4.1+), which is off by default."""
    spark.dataSource.register(KafkaDumpDataSource)
    try:
        spark.conf.set(PUSHDOWN_CONF, "true")
    except Exception:  # noqa: BLE001 - a PySpark without the option (4.0): filters stay Spark's
        pass


__all__ = ["KafkaDumpDataSource", "KafkaDumpReader", "register", "map_read", "map_in_arrow", "FORMAT"]
