"""Hostile payloads and schemas: bounded memory and depth, reasons instead of exceptions, the missing extra.

The Avro bytes here are written by hand from the specification's binary encoding (zig-zag varints,
length-prefixed strings, blocks of items), not by the library kafkadump decodes with.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("fastavro")
pytest.importorskip("grpc_tools")

from kafkadump.base.errors import UsageError  # noqa: E402
from kafkadump.decoders.payloads.decode import PayloadDecoder  # noqa: E402
from kafkadump.decoders.payloads.decode import PayloadLibrariesMissing  # noqa: E402
from kafkadump.decoders.payloads.decode import parse_message_indexes  # noqa: E402
from kafkadump.decoders.payloads.model import PayloadLimits  # noqa: E402
from kafkadump.decoders.payloads.model import Schema  # noqa: E402
from kafkadump.decoders.payloads.store import SchemaStore  # noqa: E402


def zz(n: int) -> bytes:
    """Avro's long: zig-zag, then base-128 varint."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def avro(text, sid: int = 1) -> Schema:
    return Schema(sid, "AVRO", json.dumps(text))


DEC = PayloadDecoder(SchemaStore(), PayloadLimits(max_depth=32, max_items=10_000))

RECORD = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}, {"name": "s", "type": "string"},
                                                     {"name": "xs", "type": {"type": "array", "items": "int"}}]}


def test_hand_encoded_avro_record():
    data = zz(-3) + zz(2) + b"hi" + zz(2) + zz(5) + zz(-6) + zz(0)
    got = DEC.decode(avro(RECORD), data)
    assert got.error is None and got.value == {"id": -3, "s": "hi", "xs": [5, -6]}


def test_negative_block_count_with_byte_size():
    data = zz(1) + zz(0) + zz(-2) + zz(2) + zz(5) + zz(-6) + zz(0)
    assert DEC.decode(avro(RECORD), data).value == {"id": 1, "s": "", "xs": [5, -6]}


@pytest.mark.parametrize("schema, data, says", [
    # a count of 2^62 ints with 3 bytes left: fastavro stops at the end of the bytes
    (RECORD, zz(1) + zz(0) + zz(2 ** 62) + b"\x02\x02\x02", "ends inside"),
    # a string of 2^62 bytes announced, 3 there
    ("string", zz(2 ** 62) + b"abc", "ends inside"),
    ("bytes", zz(2 ** 40) + b"abc", "ends inside"),
    ("string", zz(-5) + b"abc", "Avro"),
    # invalid UTF-8 in a string
    ("string", zz(2) + b"\xff\xfe", "not UTF-8"),
    (RECORD, zz(1) + zz(3) + b"a\xc3(" + zz(0), "not UTF-8"),
    # a union branch that does not exist
    (["null", "int"], zz(7), "not the Avro encoding"),
    # an enum index past its symbols
    ({"type": "enum", "name": "E", "symbols": ["A"]}, zz(5), "not the Avro encoding"),
    # truncated
    (RECORD, zz(1), "ends inside"),
])
def test_malformed_avro_is_a_reason(schema, data, says):
    got = DEC.decode(avro(schema), data)
    assert got.value is None and says in got.error


def test_huge_count_of_zero_byte_items_is_refused_before_allocating():
    # an array of nulls: each item takes no bytes, so a 10-byte count would make fastavro loop 2^62 times
    for schema in ({"type": "array", "items": "null"},
                   {"type": "array", "items": {"type": "record", "name": "Empty", "fields": []}},
                   {"type": "map", "values": {"type": "array", "items": "null"}}):
        data = zz(2 ** 62) if schema["type"] == "array" else zz(1) + zz(1) + b"k" + zz(2 ** 62)
        got = DEC.decode(avro(schema), data)
        assert got.value is None and "more than 10000 array/map items" in got.error and got.error_offset is not None


def test_zero_byte_items_within_the_limit_decode():
    got = DEC.decode(avro({"type": "array", "items": "null"}), zz(3) + zz(0))
    assert got.value == [None, None, None]


def test_recursive_schema_nested_deeper_than_the_limit():
    linked = {"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]}
    deep = zz(1) * 100_000 + zz(0)
    got = DEC.decode(avro(linked), deep)
    assert got.value is None and "nested deeper than 32" in got.error
    assert DEC.decode(avro(linked), zz(1) * 3 + zz(0)).value == {"next": {"next": {"next": {"next": None}}}}


def test_trailing_bytes_after_the_value_keep_the_value_and_say_so():
    got = DEC.decode(avro("int"), zz(5) + b"xyz")
    assert got.value == 5 and got.error == "3 bytes after the Avro value" and got.error_offset == 1


def test_payload_over_the_byte_limit_is_not_decoded():
    small = PayloadDecoder(SchemaStore(), PayloadLimits(max_bytes=10))
    assert "over the 10-byte limit" in small.decode(avro("string"), b"\x00" * 11).error


@pytest.mark.parametrize("text, says", [
    ("{not json", "not JSON"),
    ('{"type": "record", "name": "A", "fields": [{"name": "b", "type": "nowhere.B"}]}', "'nowhere.B'"),
    ('{"type": "wat"}', "does not compile"),
])
def test_bad_avro_schema_is_a_reason(text, says):
    got = DEC.decode(Schema(3, "AVRO", text), b"\x00")
    assert got.value is None and "schema id 3 does not compile" in got.error and says in got.error


def test_bad_proto_schema_and_payloads_are_reasons():
    proto = Schema(4, "PROTOBUF", 'syntax = "proto3"; message M { int32 a = 1; M child = 2; }')
    assert DEC.decode(proto, b"\x08\x01").value == {"a": 1}
    assert "not a M message" in DEC.decode(proto, b"\xff\xff\xff").error
    assert "names no message" in DEC.decode(proto, b"", (2,)).error
    deep = _nest(300)  # past protobuf's recursion limit (100)
    got = DEC.decode(proto, deep)
    assert got.value is None and got.error
    broken = Schema(5, "PROTOBUF", 'syntax = "proto3"; message M { strin a = 1; }')
    assert "does not compile" in DEC.decode(broken, b"").error
    missing = Schema(6, "PROTOBUF", 'syntax = "proto3"; import "other.proto"; message M { int32 a = 1; }')
    assert "'other.proto' is in no reference" in DEC.decode(missing, b"").error
    escape = Schema(7, "PROTOBUF", 'syntax = "proto3"; import "../../etc/passwd"; message M { int32 a = 1; }')
    assert DEC.decode(escape, b"").error


def _nest(depth: int) -> bytes:
    """``child { child { ... } }`` nested ``depth`` times (field 2, length-delimited)."""
    inner = b""
    for _ in range(depth):
        n = len(inner)
        length = bytearray()
        while True:
            b, n = n & 0x7F, n >> 7
            length.append(b | (0x80 if n else 0))
            if not n:
                break
        inner = b"\x12" + bytes(length) + inner
    return inner


def test_json_payload_nesting_and_bytes():
    schema = Schema(8, "JSON", '{"type": "array"}')
    assert "deeper than the limit" in DEC.decode(schema, b"[" * 50 + b"]" * 50).error
    assert "deeper than the limit" in DEC.decode(schema, b"[" * 100_000).error
    assert "not UTF-8" in DEC.decode(schema, b'["\xff"]').error
    assert DEC.decode(schema, b"[1, 2]").value == [1, 2]


def test_unknown_schema_type_is_a_reason():
    assert "not AVRO, PROTOBUF or JSON" in DEC.decode(Schema(9, "XML", "<x/>"), b"").error


@pytest.mark.parametrize("data, start, want", [
    (b"\x00\x00\x00\x00\x01\x00rest", 5, ((0,), 6)),
    (b"\x04\x02\x04", 0, ((1, 2), 3)),
    (b"\x02\x00", 0, ((0,), 2)),
    (b"\x06\x02", 0, None),          # three indexes announced, one there
    (b"\x01", 0, None),              # a negative count
    (b"\x02\x01", 0, None),          # a negative index
    (b"\x80", 0, None),              # cut inside the varint
    (b"", 0, None),
    (b"\xfe\x01" + b"\x00" * 127, 0, None),  # 127 indexes: more than any .proto nests
])
def test_message_indexes(data, start, want):
    assert parse_message_indexes(data, start) == want


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=64))
def test_decoding_never_raises(data):
    for schema in (avro(RECORD), avro({"type": "array", "items": "null"}, 2),
                   avro({"type": "record", "name": "N", "fields": [{"name": "n", "type": ["null", "N"]}]}, 3),
                   avro({"type": "map", "values": ["null", "double", "bytes"]}, 4),
                   Schema(5, "PROTOBUF", 'syntax = "proto3"; message M { int64 a = 1; repeated M m = 2; '
                                         'map<string, bytes> b = 3; }'),
                   Schema(6, "JSON", "{}")):
        got = DEC.decode(schema, data)  # never raises
        assert got.error is None or isinstance(got.error, str) and "\n" not in got.error
        json.dumps(got.value)  # JSON-ready
    assert parse_message_indexes(data, 0) is None or isinstance(parse_message_indexes(data, 0)[0], tuple)


def test_a_missing_library_is_one_line_saying_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "fastavro", None)  # import fastavro raises ImportError
    with pytest.raises(PayloadLibrariesMissing) as e:
        PayloadDecoder(SchemaStore()).decode(avro("int"), b"\x02")
    assert isinstance(e.value, UsageError)  # exit 2
    assert str(e.value).count("\n") == 0 and "pip install 'kafkadump[payloads]'" in str(e.value)
    assert "fastavro" in str(e.value)


def test_startup_imports_no_payload_library():
    code = ("import sys, kafkadump.cli, kafkadump.decoders.payloads.store, kafkadump.decoders.payloads.decode; "
            "print(sorted(m for m in ('fastavro', 'google.protobuf', 'grpc_tools', 'jsonschema') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "[]"


def test_a_schema_naming_one_type_on_many_paths_is_checked_in_its_size():
    # level i has two fields of level i-1: 2^40 paths through the schema, 40 named types
    fields = [{"name": "a", "type": "int"}]
    levels = [{"type": "record", "name": "L0", "fields": fields}]
    for i in range(1, 40):
        levels.append({"type": "record", "name": f"L{i}", "fields": [{"name": "x", "type": f"L{i - 1}"},
                                                                   {"name": "y", "type": f"L{i - 1}"}]})
    schema = {"type": "record", "name": "Top", "fields": [{"name": f"f{i}", "type": lv} for i, lv in
                                                         enumerate(levels)] +
              [{"name": "empty", "type": {"type": "array", "items": {"type": "fixed", "name": "Z", "size": 0}}}]}
    got = DEC.decode(avro(schema), b"")
    assert got.value is None and got.error  # compiled (and guarded: zero-byte items) without walking 2^40 paths
    assert "more than 10000" in DEC.decode(avro({"type": "array", "items": {"type": "fixed", "name": "Z0",
                                                                            "size": 0}}), zz(2 ** 40)).error


def test_the_registrys_builtin_imports_compile():
    text = ('syntax = "proto3"; import "confluent/meta.proto"; import "confluent/type/decimal.proto";\n'
            'message P { confluent.type.Decimal price = 1 [(confluent.field_meta) = { doc: "EUR" }]; }')
    # price { value: 0x04d2 (1234), precision: 6, scale: 2 }
    got = DEC.decode(Schema(10, "PROTOBUF", text), b"\x0a\x08\x0a\x02\x04\xd2\x10\x06\x18\x02")
    assert got.error is None and got.value == {"price": {"value": "BNI=", "precision": 6, "scale": 2}}


@pytest.mark.parametrize("logical, base, data, raw", [
    ("timestamp-millis", "long", zz(2 ** 62), 2 ** 62),        # beyond year 9999
    ("timestamp-micros", "long", zz(-(2 ** 62)), -(2 ** 62)),
    ("date", "int", zz(2 ** 30), 2 ** 30),
    ("time-millis", "int", zz(10 ** 9), 10 ** 9),               # more than a day
    ("uuid", "string", zz(3) + b"abc", "abc"),
])
def test_a_value_its_logical_type_cannot_show_keeps_its_raw_value(logical, base, data, raw):
    got = DEC.decode(avro({"type": "record", "name": "T", "fields": [
        {"name": "x", "type": {"type": base, "logicalType": logical}}, {"name": "n", "type": "int"}]}), data + zz(7))
    assert got.value == {"x": raw, "n": 7}
    assert got.error.startswith("a logical type cannot show its value") and "without logical types" in got.error


def test_item_limits_for_schemas_fastavro_bounds_and_for_protobuf_and_json():
    few = PayloadDecoder(SchemaStore(), PayloadLimits(max_items=100))
    bools = zz(150) + b"\x01" * 150 + zz(0)
    assert "more than 100 array/map items" in few.decode(avro({"type": "array", "items": "boolean"}), bools).error
    assert few.decode(avro({"type": "array", "items": "boolean"}), zz(50) + b"\x01" * 50 + zz(0)).value == [True] * 50
    proto = Schema(11, "PROTOBUF", 'syntax = "proto3"; message M { repeated bool b = 1; map<string, M> m = 2; }')
    packed = b"\x0a" + bytes([150 & 0x7F | 0x80, 150 >> 7]) + b"\x01" * 150  # b: 150 packed bools
    assert "more than 100 repeated items" in few.decode(proto, packed).error
    assert few.decode(proto, b"\x0a\x02\x01\x00").value == {"b": [True, False], "m": {}}
    def entry(key: bytes, n: int) -> bytes:  # m { key: KEY value { b: [true] * n } }
        inner = b"\x0a" + bytes([n]) + b"\x01" * n
        body = b"\x0a" + bytes([len(key)]) + key + b"\x12" + bytes([len(inner)]) + inner
        return b"\x12" + bytes([len(body)]) + body
    assert few.decode(proto, entry(b"k", 90) + entry(b"j", 5)).value["m"]["k"]["b"] == [True] * 90
    assert "more than 100 repeated items" in few.decode(proto, entry(b"k", 60) + entry(b"j", 60)).error
    json_schema = Schema(12, "JSON", "{}")
    assert "more than 100 items" in few.decode(json_schema, json.dumps(list(range(150))).encode()).error


def test_protobuf_nesting_deeper_than_the_limit_within_protobufs_own():
    proto = Schema(13, "PROTOBUF", 'syntax = "proto3"; message M { int32 a = 1; M child = 2; }')
    got = DEC.decode(proto, _nest(40))  # 40 levels: protobuf reads it (its limit is 100), ours is 32
    assert got.value is None and got.error == "nested deeper than the limit (32)"
    assert DEC.decode(proto, _nest(20)).error is None


def test_limits_from_the_decoders_options():
    from kafkadump.decoders.batches.options import Options

    assert PayloadLimits.from_options(Options(max_decompressed=1000)) == PayloadLimits(max_bytes=1000)
    assert PayloadLimits.from_options(Options()).max_depth == PayloadLimits().max_depth


def test_checking_the_libraries_before_any_output(monkeypatch):
    from kafkadump.decoders.payloads.decode import check_payload_libraries

    check_payload_libraries(("AVRO", "PROTOBUF", "JSON"))  # installed here: nothing raised
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    check_payload_libraries(("AVRO",))
    with pytest.raises(PayloadLibrariesMissing, match=r"JSON payloads needs jsonschema .*kafkadump\[payloads\]"):
        check_payload_libraries(("AVRO", "JSON"))
