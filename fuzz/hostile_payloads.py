"""Scaled hostile payloads, schemas and ``_schemas`` topics (issue 26, defect classes 1-3).

Each generator writes a log dir in a fraction of a second: a data partition ``t-0`` and, when the
attack needs one, the registry's ``_schemas-0`` beside it (so ``records --detect`` on the data
segment finds it).  Doubling the scale doubles the input.  Self-contained like ``hostile.py``: no
kafkadump imports, so a generator is an independent description of the attack; the batches are
written from Kafka's v2 format with their CRC-32C right.

* class 1, a crash that loses every record: :func:`deep_json` (a value of ``depth`` ``[``
  between two good records);
* class 2, time faster than the input: :func:`long_decimal` (an Avro decimal of ``n`` unscaled
  bytes), :func:`many_protobuf` (``n`` distinct Protobuf schemas, one record each);
* class 3, memory that grows with items: :func:`huge_scale` (a 7-byte decimal of scale
  ``scale``), :func:`big_enum` (an enum of ``n`` symbols, zstd), :func:`many_versions` (``n``
  tiny versions).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from crc32c import crc32c

_V2_HEAD = struct.Struct(">qiibIhiqqqhii")
SEGMENT = "00000000000000000000.log"
ZSTD = 4


def varint(v: int) -> bytes:
    """Kafka's zig-zag varint (the same as Avro's long)."""
    z = (v << 1) ^ (v >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _field(b: bytes | None) -> bytes:
    return varint(-1) if b is None else varint(len(b)) + b


def batch(base_offset: int, records: list[tuple[bytes | None, bytes | None]], codec: int = 0) -> bytes:
    """One v2 batch of ``(key, value)`` records, CRC right; ``codec`` 4 compresses it with zstd."""
    parts = []
    for i, (k, v) in enumerate(records):
        body = b"\x00" + varint(0) + varint(i) + _field(k) + _field(v) + varint(0)
        parts.append(varint(len(body)) + body)
    recs = b"".join(parts)
    if codec == ZSTD:
        import zstandard

        recs = zstandard.ZstdCompressor(level=3).compress(recs)
    n = len(records)
    head = _V2_HEAD.pack(base_offset, 49 + len(recs), 0, 2, 0, codec, n - 1, 0, 0, -1, -1, -1, n)
    raw = bytearray(head + recs)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def confluent(schema_id: int, payload: bytes, indexes: bytes = b"") -> bytes:
    """Schema Registry's wire format: magic 0, the id (big-endian), Protobuf indexes, the payload."""
    return b"\x00" + struct.pack(">i", schema_id) + indexes + payload


def schema_record(subject: str, version: int, sid: int, text: str, schema_type: str | None = None
                  ) -> tuple[bytes, bytes]:
    """A ``_schemas`` SCHEMA record as the registry writes it: (key, value)."""
    key = json.dumps({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}).encode()
    value: dict = {"subject": subject, "version": version, "id": sid, "schema": text}
    if schema_type:
        value["schemaType"] = schema_type
    return key, json.dumps(value).encode()


def write_logdir(root: Path, values: list[bytes | None], schemas: list[tuple[bytes, bytes]] | None = None,
                 per_batch: int = 1000, codec: int = 0) -> Path:
    """``root``/t-0 holding ``values`` (one batch) and, when given, ``root``/_schemas-0 holding the
    ``schemas`` records (``per_batch`` to a batch); the data segment's path."""
    data = root / "t-0"
    data.mkdir(parents=True, exist_ok=True)
    (data / SEGMENT).write_bytes(batch(0, [(None, v) for v in values]))
    if schemas is not None:
        part = root / "_schemas-0"
        part.mkdir(exist_ok=True)
        with open(part / SEGMENT, "wb") as f:
            for start in range(0, len(schemas), per_batch):
                f.write(batch(start, schemas[start:start + per_batch], codec))
    return data / SEGMENT


# --- class 1 ----------------------------------------------------------------------------------------

GOOD = (b'{"ok":1}', b"plain text")


def deep_json(root: Path, depth: int) -> Path:
    """A value of ``depth`` ``[`` (JSON nested past any parser's stack) between two good records."""
    return write_logdir(root, [GOOD[0], b"[" * depth, GOOD[1]])


def deep_framed_json(root: Path, depth: int) -> Path:
    """A JSON Schema framed value nested ``depth`` deep (``[`` ... ``]``) between two good records."""
    schemas = [schema_record("j-value", 1, 1, json.dumps({"type": "array"}), "JSON")]
    deep = b"[" * depth + b"]" * depth
    return write_logdir(root, [confluent(1, b"[1]"), confluent(1, deep), confluent(1, b"[2]")], schemas)


# --- class 2 ----------------------------------------------------------------------------------------

def decimal_schema(precision: int, scale: int) -> str:
    return json.dumps({"type": "record", "name": "Price", "fields": [
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": precision,
                                    "scale": scale}}]})


def long_decimal(root: Path, n: int) -> Path:
    """An Avro decimal whose unscaled value is ``n`` bytes (0x7f...), between two good decimals."""
    schemas = [schema_record("price-value", 1, 1, decimal_schema(max(10, 3 * n), 2))]
    good = confluent(1, varint(2) + b"\x04\xd2")  # 12.34
    return write_logdir(root, [good, confluent(1, varint(n) + b"\x7f" * n), good], schemas)


def proto_text(i: int) -> str:
    """A small distinct ``.proto`` (package and message named by ``i``)."""
    return (f'syntax = "proto3";\npackage p{i};\nmessage M{i} {{ int32 n = 1; string s = 2; '
            f'repeated int64 xs = 3; message Inner {{ bool b = 1; }} Inner inner = 4; }}\n')


def many_protobuf(root: Path, n: int) -> Path:
    """``n`` distinct Protobuf schemas (ids 1..n) and one record framed with each."""
    schemas = [schema_record(f"p{i}-value", 1, i, proto_text(i), "PROTOBUF") for i in range(1, n + 1)]
    values = [confluent(i, bytes([0x08, i % 100]) + b"\x12\x02hi", b"\x00") for i in range(1, n + 1)]
    return write_logdir(root, values, schemas)


# --- class 3 ----------------------------------------------------------------------------------------

def huge_scale(root: Path, scale: int, count: int = 1) -> Path:
    """``count`` 7-byte decimals of scale ``scale`` (written in plain notation: ``scale`` digits each)."""
    schemas = [schema_record("price-value", 1, 1, decimal_schema(scale + 20, scale))]
    value = confluent(1, varint(7) + b"\x01\x02\x03\x04\x05\x06\x07")
    return write_logdir(root, [value] * count, schemas)


def enum_schema(n: int) -> str:
    symbols = ",".join(f'"S{i}"' for i in range(n))
    return ('{"type":"record","name":"E","fields":[{"name":"e","type":{"type":"enum","name":"Big",'
            f'"symbols":[{symbols}]}}}}]}}')


def big_enum(root: Path, n: int) -> Path:
    """One Avro schema (id 1) with an enum of ``n`` symbols in a zstd ``_schemas`` batch, and a
    record that uses it (its last symbol) between two unframed ones."""
    schemas = [schema_record("e-value", 1, 1, enum_schema(n))]
    return write_logdir(root, [GOOD[1], confluent(1, varint(n - 1)), GOOD[1]], schemas, codec=ZSTD)


def many_versions(root: Path, n: int, per_batch: int = 5000) -> Path:
    """``n`` tiny versions of one subject (ids 1..n) in zstd batches, and one record of id 1."""
    schemas = [schema_record("s-value", v, v, '"string"') for v in range(1, n + 1)]
    return write_logdir(root, [confluent(1, varint(2) + b"hi")], schemas, per_batch=per_batch, codec=ZSTD)


__all__ = ["varint", "batch", "confluent", "schema_record", "write_logdir", "deep_json", "deep_framed_json",
           "long_decimal", "many_protobuf", "huge_scale", "big_enum", "many_versions", "decimal_schema",
           "proto_text", "enum_schema", "GOOD"]
