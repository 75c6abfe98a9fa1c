"""Segment-level objects of the JSON contract: batch, gap, finding, record.

Each object is built here and only here; ``--json`` writes them, the table,
dump-log and Spark-row renderers read the same values.  Field names are the
spec's; the contract is documented in man/kafkadump.1 and fields are only
ever added.  Byte fields (keys, values, header values) are encoded by the
``encode`` function the caller chose (``--encoding``: auto, base64, hex, text).

``auto``, the default, is for jq: bytes that are text (valid UTF-8, no control
character but tab, newline and carriage return) are that text as a JSON
string, so ``select(.key == "user-1")`` finds the key ``user-1``; any other
bytes are ``{"base64": "..."}``.  A byte field is therefore always null, a
string (exactly its UTF-8 text: ``@base64`` of it gives the bytes back) or an
object holding the bytes: lossless, and a string never stands for bytes.
Under ``--redact`` (and for metadata records holding secrets) the object is
``{"redacted": "sha256:<hex>" or "secret", "length": n}`` instead: it holds
no bytes, and says so.
"""

from __future__ import annotations

import binascii
import math
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, overload

from kafkadump.base.findings import Finding
from kafkadump.decoders.batches.model import Batch, Gap, Record
from kafkadump.objects.generated_fields import batch_fields, finding_fields, gap_fields, record_fields
from kafkadump.reports.places import ConnectionSeen, Place, Sighting, place_of_file

if TYPE_CHECKING:
    from kafkadump.decoders.batches.model import Span
    from kafkadump.decoders.payloads.model import Framing
    from kafkadump.decoders.payloads.view import PayloadSide, RecordView

_b64 = binascii.b2a_base64


# a byte field's JSON value: text (a string) or, under ``auto``, ``{"base64": ...}`` for bytes that are not text
Encoded = str | dict[str, str]


class Encoder(Protocol):
    """Bytes as a JSON value per ``--encoding``; null stays null."""

    @overload
    def __call__(self, b: bytes, /) -> Encoded: ...
    @overload
    def __call__(self, b: None, /) -> None: ...


@overload
def encode_base64(b: bytes) -> str: ...
@overload
def encode_base64(b: None) -> None: ...
def encode_base64(b: bytes | None) -> str | None:
    return None if b is None else _b64(b, newline=False).decode("ascii")


@overload
def encode_hex(b: bytes) -> str: ...
@overload
def encode_hex(b: None) -> None: ...
def encode_hex(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


@overload
def encode_text(b: bytes) -> str: ...
@overload
def encode_text(b: None) -> None: ...
def encode_text(b: bytes | None) -> str | None:
    return None if b is None else b.decode("utf-8", "replace")


# what keeps bytes from being shown as text: C0 controls but tab, LF and CR, and DEL (found in the
# bytes: in UTF-8 they are only ever themselves); then, in the text decoded with surrogateescape
# (which never raises), the C1 controls and the escaped bytes that are not UTF-8 (U+DC80..U+DCFF:
# valid UTF-8 never decodes to a surrogate)
CONTROL_BYTES = re.compile(b"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
C1_OR_INVALID = re.compile("[\x80-\x9f\udc80-\udcff]")


def as_text(b: bytes) -> str | None:
    """``b`` as text when it is valid UTF-8 without control characters (tab, LF, CR allowed), else None."""
    if CONTROL_BYTES.search(b):
        return None
    if b.isascii():
        return b.decode("ascii")
    s = b.decode("utf-8", "surrogateescape")
    return None if C1_OR_INVALID.search(s) else s


@overload
def encode_auto(b: bytes) -> Encoded: ...
@overload
def encode_auto(b: None) -> None: ...
def encode_auto(b: bytes | None) -> Encoded | None:
    """The default: text as a string, other bytes as ``{"base64": ...}`` (lossless either way)."""
    if b is None:
        return None
    s = as_text(b)
    return {"base64": _b64(b, newline=False).decode("ascii")} if s is None else s


ENCODERS: dict[str, Encoder] = {"auto": encode_auto, "base64": encode_base64, "hex": encode_hex,
                                "text": encode_text}
DEFAULT_ENCODING = "auto"


def findings_list(findings: Iterable[Finding]) -> list[dict[str, Any]]:
    """Findings as objects: ``code``, ``severity``, ``offset``, ``message`` and, when known,
    ``length`` and ``decompressedOffset``."""
    return [finding_fields(f) for f in findings]


def batch_object(b: Batch, place: Place | None = None) -> dict[str, Any]:
    """A batch (or top-level legacy message) as a JSON-ready dict; ``topic`` and ``partition`` are
    ``place``'s, by default the file's partition directory's (null when it is not a partition's).
    Its fields are the field registry's (objects/fields.py)."""
    return batch_fields(b, place_of_file(b.file) if place is None else place)


def gap_object(g: Gap, place: Place | None = None) -> dict[str, Any]:
    """Bytes that are not a batch, with the findings that say why (``topic``, ``partition`` as in
    :func:`batch_object`)."""
    return gap_fields(g, place_of_file(g.file) if place is None else place)


def item_object(item: Batch | Gap) -> dict[str, Any]:
    """A batch or a gap, as the walkers yield them."""
    return gap_object(item) if isinstance(item, Gap) else batch_object(item)


def findings_object(item: Batch) -> dict[str, Any]:
    """The findings of a batch, as a line of their own in the record stream."""
    return {"type": "findings", "file": item.file, "position": item.position,
            "findings": findings_list(item.findings)}


def connection_object(c: ConnectionSeen | None) -> dict[str, Any] | None:
    """A capture's connection, as a frame, a stream note and a sighted record carry it."""
    if c is None:
        return None
    return {"id": c.id, "client": c.client, "server": c.server, "detected": c.detected}


def sighting_object(s: Sighting) -> dict[str, Any]:
    """The fields a capture adds to a record object."""
    return {"frame": s.frame, "topicId": s.topic_id, "api": s.api, "direction": s.direction,
            "connection": connection_object(s.connection), "time": s.time, "timeText": s.time_text,
            "offsetRelative": s.offset_relative}


def record_object(r: Record, b: Batch, encode: Encoder, place: Place | None = None,
                  view: RecordView | None = None) -> dict[str, Any]:
    """A record (of batch ``b``) as its object: the one definition of a record's fields.

    ``place``: where the records belong; by default from the name of the
    directory of the batch's file.  ``render.jsonl.RecordLines`` writes the
    same object without building the dict (the hot path); a test holds the
    two equal.  ``view``: what the payload options (``--detect``, ``--schemas``,
    ``--redact``) made of the record (:func:`with_view`); records with a view
    are written from this object.
    """
    where = place_of_file(b.file) if place is None else place
    d = record_fields(r, b, encode, where)  # the field registry's fields (objects/fields.py)
    if where.sighting is not None:
        d.update(sighting_object(where.sighting))
    d["keyPayload"] = framing_object(r.key, r.headers, "key", r.control)
    d["valuePayload"] = framing_object(r.value, r.headers, "value", r.control)
    return d if view is None else with_view(d, r, view)


# ``keyPayload`` / ``valuePayload`` of bytes that name no schema (the common case: one object)
# (compact: most keys and values are unframed, and every byte of a line costs on the hot path)
PLAIN_FRAMING: dict[str, Any] = {"framing": None}


def framing_object(data: bytes | None, headers: Sequence[tuple[str, bytes | None]], which: str,
                   control: object = None) -> dict[str, Any] | None:
    """``keyPayload`` / ``valuePayload`` without the payload options: the cheap part of framing
    detection, in every record object.  Null for a null key or value and for a control record;
    else ``framing``: null when no schema is named (``{"framing": null}``, nothing more), else
    confluent (magic byte 0 in the bytes) or header-id (a ``__key_schema_id`` /
    ``__value_schema_id`` header), with ``certain`` (false when the bytes only look framed: too
    short for an id, an id that is not positive), ``schemaId`` and ``guid`` (null when absent).
    The same fields, with the same meanings, as :func:`side_object` writes under ``--detect``
    (a subset of it: the schema's type, and whether plain bytes are JSON, need more work)."""
    if data is None or control is not None:
        return None
    f = record_framing(data, headers, which)
    if f is None:
        return dict(PLAIN_FRAMING)
    return {"framing": f.kind, "certain": f.certain, "schemaId": f.schema_id, "guid": f.guid}


def redacted_object(b: bytes | None) -> dict[str, Any] | None:
    """A redacted byte field: ``{"redacted": "sha256:<hex>", "length": n}`` (null stays null)."""
    from kafkadump.decoders.payloads.redact import digest_object

    return None if b is None else digest_object(b)


def with_view(d: dict[str, Any], r: Record, view: RecordView) -> dict[str, Any]:
    """A record object ``d`` with what the payload options add: redacted byte fields replaced
    by their digest, and ``keyPayload`` / ``valuePayload`` (:func:`side_object`) when framing
    was detected."""
    red = view.redaction
    if view.hides_bytes("key"):
        d["key"] = redacted_object(r.key)
    if view.secret and r.value is not None:
        d["value"] = {"redacted": "secret", "length": len(r.value)}
    elif view.hides_bytes("value"):
        d["value"] = redacted_object(r.value)
    if red.headers:
        d["headers"] = [{"key": k, "value": redacted_object(v)} for k, v in r.headers]
    if view.detected:
        d["keyPayload"] = side_object(view.key, view.masked_whole("key"))
        d["valuePayload"] = side_object(view.value, view.masked_whole("value"))
    return d


def finite(v: Any) -> Any:
    """``v`` (decoded JSON) with non-finite floats as the strings ``NaN``, ``Infinity``,
    ``-Infinity``: every line stays valid JSON (a JSON payload may spell them)."""
    if isinstance(v, float):
        return v if math.isfinite(v) else ("NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity"))
    if isinstance(v, dict):
        return {k: finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [finite(x) for x in v]
    return v


def side_object(side: PayloadSide | None, redacted: bool) -> dict[str, Any] | None:
    """``keyPayload`` / ``valuePayload``: what was detected in a key or value, and its decoding.

    ``format``: the schema's type in lower case (avro, protobuf, json) when the store names it,
    else json / utf8 / binary / empty for unframed bytes, null for a framed payload of an
    unknown schema; ``framing``: confluent (in the bytes), header-id (a header names the
    schema) or null; ``certain``: false when the bytes only look framed.  ``decoded`` (the
    payload as JSON) or ``error`` (why it did not decode), unless the bytes are redacted.
    """
    if side is None:
        return None
    f = side.framing
    framed = f.kind in ("confluent", "header-id")
    fmt = side.schema.schema_type.lower() if side.schema is not None else (None if framed else f.kind)
    o: dict[str, Any] = {"format": fmt, "framing": f.kind if framed else None, "certain": f.certain,
                         "schemaId": f.schema_id, "guid": f.guid,
                         "messageIndexes": None if f.message_indexes is None else list(f.message_indexes),
                         "payloadStart": f.payload_start}
    if side.schema is not None:
        o["subject"] = side.schema.subject
        o["version"] = side.schema.version
    if side.decoded is not None and not redacted:
        if side.decoded.ok:
            o["decoded"] = finite(side.decoded.value)
        else:
            o["error"] = side.decoded.error
    return o




def crc_summary_object(files: int, batches: int, size: int, bad: int, findings: int,
                       valid: bool) -> dict[str, Any]:
    """verify-crc's closing line."""
    return {"type": "summary", "files": files, "batches": batches, "bytes": size, "bad": bad,
            "findings": findings, "valid": valid}




class RecordWhere:
    """``--where`` over records: the expression sees each record's JSON object as ``--json`` writes
    it under ``--encoding auto`` (payload fields included); an internal-topic record's ``key`` and
    ``value`` are its decoded ``{"schema", "version", "data"}`` (bytes inside ``data`` stay bytes:
    equal to no literal)."""

    def __init__(self, where: Any) -> None:  # a payloads.where.Where
        self.where = where

    def keeps(self, record: Record, batch: Batch, place: Place | None = None, view: RecordView | None = None,
              decoded: Any = None) -> bool:
        obj = record_object(record, batch, ENCODERS["auto"], place, view)
        if decoded is not None:
            for name, part in (("key", decoded.key), ("value", decoded.value)):
                if part is not None:
                    obj[name] = {"schema": part.schema, "version": part.version, "data": part.data}
        return bool(self.where.matches(obj))


def finding_object(f: Finding) -> dict[str, Any]:
    """A finding as a line of its own (hexdump's JSON, after the spans)."""
    return {"type": "finding", **finding_fields(f)}



def file_error_object(file: str, message: str) -> dict[str, Any]:
    """A file that could not be read, as a row of its own (the Spark data source's ``error`` rows)."""
    return {"type": "error", "file": file, "error": message}


def item_findings_objects(item: Batch | Gap) -> list[dict[str, Any]]:
    """The findings of a batch or gap, an object each: where it was found (``type`` batch or gap,
    ``file position size baseOffset lastOffset``), then the finding's fields (the Spark data
    source's findings level)."""
    batch = item if isinstance(item, Batch) else None
    where = {"type": "batch" if batch is not None else "gap", "file": item.file, "position": item.position,
             "size": item.size,
             "baseOffset": batch.base_offset if batch is not None else None,
             "lastOffset": batch.last_offset if batch is not None else None}
    return [{**where, **f} for f in findings_list(item.findings)]


def record_framing(data: bytes | None, headers: Sequence[tuple[str, bytes | None]], which: str,
                   control: object = None) -> Framing | None:
    """The framing that names the schema of a record's key or value (``which``), as
    :func:`framing_object` reads it (the cheap part of detection, no store): None for a null key
    or value, a control record's, or bytes that name no schema.  The table's ``[17]`` cell shows
    the same fact."""
    if data is None or control is not None or ((not data or data[0]) and not headers):
        return None
    from kafkadump.decoders.payloads.framing import schema_framing

    return schema_framing(data, headers, which)




def span_object(s: Span, encoding: str = "hex") -> dict[str, Any]:
    """A named field of the bytes, as ``hexdump --json`` writes it: ``path offset length value
    source`` (``unparsed`` when the bytes were not parsed); bytes values per ``encoding``, values
    of other types as their text."""
    v = s.value
    if isinstance(v, (bytes, bytearray)):
        v = ENCODERS[encoding](bytes(v))
    elif v is not None and not isinstance(v, (int, float, str, bool, dict, list)):
        v = str(v)
    d = {"path": s.path, "offset": s.offset, "length": s.length, "value": v, "source": s.source}
    if s.raw == "unparsed":
        d["unparsed"] = True
    return d


__all__ = ["ENCODERS", "batch_object", "gap_object", "item_object", "findings_list", "findings_object", "record_object",
           "framing_object", "PLAIN_FRAMING", "with_view", "side_object", "redacted_object",
           "crc_summary_object", "encode_auto", "encode_base64", "encode_hex", "encode_text", "as_text",
           "CONTROL_BYTES", "C1_OR_INVALID", "DEFAULT_ENCODING", "Encoded", "Place", "Sighting",
           "place_of_file", "sighting_object", "connection_object", "finding_object", "file_error_object", "item_findings_objects",
           "record_framing", "span_object"]
