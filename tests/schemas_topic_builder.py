"""A ``_schemas`` partition written the way Schema Registry writes it (tests only).

Keys and values are the registry's JSON (``SchemaRegistryKey`` / ``...Value``), the batches are
encoded by kafka-python's ``DefaultRecordBatchBuilder`` (independent of kafkadump).  ``ENTRIES``
is one registry history with every kind of record; ``EXPECTED_*`` say what a reader must find.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder

T0 = 1_700_000_000_000

ADDR_AVSC = {"type": "record", "name": "Addr", "namespace": "shop", "fields": [{"name": "city", "type": "string"}]}
USER_AVSC = {"type": "record", "name": "User", "namespace": "shop",
             "fields": [{"name": "id", "type": "long"}, {"name": "home", "type": "shop.Addr"}]}
ORDER_V1 = {"type": "record", "name": "Order", "fields": [{"name": "n", "type": "int"}]}
ORDER_V2 = {"type": "record", "name": "Order", "fields": [{"name": "n", "type": "int"},
                                                          {"name": "note", "type": ["null", "string"], "default": None}]}
PROTO = 'syntax = "proto3";\npackage shop;\nmessage Ping { int32 n = 1; message Inner { string s = 1; } }\n'
JSON_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}}
BAD_KEY = b"{not json at all"


def _key(keytype: str, **kw) -> bytes:
    return json.dumps({"keytype": keytype, **kw, "magic": 1 if keytype == "SCHEMA" else 0}).encode()


def _schema_value(subject: str, version: int, sid: int, text: str, schema_type: str | None = None,
                  refs: list | None = None, deleted: bool | None = None) -> bytes:
    v: dict = {"subject": subject, "version": version, "id": sid, "schema": text}
    if schema_type:
        v["schemaType"] = schema_type
    if refs:
        v["references"] = refs
    if deleted is not None:
        v["deleted"] = deleted
    return json.dumps(v).encode()


# (key, value) in offset order
ENTRIES: list[tuple[bytes, bytes | None]] = [
    (_key("NOOP"), None),
    (_key("CONFIG", subject=None), json.dumps({"compatibilityLevel": "BACKWARD"}).encode()),
    (_key("SCHEMA", subject="orders-value", version=1), _schema_value("orders-value", 1, 1, json.dumps(ORDER_V1))),
    (_key("SCHEMA", subject="orders-value", version=2), _schema_value("orders-value", 2, 2, json.dumps(ORDER_V2))),
    (_key("SCHEMA", subject="addr", version=1), _schema_value("addr", 1, 3, json.dumps(ADDR_AVSC))),
    (_key("SCHEMA", subject="users-value", version=1),
     _schema_value("users-value", 1, 4, json.dumps(USER_AVSC), refs=[{"name": "shop.Addr", "subject": "addr",
                                                                      "version": 1}])),
    (_key("SCHEMA", subject="pings-value", version=1), _schema_value("pings-value", 1, 5, PROTO, "PROTOBUF")),
    (_key("SCHEMA", subject="json-value", version=1),
     _schema_value("json-value", 1, 6, json.dumps(JSON_SCHEMA), "JSON")),
    (_key("CONFIG", subject="orders-value"), json.dumps({"compatibilityLevel": "FULL"}).encode()),
    (_key("CONFIG", subject="json-value"), json.dumps({"compatibilityLevel": "NONE"}).encode()),
    (_key("CONFIG", subject="json-value"), None),
    (_key("MODE", subject=None), json.dumps({"mode": "READWRITE"}).encode()),
    (_key("DELETE_SUBJECT", subject="orders-value"), json.dumps({"subject": "orders-value", "version": 1}).encode()),
    (_key("SCHEMA", subject="old-value", version=1), _schema_value("old-value", 1, 7, '"string"')),
    (_key("SCHEMA", subject="old-value", version=1), _schema_value("old-value", 1, 7, '"string"', deleted=True)),
    (_key("SCHEMA", subject="old-value", version=1), None),
    (_key("SCHEMA", subject="pings-value", version=2),
     _schema_value("pings-value", 2, 5, PROTO, "PROTOBUF", deleted=True)),
    (BAD_KEY, b"{}"),
    (_key("NOOP"), None),
]

# (subject, version) -> (id, schemaType, deleted)
EXPECTED_REGISTRATIONS = {
    ("addr", 1): (3, "AVRO", None),
    ("json-value", 1): (6, "JSON", None),
    ("old-value", 1): (7, "AVRO", "hard"),
    ("orders-value", 1): (1, "AVRO", "soft"),
    ("orders-value", 2): (2, "AVRO", None),
    ("pings-value", 1): (5, "PROTOBUF", None),
    ("pings-value", 2): (5, "PROTOBUF", "soft"),
    ("users-value", 1): (4, "AVRO", None),
}
# (setting, subject, value, offset)
EXPECTED_SETTINGS = [("compatibilityLevel", None, "BACKWARD", 1), ("compatibilityLevel", "json-value", None, 10),
                     ("compatibilityLevel", "orders-value", "FULL", 8), ("mode", None, "READWRITE", 11)]
BAD_OFFSET = 17


def segment_bytes(entries: list[tuple[bytes, bytes | None]] = ENTRIES, per_batch: int = 4, codec: int = 0) -> bytes:
    """The entries as v2 batches of ``per_batch`` records, offsets from 0 (``codec``: 1 gzip, ...)."""
    out = bytearray()
    for start in range(0, len(entries), per_batch):
        bld = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 22)
        for i, (k, v) in enumerate(entries[start:start + per_batch]):
            assert bld.append(i, timestamp=T0 + start + i, key=k, value=v, headers=[]) is not None
        buf = bytearray(bld.build())
        struct.pack_into(">q", buf, 0, start)
        out += buf
    return bytes(out)


def write_schemas_partition(root: Path, entries: list[tuple[bytes, bytes | None]] = ENTRIES) -> Path:
    """``root/_schemas-0/00000000000000000000.log`` holding ``entries``; returns the partition directory."""
    d = root / "_schemas-0"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(segment_bytes(entries))
    return d
