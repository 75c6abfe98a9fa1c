"""A record line's last fields, ``keyPayload`` and ``valuePayload``, as JSON text without the payload
options: the cheap part of framing detection (``objects.records.framing_object``), the common cases
(null, unframed bytes) without a call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafkadump.decoders.payloads.header_names import SCHEMA_ID_HEADERS
from kafkadump.objects.records import PLAIN_FRAMING, framing_object
from kafkadump.render.jsontext import dumps

if TYPE_CHECKING:
    from kafkadump.decoders.batches.model import Record

PLAIN = dumps(PLAIN_FRAMING)  # keyPayload/valuePayload of unframed bytes
PAYLOADS = ',"keyPayload":'  # where the payload fields start: the last fields of a record line
PLAIN_END = ',"valuePayload":' + PLAIN + "}\n"  # a line's end after keyPayload, for an unframed value
NULL_END = ',"valuePayload":null}\n'
ONE = b"\x01"  # bytes >= ONE: not empty, the first byte not the magic byte 0 (one comparison)
# in the headers' JSON of a record whose header names a schema (the JSON of a header's value never
# holds it: a quote in it is escaped): a cheap test before names_schema's
SCHEMA_HEADER_HINT = '_schema_id","value":'


def framing_json(data: bytes | None, headers: Sequence[tuple[str, bytes | None]], which: str,
                 control: object = None) -> str:
    """``framing_object`` as JSON text (the common cases without a call: null, unframed bytes)."""
    if data is None or control is not None:
        return "null"
    if (not data or data[0]) and not headers:
        return PLAIN
    return dumps(framing_object(data, headers, which, control))


def names_schema(headers: list[tuple[str, bytes | None]]) -> bool:
    """Whether a header names the key's or value's schema (else the headers change no framing)."""
    for k, _ in headers:
        if k in SCHEMA_ID_HEADERS:
            return True
    return False


def framing_json_end(v: bytes) -> str:
    """A line's end after keyPayload, for a value with magic byte 0 and no header naming a schema."""
    return ',"valuePayload":' + framing_json(v, (), "value") + "}\n"


def payload_fields(r: Record) -> str:
    """``,"keyPayload":...,"valuePayload":...`` of a record without the payload options."""
    hs = r.headers if r.headers and names_schema(r.headers) else ()
    return (PAYLOADS + framing_json(r.key, hs, "key", r.control)
            + ',"valuePayload":' + framing_json(r.value, hs, "value", r.control))


__all__ = ["PLAIN", "PAYLOADS", "PLAIN_END", "NULL_END", "ONE", "SCHEMA_HEADER_HINT", "framing_json",
           "names_schema", "framing_json_end", "payload_fields"]
