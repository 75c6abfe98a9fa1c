"""Rows of the ``kafkadump`` Spark levels and lines of the single-process CLI, in one comparable shape.

A row becomes a tuple over the level's columns (``topic``, ``partition`` and
``error`` aside, which the CLI has no line for): byte fields as bytes,
headers as ``((key, value), ...)``, findings as tuples over the finding
fields, control as a tuple over its fields.  A JSON key the line lacks is
None, as the column is null.  Nothing here decodes Kafka bytes.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys

from kafkadump.spark.row_schema import CONTROL, FINDING, LEVELS

FIND_KEYS = [n for n, _ in FINDING[1]]
CTL_KEYS = [n for n, _ in CONTROL[1]]
SKIP = ("topic", "partition", "logDir", "error", "timestampMs")


def names(level: str) -> list:
    return [n for n, _ in LEVELS[level] if n not in SKIP]


class CliRun:
    """The CLI's ``--json`` lines for ``files``, run as a separate process started now
    (so it can overlap other work) and collected by :meth:`lines`."""

    def __init__(self, command: str, files, *extra):
        self.proc = subprocess.Popen([sys.executable, "-m", "kafkadump", command, "--json", *extra, *files],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._lines = None

    def lines(self) -> list[dict]:
        if self._lines is None:
            out, err = self.proc.communicate()
            assert self.proc.returncode in (0, 1), err   # 1: the data has problems
            self._lines = [json.loads(line) for line in out.splitlines()]
        return self._lines


def cli_lines(command: str, files, *extra) -> list[dict]:
    return CliRun(command, files, *extra).lines()


def _b64(v):
    """A byte field of a line in the default encoding: text as a string, other bytes as {"base64": ...}."""
    if v is None:
        return None
    return v.encode("utf-8") if isinstance(v, str) else base64.b64decode(v["base64"])


def _findings(fs):
    return None if fs is None else tuple(tuple(f.get(k) for k in FIND_KEYS) for f in fs)


def _control(c):
    return None if c is None else tuple(c.get(k) for k in CTL_KEYS)


def from_cli(level: str, d: dict) -> tuple:
    """One CLI line (``batches --json`` for batches, ``records --json`` for records)."""
    out = []
    for n in names(level):
        v = d.get(n)
        if level == "records" and n in ("key", "value"):
            v = _b64(v)
        elif n == "headers" and v is not None:
            v = tuple((h["key"], _b64(h["value"])) for h in v)
        elif n == "findings":
            v = _findings(v)
        elif n == "control":
            v = _control(v)
        out.append(v)
    return tuple(out)


def findings_from_cli(lines) -> list[tuple]:
    """``batches --json`` lines flattened to the findings level: one tuple per finding."""
    rows = []
    for d in lines:
        batch = d["type"] == "batch"
        for f in d["findings"]:
            row = {"type": d["type"], "file": d["file"], "position": d["position"], "size": d["size"],
                   "baseOffset": d.get("baseOffset") if batch else None,
                   "lastOffset": d.get("lastOffset") if batch else None, **f}
            rows.append(tuple(row.get(n) for n in names("findings")))
    return rows


def from_row(level: str, r: dict) -> tuple:
    """One DataFrame row (a dict, as ``pyarrow.Table.to_pylist()`` gives it)."""
    out = []
    for n in names(level):
        v = r[n]
        if n == "timestamp":
            v = r["timestampMs"]   # the line's epoch ms (``timestamp`` is a TimestampType made from it)
        elif n == "headers" and v is not None:
            v = tuple((h["key"], h["value"]) for h in v)
        elif n == "findings":
            v = None if v is None else tuple(tuple(f[k] for k in FIND_KEYS) for f in v)
        elif n == "control":
            v = _control(v)
        out.append(v)
    return tuple(out)


def assert_same(got: list, want: list, what: str) -> None:
    """Multiset equality, with a short report of the differences (not a 250 000-line diff)."""
    from collections import Counter

    g, w = Counter(got), Counter(want)
    if g == w:
        return
    extra = list((g - w).elements())[:5]
    missing = list((w - g).elements())[:5]
    raise AssertionError(f"{what}: {len(got)} rows vs {len(want)} expected\n"
                         f"only in DataFrame: {extra}\nonly in CLI: {missing}")
