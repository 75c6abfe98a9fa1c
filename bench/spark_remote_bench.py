#!/usr/bin/env python3
"""Remote files (s3a://, hdfs://) against local ones: Spark's CPU per row on the same records.

Generates ``--partitions`` segments of ``--segment-size`` (``make_segment``: 150 records a batch,
10-byte keys, 40-90 byte values, uncompressed; the ``spark_bench`` data), uploads them to an S3 API
(moto in server mode) and to HDFS (Hadoop's mini cluster), both on 127.0.0.1 and started by
``tests/spark_remote.py`` (jars from Maven Central on first use, into the per-user cache), then in one
``local[N]`` session (``hadoop-aws`` on its classpath) reads the same records at ``level=records``
into Spark's ``noop`` sink, round by round, interleaved:

* ``local``: the plain paths (the data source's local path: the tasks map the files);
* ``file:``: the same files as ``file:`` URIs through Spark's Hadoop FileSystem
  (``through_hadoop=True``: the byte path remote files take, without the network);
* ``s3a``, ``hdfs``: the uploaded copies.

CPU seconds are those of this process tree (the driver's Python, the JVM with the S3 and HDFS clients,
Spark's Python workers), read from ``/proc`` around each query (``spark_bench.tree_cpu``); the servers'
own CPU (moto, the namenode and datanode) is not the reader's and is not counted.  The first query of
each kind warms the JIT and is not counted.  Printed: ns per row (median of the rounds, and the least),
the ratios to ``local`` and to ``file:`` (the issue's target: remote within 1.2x of local), and the load
average.  Nothing is asserted.

    .venv/bin/python bench/spark_remote_bench.py                    # 2 x 32 MiB, 3 rounds
    .venv/bin/python bench/spark_remote_bench.py --segment-size 64M --rounds 5 --master 'local[2]'
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from make_segment import make, parse_size  # noqa: E402
from spark_bench import PROCESSES, tree_cpu  # noqa: E402
from spark_remote import MiniHdfs, MotoS3  # noqa: E402

BUCKET = "bench"


def generate(root: str, partitions: int, size: int) -> tuple[list[str], int]:
    """``partitions`` partition dirs of one segment each (distinct files of the same bytes); the files and
    the records in all."""
    os.makedirs(root, exist_ok=True)
    proto = os.path.join(root, "proto.bin")
    meta = make(proto, size=size, record_bytes="40-90", key_bytes=10, records_per_batch=150, quiet=True)
    files = []
    for p in range(partitions):
        d = os.path.join(root, "logs", f"bench-{p}")
        os.makedirs(d, exist_ok=True)
        f = os.path.join(d, f"{0:020d}.log")
        os.link(proto, f)
        files.append(f)
    return files, meta["records"] * partitions


def upload(files: list[str], root: str, s3: MotoS3, hdfs: MiniHdfs) -> None:
    s3.create_bucket(BUCKET)
    for f in files:
        rel = os.path.relpath(f, root)
        with open(f, "rb") as fh:
            data = fh.read()
        s3.put(BUCKET, rel, data)
        hdfs.put("/" + rel, data)


def query(spark, paths: list[str], through_hadoop: bool) -> float:
    """CPU seconds of the process tree for one read into ``noop``, its listing and planning included."""
    from kafkadump.spark import read

    me = os.getpid()
    c0 = tree_cpu(me)
    read(spark, paths, "records", through_hadoop=through_hadoop).write.format("noop").mode("overwrite").save()
    c1 = tree_cpu(me)
    return sum(c1[k] - c0[k] for k in PROCESSES)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--segment-size", default="32M")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--master", default="local[1]")
    ap.add_argument("--work", default=None, help="where the data and the servers' files go (default: a temp dir)")
    a = ap.parse_args(argv)
    work = a.work or tempfile.mkdtemp(prefix="kafkadump-remote-bench-")
    files, records = generate(os.path.join(work, "data"), a.partitions, parse_size(a.segment_size))
    s3 = MotoS3(os.path.join(work, "s3"))
    hdfs = MiniHdfs(os.path.join(work, "hdfs"))
    try:
        s3.start()
        hdfs.start()
        upload(files, os.path.join(work, "data", "logs"), s3, hdfs)
        return measure(a, files, records, s3, hdfs)
    finally:
        hdfs.stop()
        s3.stop()


def measure(a, files: list[str], records: int, s3: MotoS3, hdfs: MiniHdfs) -> int:
    from kafkadump.spark.session import build

    spark = build(a.master, {**s3.conf(), **hdfs.conf(), "spark.ui.enabled": "false",
                             "spark.driver.memory": "1g"})
    root = os.path.join(os.path.dirname(files[0]), "..")
    rel = [os.path.relpath(f, root) for f in files]
    kinds = {"local": (files, False), "file:": (["file:" + f for f in files], True),
             "s3a": ([f"s3a://{BUCKET}/{r}" for r in rel], True),
             "hdfs": ([f"{hdfs.url}/{r}" for r in rel], True)}
    for paths, through in kinds.values():      # warm: the JIT, the connections, the Python workers
        query(spark, paths, through)
    cpu: dict[str, list[float]] = {k: [] for k in kinds}
    for r in range(a.rounds):
        order = list(kinds) if r % 2 == 0 else list(reversed(kinds))
        for k in order:
            cpu[k].append(query(spark, *kinds[k]))
    rows = spark.read.format("kafkadump").option("level", "records").load(files).count()
    print(f"{len(files)} segments of {a.segment_size}, {records:,} records ({rows:,} rows), {a.master}, "
          f"{a.rounds} rounds; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    med = {k: statistics.median(v) for k, v in cpu.items()}
    low = {k: min(v) for k, v in cpu.items()}
    print(f"{'':8} {'ns/row (median)':>16} {'ns/row (least)':>15} {'/ local':>8} {'/ file:':>8}")
    for k in kinds:
        print(f"{k:8} {med[k] / rows * 1e9:16,.0f} {low[k] / rows * 1e9:15,.0f} "
              f"{med[k] / med['local']:8.2f} {med[k] / med['file:']:8.2f}")
    print(f"(remote target: at most 1.2x local per row; measured {time.strftime('%Y-%m-%d %H:%M')})")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
