"""The command line: exit codes, streams, JSON validity, errors without tracebacks."""

import json
import os
import subprocess
import sys

import pytest
from conftest import FIXTURES, ROOT
from typer.testing import CliRunner

from kafkadump.cli import app
from kafkadump.base.findings import Code

V2 = str(FIXTURES / "segment-v2/00000000000000000000.log")
MIXED = str(FIXTURES / "segment-mixed/00000000000000000000.log")
DAMAGED = str(FIXTURES / "damaged/00000000000000000000.log")
PADDED = str(FIXTURES / "damaged/padded.log")
COMMANDS = ["batches", "records", "verify-crc"]

runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args))


@pytest.mark.parametrize("cmd", COMMANDS)
def test_every_command_has_help(cmd):
    r = run(cmd, "--help")
    assert r.exit_code == 0
    assert "--json" in r.output


def test_version():
    r = run("--version")
    assert r.exit_code == 0 and r.output.startswith("kafkadump ")


@pytest.mark.parametrize("cmd", COMMANDS)
@pytest.mark.parametrize("path,code", [(V2, 0), (MIXED, 0), (PADDED, 0), (DAMAGED, 1)])
def test_exit_codes(cmd, path, code):
    assert run(cmd, path).exit_code == code


@pytest.mark.parametrize("cmd", COMMANDS)
def test_missing_file_is_exit_2_one_line(cmd, tmp_path):
    r = subprocess.run([sys.executable, "-m", "kafkadump", cmd, str(tmp_path / "nope.log")],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.strip().count("\n") == 0 and "no such file" in r.stderr
    assert "Traceback" not in r.stderr


def test_directory_is_exit_2(tmp_path):
    r = subprocess.run([sys.executable, "-m", "kafkadump", "batches", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "directory" in r.stderr and "Traceback" not in r.stderr


def test_bad_option_value_is_exit_2():
    assert run("records", "--from-time", "yesterday-ish", V2).exit_code == 2
    assert run("records", "--encoding", "rot13", V2).exit_code == 2
    assert run("records", "--key", "hex:zz", V2).exit_code == 2


def test_empty_file_is_clean(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(b"")
    r = run("verify-crc", str(p))
    assert r.exit_code == 0 and "batches: 0" in r.output


@pytest.mark.parametrize("path", [V2, MIXED, DAMAGED, PADDED])
@pytest.mark.parametrize("enc", ["base64", "hex", "text"])
def test_json_lines_are_valid_json(path, enc):
    for cmd in (["batches", "--json"], ["records", "--json", "--encoding", enc], ["verify-crc", "--json"]):
        r = run(*cmd, path)
        lines = r.stdout.splitlines()
        assert lines
        for line in lines:
            json.loads(line)


def test_records_json_contract_values():
    r = run("records", "--json", "--encoding", "hex", V2)
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    first = recs[0]
    assert first["type"] == "record" and first["offset"] == 0 and first["batchPosition"] == 0
    assert first["key"] == b"user-1".hex()
    assert first["timestampType"] == "CreateTime"
    assert first["headers"][0]["key"] == "trace-id"
    assert [r["offset"] for r in recs] == list(range(40))
    commit = [x for x in recs if x["control"] and x["control"]["type"] == "COMMIT"]
    assert commit and commit[0]["control"]["coordinatorEpoch"] == 7
    # null and empty stay distinct
    assert any(x["value"] is None for x in recs) and any(x["value"] == "" for x in recs)


def test_batches_json_contract_fields():
    r = run("batches", "--json", V2)
    b = json.loads(r.stdout.splitlines()[0])
    for k in ("type", "file", "position", "size", "baseOffset", "batchLength", "partitionLeaderEpoch", "magic",
              "crc", "attributes", "lastOffsetDelta", "baseTimestamp", "maxTimestamp", "producerId",
              "producerEpoch", "baseSequence", "recordCount", "lastOffset", "compression", "timestampType",
              "isTransactional", "isControlBatch", "hasDeleteHorizonMs", "crcValid", "computedCrc", "findings"):
        assert k in b, k
    assert b["size"] == b["batchLength"] + 12


def test_record_filters():
    def offsets(*args):
        r = run("records", "--json", *args, V2)
        return [json.loads(x)["offset"] for x in r.stdout.splitlines()]

    assert offsets("--from-offset", "10", "--to-offset", "13") == [10, 11, 12, 13]
    assert offsets("--key", "user-1") == [0]
    assert offsets("--from-time", "1700000020100", "--to-time", "1700000020200") == [9, 10]
    assert offsets("--from-time", "2023-11-14T22:13:40.100Z", "--to-time", "2023-11-14T22:13:40.200") == [9, 10]
    assert offsets("--key", "hex:" + b"user-1".hex()) == [0]


def test_verify_crc_lists_bad_and_summarises():
    r = run("verify-crc", "--json", DAMAGED)
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert lines[-1]["type"] == "summary"
    assert lines[-1]["bad"] == 3 and lines[-1]["files"] == 1 and not lines[-1]["valid"]
    bad = [x for x in lines[:-1] if x["type"] == "batch"]
    assert [(b["position"], b["crcValid"]) for b in bad] == [(310, False)]
    assert bad[0]["crc"] != bad[0]["computedCrc"]


def test_head_closes_pipe_quietly():
    cmd = f"{sys.executable} -m kafkadump records --json {V2} | head -1"
    big = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True)
    assert big.returncode == 0, big.stderr
    assert "Traceback" not in big.stderr
    json.loads(big.stdout)


def test_inputs_are_untouched(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(open(DAMAGED, "rb").read())
    os.chmod(p, 0o444)
    before = (p.read_bytes(), os.stat(p).st_mtime_ns)
    for cmd in COMMANDS:
        for fmt in ([], ["--json"]):
            run(cmd, *fmt, str(p))
    run("batches", "--format", "dump-log", str(p))
    assert (p.read_bytes(), os.stat(p).st_mtime_ns) == before


def test_table_is_plain_when_piped():
    r = run("batches", V2)
    assert "\x1b[" not in r.stdout
    assert r.stdout.splitlines()[0].split()[:3] == ["position", "baseOffset", "lastOffset"]


def test_man_page_documents_every_code_and_field():
    man = (ROOT / "man/kafkadump.1").read_text().replace("\\-", "-")
    for c in Code:
        assert f".B {c.value}" in man, c
    for field in ("baseOffset", "batchLength", "lastSequence", "crcValid", "computedCrc", "batchPosition",
                  "offsetDelta", "timestampDelta", "decompressedOffset"):
        assert field in man, field
