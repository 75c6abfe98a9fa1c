#!/usr/bin/env python3
"""Start-up of the kafkadump CLI against a bare Python start, in CPU seconds.

Run:  .venv/bin/python bench/startup_bench.py [--rounds 30] [--quick]

Times, interleaved round by round so both see the same background load:

* ``python -c 'import json'``: a bare interpreter start (the baseline);
* ``python -m kafkadump batches tiny.log`` and ``--json``, ``records`` and
  ``--json``, ``verify-crc`` (the fast path: no typer), and ``batches``
  with a command line typer parses (what the fast path leaves to it);
* every other data command on a tiny input it accepts (exit 0 or 1):
  ``carve``, ``dump``, ``triage``, ``txn``, ``offsets``, ``metadata``,
  ``diff``, ``schemas`` and ``capture`` (``--only`` picks some);
* the ``kafkadump`` console script, when it is on PATH beside the interpreter;
* with ``--other CHECKOUT``, each of those kafkadump runs with another
  checkout's package first on the path (before/after, in the same rounds).

``tiny.log`` is one one-record batch (``make_segment.py``). Each run's CPU
time is the child's user + system time from ``wait4``; the median over the
rounds is kept and the ratio to the baseline's median printed (target: 2x
or less). Nothing is asserted.

The runs use compiled bytecode, as an installed package does: the
children run without ``PYTHONDONTWRITEBYTECODE`` and with
``PYTHONPYCACHEPREFIX`` pointing at a temporary directory that the warm-up
run fills (the source tree is not written).  ``--no-bytecode`` measures
with every module compiled from source on each start instead.
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


def child_cpu(cmd: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> float:
    """User + system CPU seconds of one run of ``cmd`` (output discarded).  Run in ``cwd``: ``python -m``
    puts its working directory first on the path, so a checkout as cwd would shadow ``--other``."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}")
    return usage.ru_utime + usage.ru_stime


def tiny_segment(directory: str) -> str:
    """A one-record segment made by make_segment.py."""
    path = os.path.join(directory, "tiny.log")
    subprocess.run([sys.executable, str(HERE / "make_segment.py"), path, "--size", "100",
                    "--batch-bytes", "100", "--record-bytes", "10", "--records-per-batch", "1"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return path


# the data commands timed on tiny.log (the first is the target)
DATA_COMMANDS = (["batches"], ["batches", "--json"], ["records"], ["records", "--json"], ["verify-crc"])

FIXTURES = HERE.parent / "fixtures"
# a tiny ApiVersions v0 request frame as hex text (size, key 18, version 0, correlation id 1, null client id)
REQUEST_HEX = "0000000a00120000 00000001ffff\n"


def tiny_pcap(path: str) -> None:
    """A classic pcap of one packet: that request over TCP to port 9092 (IPv4, Ethernet)."""
    import struct

    frame = bytes.fromhex(REQUEST_HEX.replace(" ", ""))
    tcp = struct.pack("!HHIIBBHHH", 40000, 9092, 1, 0, 5 << 4, 0x18, 65535, 0, 0) + frame
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 1, 0, 64, 6, 0, bytes([10, 0, 0, 1]),
                     bytes([10, 0, 0, 2]))
    total = sum(struct.unpack("!10H", ip))
    total = (total >> 16) + (total & 0xFFFF)
    ip = ip[:10] + struct.pack("!H", ~(total + (total >> 16)) & 0xFFFF) + ip[12:]
    packet = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + tcp
    Path(path).write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
                           + struct.pack("<IIII", 1_700_000_000, 0, len(packet), len(packet)) + packet)


def tiny_inputs(directory: str, tiny: str) -> dict[str, str]:
    """Small inputs of the other commands, under ``directory``: a log dir of one partition (a copy of
    ``tiny``), the damaged fixture segment, a schema file, a captured request in a pcap and as hex text
    (pasted hex: request or response is detected, by trying it as every API's response)."""
    import shutil

    part = os.path.join(directory, "logdir", "t-0")
    os.makedirs(part)
    segment = os.path.join(part, "00000000000000000000.log")
    shutil.copyfile(tiny, segment)  # uncompressed: no codec library imported (input, not start-up)
    schemas = os.path.join(directory, "schemas")
    os.makedirs(schemas)
    Path(schemas, "1.avsc").write_text('"string"\n')
    hex_text = os.path.join(directory, "request.hex")
    Path(hex_text).write_text(REQUEST_HEX)
    pcap = os.path.join(directory, "request.pcap")
    tiny_pcap(pcap)
    return {"logdir": os.path.dirname(part), "partition": part, "segment": segment, "tiny": tiny,
            "damaged": str(FIXTURES / "damaged" / "00000000000000000000.log"), "schemas": schemas,
            "hex": hex_text, "pcap": pcap}


# every other data command and its arguments (names of tiny_inputs' files), each exits 0 or 1
OTHER_COMMANDS = (("carve", ["damaged"]), ("dump", ["segment"]), ("triage", ["logdir"]), ("txn", ["logdir"]),
                  ("offsets", ["logdir"]), ("metadata", ["segment"]), ("diff", ["partition", "tiny"]),
                  ("schemas", ["schemas"]), ("capture", ["pcap"]), ("capture", ["hex"]))


def commands(tiny: str, other: str | None = None, inputs: dict[str, str] | None = None,
             only: list[str] | None = None) -> dict[str, list[str]]:
    py = sys.executable
    cmds = {"python -c 'import json'": [py, "-c", "import json"]}
    timed: list[tuple[str, list[str]]] = []
    for args in DATA_COMMANDS:
        if only is None or args[0] in only:
            timed.append((f"{' '.join(args)} tiny.log", [*args, tiny]))
    for name, files in OTHER_COMMANDS:
        if inputs is not None and (only is None or name in only):
            timed.append((f"{name} {' '.join(files)}", [name, *(inputs[f] for f in files)]))
    for what, args in timed:
        cmds[f"python -m kafkadump {what}"] = [py, "-m", "kafkadump", *args]
        if other is not None:  # the other checkout's package first on the path
            cmds[f"  {what}, other checkout"] = ["env", f"PYTHONPATH={other}", py, "-m", "kafkadump", *args]
    if only is not None:
        return cmds
    # "+4" is an integer to typer, not plain digits to the fast path: the same command line parsed by typer
    cmds["same, parsed by typer (--max-depth +4)"] = [py, "-m", "kafkadump", "batches", "--max-depth", "+4", tiny]
    script = Path(py).with_name("kafkadump")
    if script.exists():
        cmds["kafkadump batches tiny.log (console script)"] = [str(script), "batches", tiny]
    return cmds


def child_env(tmp: str, bytecode: bool) -> dict[str, str]:
    env = dict(os.environ)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    return env


def measure(rounds: int, bytecode: bool = True, other: str | None = None,
            only: list[str] | None = None) -> list[dict[str, object]]:
    """Median CPU seconds of each command and its ratio to the bare start."""
    with tempfile.TemporaryDirectory(prefix="kd-startup-") as tmp:
        tiny = tiny_segment(tmp)
        cmds = commands(tiny, other, tiny_inputs(tmp, tiny), only)
        env = child_env(tmp, bytecode)
        for cmd in cmds.values():  # warm the page cache and the .pyc files
            child_cpu(cmd, env, tmp)
        times: dict[str, list[float]] = {name: [] for name in cmds}
        for _ in range(rounds):
            for name, cmd in cmds.items():
                times[name].append(child_cpu(cmd, env, tmp))
    base = statistics.median(next(iter(times.values())))
    rows = []
    for name, ts in times.items():
        med = statistics.median(ts)
        rows.append({"what": name, "median_cpu_s": med, "min_cpu_s": min(ts), "ratio": med / base})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=30, help="interleaved rounds (default 30)")
    ap.add_argument("--quick", action="store_true", help="10 rounds")
    ap.add_argument("--no-bytecode", action="store_true", help="compile every module from source on each start")
    ap.add_argument("--other", metavar="CHECKOUT", help="also time another checkout's kafkadump (before/after)")
    ap.add_argument("--only", metavar="COMMAND", action="append",
                    help="time only this command (repeatable; the baseline is always timed)")
    args = ap.parse_args(argv)
    rounds = 10 if args.quick else args.rounds
    rows = measure(rounds, bytecode=not args.no_bytecode, other=args.other, only=args.only)
    print(f"start-up, {rounds} interleaved rounds{', no bytecode' if args.no_bytecode else ''}, "
          f"median CPU seconds (user+sys) per run, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    for row in rows:
        print(f"  {row['what']:<48} {row['median_cpu_s']:.3f} s  (min {row['min_cpu_s']:.3f})  "
              f"{row['ratio']:.2f}x bare")
    return 0


if __name__ == "__main__":
    sys.exit(main())
