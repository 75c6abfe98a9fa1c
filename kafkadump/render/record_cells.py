"""The cells of a record's key, value and headers in a table: previews, schema ids, digests.

The records table's columns and which of these fill them are the field registry's
(:mod:`kafkadump.objects.fields`, written out in :mod:`kafkadump.render.generated_lines`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from kafkadump.render import describe as d
from kafkadump.render import jsontext

if TYPE_CHECKING:
    from kafkadump.decoders.batches.model import Batch, Record
    from kafkadump.decoders.payloads.view import PayloadSide, RecordView

PREVIEW_CHARS = 400
HEADER_PREVIEW = 12


def framed_cell(b: bytes | None, headers: list[tuple[str, bytes | None]], which: str,
                preview: int = PREVIEW_CHARS) -> str:
    """A key or value without the payload options: its preview, after the schema id when the bytes
    or headers name one (``[17]``, ``[17?]``: the framing of the record object's ``keyPayload`` /
    ``valuePayload``, :func:`~kafkadump.objects.records.record_framing`)."""
    if b is None or ((not b or b[0]) and not headers):   # (most keys and values: named by nothing)
        return d.preview(b, preview)
    from kafkadump.decoders.payloads.view import PayloadSide
    from kafkadump.objects.records import record_framing  # (here: batches' table needs none of it)

    f = record_framing(b, headers, which)
    return d.preview(b, preview) if f is None else payload_cell(b, PayloadSide(f), False, preview)


def payload_cell(b: bytes | None, side: PayloadSide | None, redacted: bool, width: int = PREVIEW_CHARS) -> str:
    """A key or value with the payload options: its digest when redacted, else the schema id
    (``[17]``, ``[17?]`` when only possibly framed) before the decoded payload as compact JSON
    (or the bytes after the framing); terminal-safe."""
    from kafkadump.decoders.payloads.redact import digest_line

    if b is None:
        return "null"
    if redacted:
        return d.preview(digest_line(b).encode(), width)
    tag = ""
    rest = b
    if side is not None and side.framing.kind in ("confluent", "header-id"):
        f = side.framing
        ident = f.schema_id if f.guid is None else f.guid
        tag = f"[{'?' if ident is None else ident}{'' if f.certain else '?'}] "
        rest = b[f.payload_start:]
    if side is not None and side.decoded is not None and side.decoded.ok:
        return d.preview((tag + _compact_json(side.decoded.value)).encode(), width)
    return tag + d.preview(rest, width - len(tag))


def _compact_json(value: object) -> str:
    text = jsontext.dumps(value, separators=(",", ":"))
    return text if text.isprintable() else json.dumps(value, separators=(",", ":"))


def sequence_cell(b: Batch) -> str:
    """A batch's producer sequence: ``-`` (none), the base sequence when negative, else its range."""
    if b.base_sequence is None:
        return "-"
    return str(b.base_sequence) if b.base_sequence < 0 else f"{b.base_sequence}..{b.last_sequence}"


def headers_cell(headers: list[tuple[str, bytes | None]], header_preview: int) -> str:
    """``name=value`` per header, each value shown up to ``header_preview`` characters."""
    return ",".join(f"{k}={d.preview(v, header_preview)}" for k, v in headers) if headers else ""


def view_headers_cell(headers: list[tuple[str, bytes | None]], view: RecordView, header_preview: int) -> str:
    """:func:`headers_cell` under the payload options: values as their digests when redacted."""
    if headers and view.redaction.headers:
        from kafkadump.decoders.payloads.redact import digest_line

        return ",".join(f"{k}={d.preview(None if v is None else digest_line(v).encode(), header_preview)}"
                        for k, v in headers)
    return headers_cell(headers, header_preview)


def view_value_cell(r: Record, view: RecordView, preview: int) -> str:
    """A value's cell under the payload options (a secret of a metadata record: its length only)."""
    if view.secret:
        return f"[redacted secret] ({len(r.value or b'')} bytes)"
    return payload_cell(r.value, view.value, view.masked_whole("value"), preview)


__all__ = ["sequence_cell", "framed_cell", "payload_cell", "headers_cell", "view_headers_cell", "view_value_cell"]
