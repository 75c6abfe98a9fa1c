#!/usr/bin/env python3
"""``kafkadump spark scan`` in local mode against the single-process CLI, on the same files.

Generates a log dir of many segments (``--partitions`` x ``--segments`` files of
``--segment-size``, small uncompressed records as ``bench.py``'s records file:
150 records a batch, 10-byte keys, 40-90 byte values), then times:

* SparkSession start-up: ``build_session("local[2]")`` in a fresh process
  (JVM start, SparkContext, the ``kafkadump`` format registered), and the first
  query's extra cost (Python workers forked, JIT cold) on a tiny file;
* ``kafkadump records --json`` over all the files, to /dev/null (one process,
  one core): records/s;
* ``kafkadump spark scan --level records`` to Parquet, ``--master local[2]``, as a
  command (wall time including the session start) and the scan alone (the same
  job in a warm session): records/s;
* the same at ``--level batches`` (Parquet) against ``kafkadump batches --json``.

Nothing is asserted; the numbers are printed and written to
``bench/out/spark-results.json``.  The machine's load average is printed: other
processes on the 2 cores skew every number here.

    .venv/bin/python bench/spark_bench.py                        # 16 x 16 MiB, ~3 minutes
    .venv/bin/python bench/spark_bench.py --segment-size 64M --out /tmp/sbench
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from make_segment import make, parse_size  # noqa: E402

PY = sys.executable


def generate(root: str, partitions: int, segments: int, size: int) -> dict:
    """``partitions`` topic-partition dirs of ``segments`` files each (one file built, the
    others hard-linked copies: same bytes, distinct files; offsets repeat across
    segments, which the scan does not care about)."""
    os.makedirs(root, exist_ok=True)
    proto = os.path.join(root, "proto.bin")
    meta_path = proto + ".json"
    want = {"size": size, "batch_bytes": 16 << 10, "record_bytes": "40-90", "key_bytes": 10,
            "records_per_batch": 150, "headers": 0, "codec": "none", "payload": "random"}
    meta = None
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("params") != want:
            meta = None
    if meta is None:
        meta = make(proto, size=size, record_bytes="40-90", key_bytes=10, records_per_batch=150, quiet=True)
    files = []
    for p in range(partitions):
        d = os.path.join(root, "logs", f"bench-{p}")
        os.makedirs(d, exist_ok=True)
        for s in range(segments):
            f = os.path.join(d, f"{s * meta['records']:020d}.log")
            if not os.path.exists(f):
                os.link(proto, f)
            files.append(f)
    return {"files": files, "records": meta["records"] * len(files), "bytes": meta["bytes"] * len(files),
            "batches": meta["batches"] * len(files), "logdir": os.path.join(root, "logs")}


def warm(files) -> None:
    """Read the files through so every run starts with them in the page cache."""
    for f in files:
        with open(f, "rb") as fh:
            while fh.read(16 << 20):
                pass


def _tree_cpu(root: int, seen: dict) -> None:
    """Record user+system ticks of ``root`` and all its descendants (max seen per pid)."""
    parent = {}
    ticks = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        rest = st[st.rindex(")") + 2:].split()
        parent[int(d)] = int(rest[1])
        ticks[int(d)] = int(rest[11]) + int(rest[12])
    for pid, t in ticks.items():
        p = pid
        while p > 1 and p != root:
            p = parent.get(p, 0)
        if p == root:
            seen[pid] = max(seen.get(pid, 0), t)


def timed(cmd, env=None, stdout=subprocess.DEVNULL, stdin_text=None) -> tuple[float, int, float]:
    """(wall seconds, exit code, cpu seconds of the process tree: the JVM and Spark's Python
    workers too, polled from /proc every 0.2 s, so a process's last 0.2 s may be missed)"""
    import threading

    seen: dict = {}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, env=env)
    done = threading.Event()

    def poll():
        while not done.is_set():
            _tree_cpu(proc.pid, seen)
            done.wait(0.2)

    th = threading.Thread(target=poll, daemon=True)
    th.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - t0
    done.set()
    th.join()
    cpu = sum(seen.values()) / os.sysconf("SC_CLK_TCK")
    if proc.returncode not in (0, 1):
        sys.stderr.write(err.decode(errors="replace")[-2000:])
        raise SystemExit(f"failed: {' '.join(cmd[:4])} ... exit {proc.returncode}")
    return wall, proc.returncode, cpu


STARTUP = r"""
import json, sys, time
t0 = time.perf_counter()
from kafkadump.spark import build_session, read
s = build_session("local[2]", {"spark.ui.showConsoleProgress": "false"})
t1 = time.perf_counter()
read(s, [sys.argv[1]], "batches").count()
t2 = time.perf_counter()
read(s, [sys.argv[1]], "batches").count()
t3 = time.perf_counter()
print(json.dumps({"session": t1 - t0, "first_query": t2 - t1, "second_query": t3 - t2}))
s.stop()
"""

WARM_SCAN = r"""
import json, sys, time
from kafkadump.spark import build_session, jobs
s = build_session("local[2]", {"spark.ui.showConsoleProgress": "false"})
jobs.read(s, [sys.argv[1]], "batches").count()          # warm the workers and the JIT
out = []
for level, dest in (("records", sys.argv[2]), ("batches", sys.argv[3])):
    t0 = time.perf_counter()
    st = jobs.scan(s, [sys.argv[4]], level, dest, mode="overwrite")
    out.append({"level": level, "seconds": time.perf_counter() - t0, "rows": st["rows"]})
print(json.dumps(out))
s.stop()
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--segments", type=int, default=2, help="segments per partition")
    ap.add_argument("--segment-size", type=parse_size, default=parse_size("16M"))
    ap.add_argument("--out", help="keep the files here (reused when the parameters match)")
    ap.add_argument("--results", default=os.path.join(HERE, "out", "spark-results.json"))
    a = ap.parse_args(argv)
    tmp = None
    root = a.out
    if root is None:
        tmp = root = tempfile.mkdtemp(prefix="kafkadump-spark-bench-")
    try:
        data = generate(root, a.partitions, a.segments, a.segment_size)
        files = data["files"]
        print(f"{len(files)} segments, {data['bytes']:,} bytes, {data['batches']:,} batches, "
              f"{data['records']:,} records (150 a batch, ~84 bytes each on the wire)")
        tiny = os.path.join(root, "tiny", "t-0")
        os.makedirs(tiny, exist_ok=True)
        with open(files[0], "rb") as f, open(os.path.join(tiny, "00000000000000000000.log"), "wb") as g:
            g.write(f.read(64 << 10))
        res = {"files": len(files), "bytes": data["bytes"], "records": data["records"],
               "batches": data["batches"], "load_before": os.getloadavg()}

        # 1. start-up
        p = subprocess.run([PY, "-c", STARTUP, tiny], capture_output=True, text=True)
        if p.returncode:
            sys.stderr.write(p.stderr[-3000:])
            return 2
        res["startup"] = json.loads(p.stdout.strip().splitlines()[-1])
        st = res["startup"]
        print(f"SparkSession start (local[2]): {st['session']:.1f} s; first query on a 64 KiB file "
              f"{st['first_query']:.1f} s, second {st['second_query']:.1f} s")

        # 2. the single-process CLI
        warm(files)
        w, _, cpu = timed([PY, "-m", "kafkadump", "records", "--json", "--decode", "none", *files])
        res["cli_records"] = {"seconds": w, "cpu": cpu, "records_per_s": data["records"] / w}
        print(f"kafkadump records --json (1 process):      {w:7.1f} s  {data['records'] / w:>12,.0f} records/s  "
              f"cpu {cpu:.1f} s")
        warm(files)
        w, _, cpu = timed([PY, "-m", "kafkadump", "batches", "--json", *files])
        res["cli_batches"] = {"seconds": w, "cpu": cpu, "records_per_s": data["records"] / w}
        print(f"kafkadump batches --json (1 process):      {w:7.1f} s  {data['records'] / w:>12,.0f} records/s  "
              f"cpu {cpu:.1f} s")

        # 3. spark scan as a command (cold: includes the session start)
        out = os.path.join(root, "scan-records.parquet")
        shutil.rmtree(out, ignore_errors=True)
        warm(files)
        w, _, cpu = timed([PY, "-m", "kafkadump", "spark", "scan", data["logdir"], "--level", "records",
                           "--output", out, "--master", "local[2]", "--mode", "overwrite"])
        res["spark_scan_command"] = {"seconds": w, "cpu": cpu, "records_per_s": data["records"] / w}
        print(f"kafkadump spark scan --level records (command, local[2]): {w:7.1f} s  "
              f"{data['records'] / w:>12,.0f} records/s  cpu {cpu:.1f} s (JVM + Python workers)")

        # 4. the scans alone, in a warm session
        warm(files)
        p = subprocess.run([PY, "-c", WARM_SCAN, tiny, out, os.path.join(root, "scan-batches.parquet"),
                            data["logdir"]], capture_output=True, text=True)
        if p.returncode:
            sys.stderr.write(p.stderr[-3000:])
            return 2
        for r in json.loads(p.stdout.strip().splitlines()[-1]):
            key = f"spark_scan_{r['level']}_warm"
            res[key] = {"seconds": r["seconds"], "rows": r["rows"], "records_per_s": data["records"] / r["seconds"]}
            print(f"spark scan --level {r['level']:<8} (warm session, local[2]):  {r['seconds']:7.1f} s  "
                  f"{data['records'] / r['seconds']:>12,.0f} records/s  ({r['rows']:,} rows)")
        res["ratio_records_warm_vs_cli"] = res["spark_scan_records_warm"]["records_per_s"] / \
            res["cli_records"]["records_per_s"]
        res["ratio_records_command_vs_cli"] = res["spark_scan_command"]["records_per_s"] / \
            res["cli_records"]["records_per_s"]
        res["load_after"] = os.getloadavg()
        print(f"ratio spark (warm) / CLI, records: {res['ratio_records_warm_vs_cli']:.2f}; "
              f"command incl. start-up: {res['ratio_records_command_vs_cli']:.2f}")
        print(f"load average before {res['load_before'][0]:.2f}, after {res['load_after'][0]:.2f} "
              f"(2 cores: above ~0.5 before, the numbers are skewed by other processes)")
        os.makedirs(os.path.dirname(a.results), exist_ok=True)
        with open(a.results, "w") as f:
            json.dump(res, f, indent=1)
        print(f"results: {a.results}")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
