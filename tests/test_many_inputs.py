"""batches, records, verify-crc on inputs as people pass them: directories, globs, a bad path among many."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from kafkadump.cli import app

SEGMENT = FIXTURES / "segment-v2" / "00000000000000000000.log"
DAMAGED = FIXTURES / "damaged" / "00000000000000000000.log"


@pytest.fixture()
def logdir(tmp_path):
    """A log dir of two partitions; partition 0 has two segments (given out of order on disk names)."""
    p0, p1 = tmp_path / "orders-0", tmp_path / "orders-1"
    p0.mkdir()
    p1.mkdir()
    shutil.copy(SEGMENT, p0 / "00000000000000000040.log")
    shutil.copy(SEGMENT, p0 / "00000000000000000000.log")
    (p0 / "00000000000000000000.index").write_bytes(b"\0" * 16)
    (p0 / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    shutil.copy(SEGMENT, p1 / "00000000000000000000.log")
    return tmp_path


def _run(*args):
    r = CliRunner().invoke(app, list(map(str, args)))
    return r.exit_code, r.stdout, r.stderr


def _files(stdout):
    return [json.loads(x)["file"] for x in stdout.splitlines()]


def test_a_partition_directory_gives_its_segments_in_offset_order(logdir):
    code, out, _ = _run("batches", "--json", logdir / "orders-0")
    assert code == 0
    files = list(dict.fromkeys(_files(out)))
    assert files == [str(logdir / "orders-0" / "00000000000000000000.log"),
                     str(logdir / "orders-0" / "00000000000000000040.log")]


def test_a_log_dir_gives_every_partition(logdir):
    code, out, _ = _run("verify-crc", logdir)
    assert code == 0
    assert out.splitlines()[-1].startswith("files: 3  batches: ")


def test_a_glob_skips_files_that_are_not_segments_with_one_note(logdir):
    part = logdir / "orders-0"
    code, out, err = _run("records", "--json", *sorted(part.iterdir()))
    assert code == 0
    assert len(set(_files(out))) == 2
    assert err.count("note:") == 1 and "skipped 2 files that are not segments" in err


def test_a_bad_path_among_many_is_reported_and_the_rest_is_read(logdir):
    missing = logdir / "nope.log"
    code, out, err = _run("verify-crc", SEGMENT, missing, logdir / "orders-1")
    assert code == 2
    assert out.splitlines()[-1].startswith("files: 2  ")  # the summary is printed
    assert f"{missing}: no such file" in err


def test_problem_lines_name_their_file_when_there_are_several(logdir):
    _, out, _ = _run("verify-crc", DAMAGED, SEGMENT)
    bad = [line for line in out.splitlines() if "position:" in line]
    assert bad and all(line.startswith(f"{DAMAGED}: position: ") for line in bad)
    _, out, _ = _run("verify-crc", DAMAGED)
    assert out.splitlines()[0].startswith("position: 310 ")  # one file: no name needed


def test_an_empty_directory_is_an_input_error(tmp_path):
    code, out, err = _run("batches", tmp_path)
    assert code == 2 and out == "" and "no segment files" in err


def test_triage_takes_several_log_dirs_and_names_partitions_by_their_dir(tmp_path):
    for broker in ("broker-1", "broker-2"):
        d = tmp_path / broker / "orders-0"
        d.mkdir(parents=True)
        shutil.copy(SEGMENT, d / "00000000000000000000.log")
    r = CliRunner().invoke(app, ["triage", "--json", str(tmp_path / "broker-1"), str(tmp_path / "broker-2")])
    report = json.loads(r.stdout)
    assert report["paths"] == [str(tmp_path / "broker-1"), str(tmp_path / "broker-2")]
    assert sorted(p["path"] for p in report["partitions"]) == [str(tmp_path / "broker-1" / "orders-0"),
                                                                str(tmp_path / "broker-2" / "orders-0")]
    table = CliRunner().invoke(app, ["triage", "--all", str(tmp_path / "broker-1"), str(tmp_path / "broker-2")])
    rows = [line.split()[0] for line in table.stdout.splitlines()[1:3]]
    assert rows == ["broker-1/orders-0", "broker-2/orders-0"]
