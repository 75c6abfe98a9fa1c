"""The command line as one thin layer: a closed pipe, the exit rule, the option groups."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from kafkadump.cli import app

SEGMENT = FIXTURES / "segment-v2" / "00000000000000000000.log"
DAMAGED = FIXTURES / "damaged" / "00000000000000000000.log"   # a bad CRC at 310, garbage at 1221, ...
PADDED = FIXTURES / "damaged" / "padded.log"                    # zero padding only: an info finding


def _into_closed_pipe(args: list[str]) -> subprocess.CompletedProcess:
    """Run kafkadump with stdout a pipe whose reader has already gone (as ``| head`` ends up)."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, "-m", "kafkadump", *args], stdout=w, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    finally:
        os.close(w)


@pytest.mark.parametrize("args", [["--help"], ["records", "--help"], ["records", "--color", str(SEGMENT)],
                                  ["batches", str(SEGMENT)], ["records", "--json", str(SEGMENT)]])
def test_a_closed_pipe_is_not_a_failure(args):
    p = _into_closed_pipe(args)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and "Broken pipe" not in p.stderr


def _code(args) -> int:
    return CliRunner().invoke(app, args).exit_code


@pytest.mark.parametrize("command", [["batches"], ["batches", "--json"], ["batches", "-f", "dump-log"],
                                     ["records"], ["records", "--json"], ["records", "-f", "dump-log"],
                                     ["verify-crc"], ["verify-crc", "--json"], ["hexdump", "--position", "310"],
                                     ["carve", "--json"], ["carve"]])
def test_one_exit_rule_for_every_command(command):
    assert _code([*command, str(SEGMENT)]) == 0
    assert _code([*command, str(DAMAGED)]) == 1
    if "hexdump" not in command:
        assert _code([*command, str(PADDED)]) == 0  # info findings only: clean
    assert _code([*command, str(SEGMENT) + ".missing"]) == 2


def test_input_limit_options_are_one_group_everywhere():
    for command in ("batches", "records", "verify-crc", "hexdump", "capture"):
        text = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output
        for option in ("--max-decompressed", "--max-depth", "--max-ratio"):
            assert option in text, (command, option)
        assert ("--max-scan" in text) is (command != "capture")


def test_an_ascii_terminal_gets_escapes_not_an_error():
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    p = subprocess.run([sys.executable, "-m", "kafkadump", "records", str(SEGMENT)], capture_output=True,
                       env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert b"\\u0394off" in p.stdout.splitlines()[0]  # the Greek delta of the header, escaped
    assert all(b < 0x80 for b in p.stdout)


def test_dump_of_a_directory_says_it_wants_a_file(tmp_path):
    r = CliRunner().invoke(app, ["dump", str(tmp_path)])
    assert r.exit_code == 2 and "is a directory; dump reads files" in r.output


def test_the_manual_page_is_shown():
    p = subprocess.run([sys.executable, "-m", "kafkadump", "man"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "EXIT STATUS" in p.stdout and "verify-crc" in p.stdout


def test_the_manual_has_one_synopsis_line_a_command_and_one_examples_section():
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "man" / "kafkadump.1").read_text()
    assert page.count(".SH EXAMPLES") == 1
    synopsis = page.split(".SH SYNOPSIS", 1)[1].split(".SH ", 1)[0]
    commands = [line for line in synopsis.splitlines() if line.startswith(".B kafkadump")]
    assert synopsis.count(".br") >= len(commands) - 1 and len(commands) >= 12


def test_decompression_failed_always_says_why():
    from kafkadump.decoders.batches.compression import _failed  # the one place the message is made

    assert str(_failed("snappy", Exception())).endswith("snappy: Exception: the data is not valid snappy")
    assert str(_failed("gzip", ValueError("bad header"))).endswith("gzip: bad header")
