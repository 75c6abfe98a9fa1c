#!/usr/bin/env python3
"""Spark against its own Parquet reader and the single-process CLI: CPU per row, every target.

Generates a log dir of many segments (``--partitions`` x ``--segments`` files of
``--segment-size``, small uncompressed records as ``bench.py``'s records file:
150 records a batch, 10-byte keys, 40-90 byte values) and a fleet of ``--fleet``
small segments of ``--fleet-size`` (default 2,000 of 1 MiB).

The default part, ``scaling``, runs interleaved rounds of the CLI (``records --json
--decode none``, pinned to 1 CPU), a ``local[1]`` session pinned to 1 CPU and a
``local[2]`` session pinned to 2.  In each session, JIT warm (every query run once
before the clock), into Spark's ``noop`` sink: ``kafkadump.spark.read`` of every
column and of three; the anchor, the same rows written once as plain Parquet and read
by Spark's own reader (every column, three); the through-Hadoop path on the same files;
``format("kafkadump")``; in ``local[2]`` also a pushed-down offset range and the fleet
(its listing and planning timed apart).  CPU seconds are those of the whole process
tree (driver, JVM, Spark's Python daemon and workers) from ``/proc``.  Printed: the
figures of each, every target of the issue as PASS or MISS, and the load average.
See bench/README.md.

``--only startup`` and ``--only scan`` add the older parts: SparkSession
start-up, and ``kafkadump spark scan`` to Parquet as a command and in a warm
session, against ``records --json`` / ``batches --json``.

Nothing is asserted; the numbers are printed and written to
``bench/out/spark-results.json``.

    .venv/bin/python bench/spark_bench.py                        # 4 x 32 MiB, 3 rounds, ~5 minutes on 2 quiet cores
    .venv/bin/python bench/spark_bench.py --segment-size 128M --rounds 2 --out /tmp/sbench
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


def _proc_stats() -> dict[int, tuple[str, list[str]]]:
    """pid -> (its name, the fields of /proc/PID/stat after the name) of every process readable now."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        out[int(d)] = (st[st.index("(") + 1:st.rindex(")")], st[st.rindex(")") + 2:].split())
    return out


def _tree_cpu(root: int, seen: dict) -> None:
    """Record user+system ticks of ``root`` and all its descendants (max seen per pid)."""
    parent = {}
    ticks = {}
    for pid, (_, rest) in _proc_stats().items():
        parent[pid] = int(rest[1])
        ticks[pid] = int(rest[11]) + int(rest[12])
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


def _thread_kind(name: str) -> str:
    """A JVM thread's part, by its name (``/proc/PID/task/TID/comm``: 15 characters)."""
    if name.startswith(("C1 Compiler", "C2 Compiler")):
        return "jit"
    if name.startswith(("GC Thread", "G1 ", "VM Thread")):
        return "gc"
    if name.startswith("Executor task"):
        return "tasks"
    return ""


def lanes(root: int) -> dict[str, float]:
    """CPU seconds so far of each lane of work under ``root``: each Spark task thread of the JVM
    (``task TID``) and each Python worker (``worker PID``, its children included).  Two readings
    around a scan give how evenly its tasks shared the work (:func:`spread`), whatever the load."""
    hz = os.sysconf("SC_CLK_TCK")
    stats = _proc_stats()
    parent = {pid: int(rest[1]) for pid, (_, rest) in stats.items()}
    out: dict[str, float] = {}
    for pid, (name, rest) in stats.items():
        p = pid
        while p > 1 and p != root:
            p = parent.get(p, 0)
        if p != root or pid == root:
            continue
        if name == "java":
            for tid, ticks in _jvm_threads(pid, "tasks").items():
                out[f"task {tid}"] = ticks / hz
        elif parent.get(pid) != root:   # a worker (the daemon is the driver's child; workers are its)
            out[f"worker {pid}"] = sum(int(x) for x in rest[11:15]) / hz
    return out


def spread(before: dict[str, float], after: dict[str, float]) -> float:
    """The speed-up the work's split allows on idle cores: all the lanes' CPU over that of the busiest
    task thread plus the busiest worker (1.0: one lane did it all; 2.0: two even halves)."""
    used = {k: after[k] - before.get(k, 0.0) for k in after}
    tasks = [v for k, v in used.items() if k.startswith("task")]
    workers = [v for k, v in used.items() if k.startswith("worker")]
    longest = max(tasks, default=0.0) + max(workers, default=0.0)
    return (sum(tasks) + sum(workers)) / longest if longest else 0.0


def _jvm_threads(pid: int, by_thread: str | None = None) -> dict:
    """Ticks of the live threads of JVM ``pid`` by part (:func:`_thread_kind`; unnamed parts left
    out), or, ``by_thread`` a part, of each of its threads by thread id."""
    out: dict = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                st = f.read()
        except OSError:
            continue
        kind = _thread_kind(st[st.index("(") + 1:st.rindex(")")])
        if kind and by_thread in (None, kind):
            rest = st[st.rindex(")") + 2:].split()
            key = kind if by_thread is None else tid
            out[key] = out.get(key, 0) + int(rest[11]) + int(rest[12])
    return out


# the JVM's CPU split by thread: Spark's task threads (the scan itself: Arrow read, rows made, the
# sink), the JIT compilers (C1, C2), GC and the VM thread, and the rest (scheduler, RPC, listeners,
# and threads already gone)
JVM_PARTS = ("jvm tasks", "jvm jit", "jvm gc", "jvm other")


def tree_cpu(root: int) -> dict[str, float]:
    """CPU seconds so far of process ``root`` and every live descendant (user + system of all
    their threads), plus those of descendants already exited and reaped (their parents'
    cutime + cstime), by kind: ``driver`` (``root``), ``jvm`` (java), ``python workers`` (the
    rest: Spark's Python daemon and its workers); and the JVM's by thread (:data:`JVM_PARTS`).
    Two readings around a piece of work give its cost."""
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    names: dict[int, str] = {}
    for pid, (name, rest) in _proc_stats().items():
        parent[pid] = int(rest[1])
        ticks[pid] = sum(int(x) for x in rest[11:15])   # utime stime cutime cstime
        names[pid] = name
    out = {"driver": 0.0, "jvm": 0.0, "python workers": 0.0, **{k: 0.0 for k in JVM_PARTS}}
    hz = os.sysconf("SC_CLK_TCK")
    for pid, t in ticks.items():
        p = pid
        while p > 1 and p != root:
            p = parent.get(p, 0)
        if p == root:
            kind = "driver" if pid == root else "jvm" if names[pid] == "java" else "python workers"
            out[kind] += t / hz
            if kind == "jvm":
                parts = _jvm_threads(pid)
                for part, n in parts.items():
                    out[f"jvm {part}"] += n / hz
                out["jvm other"] += (t - sum(parts.values())) / hz
    return out


PROCESSES = ("driver", "jvm", "python workers")   # the kinds of tree_cpu that add up to the whole


def cli_cpu(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of a command run to completion, from RUSAGE_CHILDREN."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in (0, 1):
        sys.stderr.write(p.stderr.decode(errors="replace")[-2000:])
        raise SystemExit(f"failed: {' '.join(cmd[:4])} ... exit {p.returncode}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


SCALING = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
from spark_bench import PROCESSES, lanes, spread, tree_cpu
from kafkadump.spark import build_session, read
from kafkadump.spark.splits import list_local, plan
master, tiny, logdir, pq, fleet, lo, hi = sys.argv[2:9]
lo, hi = int(lo), int(hi)
s = build_session(master, {"spark.ui.showConsoleProgress": "false"})
me = os.getpid()

def run(df):
    l0, c0, t0 = lanes(me), tree_cpu(me), time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    c1, l1 = tree_cpu(me), lanes(me)
    by = {k: c1[k] - c0[k] for k in c0}
    return {"seconds": time.perf_counter() - t0, "cpu": sum(by[k] for k in PROCESSES), "by": by,
            "spread": spread(l0, l1)}

# warm: a query of as many tasks as cores (the 64 KiB file in two shares) forks every Python worker
run(s.read.format("kafkadump").option("level", "records").option("splitBytes", "32768").load(tiny))
if not os.path.exists(os.path.join(pq, "_SUCCESS")):   # the anchor: the same rows as plain Parquet
    read(s, [logdir], "records").write.mode("overwrite").parquet(pq)
THREE = ("offset", "key", "timestamp")
queries = {
    "kafkadump": lambda: read(s, [logdir], "records"),
    "parquet": lambda: s.read.parquet(pq),
    "kafkadump 3 columns": lambda: read(s, [logdir], "records", columns=",".join(THREE)),
    "parquet 3 columns": lambda: s.read.parquet(pq).select(*THREE),
    "through hadoop": lambda: read(s, [logdir], "records", through_hadoop=True),
    "format(kafkadump)": lambda: s.read.format("kafkadump").option("level", "records").load(logdir),
}
for q in queries.values():     # JIT warm: each query once before the clock
    run(q())
out = {"tiny": run(read(s, [tiny], "records"))}   # what any query costs (planning, a task)
for name, q in queries.items():
    out[name] = run(q())
if lo >= 0:   # the SQL user's pushdown (format("kafkadump"), a filter on offset)
    df = s.read.format("kafkadump").option("level", "records").load(logdir)
    q = df.filter((df["offset"] >= lo) & (df["offset"] <= hi))
    out["pushed (1 %)"] = run(q)
    out["pushed_rows"] = q.count()
if fleet:
    c0, t0 = tree_cpu(me), time.perf_counter()
    df = read(s, [fleet], "records")              # listing and planning on the driver
    c1 = tree_cpu(me)
    out["planning"] = {"seconds": time.perf_counter() - t0, "cpu": sum(c1[k] - c0[k] for k in PROCESSES)}
    out["fleet"] = run(df)
    out["fleet_tasks"] = len(plan(list_local([fleet])))
print(json.dumps(out))
s.stop()
"""

# the honest 1-core vs 2-core comparison on a 2-core machine: the whole process tree (driver
# Python, JVM, Spark's Python daemon and workers) pinned to that many CPUs
PIN = {"cli": "0", "local[1]": "0", "local[2]": "0,1"}


def pinned(what: str, cmd: list[str]) -> list[str]:
    """``cmd`` run under ``taskset`` on the CPUs of ``PIN[what]`` (as it is when taskset is missing
    or the machine has fewer CPUs)."""
    cpus = PIN[what]
    if shutil.which("taskset") is None or max(int(c) for c in cpus.split(",")) >= (os.cpu_count() or 1):
        return cmd
    return ["taskset", "-c", cpus, *cmd]


def spark_child(master: str, tiny: str, logdir: str, pq: str, fleet: str, lo: int, hi: int) -> dict:
    cmd = pinned(master, [PY, "-c", SCALING, HERE, master, tiny, logdir, pq, fleet, str(lo), str(hi)])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.stderr.write(p.stderr[-3000:])
        raise SystemExit(f"the {master} run failed (exit {p.returncode})")
    return json.loads(p.stdout.strip().splitlines()[-1])


SPARK_QUERIES = ("kafkadump", "parquet", "kafkadump 3 columns", "parquet 3 columns", "through hadoop",
                 "format(kafkadump)", "pushed (1 %)", "fleet")


def scaling(data: dict, fleet: dict | None, tiny: str, pq: str, rounds: int) -> dict:
    """The interleaved CLI / local[1] / local[2] rounds (the order turned round each round).

    Every measurement of every round is kept (``runs``); the summary of each is the median
    over the rounds (``median``) and the least CPU (``best``)."""
    files, n = data["files"], data["records"]
    # offsets repeat across the hard-linked segments: the range selects 1 % of each file's records
    per_file = n // len(files)
    lo, hi = per_file // 2, per_file // 2 + per_file // 100
    runs: dict[str, list[dict]] = {}
    out: dict = {"runs": runs, "loads": [], "planning": [], "fleet_tasks": 0}

    def keep(name: str, wall: float, cpu: float, rows: int, **extra: object) -> None:
        runs.setdefault(name, []).append({"seconds": wall, "cpu": cpu, "rows": rows, **extra})

    for r in range(rounds):
        order = ["cli", "local[1]", "local[2]"] if r % 2 == 0 else ["local[2]", "local[1]", "cli"]
        for what in order:
            warm(files)
            load = os.getloadavg()[0]
            out["loads"].append(load)
            if what == "cli":
                wall, cpu = cli_cpu(pinned("cli", [PY, "-m", "kafkadump", "records", "--json", "--decode", "none",
                                                   *files]))
                keep("cli", wall, cpu, n, load=load)
                if fleet is not None:
                    warm(fleet["files"])
                    wall, cpu = cli_cpu(pinned("cli", [PY, "-m", "kafkadump", "records", "--json", "--decode",
                                                       "none", *fleet["files"]]))
                    keep("cli fleet", wall, cpu, fleet["records"], load=load)
            else:
                two = what == "local[2]"
                res = spark_child(what, tiny, data["logdir"], pq, fleet["logdir"] if fleet and two else "",
                                  lo if two else -1, hi)
                for name in SPARK_QUERIES:
                    if name in res:
                        rows = {"pushed (1 %)": res.get("pushed_rows"),
                                "fleet": fleet["records"] if fleet else 0}.get(name, n)
                        m = res[name]
                        keep(f"{what} {name}", m["seconds"], m["cpu"], rows, by=m["by"], load=load,
                             spread=m["spread"], query_overhead_cpu=res["tiny"]["cpu"])
                if "planning" in res:
                    out["planning"].append(res["planning"])
                    out["fleet_tasks"] = res["fleet_tasks"]
            print(f"  round {r + 1}: {what} done (load average {load:.2f})", flush=True)
    for name, ms in runs.items():
        out.setdefault("median", {})[name] = _summary(ms, pick="median")
        out.setdefault("best", {})[name] = _summary(ms, pick="best")
    return out


def _summary(ms: list[dict], pick: str) -> dict:
    """One figure for the rounds of a measurement: the median of wall and of CPU seconds (each on
    its own), or the run of least CPU."""
    import statistics

    if pick == "best":
        m = dict(min(ms, key=lambda x: x["cpu"]))
    else:
        m = dict(ms[0], seconds=statistics.median(x["seconds"] for x in ms),
                 cpu=statistics.median(x["cpu"] for x in ms))
        if "by" in ms[0]:
            m["by"] = {k: statistics.median(x["by"][k] for x in ms) for k in ms[0]["by"]}
        if "spread" in ms[0]:
            m["spread"] = statistics.median(x["spread"] for x in ms)
    m["rows_per_s"] = m["rows"] / m["seconds"] if m["seconds"] else 0.0
    m["rows_per_cpu_s"] = m["rows"] / m["cpu"] if m["cpu"] else 0.0
    m["ns_per_row"] = 1e9 * m["cpu"] / m["rows"] if m["rows"] else 0.0
    m["cores_busy"] = m["cpu"] / m["seconds"] if m["seconds"] else 0.0
    return m


def _by(by: dict[str, float]) -> str:
    """CPU seconds by process, the JVM's by thread in brackets."""
    jvm = ", ".join(f"{k[4:]} {by[k]:.1f}" for k in JVM_PARTS if k in by)
    return ", ".join(f"{k} {by[k]:.1f}" + (f" ({jvm})" if k == "jvm" and jvm else "") for k in PROCESSES if k in by)


def targets(table: dict, planning: list[dict], fleet_tasks: int) -> list[tuple[str, float, str, bool]]:
    """The issue's targets from one summary: ``(what, measured, target, met)``."""
    out = []

    def ns(name: str) -> float:
        return table[name]["ns_per_row"]

    for master in ("local[1]", "local[2]"):
        for what, goal in (("", 0.8), (" 3 columns", 0.6)):
            kd, pq = f"{master} kafkadump{what}", f"{master} parquet{what}"
            if kd in table and pq in table:
                r = ns(pq) / ns(kd)
                out.append((f"{master}{what or ' every column'}: Parquet / kafkadump CPU per row", r,
                            f">= {goal}", r >= goal))
    if "local[1] kafkadump" in table and "local[2] kafkadump" in table:
        r = ns("local[2] kafkadump") / ns("local[1] kafkadump")
        out.append(("CPU per row local[2] / local[1]", r, "<= 1.1", r <= 1.1))
    for master in ("local[1]", "local[2]"):
        if f"{master} through hadoop" in table:
            r = ns(f"{master} through hadoop") / ns(f"{master} kafkadump")
            out.append((f"{master} through Hadoop / local CPU per row", r, "<= 1.2", r <= 1.2))
    if "local[2] fleet" in table and "cli fleet" in table:
        r = table["local[2] fleet"]["rows_per_cpu_s"] / table["cli fleet"]["rows_per_cpu_s"]
        out.append(("the fleet of small segments: Spark / CLI rows per CPU-s", r, ">= 0.5", r >= 0.5))
        per_row = ns("local[2] kafkadump") * 1e-9
        fixed = (table["local[2] fleet"]["cpu"] - per_row * table["local[2] fleet"]["rows"]) / max(1, fleet_tasks)
        out.append((f"fixed CPU per task, ms (fleet's CPU beyond the large scan's per row, over its "
                    f"{fleet_tasks} tasks)", fixed * 1e3, "< 10", fixed < 0.010))
    if planning:
        t = min(p["seconds"] for p in planning)
        out.append(("planning the fleet (listing + plan, driver), s", t, "< 5", t < 5))
    return out


def print_scaling(res: dict) -> None:
    loads = res["loads"]
    print(f"{len(res['runs']['cli'])} interleaved rounds; CLI and local[1] pinned to 1 CPU, local[2] to 2 "
          f"(taskset); load average during the runs {min(loads):.2f} to {max(loads):.2f}")
    for pick in ("median", "best"):
        table = res[pick]
        cli = table["cli"]["rows_per_cpu_s"]
        print(f"-- {pick} of the rounds" + (" (wall and CPU each)" if pick == "median" else " (least CPU)")
              + "; every Spark query JIT warm (run once before)")
        for name, m in table.items():
            base = table["cli fleet" if name.endswith("fleet") else "cli"]["rows_per_cpu_s"]
            print(f"{name:<32} {m['rows']:>11,} rows {m['seconds']:6.1f} s {m['rows_per_s']:>10,.0f} rows/s  "
                  f"{m['cpu']:6.1f} CPU-s {m['ns_per_row']:7,.0f} ns/row  "
                  f"{m['rows_per_cpu_s'] / base:5.2f} of the CLI's  {m['cores_busy']:.2f} cores busy")
        for name in ("local[1] kafkadump", "local[2] kafkadump", "local[1] parquet", "local[2] parquet"):
            if name in table:
                m = table[name]
                print(f"  {name}: CPU-s by process: {_by(m['by'])}; a query on a 64 KiB file costs "
                      f"{m['query_overhead_cpu']:.1f} CPU-s (planning, a task)")
        if "local[2] kafkadump" in table:
            print(f"  the split of local[2]'s work allows {table['local[2] kafkadump'].get('spread', 0):.2f}x "
                  f"on idle cores; speed-up 1 -> 2 CPUs "
                  f"{table['local[2] kafkadump']['rows_per_s'] / table['local[1] kafkadump']['rows_per_s']:.2f}x "
                  f"rows/s; CLI {cli:,.0f} rows/CPU-s")
        for what, got, goal, met in targets(table, res.get("planning", []), res.get("fleet_tasks", 0)):
            print(f"  {'PASS' if met else 'MISS'}  {what}: {got:.2f} (target {goal})")
    print(f"load average now {os.getloadavg()[0]:.2f} (2 cores: above ~0.5, the wall times are skewed)")


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--segments", type=int, default=1, help="segments per partition")
    ap.add_argument("--segment-size", type=parse_size, default=parse_size("32M"))
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds of the scaling part")
    ap.add_argument("--fleet", type=int, default=2000, help="small segments of the fleet (0: none)")
    ap.add_argument("--fleet-size", type=parse_size, default=parse_size("1M"), help="size of each")
    ap.add_argument("--only", action="append", choices=("scaling", "startup", "scan"),
                    help="parts to run (repeatable; default: scaling)")
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
        parts = set(a.only or ["scaling"])
        if "scaling" in parts:
            fleet = None
            if a.fleet:
                # a log dir of its own for each fleet shape: the Spark read lists the directory
                fleet = generate(os.path.join(root, f"fleet-{a.fleet}x{a.fleet_size}"), -(-a.fleet // 100),
                                 min(a.fleet, 100), a.fleet_size)
                print(f"fleet: {len(fleet['files'])} segments of {a.fleet_size:,} bytes, "
                      f"{fleet['records']:,} records")
            pq = os.path.join(root, f"anchor-{a.partitions}x{a.segments}x{a.segment_size}.parquet")
            res["scaling"] = scaling(data, fleet, tiny, pq, a.rounds)
            print_scaling(res["scaling"])
        if parts & {"startup", "scan"}:
            older(res, data, root, tiny)
        res["load_after"] = os.getloadavg()
        print(f"load average before {res['load_before'][0]:.2f}, after {res['load_after'][0]:.2f} "
              f"(2 cores: above ~0.5 before, the wall times are skewed by other processes)")
        os.makedirs(os.path.dirname(a.results), exist_ok=True)
        with open(a.results, "w") as f:
            json.dump(res, f, indent=1)
        print(f"results: {a.results}")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


def older(res: dict, data: dict, root: str, tiny: str) -> None:
    """The start-up and ``spark scan`` parts (``--only startup`` / ``--only scan``)."""
    files = data["files"]
    # 1. start-up
    p = subprocess.run([PY, "-c", STARTUP, tiny], capture_output=True, text=True)
    if p.returncode:
        sys.stderr.write(p.stderr[-3000:])
        raise SystemExit("the start-up run failed")
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
        raise SystemExit("the warm scan run failed")
    for r in json.loads(p.stdout.strip().splitlines()[-1]):
        key = f"spark_scan_{r['level']}_warm"
        res[key] = {"seconds": r["seconds"], "rows": r["rows"], "records_per_s": data["records"] / r["seconds"]}
        print(f"spark scan --level {r['level']:<8} (warm session, local[2]):  {r['seconds']:7.1f} s  "
              f"{data['records'] / r['seconds']:>12,.0f} records/s  ({r['rows']:,} rows)")
    res["ratio_records_warm_vs_cli"] = res["spark_scan_records_warm"]["records_per_s"] / \
        res["cli_records"]["records_per_s"]
    res["ratio_records_command_vs_cli"] = res["spark_scan_command"]["records_per_s"] / \
        res["cli_records"]["records_per_s"]
    print(f"ratio spark (warm) / CLI, records: {res['ratio_records_warm_vs_cli']:.2f}; "
          f"command incl. start-up: {res['ratio_records_command_vs_cli']:.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
