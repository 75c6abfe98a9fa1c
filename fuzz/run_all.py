#!/usr/bin/env python3
"""Fuzz every input path for SECONDS each, JOBS at a time; print a Markdown table.

    python fuzz/run_all.py [--seconds 600] [--jobs 2] [--artifacts DIR] [TARGET ...]

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


def fuzz_one(name: str, seconds: int, artifacts: str, per_input_timeout: int = 20) -> dict:
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, os.path.join(HERE, "run.py"), name, f"-max_total_time={seconds}",
                        "-print_final_stats=1", f"-timeout={per_input_timeout}", "-rss_limit_mb=1024",
                        f"-artifact_prefix={os.path.join(artifacts, name)}-"],
                       capture_output=True, text=True, timeout=seconds * 3 + 300)
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
    a = ap.parse_args(argv)
    artifacts = a.artifacts or tempfile.mkdtemp(prefix="kafkadump-fuzz-artifacts-")
    os.makedirs(artifacts, exist_ok=True)
    with ThreadPoolExecutor(a.jobs) as pool:
        results = list(pool.map(lambda t: fuzz_one(t, a.seconds, artifacts), a.targets))
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
