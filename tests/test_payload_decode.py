"""Payload decoding against confluent-kafka's Schema Registry serializers (a mock registry, no network):
the serializers frame the payloads and register the schemas, the registry's state is exported as
``GET /schemas`` would give it, and every field must come back."""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
import warnings
from pathlib import Path

import pytest

pytest.importorskip("fastavro")
pytest.importorskip("grpc_tools")
pytest.importorskip("jsonschema")

from kafkadump.decoders.payloads.decode import PayloadDecoder  # noqa: E402
from kafkadump.decoders.payloads.decode import parse_message_indexes  # noqa: E402
from kafkadump.decoders.payloads.store import SchemaStore  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from confluent_kafka.schema_registry import Schema as SrSchema
    from confluent_kafka.schema_registry import SchemaReference as SrReference
    from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

AVRO_SCHEMA = {
    "type": "record", "name": "Everything", "namespace": "t",
    "fields": [
        {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
        {"name": "f", "type": "float"}, {"name": "d", "type": "double"}, {"name": "s", "type": "string"},
        {"name": "raw", "type": "bytes"}, {"name": "nothing", "type": "null"},
        {"name": "opt", "type": ["null", "string"]}, {"name": "opt2", "type": ["null", "long"]},
        {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
        {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "counts", "type": {"type": "map", "values": "int"}},
        {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "int"}]}},
        {"name": "inners", "type": {"type": "array", "items": "Inner"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 4}},
        {"name": "fprice", "type": {"type": "fixed", "name": "Dec8", "size": 8, "logicalType": "decimal",
                                    "precision": 18, "scale": 2}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
    ],
}
AVRO_VALUE = {
    "b": True, "i": -2147483648, "l": 2 ** 63 - 1, "f": 1.5, "d": -0.1, "s": "héllo \u2603", "raw": b"\x00\xff",
    "nothing": None, "opt": "x", "opt2": None, "color": "GREEN", "fx": b"abcd", "tags": ["a", "", "c"],
    "counts": {"k": 1, "": -1}, "inner": {"x": 7}, "inners": [{"x": 1}, {"x": 2}],
    "price": decimal.Decimal("-12345678901234.5678"), "fprice": decimal.Decimal("1.10"),
    "ts": datetime.datetime(2024, 10, 10, 12, 30, 45, 123000, tzinfo=datetime.timezone.utc),
    "tsu": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=datetime.timezone.utc),
    "day": datetime.date(1999, 12, 31), "tm": datetime.time(23, 59, 59, 999000),
    "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
}
AVRO_DECODED = {
    "b": True, "i": -2147483648, "l": 2 ** 63 - 1, "f": 1.5, "d": -0.1, "s": "héllo \u2603", "raw": "AP8=",
    "nothing": None, "opt": "x", "opt2": None, "color": "GREEN", "fx": "YWJjZA==", "tags": ["a", "", "c"],
    "counts": {"k": 1, "": -1}, "inner": {"x": 7}, "inners": [{"x": 1}, {"x": 2}],
    "price": "-12345678901234.5678", "fprice": "1.10",
    "ts": "2024-10-10T12:30:45.123000+00:00", "tsu": "1969-12-31T23:59:59.999999+00:00",
    "day": "1999-12-31", "tm": "23:59:59.999000", "id": "12345678-1234-5678-1234-567812345678",
}

PROTO = """syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  string customer = 2;
  repeated Line lines = 3;
  Status status = 4;
  google.protobuf.Timestamp at = 5;
  map<string, int32> attrs = 6;
  bytes blob = 7;
  oneof pay { string card = 8; int32 cash = 9; }
  optional double discount = 10;
  message Line { string sku = 1; uint32 qty = 2; sint64 delta = 3; }
  enum Status { NEW = 0; PAID = 1; }
}
message Refund { int64 order_id = 1; fixed32 cents = 2; }
"""

JSON_SCHEMA = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
               "properties": {"user": {"type": "object", "properties": {"id": {"type": "string"}}},
                              "n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
               "required": ["n"]}


def _ctx(topic: str = "t") -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def _framed(data: bytes) -> tuple[int, bytes]:
    """The schema id and the rest of a Confluent-framed payload (the layout read here, not by kafkadump)."""
    assert data[0] == 0
    return int.from_bytes(data[1:5], "big"), data[5:]


def _export(client: MockSchemaRegistryClient, tmp: Path) -> SchemaStore:
    """The mock registry's state as the JSON of GET /schemas, loaded as kafkadump loads an export."""
    entries = []
    for subject in client.get_subjects():
        for version in client.get_versions(subject):
            rs = client.get_version(subject, version)
            entries.append({"subject": subject, "version": version, "id": rs.schema_id, "guid": rs.guid,
                            "schemaType": rs.schema.schema_type, "schema": rs.schema.schema_str,
                            "references": [{"name": r.name, "subject": r.subject, "version": r.version}
                                           for r in rs.schema.references or []]})
    path = tmp / "export.json"
    path.write_text(json.dumps(entries))
    return SchemaStore.load([path])


def _decode(store: SchemaStore, framed: bytes, **kw):
    sid, rest = _framed(framed)
    schema = store.lookup(sid)
    assert schema is not None
    indexes = None
    if schema.schema_type == "PROTOBUF":
        indexes, start = parse_message_indexes(framed, 5)
        rest = framed[start:]
    return PayloadDecoder(store, **kw).decode(schema, rest, indexes)


def test_avro_every_type_and_logical_type(tmp_path):
    client = MockSchemaRegistryClient({"url": "mock://"})
    framed = AvroSerializer(client, json.dumps(AVRO_SCHEMA))(AVRO_VALUE, _ctx())
    got = _decode(_export(client, tmp_path), framed)
    assert got.error is None and got.value == AVRO_DECODED and got.message == "t.Everything"


def test_avro_named_type_referenced_across_subjects(tmp_path):
    client = MockSchemaRegistryClient({"url": "mock://"})
    addr = {"type": "record", "name": "Addr", "namespace": "shop", "fields": [{"name": "city", "type": "string"}]}
    user = {"type": "record", "name": "User", "namespace": "shop",
            "fields": [{"name": "id", "type": "long"}, {"name": "home", "type": "shop.Addr"},
                       {"name": "work", "type": ["null", "shop.Addr"]}]}
    client.register_schema("addr", SrSchema(json.dumps(addr), "AVRO"))
    ref = SrReference("shop.Addr", "addr", 1)
    ser = AvroSerializer(client, SrSchema(json.dumps(user), "AVRO", [ref]))
    framed = ser({"id": 5, "home": {"city": "Oslo"}, "work": {"city": "Bergen"}}, _ctx("users"))
    store = _export(client, tmp_path)
    assert store.lookup(_framed(framed)[0]).references[0].subject == "addr"
    got = _decode(store, framed)
    assert got.value == {"id": 5, "home": {"city": "Oslo"}, "work": {"city": "Bergen"}}


def test_avro_named_type_from_a_schema_file_with_no_reference(tmp_path):
    (tmp_path / "addr.avsc").write_text(json.dumps(
        {"type": "record", "name": "Addr", "namespace": "shop", "fields": [{"name": "city", "type": "string"}]}))
    (tmp_path / "9.avsc").write_text(json.dumps({"type": "array", "items": "shop.Addr"}))
    store = SchemaStore.load([tmp_path])
    got = PayloadDecoder(store).decode(store.lookup(9), b"\x04\x04ab\x02c\x00")
    assert got.value == [{"city": "ab"}, {"city": "c"}]


def _proto_classes(tmp_path: Path):
    """Message classes for PROTO, compiled here with grpcio-tools' protoc (the serializer needs classes)."""
    import grpc_tools
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from grpc_tools import protoc

    (tmp_path / "shop.proto").write_text(PROTO)
    include = str(Path(grpc_tools.__file__).parent / "_proto")
    out = tmp_path / "set.pb"
    assert protoc.main(["protoc", f"-I{tmp_path}", f"-I{include}", f"--descriptor_set_out={out}",
                        "--include_imports", "shop.proto"]) == 0
    pool = descriptor_pool.DescriptorPool()
    for f in descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file:
        pool.Add(f)
    return (message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order")),
            message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order.Line")),
            message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Refund")))


ORDER_DECODED = {
    "id": "-9000000000", "customer": "Zoë", "status": "PAID", "blob": "AAEC", "card": "visa", "discount": 0.25,
    "lines": [{"sku": "a", "qty": 2, "delta": "-3"}, {"sku": "b", "qty": 0, "delta": "0"}],
    "at": "2024-10-10T12:30:45.500Z", "attrs": {"x": 1},
}


def _order(order_cls, line_cls):
    m = order_cls(id=-9_000_000_000, customer="Zoë", status=1, blob=b"\x00\x01\x02", card="visa", discount=0.25)
    m.lines.extend([line_cls(sku="a", qty=2, delta=-3), line_cls(sku="b")])
    m.at.FromJsonString("2024-10-10T12:30:45.500Z")
    m.attrs["x"] = 1
    return m


@pytest.mark.parametrize("schema_text", ["registered", "proto source"])
def test_protobuf_messages_by_index(tmp_path, schema_text):
    order_cls, line_cls, refund_cls = _proto_classes(tmp_path)
    client = MockSchemaRegistryClient({"url": "mock://"})
    conf = {"use.deprecated.format": False}
    order = ProtobufSerializer(order_cls, client, conf)(_order(order_cls, line_cls), _ctx("orders"))
    line = ProtobufSerializer(line_cls, client, conf)(line_cls(sku="z", qty=9, delta=1), _ctx("lines"))
    refund = ProtobufSerializer(refund_cls, client, conf)(refund_cls(order_id=3, cents=4), _ctx("refunds"))
    store = _export(client, tmp_path)
    if schema_text == "proto source":  # what a registry keeps: the .proto text, by the same id
        files = tmp_path / "by-id"
        files.mkdir()
        for framed in (order, line, refund):
            (files / f"{_framed(framed)[0]}.proto").write_text(PROTO)
        store = SchemaStore.load([files])
    assert parse_message_indexes(order, 5) == ((0,), 6)        # the single-0 shorthand
    assert parse_message_indexes(line, 5)[0] == (0, 1)  # Order.Line (nested type 0 is the map entry AttrsEntry)
    assert parse_message_indexes(refund, 5)[0] == (1,)          # the second top-level message
    got = _decode(store, order)
    assert got.error is None and got.message == "shop.Order" and got.value == ORDER_DECODED
    assert _decode(store, line).value == {"sku": "z", "qty": 9, "delta": "1"}
    assert _decode(store, refund).value == {"order_id": "3", "cents": 4}


def test_json_schema_payload_and_validation(tmp_path):
    client = MockSchemaRegistryClient({"url": "mock://"})
    value = {"user": {"id": "42"}, "n": 3, "tags": ["a", "ü"]}
    framed = JSONSerializer(json.dumps(JSON_SCHEMA), client)(value, _ctx("j"))
    store = _export(client, tmp_path)
    assert _decode(store, framed).value == value
    assert _decode(store, framed, validate=True).error is None
    sid, _ = _framed(framed)
    bad = PayloadDecoder(store, validate=True).decode(store.lookup(sid), b'{"user": {"id": "42"}}')
    assert bad.value == {"user": {"id": "42"}} and "does not validate" in bad.error and "'n'" in bad.error
    wrong = PayloadDecoder(store, validate=True).decode(store.lookup(sid), b'{"n": 1, "user": {"id": 7}}')
    assert "user/id" in wrong.error


def test_json_schema_ref_to_another_subject(tmp_path):
    export = [
        {"subject": "addr", "version": 1, "id": 1, "schemaType": "JSON",
         "schema": json.dumps({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})},
        {"subject": "user", "version": 1, "id": 2, "schemaType": "JSON",
         "schema": json.dumps({"type": "object", "properties": {"home": {"$ref": "addr.json"}}}),
         "references": [{"name": "addr.json", "subject": "addr", "version": 1}]},
    ]
    (tmp_path / "e.json").write_text(json.dumps(export))
    store = SchemaStore.load([tmp_path / "e.json"])
    dec = PayloadDecoder(store, validate=True)
    assert dec.decode(store.lookup(2), b'{"home": {"city": "Oslo"}}').error is None
    assert "city" in dec.decode(store.lookup(2), b'{"home": {}}').error


def test_lookup_by_guid_of_the_registry(tmp_path):
    client = MockSchemaRegistryClient({"url": "mock://"})
    framed = AvroSerializer(client, '"string"')("x", _ctx())
    store = _export(client, tmp_path)
    rs = client.get_latest_version("t-value")
    assert store.lookup(guid=rs.guid) is store.lookup(_framed(framed)[0])


def test_protobuf_import_from_another_subject(tmp_path):
    addr = 'syntax = "proto3";\npackage geo;\nmessage Addr { string city = 1; }\n'
    user = ('syntax = "proto3";\npackage people;\nimport "geo/addr.proto";\n'
            'message User { int32 id = 1; geo.Addr home = 2; }\n')
    export = [{"subject": "geo-addr", "version": 4, "id": 30, "schemaType": "PROTOBUF", "schema": addr},
              {"subject": "users-value", "version": 1, "id": 31, "schemaType": "PROTOBUF", "schema": user,
               "references": [{"name": "geo/addr.proto", "subject": "geo-addr", "version": 4}]}]
    (tmp_path / "export.json").write_text(json.dumps(export))
    store = SchemaStore.load([tmp_path / "export.json"])
    # id 7, home { city: "Oslo" }: written by hand from the wire format
    got = PayloadDecoder(store).decode(store.lookup(31), b"\x08\x07\x12\x06\x0a\x04Oslo", (0,))
    assert got.error is None and got.message == "people.User" and got.value == {"id": 7, "home": {"city": "Oslo"}}
    export[1]["references"] = []
    (tmp_path / "export.json").write_text(json.dumps(export[1:]))
    lonely = SchemaStore.load([tmp_path / "export.json"])
    assert "'geo/addr.proto' is in no reference" in PayloadDecoder(lonely).decode(lonely.lookup(31), b"").error


def test_json_schema_ref_to_a_file_of_the_store(tmp_path):
    (tmp_path / "addr.json").write_text(json.dumps({"type": "object", "required": ["city"]}))
    (tmp_path / "40.json").write_text(json.dumps({"type": "object", "properties": {"home": {"$ref": "addr.json"}}}))
    store = SchemaStore.load([tmp_path])
    dec = PayloadDecoder(store, validate=True)
    assert dec.decode(store.lookup(40), b'{"home": {"city": "Oslo"}}').error is None
    assert "'city' is a required property" in dec.decode(store.lookup(40), b'{"home": {}}').error
