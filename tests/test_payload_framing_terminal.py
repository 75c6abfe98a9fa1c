"""Decoded payloads reach no terminal raw: escape sequences, C1 controls and bidi overrides inside a
JSON Schema payload (framed by confluent-kafka's JSONSerializer) are escaped in every human format."""

from __future__ import annotations

import json
import warnings

import pytest
from cli_inprocess import run
from kafka.record.default_records import DefaultRecordBatchBuilder

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

SCHEMA = '{"type":"object","properties":{"name":{"type":"string"}}}'
HOSTILE = "evil\x1b[31mred\x9b2J\u202etxt\u2028end"
RAW = ("\x1b", "\x9b", "\u202e", "\u2028")


@pytest.fixture(scope="module")
def evidence(tmp_path_factory):
    root = tmp_path_factory.mktemp("term")
    ser = JSONSerializer(SCHEMA, MockSchemaRegistryClient({"url": "mock://test"}))
    value = ser({"name": HOSTILE}, SerializationContext("t", MessageField.VALUE))
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    bld.append(0, timestamp=1_700_000_000_000, key=b"k", value=value, headers=[])
    seg = root / "t-0" / "00000000000000000000.log"
    seg.parent.mkdir()
    seg.write_bytes(bytes(bld.build()))
    export = root / "schemas.json"
    export.write_text(json.dumps([{"subject": "t-value", "version": 1, "id": 1, "schemaType": "JSON",
                                   "schema": SCHEMA}]))
    return seg, export


@pytest.mark.parametrize("args", [["records", "--wide"], ["records", "-f", "dump-log"], ["hexdump", "--records"],
                                  ["records", "--json"]], ids=" ".join)
def test_no_raw_control_characters(evidence, args):
    seg, export = evidence
    r = run(*args, "--schemas", str(export), str(seg))
    assert r.returncode == 0, r.stderr
    assert [c for c in RAW if c in r.stdout] == []
    assert '{"name":"evil\\u001b[31mred' in r.stdout.replace("\\u001B", "\\u001b") or args == ["records", "--json"]  # decoded, escaped (dump-log: as Jackson writes it)
    if args == ["records", "--json"]:
        assert json.loads(r.stdout)["valuePayload"]["decoded"] == {"name": HOSTILE}
