"""Framing detection of keys and values, against confluent-kafka's own serializers (mock registry,
no network) and kafka-python's zigzag varint encoder for Protobuf message indexes."""

from __future__ import annotations

import struct
import uuid
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkadump.decoders.payloads.framing import detect_framing
from kafkadump.decoders.payloads.framing import message_indexes
from kafkadump.decoders.payloads.model import Framing

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from confluent_kafka.schema_registry import header_schema_id_serializer
    from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
from kafka.record.util import encode_varint as _kafka_python_varint


def encode_varint(n: int) -> bytes:
    """kafka-python's zigzag varint (Kafka's ByteUtils.writeVarint) as bytes."""
    out = bytearray()
    _kafka_python_varint(n, out.append)
    return bytes(out)

USER = '{"type":"record","name":"User","fields":[{"name":"id","type":"string"}]}'


@pytest.fixture()
def registry():
    return MockSchemaRegistryClient({"url": "mock://test"})


def test_confluent_avro_prefix(registry):
    framed = AvroSerializer(registry, USER)({"id": "42"}, SerializationContext("t", MessageField.VALUE))
    sid = registry.get_latest_version("t-value").schema_id
    f = detect_framing(framed, [], "value")
    assert f == Framing("confluent", schema_id=sid, payload_start=5, certain=True)
    assert framed[f.payload_start:] == b"\x0442"  # Avro: zigzag length 2, "42"


def test_confluent_json_schema_prefix(registry):
    framed = JSONSerializer('{"type":"object"}', registry)({"a": 1}, SerializationContext("j", MessageField.VALUE))
    f = detect_framing(framed, [], "value")
    assert (f.kind, f.schema_id, framed[f.payload_start:]) == ("confluent", 1, b'{"a":1}')


def test_header_carried_guid(registry):
    headers: list[tuple[str, bytes]] = []
    ser = AvroSerializer(registry, USER, conf={"schema.id.serializer": header_schema_id_serializer})
    body = ser({"id": "7"}, SerializationContext("h", MessageField.KEY, headers))
    guid = registry.get_latest_version("h-key").guid
    key = detect_framing(body, headers, "key")
    assert key == Framing("header-id", guid=str(uuid.UUID(guid)))
    assert body[key.payload_start:] == b"\x027"
    # the value of the same record is not framed by the key's header
    assert detect_framing(b"plain", headers, "value").kind == "utf8"


def test_header_carried_id_and_protobuf_indexes():
    hv = b"\x00" + struct.pack(">i", 9) + encode_varint(2) + encode_varint(1) + encode_varint(3)
    f = detect_framing(b"\x08\x01", [("__value_schema_id", hv)], "value", lambda i, g: "PROTOBUF")
    assert (f.kind, f.schema_id, f.message_indexes, f.payload_start) == ("header-id", 9, (1, 3), 0)


@pytest.mark.parametrize("indexes", [[0], [1], [2, 0], [0, 5, 300]])
def test_protobuf_message_indexes_with_the_store(indexes):
    encoded = b"\x00" if indexes == [0] else encode_varint(len(indexes)) + b"".join(map(encode_varint, indexes))
    data = b"\x00" + struct.pack(">i", 3) + encoded + b"\x08\x96\x01"
    f = detect_framing(data, [], "value", lambda i, g: "PROTOBUF" if i == 3 else None)
    assert f.message_indexes == tuple(indexes)
    assert data[f.payload_start:] == b"\x08\x96\x01"
    assert f.certain


def test_indexes_only_parsed_for_protobuf():
    data = b"\x00\x00\x00\x00\x03\x02\x02\x08"
    assert detect_framing(data, [], "value").message_indexes is None
    assert detect_framing(data, [], "value", lambda i, g: "AVRO").payload_start == 5


@pytest.mark.parametrize("data", [b"\x00", b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00abc"])
def test_magic_zero_not_plausibly_framed_is_possibly(data):
    f = detect_framing(data, [], "value")
    assert (f.kind, f.certain) == ("confluent", False)


@pytest.mark.parametrize("data", [b"\x00\xff\xff\xff\xff", b"\x00\xff\xfe\x80\x62rest"])
def test_a_negative_schema_id_is_no_framing(data):
    """A registry never gives a negative id: bytes after a zero that read as one are not framed
    (no ``[-98206?]`` hint in the table, binary in --json)."""
    from kafkadump.decoders.payloads.framing import schema_framing

    assert detect_framing(data, [], "value").kind == "binary"
    assert schema_framing(data, [], "value") is None


def test_unknown_id_with_a_store_is_possibly():
    f = detect_framing(b"\x00\x00\x00\x00\x11abc", [], "value", lambda i, g: None)
    assert (f.kind, f.schema_id, f.certain) == ("confluent", 17, False)


def test_bad_protobuf_indexes_are_possibly():
    data = b"\x00\x00\x00\x00\x03\x7f"  # count -64
    assert detect_framing(data, [], "value", lambda i, g: "PROTOBUF").certain is False
    assert message_indexes(b"\x04\x02", 0) is None  # two indexes announced, one there


@pytest.mark.parametrize(("data", "kind"), [
    (b"", "empty"), (None, "empty"), (b'{"a": [1, 2]}', "json"), (b" [1]", "json"), (b"{not json", "utf8"),
    ("h\u00e9".encode(), "utf8"), (b"\xff\xfe", "binary"), (b"\x01\x02", "binary")])
def test_plain_values(data, kind):
    assert detect_framing(data, [], "value").kind == kind


def test_malformed_header_is_possibly():
    f = detect_framing(b"x", [("__value_schema_id", b"\x01\x02")], "value")
    assert (f.kind, f.certain, f.guid, f.schema_id) == ("header-id", False, None, None)


@given(st.binary(max_size=64), st.lists(st.tuples(st.sampled_from(["__key_schema_id", "__value_schema_id", "x"]),
                                                  st.one_of(st.none(), st.binary(max_size=40))), max_size=3))
def test_detection_never_raises(data, headers):
    for which in ("key", "value"):
        for store in (None, lambda i, g: "PROTOBUF", lambda i, g: None):
            f = detect_framing(data, headers, which, store)
            assert 0 <= f.payload_start <= max(len(data), 0) or f.kind == "header-id"


# --- the default keyPayload / valuePayload (no payload options): a subset of --detect's object -------------

def _rich(data, headers, which):
    """--detect's object for a key or value, without a store (PayloadInspector, side_object)."""
    from kafkadump.decoders.payloads.view import PayloadSide
    from kafkadump.objects.records import side_object

    return None if data is None else side_object(PayloadSide(detect_framing(data, headers, which)), False)


def test_default_framing_of_confluent_serializers(registry):
    from kafkadump.objects.records import framing_object

    framed = AvroSerializer(registry, USER)({"id": "42"}, SerializationContext("t", MessageField.VALUE))
    sid = registry.get_latest_version("t-value").schema_id
    assert framing_object(framed, [], "value") == {"framing": "confluent", "certain": True, "schemaId": sid,
                                                   "guid": None}
    headers: list[tuple[str, bytes]] = []
    ser = AvroSerializer(registry, USER, conf={"schema.id.serializer": header_schema_id_serializer})
    body = ser({"id": "7"}, SerializationContext("h", MessageField.KEY, headers))
    guid = str(uuid.UUID(registry.get_latest_version("h-key").guid))
    assert framing_object(body, headers, "key") == {"framing": "header-id", "certain": True, "schemaId": None,
                                                    "guid": guid}
    assert framing_object(b"plain", headers, "value") == {"framing": None}
    assert framing_object(None, headers, "key") is None
    assert framing_object(b"\x00\x00\x00\x00\x05", [], "value", control={"type": "COMMIT"}) is None


@given(st.one_of(st.none(), st.binary(max_size=12), st.binary(max_size=8).map(lambda b: b"\x00" + b)),
       st.lists(st.tuples(st.sampled_from(["__key_schema_id", "__value_schema_id", "x"]),
                          st.one_of(st.none(), st.binary(max_size=20),
                                    st.binary(min_size=4, max_size=4).map(lambda b: b"\x00" + b))), max_size=3))
def test_default_framing_is_a_subset_of_detect(data, headers):
    """Every field of the default object is in --detect's, with the same value."""
    from kafkadump.objects.records import framing_object

    for which in ("key", "value"):
        cheap = framing_object(data, headers, which)
        rich = _rich(data, headers, which)
        if cheap is None:
            assert rich is None
            continue
        assert {k: rich[k] for k in cheap} == cheap
        assert (cheap["framing"] is None) == (len(cheap) == 1)


def test_table_shows_the_schema_id_by_default(tmp_path):
    import subprocess
    import sys

    from builders import Rec, v2_batch

    recs = [Rec(b"k", b"\x00\x00\x00\x00\x11avro"), Rec(None, b"\x00\x01"),
            Rec(b"plain", b"text", headers=(("__value_schema_id", b"\x00\x00\x00\x00\x07"),)),
            Rec(b"\x00\x00\x00\x00\x2a", None)]
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(v2_batch(0, recs).data)
    out = subprocess.run([sys.executable, "-m", "kafkadump", "records", str(seg)], capture_output=True, text=True,
                         check=True).stdout.splitlines()[1:]
    cells = [line.split()[4:6] for line in out]
    assert cells == [["k", "[17]"], ["null", "[??]"], ["plain", "[7]"], ["[42]", "null"]]
