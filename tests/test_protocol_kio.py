"""kio as an independent encoder: every API and version both sides know, encoded by kio, read back by ours.

kio (Aiven's ``kio`` package) is generated from Kafka's message definitions
(as of 2026-10) into one data class per API, version and direction, with its
own serializers.  For every request and response class whose API and version
kafkadump's tables hold, hypothesis fills an instance with generated values
(arrays of at most two elements, nulls where nullable, tagged fields set or
left at their defaults, RECORDS fields holding a real record batch), kio
encodes it, kafkadump decodes the bytes, and every field value must be the
one kio was given, and every byte must be used.

A Produce v13 request and a Fetch v18 response are also sent as whole frames
(header and body), and the same frames with a version beyond the tables show
that no field is ever named from another version's layout.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import io
import random
import types
import uuid
from typing import Any, Union, get_args, get_origin

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_protocol import first_batch

from kafkadump.base.findings import Code
from kafkadump.decoders.protocol import schema as S
from kafkadump.decoders.protocol.decoder import RecordsValue
from kafkadump.decoders.protocol.decoder import camel
from kafkadump.decoders.protocol.decoder import decode_message
from kafkadump.decoders.protocol.decoder import kafka_uuid
from kafkadump.decoders.protocol.frames import decode_request
from kafkadump.decoders.protocol.frames import decode_response

kio = pytest.importorskip("kio")

from kio.schema.errors import ErrorCode  # noqa: E402
from kio.schema.index import api_key_map, schema_name_map  # noqa: E402
from kio.serial import entity_writer  # noqa: E402
from kio.serial._implicit_defaults import get_tagged_field_default as tagged_default  # noqa: E402
from kio.static.constants import EntityType  # noqa: E402
from kio.static.primitive import Records  # noqa: E402

ZERO_UUID = kafka_uuid(bytes(16))
BATCH = first_batch()[0]
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _pairs() -> list[tuple[int, int, str, type]]:
    """(api key, version, request|response, kio class) for every version both sides know."""
    from pkgutil import resolve_name

    out = []
    for key, api in sorted(api_key_map.items()):
        names = S.api_names(key)
        if not names:
            continue
        for v, entities in sorted(schema_name_map[api].items()):
            for et, kind in ((EntityType.request, "request"), (EntityType.response, "response")):
                if et in entities and kind in names and S.in_range(S.valid_versions(names[kind]), v):
                    out.append((key, v, kind, resolve_name(entities[et])))
    return out


PAIRS = _pairs()


# --- values for kio's classes ----------------------------------------------------------------------
#
# Drawn from a ``random.Random`` seeded by hypothesis (one seed per example; a failure names its seed):
# a hypothesis strategy per field costs ~0.1 s per message on a busy machine, this a millisecond.

def _optional(t: Any) -> tuple[Any, bool]:
    if get_origin(t) in (types.UnionType, Union):
        args = [a for a in get_args(t) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return t, False


BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
TEXTS = ["", "orders", "ünïcode-€", "x" * 40, "a/b.c_d-e"]


def _int(rng: random.Random, bits: int, signed: bool = True) -> int:
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return rng.choice([0, 1, -1 if signed else 2, lo, hi, rng.randint(lo, hi)])


def _leaf(rng: random.Random, kafka_type: str) -> Any:
    if kafka_type in BITS:
        return _int(rng, BITS[kafka_type])
    if kafka_type in ("uint16", "uint32"):
        return _int(rng, int(kafka_type[4:]), signed=False)
    if kafka_type == "error_code":
        return rng.choice(list(ErrorCode))
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=_int(rng, 31 if kafka_type == "timedelta_i32" else 40))
    if kafka_type == "datetime_i64":
        return EPOCH + datetime.timedelta(milliseconds=rng.randrange(0, 1 << 42))
    if kafka_type == "bool":
        return rng.random() < 0.5
    if kafka_type == "float64":
        return rng.choice([0.0, 1.5, -2.25e10, rng.uniform(-1e9, 1e9)])
    if kafka_type == "string":
        return rng.choice(TEXTS)
    if kafka_type == "bytes":
        return rng.randbytes(rng.randrange(0, 9))
    if kafka_type == "uuid":
        return None if rng.random() < 0.2 else uuid.UUID(int=rng.getrandbits(128))
    if kafka_type == "records":
        return Records(BATCH)
    raise AssertionError(kafka_type)


def _field(rng: random.Random, f: dataclasses.Field) -> Any:
    if "tag" in f.metadata and f.default is not dataclasses.MISSING and rng.random() < 0.3:
        return f.default  # a tagged field left at its default is not written
    inner, nullable = _optional(f.type)
    kt = f.metadata.get("kafka_type")
    if nullable and kt not in ("uuid", "datetime_i64") and rng.random() < 0.2:
        return None
    if get_origin(inner) is tuple:
        elem, _ = _optional(get_args(inner)[0])
        n = rng.randrange(3)
        return tuple(entity(rng, elem) if dataclasses.is_dataclass(elem) else _leaf(rng, kt) for _ in range(n))
    if dataclasses.is_dataclass(inner):
        return entity(rng, inner)
    return _leaf(rng, kt)


def entity(rng: random.Random, cls: type) -> Any:
    """An instance of kio class ``cls`` with generated values."""
    return cls(**{f.name: _field(rng, f) for f in dataclasses.fields(cls)})


def encode(value: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(value))(buf, value)
    return buf.getvalue()


# --- comparing kio's values with ours ------------------------------------------------------------

def expected(v: Any, kafka_type: str | None) -> Any:
    """kio's value as kafkadump reports it."""
    if kafka_type == "uuid":
        return ZERO_UUID if v is None else kafka_uuid(v.bytes)
    if kafka_type == "datetime_i64":
        return -1 if v is None else (v - EPOCH) // datetime.timedelta(milliseconds=1)
    if isinstance(v, datetime.timedelta):
        return v // datetime.timedelta(milliseconds=1)
    if isinstance(v, enum.Enum):
        return v.value
    if isinstance(v, bool) or v is None:
        return v
    for plain in (int, float, str, bytes):
        if isinstance(v, plain):
            return plain(v)
    return v


def compare(theirs: Any, ours: dict, fields: list, version: int, path: str, frame: bytes) -> int:
    """Every field of kio's entity ``theirs`` against our decoded dict; returns the values compared."""
    table = [f for f in fields if S.in_range(f[2], version)]
    kio_fields = dataclasses.fields(theirs)
    assert len(table) == len(kio_fields), (path, [f[0] for f in table], [f.name for f in kio_fields])
    n = 0
    for tf, kf in zip(table, kio_fields):
        key, value = camel(tf[0]), getattr(theirs, kf.name)
        fpath = f"{path}.{key}"
        if key not in ours:  # a tagged field kio left out: it holds the value a reader defaults to
            assert "tag" in kf.metadata and value in (kf.default, tagged_default(kf)), (fpath, "missing", value)
            continue
        got = ours[key]
        if tf[7] is not None:  # struct or array of structs
            if value is None:
                assert got is None, fpath
            elif isinstance(value, tuple):
                assert isinstance(got, list) and len(got) == len(value), fpath
                for i, (a, b) in enumerate(zip(value, got)):
                    n += compare(a, b, tf[7], version, f"{fpath}[{i}]", frame)
            else:
                n += compare(value, got, tf[7], version, fpath, frame)
            continue
        kt = kf.metadata.get("kafka_type")
        if isinstance(got, RecordsValue):
            assert value is not None and frame[got.position:got.position + got.size] == bytes(value), fpath
        elif isinstance(value, tuple):
            assert got == [expected(x, kt) for x in value], (fpath, got, value)
        else:
            assert got == expected(value, kt), (fpath, got, value)
        n += 1
    return n


def check(key: int, version: int, kind: str, value: Any) -> int:
    data = encode(value)
    name = S.api_names(key)[kind]
    findings: list = []
    ours, end = decode_message(name, version, data, findings=findings, fill_defaults=False)
    problems = [x for x in findings if x.severity.value != "info"]
    assert problems == [] and end == len(data), (name, version, problems, end, len(data), data.hex())
    return compare(value, ours, S.message(name)["fields"], version, name, data)


# --- the tests ------------------------------------------------------------------------------------

def test_both_sides_know_every_new_version():
    known = {(k, v, kind) for k, v, kind, _ in PAIRS}
    for k, v in [(0, 12), (0, 13), (1, 18), (2, 11), (3, 13), (8, 10), (9, 10), (22, 6), (27, 2), (28, 5),
                 (35, 5), (88, 0), (89, 0), (90, 0), (91, 0), (92, 0)]:
        assert (k, v, "request") in known and (k, v, "response") in known, (k, v)
    assert len(known) >= 600  # 302 (API, version) pairs, both directions


COUNT = {"pairs": 0, "values": 0}


@settings(max_examples=3, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=(1 << 64) - 1))
def test_kio_encodes_every_api_and_version_kafkadump_decodes_every_value(seed):
    """Each example: one message with generated values for every (API, version, direction)."""
    rng = random.Random(seed)
    pairs = values = 0
    for key, version, kind, cls in PAIRS:
        values += check(key, version, kind, entity(rng, cls))
        pairs += 1
    COUNT["pairs"], COUNT["values"] = pairs, COUNT["values"] + values
    assert pairs == len(PAIRS) and values > len(PAIRS)


# --- whole frames: Produce v13 and Fetch v18 -------------------------------------------------------

def _header(kind: str, key: int, version: int, corr: int) -> bytes:
    from kio.schema.request_header.v2.header import RequestHeader
    from kio.schema.response_header.v1.header import ResponseHeader
    from kio.static.primitive import i16, i32

    if kind == "request":
        return encode(RequestHeader(request_api_key=i16(key), request_api_version=i16(version),
                                    correlation_id=i32(corr), client_id="kio"))
    return encode(ResponseHeader(correlation_id=i32(corr)))


def _frames():
    from kio.schema.fetch.v18.response import FetchableTopicResponse, FetchResponse, PartitionData
    from kio.schema.produce.v13.request import PartitionProduceData, ProduceRequest, TopicProduceData
    from kio.static.primitive import i16, i32, i32Timedelta, i64

    topic = uuid.UUID("6e1a5b2c-0d3f-4a8e-9b7c-112233445566")
    produce = ProduceRequest(transactional_id="txn-1", acks=i16(-1),
                             timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
                             topic_data=(TopicProduceData(topic_id=topic, partition_data=(
                                 PartitionProduceData(index=i32(3), records=Records(BATCH)),)),))
    fetch = FetchResponse(throttle_time=i32Timedelta.parse(datetime.timedelta(0)), error_code=kio.schema.errors
                          .ErrorCode.none, session_id=i32(7), responses=(FetchableTopicResponse(
                              topic_id=topic, partitions=(PartitionData(
                                  partition_index=i32(3), error_code=kio.schema.errors.ErrorCode.none,
                                  high_watermark=i64(100), last_stable_offset=i64(100), log_start_offset=i64(0),
                                  aborted_transactions=(), preferred_read_replica=i32(-1),
                                  records=Records(BATCH)),)),), node_endpoints=())
    return topic, produce, fetch


def _frame(kind: str, key: int, version: int, body: bytes) -> bytes:
    payload = _header(kind, key, version, 42) + body
    return len(payload).to_bytes(4, "big") + payload


def test_produce_v13_and_fetch_v18_frames_from_kio():
    topic, produce, fetch = _frames()
    p = _frame("request", 0, 13, encode(produce))
    f = decode_request(p, 0, len(p))
    assert f.findings == [] and (f.api_name, f.api_version, f.correlation_id, f.client_id) == ("Produce", 13, 42, "kio")
    t = f.body["topicData"][0]
    assert t["topicId"] == kafka_uuid(topic.bytes) and "name" not in t
    assert t["partitionData"][0]["index"] == 3 and f.body["transactionalId"] == "txn-1" and f.body["timeoutMs"] == 30000
    (_, ctx, rv), = f.records_fields()
    assert ctx == {"topicId": kafka_uuid(topic.bytes), "partition": 3} and rv.record_count == first_batch()[1]["recordCount"]
    r = _frame("response", 1, 18, encode(fetch))
    g = decode_response(r, 0, len(r), 1, 18)
    assert g.findings == [] and g.correlation_id == 42 and g.body["sessionId"] == 7
    part = g.body["responses"][0]["partitions"][0]
    assert (part["partitionIndex"], part["highWatermark"], part["preferredReadReplica"]) == (3, 100, -1)
    assert g.body["responses"][0]["topicId"] == kafka_uuid(topic.bytes) and g.record_count() == rv.record_count


def test_a_version_beyond_the_tables_names_no_field():
    """The same bytes announced as Produce v14 / Fetch v19: the header is read (its layout is the
    same), the body is kept raw, and the finding says the tables stop at v13 / v18."""
    _, produce, fetch = _frames()
    body = encode(produce)
    p = _frame("request", 0, 14, body)
    f = decode_request(p, 0, len(p))
    assert [x.code for x in f.findings] == [Code.VERSION_UNKNOWN] and "stop at version 13" in f.findings[0].message
    assert (f.correlation_id, f.client_id) == (42, "kio") and f.body == {"_undecodedBody": body}
    assert list(f.records_fields()) == []
    fbody = encode(fetch)
    r = _frame("response", 1, 19, fbody)
    g = decode_response(r, 0, len(r), 1, 19)
    assert [x.code for x in g.findings] == [Code.VERSION_UNKNOWN] and "stop at version 18" in g.findings[0].message
    assert g.correlation_id == 42 and g.body == {"_undecodedBody": fbody}


def test_the_oracle_sees_a_wrong_layout():
    """The comparison can fail: a Produce v13 request read with the v12 layout (topic names where v13
    has topic ids), or a value changed after encoding, is caught."""
    _, produce, _ = _frames()
    with pytest.raises(AssertionError):
        check(0, 12, "request", produce)
    data = bytearray(encode(produce))
    data[8:12] = (29000).to_bytes(4, "big")  # TimeoutMs, after "txn-1" (compact: 6 bytes) and Acks
    ours, _ = decode_message("ProduceRequest", 13, bytes(data), findings=[])
    assert ours["timeoutMs"] == 29000 and ours["transactionalId"] == "txn-1"
    with pytest.raises(AssertionError):
        compare(produce, ours, S.message("ProduceRequest")["fields"], 13, "ProduceRequest", bytes(data))

