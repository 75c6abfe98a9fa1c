"""Tables that fit the terminal: columns by priority, value columns use the room, --wide, --columns."""

from __future__ import annotations

import re

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from kafkadump.cli import app
from kafkadump.render.table import BATCH_COLUMNS, RECORD_COLUMNS, TableLayout, fit_columns

SEGMENT = str(FIXTURES / "segment-v2" / "00000000000000000000.log")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _screen(args, columns):
    r = CliRunner().invoke(app, [*args, "--color", SEGMENT], env={"COLUMNS": str(columns)})
    assert r.exit_code == 0, r.output
    return [ANSI.sub("", line) for line in r.stdout.splitlines()]


@pytest.mark.parametrize("columns", [80, 120, 200])
@pytest.mark.parametrize("command", ["batches", "records"])
def test_every_row_fits_the_terminal(command, columns):
    lines = _screen([command], columns)
    assert len(lines) > 10
    assert max(len(line) for line in lines) <= columns, [line for line in lines if len(line) > columns][:3]


def test_at_80_columns_the_important_columns_stay():
    head = _screen(["batches"], 80)[0].split()
    assert head[:3] == ["position", "baseOffset", "lastOffset"] and "crc" in head and "count" in head
    head = _screen(["records"], 80)[0].split()
    assert head == ["offset", "timestamp", "key", "value"]


def test_at_200_columns_values_use_the_room():
    narrow = fit_columns(RECORD_COLUMNS, None)
    wide = dict((c.title, c.width) for _, c in fit_columns(RECORD_COLUMNS, TableLayout(width=200)))
    assert set(wide) == {c.title for _, c in narrow}
    assert wide["value"] > 40 and wide["key"] > 24
    assert sum(wide.values()) + 2 * (len(wide) - 1) <= 200
    row = next(line for line in _screen(["records"], 200) if line.strip().startswith("0 "))
    assert '{"name":"alice","plan":"pro"}' in row  # shown whole, not cut at 40


def test_wide_and_named_columns():
    assert [c.title for _, c in fit_columns(BATCH_COLUMNS, TableLayout(width=80, wide=True))] == \
        [c.title for c in BATCH_COLUMNS]
    lines = _screen(["records", "--columns", "offset,key"], 80)
    assert lines[0].split() == ["offset", "key"] and lines[1].split() == ["0", "user-1"]


def test_piped_output_keeps_the_stable_layout():
    r = CliRunner().invoke(app, ["batches", SEGMENT], env={"COLUMNS": "80"})
    assert r.stdout.splitlines()[0].split() == [c.title for c in BATCH_COLUMNS]


def test_text_with_newlines_and_tabs_is_text_with_the_escapes_visible():
    from kafkadump.render.describe import preview

    assert preview(b"line one\nline\ttwo\r", 40) == "line one\\nline\\ttwo\\r"
    assert preview(b"\x1b[2J", 40) == "0x1b5b324a"  # other controls: binary, shown as hex
    assert preview(b"a\nb\x00", 40) == "0x610a6200"


@pytest.fixture()
def mixed_logdir(tmp_path):
    import shutil

    from builders import simple_batch

    for n in range(3):
        d = tmp_path / f"clean-{n}"
        d.mkdir()
        (d / "00000000000000000000.log").write_bytes(simple_batch(0, 3).data + simple_batch(3, 2).data)
    bad = tmp_path / "orders-7"
    bad.mkdir()
    shutil.copy(FIXTURES / "damaged" / "00000000000000000000.log", bad / "00000000000000000000.log")
    return tmp_path


def _triage(logdir, columns, *extra):
    r = CliRunner().invoke(app, ["triage", "--color", *extra, str(logdir)], env={"COLUMNS": str(columns)})
    assert r.exit_code == 1, r.output
    return [ANSI.sub("", line) for line in r.stdout.splitlines()]


@pytest.mark.parametrize("columns", [80, 120, 200])
def test_triage_on_a_terminal_puts_problems_first_and_fits(mixed_logdir, columns):
    lines = _triage(mixed_logdir, columns)
    assert lines[0].startswith("verdict: errors")
    assert max(len(line) for line in lines) <= columns
    text = "\n".join(lines)
    assert "orders-7" in text and "clean-0" not in text
    assert "3 partitions clean" in text


def test_triage_all_lists_every_partition(mixed_logdir):
    text = "\n".join(_triage(mixed_logdir, 200, "--all"))
    assert all(f"clean-{n}" in text for n in range(3)) and "orders-7" in text
