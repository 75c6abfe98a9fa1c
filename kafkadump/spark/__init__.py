"""kafkadump on Spark: the shared decoder, distributed, through PySpark (4.0 or later).

    from kafkadump.spark import build_session, read
    spark = build_session("local[*]")                 # or your own session + register(spark)
    df = read(spark, ["/var/lib/kafka/data"], level="records")
    df.filter(df.key == b"user-1").show()

* :mod:`.datasource`: the ``kafkadump`` data source (``spark.read.format("kafkadump")``)
* :mod:`.splits`: file listing and batch-boundary splits (pure Python)
* :mod:`.tasks`: one task's work (open, map read-only, decode, rows)
* :mod:`.hadoop_files`: ``hdfs://``, ``s3a://``, ``gs://`` files read through Spark's own Hadoop
  FileSystem in byte ranges cut at batch boundaries (:mod:`.jvm`'s InputFormat; whole files through
  the ``binaryFile`` source without ``javac``) and decoded in the same task
* :mod:`.failures`: a Spark failure as one line, the cause and the fix
* :mod:`.jobs`: ``spark scan`` (a DataFrame query) and ``spark triage`` (``kafkadump triage``'s
  per-file scans in Spark tasks, folded on the driver by the CLI's own code)
* :mod:`.session`: requirement checks and the SparkSession settings

Importing this package does not import pyspark.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def build_session(master: str | None = None, conf: dict | None = None, **kw: Any) -> SparkSession:
    """A SparkSession with the ``kafkadump`` format registered (see :func:`.session.build`)."""
    from kafkadump.spark.session import build

    return build(master, conf, **kw)


def register(spark: SparkSession) -> None:
    """Register the ``kafkadump`` format in an existing session."""
    from kafkadump.spark.datasource import register as _register

    _register(spark)


def read(spark: SparkSession, paths: Iterable[str], level: str = "batches", **options: Any) -> DataFrame:
    """A DataFrame of ``level`` rows for ``paths``, listed with Spark's own file listing
    (so ``hdfs://``, ``s3a://``, ... globs work wherever the cluster's Hadoop does); such
    URIs are read through Spark's Hadoop FileSystem too (``through_hadoop=True``: local
    files as well), local paths mapped by the tasks (see :func:`.jobs.read`)."""
    from kafkadump.spark.jobs import read as _read

    return _read(spark, paths, level, **options)


__all__ = ["build_session", "register", "read"]
