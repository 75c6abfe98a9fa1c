"""``spark scan`` and ``spark triage`` as DataFrame queries over the ``kafkadump`` source.

Everything here runs on the driver and only builds and collects DataFrames;
decoding happens in the data source's tasks on the executors.
"""

from __future__ import annotations

import json
import time

from .splits import DEFAULT_INCLUDE, OPEN_COST_DEFAULT, ListingError, list_local, local_path

INT31 = 1 << 31


# --- listing -------------------------------------------------------------------------------

def _included(name: str, include) -> bool:
    import fnmatch

    return any(fnmatch.fnmatchcase(name, p) for p in include)


def list_files(spark, paths, include=DEFAULT_INCLUDE) -> list[tuple[str, int]]:
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
        conf = spark._jsc.hadoopConfiguration()
        jpath = jvm.org.apache.hadoop.fs.Path(given)
        try:
            fs = jpath.getFileSystem(conf)
            statuses = fs.globStatus(jpath)
        except Exception as e:  # noqa: BLE001 - py4j wraps the JVM's IOException
            raise ListingError(f"{given}: {_jvm_message(e)}") from None
        if not statuses:
            raise ListingError(f"{given}: no such file or directory")
        for st in statuses:
            if st.isDirectory():
                it = fs.listFiles(st.getPath(), True)
                while it.hasNext():
                    f = it.next()
                    if _included(f.getPath().getName(), include):
                        out[_plain(f.getPath().toString())] = f.getLen()
            else:
                out[_plain(st.getPath().toString())] = st.getLen()
    if not out:
        raise ListingError(f"no files named {' or '.join(include)} under {' '.join(paths)}")
    return sorted(out.items())


def _plain(uri: str) -> str:
    lp = local_path(uri) if uri.startswith("file:") else None
    return lp if lp is not None else uri


def _jvm_message(e) -> str:
    text = str(getattr(e, "java_exception", None) or e)
    return text.strip().splitlines()[0] if text.strip() else type(e).__name__


def read(spark, paths, level: str = "batches", *, split_bytes: int | None = None,
         open_cost: int | None = None, include=None,
         shallow: bool = False, max_decompressed: int | None = None, max_depth: int | None = None,
         files=None):
    """The ``kafkadump`` DataFrame of ``level`` for ``paths`` (listed with :func:`list_files`)."""
    from .datasource import FORMAT, register

    register(spark)
    if files is None:
        files = list_files(spark, paths, include)
    r = spark.read.format(FORMAT).option("level", level).option("files", json.dumps(files))
    # pack small files into tasks of about a third of each core's share, as Spark's file sources do
    # (bytes per core, at least the open cost, at most the split size): every core gets work
    total = sum(max(s, 0) for _, s in files)
    cores = max(1, spark.sparkContext.defaultParallelism)
    cost = OPEN_COST_DEFAULT if open_cost is None else open_cost
    r = r.option("packBytes", str(max(1, cost, total // (3 * cores))))
    if split_bytes is not None:
        r = r.option("splitBytes", str(split_bytes))
    if open_cost is not None:
        r = r.option("openCostBytes", str(open_cost))
    if shallow:
        r = r.option("shallow", "true")
    if max_decompressed is not None:
        r = r.option("maxDecompressed", str(max_decompressed))
    if max_depth is not None:
        r = r.option("maxDepth", str(max_depth))
    return r.load()


def _problem(level: str):
    from pyspark.sql import functions as F

    if level == "findings":
        return F.col("severity") != "info"
    return F.coalesce(F.exists("findings", lambda f: f["severity"] != "info"), F.lit(False))


# --- scan ----------------------------------------------------------------------------------

def all_local(paths) -> bool:
    return all("://" not in p and not p.startswith("file:") for p in paths)


def scan(spark, paths, level: str, output: str, *, fmt: str = "parquet", mode: str = "errorifexists",
         files=None, **read_options) -> dict:
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
    stats = {k: int(m.get(k) or 0) for k in ("rows", "records", "batches", "gaps", "unreadable", "problemRows")}
    stats.update({"files": len(files), "bytes": sum(max(s, 0) for _, s in files), "output": output,
                  "format": fmt, "level": level, "seconds": round(time.perf_counter() - t0, 3)})
    if stats["unreadable"]:
        stats["errors"] = [(r["file"], r["error"]) for r in
                           spark.read.format(fmt).load(output).filter(F.col("type") == "error")
                           .select("file", "error").limit(100).collect()]
    return stats


# --- triage --------------------------------------------------------------------------------

TRIAGE_COLUMNS = ("topic", "partition", "logDir", "type", "file", "position", "size", "magic", "baseOffset", "lastOffset",
                  "baseTimestamp", "maxTimestamp", "timestamp", "recordCount", "crcValid", "producerId",
                  "producerEpoch", "baseSequence", "lastSequence", "isControlBatch", "findings", "error")


def _findings_count(severity: str):
    from pyspark.sql import functions as F

    return F.sum(F.when(F.col("findings").isNotNull(),
                        F.size(F.filter("findings", lambda f: f["severity"] == severity))).otherwise(0))


def sequence_checks(batches):
    """Producer sequence checks over a fleet, with the rule ``kafkadump triage`` applies.

    Per (topic, partition, producerId), the CRC-valid, non-control v2 batches that carry a
    sequence, ordered by offset.  Against the producer's previous batch:

    * same epoch, ``baseSequence`` beyond previous ``lastSequence + 1`` (wrapping at 2^31):
      ``sequence-gap``, ``missing`` numbers skipped;
    * a newer epoch not starting at sequence 0: ``sequence-gap``;
    * an older epoch, or a sequence at or before one already seen: ``sequence-order``.

    A gap is ``explained`` when offsets are missing from the partition between the two
    batches (compaction or retention removed batches): it is listed but is no finding.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    valid = batches.filter((F.col("type") == "batch") & F.coalesce(F.col("crcValid"), F.lit(False))
                           & F.col("baseOffset").isNotNull() & F.col("lastOffset").isNotNull())
    wp = Window.partitionBy("logDir", "topic", "partition").orderBy("baseOffset", "file", "position")
    prev_last = F.lag("lastOffset").over(wp)
    hole = F.when(prev_last.isNotNull() & (F.col("baseOffset") > prev_last + 1), 1).otherwise(0)
    valid = valid.withColumn("hole", hole).withColumn(
        "holes", F.sum("hole").over(wp.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
    b = valid.filter((F.col("magic") == 2) & (F.col("producerId") >= 0) & (F.col("baseSequence") >= 0)
                     & ~F.col("isControlBatch"))
    w = Window.partitionBy("logDir", "topic", "partition", "producerId").orderBy("baseOffset", "file", "position")
    b = (b.withColumn("prevSequence", F.lag("lastSequence").over(w))
          .withColumn("prevEpoch", F.lag("producerEpoch").over(w))
          .withColumn("afterOffset", F.lag("lastOffset").over(w))
          .withColumn("prevHoles", F.lag("holes").over(w))
          .filter(F.col("prevSequence").isNotNull()))
    expected = F.pmod(F.col("prevSequence").cast("long") + 1, F.lit(INT31))
    delta = F.pmod(F.col("baseSequence").cast("long") - expected, F.lit(INT31))
    signed = F.when(delta >= INT31 // 2, delta - INT31).otherwise(delta)
    same = F.col("producerEpoch") == F.col("prevEpoch")
    kind = (F.when(F.col("producerEpoch") < F.col("prevEpoch"), F.lit("sequence-order"))
             .when(F.col("producerEpoch") > F.col("prevEpoch"),
                   F.when(F.col("baseSequence") != 0, F.lit("sequence-gap")))
             .when(signed > 0, F.lit("sequence-gap"))
             .when(signed < 0, F.lit("sequence-order")))
    return (b.withColumn("kind", kind).filter(F.col("kind").isNotNull())
             .withColumn("expectedSequence", F.when(same, expected).otherwise(F.lit(0).cast("long")))
             .withColumn("missing", F.when(same, signed))
             .withColumn("explained", (F.col("kind") == "sequence-gap") & (F.col("holes") > F.col("prevHoles")))
             .select("topic", "partition", "logDir", "kind", "explained", "producerId", "producerEpoch",
                     F.col("prevEpoch").alias("previousEpoch"), "afterOffset", F.col("baseOffset").alias("atOffset"),
                     "expectedSequence", F.col("baseSequence").alias("foundSequence"), "missing", "file",
                     "position"))


def triage(spark, paths, *, limit: int = 50, files=None, **read_options) -> dict:
    """The fleet summary: per topic-partition (of each log dir: replicas are rows of their own) counts, offset and time ranges, CRC
    failures and findings, findings by code, producer sequence gaps, unreadable files."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    include = read_options.pop("include", None)
    if files is None:
        files = list_files(spark, paths, include)
    df = read(spark, paths, "batches", files=files, **read_options)
    b = df.select(*TRIAGE_COLUMNS).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        is_batch = F.col("type") == "batch"
        valid = is_batch & F.coalesce(F.col("crcValid"), F.lit(False))
        first_ts = F.coalesce("baseTimestamp", "timestamp")
        last_ts = F.coalesce("maxTimestamp", "timestamp")

        def count_if(cond):
            return F.sum(F.when(cond, 1).otherwise(0))

        parts = (b.groupBy("logDir", "topic", "partition").agg(
            F.countDistinct("file").alias("files"),
            count_if(is_batch).alias("batches"),
            F.sum(F.when(valid, F.col("recordCount")).otherwise(0)).alias("records"),
            F.sum(F.when(F.col("type") != "error", F.col("size")).otherwise(0)).alias("bytes"),
            F.min(F.when(valid, F.col("baseOffset"))).alias("firstOffset"),
            F.max(F.when(valid, F.col("lastOffset"))).alias("lastOffset"),
            F.min(F.when(valid & (first_ts >= 0), first_ts)).alias("firstTimestamp"),
            F.max(F.when(valid & (last_ts >= 0), last_ts)).alias("lastTimestamp"),
            count_if(F.col("crcValid") == F.lit(False)).alias("crcFailures"),
            count_if(F.col("type") == "gap").alias("gaps"),
            F.sum(F.when(F.col("type") == "gap", F.col("size")).otherwise(0)).alias("gapBytes"),
            _findings_count("error").alias("errors"),
            _findings_count("warning").alias("warnings"),
            _findings_count("info").alias("infos"),
            count_if(F.col("type") == "error").alias("unreadable"),
        ).orderBy("topic", "partition", "logDir").collect())

        seq = sequence_checks(b).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            seq_counts = seq.groupBy("logDir", "topic", "partition", "kind", "explained").agg(
                F.count(F.lit(1)).alias("count"), F.countDistinct("file").alias("files"),
                F.min(F.struct("file", "position")).alias("first")).collect()
            gaps = [r.asDict() for r in seq.orderBy("topic", "partition", "logDir", "producerId", "atOffset")
                    .limit(limit).collect()]
        finally:
            seq.unpersist()

        found = b.filter(F.col("findings").isNotNull()).select(
            "logDir", "topic", "partition", "file", "position", F.explode("findings").alias("f"))
        counts = found.groupBy("logDir", "topic", "partition", F.col("f.code").alias("code"),
                               F.col("f.severity").alias("severity")).agg(
            F.count(F.lit(1)).alias("count"),
            F.countDistinct("file").alias("files"),
            F.min(F.struct("file", "position")).alias("first"),
        ).collect()
        unreadable = [(r["file"], r["error"]) for r in
                      b.filter(F.col("type") == "error").select("file", "error").orderBy("file").limit(limit).collect()]
    finally:
        b.unpersist()
    return summarize(parts, counts, seq_counts, gaps, unreadable, files, limit, time.perf_counter() - t0)


def summarize(parts, counts, seq_counts, gaps, unreadable, files, limit, seconds) -> dict:
    """The triage dict from the collected aggregates (plain Python from here on).

    Unexplained sequence gaps and sequence-order violations count as warning findings
    (``sequence-gap``, ``sequence-order``), as in ``kafkadump triage``."""
    per_tp: dict = {}
    by_code: dict = {}
    seq_by_tp: dict = {}
    explained_by_tp: dict = {}
    counts = [r.asDict() for r in counts]
    for r in seq_counts:
        tp = (r["logDir"], r["topic"], r["partition"])
        if r["explained"]:
            explained_by_tp[tp] = explained_by_tp.get(tp, 0) + r["count"]
            continue
        seq_by_tp[tp] = seq_by_tp.get(tp, 0) + r["count"]
        counts.append({"logDir": r["logDir"], "topic": r["topic"], "partition": r["partition"], "code": r["kind"],
                       "severity": "warning",
                       "count": r["count"], "files": r["files"], "first": r["first"]})
    for r in counts:
        tp = (r["logDir"], r["topic"], r["partition"])
        per_tp.setdefault(tp, {})[r["code"]] = per_tp.get(tp, {}).get(r["code"], 0) + r["count"]
        c = by_code.setdefault((r["code"], r["severity"]), {"code": r["code"], "severity": r["severity"],
                                                             "count": 0, "files": 0, "partitions": 0, "first": None})
        c["count"] += r["count"]
        c["files"] += r["files"]          # a file belongs to one topic-partition: no double count
        c["partitions"] += 1
        first = {"file": r["first"]["file"], "position": r["first"]["position"]}
        if c["first"] is None or (first["file"], first["position"]) < (c["first"]["file"], c["first"]["position"]):
            c["first"] = first
    partitions = []
    for r in parts:
        d = r.asDict()
        tp = (d["logDir"], d["topic"], d["partition"])
        d["sequenceGaps"] = seq_by_tp.get(tp, 0)
        d["sequenceGapsExplained"] = explained_by_tp.get(tp, 0)
        d["warnings"] += d["sequenceGaps"]
        d["findingCounts"] = dict(sorted(per_tp.get(tp, {}).items()))
        d["verdict"] = "errors" if d["errors"] or d["unreadable"] else "warnings" if d["warnings"] else "clean"
        partitions.append(d)
    totals = {k: sum(p[k] or 0 for p in partitions)
              for k in ("files", "batches", "records", "bytes", "crcFailures", "gaps", "gapBytes", "errors",
                        "warnings", "infos", "unreadable", "sequenceGaps", "sequenceGapsExplained")}
    totals["files"] = len(files)
    totals["partitions"] = len(partitions)
    verdicts = {"clean": 0, "warnings": 0, "errors": 0}
    for p in partitions:
        verdicts[p["verdict"]] += 1
    totals["partitionVerdicts"] = verdicts
    verdict = "errors" if verdicts["errors"] else "warnings" if verdicts["warnings"] else "clean"
    rank = {"error": 0, "warning": 1, "info": 2}
    findings = sorted(by_code.values(), key=lambda c: (rank.get(c["severity"], 3), -c["count"], c["code"]))
    return {"verdict": verdict, "partitions": partitions, "findings": findings, "sequenceGaps": gaps,
            "unreadable": unreadable, "totals": totals, "limit": limit, "seconds": round(seconds, 3)}


__all__ = ["list_files", "read", "scan", "triage", "sequence_checks", "summarize"]
