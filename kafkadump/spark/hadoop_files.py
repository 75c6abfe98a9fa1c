"""Files read through Spark's own Hadoop FileSystem: ``hdfs://``, ``s3a://``, ``gs://``, ``file:``, ...

A Python task has no JVM to call (PySpark's workers have no py4j gateway), so
the bytes are read on the JVM side of the task, with the cluster's Hadoop
configuration (its credentials, its ``fs.*.impl``, Kerberos, ...), and handed
to the decoder in the same task through ``mapInArrow``:

* **byte ranges** (the normal path): kafkadump's ``KafkaSegmentInputFormat``
  (:mod:`.jvm`, a Hadoop InputFormat shipped as Java source and compiled on
  first use) cuts each file at batch boundaries on the driver (it reads the
  batch headers: one 61-byte header per batch, through a 64 KiB window; a file
  of at most one chunk is not opened there) into
  chunks of about :data:`CHUNK_BYTES`, grouped into tasks of about the split
  size; each task reads its chunks' byte ranges and :func:`decode_chunks`
  decodes each with the shared walk (:func:`.splits.iter_share`) at absolute
  positions: the rows and findings of a whole-file walk.  A chunk starts with
  the CRC-valid batch before it (the walk's state), and where the header walk
  cannot go on (damage, padding) the rest of the file is one
  chunk, decoded whole.  A task's Python holds one Arrow batch of chunks at a
  time: at most the split size, and at most Spark's
  ``spark.sql.execution.arrow.maxBytesPerBatch`` (64 MiB by default) past one chunk.
  Each split names the hosts of its first block (HDFS locality).
* **whole files** (no ``javac`` to build the InputFormat, said once on stderr):
  Spark's ``binaryFile`` source reads each file whole in one task (at most
  2 GiB, Spark's limit; memory about twice the file) and :func:`decode_contents`
  decodes it.

Plain local paths are not read this way: their tasks map them and cut large
ones at batch boundaries (:mod:`.splits`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from kafkadump.decoders.batches import Options
from kafkadump.reports.query import RecordQuery
from kafkadump.spark.rows import Part
from kafkadump.spark.splits import (
    OPEN_COST_DEFAULT,
    SPLIT_BYTES_DEFAULT,
    iter_share,
    local_path,
)
from kafkadump.spark.tasks import columns_for

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

CHUNK_BYTES = 4 << 20     # a chunk of a file read through the InputFormat (at most the split size)

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


def buffer_parts(level: str, path: str, buf: Any, opt: Options, query: RecordQuery | None, *, base: int = 0,
                 start: int | None = None, resume: int | None = None) -> Iterator[list[Part]]:
    """Chunks of the rows of the bytes ``buf`` of ``path`` (lists of parts, as a local task's:
    :func:`.tasks.read_task`): a whole file, or a chunk read from absolute position ``base``
    (``resume``, the CRC-valid batch before the chunk, when it is not ``start``, the chunk's own first
    position) to the chunk's end.  The walk is :func:`.splits.iter_share`'s, positions absolute; a
    decoder failure becomes an error row."""
    cols = columns_for(level, path)
    if query is not None:
        cols.query = query
        opt = opt.replace(select=query.batch_selector())
    end = base + len(buf)
    start = base if start is None else start
    try:
        for item in iter_share(buf, path, opt, start, end, base if resume is None else resume, end, base):
            cols.add(item)
            if cols.full():
                yield cols.take_parts()
    except Exception as e:  # noqa: BLE001 - a decoder bug must not kill the task
        cols.error(path, f"internal error while decoding: {type(e).__name__}: {e}")
    if cols.rows:
        yield cols.take_parts()


def _arrow_out(level: str) -> tuple[list[str], Any]:
    from pyspark.sql.pandas.types import to_arrow_schema

    from kafkadump.spark.row_schema import column_names, struct_type

    return column_names(level), to_arrow_schema(struct_type(level), timezone="UTC")


def _content(contents: Any, i: int) -> memoryview:
    """Row ``i`` of an Arrow binary column, as a view of the Arrow buffer Spark's bytes arrived in:
    no copy (a 4 MiB chunk copied to bytes was 60-160 ns a row, a tenth of its decoding)."""
    import struct

    import pyarrow as pa

    _, offsets, data = contents.buffers()   # offsets into the whole data buffer, from the array's own offset on
    width = 8 if pa.types.is_large_binary(contents.type) else 4
    start, stop = struct.unpack_from("<qq" if width == 8 else "<ii", offsets, width * (contents.offset + i))
    return memoryview(data).cast("B")[start:stop]   # unsigned bytes, as bytes index (pyarrow's are signed)


def decode_contents(batches: Iterable[Any], level: str, opt: Options, query: RecordQuery | None) -> Iterator[Any]:
    """What the executors run in ``mapInArrow`` on whole files: ``(path, content)`` Arrow batches of
    Spark's ``binaryFile`` source in, the level's Arrow record batches out."""
    from kafkadump.spark.datasource import part_batch

    names, schema = _arrow_out(level)
    for batch in batches:
        paths, contents = batch.column(0), batch.column(1)
        for i in range(batch.num_rows):
            for parts in buffer_parts(level, shown_path(paths[i].as_py()), _content(contents, i), opt, query):
                for part in parts:
                    yield part_batch(part, names, schema)


def decode_chunks(batches: Iterable[Any], level: str, opt: Options, query: RecordQuery | None) -> Iterator[Any]:
    """What the executors run in ``mapInArrow`` on byte ranges: ``(path, resume, start, content)`` Arrow
    batches of ``KafkaSegmentInputFormat``'s chunks in, the level's Arrow record batches out."""
    from kafkadump.spark.datasource import part_batch

    names, schema = _arrow_out(level)
    for batch in batches:
        paths, resumes, starts, contents = (batch.column(i) for i in range(4))
        for i in range(batch.num_rows):
            resume = resumes[i].as_py()
            for parts in buffer_parts(level, shown_path(paths[i].as_py()), _content(contents, i), opt, query,
                                      base=resume, start=starts[i].as_py(), resume=resume):
                for part in parts:
                    yield part_batch(part, names, schema)


def chunk_frame(spark: SparkSession, uris: list[str], split_bytes: int = SPLIT_BYTES_DEFAULT,
                open_cost: int = OPEN_COST_DEFAULT, chunk_bytes: int = CHUNK_BYTES) -> DataFrame:
    """The ``(path, resume, start, content)`` chunks of ``uris``, one Spark partition per split
    (``KafkaSegmentInputFormat``)."""
    from pyspark.sql import DataFrame as Frame

    fmt, paths = _java_class_and_paths(spark, uris)
    jdf = fmt.chunkFrame(spark._jsparkSession, paths, split_bytes, min(chunk_bytes, split_bytes), open_cost)
    return Frame(jdf, spark)


def planned_chunks(spark: SparkSession, uris: list[str], split_bytes: int = SPLIT_BYTES_DEFAULT,
                   open_cost: int = OPEN_COST_DEFAULT, chunk_bytes: int = CHUNK_BYTES
                   ) -> list[list[tuple[str, int, int, int]]]:
    """The tasks ``KafkaSegmentInputFormat`` plans for ``uris`` (on the driver, no task run): per task,
    its chunks ``(path, resume, start, stop)``."""
    fmt, paths = _java_class_and_paths(spark, uris)
    out = []
    for task in fmt.plan(spark._jsparkSession, paths, split_bytes, min(chunk_bytes, split_bytes), open_cost):
        chunks = []
        for line in task:
            resume, start, stop, path = line.split(" ", 3)
            chunks.append((path, int(resume), int(start), int(stop)))
        out.append(chunks)
    return out


def _java_class_and_paths(spark: SparkSession, uris: list[str]) -> tuple[Any, Any]:
    """``(the py4j view of KafkaSegmentInputFormat, uris as a Java String[])``; the class loaded first
    (:func:`.jvm.load`: RuntimeError when it cannot be)."""
    from kafkadump.spark.jvm import format_class

    view = format_class(spark)
    if view is None:
        raise RuntimeError("KafkaSegmentInputFormat cannot be built or loaded here")
    jvm, gateway = spark._jvm, spark.sparkContext._gateway
    assert jvm is not None and gateway is not None  # a classic session (the one kafkadump builds) runs a JVM
    paths = gateway.new_array(jvm.java.lang.String, len(uris))
    for i, u in enumerate(uris):
        paths[i] = u
    return view, paths


def read_through_hadoop(spark: SparkSession, files: list[tuple[str, int]], level: str, opt: Options,
                        query: RecordQuery | None, split_bytes: int | None = None,
                        open_cost: int | None = None, chunk_bytes: int = CHUNK_BYTES) -> DataFrame:
    """The ``kafkadump`` rows of ``files`` (Hadoop URIs, or plain paths read as ``file:``), read through
    Spark's Hadoop FileSystem by the tasks that decode them: in byte ranges cut at batch boundaries
    (``KafkaSegmentInputFormat``), or whole files when it cannot be built here (:func:`.jvm.load`)."""
    from kafkadump.spark import jvm
    from kafkadump.spark.datasource import map_in_arrow
    from kafkadump.spark.row_schema import struct_type

    uris = [hadoop_uri(p) for p, _ in files]
    if jvm.format_class(spark) is not None:
        chunks = chunk_frame(spark, uris, split_bytes or SPLIT_BYTES_DEFAULT,
                             OPEN_COST_DEFAULT if open_cost is None else open_cost, chunk_bytes)
        return map_in_arrow(chunks, partial(decode_chunks, level=level, opt=opt, query=query), struct_type(level))
    contents = spark.read.format("binaryFile").load(uris).select("path", "content")
    return map_in_arrow(contents, partial(decode_contents, level=level, opt=opt, query=query), struct_type(level))


__all__ = ["read_through_hadoop", "decode_contents", "decode_chunks", "chunk_frame", "planned_chunks", "buffer_parts", "filesystem_error", "hadoop_uri", "query_of",
           "shown_path", "scheme"]
