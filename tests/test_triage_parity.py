"""``kafkadump triage`` and ``kafkadump spark triage`` give the same report.

Both fold the same per-file scans with the same code; here both commands run
on the same log dirs -- the Spark tests' fleet (``tests/spark_fleet.py``), a
broker log dir exercising every cross-check (``tests/logdir_helpers.py``)
and real log dirs of the shared corpus -- and their ``--json`` reports must be
equal, timing fields aside (every partition object, every file object, the
totals and the verdict), as must their exit statuses and their tables.

One local[2] SparkSession for the module (loopback only, no UI); skips with
the reason when pyspark, pyarrow or Java is missing.
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import CORPUS
from logdir_helpers import make_logdir
from spark_fleet import make_fleet
from typer.testing import CliRunner

REAL = CORPUS / "real" / "segments"
# real log dirs of several Kafka versions: internal topics, checkpoints, snapshots, many partitions
REAL_DIRS = ("mscaldas2012+kafka-connect-spooldir", "SharaWeil+kafka-0.11.0", "codecrafters-io+kafka-tester",
             "tuyen-nnt+kafka_2.13-3.0.0", "PhilippDuck+rotorwind", "DonaldY+kafka-2.7.1")


@pytest.fixture(scope="module")
def spark(spark_session):
    """The shared local[2] session (conftest): ``spark triage`` finds it running."""
    return spark_session


def _invoke(args):
    from kafkadump.cli import app

    return CliRunner().invoke(app, args)


def both(path: str, *extra: str):
    """``(cli result, spark result)`` of ``triage PATH`` and ``spark triage PATH`` with ``extra`` options."""
    cli = _invoke(["triage", *extra, path])
    sp = _invoke(["spark", "triage", "--master", "local[2]", *extra, path])
    return cli, sp


def without_timing(report: dict) -> dict:
    from kafkadump.objects.logdir_objects import without_timing

    return without_timing(report)


def assert_same_triage(path: str, *extra: str) -> dict:
    cli, sp = both(path, "--json", *extra)
    assert cli.exit_code in (0, 1, 2), cli.output   # 2: a file that could not be read (the report still whole)
    assert sp.exit_code == cli.exit_code, (sp.exit_code, cli.exit_code, sp.output[-2000:])
    a, b = json.loads(cli.stdout), json.loads(sp.stdout)
    assert a["partitions"], path
    for pa, pb in zip(a["partitions"], b["partitions"]):
        assert pa == pb, pa["path"]
    assert len(a["partitions"]) == len(b["partitions"])
    assert without_timing(a) == without_timing(b)
    assert set(a) - set(without_timing(a)) == {"startedAt", "elapsedSeconds"}
    return a


def test_fleet_same_report(spark, tmp_path):
    facts = make_fleet(str(tmp_path))
    rep = assert_same_triage(str(tmp_path))
    parts = {(p["topic"], p["partition"]): p for p in rep["partitions"]}
    assert parts[("orders", 0)]["verdict"] == "warnings" and parts[("orders", 1)]["verdict"] == "errors"
    assert parts[("gone", 0)]["unreadableFiles"] == 1 and rep["verdict"] == "errors"
    assert {p["logDir"] for tp, p in parts.items() if tp[0] is not None} == {str(tmp_path)}
    assert rep["totals"]["files"] == len(facts["files"]) + 2      # + the dangling symlink, the checkpoint


def test_logdir_every_cross_check_same_report(spark, tmp_path):
    want = make_logdir(tmp_path / "kafka-logs")
    rep = assert_same_triage(str(tmp_path / "kafka-logs"))
    assert {os.path.basename(p["path"]): p["verdict"] for p in rep["partitions"]} == want
    codes = set(rep["findingCounts"])
    assert codes >= {"crc-mismatch", "index-entry-mismatch", "sequence-gap", "sequence-order",
                     "aborted-transaction", "open-transaction", "leader-epoch-mismatch", "checkpoint-mismatch",
                     "pending-file"}
    healthy = next(p for p in rep["partitions"] if p["path"].endswith("healthy-0"))
    assert (healthy["snapshotsChecked"], healthy["leaderEpochs"], healthy["logEndOffset"]) == (1, [0, 1], 12)


def test_shallow_and_capped_same_report(spark, tmp_path):
    make_logdir(tmp_path / "kafka-logs")
    assert_same_triage(str(tmp_path / "kafka-logs"), "--shallow", "--max-findings", "1")


def test_one_segment_and_clean_exit_0(spark, tmp_path):
    make_logdir(tmp_path)
    # the second segment: its COMMIT closes a transaction of the first, no finding on its own
    rep = assert_same_triage(os.path.join(tmp_path, "healthy-0", "00000000000000000007.log"))
    assert rep["verdict"] == "clean"
    assert [os.path.basename(f["file"]) for f in rep["files"]] == ["00000000000000000007.log",
                                                                    "00000000000000000007.index"]
    # the first alone: its transaction is open at its end (a warning), exit 1 from both
    cli, sp = both(os.path.join(tmp_path, "healthy-0", "00000000000000000000.log"))
    assert cli.exit_code == sp.exit_code == 1 and "open-transaction" in sp.stdout


@pytest.mark.parametrize("repo", REAL_DIRS)
def test_real_log_dirs_same_report(spark, repo):
    path = REAL / repo
    if not path.exists():
        pytest.skip(f"shared corpus not present at {path} (it lives beside the project, not in a clone)")
    rep = assert_same_triage(str(path))
    assert rep["totals"]["segments"] > 0 and rep["totals"]["records"] > 0


def test_one_renderer_draws_both(spark, tmp_path):
    make_fleet(str(tmp_path))
    cli, sp = both(str(tmp_path), "--no-color")
    assert cli.exit_code == sp.exit_code == 2   # an unreadable file: exit 2, as everywhere
    assert cli.stdout == sp.stdout      # no timing in the tables
    assert sp.stdout.splitlines()[-1].startswith("verdict: errors  files: 8  ")
    assert sp.stdout.splitlines()[-1].endswith("unreadable files: 1")
