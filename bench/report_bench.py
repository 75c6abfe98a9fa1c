#!/usr/bin/env python3
"""``kafkadump report`` against ``kafkadump triage --json``: CPU seconds, peak RSS, and the size bound.

Run:  .venv/bin/python bench/report_bench.py [--corpus DIR] [--rounds 3] [--partitions 10000] [--quick]

a. cost: ``triage --json CORPUS`` (the baseline) and ``report CORPUS -o FILE``,
   interleaved round by round so both see the same background load.  Each
   run's CPU seconds are the whole process tree's (user + system from
   ``wait4``: the process and the pool workers it waited for); its peak RSS
   the largest process's (``ru_maxrss``).  The medians are kept and the ratio
   report/triage printed (target: 1.5x or less; peak RSS under 200 MB).
   CORPUS defaults to the shared reference corpus beside the checkout.
b. size: a log dir of ``--partitions`` partition directories (hard links of
   one small segment, one partition in a hundred holding a flipped byte), its
   report's size in bytes (target: under 10 MB) and the report's CPU seconds.

Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus"
SEGMENT = "00000000000000000000.log"


def kafkadump(*args: str) -> list[str]:
    return [sys.executable, "-m", "kafkadump", *args]


def run(argv: list[str]) -> tuple[float, int, int]:
    """(CPU seconds of the process tree, peak RSS in bytes, exit status) of one run, output discarded."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, proc.returncode


def cost(corpus: Path, rounds: int, out: Path) -> None:
    triage = kafkadump("triage", "--json", str(corpus))
    report = kafkadump("report", str(corpus), "-o", str(out))
    rows: dict[str, list[tuple[float, int]]] = {"triage --json": [], "report": []}
    for _ in range(rounds):
        for name, argv in (("triage --json", triage), ("report", report)):
            cpu, rss, code = run(argv)
            if code not in (0, 1):
                print(f"{name}: exit {code}", file=sys.stderr)
            rows[name].append((cpu, rss))
    print(f"a. {corpus} ({rounds} rounds, interleaved)")
    medians = {}
    for name, runs in rows.items():
        medians[name] = statistics.median(c for c, _ in runs)
        print(f"   {name:14} CPU {medians[name]:7.2f} s (runs: {', '.join(f'{c:.2f}' for c, _ in runs)})  "
              f"peak RSS {max(r for _, r in runs) / 2**20:6.1f} MB")
    print(f"   ratio report / triage --json: {medians['report'] / medians['triage --json']:.2f}x (target <= 1.5x)")
    print(f"   report size {out.stat().st_size / 2**20:.2f} MB")


def many_partitions(count: int, work: Path) -> None:
    """A log dir of ``count`` partitions (hard links of one segment), one in a hundred damaged."""
    logdir = work / f"logdir-{count}"
    if not logdir.exists():
        seg = work / "one.log"
        subprocess.run([sys.executable, str(HERE / "make_segment.py"), str(seg), "--size", "64K"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        data = bytearray(seg.read_bytes())
        data[len(data) // 2] ^= 0xFF
        bad = work / "bad.log"
        bad.write_bytes(bytes(data))
        for i in range(count):
            d = logdir / f"topic{i % 50:02d}-{i // 50}"
            d.mkdir(parents=True)
            os.link(bad if i % 100 == 7 else seg, d / SEGMENT)
    out = work / f"report-{count}.html"
    cpu, rss, code = run(kafkadump("report", str(logdir), "-o", str(out)))
    print(f"b. a log dir of {count} partitions: report {out.stat().st_size / 2**20:.2f} MB (target < 10 MB), "
          f"CPU {cpu:.1f} s, peak RSS {rss / 2**20:.1f} MB, exit {code}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--out", type=Path, default=None, help="keep the work files here (default: a temporary dir)")
    ap.add_argument("--quick", action="store_true", help="one round, 1000 partitions")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.partitions = 1, 1000
    with tempfile.TemporaryDirectory(prefix="report-bench-") as tmp:
        work = args.out or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if args.corpus.is_dir():
            cost(args.corpus, args.rounds, work / "corpus.html")
        else:
            print(f"a. skipped: no corpus at {args.corpus}")
        if args.partitions:
            many_partitions(args.partitions, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
