"""One local SparkSession shared by the Spark test modules that do not stop it
(``test_spark_fs``, ``test_spark_packing``, ``test_spark_cluster``): its cold start
costs 7-20 s, so it is started once per test run (``getOrCreate``) and ends with
the process.  Skips with the reason when pyspark, pyarrow or Java is missing."""

from __future__ import annotations

import pytest

SETTINGS = {"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2",
            "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}


def spark_or_skip() -> None:
    try:
        from kafkadump.spark.session import SparkUnavailable, check
    except ImportError as e:  # pragma: no cover
        pytest.skip(f"kafkadump.spark not importable: {e}")
    try:
        check()
    except SparkUnavailable as e:
        pytest.skip(f"Spark tests need pyspark, pyarrow and Java: {e}")


def shared_session():
    """The run's local[2] session (started by the first caller)."""
    spark_or_skip()
    from kafkadump.spark.session import build

    return build("local[2]", dict(SETTINGS))
