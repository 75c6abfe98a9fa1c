#!/usr/bin/env python3
"""Every kafkadump comparison in one session: one command, CPU-second ratios.

Run:  .venv/bin/python bench/run_all.py [--quick] [--only PART ...] [--list]

Runs each part below as its own process, one after the other, in the same
session (so the figures share the machine's state), streams its output and
ends with a summary: each part's status (done, skipped and why, or failed)
and the lines of its output that carry ratios.  A part whose script is not
there (another branch adds it) or whose dependency is missing is skipped with
the reason.  ``--quick`` runs small sizes (a few minutes in all); without it,
each script runs at its own defaults.

The contract with a part's script: it runs as ``python bench/SCRIPT.py
[ARGS]`` and exits 0; under ``--quick`` it gets ``--quick`` when its
``--help`` lists that flag, else the quick arguments named below when its
``--help`` lists them, else its defaults.  It prints its ratios itself.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass
class Part:
    name: str
    what: str
    script: str
    args: list[str] = field(default_factory=list)
    quick_args: list[str] = field(default_factory=list)
    modules: tuple[str, ...] = ()      # Python packages the part needs
    programs: tuple[str, ...] = ()     # programs on PATH it needs


PARTS = [
    Part("records", "records --json vs kafka-python + json.dumps", "bench.py",
         ["--only", "records", "--no-breakdown", "--results", str(HERE / "out" / "results-records.json")], ["--records-size", "16M", "--records-repeat", "1"],
         modules=("kafka",)),
    Part("internal", "records --json over the corpus's internal-topic segments vs kafka-python + json",
         "internal_bench.py", modules=("kafka",)),
    Part("crc", "verify-crc vs one crc32c call over the file (and per batch)", "bench.py",
         ["--only", "crc", "--results", str(HERE / "out" / "results-crc.json")], ["--size", "128M", "--repeat", "2"]),
    Part("accel", "compiled vs pure path; vs aiokafka's C reader + orjson; batches vs a bare header+CRC+JSON pass; "
         "verify-crc vs crc32c", "accel_bench.py",
         quick_args=["--records-size", "8M", "--crc-size", "64M", "--repeat", "1"]),
    Part("capture", "capture --json and the table vs a bare pcap pass, the previous commit, and tshark -T json / "
         "one-line output when tshark is on PATH", "capture_bench.py",
         quick_args=["--size", "4M", "--repeat", "1", "--previous", ""]),
    Part("capture-real", "capture (table, --json) vs tshark's one-line output and -T json on a pcap of real "
         "clients against a real Kafka (made once by make_real_pcap.py), and the frame counts checked against "
         "tshark's Kafka PDUs", "capture_bench.py", ["--no-generated", "--previous", "", "--real"],
         ["--real", str(HERE / "out" / "real-20M.pcap"), "--real-size-mb", "20", "--repeat", "1"],
         modules=("kafka", "confluent_kafka"), programs=("java", "mvn", "tshark", "dumpcap")),
    Part("startup", "every data command on a tiny input vs python -c 'import json'", "startup_bench.py",
         quick_args=["--rounds", "10"]),
    Part("triage", "peak RSS of every command on one large segment; triage --jobs 2 vs --jobs 1",
         "triage_bench.py", quick_args=["--size", "256M", "--jobs-size", "64M", "--rounds", "2"]),
    Part("broker", "a log dir a real Kafka wrote: dump-log vs Kafka's DumpLogSegments, records --json vs "
         "kafka-python", "broker_bench.py", modules=("kafka", "confluent_kafka"), programs=("java", "mvn")),
    Part("shapes", "real shapes in one table: the corpus, a broker's log dir, user and internal topics, one-record, "
         "compressed and large batches vs kafka-python + base64, aiokafka + orjson and a C loop; dump-log vs "
         "DumpLogSegments on every file kind; start-up of every command; PASS/MISS against each target",
         "shapes_bench.py", modules=("kafka",)),
    Part("spark", "Spark local[1] / local[2] vs one process", "spark_bench.py",
         quick_args=["--partitions", "2", "--segments", "1", "--segment-size", "8M", "--rounds", "1"],
         modules=("pyspark", "pyarrow"), programs=("java",)),
]
NAMES = [p.name for p in PARTS]
# a ratio line: "1.23x", "ratio", "speed-up", "vs ", or capture_bench's "json / tshark -T json   0.68"
RATIO = re.compile(r"\d\.?\d*x\b|ratio|speed-up|vs |\S / \S.*\s\d+\.\d+\s*$", re.IGNORECASE)


def missing(part: Part) -> str | None:
    """Why ``part`` cannot run here, or None."""
    if not (HERE / part.script).exists():
        return f"bench/{part.script} is not in this checkout"
    for module in part.modules:
        probe = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
        if probe.returncode:
            return f"Python package {module!r} is not installed"
    for program in part.programs:
        if shutil.which(program) is None:
            return f"{program!r} is not on PATH"
    return None


def command(part: Part, quick: bool) -> list[str]:
    argv = [sys.executable, str(HERE / part.script), *part.args]
    if not quick:
        return argv
    helptext = subprocess.run(argv[:2] + ["--help"], capture_output=True, text=True).stdout
    if "--quick" in helptext:
        return argv + ["--quick"]
    flags = [a for a in part.quick_args if a.startswith("--")]
    if flags and all(f in helptext for f in flags):
        return argv + part.quick_args
    return argv


def run_part(part: Part, quick: bool) -> tuple[str, list[str], float]:
    """Run one part, streaming its output: (status, its ratio lines, seconds)."""
    why = missing(part)
    if why is not None:
        return f"skipped: {why}", [], 0.0
    argv = command(part, quick)
    print(f"$ {' '.join(argv[1:])}", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=HERE.parent)
    assert proc.stdout is not None
    ratios = []
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        if RATIO.search(line):
            ratios.append(line.rstrip())
    code = proc.wait()
    status = "done" if code == 0 else f"failed: exit {code}"
    return status, ratios, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes: a few minutes in all")
    ap.add_argument("--only", choices=NAMES, action="append", metavar="PART",
                    help=f"run only this part (repeatable): {', '.join(NAMES)}")
    ap.add_argument("--list", action="store_true", help="list the parts and exit")
    args = ap.parse_args(argv)
    if args.list:
        for part in PARTS:
            print(f"{part.name:<9} bench/{part.script:<18} {part.what}")
        return 0
    chosen = [p for p in PARTS if not args.only or p.name in args.only]
    print(f"kafkadump benchmarks, {len(chosen)} parts{' (quick)' if args.quick else ''}; machine: "
          f"{os.cpu_count()} CPUs, load {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    results = []
    for part in chosen:
        print(f"\n=== {part.name}: {part.what}", flush=True)
        results.append((part, *run_part(part, args.quick)))
    print("\n=== summary (CPU-second ratios are the figures to trust on a shared machine)")
    for part, status, ratios, seconds in results:
        print(f"{part.name:<9} {status}" + (f" ({seconds:.0f} s)" if seconds else ""))
        for line in ratios:
            print(f"    {line.strip()}")
    print(f"load at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0 if all(s == "done" or s.startswith("skipped") for _, s, _, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
