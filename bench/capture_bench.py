#!/usr/bin/env python3
"""``kafkadump capture`` against baselines on the same pcap, in CPU seconds (interleaved rounds).

Run:  .venv/bin/python bench/capture_bench.py [--size 20M] [--pcap FILE ...] [--previous REV] [--repeat 3]

Rows (each the least CPU seconds, user + system, of ``--repeat`` interleaved rounds):

* bare pass (in-process): the pcap's packets read and every TCP direction reassembled by
  kafkadump's own reader (``CaptureReader`` + ``HalfStream``), the streams cut into frames by
  their size prefixes, nothing decoded: the floor any capture decoder pays in this language;
* decode (in-process): ``capture_report`` run to its end, every frame decoded, nothing rendered;
* ``capture --json`` and the frame table (``capture``), as CLI subprocesses, to /dev/null,
  and the same two of ``--previous`` (default ``main``: the code this branch started from,
  exported by ``git archive`` into a temporary directory and run with ``PYTHONPATH``);
* ``tshark -T json`` and tshark's one-line output (``tshark -r``), when tshark is on PATH,
  with ``-d tcp.port==P,kafka`` for every Kafka port P of the pcap.

The Kafka ports (given to kafkadump as ``-p P`` and to tshark's dissector as ``-d``): ``--port``
when given; else the brokers of a ``NAME.mock.json`` beside ``NAME.pcap`` (the shared corpus's
client captures, whose mock brokers listen on random ports); else the server ports of the
connections kafkadump finds to be Kafka (by port 9092 or by content); 9092 when there are none.

The CLI rows run with Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` removed, the cache
in a temporary ``PYTHONPYCACHEPREFIX``, warmed by one run first): an installed package has its
``.pyc`` files, and without them every run recompiles kafkadump's modules (about 0.14 CPU-s here).
``--no-pyc-cache`` measures with the environment as it is.

Printed: CPU seconds, CPU-microseconds per frame, MB of pcap per CPU-second, and the ratios
(kafkadump / baseline: below 1.0 kafkadump is faster).  Nothing is asserted.  ``main(argv)``
is the entry point (``bench/run_all.py`` calls it).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper()
    return int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _cpu_self() -> float:
    return time.process_time()


def run_cli(argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> tuple[float, float, int]:
    """``argv`` as a subprocess, stdout to /dev/null: (CPU seconds, wall seconds, exit code).

    ``cwd``: run there (``python -m`` puts its working directory first on ``sys.path``: run from
    the project's root, it would import the checkout's package whatever ``PYTHONPATH`` says)."""
    c0, w0 = _cpu_children(), time.perf_counter()
    rc = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    return _cpu_children() - c0, time.perf_counter() - w0, rc


def bare_pass(path: str) -> tuple[int, int]:
    """Packets read, TCP reassembled, streams cut by size prefix; returns (segments, frames)."""
    from kafkadump.sources.pcap import CaptureReader, HalfStream
    from kafkadump.sources.segment import open_segment

    class Sink:
        def __init__(self) -> None:
            self.frames = 0
            self.held: dict = {}

        def deliver(self, half, offset, data, packet) -> None:
            buf = self.held.setdefault(id(half), bytearray())
            buf += data
            pos, n = 0, len(buf)
            while n - pos >= 4:
                size = int.from_bytes(buf[pos:pos + 4], "big", signed=True)
                if size < 0 or n - pos - 4 < size:
                    break
                pos += 4 + size
                self.frames += 1
            del buf[:pos]

        def gap(self, half, offset, length, finding) -> None:
            self.held.pop(id(half), None)

    sink = Sink()
    halves: dict = {}
    segments = 0
    seg = open_segment(path)
    try:
        for p in CaptureReader(seg.buf, path):
            segments += 1
            key = (p.src, p.sport, p.dst, p.dport)  # one direction of one connection
            h = halves.get(key)
            if h is None:
                h = halves[key] = HalfStream(sink, (p.src, p.sport))
            h.segment(p)
    finally:
        seg.close()
    return segments, sink.frames


def decode_only(path: str, ports: list[int] | None = None) -> int:
    """``capture_report`` to its end, nothing rendered; returns the frames."""
    from kafkadump.base.status import Tally
    from kafkadump.reports.capture import CaptureRequest, CaptureTotals, capture_report

    frames = 0
    request = CaptureRequest() if ports is None else CaptureRequest(ports=list(ports))
    for item in capture_report(path, request, Tally()):
        if isinstance(item, CaptureTotals):
            frames = item.frames
    return frames


def in_process(fn, path: str) -> tuple[float, float]:
    c0, w0 = _cpu_self(), time.perf_counter()
    fn(path)
    return _cpu_self() - c0, time.perf_counter() - w0


def export_previous(rev: str, dest: str) -> str | None:
    """kafkadump's package at ``rev`` exported into ``dest`` (a PYTHONPATH), its compiled hot path
    built there as this checkout's is (else the previous rows would run its pure-Python path), or
    None when git cannot."""
    try:
        data = subprocess.run(["git", "archive", "--format=tar", rev, "kafkadump"], cwd=ROOT, capture_output=True,
                              check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        t.extractall(dest)
    build = subprocess.run(["git", "archive", "--format=tar", rev, "setup.py", "pyproject.toml", "README.md"],
                           cwd=ROOT, capture_output=True, timeout=60)
    if build.returncode == 0:
        with tarfile.open(fileobj=io.BytesIO(build.stdout)) as t:
            t.extractall(dest)
        subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=dest,
                       capture_output=True, timeout=600)
    built = list(Path(dest, "kafkadump", "accel").glob("*.so")) + list(Path(dest, "kafkadump", "accel").glob("*.pyd"))
    print(f"({rev}: exported, {'with its compiled hot path' if built else 'on its pure-Python path (not built)'})")
    return dest


def kafka_ports(path: str, given: list[int]) -> list[int]:
    """The Kafka ports of ``path`` (see the module docstring: ``--port``, a mock.json sidecar, or detected)."""
    if given:
        return sorted(set(given))
    made = Path(path + ".json")  # make_real_pcap.py's sidecar names the broker's port
    if made.exists():
        try:
            ports = sorted(int(p) for p in json.loads(made.read_text()).get("kafka_ports", ()))
        except (ValueError, TypeError, AttributeError):
            ports = []
        if ports:
            return ports
    sidecar = Path(path).with_suffix(".mock.json")
    if sidecar.exists():
        try:
            ports = sorted({int(b["port"]) for b in json.loads(sidecar.read_text()).get("brokers", ())})
        except (ValueError, KeyError, TypeError, AttributeError):
            ports = []
        if ports:
            return ports
    from kafkadump.decoders.protocol.stream import CaptureDecoder
    from kafkadump.sources.pcap import CaptureReader
    from kafkadump.sources.segment import open_segment

    seg = open_segment(path)
    try:
        dec = CaptureDecoder(path)
        for _ in dec.packets(CaptureReader(seg.buf, path)):
            pass
    finally:
        seg.close()
    ports = sorted({c.server[1] for c in dec.order if c.server is not None and c.state not in (None, False)})
    return ports or [9092]


def tshark_rows(path: str, ports: list[int]) -> list[tuple[str, list[str]]]:
    exe = shutil.which("tshark")
    if exe is None:
        return []
    decode_as = [a for p in ports for a in ("-d", f"tcp.port=={p},kafka")]
    return [("tshark -T json", [exe, "-r", path, *decode_as, "-T", "json"]),
            ("tshark one-line", [exe, "-r", path, *decode_as])]


FINDING = re.compile(rb'"code":"([^"]+)","severity":"([a-z]+)"')


def kafkadump_counts(path: str, ports: list[int]) -> dict:
    """What ``capture --json`` finds in ``path``: its summary's frames, requests and responses, its
    exit status and every finding (frames, records, stream notes) by code and severity."""
    argv = [sys.executable, "-m", "kafkadump", "capture", path, *(a for p in ports for a in ("-p", str(p))), "--json"]
    findings: dict[str, int] = {}
    summary: dict = {}
    with subprocess.Popen(argv, env=cli_env(str(ROOT), None), stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            for code, severity in FINDING.findall(line):
                key = f"{code.decode()} ({severity.decode()})"
                findings[key] = findings.get(key, 0) + 1
            if line.startswith(b'{"type":"summary"'):
                summary = json.loads(line)
    return {"frames": summary.get("frames"), "requests": summary.get("requests"),
            "responses": summary.get("responses"), "records": summary.get("records"),
            "exit": proc.returncode, "findings": dict(sorted(findings.items()))}


def tshark_counts(path: str, ports: list[int]) -> dict | None:
    """The Kafka PDUs tshark's dissector sees in ``path`` (``tests/broker/loopback.tshark_pdus``); None without tshark."""
    if shutil.which("tshark") is None:
        return None
    sys.path.insert(0, str(ROOT / "tests"))
    from broker.loopback import tshark_pdus

    return tshark_pdus(path, ports)


def agreement(path: str, ports: list[int], out=sys.stdout) -> dict:
    """kafkadump's frame counts against tshark's Kafka PDUs on ``path``, and kafkadump's findings."""
    kd = kafkadump_counts(path, ports)
    ts = tshark_counts(path, ports)
    print(f"  counts: kafkadump {kd['frames']} frames ({kd['requests']} requests, {kd['responses']} responses, "
          f"{kd['records']} records), exit {kd['exit']}", file=out)
    if ts is not None:
        same = all(kd[k] == ts[k] for k in ("frames", "requests", "responses"))
        print(f"          tshark    {ts['frames']} Kafka PDUs ({ts['requests']} requests, {ts['responses']} responses), "
              f"{ts['malformed']} packets malformed: {'the same' if same else 'DIFFERENT'}", file=out)
    for key, n in kd["findings"].items():
        print(f"  finding {key}: {n}", file=out)
    return {"kafkadump": kd, "tshark": ts}


def cli_env(pythonpath: str | None, pyc_cache: str | None) -> dict[str, str]:
    """The environment of a CLI row: ``PYTHONPATH``, and the bytecode cache in ``pyc_cache`` (None: as it is)."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    if pyc_cache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pyc_cache
    return env


def measure(path: str, repeat: int, previous: str | None, cwd: str, ports: list[int],
            pyc_cache: str | None = None) -> dict:
    py = sys.executable
    here_env = cli_env(str(ROOT), pyc_cache)
    port_args = [a for p in ports for a in ("-p", str(p))]
    rows: dict[str, dict] = {}
    plan: list[tuple[str, object]] = [
        ("bare pass (read + reassemble + split)", ("inproc", bare_pass)),
        ("decode only (in-process)", ("inproc", lambda p: decode_only(p, ports))),
        ("capture --json", ("cli", [py, "-m", "kafkadump", "capture", path, *port_args, "--json"], here_env)),
        ("capture (table)", ("cli", [py, "-m", "kafkadump", "capture", path, *port_args], here_env)),
    ]
    if previous is not None:
        prev_env = cli_env(previous, pyc_cache)
        plan += [("previous capture --json",
                  ("cli", [py, "-m", "kafkadump", "capture", path, *port_args, "--json"], prev_env)),
                 ("previous capture (table)", ("cli", [py, "-m", "kafkadump", "capture", path, *port_args], prev_env))]
    plan += [(name, ("cli", argv, None)) for name, argv in tshark_rows(path, ports)]
    plan.append(("python start-up (-c pass)", ("cli", [py, "-c", "pass"], cli_env(None, pyc_cache))))
    if pyc_cache is not None:  # one run of each to fill the bytecode cache
        for _, how in plan:
            if how[0] == "cli" and how[2] is not None:
                run_cli(how[1], how[2], cwd)
    for _ in range(repeat):
        for name, how in plan:
            if how[0] == "inproc":
                cpu, wall = in_process(how[1], path)
                rc = 0
            else:
                cpu, wall, rc = run_cli(how[1], how[2], cwd)
            r = rows.setdefault(name, {"cpu": [], "wall": [], "rc": rc})
            r["cpu"].append(cpu)
            r["wall"].append(wall)
    for r in rows.values():
        r["best_cpu"] = min(r["cpu"])
    return rows


def report(path: str, rows: dict, frames: int, ports: list[int], out=sys.stdout) -> dict:
    size = os.path.getsize(path)
    print(f"\n{path}: {size / 1e6:.1f} MB, {frames} frames, Kafka ports {','.join(map(str, ports))} "
          f"(load average {os.getloadavg()[0]:.2f})", file=out)
    print(f"  {'row':40} {'cpu s':>7} {'us/frame':>9} {'MB/cpu-s':>9}  runs", file=out)
    for name, r in rows.items():
        c = r["best_cpu"]
        per = c / frames * 1e6 if frames else float("nan")
        print(f"  {name:40} {c:7.2f} {per:9.1f} {size / 1e6 / c if c else 0:9.1f}  "
              + " ".join(f"{x:.2f}" for x in r["cpu"]) + (f"  exit {r['rc']}" if r["rc"] else ""), file=out)

    def ratio(a: str, b: str) -> float | None:
        if a in rows and b in rows and rows[b]["best_cpu"]:
            return rows[a]["best_cpu"] / rows[b]["best_cpu"]
        return None

    ratios = {
        "json / bare pass": ratio("capture --json", "bare pass (read + reassemble + split)"),
        "table / bare pass": ratio("capture (table)", "bare pass (read + reassemble + split)"),
        "table / json": ratio("capture (table)", "capture --json"),
        "json / previous json": ratio("capture --json", "previous capture --json"),
        "table / previous table": ratio("capture (table)", "previous capture (table)"),
        "previous table / previous json": ratio("previous capture (table)", "previous capture --json"),
        "json / tshark -T json": ratio("capture --json", "tshark -T json"),
        "table / tshark one-line": ratio("capture (table)", "tshark one-line"),
    }
    print("  ratios of CPU seconds (kafkadump / baseline; below 1.0: kafkadump uses less):", file=out)
    for k, v in ratios.items():
        if v is not None:
            print(f"    {k:34} {v:6.2f}", file=out)
    if "tshark -T json" not in rows:
        print("    tshark is not on PATH: no tshark rows (the us/frame and MB/cpu-s columns above compare "
              "with tshark's on the same pcap)", file=out)
    return {"file": path, "bytes": size, "frames": frames, "ports": ports, "rows": rows, "ratios": ratios}


def real_pcap(path: str, size_mb: float) -> str:
    """``path``, made by make_real_pcap.py (a real broker, real clients, dumpcap) when it is not there."""
    path = os.path.abspath(path)
    if not (os.path.exists(path) and os.path.exists(path + ".json")):
        import make_real_pcap

        make_real_pcap.make(Path(path), size_mb, seed=7, per_round=600)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="20M", help="size of the generated pcap (default 20M)")
    ap.add_argument("--pcap", action="append", default=[], help="also measure this pcap (repeatable)")
    ap.add_argument("--no-generated", action="store_true", help="measure only the --pcap files")
    ap.add_argument("--previous", default="main", help="git revision to compare with (default main; '' for none)")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--out", help="directory for the generated pcap (kept and reused); default a temp dir")
    ap.add_argument("--port", type=int, action="append", default=[],
                    help="the Kafka port of every --pcap (repeatable; default: from a mock.json sidecar, or detected)")
    ap.add_argument("--no-pyc-cache", action="store_true",
                    help="run the CLI rows without a bytecode cache when the environment says so")
    ap.add_argument("--real", nargs="?", const=str(HERE / "out" / "real.pcap"), default=None, metavar="FILE",
                    help="also measure a pcap of real clients against a real broker (make_real_pcap.py), made "
                         "there when absent (default bench/out/real.pcap)")
    ap.add_argument("--real-size-mb", type=float, default=120, help="the size of a --real pcap made (default 120)")
    ap.add_argument("--no-check", dest="check", action="store_false",
                    help="skip the count check (kafkadump's frames and findings against tshark's Kafka PDUs)")
    ap.add_argument("--results", default=str(HERE / "out" / "capture-results.json"))
    args = ap.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    work = tempfile.mkdtemp(prefix="kdcap-")
    try:
        paths = [os.path.abspath(p) for p in args.pcap]
        if args.real:
            paths.insert(0, real_pcap(args.real, args.real_size_mb))
        if not args.no_generated:
            import capture_pcap

            where = os.path.abspath(args.out) if args.out else work
            os.makedirs(where, exist_ok=True)
            size = parse_size(args.size)
            path = os.path.join(where, f"capture-{args.size}.pcap")
            if not (os.path.exists(path) and os.path.exists(path + ".json")
                    and json.load(open(path + ".json")).get("requested") == size):
                capture_pcap.write_pcap(path, size)
            paths.insert(0, path)
        previous = export_previous(args.previous, os.path.join(work, "previous")) if args.previous else None
        if args.previous and previous is None:
            print(f"(could not export {args.previous!r} with git: no previous rows)")
        results = []
        pyc_cache = None if args.no_pyc_cache else os.path.join(work, "pyc")
        for path in paths:
            _, frames = bare_pass(path)  # warms the page cache too
            ports = kafka_ports(path, args.port)
            rows = measure(path, args.repeat, previous, work, ports, pyc_cache)
            result = report(path, rows, frames, ports)
            if args.check:
                result["agreement"] = agreement(path, ports)
            results.append(result)
        os.makedirs(os.path.dirname(args.results), exist_ok=True)
        with open(args.results, "w") as f:
            json.dump({"load": os.getloadavg(), "tshark": shutil.which("tshark"), "results": results}, f, indent=1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
