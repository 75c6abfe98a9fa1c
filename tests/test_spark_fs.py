"""Inputs read through Spark's own Hadoop FileSystem (``kafkadump.spark.hadoop_files``).

Tested here with Hadoop's local filesystem (``file:`` URIs, no server): the task
gets each file's bytes from Spark's ``binaryFile`` source (the JVM opens it with
the session's Hadoop configuration), and the rows must be the single-process
CLI's.  Not tested here (no server on this machine): real HDFS, S3 (``s3a://``
with hadoop-aws) and GCS (``gs://`` with gcs-connector); their errors when the
connector is missing are.
"""

from __future__ import annotations

import json
import os

import pytest
from spark_compare import CliRun, assert_same, from_cli, from_row
from spark_fleet import make_fleet
from spark_session import shared_session


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fsfleet")
    facts = make_fleet(str(root))
    facts["root"] = str(root)
    # every readable partition (the dangling symlink of gone-0 aside: Hadoop cannot open it either)
    facts["dirs"] = [os.path.join(str(root), d) for d in ("orders-0", "orders-1", "legacy-0", "broken-0", "misc")]
    return facts


@pytest.fixture(scope="module")
def cli(fleet):
    return {"batches": CliRun("batches", fleet["files"]),
            "records": CliRun("records", fleet["files"], "--decode", "none")}


@pytest.fixture(scope="module")
def spark(cli):
    return shared_session()


@pytest.mark.parametrize("level", ["batches", "records"])
def test_file_uris_read_through_hadoop_equal_cli(spark, fleet, cli, level):
    from kafkadump.spark import read

    uris = ["file://" + d for d in fleet["dirs"]]
    df = read(spark, uris, level, through_hadoop=True)
    plan = df._jdf.queryExecution().executedPlan().toString()
    # the JVM's file scan read the bytes (Spark's binaryFile source), the tasks decoded them
    assert plan.startswith("MapInArrow kafkadump_decode(path") and "struct<path:string,content:binary>" in plan
    rows = df.toArrow().to_pylist()
    assert not [r for r in rows if r["type"] == "error"]
    assert {r["file"] for r in rows} == set(fleet["files"])          # shown as plain paths
    by_file = {r["file"]: (r["topic"], r["partition"], r["logDir"]) for r in rows}
    assert by_file[fleet["big_file"]] == ("orders", 1, fleet["root"])
    got = [from_row(level, r) for r in rows]
    want = [from_cli(level, d) for d in cli[level].lines()]
    assert len(want) > 1200
    assert_same(got, want, f"{level} through Hadoop")


def test_records_query_through_hadoop(spark, fleet, cli):
    from kafkadump.spark import read

    path = "file://" + fleet["big_file"]
    rows = read(spark, [path], "records", through_hadoop=True, fromOffset=30, toOffset=44).toArrow().to_pylist()
    want = [d["offset"] for d in cli["records"].lines()
            if d["type"] == "record" and d["file"] == fleet["big_file"] and 30 <= d["offset"] <= 44]
    # batch 10 (offsets 30..32) is written twice in this segment: both copies are records
    assert sorted(want) == sorted([*range(30, 45), 30, 31, 32])
    assert sorted(r["offset"] for r in rows if r["type"] == "record") == sorted(want)


def _cli(args):
    from typer.testing import CliRunner

    from kafkadump.cli import app

    return CliRunner().invoke(app, args)


@pytest.mark.parametrize("uri,hint", [
    ("s3a://evidence-bucket/kafka-logs", "hadoop-aws"),
    ("gs://evidence-bucket/kafka-logs", "gcs-connector"),
])
def test_unconfigured_filesystem_is_one_line(spark, tmp_path, uri, hint):
    res = _cli(["spark", "scan", uri, "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1, res.output
    scheme = uri.split(":")[0]
    assert lines[0].startswith(f"kafkadump: {uri}: Spark's Hadoop has no filesystem for {scheme}:// here: ")
    assert hint in lines[0] and "Traceback" not in res.output
    assert not (tmp_path / "out").exists()


def test_scan_of_file_uri_writes_the_rows(spark, fleet, tmp_path):
    out = tmp_path / "o"
    res = _cli(["spark", "scan", "file://" + os.path.join(fleet["root"], "misc"), "-o", str(out), "--level", "batches",
                "--format", "json", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["rows"] == 1
