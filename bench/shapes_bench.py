#!/usr/bin/env python3
"""kafkadump on real shapes, against plain readers and Kafka's own tool: one table, CPU-second ratios.

Run:  .venv/bin/python bench/shapes_bench.py [--rounds 3] [--quick] [--incident DIR] [--corpus DIR]
      (or bench/run_all.py --only shapes)

Each row times whole processes (interpreter start included on both sides), interleaved round by
round, and keeps the least CPU seconds (user + system, from wait4) of each:

records --json --encoding base64 (kafkadump's command, its default decoding) against
  kafka-python   kafka-python's reader, a dict per record with the same fields as kafkadump's line,
                 bytes as base64 (nothing else: a plain reader), json.JSONEncoder
  aiokafka+orjson  aiokafka's C reader, the same dict, orjson (the ``bench`` extra)
  C loop         bench/shapes_cloop.c: the plain v2 case in C (walk, CRC-32C, varints, base64, the
                 same JSON line, byte for byte: checked before timing); the limit, on the generated
                 uncompressed shapes
on these shapes:
  corpus         every segment and batch file of the reference corpus (../shared/corpus)
  broker         the log dir of the tests' broker incident (bench/broker_bench.py builds it)
  user / internal  the corpus's and the incident's segments of user topics / of internal topics
  one-record     generated: one record a batch
  compressed     generated: lz4 batches of 150 text records
  large          generated: 1 MiB batches of 1000-byte records
dump --format dump-log against DumpLogSegments --deep-iteration --print-data-log (JVM start
included) on every file kind kafkadump's dump-log reads (.log, .index, .timeindex, .snapshot,
.txnindex): the incident's files of that kind and one generated file large enough that start-up
does not dominate; and start-up of every data command against ``python -c 'import json'``
(bench/startup_bench.py).  Each row prints PASS or MISS against its target.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))

import make_segment  # noqa: E402

# the plain readers: a dict per record with the fields of kafkadump's line, bytes as base64
RECORD_DICT = r"""
import base64, json, mmap, os, sys
b64 = lambda b: None if b is None else base64.b64encode(b).decode("ascii")
TST = ("CreateTime", "LogAppendTime")
def record_dict(path, pos, batch, r):
    return {"type": "record", "file": path, "topic": None, "partition": None, "batchPosition": pos,
            "offset": r.offset, "timestamp": r.timestamp, "timestampType": TST[batch.timestamp_type],
            "key": b64(r.key), "value": b64(r.value), "headers": [{"key": k, "value": b64(v)} for k, v in r.headers],
            "offsetDelta": r.offset - batch.base_offset, "timestampDelta": r.timestamp - (batch.first_timestamp or 0),
            "control": None}
"""
KAFKA_PYTHON = RECORD_DICT + r"""
from kafka.record.memory_records import MemoryRecords
enc = json.JSONEncoder(separators=(",", ":")).encode
out, n, failed = sys.stdout, 0, 0
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            continue
        mem = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    pos = 0
    try:
        for batch in MemoryRecords(mem):
            lines = [enc(record_dict(path, pos, batch, r)) for r in batch]
            pos += batch.size_in_bytes
            if lines:
                out.write("\n".join(lines) + "\n")
                n += len(lines)
    except Exception:
        failed += 1
print(n, failed, file=sys.stderr)
"""
AIOKAFKA_ORJSON = RECORD_DICT + r"""
import orjson
from aiokafka.record._crecords import MemoryRecords
out, n, failed = sys.stdout.buffer, 0, 0
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        data = f.read()
    if not data:
        continue
    records, pos = MemoryRecords(data), 0
    try:
        while True:
            batch = records.next_batch()
            if batch is None:
                break
            lines = [orjson.dumps(record_dict(path, pos, batch, r)) for r in batch]
            pos += getattr(batch, "size_in_bytes", 0)
            if lines:
                out.write(b"\n".join(lines) + b"\n")
                n += len(lines)
    except Exception:
        failed += 1
print(n, failed, file=sys.stderr)
"""

SEGMENT_NAME = re.compile(r"^\d{20}\.log$")
TARGETS = {  # shape -> ((baseline, least ratio baseline CPU / kafkadump CPU), ...)
    "corpus": (("kafka-python", 3.0), ("aiokafka+orjson", 1.5)),
    "user": (("kafka-python", 2.0),),
    "internal": (("kafka-python", 2.0),),
    "one-record": (("C loop", 1 / 2.0),),   # kafkadump within 2x of the C loop
    "large": (("C loop", 1 / 1.25),),        # within 1.25x
}
GENERATED = {  # shape -> make_segment arguments (size set by --size)
    "one-record": dict(batch_bytes=100, record_bytes="10-40", key_bytes=8, records_per_batch=1, headers=0,
                       codec="none", payload="random"),
    "compressed": dict(batch_bytes=16 << 10, record_bytes="40-90", key_bytes=10, records_per_batch=150, headers=1,
                       codec="lz4", payload="text"),
    "large": dict(batch_bytes=1 << 20, record_bytes="1000", key_bytes=8, records_per_batch=None, headers=0,
                  codec="none", payload="random"),
}


def cpu_of(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, bytes]:
    """CPU seconds (user + system) of one whole process, and what it wrote (exit 0 or 1)."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):
            raise SystemExit(f"{' '.join(argv[:5])}... exited {code}")
        out.seek(0)
        return usage.ru_utime + usage.ru_stime, out.read()


def least_cpu(jobs: dict[str, list[str]], rounds: int) -> tuple[dict[str, float], dict[str, bytes]]:
    """Each job once a round, ``rounds`` rounds: the least CPU seconds of each, and its last output."""
    best = {name: float("inf") for name in jobs}
    outputs: dict[str, bytes] = {}
    for _ in range(rounds):
        for name, argv in jobs.items():
            cpu, outputs[name] = cpu_of(argv)
            best[name] = min(best[name], cpu)
    return best, outputs


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


# --- inputs -----------------------------------------------------------------------------------------------

def corpus_files(corpus: Path) -> list[str]:
    """The corpus's segments (``\\d{20}.log``) and record-batch files (clients/batches/*.bin)."""
    segs = [p for p in corpus.rglob("*.log") if SEGMENT_NAME.match(p.name) and p.stat().st_size > 0]
    return sorted(str(p) for p in [*segs, *(corpus / "clients" / "batches").glob("*.bin")])


def internal(path: str) -> bool:
    return Path(path).parent.name.startswith("__")


def incident_dir(explicit: Path | None) -> Path | None:
    if explicit is not None:
        return explicit
    built = HERE / "out" / "broker-incident" / "node1" / "data"
    return built if built.is_dir() else None


def generated(work: Path, size: int) -> dict[str, str]:
    out = {}
    for shape, params in GENERATED.items():
        path = work / f"shape-{shape}-{size}.log"
        if not path.exists():
            make_segment.make(str(path), size=size, quiet=True, **params)
        out[shape] = str(path)
    return out


# --- the C loop -------------------------------------------------------------------------------------------

def c_loop(work: Path) -> str | None:
    """bench/shapes_cloop.c built into ``work`` (None without a C compiler)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    exe = work / "shapes_cloop"
    src = HERE / "shapes_cloop.c"
    if cc is None or not src.exists():
        return None
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        flags = ["-O2", "-march=native"] if sys.platform.startswith("linux") else ["-O2"]
        done = subprocess.run([cc, *flags, "-o", str(exe), str(src)], capture_output=True, text=True)
        if done.returncode:
            print(f"C loop not built: {done.stderr.strip()[:200]}", file=sys.stderr)
            return None
    return str(exe)


# --- the rows ---------------------------------------------------------------------------------------------

def records_row(shape: str, files: list[str], rounds: int, cloop: str | None) -> dict:
    py = sys.executable
    jobs = {"kafkadump": [py, "-m", "kafkadump", "records", "--json", "--encoding", "base64", *files],
            "kafka-python": [py, "-c", KAFKA_PYTHON, *files]}
    if have("aiokafka.record._crecords") and have("orjson"):
        jobs["aiokafka+orjson"] = [py, "-c", AIOKAFKA_ORJSON, *files]
    if cloop is not None and shape in GENERATED and GENERATED[shape]["codec"] == "none":
        jobs["C loop"] = [cloop, *files]
    best, outs = least_cpu(jobs, rounds)
    if "C loop" in outs and outs["C loop"] != outs["kafkadump"]:
        print(f"  {shape}: the C loop's output is not kafkadump's: not a limit here", file=sys.stderr)
        del best["C loop"]
    lines = {name: out.count(b"\n") for name, out in outs.items()}
    ratios = {name: best[name] / best["kafkadump"] for name in best if name != "kafkadump"}
    cells = "  ".join(f"{name} {best[name]:6.2f} s {ratios[name]:5.2f}x" for name in ratios)
    checks = [f"{verdict(ratios[b] >= least)} {b} >= {least:.2f}x" for b, least in TARGETS.get(shape, ())
              if b in ratios]
    print(f"  {shape:11} {len(files):4} files {lines['kafkadump']:>9,} lines  kafkadump {best['kafkadump']:6.2f} s  "
          f"{cells}  {'  '.join(checks)}", flush=True)
    return {"shape": shape, "files": len(files), "cpu_s": best, "ratios": ratios, "lines": lines, "checks": checks}


def have(module: str) -> bool:
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def dumplog_row(label: str, files: list[str], rounds: int) -> dict:
    from broker.harness import DUMP_LOG_SEGMENTS, tool_argv

    jobs = {"kafkadump": [sys.executable, "-m", "kafkadump", "dump", "--format", "dump-log", *files],
            "DumpLogSegments": tool_argv(DUMP_LOG_SEGMENTS, "--files", ",".join(files), "--deep-iteration",
                                         "--print-data-log")}
    best, outs = least_cpu(jobs, rounds)
    ratio = best["DumpLogSegments"] / best["kafkadump"]
    lines = {name: out.count(b"\n") for name, out in outs.items()}
    print(f"  {label:30} kafkadump {best['kafkadump']:6.2f} s  DumpLogSegments {best['DumpLogSegments']:6.2f} s  "
          f"{ratio:5.2f}x  (lines {lines['kafkadump']:,} vs {lines['DumpLogSegments']:,})  "
          f"{verdict(ratio > 1)} faster than DumpLogSegments", flush=True)
    return {"label": label, "cpu_s": best, "ratio": ratio, "lines": lines}


# --- large files of every dump-log kind -------------------------------------------------------------------

def large_log_dir(work: Path, size: int) -> dict[str, str]:
    """A generated segment of one-record batches and its .index, .timeindex, .txnindex and .snapshot,
    an entry of each a batch (denser than a broker's index entry every 4 KiB of log, so that every file
    is large; each entry points at its batch as a broker's does, so both tools check it and agree)."""
    part = work / f"indexed-{size}" / "big-0"
    files = {k: str(part / f"00000000000000000000.{k}") for k in ("log", "index", "timeindex", "txnindex")}
    files["snapshot"] = str(part / "00000000000000000000.snapshot")
    if all(os.path.exists(p) for p in files.values()):
        return files
    part.mkdir(parents=True, exist_ok=True)
    meta = make_segment.make(files["log"], size=size, quiet=True, **GENERATED["one-record"])
    index, timeindex, txns, producers = bytearray(), bytearray(), bytearray(), bytearray()
    with open(files["log"], "rb") as f:
        data = f.read()
    pos, n = 0, 0
    while pos + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        last_delta, _first_ts, max_ts = struct.unpack_from(">iqq", data, pos + 23)
        last = base + last_delta
        index += struct.pack(">ii", last, pos)
        timeindex += struct.pack(">qi", max_ts, last)
        txns += struct.pack(">hqqqq", 0, 1000 + n, base, last, last + 1)
        producers += struct.pack(">qhiqiqiq", 1000 + n, 0, last_delta, last, last_delta, max_ts, 0, -1)
        pos += length + 12
        n += 1
    Path(files["index"]).write_bytes(bytes(index))
    Path(files["timeindex"]).write_bytes(bytes(timeindex))
    Path(files["txnindex"]).write_bytes(bytes(txns))
    body = struct.pack(">i", n) + bytes(producers)
    from crc32c import crc32c

    Path(files["snapshot"]).write_bytes(struct.pack(">hI", 1, crc32c(body)) + body)
    print(f"  generated {part}: {meta['batches']:,} batches, {len(index) // 8:,} index entries, {n:,} "
          f"transactions and producers", file=sys.stderr)
    return files


# --- the whole table --------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds, the least CPU counts (default 2)")
    ap.add_argument("--quick", action="store_true", help="1 round, 8 MiB generated files, 3 start-up rounds")
    ap.add_argument("--only", action="append", choices=["records", "dumplog", "startup"],
                    help="run only these sections (repeatable)")
    ap.add_argument("--size", default="32M", help="size of each generated file (default 32M)")
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    ap.add_argument("--incident", type=Path, help="a broker's log dir (default: bench/out/broker-incident, "
                                                  "built by bench/broker_bench.py)")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "shapes", help="where generated files are kept")
    ap.add_argument("--startup-rounds", type=int, default=8)
    args = ap.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    size = make_segment.parse_size("8M" if args.quick else args.size)
    only = set(args.only or ["records", "dumplog", "startup"])
    args.out.mkdir(parents=True, exist_ok=True)
    corpus = corpus_files(args.corpus) if args.corpus.is_dir() else []
    incident = incident_dir(args.incident)
    broker = sorted(str(p) for p in incident.glob("*/*.log") if p.stat().st_size > 0) if incident else []
    shapes = {"corpus": corpus, "broker": broker,
              "user": [f for f in corpus + broker if not internal(f)],
              "internal": [f for f in corpus + broker if internal(f)]}
    shapes.update({shape: [path] for shape, path in generated(args.out, size).items()})
    if "records" in only:
        records_rows(shapes, rounds, c_loop(args.out))
    if "dumplog" in only:
        dumplog_rows(incident, args.out, size, rounds)
    if "startup" in only:
        startup_rows(3 if args.quick else args.startup_rounds)
    return 0


def records_rows(shapes: dict[str, list[str]], rounds: int, cloop: str | None) -> None:
    print(f"records --json --encoding base64: CPU seconds, baseline / kafkadump (above 1: kafkadump uses less); "
          f"{rounds} rounds" + ("" if cloop else "; no C loop (no C compiler)"), flush=True)
    for shape, files in shapes.items():
        if not files:
            why = "no corpus" if shape == "corpus" else "no broker incident: run bench/broker_bench.py"
            print(f"  {shape:11} skipped: {why}", flush=True)
            continue
        records_row(shape, files, rounds, cloop)


def dumplog_rows(incident: Path | None, out: Path, size: int, rounds: int) -> None:
    from broker.harness import missing_tools

    why = missing_tools()
    if why:
        print(f"dump --format dump-log vs DumpLogSegments: skipped ({why})", flush=True)
        return
    print("dump --format dump-log vs DumpLogSegments --deep-iteration --print-data-log: CPU seconds (JVM start "
          "included), DumpLogSegments / kafkadump", flush=True)
    large = large_log_dir(out, size)
    for kind in ("log", "index", "timeindex", "snapshot", "txnindex"):
        if incident is not None:
            files = sorted(str(p) for p in incident.glob(f"*/*.{kind}") if p.stat().st_size > 0)
            if files:
                dumplog_row(f".{kind}, broker incident ({len(files)})", files, rounds)
        dumplog_row(f".{kind}, generated {os.path.getsize(large[kind]) / 2**20:.1f} MiB", [large[kind]], rounds)


def startup_rows(rounds: int) -> None:
    import startup_bench

    print(f"start-up: median CPU seconds of {rounds} rounds against python -c 'import json' (target: 2x)", flush=True)
    rows = startup_bench.measure(rounds)
    for row in rows[1:]:
        # the typer row is a command line the fast path leaves to typer: informative, not the target's
        check = "(typer: no target)" if "typer" in str(row["what"]) else f"{verdict(row['ratio'] <= 2.0)} <= 2x"
        print(f"  {row['what']:52} {row['median_cpu_s']:6.3f} s  {row['ratio']:5.2f}x  {check}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
