#!/usr/bin/env python3
"""``records --json`` over the internal-topic segments of the shared corpus, against kafka-python + json.

Run:  .venv/bin/python bench/internal_bench.py [--rounds 3] [--quick] [--other CHECKOUT]

The inputs are every non-empty ``*.log`` of ``__consumer_offsets``, ``__transaction_state`` and
``__cluster_metadata`` (and the other internal topics) under ``../shared/corpus/real/segments``,
read in place (history versions included).  kafkadump decodes every key and value to its schema and
writes them as objects; the baseline (broker_bench's: kafka-python's ``MemoryRecords`` and a
``json`` encoder) only base64s the bytes.  Whole processes, start-up included, interleaved over
``--rounds``, the least CPU seconds (user + system, from wait4) of each; the ratio is baseline /
kafkadump (above 1: kafkadump is faster).  ``--other CHECKOUT`` times that checkout's kafkadump in
the same rounds (before/after) and checks that both write the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from broker_bench import KP_SCRIPT  # noqa: E402  (the same baseline as the broker part)

from kafkadump.decoders.internal_topics.kinds import kind_from_path  # noqa: E402

CORPUS = Path(os.environ.get("KAFKADUMP_SHARED", ROOT.parent / "shared")) / "corpus" / "real" / "segments"


def internal_segments(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*.log") if p.is_file() and p.stat().st_size and kind_from_path(str(p)))


def run(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, int, str]:
    """CPU seconds of one whole process, the lines it wrote and their digest (run from the checkout
    its PYTHONPATH names: ``-m`` puts the working directory first on the path)."""
    cwd = None if env is None else env["PYTHONPATH"]
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):
            raise SystemExit(f"{argv[:4]}... exited {code}")
        out.seek(0)
        digest, lines = hashlib.sha256(), 0
        for chunk in iter(lambda: out.read(1 << 20), b""):
            digest.update(chunk)
            lines += chunk.count(b"\n")
    return usage.ru_utime + usage.ru_stime, lines, digest.hexdigest()


def kafkadump_env(checkout: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(checkout)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one round")
    ap.add_argument("--other", type=Path, help="another checkout's kafkadump, timed in the same rounds")
    args = ap.parse_args(argv)
    if not CORPUS.is_dir():
        print(f"skipped: the shared corpus is not at {CORPUS}")
        return 0
    files = internal_segments(CORPUS)
    print(f"{len(files)} internal-topic segments, {sum(os.path.getsize(f) for f in files)} bytes", flush=True)
    runs = {"kafkadump": ([sys.executable, "-m", "kafkadump", "records", "--json", *files], kafkadump_env(ROOT)),
            "kafka-python + json": ([sys.executable, "-c", KP_SCRIPT, *files], None)}
    if args.other is not None:
        runs["kafkadump (other)"] = (runs["kafkadump"][0], kafkadump_env(args.other.resolve()))
    best = dict.fromkeys(runs, float("inf"))
    seen: dict[str, tuple[int, str]] = {}
    for _ in range(1 if args.quick else args.rounds):
        for name, (cmd, env) in runs.items():
            cpu, lines, digest = run(cmd, env)
            best[name] = min(best[name], cpu)
            seen[name] = (lines, digest)
    base = best["kafka-python + json"]
    for name in runs:
        print(f"  {name:24s} {best[name]:7.2f} CPU-s  {seen[name][0]:8d} lines  "
              f"kafka-python + json / this: {base / best[name]:5.2f}x", flush=True)
    if args.other is not None:
        same = seen["kafkadump"] == seen["kafkadump (other)"]
        print(f"  records --json vs the other checkout: {best['kafkadump (other)'] / best['kafkadump']:5.2f}x "
              f"faster, output {'identical' if same else 'DIFFERENT'}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
