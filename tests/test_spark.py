"""The ``kafkadump`` Spark data source and ``kafkadump spark ...`` in local mode.

One SparkSession for all Spark test modules (conftest.py; its cold start costs 7-50 s): local[2],
loopback only, no UI, 4 shuffle partitions.  Skips with the reason when
pyspark, pyarrow or Java is missing.

The DataFrames are compared row for row with the single-process CLI's JSON
over the shared corpus (read in place) and a generated fleet with damage
(``tests/spark_fleet.py``), read with a small split size so that large files
are cut into many tasks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CORPUS, need_corpus
from spark_compare import CliRun, assert_same, cli_lines, findings_from_cli, from_cli, from_row
from spark_session import spark_or_skip

SPLIT = 1 << 20      # small: the corpus' larger files and the fleet's 5 MB segment are cut into several tasks
OPEN_COST = 64 << 10  # and small files are packed several to a task (fewer tasks: each costs ~20-100 ms)
SEGMENTS = CORPUS / "real" / "segments"


@pytest.fixture(scope="module")
def cli(inputs):
    """The single-process CLI's JSON for the same files, started before the SparkSession
    so that they overlap its start-up."""
    files = inputs[1]
    return {"batches": CliRun("batches", files), "records": CliRun("records", files, "--decode", "none")}


@pytest.fixture(scope="module")
def spark(cli, spark_session):
    """conftest.py's session (shared with the other Spark test modules), started after ``cli``."""
    return spark_session


@pytest.fixture(scope="module")
def inputs(fleet):
    """(paths given to Spark, regular files given to the CLI)."""
    paths = [fleet["root"]]
    if SEGMENTS.exists():
        paths.insert(0, str(SEGMENTS))
    files = sorted(str(p) for base in paths for p in Path(base).rglob("*.log") if p.is_file())
    return paths, files


def _rows(spark, paths, level):
    from kafkadump.spark import read

    df = read(spark, paths, level, split_bytes=SPLIT, open_cost=OPEN_COST)
    return df, df.toArrow().to_pylist()


@pytest.fixture(scope="module")
def batch_rows(spark, inputs):
    return _rows(spark, inputs[0], "batches")


@pytest.fixture(scope="module")
def cli_batches(cli):
    return cli["batches"].lines()


# --- row for row against the CLI ---------------------------------------------------------------

def test_batches_equal_cli(batch_rows, cli_batches, inputs, fleet):
    df, rows = batch_rows
    from kafkadump.spark.splits import list_local, plan

    # the read really was cut: the big fleet file into 5 tasks, small files packed together
    files = list_local(inputs[0])
    tasks = plan(files, SPLIT, OPEN_COST)
    assert df.rdd.getNumPartitions() == len(tasks)
    big = [t for t in tasks if any(u[0] == fleet["big_file"] for u in t)]
    assert [[u[2:] for u in t if u[0] == fleet["big_file"]] for t in big] == [[(k, 5)] for k in range(5)]
    if SEGMENTS.exists():
        assert len(tasks) < len(files) / 2
    got = [from_row("batches", r) for r in rows if r["type"] != "error"]
    want = [from_cli("batches", d) for d in cli_batches]
    assert len(want) > 1300
    assert_same(got, want, "batches")


def test_corpus_is_covered(batch_rows):
    base = need_corpus("real/segments")
    _, rows = batch_rows
    corpus_rows = [r for r in rows if r["file"].startswith(str(base))]
    # every batch of the corpus' segments (the manifest's counts add up to this many)
    assert len(corpus_rows) > 190_000
    assert {r["topic"] for r in corpus_rows} >= {"__consumer_offsets", "__cluster_metadata", "oms_order_created"}


def test_findings_equal_cli(spark, inputs, cli_batches):
    _, rows = _rows(spark, inputs[0], "findings")
    got = [from_row("findings", r) for r in rows if r["type"] != "error"]
    want = findings_from_cli(cli_batches)
    assert {r[names_index("findings", "code")] for r in want} >= {"crc-mismatch", "garbage", "offset-order",
                                                                    "zero-padding", "truncated"}
    assert_same(got, want, "findings")


def names_index(level, name):
    from spark_compare import names

    return names(level).index(name)


def test_records_equal_cli(spark, inputs, cli):
    _, rows = _rows(spark, inputs[0], "records")
    got = [from_row("records", r) for r in rows if r["type"] != "error"]
    want = [from_cli("records", d) for d in cli["records"].lines()]
    assert sum(1 for d in want if d[0] == "record") > 3000
    assert_same(got, want, "records")


def test_topic_partition_and_error_rows(batch_rows, fleet):
    _, rows = batch_rows
    by_file = {}
    for r in rows:
        by_file.setdefault(r["file"], set()).add((r["topic"], r["partition"]))
    root = fleet["root"]
    assert by_file[os.path.join(root, "orders-1", "00000000000000000000.log")] == {("orders", 1)}
    assert by_file[os.path.join(root, "orders-0", "00000000000000000200.log")] == {("orders", 0)}
    assert by_file[os.path.join(root, "misc", "00000000000000000000.log")] == {(None, None)}
    dirs = {(r["file"], r["logDir"]) for r in rows if r["file"].startswith(root)}
    assert {d for f, d in dirs if "/misc/" not in f} == {root}
    assert {d for f, d in dirs if "/misc/" in f} == {None}
    errors = [r for r in rows if r["type"] == "error"]
    assert [(r["file"], r["topic"], r["partition"]) for r in errors] == [(fleet["gone"], "gone", 0)]
    assert "no such file" in errors[0]["error"]
    # only segments are listed from directories
    assert not any(r["file"].endswith("leader-epoch-checkpoint") for r in rows)


def test_load_path_option(spark, fleet):
    """spark.read.format("kafkadump").load(path), listed by the data source itself."""
    df = spark.read.format("kafkadump").option("level", "batches").load(os.path.join(fleet["root"], "broken-0"))
    rows = df.select("type", "baseOffset", "findings").collect()
    assert [r["type"] for r in rows] == ["batch"] * 9 + ["gap"]
    assert [r["baseOffset"] for r in rows[:9]] == [3 * i for i in range(9)]
    assert rows[-1]["findings"][0]["code"] == "truncated"


# --- the commands ---------------------------------------------------------------------------------

def _cli(args):
    from typer.testing import CliRunner

    from kafkadump.cli import app

    return CliRunner().invoke(app, args)


def test_spark_scan_writes_partitioned_parquet(spark, fleet, tmp_path):
    out = tmp_path / "out.parquet"
    res = _cli(["spark", "scan", fleet["root"], "--level", "records", "--output", str(out),
                "--master", "local[2]", "--split-bytes", str(SPLIT), "--json"])
    # the dangling symlink cannot be read: exit 2, the rest is written
    assert res.exit_code == 2, res.output
    stats = json.loads(res.stdout.strip().splitlines()[-1])
    assert stats["unreadable"] == 1 and stats["files"] == 7
    assert stats["problemRows"] > 0
    parts = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert parts == ["topic=__HIVE_DEFAULT_PARTITION__", "topic=broken", "topic=gone", "topic=legacy",
                     "topic=orders"]
    assert sorted(p.name for p in (out / "topic=orders").iterdir()) == ["partition=0", "partition=1"]
    back = spark.read.parquet(str(out))
    rows = back.toArrow().to_pylist()
    files = [f for f in fleet["files"]]
    want = [from_cli("records", d) for d in cli_lines("records", files, "--decode", "none")]
    got = [from_row("records", r) for r in rows if r["type"] != "error"]
    assert stats["rows"] == len(rows) == len(want) + 1
    assert stats["records"] == sum(1 for d in want if d[0] == "record")
    assert_same(got, want, "records read back from Parquet")


def _findings_of(report, code):
    return [(f["file"], x) for f in report["files"] for x in f["findings"] if x["code"] == code]


def test_spark_triage(spark, fleet):
    res = _cli(["spark", "triage", fleet["root"], "--json"])
    assert res.exit_code == 2, res.output     # the dangling symlink cannot be read: exit 2 (errors in the data too)
    rep = json.loads(res.stdout)
    assert rep["type"] == "triage"
    parts = {(d["topic"], d["partition"]): d for d in rep["partitions"]}
    for tp, want in fleet["partitions"].items():
        got = parts[tp]
        for k, v in want.items():
            assert got[k] == v, (tp, k, got[k], v)
    assert parts[("orders", 1)]["records"] == 1200 * 3       # the CRC-failed batch is not counted
    assert parts[("orders", 1)]["findings"]["error"] >= 3 and parts[("orders", 1)]["findings"]["warning"] == 1
    assert parts[("orders", 0)]["firstTimestamp"] == 1_700_000_000_000
    sg, eg = fleet["sequence_gap"], fleet["explained_gap"]
    [(file, gap)] = _findings_of(rep, "sequence-gap")
    assert file.endswith("orders-0/00000000000000000200.log") and gap["severity"] == "warning"
    assert gap["message"].startswith(f"producer {sg['producerId']} epoch {sg['producerEpoch']}: sequence ")
    assert f"({sg['missing']} missing)" in gap["message"]
    [(_, explained)] = [x for x in _findings_of(rep, "offset-gap") if "orders-0" in x[0]]
    assert explained["severity"] == "info" and explained["message"].startswith(
        f"offsets {eg['afterOffset'] + 1}..{eg['atOffset'] - 1} ({eg['missing']}) are absent between batches")
    codes = rep["findingCounts"]
    assert codes["crc-mismatch"] == 1 and codes["offset-order"] == 1 and codes["sequence-gap"] == 1
    assert codes["zero-padding"] == 1 and codes["truncated"] >= 1
    unreadable = [f for f in rep["files"] if f.get("error")]
    assert [f["file"] for f in unreadable] == [fleet["gone"]]
    assert parts[("gone", 0)]["unreadableFiles"] == 1 and parts[("gone", 0)]["verdict"] == "errors"
    assert rep["verdict"] == "errors"
    t = rep["totals"]
    assert t["files"] == 8 and t["unreadableFiles"] == 1 and t["findings"]["warning"] == 2
    assert t["batches"] == sum(p["batches"] for p in parts.values())


def test_spark_triage_text(spark, fleet, tmp_path):
    res = _cli(["spark", "triage", os.path.join(fleet["root"], "orders-0"), "--no-color", "--no-files"])
    assert res.exit_code == 1, res.output      # the sequence gap is a warning
    out = res.stdout
    row = next(line for line in out.splitlines() if line.startswith("orders-0 "))
    assert row.split()[:6] == ["orders-0", "warnings", "3", "2", "61", "279"]
    assert row.rstrip().endswith("offset-gap:1,sequence-gap:1")
    assert "warning  sequence-gap                00000000000000000200.log @" in out
    assert out.rstrip().splitlines()[-1].startswith("verdict: warnings  files: 3  bytes: ")
    assert "findings: 0 errors, 1 warnings, 1 info" in out


def test_spark_triage_keeps_replicas_apart(spark, fleet, tmp_path):
    """The same partition in two brokers' log dirs: two partitions, each copy checked on its own
    (merged, every batch would repeat the other copy's sequence numbers)."""
    import shutil

    replica = tmp_path / "broker-2" / "kafka-logs"
    shutil.copytree(os.path.join(fleet["root"], "orders-0"), replica / "orders-0")
    res = _cli(["spark", "triage", os.path.join(fleet["root"], "orders-0"), str(replica), "--json"])
    assert res.exit_code == 1, res.output
    rep = json.loads(res.stdout)
    parts = sorted(((d["logDir"], d["batches"], d["sequenceGapsExplained"], d["findingCounts"])
                    for d in rep["partitions"]), key=str)
    counts = {"offset-gap": 1, "sequence-gap": 1}
    assert parts == sorted([(fleet["root"], 61, 1, counts), (str(replica), 61, 1, counts)], key=str)
    assert "sequence-order" not in rep["findingCounts"]
    assert rep["paths"] == [os.path.join(fleet["root"], "orders-0"), str(replica)]
    text = _cli(["spark", "triage", os.path.join(fleet["root"], "orders-0"), str(replica), "--no-color"])
    names = [line.split()[0] for line in text.stdout.splitlines() if line.split()[:1] and
             line.split()[0].endswith("orders-0")]
    assert len(names) == 2 and len(set(names)) == 2      # told apart by their log dirs


def test_spark_triage_uri_and_missing_path(spark, fleet, tmp_path):
    res = _cli(["spark", "triage", "file://" + os.path.join(fleet["root"], "misc"), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["verdict"] == "clean"
    res = _cli(["spark", "triage", "hdfs://nn/kafka"])
    assert res.exit_code == 2 and "spark triage reads local paths" in res.output
    res = _cli(["spark", "triage", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "no such file or directory" in res.output


def test_spark_scan_clean_exit_0(spark, fleet, tmp_path):
    res = _cli(["spark", "scan", os.path.join(fleet["root"], "misc"), "-o", str(tmp_path / "o"), "--level",
                "batches", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("wrote 1 rows (1 batches, 0 gaps) from 1 files, 93 bytes")
    back = [json.loads(x) for f in (tmp_path / "o").rglob("*.json") for x in f.read_text().splitlines()]
    assert [(d["type"], d["baseOffset"], d["recordCount"], d["crcValid"]) for d in back] == [("batch", 0, 2, True)]


# --- without Spark: what is missing, and how to get it ----------------------------------------

def _run_cli(args, env=None, pre=""):
    code = (f"import sys\n{pre}\nfrom kafkadump.cli import main\nsys.argv = ['kafkadump'] + {args!r}\nmain()\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def test_missing_pyspark_says_how(tmp_path):
    p = _run_cli(["spark", "triage", str(tmp_path)], pre="sys.modules['pyspark'] = None")
    assert p.returncode == 2
    assert p.stderr.strip() == ("kafkadump: pyspark is not installed: pip install 'kafkadump[spark]' "
                                "(brings pyspark>=4.0 and pyarrow)")


def test_missing_java_says_how(tmp_path):
    spark_or_skip()
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-jdk")}
    p = _run_cli(["spark", "scan", str(tmp_path), "-o", str(tmp_path / "o")], env=env)
    assert p.returncode == 2
    assert f"Java not found (JAVA_HOME={tmp_path / 'no-jdk'} has no bin/java)" in p.stderr
    assert "apt-get install openjdk-17-jre-headless" in p.stderr
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = os.path.dirname(sys.executable)
    p = _run_cli(["spark", "triage", str(tmp_path)], env=env)
    assert p.returncode == 2 and "no java on PATH and JAVA_HOME is not set" in p.stderr


def test_spark_submit_script_help():
    """spark-submit runs kafkadump/cli/spark_submit.py as a script: it must work as one."""
    import kafkadump.cli.spark_submit as script

    p = subprocess.run([sys.executable, script.__file__, "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "scan" in p.stdout and "triage" in p.stdout


def test_records_query_is_the_query_layers(spark, fleet):
    """The data source's fromOffset/toOffset/key select what kafkadump records --from-offset/... does."""
    import json as _json

    from typer.testing import CliRunner

    from kafkadump.cli import app
    from kafkadump.spark import read

    path = fleet["big_file"]
    every = [_json.loads(x) for x in CliRunner().invoke(app, ["records", "--json", "-e", "base64", "--decode", "none",
                                                              path])
             .stdout.splitlines()]
    offsets = [o["offset"] for o in every if o["type"] == "record"]
    lo, hi = offsets[len(offsets) // 3], offsets[len(offsets) // 2]
    rows = read(spark, [path], "records", split_bytes=SPLIT, fromOffset=lo, toOffset=hi).toArrow().to_pylist()
    got = [r["offset"] for r in rows if r["type"] == "record"]
    assert got == [o for o in offsets if lo <= o <= hi] and got
    key = next(o["key"] for o in every if o["type"] == "record" and o["key"] is not None)  # base64
    rows = read(spark, [path], "records", key="base64:" + key).toArrow().to_pylist()
    want = [o["offset"] for o in every if o["type"] == "record" and o["key"] == key]
    assert sorted(r["offset"] for r in rows if r["type"] == "record") == sorted(want) and want


def test_jvm_options_of_a_local_session_leave_the_users_last():
    """kafkadump's JVM options come first and the user's spark-defaults.conf options after them (the
    JVM takes the last of a repeated option); the throughput collector only for a local session whose
    options choose none."""
    from kafkadump.spark.session import ARROW_JAVA_OPTIONS, LOCAL_GC_OPTION, jvm_conf

    local = jvm_conf("local[2]", {})
    assert local["spark.driver.extraJavaOptions"] == f"{ARROW_JAVA_OPTIONS} {LOCAL_GC_OPTION}"
    assert local["spark.executor.extraJavaOptions"] == ARROW_JAVA_OPTIONS
    theirs = jvm_conf("local[1]", {"spark.driver.extraJavaOptions": "-Darrow.enable_null_check_for_get=true -Xss4m"})
    assert theirs["spark.driver.extraJavaOptions"].endswith(f"{LOCAL_GC_OPTION} -Darrow.enable_null_check_for_get=true -Xss4m")
    for gc in ({"spark.driver.extraJavaOptions": "-XX:+UseG1GC"}, {"spark.driver.defaultJavaOptions": "-XX:+UseZGC"}):
        assert LOCAL_GC_OPTION not in jvm_conf("local[2]", gc)["spark.driver.extraJavaOptions"]
    assert LOCAL_GC_OPTION not in jvm_conf("spark://127.0.0.1:7077", {})["spark.driver.extraJavaOptions"]
