#!/usr/bin/env python3
"""kafkadump throughput and memory benchmark, with baselines on the same bytes.

Run:  .venv/bin/python bench/bench.py [--size 1G] [--records-size 128M] [--out DIR] [--keep] [--profile]

Measures, in one run (see bench/README.md for what each number means):

a. verify-crc on a file of 16 KiB v2 batches: kafkadump's ``CrcScan``
   in-process and the ``kafkadump verify-crc`` CLI, against a bare
   CRC-32C pass over the same mmap (per batch region, and whole file).
b. records --json --encoding base64 on small uncompressed records:
   kafkadump in-process and CLI, against kafka-python's ``MemoryRecords``
   reader formatting the same fields with ``json.dumps``.
c. peak memory of the CLI subprocesses (batches, records --json,
   verify-crc) on the large file.

Nothing is asserted: this prints numbers and ratios and writes them to
bench/out/results.json.
"""

from __future__ import annotations

import argparse
import base64
import cProfile
import inspect
import io
import json
import mmap
import os
import platform
import pstats
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_segment  # noqa: E402
from crc32c import crc32c  # noqa: E402
from make_segment import parse_size  # noqa: E402
from startup_bench import child_env  # noqa: E402

from kafkadump.decoders.batches import CrcScan  # noqa: E402
from kafkadump.decoders.batches import Options  # noqa: E402
from kafkadump.decoders.batches import iter_batches  # noqa: E402
from kafkadump.decoders.batches.model import Batch  # noqa: E402
from kafkadump.decoders.batches.model import Gap  # noqa: E402
from kafkadump.render.jsonl import RecordLines  # noqa: E402
from kafkadump.sources.segment import open_segment  # noqa: E402

GB = 1e9
BARE_CHUNK = 64 << 20
# the CLI children's environment (main sets it): compiled bytecode cached, as an installed package has it
CHILD_ENV: dict[str, str] | None = None

# The two file shapes (make_segment parameters, size added per run).
CRC_SHAPE = dict(batch_bytes=16 << 10, record_bytes="1000", key_bytes=8, records_per_batch=None,
                 headers=0, codec="none")
RECORDS_SHAPE = dict(batch_bytes=16 << 10, record_bytes="40-90", key_bytes=10, records_per_batch=150,
                     headers=0, codec="none")


# --- helpers -------------------------------------------------------------------------

def human_size(n: int) -> str:
    for unit, k in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k}{unit}"
    return str(n)


def git_state() -> dict:
    """The commit measured, and the files under kafkadump/ that differ from it (others edit concurrently)."""
    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=HERE.parent, capture_output=True, text=True,
                                  timeout=10).stdout.rstrip("\n")
        except (OSError, subprocess.SubprocessError):
            return ""
    return {"commit": git("rev-parse", "HEAD"),
            "modified": [ln[3:] for ln in git("status", "--porcelain", "--", "kafkadump").splitlines()]}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


CONTENTION: list = []   # (cpu/wall) of the single-threaded-ish runs, to flag a busy machine


def _note_cpu(cpu: float, wall: float) -> None:
    if wall > 0.5:
        CONTENTION.append(cpu / wall)


def ensure_segment(path: Path, size: int, shape: dict) -> dict:
    """Reuse ``path`` if its sidecar says it was made with these parameters, else generate it."""
    meta_path = Path(str(path) + ".json")
    if path.exists() and meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text())
            want = dict(shape, size=size, payload="random" if shape["codec"] == "none" else "text")
            if meta["params"] == want and path.stat().st_size == meta["bytes"]:
                log(f"reusing {path} ({meta['bytes']:,} bytes)")
                return meta
        except (ValueError, KeyError, OSError):
            pass
    log(f"generating {path} ...")
    return make_segment.make(str(path), size=size, **shape)


PAGE_CACHE: dict = {}   # file -> lowest resident fraction seen right after warming


def resident_fraction(path: Path) -> float | None:
    """Fraction of the file in the page cache (util-linux fincore), or None."""
    exe = shutil.which("fincore")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "--bytes", "--noheadings", "--raw", "--output", "RES", str(path)],
                             capture_output=True, text=True, timeout=30).stdout.split()
        return int(out[0]) / max(1, path.stat().st_size)
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


def warm(path: Path) -> float:
    """Read the file once so the next measurement runs from the page cache.

    Called before every measurement, not once: a host may page cold page
    cache out (this machine runs a DAMON "pageout" scheme for unmapped
    file pages idle for ~30 s), and the parts of the run are longer than that.
    """
    t0 = time.perf_counter()
    buf = bytearray(BARE_CHUNK)
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buf):
            pass
    took = time.perf_counter() - t0
    frac = resident_fraction(path)
    if frac is not None:
        key = str(path)
        PAGE_CACHE[key] = min(frac, PAGE_CACHE.get(key, 1.0))
    return took


def mapped(path: Path):
    f = open(path, "rb")
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    f.close()
    return m


def kafkadump_argv() -> list[str]:
    exe = Path(sys.executable).parent / "kafkadump"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "kafkadump"]


def _proc_status(pid: int) -> dict:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("RssAnon:", "RssFile:", "VmHWM:", "VmRSS:")):
                    k, v = line.split(":", 1)
                    out[k] = int(v.split()[0])  # KiB
    except OSError:
        pass
    return out


TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def _child_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
        return int(kids[0]) if kids else None
    except (OSError, ValueError):
        return None


def run_cli(args: list[str], *, capture: bool = False, sample: bool = False) -> dict:
    """Run the CLI once: wall time, exit code, peak RSS, CPU time.

    Peak RSS comes from ``/usr/bin/time -f %M`` when present: the rusage a
    parent gets from ``wait4`` for a child it forked itself also counts the
    parent's own resident pages at fork time, so this (large) benchmark
    process cannot measure its children directly.  Without /usr/bin/time the
    child's VmHWM is polled from /proc instead (exec resets it).  With
    ``sample``, /proc/PID/status is also polled every 10 ms for the peak
    anonymous and file-backed resident sizes (maxrss counts both, and a
    mapped file's pages count once touched).
    """
    argv = kafkadump_argv() + args
    out = tempfile.TemporaryFile() if capture else subprocess.DEVNULL
    err = tempfile.TemporaryFile()
    tfile = tempfile.NamedTemporaryFile(prefix="kafkadump-bench-time-", delete=False)
    tfile.close()
    full = [TIME, "-o", tfile.name, "-f", "%M %U %S"] + argv if TIME else argv
    peak = {"RssAnon": 0, "RssFile": 0, "VmHWM": 0}
    t0 = time.perf_counter()
    p = subprocess.Popen(full, stdout=out, stderr=err, env=CHILD_ENV)
    target = None if TIME else p.pid
    poll = sample or not TIME
    while poll:
        pid, status, _ = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if target is None:
            target = _child_of(p.pid)
        if target is not None:
            s = _proc_status(target)
            for k in peak:
                peak[k] = max(peak[k], s.get(k, 0))
        time.sleep(0.01)
    else:
        pid, status, _ = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    spent = None
    res = {"argv": argv, "wall_s": wall, "rc": p.returncode}
    try:
        maxrss_k, user, sys_ = open(tfile.name).read().split()[-3:] if TIME else (peak["VmHWM"], 0, 0)
        res.update(maxrss_mb=int(maxrss_k) * 1024 / 1e6, user_s=float(user), sys_s=float(sys_))
        if TIME:
            spent = float(user) + float(sys_)
    except ValueError:
        res.update(maxrss_mb=float("nan"), user_s=float("nan"), sys_s=float("nan"))
    os.unlink(tfile.name)
    if spent is not None:
        _note_cpu(spent, wall)
    if sample:
        res["peak_anon_mb"] = peak["RssAnon"] * 1024 / 1e6
        res["peak_file_mb"] = peak["RssFile"] * 1024 / 1e6
    if capture:
        out.seek(0)
        res["stdout_tail"] = out.read()[-2000:].decode("utf-8", "replace")
        out.close()
    err.seek(0)
    res["stderr_tail"] = err.read()[-2000:].decode("utf-8", "replace")
    err.close()
    if p.returncode != 0:
        log(f"  !! {' '.join(args)} exited {p.returncode}: {res['stderr_tail'].strip()[-500:]}")
    return res


# --- a. verify-crc -----------------------------------------------------------------

def bare_crc_whole(path: Path, fn=crc32c):
    """One CRC-32C over the whole mapping, in 64 MiB chunks: by default the crc32c package's (the
    ceiling for CRC speed); ``fn`` another with its signature (kafkadump's compiled one, for its speed)."""
    m = mapped(path)
    mv = memoryview(m)
    c = 0
    for i in range(0, len(m), BARE_CHUNK):
        c = fn(mv[i:i + BARE_CHUNK], c)
    mv.release()
    m.close()
    return c


def compiled_crc32c():
    """kafkadump's own CRC-32C (the compiled hot path's ``crc32c``, as verify-crc's hop computes it), or None."""
    from kafkadump.accel import compiled

    hop = compiled("crchop")
    return None if hop is None else hop.crc32c


_LEN_MAGIC_CRC = struct.Struct(">qiibI")


def bare_crc_batches(path: Path):
    """Walk the batches by length; crc32c each batch's CRC region and compare with the stored CRC."""
    m = mapped(path)
    mv = memoryview(m)
    end = len(m)
    unpack = _LEN_MAGIC_CRC.unpack_from
    pos = n = bad = 0
    while pos + 21 <= end:
        _, length, _, _, stored = unpack(m, pos)
        nxt = pos + 12 + length
        if crc32c(mv[pos + 21:nxt]) != stored:
            bad += 1
        n += 1
        pos = nxt
    mv.release()
    m.close()
    return n, bad


def bare_crc_batches_threads(path: Path, threads: int = 2):
    """Informational ceiling: the per-batch pass split over ``threads`` threads, GIL released.

    crc32c only releases the GIL by itself for buffers of 32 KiB or more
    (``gil_release_mode=-1``); 16 KiB batches need ``gil_release_mode=1``
    for two threads to run at once.
    """
    m = mapped(path)
    mv = memoryview(m)
    end = len(m)
    unpack = _LEN_MAGIC_CRC.unpack_from
    runs = []
    pos = 0
    while pos + 21 <= end:
        _, length, _, _, stored = unpack(m, pos)
        runs.append((pos, pos + 12 + length, stored))
        pos += 12 + length

    def work(part, out):
        out.append(sum(1 for a, z, c in part if crc32c(mv[a + 21:z], 0, 1) != c))

    k = (len(runs) + threads - 1) // threads
    results: list = []
    ths = [threading.Thread(target=work, args=(runs[i:i + k], results)) for i in range(0, len(runs), k)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    mv.release()
    m.close()
    return len(runs), sum(results)


def options(seg, **kw) -> Options:
    """Decoder options as the CLI builds them for a segment (with its page release, when the decoder has one)."""
    if "release" in getattr(Options, "__dataclass_fields__", {}) and hasattr(seg, "release"):
        kw["release"] = seg.release
    return Options(**kw)


def kd_crcscan(path: Path, **kw):
    """What ``kafkadump verify-crc FILE`` does, minus the CLI: open_segment + CrcScan."""
    seg = open_segment(str(path))
    try:
        scan = CrcScan(seg.buf, str(path), options(seg, records=False), **kw)
        problems = sum(1 for _ in scan)
        return scan.batches, scan.bad, problems
    finally:
        seg.close()


def timed(fn):
    """An in-process job for :func:`rounds`: ``() -> (seconds, cpu seconds, result)``."""
    def job():
        c0 = time.process_time()
        t0 = time.perf_counter()
        result = fn()
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
        _note_cpu(cpu, wall)
        return wall, cpu, result
    return job


def cli_job(args: list[str], **kw):
    """A CLI job for :func:`rounds`: ``() -> (wall seconds, cpu seconds, run_cli result)``."""
    def job():
        res = run_cli(args, **kw)
        return res["wall_s"], res["user_s"] + res["sys_s"], res
    return job


def rounds(jobs: dict, repeat: int, path: Path | None, label: str) -> dict:
    """Run every job once per round, ``repeat`` rounds, warming ``path`` before each run.

    Interleaving (rather than all runs of one job, then the next) lets a
    kafkadump run and its baseline see the same background load when the
    machine is shared.  Returns name -> (best wall seconds, all wall seconds, result of
    the best run, least CPU seconds).  CPU time (user + system, all threads) suffers
    less than wall time from other processes on the machine.
    """
    runs: dict = {name: [] for name in jobs}
    for i in range(max(1, repeat)):
        log(f"{label}: round {i + 1}/{max(1, repeat)}: {', '.join(jobs)}")
        for name, job in jobs.items():
            if path is not None:
                warm(path)
            runs[name].append(job())
    out = {}
    for name, rs in runs.items():
        best_s, _, result = min(rs, key=lambda x: x[0])
        out[name] = (best_s, [x[0] for x in rs], result, min(x[1] for x in rs))
    return out


def bench_verify_crc(path: Path, meta: dict, repeat: int, tiny: Path) -> dict:
    size = meta["bytes"]
    r: dict = {"file": str(path), "bytes": size, "batches": meta["batches"], "batch_size": meta["batch_size"]}

    def entry(seconds, times, **extra):
        return {"seconds": seconds, "runs": times, "gb_per_s": size / seconds / GB, **extra}

    startup = rounds({"version": cli_job(["--version"]), "tiny": cli_job(["verify-crc", str(tiny)])},
                     repeat, None, "verify-crc: CLI start-up")
    r["cli_version"] = {"seconds": startup["version"][0], "runs": startup["version"][1]}
    r["cli_startup"] = {"seconds": startup["tiny"][0], "runs": startup["tiny"][1], "file": str(tiny),
                        "cpu_seconds": startup["tiny"][3]}

    jobs = {
        "bare_whole": timed(lambda: bare_crc_whole(path)),
        "bare_batches": timed(lambda: bare_crc_batches(path)),
        "bare_batches_2threads": timed(lambda: bare_crc_batches_threads(path)),
        "kafkadump_inproc": timed(lambda: kd_crcscan(path)),
        "kafkadump_cli": cli_job(["verify-crc", str(path)], capture=True),
    }
    c_crc = compiled_crc32c()
    if c_crc is not None:
        jobs["c_crc_whole"] = timed(lambda: bare_crc_whole(path, c_crc))
    res = rounds(jobs, repeat, path, "verify-crc")
    s, ts, _, cpu = res["bare_whole"]
    r["bare_whole"] = entry(s, ts, cpu_seconds=cpu)
    if c_crc is not None:
        s, ts, value, cpu = res["c_crc_whole"]
        r["c_crc_whole"] = entry(s, ts, cpu_seconds=cpu, same_crc=value == res["bare_whole"][2])
        r["c_crc_whole"]["cpu_ratio_vs_bare_whole"] = r["bare_whole"]["cpu_seconds"] / cpu
    for k in ("bare_batches", "bare_batches_2threads"):
        s, ts, (n, bad), cpu = res[k]
        r[k] = entry(s, ts, batches=n, bad=bad, cpu_seconds=cpu)
    s, ts, (n, bad, problems), cpu = res["kafkadump_inproc"]
    r["kafkadump_inproc"] = entry(s, ts, batches=n, bad=bad, problem_items=problems, cpu_seconds=cpu)
    if n != meta["batches"] or bad or problems:
        log(f"  !! CrcScan saw {n} batches ({meta['batches']} written), {bad} bad, {problems} problem items")
    s, ts, fastest, cpu = res["kafkadump_cli"]
    r["kafkadump_cli"] = entry(s, ts, rc=fastest["rc"], cpu_seconds=cpu,
                               summary=fastest.get("stdout_tail", "").strip().splitlines()[-1:],
                               maxrss_mb=fastest["maxrss_mb"])
    for k in ("kafkadump_inproc", "kafkadump_cli"):
        gbs = r[k]["gb_per_s"]
        r[k]["ratio_vs_bare_batches"] = gbs / r["bare_batches"]["gb_per_s"]
        r[k]["ratio_vs_bare_whole"] = gbs / r["bare_whole"]["gb_per_s"]
        # the issue's measure: CPU seconds of one crc32c call over the file / kafkadump's (all its threads)
        r[k]["cpu_ratio_vs_bare_whole"] = r["bare_whole"]["cpu_seconds"] / r[k]["cpu_seconds"]
    net_cpu = r["kafkadump_cli"]["cpu_seconds"] - r["cli_startup"]["cpu_seconds"]
    if net_cpu > 0.01:
        r["kafkadump_cli"]["net_cpu_seconds"] = net_cpu
        r["kafkadump_cli"]["net_cpu_ratio_vs_bare_whole"] = r["bare_whole"]["cpu_seconds"] / net_cpu
    net = s - r["cli_startup"]["seconds"]
    if net > 0.02:  # else start-up noise swamps the work: no net figure
        cli = r["kafkadump_cli"]
        cli.update(net_seconds=net, net_gb_per_s=size / net / GB)
        cli["net_ratio_vs_bare_batches"] = cli["net_gb_per_s"] / r["bare_batches"]["gb_per_s"]
        cli["net_ratio_vs_bare_whole"] = cli["net_gb_per_s"] / r["bare_whole"]["gb_per_s"]
    return r


# --- b. records --json ---------------------------------------------------------------

def record_formatter():
    """``(batch, records) -> str`` of newline-terminated JSON lines, as the CLI's ``records --json`` does.

    ``RecordLines.batch_lines`` (the per-batch hot path) when the renderer
    has it, else one ``RecordLines.line`` per record.
    """
    rl = RecordLines("base64")
    if hasattr(rl, "batch_lines"):
        return rl.batch_lines
    line = rl.line
    return lambda b, recs: "\n".join([line(r, b) for r in recs]) + "\n"


def kd_records_json(path: Path, end: int | None = None) -> int:
    """What ``kafkadump records --json --encoding base64 FILE`` does (unfiltered), to /dev/null."""
    p = str(path)
    seg = open_segment(p)
    n = 0
    fmt = record_formatter()
    dumps = json.dumps
    try:
        with open(os.devnull, "w") as out:
            write = out.write
            for item in iter_batches(seg.buf, p, options=options(seg, records=True), end=end):
                if isinstance(item, Gap) or item.findings:
                    write(dumps({"type": "problem", "position": item.position}) + "\n")
                recs = item.records if isinstance(item, Batch) else None
                if recs:
                    write(fmt(item, recs))
                    n += len(recs)
    finally:
        seg.close()
    return n


def kd_records_decode_only(path: Path) -> int:
    p = str(path)
    seg = open_segment(p)
    n = 0
    try:
        for item in iter_batches(seg.buf, p, options=options(seg, records=True)):
            if isinstance(item, Batch) and item.records:
                n += len(item.records)
    finally:
        seg.close()
    return n


_TS_TYPES = ("CreateTime", "LogAppendTime")


def _b64(b):
    return None if b is None else base64.b64encode(b).decode("ascii")


def _topic_partition(path: str) -> tuple[str | None, int | None]:
    """What kafkadump's record lines say of the file's place: ``topic-N`` directory, else nulls."""
    topic, _, number = os.path.basename(os.path.dirname(os.path.abspath(path))).rpartition("-")
    return (topic, int(number)) if topic and number.isdigit() else (None, None)


def kp_lines(path: str, mem):
    """kafka-python's reader: yield (records of one batch as JSON lines) per batch."""
    from kafka.record.memory_records import MemoryRecords

    dumps = json.JSONEncoder(separators=(",", ":")).encode  # built once: the C encoder, compact
    topic, partition = _topic_partition(path)
    pos = 0
    for batch in MemoryRecords(mem):
        base = batch.base_offset
        first_ts = batch.first_timestamp
        tst = _TS_TYPES[batch.timestamp_type]
        lines = []
        for rec in batch:
            ts = rec.timestamp
            lines.append(dumps({
                "type": "record", "file": path, "topic": topic, "partition": partition, "batchPosition": pos,
                "offset": rec.offset,
                "timestamp": ts, "timestampType": tst, "key": _b64(rec.key), "value": _b64(rec.value),
                "headers": [{"key": k, "value": _b64(v)} for k, v in rec.headers],
                "offsetDelta": rec.offset - base, "timestampDelta": ts - first_ts, "control": None,
            }))
        yield lines
        pos += batch.size_in_bytes


def kp_records_json(path: Path) -> int:
    m = mapped(path)
    n = 0
    try:
        with open(os.devnull, "w") as out:
            write = out.write
            for lines in kp_lines(str(path), m):
                if lines:
                    write("\n".join(lines) + "\n")
                    n += len(lines)
    finally:
        m.close()
    return n


def kp_records_decode_only(path: Path) -> int:
    from kafka.record.memory_records import MemoryRecords

    m = mapped(path)
    n = 0
    try:
        for batch in MemoryRecords(m):
            for rec in batch:
                rec.key, rec.value, rec.headers  # noqa: B018  (records are fully decoded by iteration)
                n += 1
    finally:
        m.close()
    return n


def outputs_match(path: Path, batches: int = 3) -> dict:
    """Cross-check: kafkadump's and the kafka-python baseline's lines parse to the same objects."""
    p = str(path)
    seg = open_segment(p)
    fmt = record_formatter()
    ours = []
    try:
        for i, item in enumerate(iter_batches(seg.buf, p, options=Options(records=True))):
            if i >= batches:
                break
            ours.extend(json.loads(x) for x in fmt(item, item.records).splitlines())
    finally:
        seg.close()
    m = mapped(path)
    theirs = []
    try:
        for i, lines in enumerate(kp_lines(p, m)):
            if i >= batches:
                break
            theirs.extend(json.loads(x) for x in lines)
    finally:
        m.close()
    diff = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)
    ok = len(ours) == len(theirs) and diff is None
    res = {"batches_compared": batches, "records_compared": len(ours), "match": ok}
    if not ok:
        res["first_difference"] = {"index": diff, "kafkadump": ours[diff] if diff is not None else None,
                                   "kafka_python": theirs[diff] if diff is not None else None}
        log(f"  !! kafkadump and kafka-python lines differ: {res['first_difference']}")
    return res


def bench_records(path: Path, meta: dict, repeat: int, breakdown: bool, baseline: bool, tiny: Path) -> dict:
    nrec = meta["records"]
    r: dict = {"file": str(path), "bytes": meta["bytes"], "records": nrec, "batches": meta["batches"],
               "records_per_batch": meta["records_per_batch"],
               "avg_record_bytes": (meta["batch_size"] - 61) / meta["records_per_batch"]}

    def entry(seconds, times, n=None):
        e = {"seconds": seconds, "runs": times, "records_per_s": nrec / seconds,
             "mb_per_s": meta["bytes"] / seconds / 1e6}
        if n is not None and n != nrec:
            e["records_seen"] = n
            log(f"  !! saw {n} records, {nrec} written")
        return e

    r["outputs_match"] = outputs_match(path)
    json_args = ["records", "--json", "--encoding", "base64"]
    startup = rounds({"tiny": cli_job(json_args + [str(tiny)])}, repeat, None, "records: CLI start-up")
    r["cli_startup"] = {"seconds": startup["tiny"][0], "runs": startup["tiny"][1], "file": str(tiny)}

    jobs = {}
    if baseline:
        jobs["kafka_python"] = timed(lambda: kp_records_json(path))
    jobs["kafkadump_inproc"] = timed(lambda: kd_records_json(path))
    jobs["kafkadump_cli"] = cli_job(json_args + [str(path)])
    if breakdown:
        if baseline:
            jobs["kafka_python_decode_only"] = timed(lambda: kp_records_decode_only(path))
        jobs["kafkadump_decode_only"] = timed(lambda: kd_records_decode_only(path))
    res = rounds(jobs, repeat, path, "records")
    for k, (s, ts, result, cpu) in res.items():
        if k == "kafkadump_cli":
            r[k] = entry(s, ts)
            r[k].update(rc=result["rc"], maxrss_mb=result["maxrss_mb"], cpu_seconds=cpu)
            net = s - r["cli_startup"]["seconds"]
            if net > 0.02:  # else start-up noise swamps the work: no net figure
                r[k].update(net_seconds=net, net_records_per_s=nrec / net)
        else:
            r[k] = entry(s, ts, result)
            r[k]["cpu_seconds"] = cpu
    if baseline:
        kp = r["kafka_python"]["records_per_s"]
        for k in ("kafkadump_inproc", "kafkadump_cli"):
            r[k]["ratio_vs_kafka_python"] = r[k]["records_per_s"] / kp
            r[k]["cpu_ratio_vs_kafka_python"] = r["kafka_python"]["cpu_seconds"] / r[k]["cpu_seconds"]
        if "net_records_per_s" in r["kafkadump_cli"]:
            r["kafkadump_cli"]["net_ratio_vs_kafka_python"] = r["kafkadump_cli"]["net_records_per_s"] / kp
        if breakdown:
            r["kafkadump_decode_only"]["ratio_vs_kafka_python_decode_only"] = (
                r["kafkadump_decode_only"]["records_per_s"] / r["kafka_python_decode_only"]["records_per_s"])
            r["kafkadump_decode_only"]["cpu_ratio_vs_kafka_python_decode_only"] = (
                r["kafka_python_decode_only"]["cpu_seconds"] / r["kafkadump_decode_only"]["cpu_seconds"])
    return r


# --- c. memory -------------------------------------------------------------------------

def bench_memory(path: Path) -> dict:
    out = {}
    for name, args in (("batches", ["batches", str(path)]),
                       ("records --json", ["records", "--json", "--encoding", "base64", str(path)]),
                       ("verify-crc", ["verify-crc", str(path)])):
        log(f"memory: kafkadump {name} ...")
        warm(path)
        res = run_cli(args, sample=True)
        out[name] = {k: res[k] for k in ("wall_s", "rc", "maxrss_mb", "peak_anon_mb", "peak_file_mb",
                                         "user_s", "sys_s")}
    return out


# --- profiles ---------------------------------------------------------------------------

def profile(crc_path: Path, rec_path: Path, rec_meta: dict, out_dir: Path, limit_bytes: int) -> dict:
    res = {}
    bs = rec_meta["batch_size"]
    end = max(bs, (min(limit_bytes, rec_meta["bytes"]) // bs) * bs)
    jobs = [("verify-crc", lambda: kd_crcscan(crc_path))]
    if "threads" in inspect.signature(CrcScan).parameters:
        # cProfile sees only the thread it runs in: profile the serial path too
        jobs.append(("verify-crc-serial", lambda: kd_crcscan(crc_path, threads=1)))
    jobs.append(("records-json", lambda: kd_records_json(rec_path, end=end)))
    for name, fn in jobs:
        log(f"profile: {name} ...")
        warm(rec_path if name.startswith("records") else crc_path)
        pr = cProfile.Profile()
        pr.enable()
        fn()
        pr.disable()
        prof = out_dir / f"profile-{name}.prof"
        pr.dump_stats(str(prof))
        buf = io.StringIO()
        st = pstats.Stats(pr, stream=buf).strip_dirs().sort_stats("tottime")
        st.print_stats(14)
        text = buf.getvalue()
        body = text[text.find("   ncalls"):] if "   ncalls" in text else text
        res[name] = {"prof": str(prof), "top_tottime": body.rstrip()}
    res["records_profile_bytes"] = end
    return res


# --- report -------------------------------------------------------------------------------

def _f(x, fmt: str, width: int) -> str:
    return format("-" if x is None else format(x, fmt), f">{width}")


def report(res: dict) -> str:
    L = []
    w = L.append
    v = res.get("verify_crc")
    if v:
        w(f"verify-crc  {Path(v['file']).name}: {v['bytes'] / GB:.2f} GB, {v['batches']:,} batches of "
          f"{v['batch_size']:,} B")
        w(f"  {'':42}{'wall s':>8}{'cpu s':>7}{'GB/s':>7}{'vs per-batch':>14}{'vs whole':>10}"
          f"{'by cpu':>8}")
        rows = [("bare crc32c, whole mmap, 64 MiB chunks", v["bare_whole"], False),
                ("bare crc32c, per batch (walk lengths)", v["bare_batches"], False),
                ("  info: same, 2 threads, GIL released", v["bare_batches_2threads"], False),
                ("kafkadump CrcScan, in-process", v["kafkadump_inproc"], True),
                ("kafkadump verify-crc CLI", v["kafkadump_cli"], True)]
        if "c_crc_whole" in v:
            rows.insert(3, ("  info: kafkadump's C crc32c, whole mmap", v["c_crc_whole"], False))
        for label, e, ratio in rows:
            tail = f"{e['ratio_vs_bare_batches']:>13.2f}x{e['ratio_vs_bare_whole']:>9.2f}x" if ratio else ""
            if "cpu_ratio_vs_bare_whole" in e:
                tail = f"{tail or '':>24}{e['cpu_ratio_vs_bare_whole']:>7.2f}x"
            w(f"  {label:42}{e['seconds']:>8.3f}{_f(e.get('cpu_seconds'), '.3f', 7)}{e['gb_per_s']:>7.2f}{tail}")
        c = v["kafkadump_cli"]
        label = "  same, net of CLI start-up (" + format(v["cli_startup"]["seconds"], ".3f") + " s)"
        if "net_seconds" in c:
            w(f"  {label:42}{c['net_seconds']:>8.3f}{'':>7}{c['net_gb_per_s']:>7.2f}"
              f"{c['net_ratio_vs_bare_batches']:>13.2f}x{c['net_ratio_vs_bare_whole']:>9.2f}x")
        else:
            w(f"  {label:42}{'-':>8}  (start-up takes as long as the work)")
        if "net_cpu_seconds" in c:
            label = "  same, CPU net of start-up (" + format(v["cli_startup"]["cpu_seconds"], ".3f") + " cpu s)"
            w(f"  {label:42}{'':>8}{c['net_cpu_seconds']:>7.3f}{'':>31}{c['net_cpu_ratio_vs_bare_whole']:>7.2f}x")
        w(f"  (CLI start-up: --version {v['cli_version']['seconds']:.3f} s, verify-crc on a one-batch file "
          f"{v['cli_startup']['seconds']:.3f} s)")
        w("")
    r = res.get("records")
    if r:
        w(f"records --json --encoding base64  {Path(r['file']).name}: {r['bytes'] / 1e6:.0f} MB, "
          f"{r['records']:,} records (~{r['avg_record_bytes']:.0f} B each, {r['records_per_batch']} a batch)")
        w(f"  {'':42}{'wall s':>8}{'cpu s':>7}{'records/s':>11}{'MB/s':>6}{'vs kafka-python':>16}{'by cpu':>8}")
        rows = [("kafka-python MemoryRecords + json.dumps", "kafka_python", None),
                ("kafkadump in-process", "kafkadump_inproc", "kafka_python"),
                ("kafkadump records --json CLI", "kafkadump_cli", "kafka_python"),
                ("decode only: kafka-python", "kafka_python_decode_only", None),
                ("decode only: kafkadump iter_batches", "kafkadump_decode_only", "kafka_python_decode_only")]
        for label, key, base in rows:
            e = r.get(key)
            if not e:
                continue
            tail = ""
            if base:
                rk = "ratio_vs_" + base
                tail = f"{_f(e.get(rk), '.2f', 15)}x{_f(e.get('cpu_' + rk), '.2f', 7)}x"
            w(f"  {label:42}{e['seconds']:>8.2f}{_f(e.get('cpu_seconds'), '.2f', 7)}{e['records_per_s']:>11,.0f}"
              f"{e['mb_per_s']:>6.1f}{tail}")
            if key == "kafkadump_cli" and "net_seconds" in e:
                tail = f"{_f(e.get('net_ratio_vs_kafka_python'), '.2f', 15)}x"
                w(f"  {'  same, net of CLI start-up (' + format(r['cli_startup']['seconds'], '.3f') + ' s)':42}"
                  f"{e['net_seconds']:>8.2f}{'':>7}{e['net_records_per_s']:>11,.0f}"
                  f"{r['bytes'] / e['net_seconds'] / 1e6:>6.1f}{tail}")
        m = r["outputs_match"]
        w(f"  output cross-check (first {m['batches_compared']} batches, {m['records_compared']} records): "
          f"{'identical' if m['match'] else 'DIFFERENT'}")
        w("")
    mem = res.get("memory")
    if mem:
        w(f"CLI memory on {Path(res['files']['crc']['path']).name} (MB; maxrss = VmHWM incl. mapped file pages)")
        w(f"  {'command':22}{'wall s':>8}{'cpu s':>8}{'maxrss':>9}{'peak anon':>11}{'peak file':>11}{'rc':>4}")
        for name, e in mem.items():
            w(f"  {name:22}{e['wall_s']:>8.2f}{e['user_s'] + e['sys_s']:>8.2f}{e['maxrss_mb']:>9.0f}"
              f"{e['peak_anon_mb']:>11.0f}{e['peak_file_mb']:>11.0f}{e['rc']:>4}")
        w("")
    m = res["machine"]
    low = m.get("lowest_cpu_per_wall")
    w(f"load average at start {m['loadavg_at_start'][0]:.2f}, at end {m.get('loadavg_at_end', (0,))[0]:.2f}; "
      f"lowest CPU/wall of a timed run {'-' if low is None else format(low, '.2f')}"
      + ("  <-- the machine was busy: numbers are not trustworthy" if low is not None and low < 0.85 else ""))
    pc = res.get("page_cache_min_resident_after_warm")
    if pc:
        w("page cache, lowest resident fraction right after warming: " +
          ", ".join(f"{Path(k).name} {v:.0%}" for k, v in pc.items()))
    return "\n".join(L)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="kafkadump benchmarks (see bench/README.md).")
    ap.add_argument("--size", type=parse_size, default=1 << 30,
                    help="verify-crc / memory file size (default 1G)")
    ap.add_argument("--records-size", type=parse_size, default=128 << 20,
                    help="records --json file size (default 128M)")
    ap.add_argument("--out", type=Path, default=None,
                    help="directory for the segment files; reused when present and kept "
                         "(default: a fresh temp dir under /tmp, deleted at the end unless --keep)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir's segment files")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of verify-crc measurements, best kept (default 3)")
    ap.add_argument("--records-repeat", type=int, default=2,
                    help="rounds of records measurements, best kept (default 2)")
    ap.add_argument("--only", choices=("crc", "records", "memory"), action="append",
                    help="run only these parts (repeatable; default all)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the kafka-python records baseline")
    ap.add_argument("--no-breakdown", action="store_true", help="skip the decode-only records measurements")
    ap.add_argument("--profile", action="store_true",
                    help="also cProfile kafkadump in-process (verify-crc, records --json); "
                         "writes bench/out/profile-*.prof")
    ap.add_argument("--profile-bytes", type=parse_size, default=32 << 20,
                    help="records file prefix to profile (default 32M)")
    ap.add_argument("--no-bytecode", action="store_true",
                    help="CLI children compile every module from source on each start (PYTHONDONTWRITEBYTECODE=1) "
                         "instead of caching bytecode under the work dir as an installed package has it")
    ap.add_argument("--results", type=Path, default=HERE / "out" / "results.json",
                    help="where to write the JSON results (default bench/out/results.json)")
    a = ap.parse_args(argv)
    parts = set(a.only or ("crc", "records", "memory"))

    if a.out is not None:
        work = a.out
        work.mkdir(parents=True, exist_ok=True)
        cleanup = False
    else:
        work = Path(tempfile.mkdtemp(prefix="kafkadump-bench-", dir="/tmp"))
        cleanup = not a.keep
    a.results.parent.mkdir(parents=True, exist_ok=True)
    global CHILD_ENV
    CHILD_ENV = child_env(str(work), bytecode=not a.no_bytecode)
    t_start = time.perf_counter()
    res: dict = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count(), "processor": platform.processor(),
                    "loadavg_at_start": os.getloadavg()},
        "args": {k: (str(x) if isinstance(x, Path) else x) for k, x in vars(a).items()},
        "code": git_state(),
        "files": {},
    }
    try:
        crc_path = work / f"crc-{human_size(a.size)}.log"
        rec_path = work / f"records-{human_size(a.records_size)}.log"
        if parts & {"crc", "memory"}:
            res["files"]["crc"] = ensure_segment(crc_path, a.size, CRC_SHAPE)
            log(f"warming page cache: {crc_path.name} ({warm(crc_path):.2f} s)")
        if "records" in parts or a.profile:
            res["files"]["records"] = ensure_segment(rec_path, a.records_size, RECORDS_SHAPE)
            log(f"warming page cache: {rec_path.name} ({warm(rec_path):.2f} s)")
        tiny = work / "tiny.log"  # one one-record batch: CLI start-up cost with the same command
        make_segment.make(str(tiny), size=100, records_per_batch=1, record_bytes="10", quiet=True)
        if "crc" in parts:
            res["verify_crc"] = bench_verify_crc(crc_path, res["files"]["crc"], a.repeat, tiny)
        if "records" in parts:
            res["records"] = bench_records(rec_path, res["files"]["records"], a.records_repeat,
                                           breakdown=not a.no_breakdown, baseline=not a.no_baseline, tiny=tiny)
        if "memory" in parts:
            res["memory"] = bench_memory(crc_path)
        if a.profile:
            if "crc" not in res["files"]:
                res["files"]["crc"] = ensure_segment(crc_path, a.size, CRC_SHAPE)
            res["profile"] = profile(crc_path, rec_path, res["files"]["records"], a.results.parent,
                                     a.profile_bytes)
        res["page_cache_min_resident_after_warm"] = PAGE_CACHE
        res["machine"]["loadavg_at_end"] = os.getloadavg()
        res["machine"]["lowest_cpu_per_wall"] = min(CONTENTION) if CONTENTION else None
        res["total_seconds"] = time.perf_counter() - t_start
    finally:
        if cleanup:
            shutil.rmtree(work, ignore_errors=True)
        elif a.out is None:
            log(f"segment files kept in {work}")

    a.results.write_text(json.dumps(res, indent=1) + "\n")
    print()
    print(report(res))
    if "profile" in res:
        for name in [k for k in res["profile"] if k != "records_profile_bytes"]:
            print(f"profile {name} (cProfile, top by tottime; {res['profile'][name]['prof']}):")
            print(res["profile"][name]["top_tottime"])
            print()
    print(f"total {res['total_seconds']:.0f} s; results in {a.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
