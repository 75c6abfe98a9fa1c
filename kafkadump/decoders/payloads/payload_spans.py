"""``hexdump --records`` with the payload options: framing bytes named, redacted bytes masked.

A key or value span of a record is split into the framing's fields (``key.magic``,
``key.schemaId``, ``key.messageIndexes``, ``key.payload``; together they tile the same bytes,
the payload's value its decoded JSON when it decoded); a redacted key, value or header value
keeps its span with the digest as its value, and its bytes are listed in ``masked`` so the
renderer shows no byte of them.  Secrets the internal-topic decoder masked (spans whose value
reads :data:`~kafkadump.decoders.payloads.redact.SECRET_MASK`) are masked alike.  In a compressed batch
the compressed bytes say as much as the plain ones: with byte redaction they are masked whole.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from kafkadump.base.values import Value
from kafkadump.decoders.batches.model import Batch, Gap, Record, Span
from kafkadump.decoders.payloads.redact import SECRET_MASK, digest_line

if TYPE_CHECKING:
    from kafkadump.decoders.payloads.view import PayloadInspector, PayloadSide, RecordView

_PART = re.compile(r"^(?P<record>.*?)\.(?P<part>key|value|headers\[\d+\]\.value)$")
V2_HEADER = 61


class PayloadSpans(Value):
    """The spans with payloads named or masked, the masked byte ranges ``(source, start, end)``,
    and the findings the inspection raised."""

    __match_args__ = ("spans", "masked", "findings")
    __slots__ = __match_args__

    spans: list[Span]
    masked: list[tuple[str, int, int]]
    findings: list

    def __init__(self, spans: list[Span], masked: list[tuple[str, int, int]] | None = None,
                 findings: list | None = None) -> None:
        self.spans = spans
        self.masked = [] if masked is None else masked
        self.findings = [] if findings is None else findings


def _records_by_place(item: Batch) -> dict[tuple[str, int, str], Record]:
    """Each record by where its key and value start: (source, position, "key"/"value")."""
    out: dict[tuple[str, int, str], Record] = {}
    for r in item.records or ():
        if r.key_position is not None:
            out[(r.source, r.key_position, "key")] = r
        if r.value_position is not None:
            out[(r.source, r.value_position, "value")] = r
    return out


def payload_spans(item: Batch | Gap, spans: list[Span], inspector: PayloadInspector) -> PayloadSpans:
    """``spans`` of ``item`` with the payload options of ``inspector`` applied: the one redaction
    step of hexdump.  Under any redaction every byte of ``item`` no parsed field explains (damaged
    records, trailing bytes, a gap) is masked too, and so is every span's value over masked bytes."""
    out = PayloadSpans([])
    red = inspector.redaction
    if not isinstance(item, Batch):
        out.spans = spans
        if red.active:
            out.masked.append(("file", item.position, item.position + item.size))
            scrub(out.spans, out.masked)
        return out
    places = _records_by_place(item)
    views: dict[tuple[str, int], RecordView] = {}
    for s in spans:
        if s.value == SECRET_MASK:
            out.masked.append((s.source, s.offset, s.offset + s.length))
        m = _PART.match(s.path)
        if not isinstance(s.value, (bytes, bytearray)):
            out.spans.append(s)
        elif m is None:   # bytes that are no key, value or header value (a legacy wrapper's, ...)
            if red.active:
                _mask(s, out)
            out.spans.append(s)
        elif m.group("part") not in ("key", "value"):
            if red.headers:
                _mask(s, out)
            out.spans.append(s)
        else:
            out.spans.extend(_side_spans(s, m.group("part"), item, places, views, inspector, out))
    if red.active:
        out.masked += _unexplained(item, out.spans)
    if (red.bytes_redacted or red.fields) and item.compression != "none":
        # compressed bytes keep literal runs of the plain ones (snappy, lz4): masked whole, past the
        # v2 header, or past a legacy wrapper's offset and size
        start = V2_HEADER if item.magic >= 2 else 12
        out.masked.append(("file", item.position + start, item.position + item.size))
    if red.active:
        scrub(out.spans, out.masked)
    return out


def _side_spans(s: Span, part: str, item: Batch, places: dict[tuple[str, int, str], Record],
                views: dict[tuple[str, int], RecordView], inspector: PayloadInspector, out: PayloadSpans) -> list[Span]:
    """A key or value span as the record's view shows it: masked whole (its digest), split into
    its framing with the payload decoded (its bytes masked under ``--redact-fields``), or as is."""
    red = inspector.redaction
    r = places.get((s.source, s.offset, part))
    if red.side(part) or (r is None and red.active):
        _mask(s, out)
        return [s]
    if r is None:
        return [s]
    if r.identity not in views:
        view, found = inspector.view(r, item)
        out.findings.extend(found)
        views[r.identity] = view
    view = views[r.identity]
    if view.masked_whole(part):
        _mask(s, out)
        return [s]
    side = view.side(part)
    named = _framing_spans(s, side)
    if view.hides_bytes(part):
        # --redact-fields: the decoded payload is shown masked, its bytes not at all
        out.masked.append((s.source, s.offset, s.offset + s.length))
        if len(named) == 1 and side is not None and side.decoded is not None:
            s.value = json.dumps(side.decoded.value, separators=(",", ":"), ensure_ascii=True)
    return named


def _unexplained(item: Batch, spans: list[Span]) -> list[tuple[str, int, int]]:
    """The byte ranges of ``item`` (its file bytes, its decompressed payload) that no parsed span
    covers: unparsed records, trailing bytes; they may hold keys, values and headers."""
    ranges = [("file", item.position, item.position + item.size)]
    if item.decompressed is not None:
        ranges.append(("decompressed", 0, len(item.decompressed)))
    return unexplained(ranges, spans)


def unexplained(ranges: list[tuple[str, int, int]], spans: list[Span]) -> list[tuple[str, int, int]]:
    """The parts of ``ranges`` (source, start, end) that no parsed field covers (a span neither
    ``unparsed`` nor without a value, as a batch's ``trailing`` bytes are)."""
    out: list[tuple[str, int, int]] = []
    for source, start, end in ranges:
        covered = sorted((s.offset, s.offset + s.length) for s in spans
                         if s.source == source and s.raw != "unparsed" and s.value is not None and s.length > 0
                         and s.offset < end and s.offset + s.length > start)
        pos = start
        for a, z in covered:
            if a > pos:
                out.append((source, pos, a))
            pos = max(pos, z)
        if pos < end:
            out.append((source, pos, end))
    return out


def scrub(spans: list[Span], masked: list[tuple[str, int, int]]) -> None:
    """Spans whose bytes are masked show their digest, not their bytes (hexdump --json)."""
    for s in spans:
        if isinstance(s.value, (bytes, bytearray)) and any(
                src == s.source and a < s.offset + s.length and s.offset < z for src, a, z in masked):
            s.value = digest_line(bytes(s.value))


def _mask(s: Span, out: PayloadSpans) -> None:
    data = bytes(s.value)
    s.value = digest_line(data)
    out.masked.append((s.source, s.offset, s.offset + s.length))


def _framing_spans(s: Span, side: PayloadSide | None) -> list[Span]:
    """A key or value span split into its framing's fields (itself when not framed)."""
    if side is None or side.framing.kind != "confluent" or side.framing.schema_id is None:
        return [s]
    f = side.framing
    data = bytes(s.value)
    parts = [Span(s.path + ".magic", s.offset, 1, data[0], s.source),
             Span(s.path + ".schemaId", s.offset + 1, 4, f.schema_id, s.source)]
    if f.payload_start > 5:
        parts.append(Span(s.path + ".messageIndexes", s.offset + 5, f.payload_start - 5,
                          str(list(f.message_indexes or ())), s.source))
    payload: object = data[f.payload_start:]
    if side.decoded is not None and side.decoded.ok:
        payload = json.dumps(side.decoded.value, separators=(",", ":"), ensure_ascii=True)
    if f.payload_start < len(data):
        parts.append(Span(s.path + ".payload", s.offset + f.payload_start, len(data) - f.payload_start, payload,
                          s.source))
    return parts


__all__ = ["PayloadSpans", "payload_spans", "unexplained", "scrub"]
