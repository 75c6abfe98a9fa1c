"""Small files are packed by one rule, whoever plans the read: ``kafkadump.spark.read``,
``spark.read.format("kafkadump").load`` and ``spark triage`` (``splits.pack``: bytes plus
Spark's 4 MiB open cost per file, up to the 128 MiB split size), at default settings."""

from __future__ import annotations

import pytest
from builders import simple_batch
from spark_session import shared_session

from kafkadump.spark.splits import OPEN_COST_DEFAULT, SPLIT_BYTES_DEFAULT, pack, plan

FILES = 159


@pytest.fixture(scope="module")
def small_fleet(tmp_path_factory):
    """159 one-batch segments in 53 partitions of 3 segments each."""
    root = tmp_path_factory.mktemp("small")
    for i in range(FILES):
        d = root / f"t-{i // 3}"
        d.mkdir(exist_ok=True)
        (d / f"{i % 3 * 10:020d}.log").write_bytes(simple_batch(i % 3 * 10, 2).data)
    return root


def test_pack_rule():
    # 159 tiny files cost 4 MiB each to open: 31 fit in a 128 MiB task (31 * 4 MiB + bytes), so 6 tasks
    files = [(f"/d/t-{i}/0.log", 100) for i in range(FILES)]
    tasks = plan(files)
    assert [len(t) for t in tasks] == [31] * 5 + [4]
    assert [u for t in tasks for u in t] == [(p, s, 0, 1) for p, s in files]   # listing order kept
    assert pack([5, 5, 5, 20, 1], lambda x: x, 10) == [[5, 5], [5], [20], [1]]
    assert pack([1] * 5, lambda x: x, 100, max_items=2) == [[1, 1], [1, 1], [1]]
    assert SPLIT_BYTES_DEFAULT // OPEN_COST_DEFAULT == 32


def test_read_and_load_pack_the_same(small_fleet):
    spark = shared_session()
    from kafkadump.spark import read
    from kafkadump.spark.splits import list_local

    files = list_local([str(small_fleet)])
    assert len(files) == FILES
    want = len(plan(files))
    assert want == 6
    by_read = read(spark, [str(small_fleet)], "batches")
    by_load = spark.read.format("kafkadump").option("level", "batches").load(str(small_fleet))
    assert by_read.rdd.getNumPartitions() == by_load.rdd.getNumPartitions() == want
    assert by_read.count() == by_load.count() == FILES


def test_spark_triage_packs_small_files(small_fleet):
    """spark triage runs one task per pack of units, not one per file."""
    spark = shared_session()
    from kafkadump.spark import jobs

    planned = jobs.plan_triage([str(small_fleet)])
    tasks = []
    runner = jobs.spark_runner(spark)

    def counting(units, records, max_findings):
        tasks.append(len(jobs.unit_tasks(units)))
        return runner(units, records, max_findings)

    planned.runner = counting
    rep = planned.run().report()
    assert rep["totals"]["files"] == FILES and rep["verdict"] in ("clean", "warnings")
    assert tasks == [6]         # 159 units: 31 to a task (4 MiB open cost each), as plan() packs files
    assert [len(t) for t in jobs.unit_tasks(planned.units)] == [31] * 5 + [4]
