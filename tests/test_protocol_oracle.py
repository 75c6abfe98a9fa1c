"""kafka-python 3 as an independent encoder: every API and version it can write, read back by ours.

kafka-python 3 carries its own copy of Kafka's schemas and its own
schema-driven codec.  For every request and response class it has and
every version both sides know, a message is filled with generated values
(two elements per array, nulls where nullable, tagged fields set, record
batches from the shipped fixtures), encoded by kafka-python, decoded by
kafkadump, and every value compared.
"""

from __future__ import annotations

import importlib
import random
import re
import uuid

import pytest
from test_protocol import first_batch

from kafkadump.objects.generated_fields import finding_fields
from kafkadump.decoders.protocol import schema as S
from kafkadump.decoders.protocol.decoder import RecordsValue
from kafkadump.decoders.protocol.decoder import decode_message

kafka = pytest.importorskip("kafka")


def _classes():
    out = {}
    for sub in ("admin", "consumer", "metadata", "producer"):
        try:
            m = importlib.import_module("kafka.protocol." + sub)
        except ImportError:
            continue
        for n in dir(m):
            c = getattr(m, n)
            if n.endswith(("Request", "Response")) and hasattr(c, "max_version") and hasattr(c, "_struct") \
                    and S.has(n):
                out[n] = c
    return out


CLASSES = _classes()
CASES = [(n, v) for n, c in sorted(CLASSES.items())
         for v in range(0, min(c.max_version, S.valid_versions(n)[1]) + 1)]


def _simple(t, rng, batch):
    if t in ("int8", "int16", "int32", "int64"):
        bits = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}[t]
        return rng.choice([0, 1, -1, rng.randrange(-(1 << bits), 1 << bits)])
    if t == "uint16":
        return rng.randrange(1 << 16)
    if t == "uint32":
        return rng.randrange(1 << 32)
    if t == "float64":
        return rng.choice([0.0, 1.5, -2.25e10])
    if t == "bool":
        return rng.random() < 0.5
    if t == "string":
        return rng.choice(["", "orders", "ünïcode-€", "x" * 40])
    if t == "bytes":
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 9)))
    if t == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    if t == "records":
        return batch
    raise AssertionError(t)


def _values(struct, version, rng, batch, owner):
    """Values for ``struct``'s fields; ``owner`` is the data class holding the nested data classes."""
    vals = {}
    for f in struct._fields:
        if not f.for_version_q(version):
            continue
        nullable = f.nullable_for_version_q(version)
        if nullable and rng.random() < 0.2:
            vals[f.name] = None
            continue
        if f.type_str in ("bitfield", "[]bitfield"):
            continue  # kafka-python's own type for authorized-operations sets: left at its default
        if f.is_struct_array() or f.is_struct():
            dc = getattr(owner, f.type_str, None) or f.data_class
            items = [dc(**_values(dc._struct, version, rng, batch, dc)) for _ in range(2 if f.is_struct_array() else 1)]
            vals[f.name] = items if f.is_struct_array() else items[0]
        elif f.is_array():
            inner = f.type_str[2:]
            vals[f.name] = [_simple(inner, rng, batch) for _ in range(2)]
        else:
            vals[f.name] = _simple(f.type_str, rng, batch)
    return vals


def _snake(s):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", s).lower()


RENAMED = {"topic_authorized_operations", "cluster_authorized_operations", "authorized_operations"}
# fields Kafka renamed after the JSON schemas the tables come from (same layout): ours -> kafka-python's
LATER_NAMES = {"client_metrics_resources": "config_resources", "name": "resource_name"}


def _cmp(ours, theirs, path, data):
    if isinstance(ours, RecordsValue):
        assert data[ours.position:ours.position + ours.size] == theirs, path
        return
    if isinstance(ours, dict):
        for k, v in ours.items():
            sk = _snake(k)
            if k.startswith("_") or sk in RENAMED:
                continue
            if isinstance(theirs, dict) and sk not in theirs:
                sk = LATER_NAMES.get(sk, sk)
            _cmp(v, theirs[sk] if isinstance(theirs, dict) else getattr(theirs, sk), f"{path}.{sk}", data)
        return
    if isinstance(ours, list):
        assert len(ours) == len(theirs), path
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _cmp(a, b, f"{path}[{i}]", data)
        return
    if isinstance(theirs, uuid.UUID):
        import base64

        theirs = base64.urlsafe_b64encode(theirs.bytes).decode().rstrip("=")
    assert ours == theirs, (path, ours, theirs)


@pytest.mark.parametrize("name,version", CASES)
def test_kafka_python_encoded_messages_decode_identically(name, version):
    cls = CLASSES[name]
    batch, _ = first_batch()
    rng = random.Random(f"{name}/{version}")
    obj = cls[version](**_values(cls._struct, version, rng, batch, cls))
    try:
        data = bytes(obj.encode(version=version))
    except Exception as e:  # noqa: BLE001 - values kafka-python's own API layer refuses
        pytest.skip(f"kafka-python cannot encode generated values: {e!r}")
    findings = []
    value, end = decode_message(name, version, data, 0, len(data), findings=findings)
    assert [finding_fields(f) for f in findings] == []
    assert end == len(data)
    theirs = obj.to_dict(json=False)  # the values kafka-python was given and encoded
    _cmp(value, theirs, name, data)
    for _, rv in _records(value):
        assert rv.record_count == 5 and [b.crc_valid for b in rv.batches] == [True]


def _records(v, path=""):
    if isinstance(v, RecordsValue):
        yield path, v
    elif isinstance(v, dict):
        for k, x in v.items():
            yield from _records(x, f"{path}.{k}")
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _records(x, f"{path}[{i}]")


def test_the_oracle_covers_the_main_apis():
    names = {n for n, _ in CASES}
    assert {"ProduceRequest", "FetchResponse", "MetadataResponse", "ApiVersionsResponse", "JoinGroupRequest",
            "OffsetCommitRequest", "ListOffsetsResponse"} <= names
    assert len(CASES) > 400
