"""The report of ``capture``: the frames of a pcap, a hex dump or raw frame bytes, in order.

:func:`capture_report` reads the input (:func:`kafkadump.sources.inputs.read_capture_input`),
decodes it with the protocol decoder and yields stream notes and the frames
the request's :class:`~kafkadump.reports.query.FrameFilter` keeps, then the totals;
with ``frame=N`` it yields that one frame only.  Every
problem finding passes through the caller's
:class:`~kafkadump.base.status.Tally`.  Nothing here prints.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from kafkadump.base.errors import UsageError
from kafkadump.base.status import Tally
from kafkadump.base.values import FrozenValue, Value
from kafkadump.decoders.batches import Options
from kafkadump.decoders.protocol.frames import Frame
from kafkadump.decoders.protocol.stream import CaptureDecoder, Hints, StreamNote
from kafkadump.reports.places import ConnectionSeen, Place, Sighting
from kafkadump.reports.query import FrameFilter
from kafkadump.sources.inputs import CaptureData, CaptureKind, read_capture_input
from kafkadump.sources.pcap import endpoint_str

if TYPE_CHECKING:
    from kafkadump.base.findings import Finding
    from kafkadump.decoders.batches.model import Batch, Record, Span
    from kafkadump.decoders.payloads.view import PayloadInspector, PayloadRequest, RecordFilter, RecordView
    from kafkadump.sources.hextext import HexBlock
    from kafkadump.sources.pcap import CaptureReader, Connection


class CaptureTotals(Value):
    """The closing summary of a capture."""

    __match_args__ = ("file", "input", "frames", "requests", "responses", "records", "findings", "connections",
                      "ignored_connections", "packets", "problems", "shown")

    def __init__(self, file: str, input: str, frames: int = 0, requests: int = 0, responses: int = 0,
                 records: int = 0, findings: int = 0, connections: int = 0, ignored_connections: int = 0,
                 packets: int | None = None, problems: int = 0, shown: int = 0) -> None:
        self.file = file
        self.input = input
        self.frames = frames
        self.requests = requests
        self.responses = responses
        self.records = records
        self.findings = findings
        self.connections = connections
        self.ignored_connections = ignored_connections
        self.packets = packets
        self.problems = problems
        self.shown = shown       # frames the filters keep (all of them without filters)

    def count(self, frame: Frame) -> None:
        self.frames += 1
        if frame.kind == "request":
            self.requests += 1
        elif frame.kind == "response":
            self.responses += 1
        self.records += frame.record_count()


class TimeSpan(FrozenValue):
    """The earliest and latest packet times of a packet capture (epoch seconds), read from the
    packet records' headers before any frame: a table can choose its time format up front."""

    __match_args__ = ("first", "last")
    first: float
    last: float

    def __init__(self, first: float, last: float) -> None:
        self._set(first=first, last=last)


class CaptureRequest(Value):
    """What to decode and how: the user's hints for pasted bytes, the Kafka ports, the limits;
    ``payloads``: --detect, --schemas, --where, --redact* (None when none given)."""

    __match_args__ = ("as_", "api_key", "api_version", "ports", "detect", "options", "frames", "payloads")

    def __init__(self, as_: str | None = None, api_key: int | None = None, api_version: int | None = None,
                 ports: list[int] | None = None, detect: bool = True, options: Options | None = None,
                 frames: FrameFilter | None = None, payloads: PayloadRequest | None = None) -> None:
        self.as_ = as_
        self.api_key = api_key
        self.api_version = api_version
        self.ports: list[int] = [9092] if ports is None else ports
        self.detect = detect
        self.options: Options = Options() if options is None else options
        self.frames: FrameFilter = FrameFilter() if frames is None else frames
        self.payloads = payloads


class FrameViews(Value):
    """A frame with what the payload options made of its records: ``views`` holds every record's
    :class:`~kafkadump.decoders.payloads.view.RecordView` (by :func:`record_key`), ``matched`` the keys of
    the records ``--where`` keeps (None without ``--where``), ``masked`` (hexdump) the byte ranges
    not shown."""

    __match_args__ = ("frame", "views", "matched", "masked")

    def __init__(self, frame: Frame, views: dict[RecordKey, RecordView], matched: set[RecordKey] | None = None,
                 masked: list[tuple[str, int, int]] | None = None) -> None:
        self.frame = frame
        self.views = views
        self.matched = matched
        self.masked: list[tuple[str, int, int]] = [] if masked is None else masked

    def view(self, r: Record, b: Batch) -> RecordView | None:
        return self.views.get(record_key(r, b))

    def keeps(self, r: Record, b: Batch) -> bool:
        return self.matched is None or record_key(r, b) in self.matched


RecordKey = tuple[int, str, int]


def record_key(r: Record, b: Batch) -> RecordKey:
    """A record of a frame, stable across reads of its batch (whose records may be a stream that
    makes new objects each time, so ``id()`` is no key): its batch's place, then its own."""
    return (b.position, r.source, r.position)


def capture_report(path: str, request: CaptureRequest, tally: Tally, *, frame: int | None = None,
                   spans: bool = False, time_span: bool = False
                   ) -> Iterator[TimeSpan | StreamNote | Frame | FrameViews | CaptureTotals]:
    """Stream notes and frames of ``path`` (``-``: stdin), then a :class:`CaptureTotals`.

    With ``frame``, only that frame (its spans recorded when ``spans``); a
    frame number beyond the input is a :class:`~kafkadump.base.errors.UsageError`.
    With ``time_span``, a packet capture's :class:`TimeSpan` comes first.  With payload options
    (``request.payloads``) every frame comes as :class:`FrameViews`, and so does a frame carrying
    records of the metadata log that hold secrets; ``--where`` drops the frames none of whose
    records it keeps.
    """
    if request.api_version is not None and request.api_key is None:
        raise UsageError("--api-version needs --api-key")
    if frame is not None and request.frames.active:
        raise UsageError("--frame picks one frame; --api, --topic and --client filter the list: give one or the other")
    ask = _record_options(request.payloads, path)
    kind, data, close = read_capture_input(path, sys.stdin.buffer if path == "-" else None)
    try:
        dec = CaptureDecoder(path, ports=request.ports, options=request.options,
                             hints=Hints(request.as_, request.api_key, request.api_version), detect=request.detect)
        if frame is not None and spans:
            dec.ctx.spans = lambda: dec.count == frame
        if time_span and kind is CaptureKind.PCAP:
            yield from _time_span(data, path)
        yield from _report(path, kind, data, dec, tally, frame, request.frames, ask)
    finally:
        if close is not None:
            close()


class _RecordOptions(Value):
    """What the payload options ask of the records frames carry: an inspector (None without
    payload options), a ``--where`` filter, and whether the secrets of the metadata log are masked."""

    __match_args__ = ("inspector", "where", "secrets")

    def __init__(self, inspector: PayloadInspector | None = None, where: RecordFilter | None = None,
                 secrets: bool = True) -> None:
        self.inspector = inspector
        self.where = where
        self.secrets = secrets


def _report(path: str, kind: CaptureKind, data: CaptureData, dec: CaptureDecoder, tally: Tally,
            frame: int | None, keep: FrameFilter, ask: _RecordOptions
            ) -> Iterator[StreamNote | Frame | FrameViews | CaptureTotals]:
    totals = CaptureTotals(path, kind.value)
    readers: list[CaptureReader] = []
    found: Frame | None = None
    filtering = keep.active
    for item in _items(kind, data, path, dec, readers):
        if isinstance(item, StreamNote):
            totals.findings += len(item.findings)
            if frame is None:
                tally.see(item.findings)
                yield item
            continue
        findings = item.all_findings()
        totals.findings += len(findings)
        totals.count(item)
        if frame is None:
            if findings:
                tally.see(findings)   # a frame the filters drop still counts: the exit rule is the same
            if not filtering or keep.keeps(item):
                shown = _viewed(item, ask, tally, totals)
                if shown is not None:
                    totals.shown += 1
                    yield shown
        elif item.index == frame:
            found = item
            break
    if frame is not None:
        if found is None:
            raise UsageError(f"{path}: no frame {frame} (the input has {dec.count} frames)")
        tally.see(found.all_findings())
        yield _spanned(found, ask, tally, totals)
        return
    totals.connections = sum(1 for c in dec.order if c.state not in (None, False))
    totals.ignored_connections = dec.ignored
    totals.packets = readers[0].packets if readers else None
    totals.problems = tally.problems
    yield totals


def _record_options(payloads: PayloadRequest | None, path: str) -> _RecordOptions:
    """What the payload options ask for: their inspector (a ``_schemas`` partition beside the
    capture file with ``--detect`` alone), ``--where``, the secrets choice."""
    if payloads is None:
        return _RecordOptions()
    if not payloads.active:
        return _RecordOptions(None, None, payloads.redaction.secrets)
    from kafkadump.decoders.payloads.view import open_inspector

    return _RecordOptions(open_inspector(payloads, [] if path == "-" else [path]), payloads.where,
                          payloads.redaction.secrets)


# KRaft's metadata log travels in Fetch requests and responses between controllers (and brokers):
# its topic by name, or by its fixed id (Uuid.METADATA_TOPIC_ID, 0 and 1, in Kafka's base64 form)
METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def _is_metadata_log(ctx: dict[str, Any]) -> bool:
    return ctx.get("topic") == METADATA_TOPIC or ctx.get("topicId") == METADATA_TOPIC_ID


def _views(f: Frame, ask: _RecordOptions, tally: Tally, totals: CaptureTotals) -> dict[RecordKey, RecordView] | None:
    """The payload view of every record of ``f`` (None when there is nothing to say: no payload
    options and no secret in it).  The findings the inspection raises join the batch's findings
    (their offsets those of the frame's other findings), counted and tallied; a record of the
    metadata log whose value holds a secret is marked (its bytes hidden, unless
    ``--no-redact-secrets``)."""
    views: dict[RecordKey, RecordView] = {}
    for _, ctx, rv in f.records_fields():
        if ask.secrets and _is_metadata_log(ctx):
            secret = _secret_records(rv.batches)
            if not secret and ask.inspector is None:
                continue
        elif ask.inspector is None:
            continue   # (most frames: nothing to say)
        else:
            secret = set()
        for r, b in rv.records():
            view, found = _view(r, b, ask.inspector)
            views[record_key(r, b)] = _secret_view(view) if record_key(r, b) in secret else view
            if found:
                b.findings.extend(found)
                totals.findings += len(found)
                tally.see(found)
    return views if views or ask.inspector is not None else None


def _secret_view(view: RecordView) -> RecordView:
    """``view`` of a record of the metadata log whose value holds a secret."""
    return view.replace(secret=True)


def _view(r: Record, b: Batch, inspector: PayloadInspector | None) -> tuple[RecordView, list[Finding]]:
    if inspector is not None:
        return inspector.view(r, b)
    from kafkadump.decoders.payloads.view import RecordView

    return RecordView(None, None), []


def _secret_records(batches: list[Batch]) -> set[RecordKey]:
    from kafkadump.reports.segments import secret_records

    out: set[RecordKey] = set()
    for b in batches:
        if b.records:
            out |= {(b.position, source, position) for source, position in secret_records(b, b.records)}
    return out


def _spanned(f: Frame, ask: _RecordOptions, tally: Tally, totals: CaptureTotals) -> Frame | FrameViews:
    """The one frame asked for, its views, and (when its spans are recorded, for ``--hexdump``)
    its key and value spans split into their framing, redacted bytes and secrets listed as masked."""
    views = _views(f, ask, tally, totals)
    if views is None:
        return f
    out = FrameViews(f, views, None if ask.where is None else _matched(f, views, ask.where))
    if f.spans is None:
        return out
    spans = f.spans
    for _, _, rv in f.records_fields():
        for b in rv.batches:
            # a capture names each batch's decompressed bytes apart (decompressed@<position>); its
            # records, like a segment's, say "decompressed": the spans go by their name meanwhile
            pane = f"decompressed@{b.position}"
            for s in spans:
                if s.source == pane:
                    s.source = "decompressed"
            spans = _batch_spans(b, spans, out, ask.inspector)
            for s in spans:   # the originals and the framing fields split from them
                if s.source == "decompressed":
                    s.source = pane
            out.masked = [(pane if src == "decompressed" else src, a, z) for src, a, z in out.masked]
    if ask.inspector is not None and ask.inspector.redaction.active:
        _mask_unexplained(f, spans, out)
    f.spans = spans
    return out


def _mask_unexplained(f: Frame, spans: list[Span], out: FrameViews) -> None:
    """Under redaction, the bytes of each RECORDS field of ``f`` no parsed field explains (junk,
    a batch cut short, a gap) masked, and the spans over them shown as their digest."""
    from kafkadump.decoders.payloads.payload_spans import scrub, unexplained

    fields = [("file", rv.position, rv.position + rv.size) for _, _, rv in f.records_fields()]
    more = unexplained(fields, spans)
    out.masked += more
    scrub(spans, more)


def _batch_spans(b: Batch, spans: list[Span], out: FrameViews, inspector: PayloadInspector | None) -> list[Span]:
    """``spans`` with the payload options applied to the records of ``b`` (their ranges not to
    show added to ``out.masked``), and the values of its records that hold secrets masked."""
    from kafkadump.decoders.payloads.redact import SECRET_MASK

    secret = {(r.source, r.value_position) for r in b.records or ()
              if (v := out.views.get(record_key(r, b))) is not None and v.secret}
    for s in spans:
        if secret and s.path.endswith(".value") and (s.source, s.offset) in secret:
            s.value = SECRET_MASK
            out.masked.append((s.source, s.offset, s.offset + s.length))
    if inspector is None:
        return spans
    from kafkadump.decoders.payloads.payload_spans import payload_spans

    named = payload_spans(b, spans, inspector)  # its findings: those _views gave the batch
    out.masked += named.masked  # compressed bytes included: payload_spans masks them whole
    return named.spans


def _viewed(f: Frame, ask: _RecordOptions, tally: Tally, totals: CaptureTotals) -> Frame | FrameViews | None:
    """``f`` with its records' views and, with ``--where``, the records it keeps; None when
    ``--where`` keeps none of them (the frame is not shown)."""
    views = _views(f, ask, tally, totals)
    if views is None:
        return f
    if ask.where is None:
        return FrameViews(f, views)
    matched = _matched(f, views, ask.where)
    return FrameViews(f, views, matched) if matched else None


def _matched(f: Frame, views: dict[RecordKey, RecordView], where: RecordFilter) -> set[RecordKey]:
    """The ids of the records of ``f`` that ``where`` keeps: it sees each one's
    ``capture --records --json`` object (where it was seen included)."""
    matched: set[RecordKey] = set()
    for _, ctx, rv in f.records_fields():
        place = place_in_frame(ctx, sighting(f, ctx))
        for r, b in rv.records():
            if where.keeps(r, b, place, views.get(record_key(r, b))):
                matched.add(record_key(r, b))
    return matched


def _time_span(data: CaptureData, path: str) -> Iterator[TimeSpan]:
    from kafkadump.sources.pcap import CaptureReader

    assert not isinstance(data, str), "a capture file is read as bytes (only hex text is a str)"
    span = CaptureReader(data, path).time_span()  # a reader of its own: the real one reports the file's damage
    if span is not None:
        yield TimeSpan(*span)


def _items(kind: CaptureKind, data: CaptureData, path: str, dec: CaptureDecoder,
           readers: list[CaptureReader]) -> Iterator[StreamNote | Frame]:
    """Frames and notes from the input, in order."""
    from kafkadump.sources.pcap import CaptureReader, packet_from_bytes

    if kind is CaptureKind.PCAP:
        assert not isinstance(data, str), "a capture file is read as bytes (only hex text is a str)"
        reader = CaptureReader(data, path)
        readers.append(reader)
        yield from dec.packets(reader)
        if reader.findings:
            yield StreamNote(None, None, reader.findings, None, path)
        return
    if kind is CaptureKind.BINARY:
        assert not isinstance(data, str), "a binary file is read as bytes"
        yield from dec.block(data, 0, None)
        return
    from kafkadump.sources import hextext

    dec.lenient = True
    assert isinstance(data, str), "a hex dump is read as text"
    blocks = hextext.parse(data, path)
    superseded = _superseded(blocks)
    number = 0
    for i, b in enumerate(blocks):
        if b.kind == "derived" or i in superseded:
            continue
        if b.kind in ("packet", "raw"):
            number += 1
            p = packet_from_bytes(bytes(b.data), number, b.time)
            if p is not None:
                yield from dec.packet(p)
                continue
        for f in dec.block(bytes(b.data), 0, f"dump {i} (line {b.line})"):
            f.source = f"dump {i} (line {b.line})"
            yield f
    yield from dec.finish()


def _superseded(blocks: list[HexBlock]) -> set[int]:
    """tshark -x shows a PDU that spans packets as its last packet's frame plus a
    "Reassembled TCP" block: the reassembled bytes are the PDU, the frame only its tail."""
    out: set[int] = set()
    for i, b in enumerate(blocks):
        if b.kind != "packet" or not (b.title or "").startswith("Frame"):
            continue
        for later in blocks[i + 1:]:
            if later.kind == "reassembled":
                out.add(i)
                break
            if later.kind != "derived":
                break
    return out


# --- times, connections and places: the facts a capture adds to a record -----------------------------

def utc_time(t: float) -> datetime | None:
    """A capture time as a UTC datetime; None when a (damaged) timestamp is beyond the calendar."""
    try:
        return datetime.fromtimestamp(t, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def time_text(t: float | None, dated: bool = False) -> str:
    """A capture time for a table: ``22:13:20.004512``, or with ``dated`` (a capture that spans
    more than one day) ``2023-11-14 22:13:20.004``."""
    if t is None:
        return "-"
    if 0 <= t < 86400 * 2:  # seconds of the day (tcpdump text)
        h = int(t // 3600)
        m = int(t % 3600 // 60)
        s = t - h * 3600 - m * 60
        return f"{h:02d}:{m:02d}:{s:09.6f}"
    dt = utc_time(t)
    if dt is None:
        return f"{t:.6f}"
    if dated:
        return dt.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    # strftime("%H:%M:%S.%f"), written directly: this runs once per row of a frame table
    return f"{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}.{dt.microsecond:06d}"


def time_iso(t: float | None) -> str | None:
    """ISO-8601 UTC of a capture time (None when it has none, or it is beyond the calendar)."""
    if t is None:
        return None
    if 0 <= t < 86400 * 2:
        return time_text(t)
    dt = utc_time(t)
    return None if dt is None else dt.isoformat(timespec="microseconds").replace("+00:00", "Z")


def connection_seen(c: Connection | None) -> ConnectionSeen | None:
    """A connection as it stands now (its endpoints become known as the capture goes on)."""
    if c is None:
        return None
    return ConnectionSeen(c.id, endpoint_str(c.client) if c.client else None,
                          endpoint_str(c.server) if c.server else None, c.detected)


def place_in_frame(ctx: dict[str, Any], seen: Sighting | None = None) -> Place:
    """Where the records of a RECORDS field belong: the topic and partition of the request or
    response around it (``ctx``, from :meth:`Frame.records_fields`)."""
    partition = ctx.get("partition")
    return Place(ctx.get("topic"), partition if isinstance(partition, int) else None, seen)


def sighting(f: Frame, ctx: dict[str, Any]) -> Sighting:
    """Where a capture saw the records of frame ``f``: which frame, API, direction,
    connection and time; records in a request (Produce) carry the producer's relative offsets."""
    return Sighting(f.index, f.api_name, f.direction, connection_seen(f.connection), f.time,
                                  time_iso(f.time), ctx.get("topicId"), f.kind == "request")


__all__ = ["CaptureRequest", "CaptureTotals", "FrameViews", "TimeSpan", "capture_report", "time_text", "time_iso",
           "connection_seen", "place_in_frame", "sighting"]
