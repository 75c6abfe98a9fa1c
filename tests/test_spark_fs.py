"""Inputs read through Spark's own Hadoop FileSystem (``kafkadump.spark.hadoop_files``).

Tested here with Hadoop's local filesystem (``file:`` URIs, no server): the
tasks read byte ranges of each file through kafkadump's ``KafkaSegmentInputFormat``
(compiled from its Java source on first use; the JVM opens the files with the
session's Hadoop configuration), cut at batch boundaries, and the rows and
findings must be the single-process CLI's.  Without javac, whole files are read
by Spark's ``binaryFile`` source (the fallback is tested too).  Not tested here
(no server on this machine): real HDFS, S3 (``s3a://`` with hadoop-aws) and GCS
(``gs://`` with gcs-connector); their errors when the connector is missing are.
"""

from __future__ import annotations

import json
import os

import pytest
from builders import simple_batch
from conftest import need_corpus
from spark_compare import CliRun, assert_same, from_cli, from_row
from spark_fleet import make_fleet
from spark_session import shared_session

SPLIT = 64 << 10      # small: the fleet's 2.5 MB segment becomes many tasks
CHUNK = 16 << 10      # several chunks per task


def _segment(path: str, flip: int | None = None, repeat_after: int | None = None, garbage_at: int | None = None,
             n: int = 400) -> dict:
    """A segment of ``n`` batches of 3 records (~1 KiB each), made by the tests' own encoder; optional
    damage: batch ``flip``'s CRC made wrong, batch 10 written again after batch ``repeat_after``
    (offset-order), 30 garbage bytes before batch ``garbage_at``.  Its batch positions."""
    chunks, positions, pos = [], [], 0
    for i in range(n):
        data = simple_batch(i * 3, 3, value_size=300).data
        if i == flip:
            data = data[:-1] + bytes([data[-1] ^ 0x01])
        if i == garbage_at:
            chunks.append(bytes(range(200, 230)))
            pos += 30
        chunks.append(data)
        positions.append(pos)
        pos += len(data)
        if i == repeat_after:
            again = simple_batch(30, 3, value_size=300).data
            chunks.append(again)
            positions.append(pos)
            pos += len(again)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"".join(chunks))
    return {"path": path, "positions": positions, "size": pos}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fsfleet")
    facts = make_fleet(str(root))
    facts["root"] = str(root)
    # every readable partition (the dangling symlink of gone-0 aside: Hadoop cannot open it either)
    facts["dirs"] = [os.path.join(str(root), d) for d in ("orders-0", "orders-1", "legacy-0", "broken-0", "misc")]
    facts["clean"] = _segment(os.path.join(str(root), "clean-0", "00000000000000000000.log"))
    facts["hurt"] = _segment(os.path.join(str(root), "hurt-0", "00000000000000000000.log"), flip=149,
                             repeat_after=150, garbage_at=300)
    return facts


@pytest.fixture(scope="module")
def cli(fleet):
    mine = [fleet["clean"]["path"], fleet["hurt"]["path"]]
    return {"batches": CliRun("batches", fleet["files"]),
            "records": CliRun("records", fleet["files"], "--decode", "none"),
            "mine": CliRun("batches", mine)}


@pytest.fixture(scope="module")
def spark(cli):
    return shared_session()


@pytest.fixture(scope="module")
def jar(spark):
    from kafkadump.spark import jvm

    if jvm.find_javac() is None and not os.path.isfile(jvm.jar_path()):
        pytest.skip("no javac here: KafkaSegmentInputFormat cannot be built (the fallback is tested below)")
    assert jvm.load(spark)
    return jvm.jar_path()


def _uri(path: str) -> str:
    return "file://" + path


@pytest.mark.parametrize("level", ["batches", "records"])
def test_file_uris_read_through_hadoop_equal_cli(spark, jar, fleet, cli, level):
    from kafkadump.spark import read
    from kafkadump.spark.hadoop_files import planned_chunks

    uris = [_uri(d) for d in fleet["dirs"]]
    df = read(spark, uris, level, through_hadoop=True, split_bytes=SPLIT)
    plan = df._jdf.queryExecution().executedPlan().toString()
    # the JVM read the byte ranges (KafkaSegmentInputFormat's chunks), the tasks decoded them
    assert plan.startswith("MapInArrow kafkadump_decode(path") and "resume" in plan and "binaryFile" not in plan
    tasks = planned_chunks(spark, sorted(_uri(f) for f in fleet["files"] if not f.startswith(
        os.path.join(fleet["root"], "gone-0"))), SPLIT)
    assert df.rdd.getNumPartitions() == len(tasks) > fleet["big_size"] * 0.5 // SPLIT
    rows = df.toArrow().to_pylist()
    assert not [r for r in rows if r["type"] == "error"]
    assert {r["file"] for r in rows} == set(fleet["files"])          # shown as plain paths
    by_file = {r["file"]: (r["topic"], r["partition"], r["logDir"]) for r in rows}
    assert by_file[fleet["big_file"]] == ("orders", 1, fleet["root"])
    got = [from_row(level, r) for r in rows]
    want = [from_cli(level, d) for d in cli[level].lines()]
    assert len(want) > 1200
    assert_same(got, want, f"{level} through Hadoop")
    _timestamps_are_the_epoch_ms(rows)


def _timestamps_are_the_epoch_ms(rows):
    """``timestamp`` (TimestampType) is the instant ``timestampMs`` names, as the data source makes it."""
    stamped = [r for r in rows if r.get("timestampMs") is not None]
    assert stamped or all(r["type"] != "record" for r in rows)
    for r in stamped:
        assert round(r["timestamp"].timestamp() * 1000) == r["timestampMs"]


def _batch_lines(cli, path):
    return [d for d in cli["mine"].lines() if d["file"] == path]


def test_large_segment_cut_at_batch_boundaries(spark, jar, fleet, cli):
    """A 400 KiB segment with a 64 KiB split target: several tasks, every cut at a batch of the CLI's walk,
    each chunk read from the CRC-valid batch before it; the chunks tile the file."""
    from kafkadump.spark.hadoop_files import planned_chunks

    seg = fleet["clean"]
    tasks = planned_chunks(spark, [_uri(seg["path"])], SPLIT, chunk_bytes=CHUNK)
    chunks = [c for t in tasks for c in t]
    # as a local file is cut: task k starts at the first cut at or after k * 64 KiB
    assert len(tasks) == -(-seg["size"] // SPLIT) == 7
    assert [t[0][2] // SPLIT for t in tasks] == list(range(7))
    assert len(chunks) == 25                                   # about 16 KiB each
    starts = [c[2] for c in chunks]
    assert all(CHUNK <= stop - start < CHUNK + 1100 for _, _, start, stop in chunks[:-1])  # batches of ~1 KiB
    assert starts[0] == 0 and [c[3] for c in chunks] == [*starts[1:], seg["size"]]
    lines = _batch_lines(cli, seg["path"])
    assert [d["position"] for d in lines] == seg["positions"]
    before = {d["position"] + d["size"]: d for d in lines}
    for path, resume, start, _ in chunks[1:]:
        assert path == "file:" + seg["path"]
        assert start in seg["positions"]
        assert resume == before[start]["position"] and before[start]["crcValid"]


def test_another_python_thread_finds_the_class(spark, jar, fleet):
    """py4j looks classes up through its JVM thread's context class loader, which ADD JAR sets for one
    thread: a read from another Python thread (another pinned JVM thread) still plans."""
    import threading

    from kafkadump.spark.hadoop_files import planned_chunks

    got = []
    t = threading.Thread(target=lambda: got.append(planned_chunks(spark, [_uri(fleet["clean"]["path"])], SPLIT)))
    t.start()
    t.join(120)
    assert len(got) == 1 and len(got[0]) == 7


def test_tasks_read_byte_ranges(spark, jar, fleet):
    """What each task is handed: its chunks' byte ranges (the batch before each cut included), never
    the whole file, one Spark partition per planned task."""
    from kafkadump.spark.hadoop_files import chunk_frame, planned_chunks

    seg = fleet["clean"]
    uri = _uri(seg["path"])
    tasks = planned_chunks(spark, [uri], SPLIT, chunk_bytes=CHUNK)
    df = chunk_frame(spark, [uri], SPLIT, chunk_bytes=CHUNK)
    got = sorted(tuple(r) for r in df.selectExpr("spark_partition_id()", "resume", "start", "length(content)")
                 .collect())
    want = sorted((i, resume, start, stop - resume) for i, t in enumerate(tasks) for _, resume, start, stop in t)
    assert got == want
    assert max(n for *_, n in got) < 2 * CHUNK < seg["size"]
    assert sum(n for *_, n in got) < seg["size"] + 24 * 1100    # each cut re-reads one batch of ~1 KiB


@pytest.mark.parametrize("chunk", [1, CHUNK])
def test_damaged_segment_same_findings(spark, jar, fleet, cli, chunk):
    """Damage through the byte ranges: a CRC-failed batch (no cut after it), a batch repeated out of order
    (offset-order, its state carried across a cut) and garbage (no cut after it: the rest is one chunk).
    ``chunk`` 1: a cut after every CRC-valid batch the header walk steps over."""
    from kafkadump.spark.hadoop_files import planned_chunks, read_through_hadoop
    from kafkadump.spark.tasks import options_for

    seg = fleet["hurt"]
    df = read_through_hadoop(spark, [(seg["path"], seg["size"])], "batches", options_for(level="batches"), None,
                             SPLIT, chunk_bytes=chunk)
    rows = df.toArrow().to_pylist()
    lines = _batch_lines(cli, seg["path"])
    assert_same([from_row("batches", r) for r in rows], [from_cli("batches", d) for d in lines], "damaged")
    found = sorted((f["offset"], f["code"]) for d in lines for f in d["findings"])
    assert [c for _, c in found] == ["crc-mismatch", "offset-order", "garbage", "unknown-magic"]
    assert found == sorted((f["offset"], f["code"]) for r in rows for f in r["findings"])
    starts = [c[2] for t in planned_chunks(spark, [_uri(seg["path"])], SPLIT, chunk_bytes=chunk) for c in t]
    p = seg["positions"]
    assert p[150] not in starts                 # the batch before it failed its CRC
    garbage = p[301] - 30                       # positions[301]: batch 300 (one repeated batch before it)
    assert max(starts) < garbage
    if chunk == 1:
        assert p[151] in starts and p[152] in starts     # around the repeated batch
        assert len(starts) > 290


# (field offset in a v2 header, struct format, a damaged value): what the header walk judges
HEADER_DAMAGE = [(8, ">i", 48), (8, ">i", 2000), (8, ">i", 1 << 30), (16, ">b", 3), (16, ">b", 1), (21, ">h", 0x80),
                 (21, ">h", 5), (23, ">i", -2), (57, ">i", -1), (57, ">i", 5000), (17, ">I", 12345)]


def test_header_damage_through_hadoop_equal_cli(spark, jar, tmp_path):
    """Every kind of header damage the InputFormat's header walk judges (a length too small, too large or
    past the end, an unknown or legacy magic, impossible attributes, a negative lastOffsetDelta, a record
    count out of range, a wrong CRC), each in a file of its own at a seeded random batch, cut after every
    CRC-valid batch: the CLI's lines, findings at the same offsets."""
    import random
    import struct

    from kafkadump.spark.hadoop_files import read_through_hadoop
    from kafkadump.spark.tasks import options_for

    rnd = random.Random(13)
    files = []
    for n, (at, fmt, value) in enumerate(HEADER_DAMAGE):
        seg = _segment(str(tmp_path / f"h{n}-0" / "00000000000000000000.log"), n=60)
        data = bytearray(open(seg["path"], "rb").read())
        struct.pack_into(fmt, data, seg["positions"][rnd.randrange(5, 55)] + at, value)
        with open(seg["path"], "wb") as f:
            f.write(data)
        files.append((seg["path"], len(data)))
    run = CliRun("batches", [p for p, _ in files])
    rows = read_through_hadoop(spark, files, "batches", options_for(level="batches"), None, SPLIT, chunk_bytes=1)
    want = [from_cli("batches", d) for d in run.lines()]
    assert sum(1 for d in run.lines() if d["findings"]) >= len(HEADER_DAMAGE)
    assert_same([from_row("batches", r) for r in rows.toArrow().to_pylist()], want, "header damage")


def test_legacy_messages_cut_too(spark, jar, fleet, cli):
    """Legacy message sets (magic 0 and 1, a gzip wrapper; a magic-1 __consumer_offsets segment of the corpus):
    cut after every message whose CRC-32 is right, and the CLI's lines."""
    from kafkadump.spark.hadoop_files import planned_chunks, read_through_hadoop
    from kafkadump.spark.tasks import options_for

    paths = [f for f in fleet["files"] if "/legacy-0/" in f]
    try:
        paths.append(str(need_corpus("real/segments") / "xpxwo100+bullShit/tmp/kafka-logs/__consumer_offsets-40"
                                                         "/00000000000000000000.log"))
    except pytest.skip.Exception:
        pass
    files = [(p, os.path.getsize(p)) for p in paths]
    tasks = planned_chunks(spark, [_uri(p) for p in paths], SPLIT, chunk_bytes=1)
    per_file = {}
    for t in tasks:
        for c in t:
            per_file[c[0]] = per_file.get(c[0], 0) + 1
    assert per_file["file:" + paths[0]] == 4     # two magic-0 messages, one magic-1, the wrapper
    run = CliRun("batches", paths)
    rows = read_through_hadoop(spark, files, "batches", options_for(level="batches"), None, SPLIT, chunk_bytes=1)
    want = [from_cli("batches", d) for d in run.lines()]
    if len(paths) > 1:
        assert per_file["file:" + paths[1]] > 100 and len(want) > 100
    assert_same([from_row("batches", r) for r in rows.toArrow().to_pylist()], want, "legacy")


def test_empty_and_tiny_files_through_hadoop(spark, jar, tmp_path):
    """An empty file, one shorter than a batch header and one batch cut short: the CLI's lines (no cut)."""
    from kafkadump.spark.hadoop_files import planned_chunks, read_through_hadoop
    from kafkadump.spark.tasks import options_for

    one = simple_batch(0, 3, value_size=300).data
    files = []
    for name, data in (("empty", b""), ("tiny", bytes(range(1, 11))), ("cut", one + one[:200])):
        p = tmp_path / f"{name}-0" / "00000000000000000000.log"
        p.parent.mkdir()
        p.write_bytes(data)
        files.append((str(p), len(data)))
    run = CliRun("batches", [p for p, _ in files])
    tasks = planned_chunks(spark, [_uri(p) for p, _ in files], SPLIT, chunk_bytes=1)
    assert [[(c[1], c[2], c[3]) for c in t] for t in tasks] == [[(0, 0, 0)], [(0, 0, 10)], [(0, 0, len(one) + 200)]]
    rows = read_through_hadoop(spark, files, "batches", options_for(level="batches"), None, SPLIT, chunk_bytes=1)
    want = [from_cli("batches", d) for d in run.lines()]
    assert len(want) >= 3
    assert_same([from_row("batches", r) for r in rows.toArrow().to_pylist()], want, "small files")


def test_corpus_through_hadoop_equal_cli(spark, jar):
    """The corpus' two largest segments (3 MB each), cut into 512 KiB tasks, and a magic-1 segment (legacy
    messages: no cut, read whole): the CLI's batches."""
    base = need_corpus("real/segments")
    files = sorted((os.path.join(r, f) for r, _, fs in os.walk(base) for f in fs if f.endswith(".log")),
                   key=os.path.getsize)[-2:]
    files.append(str(base / "xpxwo100+bullShit/tmp/kafka-logs/__consumer_offsets-40/00000000000000000000.log"))
    run = CliRun("batches", files)
    from kafkadump.spark import read

    df = read(spark, [_uri(f) for f in files], "batches", through_hadoop=True, split_bytes=512 << 10)
    assert df.rdd.getNumPartitions() >= sum(os.path.getsize(f) for f in files[:2]) // (512 << 10)
    rows = df.toArrow().to_pylist()
    want = [from_cli("batches", d) for d in run.lines()]
    assert len(want) > 2400 and {r["magic"] for r in rows} == {1, 2}
    assert_same([from_row("batches", r) for r in rows], want, "corpus through Hadoop")


def test_without_javac_whole_files(spark, fleet, cli, tmp_path, monkeypatch, capsys):
    """No javac and no jar in the cache: whole files through Spark's binaryFile source, said once."""
    from kafkadump.spark import jvm, read

    monkeypatch.setenv("KAFKADUMP_JVM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(jvm, "find_javac", lambda: None)
    monkeypatch.setattr(jvm, "_loaded", set())
    monkeypatch.setattr(jvm, "_said", set())
    path = fleet["clean"]["path"]
    df = read(spark, [_uri(path)], "batches", through_hadoop=True, split_bytes=SPLIT)
    again = read(spark, [_uri(path)], "batches", through_hadoop=True)
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "struct<path:string,content:binary>" in plan and "resume" not in plan
    err = capsys.readouterr().err
    assert err == ("kafkadump: no javac here (a JDK's compiler; a JRE has none): hdfs://, s3a://, gs:// files are "
                   "read whole, one task each (Spark's binaryFile source), not in byte ranges\n")
    assert not os.path.exists(tmp_path / "cache" / os.path.basename(os.path.dirname(jvm.jar_path())))
    want = [from_cli("batches", d) for d in _batch_lines(cli, path)]
    assert_same([from_row("batches", r) for r in df.toArrow().to_pylist()], want, "whole file")
    records = read(spark, [_uri(path)], "records", through_hadoop=True).toArrow().to_pylist()
    assert len(records) == 1200
    _timestamps_are_the_epoch_ms(records)
    assert again.count() == len(want)


def test_query_through_hadoop(spark, jar, fleet, cli):
    from kafkadump.spark import read

    path = "file://" + fleet["big_file"]
    rows = read(spark, [path], "records", through_hadoop=True, split_bytes=SPLIT, fromOffset=30,
                toOffset=44).toArrow().to_pylist()
    want = [d["offset"] for d in cli["records"].lines()
            if d["type"] == "record" and d["file"] == fleet["big_file"] and 30 <= d["offset"] <= 44]
    # batch 10 (offsets 30..32) is written twice in this segment: both copies are records
    assert sorted(want) == sorted([*range(30, 45), 30, 31, 32])
    assert sorted(r["offset"] for r in rows if r["type"] == "record") == sorted(want)


@pytest.mark.parametrize("uri", ["s3a://evidence-bucket/kafka-logs", "hdfs://127.0.0.1:1/kafka-logs"])
def test_data_source_uri_pyarrow_cannot_open_is_one_line(uri):
    """``format("kafkadump").load(URI)`` lists in a Python worker (no JVM): through pyarrow.fs, or one line
    naming kafkadump.spark.read, which reads the URI through Spark's Hadoop FileSystem."""
    from kafkadump.spark.splits import ListingError
    from kafkadump.spark.worker_files import list_for_workers

    with pytest.raises(ListingError) as info:
        list_for_workers([uri], ("*.log",))
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"{uri}: the kafkadump data source runs in Spark's Python workers, which cannot use "
                           "Spark's Hadoop FileSystem, and pyarrow.fs cannot open it here (")
    assert text.endswith(f"): read it with kafkadump.spark.read(spark, [{uri!r}], LEVEL) (byte ranges through "
                         "Spark's Hadoop FileSystem)")


def test_data_source_load_of_s3a_says_what_to_use(spark):
    with pytest.raises(Exception) as info:
        spark.read.format("kafkadump").load("s3a://evidence-bucket/kafka-logs").collect()
    assert "kafkadump: s3a://evidence-bucket/kafka-logs: the kafkadump data source runs in Spark's Python " \
           "workers" in str(info.value)
    assert "read it with kafkadump.spark.read(spark, ['s3a://evidence-bucket/kafka-logs'], LEVEL)" in str(info.value)


def test_data_source_lists_local_and_file_uris_as_before(fleet):
    from kafkadump.spark.splits import list_local
    from kafkadump.spark.worker_files import list_for_workers

    misc = os.path.join(fleet["root"], "misc")
    assert list_for_workers([misc, "file://" + fleet["big_file"]], ("*.log",)) == \
        list_local([misc, fleet["big_file"]], ("*.log",))


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


# the first lines of the JVM exceptions hadoop-aws 3.5 and the HDFS client give (tests/test_spark_remote.py
# meets them for real)
NO_CREDENTIALS = ("java.nio.file.AccessDeniedException: s3a://evidence/logs: org.apache.hadoop.fs.s3a.auth."
                  "NoAuthWithAWSException: No AWS Credentials provided by SimpleAWSCredentialsProvider "
                  "EnvironmentVariableCredentialsProvider : software.amazon.awssdk.core.exception.SdkClientException: "
                  "Unable to load credentials from system settings.")
NO_BUCKET = ("org.apache.hadoop.fs.s3a.UnknownStoreException: `s3a://no-such-bucket/logs': getFileStatus on "
             "s3a://no-such-bucket/logs: software.amazon.awssdk.services.s3.model.NoSuchBucketException: The "
             "specified bucket does not exist (Service: S3, Status Code: 404, Request ID: E3SvB6)")
REFUSED = ("java.net.ConnectException: Call From vm/127.0.0.1 to localhost:1 failed on connection exception: "
           "java.net.ConnectException: Connection refused; For more details see: http://wiki.apache.org/hadoop/Conn")


def test_storage_failures_in_one_line():
    from kafkadump.spark.failures import explain, storage_failure

    assert storage_failure("s3a://evidence/logs", NO_CREDENTIALS) == (
        "s3a://evidence/logs: no AWS credentials for s3a://: give them with --conf spark.hadoop.fs.s3a.access.key=... "
        "and spark.hadoop.fs.s3a.secret.key=..., or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment "
        "of the driver and executors")
    assert storage_failure("s3a://no-such-bucket/logs", NO_BUCKET) == (
        "s3a://no-such-bucket/logs: the bucket no-such-bucket does not exist (at the endpoint "
        "spark.hadoop.fs.s3a.endpoint names, or AWS's by default): check its name and the endpoint")
    assert storage_failure("hdfs://127.0.0.1:1/logs", REFUSED) == (
        "hdfs://127.0.0.1:1/logs: nothing answers at localhost:1 (the HDFS namenode): check the address in the URI, "
        "or fs.defaultFS in the Hadoop configuration (HADOOP_CONF_DIR)")
    # a local file that cannot be read is not an AWS matter
    assert storage_failure("file:/x/0.log", "java.nio.file.AccessDeniedException: /x/0.log") is None
    # on an executor (a task failed): the URI is found in Spark's text
    task = RuntimeError("Job aborted due to stage failure: Task 0 in stage 1.0 failed: " + NO_CREDENTIALS + "\n\tat x")
    assert explain(task).startswith("Spark: s3a://evidence/logs: no AWS credentials for s3a://: give them")
