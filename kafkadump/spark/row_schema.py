"""The DataFrame schemas of the three read levels, as plain data.

Column names are the JSON contract's (``man kafkadump``, JSON CONTRACT), so
a row and a ``--json`` line of the single-process CLI say the same thing
under the same names: ``batches`` rows are ``batches --json`` lines,
``records`` rows are ``records --json`` lines (record, gap and findings
lines), ``findings`` rows are the findings of ``batches --json`` lines, one
row per finding.  Byte fields are binary columns (no encoding), headers
an array of structs in wire order.  A key a line lacks (a gap has no
``baseOffset``, a v2 batch no ``messageSize``) is a null column.

Every level adds ``topic`` and ``partition`` (from the name of the file's
directory, ``<topic>-<partition>``; null when it is not one), ``logDir`` (the
directory holding that partition directory: which broker's copy a row comes
from, as replicas share topic and partition) and ``error``
(null, or why the task could not read the file; then ``type`` is
``error``).

Types are written as small tuples so this module needs no pyspark;
:func:`struct_type` builds the Spark ``StructType``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

# a column's type: a Spark type name, ("array", element type) or ("struct", [(name, type), ...])
ColumnType: TypeAlias = "str | tuple[str, ColumnType] | tuple[str, Sequence[tuple[str, ColumnType]]]"
Fields: TypeAlias = "list[tuple[str, ColumnType]]"

FINDING: ColumnType = ("struct", [
    ("code", "string"), ("severity", "string"), ("offset", "bigint"), ("message", "string"),
    ("length", "bigint"), ("decompressedOffset", "bigint"),
])
FINDINGS: ColumnType = ("array", FINDING)
HEADER: ColumnType = ("struct", [("key", "string"), ("value", "binary")])
CONTROL: ColumnType = ("struct", [("type", "string"), ("version", "int"), ("valueVersion", "int"),
                      ("coordinatorEpoch", "int")])

_WHERE: Fields = [("topic", "string"), ("partition", "int"), ("logDir", "string")]

BATCH_FIELDS: Fields = _WHERE + [
    ("type", "string"), ("file", "string"), ("position", "bigint"), ("size", "bigint"),
    ("baseOffset", "bigint"), ("batchLength", "int"), ("partitionLeaderEpoch", "int"),
    ("magic", "int"), ("crc", "bigint"), ("attributes", "int"), ("lastOffsetDelta", "int"),
    ("baseTimestamp", "bigint"), ("maxTimestamp", "bigint"), ("producerId", "bigint"),
    ("producerEpoch", "int"), ("baseSequence", "int"), ("recordCount", "int"),
    ("lastOffset", "bigint"), ("lastSequence", "int"),
    ("offset", "bigint"), ("messageSize", "int"), ("timestamp", "bigint"),
    ("compression", "string"), ("timestampType", "string"), ("isTransactional", "boolean"),
    ("isControlBatch", "boolean"), ("hasDeleteHorizonMs", "boolean"), ("crcValid", "boolean"),
    ("computedCrc", "bigint"), ("decompressedSize", "bigint"),
    ("findings", FINDINGS), ("error", "string"),
]

RECORD_FIELDS: Fields = _WHERE + [
    ("type", "string"), ("file", "string"),
    ("position", "bigint"), ("size", "bigint"),          # gap and findings lines
    ("batchPosition", "bigint"), ("offset", "bigint"), ("timestamp", "bigint"),
    ("timestampType", "string"), ("key", "binary"), ("value", "binary"),
    ("headers", ("array", HEADER)), ("offsetDelta", "int"), ("timestampDelta", "bigint"),
    ("control", CONTROL), ("magic", "int"), ("crc", "bigint"), ("crcValid", "boolean"),
    ("findings", FINDINGS), ("error", "string"),
]

FINDING_FIELDS: Fields = _WHERE + [
    ("type", "string"), ("file", "string"), ("position", "bigint"), ("size", "bigint"),
    ("baseOffset", "bigint"), ("lastOffset", "bigint"),
    ("code", "string"), ("severity", "string"), ("offset", "bigint"), ("message", "string"),
    ("length", "bigint"), ("decompressedOffset", "bigint"), ("error", "string"),
]

LEVELS: dict[str, Fields] = {"batches": BATCH_FIELDS, "records": RECORD_FIELDS, "findings": FINDING_FIELDS}


def _ddl(t: Any) -> str:  # a ColumnType: its tuples' second items are told apart by their first
    if isinstance(t, str):
        return t
    kind, inner = t
    if kind == "array":
        return f"array<{_ddl(inner)}>"
    return "struct<" + ",".join(f"{n}:{_ddl(x)}" for n, x in inner) + ">"


def ddl(level: str) -> str:
    """The level's schema as a Spark DDL string."""
    return ", ".join(f"`{n}` {_ddl(t)}" for n, t in LEVELS[level])


def _spark_type(t: Any) -> Any:  # a ColumnType, as for _ddl; returns a pyspark DataType
    from pyspark.sql import types as T

    simple = {"string": T.StringType(), "bigint": T.LongType(), "int": T.IntegerType(),
              "boolean": T.BooleanType(), "binary": T.BinaryType()}
    if isinstance(t, str):
        return simple[t]
    kind, inner = t
    if kind == "array":
        return T.ArrayType(_spark_type(inner), containsNull=True)
    return T.StructType([T.StructField(n, _spark_type(x), True) for n, x in inner])


def struct_type(level: str) -> Any:  # a pyspark.sql.types.StructType (pyspark is imported lazily)
    """The level's schema as a ``pyspark.sql.types.StructType``."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(n, _spark_type(t), True) for n, t in LEVELS[level]])


__all__ = ["LEVELS", "BATCH_FIELDS", "RECORD_FIELDS", "FINDING_FIELDS", "ddl", "struct_type"]
