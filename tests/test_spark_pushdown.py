"""Filter pushdown, column pruning, Arrow batches and TimestampType in the ``kafkadump`` data source.

Most tests drive the reader in this process (``KafkaDumpReader.pushFilters``,
``partitions``, ``read_units``: what Spark calls in its Python workers) and
count work (records decoded, cells built) rather than time it; the rows are
compared with the single-process CLI's ``records --json`` lines filtered here
in plain Python.  The Spark tests share the session of ``conftest.py``.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from spark_compare import cli_lines, from_cli, from_row, names

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from pyspark.sql.datasource import (  # noqa: E402
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
    Not,
)

from kafkadump.spark.datasource import KafkaDumpDataSource, timestamps  # noqa: E402
from kafkadump.spark.pushdown import push  # noqa: E402
from kafkadump.spark.row_schema import column_names  # noqa: E402

SPLIT = 1 << 20


@pytest.fixture(scope="module")
def big_lines(fleet):
    """The CLI's records lines of the fleet's 1 200-batch file (the oracle)."""
    return cli_lines("records", [fleet["big_file"]], "--decode", "none")


def _reader(path, level="records", filters=(), schema=None, **options):
    ds = KafkaDumpDataSource({"level": level, "path": path, "splitBytes": str(SPLIT),
                              **{k: str(v) for k, v in options.items()}})
    reader = ds.reader(schema if schema is not None else ds.schema())
    rest = list(reader.pushFilters(list(filters)))
    return reader, rest


def _read(reader):
    """(rows as dicts, counts) of every task of ``reader``, read here as Spark's workers would."""
    counts: dict = {}
    rows = []
    for part in reader.partitions():
        for batch in reader.read_units(part.units, counts):
            rows += batch.to_pylist()
    return rows, counts


def _records(lines):
    return [from_cli("records", d) for d in lines if d["type"] == "record"]


# --- which filters are taken -------------------------------------------------------------------

def test_push_takes_ranges_keys_and_where_and_returns_the_rest():
    t = datetime(2024, 5, 1, tzinfo=timezone.utc)
    taken = [GreaterThanOrEqual(("offset",), 10), LessThan(("offset",), 20), GreaterThan(("timestamp",), t),
             EqualTo(("key",), b"k"), In(("topic",), ("a", "b")), EqualTo(("partition",), 3),
             IsNotNull(("offset",)), IsNotNull(("timestamp",)), IsNotNull(("key",)), IsNotNull(("topic",))]
    left = [Not(EqualTo(("offset",), 5)), In(("offset",), (1, 2)), EqualTo(("value",), b"v"),
            EqualTo(("a", "b"), 1), LessThan(("timestamp",), "2024-01-01"), IsNotNull(("value",))]
    pushed, rest = push("records", taken + left)
    assert [id(f) for f in rest] == [id(f) for f in left]   # the very objects, as PySpark requires
    assert pushed.offsets == (10, 19)
    assert pushed.times == (int(t.timestamp() * 1000) + 1, 253402300799999)
    assert pushed.keys == {b"k"} and pushed.topics == {"a", "b"} and pushed.partitions == {3}
    assert pushed.types == {"record"} and not pushed.empty


def test_push_at_other_levels_takes_only_where_columns():
    filters = [GreaterThanOrEqual(("offset",), 10), EqualTo(("topic",), "x"), In(("type",), ("batch", "gap"))]
    pushed, rest = push("batches", filters)
    assert rest == [filters[0]] and pushed.topics == {"x"} and pushed.types == {"batch", "gap"}


@pytest.mark.parametrize("kind,micros,want", [
    (GreaterThanOrEqual, 1_500, (2, None)), (GreaterThanOrEqual, 2_000, (2, None)),
    (GreaterThan, 2_000, (3, None)), (GreaterThan, 1_500, (2, None)),
    (LessThanOrEqual, 2_500, (None, 2)), (LessThan, 2_000, (None, 1)), (LessThan, 2_500, (None, 2)),
    (EqualTo, 2_000, (2, 2)), (EqualTo, 2_500, (3, 2)),      # not a whole millisecond: nothing
])
def test_timestamp_bounds_are_exact_in_microseconds(kind, micros, want):
    """A record at ms m has timestamp m x 1000 us: the ms bounds keep exactly the records Spark would."""
    value = datetime.fromtimestamp(micros / 1e6, tz=timezone.utc)
    pushed, _ = push("records", [kind(("timestamp",), value)])
    lo = want[0] if want[0] is not None else -62135596800000
    hi = want[1] if want[1] is not None else 253402300799999
    assert pushed.times == (lo, hi)
    assert pushed.empty == (lo > hi)


def test_contradictory_filters_plan_no_task(fleet):
    reader, rest = _reader(fleet["big_file"], filters=[GreaterThan(("offset",), 10), LessThan(("offset",), 5)])
    assert rest == [] and reader.partitions() == []
    reader, _ = _reader(fleet["root"], filters=[EqualTo(("topic",), "orders"), EqualTo(("topic",), "legacy")])
    assert reader.partitions() == []


# --- what pushdown and pruning save, counted ---------------------------------------------------------------

def test_offset_range_skips_batches_and_keeps_the_same_rows(fleet, big_lines):
    every = _records(big_lines)
    offsets = sorted({r[names("records").index("offset")] for r in every})
    lo, hi = offsets[len(offsets) // 2], offsets[len(offsets) // 2 + 40]
    full, full_counts = _read(_reader(fleet["big_file"])[0])
    reader, rest = _reader(fleet["big_file"], filters=[GreaterThanOrEqual(("offset",), lo),
                                                      LessThanOrEqual(("offset",), hi), IsNotNull(("offset",))])
    rows, counts = _read(reader)
    assert rest == []
    i = names("records").index("offset")
    want = sorted(r for r in every if lo <= r[i] <= hi)
    assert sorted(from_row("records", r) for r in rows) == want and want
    # whole batches skipped by their header: the decoder saw a few batches' records, not the file's
    assert full_counts["decoded"] == len(every)
    assert counts["decoded"] < full_counts["decoded"] // 20
    assert counts["values"] == len(rows) * len(column_names("records"))
    assert len(full) == len(big_lines)


def test_time_range_and_key_equal_the_cli_filtered_here(fleet, big_lines):
    every = [d for d in big_lines if d["type"] == "record"]
    stamps = sorted(d["timestamp"] for d in every)
    t0 = stamps[len(stamps) * 3 // 4]
    key = next(d["key"] for d in every if d["key"] is not None)       # text (the fleet's keys are ASCII)
    since = datetime.fromtimestamp(t0 / 1000, tz=timezone.utc)
    reader, rest = _reader(fleet["big_file"], filters=[GreaterThanOrEqual(("timestamp",), since)])
    rows, counts = _read(reader)
    want = sorted(from_cli("records", d) for d in every if d["timestamp"] >= t0)
    assert rest == [] and sorted(from_row("records", r) for r in rows) == want and want
    assert counts["decoded"] < len(every)          # batches whose maxTimestamp is before t0 not decoded
    reader, rest = _reader(fleet["big_file"], filters=[EqualTo(("key",), key.encode())])
    rows, _ = _read(reader)
    want = sorted(from_cli("records", d) for d in every if d["key"] == key)
    assert rest == [] and sorted(from_row("records", r) for r in rows) == want and want


def test_topic_and_partition_skip_files(fleet):
    everything = _reader(fleet["root"])[0]
    reader, rest = _reader(fleet["root"], filters=[EqualTo(("topic",), "orders"), In(("partition",), (0,))])
    files = {u[0] for p in reader.partitions() for u in p.units}
    all_files = {u[0] for p in everything.partitions() for u in p.units}
    assert rest == [] and files == {f for f in all_files if "/orders-0/" in f} and len(files) == 2
    rows, _ = _read(reader)
    assert rows and {(r["topic"], r["partition"]) for r in rows} == {("orders", 0)}


def test_pruned_columns_build_only_those(fleet, big_lines):
    """``columns`` (or a schema naming some columns): the other columns are never built."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    reader, _ = _reader(fleet["big_file"], columns="offset,key")
    rows, counts = _read(reader)
    assert list(rows[0]) == ["offset", "key"]
    assert counts["values"] == 2 * len(rows) and len(rows) == len(big_lines)
    assert sorted((r["offset"], r["key"]) for r in rows if r["offset"] is not None) == \
        sorted((d["offset"], None if d["key"] is None else d["key"].encode()) for d in big_lines
               if d["type"] == "record")
    reader, _ = _reader(fleet["big_file"], schema=StructType([StructField("offset", LongType())]))
    assert list(_read(reader)[0][0]) == ["offset"]
    with pytest.raises(ValueError, match="column offset of level records is bigint, not string"):
        _reader(fleet["big_file"], schema=StructType([StructField("offset", StringType())]))
    with pytest.raises(ValueError, match="no column 'nope'"):
        _reader(fleet["big_file"], columns="offset,nope")


def test_timestamps_are_spark_timestamps_with_the_ms_kept():
    import pyarrow as pa

    t = pa.timestamp("us", tz="UTC")
    got = timestamps([1_700_000_000_123, -1, None, 10**17, -62135596800000], t)
    assert got.type == t
    assert got.cast(pa.int64()).to_pylist() == [1_700_000_000_123_000, -1000, None, None, -62135596800000000]


# --- in Spark ----------------------------------------------------------------------------------

def _filter_node(plan: str) -> bool:
    """Whether a physical plan has a Filter node (``RuntimeFilters: []`` of the scan is not one)."""
    import re

    return re.search(r"\bFilter\b", plan) is not None


def test_explain_shows_no_filter_after_the_scan(spark_session, fleet, big_lines):
    from pyspark.sql import functions as F

    spark = spark_session
    every = [d for d in big_lines if d["type"] == "record"]
    lo = every[len(every) // 2]["offset"]
    since = sorted(d["timestamp"] for d in every)[len(every) // 4]

    def query():
        df = spark.read.format("kafkadump").option("level", "records").option("columns", "topic,offset,key,timestamp") \
            .load(fleet["root"])
        return df.filter((F.col("topic") == "orders") & (F.col("offset") >= lo) & (F.col("offset") < lo + 50)
                         & (F.col("timestamp") >= F.lit(datetime.fromtimestamp(since / 1000, tz=timezone.utc))))

    plan = query()._jdf.queryExecution().executedPlan().toString()
    assert "BatchScan kafkadump" in plan and not _filter_node(plan), plan
    pushed = sorted(tuple(r) for r in query().select("offset", "key").collect())
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    try:
        plan_off = query()._jdf.queryExecution().executedPlan().toString()
        unpushed = sorted(tuple(r) for r in query().select("offset", "key").collect())
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    assert _filter_node(plan_off)             # Spark filters a full scan itself: the same rows
    assert pushed == unpushed and pushed
    assert [o for o, _ in pushed] == sorted(o for o, _ in pushed)


def test_format_is_registered_without_a_call():
    """pyspark_kafkadump: PySpark's own look-up (run in a Python worker when a session first needs a
    Python data source) finds it and sends the JVM ``kafkadump`` -> KafkaDumpDataSource."""
    import io

    from pyspark.serializers import read_int
    from pyspark.sql.worker.lookup_data_sources import _main
    from pyspark.worker_util import pickleSer

    out = io.BytesIO()
    _main(io.BytesIO(), out)
    out.seek(0)
    found = {}
    for _ in range(read_int(out)):
        name = out.read(read_int(out)).decode()
        found[name] = pickleSer._read_with_length(out)
    assert found["kafkadump"] is KafkaDumpDataSource


def test_timestamp_column_is_timestamp_type(spark_session, fleet):
    from pyspark.sql.types import LongType, TimestampType

    df = spark_session.read.format("kafkadump").option("level", "records").load(fleet["big_file"])
    assert isinstance(df.schema["timestamp"].dataType, TimestampType)
    assert isinstance(df.schema["timestampMs"].dataType, LongType)
    row = df.filter("type = 'record'").selectExpr("unix_millis(timestamp) AS ms", "timestampMs").first()
    assert row.ms == row.timestampMs


# --- the documented schema is the schema -------------------------------------------------------

def _split_top(text):
    """``a x, b array<struct<c:int,d:int>>`` -> ["a x", "b array<...>"] (commas inside <> kept)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*out, cur.strip()] if cur.strip() else out


def _documented(block: str, finding: str) -> dict:
    import re

    text = " ".join(block.split()).replace("array<FINDING>", f"array<{finding}>")
    parts = re.split(r"\b(batches|records|findings):", text)
    return {level: [tuple(c.split(" ", 1)) for c in _split_top(body.replace(", ", ",").replace(",", ", ")
                                                                   .replace(": ", ":"))]
            for level, body in zip(parts[1::2], parts[2::2])}


def _schemas():
    from kafkadump.spark.row_schema import FINDING, LEVELS, _ddl

    finding = _ddl(FINDING)
    want = {level: [(n, _ddl(t)) for n, t in fields] for level, fields in LEVELS.items()}
    return finding, want


def test_readme_and_man_give_every_levels_schema():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    finding, want = _schemas()
    readme = (root / "README.md").read_text()
    start = readme.index("    batches:  topic string")
    block = readme[start:readme.index("\n\n", start)]
    got = _documented(block, finding)
    assert {k: [(n, t.replace(" ", "")) for n, t in v] for k, v in got.items()} == want
    man = (root / "man" / "kafkadump.1").read_text()
    start = man.index("batches:  topic string")
    block = man[start:man.index(".RE", start)]
    man_finding = " ".join(block[block.index("FINDING:") + 8:].split()).replace(" ", "")
    assert man_finding == finding
    got = _documented(block[:block.index("FINDING:")], finding)
    assert {k: [(n, t.replace(" ", "")) for n, t in v] for k, v in got.items()} == want
