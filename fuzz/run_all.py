#!/usr/bin/env python3
"""Fuzz every input path for SECONDS each, JOBS at a time; print a Markdown table.

    python fuzz/run_all.py [--seconds 600] [--jobs 2] [--artifacts DIR] [TARGET ...]
    python fuzz/run_all.py --runs 2000 [--seed 1] ...      (the deterministic run the tests make)

With ``--runs N`` each target executes exactly N inputs (the seeds
included) from libFuzzer's fixed ``--seed``: the same inputs on every
machine, so the short run inside the test suite cannot fail by chance.
Without it each target runs for ``--seconds`` from a random seed (the long
hunts; turn what they find into inputs under fuzz/regressions/).

Exit status 1 when any target crashed, hung (-timeout) or ran out of memory
(-rss_limit_mb); the reproducer is in the artifacts directory (default: a
new temporary directory, printed).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run import NAMES  # noqa: E402


def fuzz_one(name: str, seconds: int, artifacts: str, per_input_timeout: int = 20,
             runs: int | None = None, seed: int = 1) -> dict:
    t0 = time.monotonic()
    budget = [f"-runs={runs}", f"-seed={seed}"] if runs is not None else [f"-max_total_time={seconds}"]
    env = dict(os.environ, PYTHONHASHSEED="0") if runs is not None else None
    p = subprocess.run([sys.executable, os.path.join(HERE, "run.py"), name, *budget,
                        "-print_final_stats=1", f"-timeout={per_input_timeout}", "-rss_limit_mb=1024",
                        f"-artifact_prefix={os.path.join(artifacts, name)}-"],
                       capture_output=True, text=True, env=env,
                       timeout=(seconds * 3 + 300) if runs is None else 1800)
    log = p.stdout + p.stderr
    m = re.search(r"stat::number_of_executed_units:\s*(\d+)", log)
    crashes = [f for f in os.listdir(artifacts) if f.startswith(name + "-")]
    return {"target": name, "seconds": round(time.monotonic() - t0, 1), "executions": int(m.group(1)) if m else 0,
            "returncode": p.returncode, "crashes": crashes, "log": log}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="*", default=list(NAMES))
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2)))
    ap.add_argument("--artifacts", default=None)
    ap.add_argument("--runs", type=int, default=None,
                    help="exactly this many inputs per target, from --seed (deterministic); "
                         "a target named in --cli-targets runs --cli-runs instead")
    ap.add_argument("--cli-runs", type=int, default=None)
    ap.add_argument("--cli-targets", default="")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    artifacts = a.artifacts or tempfile.mkdtemp(prefix="kafkadump-fuzz-artifacts-")
    os.makedirs(artifacts, exist_ok=True)
    with ThreadPoolExecutor(a.jobs) as pool:
        slow = set(filter(None, a.cli_targets.split(",")))

        def runs_for(t: str) -> int | None:
            return a.cli_runs if (t in slow and a.cli_runs is not None) else a.runs

        results = list(pool.map(lambda t: fuzz_one(t, a.seconds, artifacts, runs=runs_for(t), seed=a.seed),
                                a.targets))
    print("| input path | seconds | executions | result |")
    print("|---|---:|---:|---|")
    bad = 0
    for r in results:
        ok = r["returncode"] == 0 and not r["crashes"]
        bad += not ok
        print(f"| {r['target']} | {r['seconds']} | {r['executions']} | "
              f"{'ok' if ok else 'FAILED: ' + (', '.join(r['crashes']) or 'exit ' + str(r['returncode']))} |")
    if bad:
        print(f"artifacts: {artifacts}", file=sys.stderr)
        for r in results:
            if r["returncode"] != 0 or r["crashes"]:
                print(r["log"][-3000:], file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
