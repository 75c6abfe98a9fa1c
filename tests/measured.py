"""Running the real CLI in a fresh process and reading its peak RSS from the kernel
(``ru_maxrss`` of a wrapper process's only child)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

RSS_LIMIT_MB = 200

_WRAPPER = r"""
import resource, subprocess, sys
r = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
sys.stdout.buffer.write(r.stdout)
sys.stderr.buffer.write(r.stderr)
with open(sys.argv[1], "w") as f:
    f.write(f"{r.returncode} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
"""


def kd(*args: str, cwd=None) -> tuple[int, str, str, float]:
    """``kafkadump ARGS`` in a fresh process: (returncode, stdout, stderr, peak RSS in MB)."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as t:
        p = subprocess.run([sys.executable, "-c", _WRAPPER, t.name, sys.executable, "-m", "kafkadump", *args],
                           capture_output=True, text=True, cwd=cwd)
        rc, kb = open(t.name).read().split()
    assert "Traceback" not in p.stderr, p.stderr
    return int(rc), p.stdout, p.stderr, int(kb) / 1024


def json_lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def findings_of(docs) -> list[dict]:
    """Every finding object anywhere in ``docs`` (JSON lines or one report object)."""
    out: list[dict] = []

    def walk(o) -> None:
        if isinstance(o, dict):
            if "code" in o and "severity" in o and "offset" in o:
                out.append(o)
            for k, v in o.items():
                if not (k == "findings" and o.get("type") == "triage"):   # (it repeats the files' findings)
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(docs)
    return out
