"""Fuzz targets of the payload decoders and the ``_schemas`` reader (issue 26).

* ``avro``, ``protobuf``, ``jsonschema``: the first byte picks one of a few fixed schemas (recursive types,
  decimals, enums, maps, unions, nested and repeated messages, ``$ref``) and the rest is the payload; with
  the high bit set the input is a schema text, a NUL, then the payload (the schema fuzzed too: compiled
  in this process, protoc included).  The contract: :meth:`PayloadDecoder.decode` returns (never raises),
  a value that ``json.dumps`` writes, a one-line error, an error offset inside the payload; plain
  framing detection of the same bytes never raises.
* ``schemas``: the bytes as a ``_schemas`` segment, loaded as a store, every schema looked up, made and
  resolved; findings inside the file.

Plain functions, importable without atheris (``targets.TARGETS`` lists them).
"""

from __future__ import annotations

import json
import os
import struct

from kafkadump.decoders.payloads.decode import PayloadDecoder
from kafkadump.decoders.payloads.framing import detect_framing
from kafkadump.decoders.payloads.model import DecodedPayload
from kafkadump.decoders.payloads.model import PayloadLimits
from kafkadump.decoders.payloads.model import Schema
from kafkadump.decoders.payloads.model import SchemaReference
from kafkadump.decoders.payloads.store import SchemaStore

LIMITS = PayloadLimits(max_depth=16, max_items=10_000, max_bytes=1 << 16)

AVRO = [
    {"type": "record", "name": "R", "fields": [
        {"name": "id", "type": "long"}, {"name": "s", "type": ["null", "string"]},
        {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "int"}}},
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 6}},
        {"name": "f", "type": {"type": "fixed", "name": "F4", "size": 4, "logicalType": "decimal", "precision": 9,
                               "scale": 2}},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}},
        {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "u", "type": {"type": "string", "logicalType": "uuid"}}]},
    {"type": "record", "name": "Node", "fields": [
        {"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]},
        {"name": "kids", "type": {"type": "array", "items": "Node"}}]},
    {"type": "array", "items": {"type": "record", "name": "Empty", "fields": []}},
    {"type": "map", "values": "null"},
    ["null", "double", "float", "boolean", "bytes", {"type": "int", "logicalType": "date"}],
]

PROTO = [
    'syntax = "proto3";\npackage f;\nimport "google/protobuf/timestamp.proto";\n'
    "message A { int32 n = 1; string s = 2; repeated sint64 xs = 3; map<string, A> m = 4; A next = 5;\n"
    "  enum K { K0 = 0; K1 = 1; } K k = 6; bytes b = 7; google.protobuf.Timestamp t = 8;\n"
    "  message In { fixed32 f = 1; double d = 2; } repeated In ins = 9; oneof o { bool yes = 10; float fl = 11; } }\n"
    "message B { uint64 u = 1; }\n",
    'syntax = "proto2";\nmessage P { required int32 r = 1; optional group G = 2 { optional int32 g = 3; } '
    "extensions 100 to 200; }\n",
]

JSON_SCHEMAS = [
    {"type": "object", "properties": {"n": {"type": "integer"}, "xs": {"type": "array", "items": {"$ref": "#"}}},
     "required": ["n"]},
    {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": {"type": "string",
                                                                                      "pattern": "^[a-z]+$"}},
    {"type": "object", "properties": {"x": {"$ref": "other.json"}}},
]
OTHER = Schema(None, "JSON", json.dumps({"type": "number", "minimum": 0}), source="other.json")


def _store(schema_type: str) -> SchemaStore:
    store = SchemaStore()
    if schema_type == "JSON":
        store.unnumbered.append(OTHER)
        store.file_names["other.json"] = OTHER
    return store


_FIXED = {
    "AVRO": [Schema(i + 1, "AVRO", json.dumps(s)) for i, s in enumerate(AVRO)],
    "PROTOBUF": [Schema(i + 1, "PROTOBUF", s) for i, s in enumerate(PROTO)],
    "JSON": [Schema(i + 1, "JSON", json.dumps(s)) for i, s in enumerate(JSON_SCHEMAS)],
}
_DECODERS = {t: PayloadDecoder(_store(t), LIMITS, validate=True) for t in _FIXED}


def check_decoded(got: DecodedPayload, payload: bytes) -> None:
    """The contract of one decoded payload."""
    assert isinstance(got, DecodedPayload)
    json.dumps(got.value, allow_nan=False)
    if got.error is not None:
        assert isinstance(got.error, str) and "\n" not in got.error and got.error, got.error
    if got.error_offset is not None:
        assert 0 <= got.error_offset <= len(payload), (got.error_offset, len(payload))
    assert got.error is not None or not got.limit


def _split(data: bytes, schema_type: str) -> tuple[PayloadDecoder, Schema, bytes, tuple[int, ...] | None]:
    if data and data[0] & 0x80:
        text, _, payload = data[1:].partition(b"\x00")
        schema = Schema(1, schema_type, text.decode("utf-8", "replace"))
        return PayloadDecoder(_store(schema_type), LIMITS, validate=True), schema, payload, None
    fixed = _FIXED[schema_type]
    pick = data[0] if data else 0
    indexes = (pick >> 4 & 3,) if schema_type == "PROTOBUF" else None
    if schema_type == "PROTOBUF" and pick & 0x40:
        indexes = (0, pick >> 4 & 3)  # a nested message
    return _DECODERS[schema_type], fixed[pick % len(fixed)], data[1:], indexes


def _decode(schema_type: str, data: bytes) -> None:
    detect_framing(data)
    decoder, schema, payload, indexes = _split(data, schema_type)
    check_decoded(decoder.decode(schema, payload, indexes), payload)


def avro(data: bytes) -> None:
    """Avro payloads (and schemas): never an exception, JSON-ready values, bounded decimals."""
    _decode("AVRO", data)


def protobuf(data: bytes) -> None:
    """Protobuf payloads (and .proto texts, compiled in process)."""
    _decode("PROTOBUF", data)


def jsonschema(data: bytes) -> None:
    """JSON payloads validated by JSON Schema (and schema texts)."""
    _decode("JSON", data)


_DIR = None


def _schemas_dir() -> str:
    global _DIR
    if _DIR is None:
        import tempfile

        base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        _DIR = os.path.join(tempfile.mkdtemp(prefix="kafkadump-fuzz-schemas-", dir=base), "_schemas-0")
        os.makedirs(_DIR)
    return _DIR


def schemas(data: bytes) -> None:
    """The ``_schemas`` reader: a segment folded, every schema looked up, made and its references resolved."""
    from kafkadump.base.errors import InputError

    d = _schemas_dir()
    with open(os.path.join(d, "00000000000000000000.log"), "wb") as f:
        f.write(data)
    try:
        store = SchemaStore.load([d])
    except InputError as e:
        assert "\n" not in str(e)
        return
    for located in store.findings:
        assert 0 <= located.finding.offset <= len(data), located.finding
    for schema in store.schemas():
        assert store.lookup(schema_id=schema.id) is not None
        for ref in schema.references:
            store.resolve(ref)
        assert isinstance(schema.text, str) and schema.schema_type
    store.resolve(SchemaReference("x", "s", -1))
    assert store.schema_types() == tuple(sorted({s.schema_type for s in store.schemas()}))


def _record(key: bytes | None, value: bytes | None, i: int) -> bytes:
    def v(n: int) -> bytes:
        z = (n << 1) ^ (n >> 63)
        out = bytearray()
        while z >= 0x80:
            out.append((z & 0x7F) | 0x80)
            z >>= 7
        out.append(z)
        return bytes(out)

    body = b"\x00" + v(0) + v(i)
    for b in (key, value):
        body += v(-1) if b is None else v(len(b)) + b
    body += v(0)
    return v(len(body)) + body


def schemas_segment(pairs: list[tuple[bytes | None, bytes | None]]) -> bytes:
    """A v2 batch of ``_schemas`` records (the seeds of the ``schemas`` target)."""
    from crc32c import crc32c

    recs = b"".join(_record(k, v, i) for i, (k, v) in enumerate(pairs))
    n = len(pairs)
    raw = bytearray(struct.pack(">qiibIhiqqqhii", 0, 49 + len(recs), 0, 2, 0, 0, n - 1, 0, 0, -1, -1, -1, n) + recs)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def _key(keytype: str, **kw) -> bytes:
    return json.dumps({"keytype": keytype, **kw, "magic": 0}).encode()


def _seeds_schemas():
    def value(subject, version, sid, text, kind=None, **kw):
        return json.dumps({"subject": subject, "version": version, "id": sid, "schema": text,
                           **({"schemaType": kind} if kind else {}), **kw}).encode()

    yield schemas_segment([
        (_key("SCHEMA", subject="a", version=1), value("a", 1, 1, json.dumps(AVRO[0]))),
        (_key("SCHEMA", subject="p", version=1), value("p", 1, 2, PROTO[0], "PROTOBUF")),
        (_key("SCHEMA", subject="b", version=1), value("b", 1, 3, '"string"', references=[
            {"name": "a", "subject": "a", "version": 1}], guid="0b2a8e5c-8f2e-4c6a-9d43-3d2f7a1c0b11")),
        (_key("SCHEMA", subject="a", version=2), value("a", 2, 3, '"string"', deleted=True)),
        (_key("DELETE_SUBJECT", subject="a"), json.dumps({"subject": "a", "version": 1}).encode()),
        (_key("SCHEMA", subject="b", version=1), None),
        (_key("CONFIG", subject=None), json.dumps({"compatibilityLevel": "FULL"}).encode()),
        (_key("CLEAR_SUBJECT", subject="p"), json.dumps({"subject": "p"}).encode()),
        (_key("NOOP"), None),
    ])


def _seeds_payloads(schema_type: str):
    from hostile_payloads import varint

    if schema_type == "AVRO":
        yield b"\x00" + varint(5) + b"\x00" + varint(0) + varint(2) + b"\x04\xd2" + b"\x00\x00\x01\x00" + b"\x02" \
            + varint(10) + varint(36) + b"6f1c1e2a-6b43-4bb0-9a3e-2d1f0c9e8b7a"
        yield b"\x01" + varint(1) + b"\x02" + varint(2) + b"\x00\x00" + b"\x00"
        yield b"\x02" + varint(3) + varint(0)
        yield b"\x80" + json.dumps(AVRO[0]).encode() + b"\x00" + b"\x02"
    elif schema_type == "PROTOBUF":
        yield b"\x00" + b"\x08\x96\x01\x12\x02hi\x1a\x02\x01\x02\x2a\x02\x08\x01\x30\x01"
        yield b"\x01" + b"\x08\x01\x13\x18\x02\x14"
        yield b"\x80" + PROTO[0].encode() + b"\x00\x08\x01"
    else:
        yield b"\x00" + b'{"n": 1, "xs": [{"n": 2, "xs": []}]}'
        yield b"\x01" + b'["abc", "d"]'
        yield b"\x02" + b'{"x": -1}'
        yield b"\x80" + json.dumps({"type": "string"}).encode() + b'\x00"x"'


TARGETS = {"avro": avro, "protobuf": protobuf, "jsonschema": jsonschema, "schemas": schemas}
SEEDS = {"avro": lambda: _seeds_payloads("AVRO"), "protobuf": lambda: _seeds_payloads("PROTOBUF"),
         "jsonschema": lambda: _seeds_payloads("JSON"), "schemas": _seeds_schemas}
