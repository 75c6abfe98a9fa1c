"""One exit rule for every command (issue 28, item 4): 0 clean, 1 a warning or error finding, 2 an input
that could not be read (or a usage error), decided by ``report.status.exit_status`` alone; every command
body ends through ``cli.running.finish`` (its notes and input errors on stderr)."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest
from logdir_helpers import Seg, batch, flip, write
from test_hardening import kd

from kafkadump.objects.logdir_objects import triage_exit_status
from kafkadump.base.status import CLEAN
from kafkadump.base.status import PROBLEMS
from kafkadump.base.status import USAGE_OR_IO
from kafkadump.base.status import Tally
from kafkadump.base.status import exit_status

CLI = Path(__file__).resolve().parent.parent / "kafkadump" / "cli"


@pytest.mark.parametrize("problems, input_errors, want", [
    (0, 0, CLEAN), (1, 0, PROBLEMS), (7, 0, PROBLEMS), (0, 1, USAGE_OR_IO), (3, 2, USAGE_OR_IO)])
def test_the_rule(problems, input_errors, want):
    tally = Tally()
    tally.problems = problems
    tally.input_errors = ["x"] * input_errors
    assert exit_status(problems, input_errors) == tally.exit_status == want


@pytest.mark.parametrize("error, warning, info, unreadable, want", [
    (0, 0, 0, 0, 0), (0, 0, 5, 0, 0), (0, 1, 0, 0, 1), (2, 0, 0, 0, 1), (0, 0, 0, 1, 2), (1, 1, 1, 1, 2)])
def test_triage_reads_the_same_rule(error, warning, info, unreadable, want):
    report = {"totals": {"findings": {"error": error, "warning": warning, "info": info},
                         "unreadableFiles": unreadable}}
    assert triage_exit_status(report) == want


def _logdir(tmp_path: Path, *, damaged: bool = False, dangling: bool = False) -> str:
    root = tmp_path / "logs"
    seg = Seg([batch(0, 3), batch(3, 2)])
    data = flip(seg.data, seg.at(1) + 70) if damaged else seg.data
    write(root / "orders-0" / "00000000000000000000.log", data)
    if dangling:
        gone = root / "gone-0" / "00000000000000000000.log"
        gone.parent.mkdir(parents=True)
        os.symlink(root / "nowhere.log", gone)
    return str(root)


@pytest.mark.parametrize("damaged, dangling, want", [(False, False, 0), (True, False, 1), (False, True, 2),
                                                     (True, True, 2)])
def test_triage_exit_status_from_the_command(tmp_path, damaged, dangling, want):
    root = _logdir(tmp_path, damaged=damaged, dangling=dangling)
    rc, out, err, _ = kd("triage", "--json", root)
    report = json.loads(out)
    assert rc == want, err
    assert report["totals"]["unreadableFiles"] == int(dangling)
    assert (report["verdict"] == "clean") == (not damaged and not dangling)


def test_every_command_body_ends_through_finish():
    """No body returns ``tally.exit_status`` itself (which skips the notes and the input errors)."""
    skipping = []
    for path in sorted(CLI.glob("*.py")):
        if path.name == "running.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Return) and isinstance(node.value, ast.Attribute)
                    and node.value.attr == "exit_status"):
                skipping.append(f"{path.name}:{node.lineno}")
    assert skipping == []


def test_spark_scan_uses_the_rule():
    text = (CLI / "spark_commands.py").read_text()
    assert 'exit_status(stats["problemRows"], stats["unreadable"])' in text
