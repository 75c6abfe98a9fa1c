"""``kafkadump schemas``: table and JSON Lines over a _schemas partition, exit codes, the real corpus."""

from __future__ import annotations

import json
import subprocess
import sys

from cli_inprocess import run
from conftest import need_corpus
from schemas_topic_builder import ENTRIES, EXPECTED_REGISTRATIONS, EXPECTED_SETTINGS, write_schemas_partition

PATIENT_LOGDIR = "real/segments/ItumelengMogase+Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data"


def _objects(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_json_lists_every_registration_setting_finding_and_a_summary(tmp_path):
    write_schemas_partition(tmp_path)
    r = run("schemas", str(tmp_path), "--json")
    assert r.returncode == 1  # the malformed record is an error finding
    objs = _objects(r.stdout)
    schemas = [o for o in objs if o["type"] == "schema"]
    assert {(o["subject"], o["version"]): (o["id"], o["schemaType"], o["deleted"]) for o in schemas} \
        == EXPECTED_REGISTRATIONS
    assert [(o["subject"], o["version"]) for o in schemas] == sorted(EXPECTED_REGISTRATIONS)
    users = next(o for o in schemas if o["subject"] == "users-value")
    assert users["references"] == [{"name": "shop.Addr", "subject": "addr", "version": 1}]
    assert json.loads(users["schema"])["name"] == "User"
    settings = [(o["setting"], o["subject"], o["value"], o["offset"]) for o in objs if o["type"] == "schema-setting"]
    assert sorted(settings, key=str) == sorted(EXPECTED_SETTINGS, key=str)
    [finding] = [o for o in objs if o["type"] == "finding"]
    assert (finding["code"], finding["severity"]) == ("internal-malformed", "error")
    assert objs[-1] == {"type": "schemas-summary", "sources": [str(tmp_path)], "records": len(ENTRIES), "noops": 2,
                        "schemas": 7, "subjects": 6, "registrations": 8, "softDeleted": 2, "hardDeleted": 1,
                        "settings": 4, "findings": 1, "findingsNotListed": 0}


def test_table_shows_the_same_facts(tmp_path):
    write_schemas_partition(tmp_path)
    r = run("schemas", str(tmp_path / "_schemas-0"), "--wide")
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["subject", "version", "id", "type", "deleted", "references"]
    row = next(line for line in lines if line.startswith("users-value"))
    assert row.split()[:5] == ["users-value", "1", "4", "AVRO", "-"] and "shop.Addr (addr v1)" in row
    assert next(line for line in lines if line.startswith("old-value")).split()[:5] == \
        ["old-value", "1", "7", "AVRO", "hard"]
    assert any(line.split() == ["compatibilityLevel", "(global)", "BACKWARD"] for line in lines)
    assert any(line.split() == ["compatibilityLevel", "json-value", "(removed)"] for line in lines)
    assert any("internal-malformed" in line for line in lines)
    assert lines[-1].startswith("7 schemas, 6 subjects, 8 versions (2 soft deleted, 1 hard deleted), 4 settings")


def test_clean_partition_exits_0(tmp_path):
    write_schemas_partition(tmp_path, ENTRIES[:5])
    r = run("schemas", str(tmp_path), "--json")
    assert r.returncode == 0 and _objects(r.stdout)[-1]["schemas"] == 3


def test_missing_path_is_exit_2_with_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "kafkadump", "schemas", str(tmp_path / "nope")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "no such file or directory" in r.stderr
    assert "Traceback" not in r.stderr


def test_subject_names_reach_the_terminal_escaped(tmp_path):
    k = b'{"keytype":"SCHEMA","subject":"evil\\u001b[31m","version":1,"magic":1}'
    v = json.dumps({"subject": "evil\x1b[31m", "version": 1, "id": 1, "schema": '"int"'}).encode()
    write_schemas_partition(tmp_path, [(k, v)])
    r = run("schemas", str(tmp_path))
    assert r.returncode == 0 and "\x1b" not in r.stdout and "evil" in r.stdout


def test_real_patient_admissions_schemas():
    logdir = need_corpus(PATIENT_LOGDIR)
    r = run("schemas", str(logdir), "--json")
    assert r.returncode == 0
    assert _objects(r.stdout) == [{"type": "schemas-summary", "sources": [str(logdir)], "records": 42, "noops": 42,
                                   "schemas": 0, "subjects": 0, "registrations": 0, "softDeleted": 0,
                                   "hardDeleted": 0, "settings": 0, "findings": 0, "findingsNotListed": 0}]
    table = run("schemas", str(logdir / "_schemas-0"))
    assert table.returncode == 0
    assert table.stdout.splitlines()[-1] == ("0 schemas, 0 subjects, 0 versions (0 soft deleted, 0 hard deleted), "
                                             "0 settings; 42 _schemas records read (42 NOOP); 0 findings")


def test_hostile_text_in_findings_and_paths_is_escaped(tmp_path):
    hostile = "\x1b[2J\x1b]0;pwned\x07\u202e"
    key = json.dumps({"keytype": "X" + hostile, "magic": 0}).encode()
    write_schemas_partition(tmp_path, [(key, b"{}")])
    r = run("schemas", str(tmp_path))
    assert r.returncode == 1 and "internal-malformed" in r.stdout
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout and "\u202e" not in r.stdout
    missing = run("schemas", str(tmp_path / f"no{hostile}"))
    assert missing.returncode == 2 and "\x1b" not in missing.stderr and "\x07" not in missing.stderr


def test_schema_files_and_an_export_listed_together(tmp_path):
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "21.avsc").write_text('"long"')
    (tmp_path / "files" / "orders-value.proto").write_text('syntax = "proto3"; message O { int32 a = 1; }')
    export = tmp_path / "export.json"
    export.write_text(json.dumps([{"subject": "s", "version": 3, "id": 21, "schema": '"long"', "deleted": True}]))
    r = run("schemas", str(tmp_path / "files"), str(export), "--json")
    assert r.returncode == 0
    objs = _objects(r.stdout)
    assert [(o["subject"], o["version"], o["id"], o["schemaType"], o["deleted"]) for o in objs[:-1]] == [
        ("s", 3, 21, "AVRO", "soft"), (None, None, None, "PROTOBUF", None)]
    assert objs[-1]["schemas"] == 2 and objs[-1]["records"] == 0
