"""Registers the ``kafkadump`` Spark data source in every SparkSession, with no call.

PySpark (4.0 and later) looks, when a session first needs a Python data
source, for importable top-level modules whose names start with
``pyspark_`` and registers the ``DefaultSource`` each defines.  This
package is that module for kafkadump: with kafkadump installed,
``spark.read.format("kafkadump")`` works without
``kafkadump.spark.register(spark)``.  Nothing else belongs here.
"""

from kafkadump.spark.datasource import KafkaDumpDataSource as DefaultSource

__all__ = ["DefaultSource"]
