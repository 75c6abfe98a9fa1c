"""records: --key (repeatable, null), --count, --last, and filters no record can meet."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from kafkadump.cli import app

SEGMENT = str(FIXTURES / "segment-v2" / "00000000000000000000.log")
DAMAGED = str(FIXTURES / "damaged" / "00000000000000000000.log")


def _lines(*args):
    r = CliRunner().invoke(app, ["records", "--json", *args])
    return r.exit_code, [json.loads(x) for x in r.stdout.splitlines()]


def _offsets(objs):
    return [o["offset"] for o in objs if o["type"] == "record"]


ALL = _offsets(_lines(SEGMENT)[1])


def test_the_fixture_has_records_and_null_keys():
    assert len(ALL) == 40 and ALL == sorted(ALL)


def test_count_takes_the_first_records_and_stops():
    assert _offsets(_lines("--count", "3", SEGMENT)[1]) == ALL[:3]
    assert _offsets(_lines("--count", "1000", SEGMENT)[1]) == ALL
    assert _offsets(_lines("--count", "2", "--from-offset", "10", SEGMENT)[1]) == [10, 11]


def test_last_takes_the_last_records():
    assert _offsets(_lines("--last", "3", SEGMENT)[1]) == ALL[-3:]
    assert _offsets(_lines("--last", "1000", SEGMENT)[1]) == ALL


def test_last_on_damage_shows_the_damage_and_the_last_records_once():
    code, objs = _lines("--last", "2", DAMAGED)
    every = _lines(DAMAGED)[1]
    assert code == 1
    assert _offsets(objs) == _offsets(every)[-2:]
    damage = [o for o in every if o["type"] in ("gap", "findings")]
    assert [o for o in objs if o["type"] in ("gap", "findings")] == damage and damage


def test_keys_repeatable_and_null():
    code, objs = _lines("--key", "user-1", "--key", "null", "-e", "text", SEGMENT)
    assert code == 0
    keys = {o["key"] for o in objs}
    assert keys == {"user-1", None}
    nulls = [o["offset"] for o in _lines("-e", "text", SEGMENT)[1] if o["key"] is None]
    assert sorted(o["offset"] for o in objs if o["key"] is None) == nulls
    assert _lines("--key", "hex:6e756c6c", SEGMENT)[1] == []  # the text "null" itself


@pytest.mark.parametrize("args", [["--from-offset", "5", "--to-offset", "2"],
                                  ["--from-time", "2023-11-14T23:00:00Z", "--to-time", "2023-11-14T22:00:00Z"],
                                  ["--count", "2", "--last", "2"], ["--count", "0"]])
def test_impossible_selections_are_usage_errors(args):
    r = CliRunner().invoke(app, ["records", *args, SEGMENT])
    assert r.exit_code == 2 and r.stdout == ""
