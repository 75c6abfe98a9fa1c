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

``timestamp`` is a Spark ``TimestampType`` (microseconds, shown in the
session's time zone) made from the JSON line's epoch milliseconds, which
``timestampMs`` keeps as they are (``-1``: no timestamp, as Kafka writes it).
A value outside Spark's documented timestamp range (years 1 to 9999) is null
in ``timestamp`` and kept in ``timestampMs``.  ``baseTimestamp`` and
``maxTimestamp`` of a batch stay epoch milliseconds, as the header holds them.

Types are written as small tuples so this module needs no pyspark;
:func:`struct_type` builds the Spark ``StructType``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

from kafkadump.spark.generated_rows import BATCH_ROW_FIELDS, RECORD_ROW_FIELDS

# a column's type: a Spark type name, ("array", element type) or ("struct", [(name, type), ...])
ColumnType: TypeAlias = "str | tuple[str, ColumnType] | tuple[str, Sequence[tuple[str, ColumnType]]]"
Fields: TypeAlias = "list[tuple[str, ColumnType]]"

FINDING: ColumnType = ("struct", [
    ("code", "string"), ("severity", "string"), ("offset", "bigint"), ("message", "string"),
    ("length", "bigint"), ("decompressedOffset", "bigint"),
])
FINDINGS: ColumnType = ("array", FINDING)
CONTROL: ColumnType = dict(RECORD_ROW_FIELDS)["control"]

_WHERE: Fields = [("topic", "string"), ("partition", "int"), ("logDir", "string")]

# the batch rows' own columns are the field registry's too
BATCH_FIELDS: Fields = _WHERE + BATCH_ROW_FIELDS + [("findings", FINDINGS), ("error", "string")]

# the record rows' own columns are the field registry's (objects/fields.py, spark/generated_rows.py)
RECORD_FIELDS: Fields = _WHERE + RECORD_ROW_FIELDS[:2] + [
    ("position", "bigint"), ("size", "bigint"),          # gap and findings lines
] + RECORD_ROW_FIELDS[2:] + [("findings", FINDINGS), ("error", "string")]

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


# Spark's TimestampType range (0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z), in epoch ms
TIMESTAMP_MS_MIN = -62135596800000
TIMESTAMP_MS_MAX = 253402300799999
# a TimestampType column and the epoch-ms column it is made from
TIMESTAMP_FROM_MS = {"timestamp": "timestampMs"}


def column_names(level: str) -> list[str]:
    return [n for n, _ in LEVELS[level]]


def pruned(level: str, names: Sequence[str]) -> Fields:
    """The level's fields named in ``names``, in ``names``' order; ValueError for a name the level lacks."""
    types = dict(LEVELS[level])
    unknown = [n for n in names if n not in types]
    if unknown:
        raise ValueError(f"kafkadump: level {level} has no column {', '.join(map(repr, unknown))} "
                         f"(columns: {', '.join(types)})")
    return [(n, types[n]) for n in names]


def ddl(level: str) -> str:
    """The level's schema as a Spark DDL string."""
    return ", ".join(f"`{n}` {_ddl(t)}" for n, t in LEVELS[level])


def _spark_type(t: Any) -> Any:  # a ColumnType, as for _ddl; returns a pyspark DataType
    from pyspark.sql import types as T

    simple = {"string": T.StringType(), "bigint": T.LongType(), "int": T.IntegerType(),
              "boolean": T.BooleanType(), "binary": T.BinaryType(), "timestamp": T.TimestampType()}
    if isinstance(t, str):
        return simple[t]
    kind, inner = t
    if kind == "array":
        return T.ArrayType(_spark_type(inner), containsNull=True)
    return T.StructType([T.StructField(n, _spark_type(x), True) for n, x in inner])


def struct_type(level: str, names: Sequence[str] | None = None) -> Any:  # a pyspark StructType (lazy import)
    """The level's schema (only the columns ``names``, when given) as a ``pyspark.sql.types.StructType``."""
    from pyspark.sql import types as T

    fields = LEVELS[level] if names is None else pruned(level, names)
    return T.StructType([T.StructField(n, _spark_type(t), True) for n, t in fields])


__all__ = ["LEVELS", "BATCH_FIELDS", "RECORD_FIELDS", "FINDING_FIELDS", "ddl", "struct_type", "pruned",
           "column_names", "TIMESTAMP_FROM_MS", "TIMESTAMP_MS_MIN", "TIMESTAMP_MS_MAX"]
