"""The Spark read's plan and tasks without Spark: file listing, topic-partition names,
batch-boundary splits, and the rows one task produces.

The central claim: the items of the tasks of a file, concatenated, are exactly
the items of a whole-file walk (positions, findings, gaps, the ``offset-order``
state across a cut), for any split size, on real segments read in place and on
damaged ones.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from builders import simple_batch
from conftest import CORPUS, FIXTURES
from spark_compare import assert_same, cli_lines, findings_from_cli, from_cli, from_row
from spark_fleet import damaged_variants

from kafkadump.decoders.batches import Options
from kafkadump.decoders.batches import iter_batches
from kafkadump.render.jsonl import item_line as render_batch_line
from kafkadump.sources.segment import open_segment
from kafkadump.spark.splits import ListingError, cuts, iter_task, list_local, local_path, log_dir, plan, topic_partition
from kafkadump.spark.tasks import _Spooled, options_for, read_task

SEGMENTS = CORPUS / "real" / "segments"


def _line(item, full):
    if full:
        return render_batch_line(item)
    # cheaper, for the big sweep: where each item is, what it is, and every finding
    return (type(item).__name__, item.position, item.size, getattr(item, "base_offset", None),
            getattr(item, "crc_valid", None), [(f.code, f.offset, f.message) for f in item.findings])


def _whole(buf, name, records=True):
    return [_line(i, records) for i in iter_batches(buf, name, options=Options(records=records))]


def _tasks(buf, name, split, records=True):
    size = len(buf)
    n = max(1, -(-size // split))
    out = []
    for k in range(n):
        out += [_line(i, records) for i in iter_task(buf, size, name, Options(records=records), split, k, n)]
    return out


def _segment_files(fleet):
    files = sorted(str(p) for p in Path(fleet["root"]).rglob("*.log") if p.is_file())
    files += sorted(str(p) for p in FIXTURES.rglob("*.log"))
    if SEGMENTS.exists():
        files += sorted(str(p) for p in SEGMENTS.rglob("*.log"))
    return files


# --- splits are exact ------------------------------------------------------------------------

def test_tasks_equal_whole_walk_on_every_segment(fleet):
    # headers and CRCs only (the walk does not depend on records; record-level findings across
    # cuts are checked on the damaged segments below and row for row in test_spark.py)
    files = _segment_files(fleet)
    checked = 0
    for f in files:
        with open_segment(f) as seg:
            buf = seg.buf
            whole = _whole(buf, f, records=False)
            size = len(buf)
            splits = {max(1, size // 3 + 1), max(1, size // 11 + 1)}
            if size < 4000:
                splits.add(61)
            for s in splits:
                assert _tasks(buf, f, s, records=False) == whole, (f, s)
                checked += 1
    assert checked > 30
    if SEGMENTS.exists():
        assert len(files) > 150


@pytest.mark.parametrize("seed", range(4))
def test_tasks_equal_whole_walk_on_damaged_segments(fleet, seed):
    bases = [fleet["files"][0], fleet["files"][1], fleet["files"][3]]  # codecs + producers, legacy
    n = 0
    for i, base in enumerate(bases):
        data = Path(base).read_bytes()
        for v in damaged_variants(data, seed * 10 + i, 25):
            whole = _whole(v, "v")
            for s in (max(1, len(v) // 3 + 1), max(1, len(v) // 8 + 1), 997):
                if -(-len(v) // s) > 60:
                    continue
                assert _tasks(v, "v", s) == whole, (base, seed, s)
                n += 1
    assert n > 150


def test_a_view_of_arrow_bytes_walks_as_bytes_do(fleet):
    """Chunks read through Hadoop reach the walk as memoryviews of Spark's Arrow buffers (no copy):
    the same items as from bytes, damaged chunks (gaps, resync) included."""
    pa = pytest.importorskip("pyarrow")
    from kafkadump.spark.hadoop_files import _content

    n = 0
    for i, base in enumerate([fleet["files"][0], fleet["files"][3]]):
        variants = list(damaged_variants(Path(base).read_bytes(), 7 + i, 12))
        column = pa.array([b"", *variants], pa.binary()).slice(1)   # a sliced column, as Arrow hands them
        for k, v in enumerate(variants):
            view = _content(column, k)
            assert isinstance(view, memoryview) and bytes(view) == v
            whole = _whole(v, "v")
            assert _whole(view, "v") == whole
            n += any(line[0] == "Gap" or line[5] for line in _whole(v, "v", records=False))
    assert n > 3   # damaged: findings, gaps


def test_cut_is_the_first_batch_at_or_after_each_share():
    layouts = [simple_batch(i * 3, 3, value_size=(i * 37) % 300) for i in range(60)]
    data = b"".join(b.data for b in layouts)
    starts = []
    p = 0
    for b in layouts:
        starts.append(p)
        p += b.size
    split = 1000
    n = -(-len(data) // split)
    for k in range(n):
        start, stop, resume = cuts(data, len(data), "x", Options(), split, k, n)
        want_start = 0 if k == 0 else min([s for s in starts if s >= k * split], default=len(data))
        want_stop = len(data) if k == n - 1 else min([s for s in starts if s >= (k + 1) * split], default=len(data))
        assert (start, stop) == (want_start, want_stop)
        # every batch is CRC-valid: the walk state is restored from the batch just before the cut
        assert resume == (0 if k == 0 else max([s for s in starts if s < start], default=start))


def test_offset_order_across_a_cut_needs_the_last_valid_batch():
    """A(100..102, valid)  B(CRC broken)  | cut |  C(50..52): C's offset-order finding is
    about A, two batches back, across the cut."""
    a = simple_batch(100, 3).data
    b = bytearray(simple_batch(200, 3).data)
    b[70] ^= 0xFF
    c = simple_batch(50, 3).data
    data = a + bytes(b) + c
    split = len(a) + len(b)         # task 1 starts exactly at C
    items = list(iter_task(data, len(data), "x", Options(), split, 1, 2))
    assert [i.position for i in items] == [split]
    assert [f.code.value for f in items[0].findings] == ["offset-order"]
    assert "previous lastOffset 102" in items[0].findings[0].message
    assert cuts(data, len(data), "x", Options(), split, 1, 2) == (split, len(data), 0)


# --- planning ----------------------------------------------------------------------------------

def test_plan_cuts_large_files_and_packs_small_ones():
    files = [("/a/t-0/big.log", 1000), ("/a/t-0/s1.log", 10), ("/a/t-0/s2.log", 10), ("/a/t-1/s3.log", 300),
             ("/a/t-1/empty.log", 0)]
    tasks = plan(files, split_bytes=300, open_cost=20)
    assert tasks == [
        [("/a/t-0/big.log", 1000, 0, 4)], [("/a/t-0/big.log", 1000, 1, 4)], [("/a/t-0/big.log", 1000, 2, 4)],
        [("/a/t-0/big.log", 1000, 3, 4), ("/a/t-0/s1.log", 10, 0, 1), ("/a/t-0/s2.log", 10, 0, 1)],
        [("/a/t-1/s3.log", 300, 0, 1)], [("/a/t-1/empty.log", 0, 0, 1)]]
    # default open cost (4 MiB): every 128 MiB share of a 1 GiB segment is a task of its own
    assert len(plan([("/x/t-0/a.log", 1 << 30)])) == 8
    with pytest.raises(ValueError):
        plan(files, split_bytes=0)


@pytest.mark.parametrize("path,want", [
    ("/d/orders-3/00000000000000000000.log", ("orders", 3)),
    ("/d/my-topic-12/00000000000000000100.log", ("my-topic", 12)),
    ("/d/__consumer_offsets-49/00000000000000000000.log", ("__consumer_offsets", 49)),
    ("/d/orders-3.0123456789abcdef0123456789abcdef-delete/00000000000000000000.log", ("orders", 3)),
    ("/d/orders-3.0123456789abcdef0123456789abcdef-future/00000000000000000000.log", ("orders", 3)),
    ("/d/misc/00000000000000000000.log", (None, None)),
    ("00000000000000000000.log", (None, None)),
    ("/d/t-99999999999/0.log", (None, None)),
])
def test_topic_partition(path, want):
    assert topic_partition(path) == want


def test_log_dir():
    assert log_dir("/data/kafka-logs/orders-3/00000000000000000000.log") == "/data/kafka-logs"
    assert log_dir("/data/misc/00000000000000000000.log") is None


def test_local_path():
    assert local_path("/a/b") == "/a/b"
    assert local_path("rel/b") == "rel/b"
    assert local_path("file:///a/b") == "/a/b"
    assert local_path("file:/a/b") == "/a/b"
    assert local_path("file://localhost/a/b") == "/a/b"
    assert local_path("hdfs://nn:8020/kafka") is None
    assert local_path("s3a://bucket/x") is None


def test_list_local(fleet, tmp_path):
    root = fleet["root"]
    got = list_local([root])
    names_ = [os.path.relpath(p, root) for p, _ in got]
    assert names_ == ["broken-0/00000000000000000000.log", "gone-0/00000000000000000000.log",
                      "legacy-0/00000000000000000000.log", "misc/00000000000000000000.log",
                      "orders-0/00000000000000000000.log", "orders-0/00000000000000000200.log",
                      "orders-1/00000000000000000000.log"]
    sizes = dict(got)
    assert sizes[fleet["big_file"]] == fleet["big_size"]
    assert sizes[fleet["gone"]] == -1            # listed, unreadable: its task says so
    # a file named directly is taken whatever its name; globs expand; relative paths become absolute
    odd = tmp_path / "capture.bin"
    odd.write_bytes(b"x")
    assert list_local([str(odd)]) == [(str(odd), 1)]
    assert [p for p, _ in list_local([os.path.join(root, "orders-*")])] == [
        os.path.join(root, "orders-0", "00000000000000000000.log"),
        os.path.join(root, "orders-0", "00000000000000000200.log"), fleet["big_file"]]
    assert list_local(["file://" + os.path.join(root, "misc")])[0][0] == os.path.join(root, "misc",
                                                                                       "00000000000000000000.log")
    with pytest.raises(ListingError, match="no such file or directory"):
        list_local([str(tmp_path / "absent")])
    with pytest.raises(ListingError, match="not a local path"):
        list_local(["hdfs://nn/kafka"])


# --- one task's rows -----------------------------------------------------------------------------

def _task_rows(level, files, split):
    """The rows of every task of ``files``, as Spark gets them (the parts made Arrow record
    batches), as dicts."""
    pytest.importorskip("pyarrow")
    from pyspark.sql.pandas.types import to_arrow_schema

    from kafkadump.spark.datasource import part_batch
    from kafkadump.spark.row_schema import column_names, struct_type

    schema = to_arrow_schema(struct_type(level), timezone="UTC")
    rows = []
    for path, size in files:
        n = max(1, -(-size // split)) if size > 0 else 1
        for k in range(n):
            for parts in read_task(level, path, size, k, n, split, options_for(level=level)):
                for part in parts:
                    rows += part_batch(part, column_names(level), schema).to_pylist()
    return rows


def test_task_rows_equal_cli_on_damaged_segments(fleet, tmp_path):
    files = []
    for i, base in enumerate([fleet["files"][0], fleet["files"][3], fleet["big_file"]]):
        data = Path(base).read_bytes()
        for j, v in enumerate(damaged_variants(data, 100 + i, 12 if i < 2 else 3)):
            d = tmp_path / f"t{i}-{j}"
            d.mkdir()
            p = d / "00000000000000000000.log"
            p.write_bytes(v)
            files.append((str(p), len(v)))
    paths = [p for p, _ in files]
    split = 64 << 10
    batches = cli_lines("batches", paths)
    assert_same([from_row("batches", r) for r in _task_rows("batches", files, split)],
                [from_cli("batches", d) for d in batches], "batches")
    assert_same([from_row("findings", r) for r in _task_rows("findings", files, split)],
                findings_from_cli(batches), "findings")
    assert_same([from_row("records", r) for r in _task_rows("records", files, split)],
                [from_cli("records", d) for d in cli_lines("records", paths, "--decode", "none")], "records")


def test_task_never_raises_and_reports_unreadable_files(fleet, tmp_path):
    rows = _task_rows("batches", [(fleet["gone"], -1)], 1 << 20)
    assert [(r["type"], r["topic"], r["partition"]) for r in rows] == [("error", "gone", 0)]
    assert rows[0]["error"].startswith(f"{fleet['gone']}: no such file")
    d = tmp_path / "x-1"
    d.mkdir()
    (d / "sub.log").mkdir()
    rows = _task_rows("records", [(str(d / "sub.log"), 4096)], 1 << 20)
    assert [r["type"] for r in rows] == ["error"] and "is a directory" in rows[0]["error"]


def test_spooled_copy_decodes_like_the_mapped_file(fleet):
    """Non-local URIs are copied through pyarrow.fs to executor-local temp space; here
    through pyarrow's local filesystem, which takes the same path."""
    pytest.importorskip("pyarrow")
    path = fleet["files"][1]
    sp = _Spooled("file://" + path)
    try:
        assert sp.buf[:] == Path(path).read_bytes()
        assert _whole(sp.buf, path) == _whole(Path(path).read_bytes(), path)
        tmp = sp.tmp
        assert os.path.exists(tmp)
    finally:
        sp.close()
    assert not os.path.exists(tmp)
