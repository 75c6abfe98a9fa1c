"""The ``kafkadump`` Spark data source (PySpark's Python Data Source API, Spark 4).

    from kafkadump.spark import register
    register(spark)
    df = spark.read.format("kafkadump").option("level", "records").load("/var/lib/kafka/data")

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

Planning (``partitions()``) lists local paths and stats them; it reads no
data.  Each task (``read()``) opens its file itself on the executor, maps it
read-only and streams it through the shared decoder, yielding Arrow record
batches of at most 8192 rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from ..errors import UsageError
from ..query import RecordQuery
from .row_schema import LEVELS, struct_type

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyarrow import RecordBatch
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType
from .splits import DEFAULT_INCLUDE, OPEN_COST_DEFAULT, SPLIT_BYTES_DEFAULT, ListingError, list_local, plan
from .tasks import options_for, read_task

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
        return struct_type(_level(self.options))

    def reader(self, schema: StructType) -> KafkaDumpReader:
        return KafkaDumpReader(dict(self.options))


class KafkaDumpReader(DataSourceReader):
    def __init__(self, options: dict):
        self.level = _level(options)
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
                self.files = list_local(paths, self.include)
            except ListingError as e:
                raise ValueError(f"kafkadump: {e}") from None

    def partitions(self) -> list[FilePart]:
        return [FilePart(units) for units in plan(self.files, self.split_bytes, self.open_cost, self.pack_bytes)]

    def read(self, partition: InputPartition) -> Iterator[RecordBatch]:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        if not isinstance(partition, FilePart):
            return  # Spark's placeholder partition when there are no files
        schema = to_arrow_schema(struct_type(self.level), timezone="UTC")
        types = [f.type for f in schema]
        for path, size, k, n in partition.units:
            for cols, _ in read_task(self.level, path, size, k, n, self.split_bytes, self.opt, self.query):
                arrays = [pa.array(c, type=t) for c, t in zip(cols, types)]
                yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def register(spark: SparkSession) -> None:
    """Make ``spark.read.format("kafkadump")`` available in this session."""
    spark.dataSource.register(KafkaDumpDataSource)


__all__ = ["KafkaDumpDataSource", "KafkaDumpReader", "register", "FORMAT"]
