#!/usr/bin/env python3
"""The compiled hot path against the pure-Python path and against other readers, in CPU seconds.

Run:  .venv/bin/python bench/accel_bench.py [--records-size 32M] [--crc-size 256M] [--repeat 3] [--out DIR]
      [--only records|batches|crc|limit|corpus] [--json PATH]

Every row runs in this process on the same mapped bytes, interleaved round by round (each
job once per round), and reports the least CPU seconds (user + system) of its rounds:

records --json (small records, 10-byte keys, 40-90 byte text values, one header of 8 random bytes):
  compiled         kafkadump's records --json body (record_report + write_record_report, --encoding base64)
  pure Python      the same with the compiled loops switched off (what KAFKADUMP_PURE_PYTHON=1 does)
  kafka-python     kafka-python's reader, a dict per record with the same fields, bytes as base64, json.dumps
  aiokafka+orjson  aiokafka's C reader (its _crecords), the same dict, orjson.dumps (when both install:
                   the ``bench`` extra)
batches --json:
  kafkadump        batch_report + write_batch_report (records checked for their findings, as the command does;
                   it and the bare pass run once untimed, then at least 5 rounds whatever --repeat says)
  bare pass        walk by length, unpack the header, crc32c of the batch, a dict of the same fields, json.dumps
C loop limit (one-record batches, and 150 records a batch):
  kafkadump        records --json and batches --json as the command runs them (record_windows / batch_windows and
                   the JSON writers: windows of plain batches checked and written by the compiled code)
  C loop limit     the same compiled check and line writers called straight over the file, a window of bytes a call: a C
                   loop making the same lines (checked byte-identical to kafkadump's before timing), without the
                   Python that walks, windows and writes
corpus (the user topics of ../shared/corpus/real: every segment but those of __consumer_offsets,
__transaction_state and __cluster_metadata):
  kafkadump        records --json over all of them, as the command runs it
  kafka-python     kafka-python's reader over each, the same dict per record, json.dumps
verify-crc:
  kafkadump        crc_report's scan (CrcScan), one thread
  crc32c           one crc32c call over the whole file (64 MiB at a time)

Ratios are CPU-second ratios from the same run.  ``main(argv)`` returns the results as a dict
(``bench/run_all.py`` calls it); the CLI prints them and writes them as JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import base64
import json
import mmap
import os
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import make_segment  # noqa: E402
from crc32c import crc32c  # noqa: E402

from kafkadump import accel  # noqa: E402
from kafkadump.base.status import Tally  # noqa: E402
from kafkadump.decoders.batches import Options  # noqa: E402
from kafkadump.decoders.batches import batch as batch_module  # noqa: E402
from kafkadump.decoders.batches import step as step_module  # noqa: E402
from kafkadump.decoders.batches import walk as walk_module  # noqa: E402
from kafkadump.decoders.batches.model import EVERY_RECORD  # noqa: E402
from kafkadump.decoders.batches.walk import CrcScan  # noqa: E402
from kafkadump.render import jsonl  # noqa: E402
from kafkadump.render.jsonl import write_batch_report, write_record_report  # noqa: E402
from kafkadump.reports.query import RecordQuery  # noqa: E402
from kafkadump.reports.segments import batch_windows, record_windows  # noqa: E402
from kafkadump.sources.segment import open_segment  # noqa: E402

RECORDS_SHAPE = dict(batch_bytes=16 << 10, record_bytes="40-90", key_bytes=10, records_per_batch=150, headers=1,
                     codec="none", payload="text")
ONE_SHAPE = dict(RECORDS_SHAPE, records_per_batch=1)
CRC_SHAPE = dict(batch_bytes=16 << 10, record_bytes="1000", key_bytes=8, records_per_batch=None, headers=0,
                 codec="none")
CHUNK = 64 << 20
WARM_ROUNDS = 5  # the least rounds of a job warmed first (see interleaved)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@contextmanager
def pure_python():
    """The compiled loops switched off in this process (what KAFKADUMP_PURE_PYTHON=1 does at start)."""
    jsonl._record_hot(), jsonl._batch_hot()  # (loaded on first use: loaded now, to be switched off)
    saved = batch_module._HOT, jsonl._HOT, jsonl._BATCH_HOT, walk_module._HOT, step_module._HOT
    batch_module._HOT = jsonl._HOT = jsonl._BATCH_HOT = walk_module._HOT = step_module._HOT = None
    try:
        yield
    finally:
        batch_module._HOT, jsonl._HOT, jsonl._BATCH_HOT, walk_module._HOT, step_module._HOT = saved


def ensure(path: Path, size: int, shape: dict) -> dict:
    meta = Path(str(path) + ".json")
    if path.exists() and meta.exists():
        m = json.loads(meta.read_text())
        if m["params"].get("size") == size and m["params"].get("headers") == shape["headers"] \
                and path.stat().st_size == m["bytes"]:
            return m
    return make_segment.make(str(path), size=size, quiet=True, **shape)


def mapped(path: Path) -> mmap.mmap:
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


# --- records --json -------------------------------------------------------------------------------------

def kd_records(path: Path, out_path: str = os.devnull, encoding: str = "base64") -> None:
    with open(out_path, "w") as out:
        write_record_report(record_windows([str(path)], Options(), RecordQuery(), Tally()), out, encoding)


def kd_records_pure(path: Path) -> None:
    with pure_python():
        kd_records(path)


def _b64(b: bytes | None) -> str | None:
    """Bytes as base64, as a plain reader writes them (no test for text first: that is kafkadump's
    ``--encoding auto`` work, which a plain reader does not do; kafkadump runs with ``base64`` here)."""
    return None if b is None else base64.b64encode(b).decode("ascii")


def _record_dict(path: str, pos: int, base: int, first_ts: int, tst: str, rec) -> dict:
    return {"type": "record", "file": path, "topic": None, "partition": None, "batchPosition": pos,
            "offset": rec.offset, "timestamp": rec.timestamp, "timestampType": tst, "key": _b64(rec.key),
            "value": _b64(rec.value), "headers": [{"key": k, "value": _b64(v)} for k, v in rec.headers],
            "offsetDelta": rec.offset - base, "timestampDelta": rec.timestamp - first_ts, "control": None}


def kafka_python_json(path: Path) -> None:
    from kafka.record.memory_records import MemoryRecords

    dumps = json.JSONEncoder(separators=(",", ":")).encode
    m = mapped(path)
    pos = 0
    p = str(path)
    with open(os.devnull, "w") as out:
        for batch in MemoryRecords(m):
            tst = ("CreateTime", "LogAppendTime")[batch.timestamp_type]
            base, first = batch.base_offset, batch.first_timestamp
            out.write("".join(dumps(_record_dict(p, pos, base, first, tst, r)) + "\n" for r in batch))
            pos += batch.size_in_bytes
    m.close()


def aiokafka_orjson(path: Path) -> None:
    import orjson
    from aiokafka.record._crecords import MemoryRecords

    data = path.read_bytes()  # aiokafka's reader takes bytes
    records = MemoryRecords(data)
    p = str(path)
    pos = 0
    with open(os.devnull, "wb") as out:
        while True:
            batch = records.next_batch()
            if batch is None:
                break
            tst = ("CreateTime", "LogAppendTime")[batch.timestamp_type]
            base, first = batch.base_offset, batch.first_timestamp
            out.write(b"".join(orjson.dumps(_record_dict(p, pos, base, first, tst, r)) + b"\n" for r in batch))
            pos += batch.size_in_bytes if hasattr(batch, "size_in_bytes") else 0


def have_aiokafka_orjson() -> bool:
    try:
        import orjson  # noqa: F401
        from aiokafka.record._crecords import MemoryRecords  # noqa: F401
    except ImportError:
        return False
    return True


# --- batches --json -------------------------------------------------------------------------------------

def kd_batches(path: Path, out_path: str = os.devnull) -> None:
    with open(out_path, "w") as out:
        write_batch_report(batch_windows([str(path)], Options(), Tally()), out)


# --- the C loop limit ------------------------------------------------------------------------------------

C_LOOP_STEP = walk_module.WINDOW_BYTES  # (as the windows: larger calls only make the text pile up)


def c_loop(path: Path, what: str, out_path: str = os.devnull) -> None:
    """The compiled window check and line writers straight over the file (``what``: records or batches)."""
    step = step_module.compiled_step()
    lines = jsonl.RecordLines("auto")
    batch_writer = jsonl._batch_hot()
    assert step is not None and batch_writer is not None and jsonl._HOT is not None
    p = str(path)
    head = jsonl.batch_head_json(p)
    segs = lines._window_segments(p)
    m = mapped(path)
    end = len(m)
    pos, prev = 0, None
    with open(out_path, "w") as out:
        while pos < end:
            got = step.plain_window(m, pos, end, min(end, pos + C_LOOP_STEP), 1 << 31, True, prev, EVERY_RECORD, crc32c)
            assert got is not None, "not a plain file"
            nxt, _, _, prev = got
            if what == "records":
                out.write(jsonl._HOT.window_record_lines(m, pos, nxt, 0, segs[1], segs[2], segs[3], 0,
                                                         jsonl.VALUE_JSON["auto"], jsonl._dumps, EVERY_RECORD))
            else:
                out.write(batch_writer.window_batch_lines(m, pos, nxt, 0, head))
            pos = nxt
    m.close()


def same_output(a: Callable[[str], None], b: Callable[[str], None], work: Path) -> bool:
    """Whether two jobs write the same bytes (each given the path to write to)."""
    pa, pb = work / "out-a.jsonl", work / "out-b.jsonl"
    a(str(pa))
    b(str(pb))
    same = pa.read_bytes() == pb.read_bytes()
    pa.unlink()
    pb.unlink()
    return same


_HEADER = struct.Struct(">qiibIhiqqqhii")


def bare_batches(path: Path) -> None:
    """Header + CRC + JSON and nothing else: the least work that gives a line per batch."""
    m = mapped(path)
    mv = memoryview(m)
    end = len(m)
    pos = 0
    p = str(path)
    dumps = json.dumps
    with open(os.devnull, "w") as out:
        write = out.write
        while pos + 61 <= end:
            (bo, length, ple, magic, crc, attrs, lod, bts, mts, pid, pe, bseq, count) = _HEADER.unpack_from(m, pos)
            computed = crc32c(mv[pos + 21:pos + 12 + length])
            write(dumps({"type": "batch", "file": p, "position": pos, "size": length + 12, "baseOffset": bo,
                         "batchLength": length, "partitionLeaderEpoch": ple, "magic": magic, "crc": crc,
                         "attributes": attrs, "lastOffsetDelta": lod, "baseTimestamp": bts, "maxTimestamp": mts,
                         "producerId": pid, "producerEpoch": pe, "baseSequence": bseq, "recordCount": count,
                         "crcValid": computed == crc, "computedCrc": computed, "findings": []}) + "\n")
            pos += 12 + length
    mv.release()
    m.close()


# --- verify-crc -----------------------------------------------------------------------------------------

def kd_verify_crc(path: Path) -> None:
    seg = open_segment(str(path))
    try:
        scan = CrcScan(seg.buf, str(path), Options(records=False), threads=1)
        for _ in scan:
            pass
    finally:
        seg.close()


def one_crc32c(path: Path) -> None:
    m = mapped(path)
    mv = memoryview(m)
    c = 0
    for i in range(0, len(m), CHUNK):
        c = crc32c(mv[i:i + CHUNK], c)
    mv.release()
    m.close()


# --- the runs -------------------------------------------------------------------------------------------

def cpu_of(fn: Callable[[], None]) -> float:
    c0 = time.process_time()
    fn()
    return time.process_time() - c0


def interleaved(jobs: dict[str, Callable[[], None]], repeat: int, label: str,
                warm: tuple[str, ...] = ()) -> dict[str, float]:
    """Each job once per round, ``repeat`` rounds: the least CPU seconds of each.

    The jobs named in ``warm`` run once untimed first, so that one round (``--repeat 1``) does not
    time one-time costs (the first call's lazy imports, caches filled: start-up has its own
    benchmark), and they run at least :data:`WARM_ROUNDS` rounds (the others stop after
    ``repeat``): they take milliseconds, where one round's figure is at the mercy of one
    interruption."""
    for name in warm:
        jobs[name]()
    rounds = {name: max(repeat, WARM_ROUNDS) if name in warm else repeat for name in jobs}
    best = {name: float("inf") for name in jobs}
    for i in range(max(rounds.values())):
        log(f"{label}: round {i + 1}/{max(rounds.values())}")
        for name, job in jobs.items():
            if i < rounds[name]:
                best[name] = min(best[name], cpu_of(job))
    return best


def run(args: argparse.Namespace) -> dict:
    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="kafkadump-accel-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    res: dict = {"path": accel.active_path(), "compiled_built": all(accel.compiled(name) is not None for name in accel.HOT_PATH)}
    parts = set(args.only or ["records", "batches", "crc", "limit", "corpus"])
    if "records" in parts or "batches" in parts:
        rec_path = work / f"records-1h-{args.records_size}.log"
        meta = ensure(rec_path, make_segment.parse_size(args.records_size), RECORDS_SHAPE)
        n = meta["records"]
        res["records_file"] = {"path": str(rec_path), "bytes": meta["bytes"], "records": n,
                               "batches": meta["batches"]}
    if "records" in parts:
        jobs = {"compiled": lambda: kd_records(rec_path), "pure": lambda: kd_records_pure(rec_path),
                "kafka_python_json": lambda: kafka_python_json(rec_path)}
        if have_aiokafka_orjson():
            jobs["aiokafka_orjson"] = lambda: aiokafka_orjson(rec_path)
        cpu = interleaved(jobs, args.repeat, "records --json")
        res["records"] = {name: {"cpu_s": s, "records_per_cpu_s": n / s} for name, s in cpu.items()}
        for name in cpu:
            res["records"][name]["compiled_speedup"] = cpu[name] / cpu["compiled"]
    if "batches" in parts:
        cpu = interleaved({"kafkadump": lambda: kd_batches(rec_path), "bare": lambda: bare_batches(rec_path),
                           "kafkadump_pure": lambda: _pure(kd_batches, rec_path)}, args.repeat, "batches --json",
                          warm=("kafkadump", "bare"))
        res["batches"] = {"cpu_s": cpu, "ratio_vs_bare": cpu["kafkadump"] / cpu["bare"],
                          "pure_ratio_vs_bare": cpu["kafkadump_pure"] / cpu["bare"], "file": "records"}
    if "limit" in parts:
        res["limit"] = c_loop_limit(work, args)
    if "corpus" in parts:
        res["corpus"] = corpus_user_topics(args)
    if "crc" in parts:
        crc_path = work / f"crc-{args.crc_size}.log"
        meta = ensure(crc_path, make_segment.parse_size(args.crc_size), CRC_SHAPE)
        cpu = interleaved({"kafkadump": lambda: kd_verify_crc(crc_path), "one_crc32c": lambda: one_crc32c(crc_path),
                           "kafkadump_pure": lambda: _pure(kd_verify_crc, crc_path)}, args.repeat, "verify-crc")
        # batches --json again on 16 KiB batches of 1000-byte records (16 a batch): the batch hop itself
        big = interleaved({"kafkadump": lambda: kd_batches(crc_path), "bare": lambda: bare_batches(crc_path),
                           "kafkadump_pure": lambda: _pure(kd_batches, crc_path)}, args.repeat, "batches --json (large)",
                          warm=("kafkadump", "bare"))
        res["batches_large_records"] = {"cpu_s": big, "ratio_vs_bare": big["kafkadump"] / big["bare"],
                                        "pure_ratio_vs_bare": big["kafkadump_pure"] / big["bare"], "file": "crc"}
        res["verify_crc"] = {"bytes": meta["bytes"], "cpu_s": cpu,
                             "speed_vs_one_crc32c": cpu["one_crc32c"] / cpu["kafkadump"],
                             "pure_speed_vs_one_crc32c": cpu["one_crc32c"] / cpu["kafkadump_pure"]}
    return res


def _limit_jobs(path: Path, work: Path) -> dict[str, Callable[[], None]]:
    """records and batches --json of ``path``, each beside its C loop (their lines checked the same), and
    kafka-python's reader."""
    jobs: dict[str, Callable[[], None]] = {}
    def kd_records_auto(p: Path, out_path: str = os.devnull) -> None:  # the C loop writes --encoding auto
        kd_records(p, out_path, "auto")

    for what, kd in (("records", kd_records_auto), ("batches", kd_batches)):
        assert same_output(lambda o, kd=kd: kd(path, o), lambda o, what=what: c_loop(path, what, o), work), \
            f"{what}: the C loop's lines are not kafkadump's"
        jobs[what] = lambda kd=kd: kd(path)
        jobs[what + "_c_loop"] = lambda what=what: c_loop(path, what)
    jobs["records_kafka_python"] = lambda: kafka_python_json(path)
    return jobs


def c_loop_limit(work: Path, args: argparse.Namespace) -> dict:
    """records --json and batches --json against the C loop limit, on one-record and 150-record batches."""
    out: dict = {}
    for label, shape in (("one_record_batches", ONE_SHAPE), ("large_batches", RECORDS_SHAPE)):
        path = work / f"limit-{shape['records_per_batch']}-{args.records_size}.log"
        meta = ensure(path, make_segment.parse_size(args.records_size), shape)
        jobs = _limit_jobs(path, work)
        cpu = interleaved(jobs, args.repeat, f"C loop limit ({label})",
                          warm=tuple(name for name in jobs if "kafka" not in name))
        out[label] = {"batches": meta["batches"], "records": meta["records"], "bytes": meta["bytes"], "cpu_s": cpu,
                      "records_vs_c_loop": cpu["records"] / cpu["records_c_loop"],
                      "batches_vs_c_loop": cpu["batches"] / cpu["batches_c_loop"],
                      "kafka_python_vs_records": cpu["records_kafka_python"] / cpu["records"]}
    return out


CORPUS = HERE.parent.parent / "shared" / "corpus" / "real"
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__cluster_metadata")


def corpus_user_topics(args: argparse.Namespace) -> dict:
    """records --json over the corpus's user-topic segments against kafka-python's reader."""
    paths = sorted(p for p in CORPUS.rglob("*.log") if not any(t in str(p) for t in INTERNAL_TOPICS))
    if not paths:
        return {"skipped": f"no corpus at {CORPUS}"}

    def kd() -> None:
        with open(os.devnull, "w") as out:
            write_record_report(record_windows([str(p) for p in paths], Options(), RecordQuery(), Tally()), out)

    def kafka_python() -> None:
        for p in paths:
            try:
                kafka_python_json(p)
            except Exception:  # (kafka-python gives up on some damaged or odd files: it reads what it can)
                pass

    cpu = interleaved({"kafkadump": kd, "kafka_python": kafka_python}, args.repeat, "corpus user topics")
    return {"files": len(paths), "bytes": sum(p.stat().st_size for p in paths), "cpu_s": cpu,
            "kafka_python_vs_kafkadump": cpu["kafka_python"] / cpu["kafkadump"]}


def _pure(fn: Callable[[Path], None], path: Path) -> None:
    with pure_python():
        fn(path)


def report(res: dict) -> str:
    lines = [f"kafkadump {res['path']} (compiled loops built: {res['compiled_built']})"]
    if "records" in res:
        f = res["records_file"]
        lines.append(f"records --json: {f['records']:,} records, {f['bytes']:,} bytes (one header a record)")
        for name, r in res["records"].items():
            lines.append(f"  {name:18} {r['cpu_s']:7.3f} cpu s  {r['records_per_cpu_s'] / 1e6:6.3f} M records/cpu s"
                         f"  compiled is {r['compiled_speedup']:5.2f}x this")
    for key, what in (("batches", "150 small records a batch"), ("batches_large_records", "16 records a batch")):
        if key in res:
            b = res[key]
            lines.append(f"batches --json ({what}): kafkadump {b['cpu_s']['kafkadump']:.3f} cpu s, bare "
                         f"header+CRC+JSON {b['cpu_s']['bare']:.3f}: {b['ratio_vs_bare']:.2f}x the bare pass "
                         f"(pure Python {b['pure_ratio_vs_bare']:.2f}x)")
    for label, r in res.get("limit", {}).items():
        lines.append(f"{label.replace('_', ' ')} ({r['batches']:,} batches, {r['records']:,} records): records --json "
                     f"{r['cpu_s']['records']:.3f} cpu s = {r['records_vs_c_loop']:.2f}x the C loop limit "
                     f"({r['cpu_s']['records_c_loop']:.3f}); batches --json {r['cpu_s']['batches']:.3f} = "
                     f"{r['batches_vs_c_loop']:.2f}x ({r['cpu_s']['batches_c_loop']:.3f}); kafka-python "
                     f"{r['kafka_python_vs_records']:.1f}x records --json")
    c = res.get("corpus")
    if c is not None and "cpu_s" in c:
        lines.append(f"corpus user topics ({c['files']} segments, {c['bytes']:,} bytes): records --json "
                     f"{c['cpu_s']['kafkadump']:.3f} cpu s, kafka-python {c['cpu_s']['kafka_python']:.3f} "
                     f"({c['kafka_python_vs_kafkadump']:.2f}x kafkadump)")
    elif c is not None:
        lines.append(f"corpus user topics: {c['skipped']}")
    if "verify_crc" in res:
        v = res["verify_crc"]
        lines.append(f"verify-crc: kafkadump {v['cpu_s']['kafkadump']:.3f} cpu s, one crc32c call "
                     f"{v['cpu_s']['one_crc32c']:.3f}: {v['speed_vs_one_crc32c']:.2f} of its speed "
                     f"(pure Python {v['pure_speed_vs_one_crc32c']:.2f}; {v['bytes']:,} bytes)")
    return "\n".join(lines)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records-size", default="32M", help="size of the small-records file (default 32M)")
    p.add_argument("--crc-size", default="256M", help="size of the verify-crc file (default 256M)")
    p.add_argument("--repeat", type=int, default=3, help="rounds (default 3); the least CPU time counts")
    p.add_argument("--out", help="keep and reuse the generated files in this directory")
    p.add_argument("--only", action="append", choices=["records", "batches", "crc", "limit", "corpus"],
                   help="run only these parts")
    p.add_argument("--json", help="write the results here as JSON")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark (``argv`` as on the command line); print and return the results."""
    args = parse(argv)
    res = run(args)
    print(report(res))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n")
    return res


if __name__ == "__main__":
    main()
    sys.exit(0)
