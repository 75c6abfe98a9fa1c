"""Files read through Spark's own Hadoop FileSystem: ``hdfs://``, ``s3a://``, ``gs://``, ``file:``, ...

A Python task has no JVM to call (PySpark's workers have no py4j gateway), so
the bytes come from Spark itself: the ``binaryFile`` source opens each file on
the executor with the cluster's Hadoop configuration (its credentials, its
``fs.*.impl``, Kerberos, ...) and hands it, as an Arrow binary value, to
:func:`decode_contents`, which runs in ``mapInArrow`` in the same task and
yields the rows of the ``kafkadump`` data source (same schema, same values).

What that costs: a file is read whole by one task (Spark's ``binaryFile``
source does not split files), and the task holds it in memory while it is
decoded (twice: Spark's Arrow value and the decoder's bytes; at most 2 GiB per
file, Spark's limit; Kafka's segments are 1 GiB by default).  Several small files share a task, packed by Spark's own rule
(``spark.sql.files.maxPartitionBytes`` and ``openCostInBytes``).  Plain local
paths are not read this way: their tasks map them and cut large ones at batch
boundaries (:mod:`.splits`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from ..decode import Options
from ..query import RecordQuery
from .rows import COLUMNS
from .splits import iter_task, local_path, log_dir, topic_partition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# what to install where Spark's Hadoop has no filesystem for a scheme
FS_HINTS = {
    "s3a": "put hadoop-aws and its AWS SDK on Spark's classpath (--conf spark.jars.packages="
           "org.apache.hadoop:hadoop-aws:HADOOP_VERSION) and give credentials (spark.hadoop.fs.s3a.*)",
    "s3": "use s3a:// (Hadoop's S3 connector, hadoop-aws on Spark's classpath)",
    "s3n": "use s3a:// (Hadoop's S3 connector, hadoop-aws on Spark's classpath)",
    "gs": "put Google's gcs-connector (hadoop3) jar on Spark's classpath (--jars or spark.jars.packages) and "
          "configure spark.hadoop.fs.gs.*",
    "hdfs": "check the namenode address and that Spark's Hadoop configuration (HADOOP_CONF_DIR) names it",
    "abfs": "put hadoop-azure on Spark's classpath and configure spark.hadoop.fs.azure.*",
    "abfss": "put hadoop-azure on Spark's classpath and configure spark.hadoop.fs.azure.*",
}


def scheme(uri: str) -> str:
    head, sep, _ = uri.partition("://")
    if sep:
        return head.lower()
    return "file" if uri.startswith("file:") else ""


def filesystem_error(given: str, jvm_text: str) -> str:
    """One line for a Hadoop filesystem that cannot be used: the cause, then the fix."""
    s = scheme(given)
    if "No FileSystem for scheme" in jvm_text or "ClassNotFoundException" in jvm_text:
        hint = FS_HINTS.get(s, "put the Hadoop connector for it on Spark's classpath")
        return f"{given}: Spark's Hadoop has no filesystem for {s}:// here: {hint}"
    return f"{given}: {jvm_text}"


def hadoop_uri(path: str) -> str:
    """``path`` as Hadoop names it (a plain path becomes a ``file:`` URI)."""
    return path if local_path(path) is None or path.startswith("file:") else "file:" + path


def shown_path(uri: str) -> str:
    """The ``file`` column's value for a URI: a ``file:`` URI as a plain path, others as given."""
    lp = local_path(uri) if uri.startswith("file:") else None
    return lp if lp is not None else uri


def query_of(options: dict[str, Any]) -> RecordQuery | None:
    """The records query of ``read``'s options (``fromOffset``, ``toOffset``, ``fromTime``,
    ``toTime``, ``key``, ``keys``), as the data source parses them; None when none is given."""
    names = ("fromOffset", "toOffset", "fromTime", "toTime")
    keys = list(options.get("keys") or [])
    if options.get("key") is not None:
        keys.append(options["key"])
    if not keys and all(options.get(n) is None for n in names):
        return None
    lo, hi = (None if options.get(n) is None else int(options[n]) for n in ("fromOffset", "toOffset"))
    return RecordQuery.parse(lo, hi, options.get("fromTime"), options.get("toTime"), keys or None)


def buffer_rows(level: str, path: str, buf: Any, opt: Options, query: RecordQuery | None
                ) -> Iterator[tuple[list[list], int]]:
    """``(columns, nrows)`` chunks of the rows of one whole file's bytes (the walk of
    :func:`.splits.iter_task` with one share); a decoder failure becomes an error row."""
    topic, partition = topic_partition(path)
    cols = COLUMNS[level](topic, partition, log_dir(path))
    if query is not None:
        cols.query = query
        opt = opt.replace(select=query.batch_selector())
    end = len(buf)
    try:
        for item in iter_task(buf, end, path, opt, max(end, 1), 0, 1):
            cols.add(item)
            if cols.full():
                yield cols.take()
    except Exception as e:  # noqa: BLE001 - a decoder bug must not kill the task
        cols.error(path, f"internal error while decoding: {type(e).__name__}: {e}")
    if cols.rows:
        yield cols.take()


def decode_contents(batches: Iterable[Any], level: str, opt: Options, query: RecordQuery | None) -> Iterator[Any]:
    """What the executors run in ``mapInArrow``: ``(path, content)`` Arrow batches of
    Spark's ``binaryFile`` source in, the level's Arrow record batches out."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from .row_schema import struct_type

    schema = to_arrow_schema(struct_type(level), timezone="UTC")
    types = [f.type for f in schema]
    for batch in batches:
        paths, contents = batch.column(0), batch.column(1)
        for i in range(batch.num_rows):
            buf = contents[i].as_buffer().to_pybytes()   # bytes: the decoder's resync searches need them
            for cols, _ in buffer_rows(level, shown_path(paths[i].as_py()), buf, opt, query):
                yield pa.RecordBatch.from_arrays([pa.array(c, type=t) for c, t in zip(cols, types)], schema=schema)


def read_through_hadoop(spark: SparkSession, files: list[tuple[str, int]], level: str, opt: Options,
                        query: RecordQuery | None) -> DataFrame:
    """The ``kafkadump`` rows of ``files`` (Hadoop URIs, or plain paths read as ``file:``),
    each file read whole through Spark's Hadoop FileSystem by the task that decodes it."""
    from .row_schema import struct_type

    uris = [hadoop_uri(p) for p, _ in files]
    contents = spark.read.format("binaryFile").load(uris).select("path", "content")
    return map_in_arrow(contents, partial(decode_contents, level=level, opt=opt, query=query), struct_type(level))


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

__all__ = ["read_through_hadoop", "decode_contents", "buffer_rows", "filesystem_error", "hadoop_uri", "query_of",
           "shown_path", "scheme"]
