#!/usr/bin/env python3
"""Peak memory of every command on one large segment, and triage's ``--jobs`` speed-up.

Run:  .venv/bin/python bench/triage_bench.py [--size 2G] [--out DIR] [--quick]

a. memory: each command below runs once on a ``--size`` segment (16 KiB
   batches of 1000-byte records, ``make_segment.py``) in a partition
   directory, output to /dev/null: peak RSS of the largest process
   (``/usr/bin/time -f %M``) and the highest sum of ``VmRSS`` over the
   process and its children (pool workers), polled every 20 ms, with the
   peak ``RssAnon`` (heap) of that sum, and the highest sum of ``Pss``
   (shared pages split between the processes sharing them: a fork's
   workers share the parent's pages, which plain RSS counts in each).
   Target: under 200 MB.
b. triage --jobs: a log dir of ``--partitions`` partitions (hard links of
   one segment of ``--jobs-size``), ``triage --jobs 1`` against
   ``--jobs 2``, interleaved for ``--rounds`` rounds: wall seconds (the
   speed-up), CPU seconds of the whole process tree, and the CPU spread:
   all CPU seconds over those of the busiest process (the parent or one
   worker), the speed-up ceiling on idle cores, which does not depend on
   what else runs on the machine.

Nothing is asserted.  The machine's CPU count and load are printed: on a
shared machine the wall-clock speed-up is only as good as the idle cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from make_segment import parse_size  # noqa: E402

TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
SEGMENT = "00000000000000000000.log"


def kafkadump(*args: str) -> list[str]:
    return [sys.executable, "-m", "kafkadump", *args]


def make_segment(path: Path, size: int) -> None:
    """A segment of ``size`` bytes (reused when its sidecar says it has that size)."""
    sidecar = path.with_name(path.name + ".json")
    if path.exists() and sidecar.exists() and f'"size": {size}' in sidecar.read_text().replace("\n", " "):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(HERE / "make_segment.py"), str(path), "--size", str(size)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _status(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "RssAnon:")):
                    key, value = line.split(":", 1)
                    out[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    out["Pss"] = int(line.split()[1]) * 1024
    except OSError:
        pass
    return out


def _cpu_ticks(pid: int) -> int:
    """User + system clock ticks ``pid`` has used so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return 0


def _tree(pid: int) -> list[int]:
    """``pid`` and all its descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            pass
    return out


def run(argv: list[str]) -> dict[str, float]:
    """Run once, output discarded: exit code, wall and CPU seconds, peak RSS of one process, peak sums."""
    with tempfile.NamedTemporaryFile(prefix="kd-time-") as tfile:
        full = [TIME, "-o", tfile.name, "-f", "%M"] + argv if TIME else argv
        peak_rss = peak_anon = peak_pss = 0
        ticks: dict[int, int] = {}
        t0 = time.perf_counter()
        p = subprocess.Popen(full, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            pids = _tree(p.pid)[1 if TIME else 0:]
            for q in pids:
                ticks[q] = max(ticks.get(q, 0), _cpu_ticks(q))
            tree = [_status(q) for q in pids]
            peak_rss = max(peak_rss, sum(s.get("VmRSS", 0) for s in tree))
            peak_anon = max(peak_anon, sum(s.get("RssAnon", 0) for s in tree))
            peak_pss = max(peak_pss, sum(s.get("Pss", 0) for s in tree))
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        max_one = int(Path(tfile.name).read_text().split()[-1]) * 1024 if TIME else 0
    return {"rc": os.waitstatus_to_exitcode(status), "wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
            "maxrss": max_one, "peak_tree_rss": peak_rss, "peak_tree_anon": peak_anon,
            "peak_tree_pss": peak_pss,
            "busiest_cpu_s": max(ticks.values(), default=0) / os.sysconf("SC_CLK_TCK")}


def warm(path: Path) -> None:
    """Read the file through so every run starts with it in the page cache."""
    with open(path, "rb") as f:
        while f.read(64 << 20):
            pass


def memory(segment: Path, only: list[str] | None = None) -> list[tuple[str, dict[str, float]]]:
    logdir = str(segment.parent.parent)
    with tempfile.TemporaryDirectory(prefix="kd-carve-") as tmp:
        commands = [
            ("batches", kafkadump("batches", str(segment))),
            ("batches --json", kafkadump("batches", "--json", str(segment))),
            ("records --json", kafkadump("records", "--json", str(segment))),
            ("verify-crc", kafkadump("verify-crc", str(segment))),
            ("hexdump --batch 0", kafkadump("hexdump", "--batch", "0", str(segment))),
            ("dump", kafkadump("dump", str(segment))),
            ("carve", kafkadump("carve", str(segment))),
            ("carve -o", kafkadump("carve", str(segment), "-o", os.path.join(tmp, "carved.log"))),
            ("triage", kafkadump("triage", logdir)),
            ("triage --shallow", kafkadump("triage", "--shallow", logdir)),
        ]
        rows = []
        for name, argv in commands:
            if only and name not in only:
                continue
            warm(segment)
            rows.append((name, run(argv)))
            print(f"  {name:<24} {_mb(rows[-1][1])}", flush=True)
    return rows


def _mb(r: dict[str, float]) -> str:
    return (f"rc {r['rc']:.0f}  max RSS {r['maxrss'] / 1e6:7.1f} MB  tree RSS {r['peak_tree_rss'] / 1e6:7.1f} MB"
            f"  tree PSS {r['peak_tree_pss'] / 1e6:7.1f} MB"
            f"  tree anon {r['peak_tree_anon'] / 1e6:6.1f} MB  cpu {r['cpu_s']:6.2f} s  wall {r['wall_s']:6.2f} s")


def jobs_speedup(root: Path, size: int, partitions: int, rounds: int) -> dict[str, dict[str, float]]:
    """triage --jobs 1 against --jobs 2 on ``partitions`` hard links of one segment, interleaved."""
    source = root / "jobs-source" / SEGMENT
    make_segment(source, size)
    logdir = root / f"jobs-logdir-{partitions}"
    for i in range(partitions):
        target = logdir / f"bench-{i}" / SEGMENT
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(source, target)
    times: dict[str, list[dict[str, float]]] = {"--jobs 1": [], "--jobs 2": []}
    for _ in range(rounds):
        for flag in times:
            warm(source)
            times[flag].append(run(kafkadump("triage", flag.split()[0], flag.split()[1], str(logdir))))
    out = {}
    for flag, runs in times.items():
        out[flag] = {"wall_s": statistics.median(r["wall_s"] for r in runs),
                     "cpu_s": statistics.median(r["cpu_s"] for r in runs),
                     "min_wall_s": min(r["wall_s"] for r in runs),
                     "peak_tree_rss": max(r["peak_tree_rss"] for r in runs),
                     "peak_tree_pss": max(r["peak_tree_pss"] for r in runs),
                     "spread": statistics.median(r["cpu_s"] / r["busiest_cpu_s"] for r in runs if r["busiest_cpu_s"]),
                     "maxrss": max(r["maxrss"] for r in runs),
                     "rc": max(r["rc"] for r in runs)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=parse_size, default=parse_size("2G"), help="memory segment size (default 2G)")
    ap.add_argument("--jobs-size", type=parse_size, default=parse_size("256M"),
                    help="segment size of each --jobs partition (default 256M)")
    ap.add_argument("--partitions", type=int, default=4, help="partitions of the --jobs log dir (default 4)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved --jobs rounds (default 3)")
    ap.add_argument("--out", type=Path, default=None, help="keep (and reuse) the generated files here")
    ap.add_argument("--only", choices=("memory", "jobs"), action="append", help="run only this part (repeatable)")
    ap.add_argument("--command", action="append", metavar="NAME",
                    help="memory part: only this command, as the table names it (repeatable)")
    ap.add_argument("--quick", action="store_true", help="256M memory segment, 64M x 4 partitions, 2 rounds")
    args = ap.parse_args(argv)
    if args.quick:
        args.size, args.jobs_size, args.rounds = parse_size("256M"), parse_size("64M"), 2
    parts = args.only or ["memory", "jobs"]
    root = args.out or Path(tempfile.mkdtemp(prefix="kd-triage-bench-"))
    print(f"machine: {os.cpu_count()} CPUs, load {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    try:
        if "memory" in parts:
            source = root / f"memory-source-{args.size}" / SEGMENT
            make_segment(source, args.size)
            segment = root / "memory" / "bench-0" / SEGMENT   # a partition dir without the sidecar
            if segment.exists() and not os.path.samefile(segment, source):
                segment.unlink()
            if not segment.exists():
                segment.parent.mkdir(parents=True, exist_ok=True)
                os.link(source, segment)
            print(f"peak memory, one {args.size / 2**30:.2f} GiB segment (target: under 200 MB):")
            memory(segment, args.command)
        if "jobs" in parts:
            res = jobs_speedup(root, args.jobs_size, args.partitions, args.rounds)
            one, two = res["--jobs 1"], res["--jobs 2"]
            print(f"triage --jobs, {args.partitions} partitions x {args.jobs_size / 2**20:.0f} MiB, "
                  f"median of {args.rounds} interleaved rounds:")
            for flag, r in res.items():
                print(f"  triage {flag:<9} wall {r['wall_s']:6.2f} s (min {r['min_wall_s']:.2f})  "
                      f"cpu {r['cpu_s']:6.2f} s  max RSS {r['maxrss'] / 1e6:6.1f} MB  tree RSS "
                      f"{r['peak_tree_rss'] / 1e6:6.1f} MB  tree PSS {r['peak_tree_pss'] / 1e6:6.1f} MB  rc {r['rc']:.0f}"
                      f"  CPU spread {r['spread']:.2f}x")
            print(f"  speed-up --jobs 2 over --jobs 1: {one['wall_s'] / two['wall_s']:.2f}x wall, "
                  f"CPU cost {two['cpu_s'] / one['cpu_s']:.2f}x (load {os.getloadavg()[0]:.1f})")
            ceiling = min(two["spread"], float(os.cpu_count() or 1), 2.0)
            print(f"  CPU spread of --jobs 2 (all CPU seconds / the busiest process's): {two['spread']:.2f}x; "
                  f"speed-up ceiling on idle cores: {ceiling:.2f}x")
    finally:
        if args.out is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
