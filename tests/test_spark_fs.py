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


# --- conventions: refused before Spark starts, and Spark's log off stderr ----------------------------

def _run(args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, text=True, timeout=120)


def test_unknown_output_format_refused_before_spark(tmp_path):
    p = _run(["spark", "scan", str(tmp_path), "-o", str(tmp_path / "o"), "--format", "delta"])
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip() == (
        "kafkadump: Invalid value for '--format' / '-f': 'delta' is not one of parquet, json, orc; for delta "
        "(Delta Lake, Iceberg, ...) write from Python: kafkadump.spark.read(spark, PATHS, 'records')"
        ".write.format('delta').save(OUT) (see 'kafkadump spark scan -h')")


def test_existing_output_refused_before_spark(tmp_path):
    (tmp_path / "o").mkdir()
    p = _run(["spark", "scan", str(tmp_path), "-o", str(tmp_path / "o")])
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip() == (f"kafkadump: {tmp_path / 'o'}: exists; give --mode overwrite to replace it "
                                "or --mode append to add to it")
    assert "Spark" not in p.stderr and "WARN" not in p.stderr   # no JVM was started


def test_spark_log_goes_to_a_file(spark):
    """The session kafkadump starts writes Spark's log (its start-up banner included) to a file,
    not to stderr; --verbose leaves it on stderr."""
    from kafkadump.spark import session

    assert session.log_path is not None and os.path.basename(session.log_path).startswith("kafkadump-spark-")
    with open(session.log_path, errors="replace") as f:
        assert "log4j" in f.read()


def test_failures_explained_in_one_line():
    from kafkadump.spark.failures import explain

    worker = ("An error occurred while calling o81.save.\n: org.apache.spark.SparkException: Job aborted\n"
              "  File \"/usr/lib/python3/worker.py\", line 1, in main\n"
              "ModuleNotFoundError: No module named 'pyarrow'\n")
    line = explain(RuntimeError(worker))
    assert line.startswith("Spark: the executors' Python has no pyarrow (kafkadump's Spark extra needs it): "
                           "pip install 'kafkadump[spark]' in the Python the executors run")
    gone = ("Job aborted due to stage failure: ... java.io.FileNotFoundException: File "
            "file:/mnt/evidence/t-0/00000000000000000000.log does not exist\n\tat org.apache...")
    assert explain(RuntimeError(gone)) == (
        "Spark: file:/mnt/evidence/t-0/00000000000000000000.log does not exist on an executor: every executor "
        "needs the files at the path the driver lists (a shared mount at the same path), or give hdfs://, s3a:// "
        "or gs:// URIs")
    assert explain(RuntimeError("[CANNOT_X] something\nmore"), log_path="/tmp/l.log") == \
        "Spark: [CANNOT_X] something (Spark's log: /tmp/l.log)"


def test_file_gone_before_the_read_is_one_line(spark, tmp_path):
    """A file listed by the driver that Spark's Hadoop cannot find: the real Spark error, explained."""
    from kafkadump.spark import read
    from kafkadump.spark.failures import explain

    gone = tmp_path / "t-0" / "00000000000000000000.log"
    with pytest.raises(Exception) as info:
        read(spark, [], "batches", files=[(str(gone), 100)], through_hadoop=True).collect()
    assert explain(info.value).startswith(f"Spark: file:{gone} does not exist on an executor: every executor needs")
