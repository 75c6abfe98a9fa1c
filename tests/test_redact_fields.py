"""--redact-fields: a key or value in which the fields cannot be found is masked whole, and
payload-masked says so (its mutation tests: one change to a value confluent-kafka's AvroSerializer
framed, with the finding's offset); a plain JSON value has its fields masked; no bytes of either
are shown in any format."""

from __future__ import annotations

import base64
import hashlib
import json
import struct

import pytest
from cli_inprocess import run
from kafka.record.default_records import DefaultRecordBatchBuilder
from redaction_evidence import SCHEMA, AvroSerializer, MessageField, MockSchemaRegistryClient, SerializationContext

MUTATION_CODES = {"payload-masked"}
SECRET = "hunter2-QZXJ"
FORMATS = [["--json"], ["--json", "--encoding", "hex"], ["--json", "--encoding", "base64"],
           ["--json", "--encoding", "text"], ["--wide"], ["-f", "dump-log"]]


def _shows_secret(out: str) -> bool:
    """The password as text, hex, or base64 at any alignment (the table may cut it short)."""
    forms = ["hunter2", SECRET.encode().hex()[:12]] + [base64.b64encode(SECRET.encode()[i:]).decode()[:8] for i in range(3)]
    return any(f in out for f in forms)


def _values() -> list[bytes]:
    ser = AvroSerializer(MockSchemaRegistryClient({"url": "mock://test"}), SCHEMA)
    return [ser({"id": f"user-{i}", "password": SECRET, "age": 20 + i}, SerializationContext("t", MessageField.VALUE))
            for i in range(3)]


def _segment(tmp_path, values: list[bytes], keys: list[bytes | None] | None = None):
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, v in enumerate(values):
        bld.append(i, timestamp=1_700_000_000_000 + i, key=None if keys is None else keys[i], value=v, headers=[])
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    seg.parent.mkdir(exist_ok=True)
    data = bytes(bld.build())
    seg.write_bytes(data)
    return seg, data


@pytest.fixture()
def export(tmp_path):
    p = tmp_path / "schemas.json"
    p.write_text(json.dumps([{"subject": "t-value", "version": 1, "id": 1, "schema": SCHEMA}]))
    return p


def _json(seg, *args: str) -> tuple[int, list[dict], list[dict]]:
    r = run("records", "--json", *args, str(seg))
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    return (r.returncode, [x for x in lines if x["type"] == "record"],
            [f for x in lines if x["type"] == "findings" for f in x["findings"]])


def _masked(b: bytes) -> dict:
    return {"redacted": "sha256:" + hashlib.sha256(b).hexdigest(), "length": len(b)}


def test_clean_avro_is_shown_decoded_with_the_field_masked(tmp_path, export):
    values = _values()
    seg, _ = _segment(tmp_path, values)
    rc, recs, findings = _json(seg, "--schemas", str(export), "--redact-fields", "password")
    assert (rc, findings) == (0, [])
    assert [r["valuePayload"]["decoded"] for r in recs] == [{"id": f"user-{i}", "password": "[redacted]", "age": 20 + i}
                                                           for i in range(3)]
    assert [r["value"] for r in recs] == [_masked(v) for v in values]


@pytest.mark.parametrize("how", ["trailing-byte", "unknown-id", "no-schemas"])
def test_a_value_that_does_not_parse_is_masked_whole(tmp_path, export, how):
    """payload-masked: the second value changed so that it does not decode (a byte after the Avro
    value, an id the store lacks), or no schema given at all: masked whole, once per run."""
    values = _values()
    if how == "trailing-byte":
        values[1] += b"\x00"
    elif how == "unknown-id":
        values[1] = values[1][:1] + struct.pack(">i", 99) + values[1][5:]
    seg, data = _segment(tmp_path, values)
    schemas = [] if how == "no-schemas" else ["--schemas", str(export)]
    rc, recs, findings = _json(seg, *schemas, "--redact-fields", "password")
    first = 0 if how == "no-schemas" else 1
    masked = [f for f in findings if f["code"] == "payload-masked"]
    assert [(f["severity"], f["offset"], f["length"]) for f in masked] == \
        [("info", data.index(values[first]), len(values[first]))]
    assert f"value of offset {first}" in masked[0]["message"]
    others = {"trailing-byte": ["payload-malformed"], "unknown-id": ["schema-unknown"], "no-schemas": []}[how]
    assert [f["code"] for f in findings if f["code"] != "payload-masked"] == others
    assert rc == (1 if others == ["payload-malformed"] else 0)
    assert recs[1]["value"] == _masked(values[1])
    assert "decoded" not in recs[1]["valuePayload"] and "error" not in recs[1]["valuePayload"]
    for fmt in FORMATS:
        out = run("records", *fmt, *schemas, "--redact-fields", "password", str(seg)).stdout
        assert not _shows_secret(out), fmt
        assert "sha256:" in out


def test_the_oracle_shows_the_secret_without_redaction(tmp_path, export):
    values = _values()
    values[1] += b"\x00"
    seg, _ = _segment(tmp_path, values)
    for fmt in FORMATS:
        out = run("records", *fmt, "--schemas", str(export), str(seg)).stdout
        assert _shows_secret(out), fmt


def test_payload_malformed_keeps_its_reason_to_itself_under_redaction(tmp_path, export):
    values = _values()
    values[1] += b"\x00"
    seg, _ = _segment(tmp_path, values)
    plain = [f["message"] for f in _json(seg, "--schemas", str(export))[2]]
    red = [f["message"] for f in _json(seg, "--schemas", str(export), "--redact", "values")[2]]
    end = len(values[1]) - 5 - 1  # the Avro value's end: the payload past the framing, less the byte added
    assert plain == [f"value of offset 1: schema id 1 (AVRO) at byte {end} of the payload: 1 bytes after the Avro value"]
    assert red == [f"value of offset 1: schema id 1 (AVRO) at byte {end} of the payload: the reason is withheld under "
                   "redaction"]


def test_plain_json_fields_are_masked(tmp_path):
    values = [json.dumps({"user": f"u{i}", "password": SECRET, "nested": [{"PassWord": "x"}]}).encode()
              for i in range(2)]
    seg, _ = _segment(tmp_path, values, keys=[b"k0", b'{"password": "QZXJ"}'])
    rc, recs, findings = _json(seg, "--redact-fields", "password")
    assert [r["valuePayload"]["decoded"] for r in recs] == [
        {"user": f"u{i}", "password": "[redacted]", "nested": [{"PassWord": "[redacted]"}]} for i in range(2)]
    assert [r["value"] for r in recs] == [_masked(v) for v in values]
    # the keys: "k0" is not JSON (masked whole, once), the second is and is shown masked
    assert recs[0]["key"] == _masked(b"k0") and "decoded" not in recs[0]["keyPayload"]
    assert recs[1]["keyPayload"]["decoded"] == {"password": "[redacted]"}
    assert [(f["code"], f["offset"]) for f in findings] == [("payload-masked", recs[0]["offset"] + 61 + 6)]
    assert rc == 0
    table = run("records", "--redact-fields", "password", str(seg)).stdout
    assert '{"user":"u0","password":"[redacted]"' in table and SECRET not in table
