"""Small files are packed by one rule, whoever plans the read: ``kafkadump.spark.read``,
``spark.read.format("kafkadump").load`` and ``spark triage`` (``splits.pack``: bytes plus
Spark's 4 MiB open cost per file, up to the 128 MiB split size), at default settings."""

from __future__ import annotations

import os
import random

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
    # 159 tiny files cost 4 MiB each to open: 31 fit in a 128 MiB task (31 * 4 MiB + bytes), so 6 tasks,
    # evened out to 27 files each (the last 24), not 31 and a last task of 4
    files = [(f"/d/t-{i}/0.log", 100) for i in range(FILES)]
    tasks = plan(files)
    assert [len(t) for t in tasks] == [27] * 5 + [24]
    assert [u for t in tasks for u in t] == [(p, s, 0, 1) for p, s in files]   # listing order kept
    assert pack([5, 5, 5, 20, 1], lambda x: x, 10) == [[5, 5], [5], [20], [1]]
    assert pack([1] * 5, lambda x: x, 100, max_items=2) == [[1, 1], [1, 1], [1]]
    assert pack([4, 4, 4, 4], lambda x: x, 13) == [[4, 4], [4, 4]]     # next fit alone: [[4, 4, 4], [4]]
    assert pack([1, 1, 1, 1, 1, 1, 1, 9], lambda x: x, 10) == [[1] * 7, [9]]   # no better cut: as next fit
    assert pack([], lambda x: x, 10) == [] and pack([30], lambda x: x, 10) == [[30]]
    assert SPLIT_BYTES_DEFAULT // OPEN_COST_DEFAULT == 32


def test_pack_evens_out_the_tasks():
    """4 segments of 32 MiB (36 MiB each with the open cost) are 2 tasks of 2, so two cores are busy to
    the end; next fit alone made 3 and 1.  The number of tasks is never more than next fit's."""
    mib = 1 << 20
    assert [len(t) for t in plan([(f"/d/t-{i}/0.log", 32 * mib) for i in range(4)])] == [2, 2]
    assert [len(t) for t in plan([(f"/d/t-{i}/0.log", 128 * mib - 5) for i in range(4)])] == [1, 1, 1, 1]
    rnd = random.Random(7)
    for _ in range(200):
        costs = [rnd.choice((1, 2, 5, 40, 90, 150)) for _ in range(rnd.randrange(1, 30))]
        target = rnd.choice((10, 100, 128))
        tasks = pack(costs, lambda x: x, target)
        greedy = pack_next_fit(costs, target)
        assert [c for t in tasks for c in t] == costs
        assert len(tasks) == len(greedy)
        assert max(sum(t) for t in tasks) <= max(sum(t) for t in greedy)
        assert all(sum(t) <= target or len(t) == 1 for t in tasks)


def pack_next_fit(costs, target):
    """The plain rule: a task takes items while their sum stays within ``target``."""
    tasks = []
    for c in costs:
        if tasks and sum(tasks[-1]) + c <= target:
            tasks[-1].append(c)
        else:
            tasks.append([c])
    return tasks


def test_the_jvm_packs_by_the_same_rule(small_fleet):
    """KafkaSegmentInputFormat (hdfs://, s3a://, ... read in byte ranges) packs its pieces as splits.pack does."""
    spark = shared_session()
    from kafkadump.spark import jvm

    if jvm.find_javac() is None and not os.path.isfile(jvm.jar_path()):
        pytest.skip("no javac here: KafkaSegmentInputFormat cannot be built")
    fmt = jvm.format_class(spark)
    assert fmt is not None
    gateway = spark.sparkContext._gateway
    rnd = random.Random(11)
    for _ in range(30):
        costs = [rnd.choice((1, 2, 5, 40, 90, 150)) for _ in range(rnd.randrange(1, 30))]
        target = rnd.choice((10, 100, 128))
        arr = gateway.new_array(gateway.jvm.long, len(costs))
        for i, c in enumerate(costs):
            arr[i] = c
        cuts = list(fmt.pack(arr, target))
        assert [costs[a:b] for a, b in zip(cuts, cuts[1:])] == pack(costs, lambda x: x, target)


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
    from kafkadump.objects.logdir_objects import triage_report

    rep = triage_report(planned.run())
    assert rep["totals"]["files"] == FILES and rep["verdict"] in ("clean", "warnings")
    assert tasks == [6]         # 159 units: 27 to a task (4 MiB open cost each), as plan() packs files
    assert [len(t) for t in jobs.unit_tasks(planned.units)] == [27] * 5 + [24]
