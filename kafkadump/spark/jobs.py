"""``spark scan`` (a DataFrame query over the ``kafkadump`` source) and ``spark triage``.

Everything here runs on the driver; decoding happens in Spark tasks on the
executors: the data source's for ``scan``, ``kafkadump triage``'s own
per-file scan for ``triage``, whose results the driver folds as the CLI does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from kafkadump.reports.scan import FileScan
    from kafkadump.reports.triage import Runner, Triage, Unit
    from kafkadump.sources.segment import Segment

from kafkadump.spark.hadoop_files import filesystem_error, shown_path
from kafkadump.spark.splits import DEFAULT_INCLUDE, OPEN_COST_DEFAULT, ListingError, list_local, local_path

# --- listing -------------------------------------------------------------------------------

def _included(name: str, include: Iterable[str]) -> bool:
    import fnmatch

    return any(fnmatch.fnmatchcase(name, p) for p in include)


def list_files(spark: SparkSession | None, paths: Iterable[str], include: Iterable[str] | None = DEFAULT_INCLUDE
               ) -> list[tuple[str, int]]:
    """``(path, size)`` of the files ``paths`` name, sorted.

    Plain local paths are listed here; URIs (``file:``, ``hdfs://``, ``s3a://``,
    ...) through Spark's own Hadoop FileSystem, globs included.  ``file:``
    results are given back as plain paths.
    """
    include = tuple(include or DEFAULT_INCLUDE)
    out: dict[str, int] = {}
    for given in paths:
        if "://" not in given and not given.startswith("file:"):
            out.update(list_local([given], include))
            continue
        if spark is None:
            raise ListingError(f"{given}: a URI is listed with Spark's file listing; no session given")
        jvm = spark._jvm
        assert jvm is not None  # a classic session (the one kafkadump builds) runs a JVM
        conf = spark._jsc.hadoopConfiguration()
        jpath = jvm.org.apache.hadoop.fs.Path(given)
        try:
            fs = jpath.getFileSystem(conf)
            statuses = fs.globStatus(jpath)
        except Exception as e:  # noqa: BLE001 - py4j wraps the JVM's IOException
            from kafkadump.spark.failures import storage_failure

            message = _jvm_message(e)
            raise ListingError(storage_failure(given, message) or filesystem_error(given, message)) from None
        if not statuses:
            raise ListingError(f"{given}: no such file or directory")
        for st in statuses:
            if st.isDirectory():
                it = fs.listFiles(st.getPath(), True)
                while it.hasNext():
                    f = it.next()
                    if _included(f.getPath().getName(), include):
                        out[shown_path(f.getPath().toString())] = f.getLen()
            else:
                if not any(c in given for c in "*?[{"):
                    _refuse_non_batches(jvm, fs, st)       # a file named on the command line
                out[shown_path(st.getPath().toString())] = st.getLen()
    if not out:
        raise ListingError(f"no files named {' or '.join(include)} under {' '.join(paths)}")
    return sorted(out.items())


def _refuse_non_batches(jvm: Any, fs: Any, status: Any) -> None:
    """A file named directly that plainly holds no batches (text, a capture, an index; by its first bytes,
    read through Hadoop): the :class:`InputError` ``kafkadump records`` gives for it."""
    from types import SimpleNamespace
    from typing import cast

    from kafkadump.base.errors import InputError
    from kafkadump.sources.inputs import SNIFF_BYTES, check_batches

    n = min(status.getLen(), SNIFF_BYTES)
    stream = fs.open(status.getPath())
    try:
        head = bytes(jvm.org.apache.commons.io.IOUtils.toByteArray(stream, n)) if n else b""
    finally:
        stream.close()
    try:
        check_batches(shown_path(status.getPath().toString()), cast("Segment", SimpleNamespace(buf=head, size=len(head))))
    except InputError as e:
        raise InputError(str(e).split("; ")[0]) from None      # the commands it names read local files


def _jvm_message(e: BaseException) -> str:
    text = str(getattr(e, "java_exception", None) or e)
    return text.strip().splitlines()[0] if text.strip() else type(e).__name__


def read(spark: SparkSession, paths: Iterable[str], level: str = "batches", *, split_bytes: int | None = None,
         open_cost: int | None = None, include: Iterable[str] | None = None,
         shallow: bool = False, max_decompressed: int | None = None, max_depth: int | None = None,
         files: list[tuple[str, int]] | None = None, through_hadoop: bool = False, **query: Any) -> DataFrame:
    """The ``kafkadump`` DataFrame of ``level`` for ``paths`` (listed with :func:`list_files`);
    ``query``: the records filters of the data source (``fromOffset``, ``toOffset``, ``fromTime``,
    ``toTime``, ``key``, ``keys``: :class:`kafkadump.reports.query.RecordQuery`).

    Local files (plain paths and ``file:`` URIs) are mapped by the tasks and large ones cut at batch
    boundaries; other URIs (``hdfs://``, ``s3a://``, ``gs://``, ...) are read through Spark's own
    Hadoop FileSystem (:mod:`.hadoop_files`), as are local files too with ``through_hadoop``.
    """
    from kafkadump.spark.datasource import map_read, register

    register(spark)
    if files is None:
        files = list_files(spark, paths, include)
    level = level.strip().lower()
    remote = [f for f in files if through_hadoop or local_path(f[0]) is None]
    local = [f for f in files if not (through_hadoop or local_path(f[0]) is None)]
    parts = []
    if local or not remote:
        # the data source's options; no packing option: its planning packs with splits.plan's defaults, as
        # load() does; the tasks run by mapInArrow (datasource.map_read), the same reader's
        options = {"level": level, "files": json.dumps(local), "splitBytes": split_bytes, "openCostBytes": open_cost,
                   "shallow": "true" if shallow else None, "maxDecompressed": max_decompressed,
                   "maxDepth": max_depth}
        for name, value in query.items():
            options[name] = json.dumps(value) if name == "keys" and value is not None else value
        parts.append(map_read(spark, {k: str(v) for k, v in options.items() if v is not None}))
    if remote:
        parts.append(_read_remote(spark, remote, level, shallow, max_decompressed, max_depth, query,
                                  split_bytes, open_cost))
    df = parts[0]
    for more in parts[1:]:
        df = df.unionByName(more)
    return df


def _read_remote(spark: SparkSession, files: list[tuple[str, int]], level: str, shallow: bool,
                 max_decompressed: int | None, max_depth: int | None, query: dict,
                 split_bytes: int | None = None, open_cost: int | None = None) -> DataFrame:
    from kafkadump.base.errors import UsageError
    from kafkadump.spark.hadoop_files import query_of, read_through_hadoop
    from kafkadump.spark.row_schema import LEVELS
    from kafkadump.spark.tasks import options_for

    if level not in LEVELS:
        raise UsageError(f"level {level!r}: expected one of {', '.join(LEVELS)}")
    if query and level != "records" and any(v is not None for v in query.values()):
        raise UsageError("fromOffset/toOffset/fromTime/toTime/key select records: use level records")
    opt = options_for(shallow=shallow, max_decompressed=max_decompressed, max_depth=max_depth, level=level)
    return read_through_hadoop(spark, files, level, opt, query_of(query), split_bytes, open_cost)


def _problem(level: str) -> Column:
    from pyspark.sql import functions as F

    if level == "findings":
        return F.col("severity") != "info"
    return F.coalesce(F.exists("findings", lambda f: f["severity"] != "info"), F.lit(False))


# --- scan ----------------------------------------------------------------------------------

def all_local(paths: Iterable[str]) -> bool:
    return all("://" not in p and not p.startswith("file:") for p in paths)


def scan(spark: SparkSession, paths: Iterable[str], level: str, output: str, *, fmt: str = "parquet",
         mode: str = "errorifexists", files: list[tuple[str, int]] | None = None, **read_options: Any) -> dict:
    """Decode ``paths`` at ``level`` and write the rows to ``output``, partitioned by
    topic and partition.  Returns counts gathered while writing (one pass)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    include = read_options.pop("include", None)
    if files is None:
        files = list_files(spark, paths, include)
    df = read(spark, paths, level, files=files, **read_options)
    obs = Observation("kafkadump_scan")

    def count_if(cond):
        return F.sum(F.when(cond, 1).otherwise(0))

    observed = df.observe(
        obs,
        F.count(F.lit(1)).alias("rows"),
        count_if(F.col("type") == "record").alias("records"),
        count_if(F.col("type") == "batch").alias("batches"),
        count_if(F.col("type") == "gap").alias("gaps"),
        count_if(F.col("type") == "error").alias("unreadable"),
        count_if(_problem(level)).alias("problemRows"),
    )
    observed.write.partitionBy("topic", "partition").mode(mode).format(fmt).save(output)
    m = obs.get
    stats: dict[str, Any] = {k: int(m.get(k) or 0) for k in ("rows", "records", "batches", "gaps", "unreadable", "problemRows")}
    stats.update({"files": len(files), "bytes": sum(max(s, 0) for _, s in files), "output": output,
                  "format": fmt, "level": level, "seconds": round(time.perf_counter() - t0, 3)})
    if stats["unreadable"]:
        stats["errors"] = [(r["file"], r["error"]) for r in
                           spark.read.format(fmt).load(output).filter(F.col("type") == "error")
                           .select("file", "error").limit(100).collect()]
    return stats


# --- triage --------------------------------------------------------------------------------
#
# The per-file scans of ``kafkadump triage`` run in Spark tasks, one task per pack of
# units (a segment with its indexes, or one other file); each returns its units' file
# scans (counts, ranges, findings, the small digest the fold needs; never records).  The
# driver folds them into partitions and the fleet summary with the CLI's own code
# (:class:`kafkadump.reports.triage.Triage`), so both commands give the same report.

TRIAGE_UNITS_PER_TASK = 256   # a task's result (its units' file scans) stays small


def triage_roots(paths: Iterable[str]) -> list[str]:
    """The local paths ``paths`` name (``file:`` URIs included); a path executors cannot open as a local
    file is a :class:`ListingError`."""
    roots = []
    for p in paths:
        lp = local_path(p) if ("://" in p or p.startswith("file:")) else p
        if lp is None:
            raise ListingError(f"{p}: spark triage reads local paths (a mount every executor sees, "
                               f"at the same path)")
        roots.append(lp)
    return roots


def plan_triage(paths: Iterable[str], *, records: bool = True, max_findings: int | None = None) -> Triage:
    """The triage of ``paths``, planned (files listed and cut into units) but not run: a wrong path fails
    here, before Spark starts.  Run it with :func:`run_triage`."""
    from kafkadump.base.errors import InputError
    from kafkadump.reports.scan import DEFAULT_MAX_FINDINGS
    from kafkadump.reports.triage import Triage

    try:
        return Triage(triage_roots(paths), records=records,
                      max_findings=DEFAULT_MAX_FINDINGS if max_findings is None else max_findings)
    except InputError as e:
        raise ListingError(str(e)) from None


def run_triage(spark: SparkSession, planned: Triage) -> dict:
    """Run a planned triage with its units scanned in Spark tasks; the report
    (:mod:`kafkadump.objects.logdir_objects`)."""
    planned.runner = spark_runner(spark)
    from kafkadump.objects.logdir_objects import triage_report

    return triage_report(planned.run())


def triage(spark: SparkSession, paths: Iterable[str], *, records: bool = True, max_findings: int | None = None) -> dict:
    """``kafkadump triage`` of ``paths``, its file scans run in Spark tasks: the same report."""
    return run_triage(spark, plan_triage(paths, records=records, max_findings=max_findings))


def spark_runner(spark: SparkSession) -> Runner:
    """A :data:`kafkadump.reports.triage.Runner` scanning units in Spark tasks, packed by size."""
    from functools import partial

    def run(units: list[Unit], records: bool, max_findings: int | None) -> Iterator[tuple[int, list[FileScan]]]:
        if not units:
            return
        sc = spark.sparkContext
        tasks = unit_tasks(units)
        scan = partial(_scan_task, records=records, max_findings=max_findings)
        yield from sc.parallelize(tasks, len(tasks)).flatMap(scan).collect()

    return run


def unit_tasks(units: list[Unit]) -> list[list[tuple[int, Unit]]]:
    """``(index, unit)`` packs, by the packing rule of the data source (:func:`.splits.pack`: bytes plus
    the open cost per unit, up to the default split size), at most :data:`TRIAGE_UNITS_PER_TASK` each."""
    from kafkadump.spark.splits import SPLIT_BYTES_DEFAULT, pack

    indexed = list(enumerate(units))
    return pack(indexed, lambda iu: iu[1].size + OPEN_COST_DEFAULT, SPLIT_BYTES_DEFAULT, TRIAGE_UNITS_PER_TASK)


def _scan_task(task: list[tuple[int, Unit]], records: bool, max_findings: int | None
               ) -> list[tuple[int, list[FileScan]]]:
    """What a Spark task runs: the CLI's unit scan over its pack; ``(index, file scans)`` per unit."""
    from kafkadump.reports.triage import run_unit

    return [(i, run_unit(u, records, max_findings)) for i, u in task]


__all__ = ["list_files", "read", "scan", "triage", "plan_triage", "run_triage", "spark_runner", "triage_roots"]
