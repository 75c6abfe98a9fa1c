"""What a key or value is framed as: Confluent Schema Registry wire format, a schema id carried
in a record header, or plain JSON / UTF-8 text / other bytes.

Confluent's wire format: magic byte 0, the schema id as a 4-byte big-endian integer, then (for
Protobuf only) the message indexes (a zigzag varint count, then that many zigzag varint
indexes; a count of 0 is the shorthand for ``[0]``), then the Avro / Protobuf / JSON payload.
The newer framing keeps the payload bare and carries the id in a header, ``__key_schema_id`` or
``__value_schema_id``: version byte 1 and a 16-byte GUID (two big-endian longs, a UUID), or
magic 0 and a 4-byte id; for Protobuf the message indexes follow in the header.

Detection is a guess from the bytes alone: a value starting with byte 0 may be anything else (a
big-endian integer key starts with 0 too).  ``certain`` says whether the framing is plausible:
false for a magic-0 value too short to hold an id, an id that is not positive, or an id that a
schema store present does not know.  Message indexes are only parsed when the schema is known to
be Protobuf (``schema_type``): elsewhere the bytes after the id are the payload.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable

from kafkadump.decoders.batches.work import WORK
from kafkadump.decoders.payloads.decode import (
    parse_message_indexes as message_indexes,  # one reader of the indexes: the decoder's
)
from kafkadump.decoders.payloads.header_names import KEY_SCHEMA_ID_HEADER, VALUE_SCHEMA_ID_HEADER
from kafkadump.decoders.payloads.model import FRAMING_KINDS, Framing

MAGIC_ID = 0      # magic 0: a 4-byte schema id follows
MAGIC_GUID = 1    # header version 1: a 16-byte GUID follows
ID_END = 5        # magic + id
GUID_END = 17     # version + GUID
_CONTROL_BYTES = re.compile(b"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # text: no control but tab, LF, CR
# a JSON string (to its closing quote, or to the end when it has none) or a bracket: nesting is counted
# outside strings; the string's alternatives never backtrack (each byte has one way to match)
_JSON_TOKEN = re.compile(rb'"(?:[^"\\]+|\\.)*"?|[\[\]{}]', re.S)
MAX_JSON_DEPTH = 64  # plain JSON nested deeper is not parsed (PayloadLimits' depth; the parser recurses)
KINDS = FRAMING_KINDS

# the type of the schema an id or GUID names ("AVRO", "PROTOBUF", "JSON"), None when unknown
SchemaTypeOf = Callable[[int | None, str | None], str | None]


def _schema_header(headers: Iterable[tuple[str, bytes | None]], which: str) -> tuple[str, bytes | None] | None:
    name = KEY_SCHEMA_ID_HEADER if which == "key" else VALUE_SCHEMA_ID_HEADER
    found = None
    for k, v in headers:
        if k == name:
            found = (k, v)  # the last one wins, as lastHeader does
    return found


def _with_indexes(f: Framing, source: bytes, pos: int, schema_type: SchemaTypeOf | None) -> Framing:
    """``f`` with its Protobuf message indexes read from ``source`` at ``pos`` when the schema is
    Protobuf; ``certain`` false when the store does not know the schema or the indexes are bad."""
    if schema_type is None:
        return f
    kind = schema_type(f.schema_id, f.guid)
    if kind is None:
        return _replace(f, certain=False)
    if kind != "PROTOBUF":
        return f
    got = message_indexes(source, pos)
    if got is None:
        return _replace(f, certain=False)
    indexes, end = got
    return _replace(f, message_indexes=indexes,
                    payload_start=end if f.kind == "confluent" else f.payload_start)


def _replace(f: Framing, **changes: object) -> Framing:
    return f.replace(**changes)


def _header_framing(hv: bytes | None, schema_type: SchemaTypeOf | None) -> Framing:
    if hv and hv[0] == MAGIC_GUID and len(hv) >= GUID_END:
        f = Framing("header-id", guid=str(uuid.UUID(bytes=bytes(hv[1:GUID_END]))))
        return _with_indexes(f, hv, GUID_END, schema_type)
    if hv and hv[0] == MAGIC_ID and len(hv) >= ID_END:
        sid = int.from_bytes(hv[1:ID_END], "big", signed=True)
        f = Framing("header-id", schema_id=sid, certain=sid > 0)
        return _with_indexes(f, hv, ID_END, schema_type)
    return Framing("header-id", certain=False)


# the framings of unframed bytes: one object each (cheap to hand out and to cache on)
EMPTY, JSON, UTF8, BINARY = Framing("empty"), Framing("json"), Framing("utf8"), Framing("binary")


def json_too_deep(data: bytes | memoryview, limit: int = MAX_JSON_DEPTH) -> int | None:
    """The offset of the first bracket of ``data`` that nests deeper than ``limit`` (outside JSON strings),
    or None: what keeps a recursive parser off JSON nested past its stack.  Linear: one regex pass."""
    data = bytes(data)
    if data.count(b"[") + data.count(b"{") <= limit:
        return None
    WORK.payload_bytes += len(data)
    depth = 0
    for m in _JSON_TOKEN.finditer(data):
        c = data[m.start()]
        if c == 0x5B or c == 0x7B:  # [ {
            depth += 1
            if depth > limit:
                return m.start()
        elif c == 0x5D or c == 0x7D:  # ] }
            depth = max(0, depth - 1)
    return None


def _plain(data: bytes) -> Framing:
    if not data:
        return EMPTY
    first = data.lstrip()[:1]
    if first in (b"{", b"[") and json_too_deep(data) is None:
        import json

        try:
            json.loads(data)
            return JSON
        except (ValueError, RecursionError):
            pass
    if data.isascii():
        return BINARY if _CONTROL_BYTES.search(data) else UTF8
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return BINARY
    return BINARY if _CONTROLS.search(text) else UTF8


def schema_framing(data: bytes | None, headers: Iterable[tuple[str, bytes | None]] = (),
                   which: str = "value") -> Framing | None:
    """The framing that names a schema, as :func:`detect_framing` finds it without a store (a
    header's id or GUID, else Confluent's magic 0 and id in the bytes), or None for bytes that
    are not framed: the cheap part of detection, done for every record."""
    hdr = _schema_header(headers, which) if headers else None
    if hdr is not None:
        return _header_framing(hdr[1], None)
    if not data or data[0] != MAGIC_ID:
        return None
    if len(data) < ID_END:
        return Framing("confluent", payload_start=len(data), certain=False)
    sid = int.from_bytes(data[1:ID_END], "big", signed=True)
    if sid < 0:   # a registry never gives a negative id: bytes that only start with a zero
        return None
    return Framing("confluent", schema_id=sid, payload_start=ID_END, certain=sid > 0)


def detect_framing(data: bytes | None, headers: Iterable[tuple[str, bytes | None]] = (), which: str = "value",
                   schema_type: SchemaTypeOf | None = None) -> Framing:
    """The framing of a record's key or value (``which``: "key" or "value"), ``headers`` its
    record's headers.  ``schema_type``: the schema store's answer for an id or GUID (its type,
    or None when unknown); without a store, ids are taken as plausible when positive."""
    hdr = _schema_header(headers, which) if headers else None
    if hdr is not None:
        return _header_framing(hdr[1], schema_type)
    if not data:
        return EMPTY
    if data[0] == MAGIC_ID:
        if len(data) < ID_END:
            return Framing("confluent", payload_start=len(data), certain=False)
        sid = int.from_bytes(data[1:ID_END], "big", signed=True)
        if sid < 0:   # a registry never gives a negative id: bytes that only start with a zero
            return _plain(data)
        f = Framing("confluent", schema_id=sid, payload_start=ID_END, certain=sid > 0)
        return _with_indexes(f, data, ID_END, schema_type) if f.certain else f
    return _plain(data)


__all__ = ["Framing", "detect_framing", "json_too_deep", "MAX_JSON_DEPTH", "schema_framing", "message_indexes", "KEY_SCHEMA_ID_HEADER",
           "VALUE_SCHEMA_ID_HEADER", "KINDS", "SchemaTypeOf"]
