#!/usr/bin/env python3
"""kafkadump on a log dir a real broker wrote, against Kafka's own DumpLogSegments and kafka-python.

Run:  .venv/bin/python bench/broker_bench.py [--logdir DIR] [--rounds 3] [--quick]

Without ``--logdir`` it builds the broker incident of the tests (tests/broker/incident.py: a real
Kafka written by real clients, reproducible from its seed; needs Java, Maven, confluent-kafka and
kafka-python) into ``bench/out/broker-incident`` once and reuses it.  The shapes are the ones
operators hold: small batches from librdkafka and kafka-python, every codec, transactions with
markers, compacted and retained partitions, and the internal topics (``__consumer_offsets``,
``__transaction_state``, ``__cluster_metadata``).

Each comparison runs both commands as whole processes (start-up included), interleaved over
``--rounds`` rounds, and prints the least CPU seconds (user + system, from wait4) of each and the
ratio.  Outputs are checked for the same number of lines where the formats agree.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

KP_SCRIPT = r"""
import base64, json, mmap, os, sys
from kafka.record.memory_records import MemoryRecords
enc = json.JSONEncoder(separators=(",", ":")).encode
b64 = lambda b: None if b is None else base64.b64encode(b).decode("ascii")
out = sys.stdout
n = 0
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            continue
        mem = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    for batch in MemoryRecords(mem):
        lines = [enc({"offset": r.offset, "timestamp": r.timestamp, "key": b64(r.key), "value": b64(r.value),
                      "headers": [{"key": k, "value": b64(v)} for k, v in r.headers]}) for r in batch]
        if lines:
            out.write("\n".join(lines) + "\n")
            n += len(lines)
print(n, file=sys.stderr)
"""


def log_files(logdir: Path) -> list[str]:
    return sorted(str(p) for p in logdir.glob("*/*.log") if p.stat().st_size > 0)


def build_incident(target: Path) -> Path:
    from broker.harness import missing_tools

    reason = missing_tools()
    if reason:
        raise SystemExit(f"cannot build the broker incident: {reason}")
    from broker.incident import build

    if not (target / "node1" / "data").exists():
        target.mkdir(parents=True, exist_ok=True)
        build(target)
    return target / "node1" / "data"


def cpu_of(argv: list[str]) -> tuple[float, int]:
    """CPU seconds (user + system) of one whole process and the number of lines it wrote."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{argv[:4]}... exited {proc.returncode}")
        out.seek(0)
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: out.read(1 << 20), b""))
    return usage.ru_utime + usage.ru_stime, lines


def compare(label: str, ours: list[str], theirs: list[str], rounds: int) -> dict:
    best = {"kafkadump": float("inf"), "baseline": float("inf")}
    lines = {}
    for _ in range(rounds):
        for name, argv in (("kafkadump", ours), ("baseline", theirs)):
            cpu, count = cpu_of(argv)
            best[name] = min(best[name], cpu)
            lines[name] = count
    ratio = best["baseline"] / best["kafkadump"] if best["kafkadump"] else float("nan")
    print(f"{label:58s} kafkadump {best['kafkadump']:7.2f} CPU-s  baseline {best['baseline']:7.2f} CPU-s  "
          f"{ratio:5.2f}x  (lines {lines['kafkadump']} vs {lines['baseline']})", flush=True)
    return {"label": label, **best, "ratio": ratio, "lines": lines}


def dump_log_segments(files: list[str], *extra: str) -> list[str]:
    from broker.harness import DUMP_LOG_SEGMENTS, tool_argv

    return tool_argv(DUMP_LOG_SEGMENTS, "--files", ",".join(files), *extra)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logdir", type=Path, help="a log dir to read (default: build the broker incident once)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one round")
    args = ap.parse_args(argv)
    logdir = args.logdir or build_incident(HERE / "out" / "broker-incident")
    rounds = 1 if args.quick else args.rounds
    files = log_files(logdir)
    user = [f for f in files if not Path(f).parent.name.startswith("__")]
    kd = [sys.executable, "-m", "kafkadump"]
    print(f"log dir: {len(files)} segments ({len(user)} of user topics), "
          f"{sum(os.path.getsize(f) for f in files)} bytes", flush=True)
    compare("records --format dump-log vs DumpLogSegments --deep --print-data-log",
            [*kd, "records", "--format", "dump-log", *files],
            dump_log_segments(files, "--deep-iteration", "--print-data-log"), rounds)
    compare("batches --format dump-log vs DumpLogSegments (batches)",
            [*kd, "batches", "--format", "dump-log", *files], dump_log_segments(files), rounds)
    compare("records --json vs kafka-python + json (user topics)",
            [*kd, "records", "--json", "--encoding", "base64", *user],
            [sys.executable, "-c", KP_SCRIPT, *user], rounds)
    compare("records --json vs kafka-python + json (every segment)",
            [*kd, "records", "--json", "--encoding", "base64", *files],
            [sys.executable, "-c", KP_SCRIPT, *files], rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
