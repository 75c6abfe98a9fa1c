"""payload-malformed and schema-unknown: mutation tests (one byte changed in a framed value that
confluent-kafka's AvroSerializer wrote), with their offsets, and decoding that goes on."""

from __future__ import annotations

import json
import struct
import warnings

import pytest
from cli_inprocess import run
from kafka.record.default_records import DefaultRecordBatchBuilder

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

MUTATION_CODES = {"payload-malformed", "schema-unknown"}
SCHEMA = '{"type":"record","name":"User","fields":[{"name":"id","type":"string"},{"name":"age","type":"int"}]}'


def _values() -> list[bytes]:
    ser = AvroSerializer(MockSchemaRegistryClient({"url": "mock://test"}), SCHEMA)
    return [ser({"id": f"user-{i}", "age": 20 + i}, SerializationContext("t", MessageField.VALUE)) for i in range(3)]


def _segment(values: list[bytes], compression: int = 0) -> bytes:
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=compression, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, v in enumerate(values):
        bld.append(i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=v, headers=[])
    return bytes(bld.build())


@pytest.fixture()
def export(tmp_path):
    p = tmp_path / "schemas.json"
    p.write_text(json.dumps([{"subject": "t-value", "version": 1, "id": 1, "schema": SCHEMA}]))
    return p


def _records(tmp_path, data: bytes, *args: str) -> tuple[int, list[dict], list[dict]]:
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    seg.parent.mkdir(exist_ok=True)
    seg.write_bytes(data)
    r = run("records", "--json", *args, str(seg))
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    return r.returncode, [x for x in lines if x["type"] == "record"], [f for x in lines if x["type"] == "findings"
                                                                      for f in x["findings"]]


def test_clean_values_decode(tmp_path, export):
    rc, recs, findings = _records(tmp_path, _segment(_values()), "--schemas", str(export))
    assert (rc, findings) == (0, [])
    assert [r["valuePayload"]["decoded"] for r in recs] == [{"id": f"user-{i}", "age": 20 + i} for i in range(3)]


def test_payload_malformed_a_string_length_past_the_end(tmp_path, export):
    values = _values()
    bad = bytearray(values[1])
    bad[5] = 0x7E  # the id string's zigzag length: 63 bytes, past the end of the payload
    data = _segment([values[0], bytes(bad), values[2]])
    payload_at = data.index(bytes(bad)) + 5
    rc, recs, findings = _records(tmp_path, data, "--schemas", str(export))
    assert rc == 1
    assert [(f["code"], f["severity"]) for f in findings] == [("payload-malformed", "warning")]
    assert (findings[0]["offset"], findings[0]["length"]) == (payload_at, len(bad) - 5)  # the payload
    assert "schema id 1" in findings[0]["message"] and "offset 1" in findings[0]["message"]
    # decoding goes on; the bad record keeps its raw bytes and says "possibly"
    assert recs[1]["valuePayload"]["certain"] is False and "error" in recs[1]["valuePayload"]
    assert recs[1]["value"]["base64"]
    assert recs[2]["valuePayload"]["decoded"] == {"id": "user-2", "age": 22}


def test_payload_malformed_in_a_compressed_batch_names_the_decompressed_offset(tmp_path, export):
    values = _values()
    bad = bytearray(values[0])
    bad[5] = 0x7E
    data = _segment([bytes(bad)] + values[1:] * 20, compression=1)  # enough to make gzip worth it
    assert data[21:23] == b"\x00\x01"  # kafka-python compressed it (it keeps the plain batch when smaller)
    rc, recs, findings = _records(tmp_path, data, "--schemas", str(export))
    assert [f["code"] for f in findings] == ["payload-malformed"]
    # the compressed batch's payload, and where the bad payload starts in the decompressed records
    assert findings[0]["offset"] == 61
    assert findings[0]["decompressedOffset"] == recs[0]["valuePayload"]["payloadStart"] + _value_start(bytes(bad))


def _value_start(value: bytes) -> int:
    """Where the first record's value starts in the decompressed records: kafka-python's own
    encoding of the record, searched for the value's bytes."""
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    bld.append(0, timestamp=1_700_000_000_000, key=b"k0", value=value, headers=[])
    return bytes(bld.build())[61:].index(value)


def test_schema_unknown_once_per_id(tmp_path, export):
    values = _values()
    unknown = [v[:1] + struct.pack(">i", 99) + v[5:] for v in values]
    rc, recs, findings = _records(tmp_path, _segment(unknown), "--schemas", str(export))
    assert rc == 0  # info
    assert [(f["code"], f["severity"]) for f in findings] == [("schema-unknown", "info")]
    assert "id 99" in findings[0]["message"]
    assert [r["valuePayload"]["certain"] for r in recs] == [False] * 3
    assert all("decoded" not in r["valuePayload"] for r in recs)


def test_detection_alone_raises_nothing(tmp_path):
    rc, recs, findings = _records(tmp_path, _segment(_values()), "--detect")
    assert (rc, findings) == (0, [])
    assert [(r["valuePayload"]["framing"], r["valuePayload"]["schemaId"], r["keyPayload"]["format"]) for r in recs] \
        == [("confluent", 1, "utf8")] * 3


def test_where_on_decoded_and_raw(tmp_path, export):
    data = _segment(_values())
    _, recs, _ = _records(tmp_path, data, "--schemas", str(export), "--where", 'value.id == "user-1" or value.age > 21')
    assert [r["offset"] for r in recs] == [1, 2]
    _, recs, _ = _records(tmp_path, data, "--where", 'key == "k0" or offset >= 2')
    assert [r["offset"] for r in recs] == [0, 2]
    assert recs[0]["keyPayload"] == {"framing": None}  # the cheap default: no schema named


def test_where_parse_error_is_exit_2(tmp_path):
    seg = tmp_path / "x.log"
    seg.write_bytes(_segment(_values()))
    r = run("records", "--where", "offset >", str(seg))
    assert r.returncode == 2 and "column 9" in r.stderr


ARRAY_SCHEMA = '{"type":"record","name":"A","fields":[{"name":"xs","type":{"type":"array","items":"long"}}]}'


@pytest.mark.parametrize(("payload", "why"), [
    (b"\xfe\xff\xff\xff\x0f", "an array count of 2**31 with nothing after it"),
    (b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", "a varint longer than ten bytes"),
    (b"", "no bytes at all"),
])
def test_hostile_avro_is_a_finding_not_a_crash(tmp_path, payload, why):
    export = tmp_path / "schemas.json"
    export.write_text(json.dumps([{"subject": "t-value", "version": 1, "id": 5, "schema": ARRAY_SCHEMA}]))
    good = b"\x00" + struct.pack(">i", 5) + b"\x04\x02\x04\x00"  # [1, 2]
    data = _segment([b"\x00" + struct.pack(">i", 5) + payload, good])
    rc, recs, findings = _records(tmp_path, data, "--schemas", str(export))
    assert rc == 1, why
    assert [f["code"] for f in findings] == ["payload-malformed"], why
    assert recs[1]["valuePayload"]["decoded"] == {"xs": [1, 2]}


def test_inspector_never_raises_on_any_bytes():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from kafkadump.decoders.batches import Options
    from kafkadump.decoders.batches import iter_batches
    from kafkadump.decoders.payloads.model import DecodedPayload
    from kafkadump.decoders.payloads.model import Schema
    from kafkadump.decoders.payloads.view import PayloadInspector
    from kafkadump.decoders.payloads.view import Redaction

    class Store:
        def lookup(self, schema_id=None, guid=None):
            return None if schema_id == 13 else Schema(schema_id, "PROTOBUF" if (schema_id or 0) % 2 else "AVRO", "")

    class Decoder:
        def decode(self, schema, payload, message_indexes):
            return DecodedPayload(error="no") if payload[:1] == b"\x01" else DecodedPayload({"n": len(payload)})

    ins = PayloadInspector(Store(), Decoder(), Redaction(fields=frozenset({"n"})), True)

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=24)), st.one_of(st.none(), st.binary(max_size=24)),
                              st.lists(st.tuples(st.sampled_from(["__key_schema_id", "__value_schema_id", "x"]),
                                                 st.one_of(st.none(), st.binary(max_size=20))), max_size=2)),
                    min_size=1, max_size=4))
    def run_one(rows):
        bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
        for i, (k, v, h) in enumerate(rows):
            bld.append(i, timestamp=0, key=k, value=v, headers=h)
        for b in iter_batches(bytes(bld.build()), "/x/t-0/0.log", options=Options(records=True)):
            for r in b.records or ():
                view, findings = ins.view(r, b)
                assert all(f.offset >= 0 for f in findings)

    run_one()


def test_header_carried_guid_decodes_end_to_end(tmp_path):
    """confluent-kafka's header_schema_id_serializer puts a version-1 GUID in __value_schema_id and
    leaves the value bare; the export names the schema by that GUID."""
    from confluent_kafka.schema_registry import header_schema_id_serializer

    registry = MockSchemaRegistryClient({"url": "mock://test"})
    ser = AvroSerializer(registry, SCHEMA, conf={"schema.id.serializer": header_schema_id_serializer})
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(2):
        headers: list = []
        value = ser({"id": f"h-{i}", "age": i}, SerializationContext("t", MessageField.VALUE, headers))
        bld.append(i, timestamp=1_700_000_000_000 + i, key=None, value=value, headers=headers)
    reg = registry.get_latest_version("t-value")
    export = tmp_path / "schemas.json"
    export.write_text(json.dumps([{"subject": "t-value", "version": 1, "id": reg.schema_id, "guid": reg.guid,
                                   "schema": SCHEMA}]))
    rc, recs, findings = _records(tmp_path, bytes(bld.build()), "--schemas", str(export))
    assert (rc, findings) == (0, [])
    assert [(r["valuePayload"]["framing"], r["valuePayload"]["guid"], r["valuePayload"]["decoded"]) for r in recs] == \
        [("header-id", reg.guid, {"id": f"h-{i}", "age": i}) for i in range(2)]


PROTO = ('syntax = "proto2";\npackage p;\nmessage Set { repeated F file = 1; }\n'
         'message F { optional string name = 1; optional string package = 2; }\n')


def test_protobuf_message_indexes_end_to_end(tmp_path):
    """confluent-kafka's ProtobufSerializer frames a FileDescriptorProto (message index [1] of
    descriptor.proto: bytes 02 02); the store's .proto has a wire-compatible message at index 1."""
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from google.protobuf import descriptor_pb2

    ser = ProtobufSerializer(descriptor_pb2.FileDescriptorProto, MockSchemaRegistryClient({"url": "mock://test"}),
                             {"use.deprecated.format": False})
    value = ser(descriptor_pb2.FileDescriptorProto(name="a.proto", package="pk"),
                SerializationContext("t", MessageField.VALUE))
    assert value[5:7] == b"\x02\x02"
    export = tmp_path / "schemas.json"
    export.write_text(json.dumps([{"subject": "t-value", "version": 1, "id": 1, "schemaType": "PROTOBUF",
                                   "schema": PROTO}]))
    rc, recs, findings = _records(tmp_path, _segment([value]), "--schemas", str(export))
    vp = recs[0]["valuePayload"]
    assert (rc, findings) == (0, [])
    assert (vp["format"], vp["messageIndexes"], vp["payloadStart"]) == ("protobuf", [1], 7)
    assert vp["decoded"] == {"name": "a.proto", "package": "pk"}
    out = run("hexdump", "--records", "--schemas", str(export), str(tmp_path / "t-0" / "00000000000000000000.log"))
    assert "records[0].value.messageIndexes = [1]" in out.stdout
    assert "records[0].value.schemaId = 1" in out.stdout


def test_detect_finds_the_schemas_partition_in_the_log_dir(tmp_path):
    """A log dir holding _schemas-0 (written with the registry's own key and value JSON) and a topic:
    --detect decodes with it; without --detect nothing changes."""
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    key = {"keytype": "SCHEMA", "subject": "t-value", "version": 1, "magic": 1}
    value = {"subject": "t-value", "version": 1, "id": 1, "schema": SCHEMA, "deleted": False}
    bld.append(0, timestamp=1_700_000_000_000, key=json.dumps(key).encode(), value=json.dumps(value).encode(), headers=[])
    schemas = tmp_path / "_schemas-0"
    schemas.mkdir()
    (schemas / "00000000000000000000.log").write_bytes(bytes(bld.build()))
    rc, recs, findings = _records(tmp_path, _segment(_values()), "--detect")
    assert (rc, findings) == (0, [])
    assert recs[2]["valuePayload"]["decoded"] == {"id": "user-2", "age": 22}
    assert recs[2]["valuePayload"]["subject"] == "t-value"
    _, plain, _ = _records(tmp_path, _segment(_values()))
    default = plain[2]["valuePayload"]  # without --detect: the framing alone, a subset of the rich object
    assert default == {"framing": "confluent", "certain": True, "schemaId": recs[2]["valuePayload"]["schemaId"],
                       "guid": None}
    assert {k: recs[2]["valuePayload"][k] for k in default} == default
    assert recs[2]["valuePayload"]["schemaId"] > 0


def test_non_finite_numbers_keep_every_line_json(tmp_path):
    export = tmp_path / "schemas.json"
    export.write_text(json.dumps([{"subject": "t-value", "version": 1, "id": 1, "schemaType": "JSON", "schema": "{}"}]))
    value = b"\x00" + struct.pack(">i", 1) + b'{"a": NaN, "b": [Infinity, -Infinity, 1.5]}'
    rc, recs, findings = _records(tmp_path, _segment([value]), "--schemas", str(export))
    assert recs[0]["valuePayload"]["decoded"] == {"a": "NaN", "b": ["Infinity", "-Infinity", 1.5]}
