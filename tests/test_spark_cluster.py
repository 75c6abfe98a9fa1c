"""kafkadump on a standalone Spark cluster started from PySpark's own launcher, on 127.0.0.1.

A master and (later) one worker run as ``bin/spark-class`` of the installed
pyspark (``org.apache.spark.deploy.master.Master`` / ``...worker.Worker``), bound
to the loopback interface.  With the master alone, a command must give up with one
line instead of waiting for ever; with the worker, ``spark scan`` and ``spark
triage`` must give the single-process CLI's rows and report; an executor Python
without kafkadump must be said in one line.

Marked ``slow`` (two JVMs besides the driver's): deselected by default, run with
``pytest -m slow tests/test_spark_cluster.py`` (see the README).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from spark_compare import assert_same, cli_lines, from_cli, from_row
from spark_remote import Cluster
from spark_session import SETTINGS, spark_or_skip

pytestmark = pytest.mark.slow


def _stop_active_session():
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    spark_or_skip()
    _stop_active_session()          # one SparkContext per JVM: this module's are the cluster's
    c = Cluster(str(tmp_path_factory.mktemp("cluster")))
    try:
        c.start_master()
        yield c
    finally:
        _stop_active_session()
        c.stop()


def _conf(python=sys.executable, pythonpath=os.environ.get("PYTHONPATH", "")) -> list[str]:
    """The executors' Python and import path, the driver on the loopback interface."""
    conf = {**SETTINGS, "spark.pyspark.python": python, "spark.executorEnv.PYTHONPATH": pythonpath,
            "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.executor.memory": "512m", "spark.cores.max": "2"}
    return [x for k, v in conf.items() for x in ("--conf", f"{k}={v}")]


def _cli(args):
    from typer.testing import CliRunner

    from kafkadump.cli import app

    return CliRunner().invoke(app, args)


def test_no_worker_is_one_line_not_a_hang(cluster, fleet):
    res = _cli(["spark", "triage", fleet["root"], "--master", cluster.url, "--executor-wait", "3", *_conf()])
    assert res.exit_code == 2, res.output
    [line] = res.output.strip().splitlines()
    assert line.startswith(f"kafkadump: the cluster at {cluster.url} gave no executor in 3 s: ")
    assert f"start a worker (start-worker.sh {cluster.url})" in line and "--executor-wait" in line


def _timing_free(report: dict) -> dict:
    from kafkadump.objects.logdir_objects import TIMING_FIELDS

    return {k: v for k, v in report.items() if k not in TIMING_FIELDS}


def test_triage_on_the_cluster_equals_the_cli(cluster, fleet):
    cluster.start_worker()
    res = _cli(["spark", "triage", fleet["root"], "--json", "--master", cluster.url, "--executor-wait", "180",
                *_conf()])
    assert res.exit_code == 2, res.output      # a file of the fleet cannot be read: exit 2, as triage's
    from pyspark.sql import SparkSession

    from kafkadump.spark.session import executor_count

    spark = SparkSession.getActiveSession()
    assert spark is not None and spark.sparkContext.master == cluster.url and executor_count(spark) >= 1
    got = json.loads(res.stdout)
    cli = subprocess.run([sys.executable, "-m", "kafkadump", "triage", "--json", fleet["root"]], capture_output=True,
                         text=True)
    assert cli.returncode == 1, cli.stderr
    want = json.loads(cli.stdout)
    assert got["totals"]["files"] == 8 and got["verdict"] == "errors"
    assert _timing_free(got) == _timing_free(want)


def test_scan_on_the_cluster_equals_the_cli(cluster, fleet, tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "records.parquet"
    res = _cli(["spark", "scan", fleet["root"], "--level", "records", "-o", str(out), "--json", "--master",
                cluster.url, "--executor-wait", "180", "--split-bytes", str(1 << 20), *_conf()])
    assert res.exit_code == 2, res.output       # the dangling symlink: an error row, the rest written
    stats = json.loads(res.stdout.strip().splitlines()[-1])
    rows = pq.read_table(str(out)).to_pylist()
    want = [from_cli("records", d) for d in cli_lines("records", fleet["files"], "--decode", "none")]
    got = [from_row("records", r) for r in rows if r["type"] != "error"]
    assert stats["rows"] == len(rows) == len(want) + 1 and stats["unreadable"] == 1
    assert_same(got, want, "records written on the cluster")


def test_executor_without_kafkadump_is_one_line(cluster, fleet, tmp_path):
    """An executor Python that cannot import kafkadump (simulated: its import path starts with a
    kafkadump that is not there), as on a node where nobody installed it."""
    shadow = tmp_path / "shadow" / "kafkadump"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'kafkadump'\", name='kafkadump')\n")
    _stop_active_session()        # a new application: the executors' environment is fixed at its start
    res = _cli(["spark", "triage", fleet["root"], "--master", cluster.url, "--executor-wait", "180",
                *_conf(pythonpath=str(tmp_path / "shadow"))])
    assert res.exit_code == 2, res.output
    [line] = res.output.strip().splitlines()
    assert line.startswith("kafkadump: Spark: the executors' Python has no kafkadump: pip install 'kafkadump[spark]' "
                           "in the Python the executors run")
    assert "spark.pyspark.python" in line and "Traceback" not in res.output
    _stop_active_session()
