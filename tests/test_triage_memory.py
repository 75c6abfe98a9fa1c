"""The walks hand mapped pages back: peak resident memory stays far below the file's size.

Counted in pages, not timed: each command runs in a fresh interpreter that
reports its own peak RSS (``VmHWM``: the high-water mark of this process's
own address space since exec) on a 256 MiB segment; a walk that kept every
mapped page would pass 256 MiB.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SIZE = 256 << 20
LIMIT = 160 << 20

PROBE = """
import json, sys
sys.argv = ["kafkadump"] + {args!r}
from kafkadump.cli import main
try:
    main()
except SystemExit as e:
    code = e.code
hwm = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:"))
sys.stderr.write("\\n" + json.dumps({{"code": code, "hwm": hwm}}) + "\\n")
"""

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")


@pytest.fixture(scope="module")
def big_segment(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("logdir") / "big-0" / "00000000000000000000.log"
    path.parent.mkdir()
    subprocess.run([sys.executable, str(ROOT / "bench" / "make_segment.py"), str(path), "--size", str(SIZE)],
                   check=True, capture_output=True)
    (path.parent / (path.name + ".json")).unlink()
    return path


def _peak(args: list[str]) -> tuple[int, int]:
    run = subprocess.run([sys.executable, "-c", PROBE.format(args=args)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, timeout=600)
    probe = json.loads(run.stderr.strip().splitlines()[-1])
    return probe["code"], probe["hwm"]


@pytest.mark.parametrize("command", [["triage", "--shallow", "{dir}"], ["carve", "{file}"]])
def test_peak_rss_stays_below_the_file_size(big_segment, command):
    args = [a.format(dir=big_segment.parent.parent, file=big_segment) for a in command]
    code, hwm = _peak(args)
    assert code == 0
    assert big_segment.stat().st_size > SIZE - (1 << 20)
    assert hwm < LIMIT, f"{command[0]}: peak RSS {hwm / 2**20:.0f} MiB on a {SIZE >> 20} MiB segment"
