"""The records level's fast path: records of plain batches go from the batch bytes straight to
Arrow buffers (``kafkadump.accel.arrowcols``, :mod:`kafkadump.spark.record_buffers`).

The rows must be those of the path through the decoder's Record objects (the compiled
column loop switched off), in the same order, and those of the CLI's ``records --json``
lines: on the shared corpus, the project's fixtures, the Spark tests' fleet and batches
built here for the cases the loop hands back (a header key that is not UTF-8, a run in
the middle of a many-record batch).  The rows are read in this process, as a Spark
task reads them (no session), and turned into Arrow record batches as the data source does.
(The column loop against the decoder's records, without Spark: tests/test_compiled_twins.py.)
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from builders import Rec, fix_crc, v2_batch
from conftest import CORPUS, FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spark_compare import cli_lines, from_cli, from_row

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from pyspark.sql.pandas.types import to_arrow_schema  # noqa: E402

from kafkadump.decoders.batches.model import STREAM_RECORDS  # noqa: E402
from kafkadump.spark import record_buffers  # noqa: E402
from kafkadump.spark.datasource import part_batch  # noqa: E402
from kafkadump.spark.row_schema import column_names, struct_type  # noqa: E402
from kafkadump.spark.rows import ListPart  # noqa: E402
from kafkadump.spark.tasks import options_for, read_task  # noqa: E402

pytestmark = pytest.mark.skipif(not record_buffers.available(),
                                reason="the compiled column loop (kafkadump.accel.arrowcols) is not built or is off")

SEGMENTS = CORPUS / "real" / "segments"
T_BIG = 253402300800000      # 10000-01-01: past Spark's TimestampType (timestamp null, timestampMs kept)


def task_table(paths, names=None, split=1 << 20, counts=None):
    """The records-level rows of ``paths`` (every task of each) as one Arrow table, as the data
    source hands them to Spark, and the kinds of parts they came in."""
    import pyarrow as pa

    names = names or column_names("records")
    schema = to_arrow_schema(struct_type("records", names), timezone="UTC")
    batches, kinds = [], []
    for path in paths:
        size = os.path.getsize(path)
        n = max(1, -(-size // split))
        for k in range(n):
            for parts in read_task("records", path, size, k, n, split, options_for(level="records"),
                                   names=None if names == column_names("records") else names, counts=counts):
                for part in parts:
                    kinds.append(type(part))
                    batches.append(part_batch(part, names, schema))
    return pa.Table.from_batches(batches, schema=schema), kinds


def both_paths(monkeypatch, paths, names=None, split=1 << 20):
    """(the rows by the fast path, as a table, and its counts), checked equal to the rows
    through the decoder's records (the compiled column loop off)."""
    counts: dict = {}
    fast, _ = task_table(paths, names, split, counts)
    with monkeypatch.context() as m:
        m.setattr(record_buffers, "_COLS", None)
        slow_counts: dict = {}
        slow, kinds = task_table(paths, names, split, slow_counts)
    assert slow_counts["fast"] == 0 and set(kinds) <= {ListPart}
    assert fast.num_rows == slow.num_rows
    for name in fast.column_names:
        assert fast.column(name).equals(slow.column(name)), name
    return fast, counts


def corpus_files():
    """Every fourth segment of the shared corpus under 1 MiB (``test_spark.py`` compares the Spark
    rows of all of them with the CLI's) and the project's fixtures."""
    files = sorted(str(p) for p in SEGMENTS.rglob("*.log") if p.is_file()) if SEGMENTS.exists() else []
    return [f for f in files[::4] if os.path.getsize(f) < 1 << 20] + sorted(str(p) for p in FIXTURES.rglob("*.log"))


def test_fast_rows_equal_record_rows_and_cli_on_corpus_and_fixtures(monkeypatch):
    files = corpus_files()
    fast, counts = both_paths(monkeypatch, files)
    assert counts["fast"] > 1000            # the loop built most rows (the rest: control, legacy, damage)
    want = [from_cli("records", d) for d in cli_lines("records", files, "--decode", "none")]
    assert [from_row("records", r) for r in fast.to_pylist()] == want


def test_fast_rows_equal_on_the_fleet_split_small(monkeypatch, fleet):
    files = [str(p) for p in Path(fleet["root"]).rglob("*.log") if p.is_file()]
    _, counts = both_paths(monkeypatch, files, split=64 << 10)
    assert counts["fast"] > 0


@pytest.mark.parametrize("names", [["offset", "key", "timestamp"],
                                   ["headers", "timestampType", "value", "topic", "error", "control", "batchPosition",
                                    "timestampMs", "offsetDelta", "timestampDelta", "file", "logDir", "partition"]])
def test_pruned_columns_equal(monkeypatch, fleet, names):
    files = [str(p) for p in Path(fleet["root"]).rglob("*.log") if p.is_file()]
    fast, counts = both_paths(monkeypatch, files, names)
    assert counts["fast"] > 1000
    assert counts["values"] == fast.num_rows * len(names)


def _segment(tmp_path, batches, name="t-0"):
    d = tmp_path / name
    d.mkdir()
    p = d / "00000000000000000000.log"
    p.write_bytes(b"".join(batches))
    return str(p)


def _not_utf8(layout, marker=b"hX"):
    """``layout``'s bytes with the header key ``marker`` made ``h\\xff`` (CRC fixed)."""
    buf = bytearray(layout.data)
    i = buf.index(marker)
    buf[i:i + 2] = b"h\xff"
    fix_crc(buf)
    return bytes(buf)


def test_the_cases_a_record_may_hold(monkeypatch, tmp_path):
    """Null and empty keys and values, headers (a null value, several), LogAppendTime, a timestamp
    past Spark's range, a header key that is not UTF-8 (handed back: the rows of that batch
    come from the decoder's records)."""
    plain = v2_batch(0, [Rec(None, b"v0", headers=(("a", None), ("b", b""), ("c", b"\x00\xff"))),
                         Rec(b"", None, ts_delta=5), Rec(b"k", b"", headers=(("\u00e9t\u00e9", b"x"),)),
                         Rec(None, None)]).data
    log_append = v2_batch(4, [Rec(b"k4", b"v4"), Rec(b"k5", b"v5", ts_delta=9)], attributes=0x08,
                          max_ts=1_700_000_000_500).data
    far = v2_batch(6, [Rec(b"k6", b"v6")], base_ts=T_BIG).data
    odd = _not_utf8(v2_batch(7, [Rec(b"k7", b"v7", headers=(("hX", b"1"),)), Rec(b"k8", b"v8")]))
    path = _segment(tmp_path, [plain, log_append, far, odd])
    table, counts = both_paths(monkeypatch, [path])
    fast = table.to_pylist()
    assert counts["fast"] == 7                       # not the 2 records of the batch with the odd key
    by_offset = {r["offset"]: r for r in fast}
    assert by_offset[0]["key"] is None and by_offset[0]["headers"] == [
        {"key": "a", "value": None}, {"key": "b", "value": b""}, {"key": "c", "value": b"\x00\xff"}]
    assert by_offset[1]["key"] == b"" and by_offset[1]["value"] is None
    assert by_offset[2]["headers"] == [{"key": "\u00e9t\u00e9", "value": b"x"}]
    assert [by_offset[o]["timestampType"] for o in (3, 4)] == ["CreateTime", "LogAppendTime"]
    assert by_offset[5]["timestampMs"] == 1_700_000_000_500
    assert by_offset[6]["timestamp"] is None and by_offset[6]["timestampMs"] == T_BIG
    assert by_offset[7]["headers"] == [{"key": "h\\xff", "value": b"1"}]
    want = [from_cli("records", d) for d in cli_lines("records", [path], "--decode", "none")]
    assert [from_row("records", r) for r in fast] == want


def test_a_run_handed_back_in_a_many_record_batch_keeps_the_order(monkeypatch, tmp_path):
    n = STREAM_RECORDS + 500
    recs = [Rec(f"k{i}".encode(), f"v{i}".encode(), ts_delta=i, headers=(("hX" if i == STREAM_RECORDS + 7 else "h",
                                                                            b"x"),))
            for i in range(n)]
    path = _segment(tmp_path, [_not_utf8(v2_batch(0, recs)), v2_batch(n, [Rec(b"last", b"v")]).data])
    fast, counts = both_paths(monkeypatch, [path])
    assert fast.column("offset").to_pylist() == list(range(n + 1))
    assert counts["fast"] == STREAM_RECORDS + 1      # the first run and the last batch; the second run handed back
    _, kinds = task_table([path])
    assert kinds == [record_buffers.RecordBuffers, ListPart, record_buffers.RecordBuffers]


_bytes = st.one_of(st.none(), st.binary(max_size=12))
_header = st.tuples(st.text(max_size=4), _bytes)
_record = st.builds(Rec, _bytes, _bytes, ts_delta=st.integers(-(1 << 40), 1 << 40),
                    headers=st.lists(_header, max_size=3).map(tuple))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.tuples(st.lists(_record, min_size=1, max_size=6), st.booleans(),
                                  st.integers(-(1 << 50), 1 << 50)), min_size=1, max_size=4))
def test_fast_rows_equal_record_rows_on_generated_batches(monkeypatch, batches):
    """Any keys, values, headers (text keys: plain, so every record goes by the loop), timestamp
    deltas and base timestamps, CreateTime or LogAppendTime."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        chunks, base = [], 0
        for recs, log_append, base_ts in batches:
            chunks.append(v2_batch(base, recs, attributes=0x08 if log_append else 0, base_ts=base_ts).data)
            base += len(recs)
        path = _segment(Path(tmp), chunks)
        fast, counts = both_paths(monkeypatch, [path])
        assert fast.num_rows == counts["fast"] == base
