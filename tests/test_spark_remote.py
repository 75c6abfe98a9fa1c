"""``kafkadump spark scan`` over S3 and HDFS for real, on a standalone cluster, all on 127.0.0.1.

One S3 API (moto in server mode), one HDFS (Hadoop's mini cluster) and one Spark standalone cluster (a
master and two workers of one core each) for the module (:mod:`spark_remote`); the generated fleet's
readable files are uploaded to both stores, and each command runs as a user runs it, a ``kafkadump``
process of its own whose driver JVM has ``hadoop-aws`` on its classpath.  The rows must be the
single-process CLI's (``records --json``), file names aside (the URIs); the failures a user meets are one
line on stderr, exit 2, never a JVM stack.

Marked ``slow`` (``pytest -m slow tests/test_spark_remote.py``; ``.ci/run`` runs it).  The first run
fetches hadoop-aws (with the AWS SDK bundle, ~670 MB) and the HDFS mini cluster from Maven Central into
the per-user cache; skipped only without Java.
"""

from __future__ import annotations

import json
import os

import pytest
from spark_compare import assert_same, cli_lines, from_cli, from_row
from spark_remote import Cluster, MiniHdfs, MotoS3, cluster_conf, conf_args, free_port, kafkadump
from spark_session import spark_or_skip

pytestmark = pytest.mark.slow

BUCKET = "evidence"
LOCAL = {"spark.driver.memory": "512m", "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}


@pytest.fixture(scope="module")
def stores(fleet, tmp_path_factory):
    spark_or_skip()
    work = str(tmp_path_factory.mktemp("remote"))
    started = []
    try:
        s3 = MotoS3(os.path.join(work, "s3"))
        started.append(s3)
        s3.start()
        s3.create_bucket(BUCKET)
        hdfs = MiniHdfs(os.path.join(work, "hdfs"))
        started.append(hdfs)
        hdfs.start()
        cluster = Cluster(os.path.join(work, "cluster"))
        started.append(cluster)
        cluster.start_master()
        for _ in range(2):
            cluster.start_worker(cores=1, memory="768m")
        files = [f for f in fleet["files"] if os.path.isfile(f)]      # the dangling symlink aside
        for f in files:
            rel = os.path.relpath(f, fleet["root"])
            with open(f, "rb") as fh:
                data = fh.read()
            s3.put(BUCKET, "logs/" + rel, data)
            hdfs.put("/logs/" + rel, data)
        s3.put(BUCKET, "notes/readme.txt", b"not a segment: an analyst's notes\n")
        yield {"s3": s3, "hdfs": hdfs, "cluster": cluster, "files": files, "root": fleet["root"],
               "uris": {"s3a": f"s3a://{BUCKET}/logs", "hdfs": f"{hdfs.url}/logs"},
               "conf": {"s3a": s3.conf(), "hdfs": hdfs.conf()}}
    finally:
        for service in reversed(started):
            service.stop()


def _one_line(p, start: str) -> str:
    """The failure of ``p``: exit 2, nothing on stdout, one line on stderr starting with ``start``."""
    assert p.returncode == 2, (p.stdout, p.stderr[-3000:])
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr[-3000:]
    assert lines[0].startswith(start), lines[0]
    assert "Traceback" not in p.stderr and "\tat " not in p.stderr
    return lines[0]


@pytest.mark.parametrize("store", ["s3a", "hdfs"])
def test_scan_on_the_cluster_equals_the_cli(stores, store, tmp_path):
    import pyarrow.parquet as pq

    out = str(tmp_path / "records")
    uri = stores["uris"][store]
    p = kafkadump(["spark", "scan", uri, "-o", out, "--json", "--master", stores["cluster"].url,
                   "--executor-wait", "300", "--split-bytes", str(1 << 20),
                   *conf_args({**cluster_conf(), **stores["conf"][store]})])
    assert p.returncode == 1, p.stderr[-3000:]       # the fleet's damage: rows with error findings
    stats = json.loads(p.stdout)
    rows = pq.read_table(out).to_pylist()
    want = [from_cli("records", {**d, "file": d["file"].replace(stores["root"], uri, 1)})
            for d in cli_lines("records", stores["files"], "--decode", "none")]
    assert stats["rows"] == len(rows) == len(want) > 3000 and stats["unreadable"] == 0
    assert stats["files"] == len(stores["files"])
    assert_same([from_row("records", r) for r in rows], want, f"records read from {store} on the cluster")
    assert {r["file"].split("/logs/")[0] for r in rows} == {uri[:-len("/logs")]}


def test_no_credentials_is_one_line(stores, tmp_path, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    uri = stores["uris"]["s3a"]
    p = kafkadump(["spark", "scan", uri, "-o", str(tmp_path / "o"), "--master", "local[1]",
                   *conf_args({**LOCAL, **stores["s3"].conf(credentials=False)})])
    line = _one_line(p, f"kafkadump: {uri}: no AWS credentials for s3a://: give them with --conf "
                        "spark.hadoop.fs.s3a.access.key=")
    assert "AWS_ACCESS_KEY_ID" in line and not (tmp_path / "o").exists()


def test_bucket_that_does_not_exist_is_one_line(stores, tmp_path):
    uri = "s3a://no-such-bucket/kafka-logs"
    p = kafkadump(["spark", "scan", uri, "-o", str(tmp_path / "o"), "--json", "--master", "local[1]",
                   *conf_args({**LOCAL, **stores["conf"]["s3a"]})])
    line = _one_line(p, "{")
    assert json.loads(line) == {"type": "error", "exitStatus": 2, "message": (
        f"{uri}: the bucket no-such-bucket does not exist (at the endpoint spark.hadoop.fs.s3a.endpoint names, "
        "or AWS's by default): check its name and the endpoint")}


def test_namenode_that_does_not_answer_is_one_line(stores, tmp_path):
    port = free_port()
    uri = f"hdfs://127.0.0.1:{port}/kafka-logs"
    p = kafkadump(["spark", "scan", uri, "-o", str(tmp_path / "o"), "--master", "local[1]",
                   *conf_args({**LOCAL, **stores["conf"]["hdfs"], "spark.hadoop.ipc.client.connect.max.retries": "0"})])
    line = _one_line(p, f"kafkadump: {uri}: nothing answers at ")
    assert f":{port} (the HDFS namenode)" in line


def test_path_that_is_not_a_segment_is_one_line(stores, tmp_path):
    """A file named on the command line that holds text, not batches: what ``kafkadump records`` says of it."""
    uri = f"s3a://{BUCKET}/notes/readme.txt"
    p = kafkadump(["spark", "scan", uri, "-o", str(tmp_path / "o"), "--master", "local[1]",
                   *conf_args({**LOCAL, **stores["conf"]["s3a"]})])
    _one_line(p, f"kafkadump: {uri}: is text, not record batches")
    assert not (tmp_path / "o").exists()


def test_executor_without_kafkadump_is_one_line(stores, tmp_path):
    """The executors' Python cannot import kafkadump (its import path starts with a kafkadump that is not
    there, as on a node where nobody installed it): one line naming the fix, while reading S3."""
    shadow = tmp_path / "shadow" / "kafkadump"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'kafkadump'\", name='kafkadump')\n")
    p = kafkadump(["spark", "scan", stores["uris"]["s3a"], "-o", str(tmp_path / "o"), "--master",
                   stores["cluster"].url, "--executor-wait", "300",
                   *conf_args({**cluster_conf(pythonpath=str(tmp_path / "shadow")), **stores["conf"]["s3a"],
                               "spark.task.maxFailures": "1"})])
    line = _one_line(p, "kafkadump: Spark: the executors' Python has no kafkadump: pip install 'kafkadump[spark]' "
                        "in the Python the executors run")
    assert "spark.pyspark.python" in line


def test_triage_of_a_uri_is_one_line():
    """``spark triage`` reads local paths only (its scans open the files): a URI is refused before Spark starts."""
    spark_or_skip()
    uri = f"s3a://{BUCKET}/logs"
    p = kafkadump(["spark", "triage", uri])
    _one_line(p, f"kafkadump: {uri}: spark triage reads local paths (a mount every executor sees, at the same "
                 "path)")
