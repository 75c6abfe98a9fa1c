"""Renderers for protocol frames: table rows, JSON Lines, record listings, hexdump panes.

Decoded :class:`~kafkadump.decoders.protocol.frames.Frame` and
:class:`~kafkadump.decoders.protocol.stream.StreamNote` objects in, text out; nothing
is decoded here.  JSON uses the schemas' field names in camelCase; byte
values follow ``--encoding``; record batches inside RECORDS fields use the
``batches --json`` shape and their records the ``records --json`` contract.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TextIO, cast

from kafkadump.decoders.batches.model import Batch, Gap, Record, Span, record_chunks
from kafkadump.decoders.protocol.decoder import RecordsValue
from kafkadump.decoders.protocol.frames import body_topic_names
from kafkadump.objects import frame_objects
from kafkadump.objects import records as records_model
from kafkadump.objects.records import Place
from kafkadump.render import describe as d
from kafkadump.render import jsonl, jsontext
from kafkadump.render.lines import terminal_safe
from kafkadump.render.table import Column
from kafkadump.reports.capture import place_in_frame, sighting, time_text, utc_time

if TYPE_CHECKING:
    from rich.console import Console

    from kafkadump.base.findings import Finding
    from kafkadump.decoders.protocol.frames import Frame
    from kafkadump.decoders.protocol.stream import StreamNote
    from kafkadump.render.hexdump import HexLayout
    from kafkadump.render.table import TableLayout
    from kafkadump.reports.capture import CaptureTotals, FrameViews, TimeSpan
    from kafkadump.sources.pcap import Connection

    CaptureItem = TimeSpan | StreamNote | Frame | FrameViews | CaptureTotals

NOWHERE = Place()
# a frame's JSON writes the records of a batch of more than this many records a run at a time
# (as text, after the rest of the frame's tree) instead of holding them in the tree: with 0, every
# batch's records stream, and a frame's tree holds none of them
STREAMED_RECORDS = 0
# the types of decoded values that JSON writes unchanged (exact types: a subclass goes through value())
_AS_IS = frozenset((int, str, bool, type(None)))

ERROR_NAMES = {
    -1: "UNKNOWN_SERVER_ERROR", 1: "OFFSET_OUT_OF_RANGE", 2: "CORRUPT_MESSAGE", 3: "UNKNOWN_TOPIC_OR_PARTITION",
    4: "INVALID_FETCH_SIZE", 5: "LEADER_NOT_AVAILABLE", 6: "NOT_LEADER_OR_FOLLOWER", 7: "REQUEST_TIMED_OUT",
    8: "BROKER_NOT_AVAILABLE", 9: "REPLICA_NOT_AVAILABLE", 10: "MESSAGE_TOO_LARGE", 14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE", 16: "NOT_COORDINATOR", 17: "INVALID_TOPIC_EXCEPTION", 22: "ILLEGAL_GENERATION",
    25: "UNKNOWN_MEMBER_ID", 27: "REBALANCE_IN_PROGRESS", 29: "TOPIC_AUTHORIZATION_FAILED",
    30: "GROUP_AUTHORIZATION_FAILED", 31: "CLUSTER_AUTHORIZATION_FAILED", 35: "UNSUPPORTED_VERSION",
    36: "TOPIC_ALREADY_EXISTS", 42: "INVALID_REQUEST", 45: "OUT_OF_ORDER_SEQUENCE_NUMBER",
    46: "DUPLICATE_SEQUENCE_NUMBER", 47: "INVALID_PRODUCER_EPOCH", 48: "INVALID_TXN_STATE",
    49: "INVALID_PRODUCER_ID_MAPPING", 51: "CONCURRENT_TRANSACTIONS", 53: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    58: "SASL_AUTHENTICATION_FAILED", 59: "UNKNOWN_PRODUCER_ID", 72: "LISTENER_NOT_FOUND", 74: "FENCED_LEADER_EPOCH",
    75: "UNKNOWN_LEADER_EPOCH", 76: "UNSUPPORTED_COMPRESSION_TYPE", 79: "MEMBER_ID_REQUIRED",
    82: "FENCED_INSTANCE_ID", 100: "UNKNOWN_TOPIC_ID", 110: "FENCED_MEMBER_EPOCH",
}

# priorities (lower: kept first on a narrow terminal) chosen so that at 80 columns a row keeps
# #, time, conn, dir, api, summary, latency and (without dates) client; api, client and
# summary narrow and widen with the terminal
FRAME_COLUMNS = (
    Column("#", 5, True, 1), Column("time", 15, False, 2), Column("conn", 4, False, 3),
    Column("dir", 4, False, 4), Column("api", 20, False, 5, 10), Column("ver", 3, True, 10),
    Column("corr", 7, True, 9), Column("client", 14, False, 8, 8), Column("size", 8, True, 11),
    Column("latency", 8, True, 7), Column("summary", 60, False, 6, 12),
)
TIME_COLUMN = 1
DATED_TIME_WIDTH = 23   # 2023-11-14 22:13:20.004

RECORD_COLUMNS = (
    Column("frame", 5, True, 1), Column("topic", 16, False, 3, 8, name=True), Column("part", 4, True, 4),
    Column("offset", 9, True, 2), Column("timestamp", 24, False, 7), Column("key", 20, False, 5, 10),
    Column("value", 40, False, 6, 14), Column("headers", 20, False, 8, 10),
)

# rows are printed in time order through a window of this many rows (a capture's packets are
# nearly in time order; the window bounds the memory the ordering takes)
TIME_ORDER_WINDOW = 1024


# --- text helpers ----------------------------------------------------------------------------

def spans_days(first: float, last: float) -> bool:
    """Whether capture times from ``first`` to ``last`` fall on more than one UTC date."""
    a, b = utc_time(first), utc_time(last)
    return a is not None and b is not None and a.date() != b.date() and first >= 86400 * 2


def latency_text(seconds: float | None) -> str:
    """``0.412ms``, ``12.35ms``, ``1.204s``: a response's latency in 8 characters at most."""
    if seconds is None:
        return "-"
    ms = seconds * 1000
    if -10 < ms < 10:
        return f"{ms:.3f}ms"
    if -100 < ms < 100:
        return f"{ms:.2f}ms"
    if -1000 < ms < 1000:
        return f"{ms:.1f}ms"
    if -100 < seconds < 100:
        return f"{seconds:.3f}s"
    return f"{seconds:.0f}s"


def error_text(code: int) -> str:
    name = ERROR_NAMES.get(code)
    return f"{code} {name}" if name else str(code)


_NO_CODEC = {"none"}
_NAMED_BY = ("groupId", "transactionalId", "key")   # the body's fields a summary names


def summary(f: Frame, findings: list[Finding] | None = None) -> str:
    """A short description: records carried, topics, groups, errors (``findings``: the frame's
    :meth:`~kafkadump.decoders.protocol.frames.Frame.all_findings`, when the caller has them)."""
    if f.kind == "records":
        items = f.items or []
        n = sum(len(b.records or ()) for b in items if isinstance(b, Batch))
        nb = sum(1 for b in items if isinstance(b, Batch))
        return f"{nb} batches, {n} records"
    parts: list[str] = []
    if f.body is None:
        if f.api_key is None and f.kind == "response":
            parts.append("body not decoded (no request; --api-key/--api-version)")
        elif f.findings:
            parts.append(f.findings[0].code.value)
    else:
        b = f.body
        top = b.get("errorCode")
        if top and isinstance(top, int):
            parts.append("error " + error_text(top))
        recs = list(f.records_fields())
        if recs:
            shown: list[str] = []
            for _, ctx, rv in recs:
                items = rv.items
                if not items:
                    continue
                count = 0   # rv.record_count, counted in the same pass as the codecs
                codecs: set[str] = set()
                for x in items:
                    if isinstance(x, Batch):
                        count += len(x.records or ())
                        codecs.add(x.compression)
                where = ctx.get("topic") or (ctx.get("topicId", "?")[:8] if ctx.get("topicId") else "?")
                shown.append(f"{where}[{ctx.get('partition', '?')}] {count} rec"
                             + (f" {'/'.join(sorted(codecs))}" if codecs and codecs != _NO_CODEC else ""))
            if shown:
                parts.append(", ".join(shown[:3]) + (f" +{len(shown) - 3}" if len(shown) > 3 else ""))
        if not recs or not parts:
            names: list[str] = []
            body_topic_names(b, names)
            if names:
                parts.append("topics " + ",".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else ""))
        for k in _NAMED_BY:
            v = b.get(k)
            if v and isinstance(v, str):
                parts.append(f"{k} {v}")
        if f.api_key == 18 and f.kind == "response" and isinstance(b.get("apiKeys"), list):
            parts.append(f"{len(b['apiKeys'])} APIs")
        errs = f.nested_errors()
        if errs:
            common = sorted(set(errs))
            parts.append("errors " + ", ".join(error_text(e) for e in common[:3]))
    if findings is None:
        findings = f.all_findings()
    bad = [x for x in findings if x.severity.value != "info"] if findings else None
    if bad:
        parts.append(f"! {len(bad)} finding{'s' if len(bad) > 1 else ''}")
    return "; ".join(parts)


class RowClock:
    """:func:`~kafkadump.reports.capture.time_text` for a table's rows in time order: the date and
    time of day of a second worked out once, when the rows reach it (a capture's frames come many
    to a second), the fraction as ``datetime.fromtimestamp`` rounds it (to the nearest microsecond,
    half to even)."""

    __slots__ = ("dated", "second", "prefix")

    def __init__(self, dated: bool) -> None:
        self.dated = dated
        self.second = -1.0          # the whole second whose text ``prefix`` is
        self.prefix = ""

    def text(self, t: float | None) -> str:
        if t is None or not 86400 * 2 <= t < 253402300799.0:   # (to the end of year 9999) as time_text says
            return time_text(t, self.dated)
        fraction, whole = math.modf(t)
        micro = round(fraction * 1e6)
        if micro >= 1000000:
            whole += 1.0
            micro -= 1000000
        if whole != self.second:
            dt = utc_time(whole)
            if dt is None:
                return time_text(t, self.dated)
            self.second = whole
            self.prefix = dt.strftime("%Y-%m-%d %H:%M:%S") if self.dated \
                else f"{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
        return f"{self.prefix}.{micro // 1000:03d}" if self.dated else f"{self.prefix}.{micro:06d}"


def frame_cells(f: Frame, dated: bool = False, findings: list[Finding] | None = None,
                clock: RowClock | None = None) -> list[object]:
    """The cells of a frame's row, in :data:`FRAME_COLUMNS` order (``findings``: as :func:`summary`'s;
    ``clock``: the table's, for the time)."""
    conn = "-" if f.connection is None else f"c{f.connection.id}"
    when = time_text(f.time, dated) if clock is None else clock.text(f.time)
    if f.kind == "records":
        return [f.index, when, conn, "-", "records", "-", "-", "-", f.size, "-", summary(f, findings)]
    ver = "-" if f.api_version is None else f.api_version
    api = f.api_name or "?"
    if f.guessed:
        api += "?"
    return [f.index, when, conn, "req" if f.kind == "request" else "resp", api, ver,
            "-" if f.correlation_id is None else f.correlation_id, f.client_id or "-", f.size,
            latency_text(f.latency), summary(f, findings)]


def frame_style(f: Frame, findings: list[Finding] | None = None) -> str | None:
    sev = {x.severity.value for x in (f.all_findings() if findings is None else findings)}
    if "error" in sev:
        return "red"
    if "warning" in sev:
        return "yellow"
    return None if f.kind == "request" else "cyan"


def connection_line(c: Connection) -> str:
    how = "detected by content" if c.detected else "by port"
    return f"== c{c.id}: {c.label()} (Kafka {how})"


def findings_lines(findings: Iterable[Finding]) -> list[str]:
    return [f"   ! {x.code.value} @{x.offset}: {x.message}" for x in findings]


# --- JSON ------------------------------------------------------------------------------------

class FrameJson:
    """Formats frames and notes as JSON lines for one ``--encoding``."""

    def __init__(self, encoding: str = records_model.DEFAULT_ENCODING) -> None:
        self.enc = records_model.ENCODERS[encoding]
        self.records = jsonl.RecordLines(encoding)
        self._held: dict[str, tuple[Batch, Place]] | None = None  # placeholder -> batch whose records stream later
        self._places: dict[int, Place] = {}  # id of a RECORDS value of the frame -> where its records belong
        import uuid  # (here: its import costs the table's start-up)

        self._token = uuid.uuid4().hex  # placeholders: this run's random part, then a count
        self.views: FrameViews | None = None  # the payload views of the frame being written (payload options)

    def _record(self, r: Record, b: Batch, place: Place) -> dict[str, Any]:
        views = self.views
        return records_model.record_object(r, b, self.enc, place, None if views is None else views.view(r, b))

    def value(self, v: object) -> Any:
        # values JSON writes as they are (most of a body) are not handed down a call each
        if isinstance(v, dict):
            return {k: x if type(x) in _AS_IS else self.value(x) for k, x in v.items()}
        if isinstance(v, list):
            return [x if type(x) in _AS_IS else self.value(x) for x in v]
        if isinstance(v, (bytes, bytearray)):
            return self.enc(bytes(v))
        if isinstance(v, RecordsValue):
            return self.records_value(v)
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            return str(v)
        return v

    def records_value(self, rv: RecordsValue) -> dict[str, Any]:
        place = self._places.get(id(rv), NOWHERE)
        out: list[dict[str, Any]] = []
        for item in rv.items:
            if isinstance(item, Gap):
                out.append(records_model.gap_object(item, place))
                continue
            bd = records_model.batch_object(item, place)
            if item.records is not None:
                if self._held is not None and len(item.records) > STREAMED_RECORDS:
                    token = f"\x00records-{self._token}-{len(self._held)}\x00"
                    self._held[token] = (item, place)
                    bd["records"] = token
                else:
                    bd["records"] = [self._record(r, item, place) for r in item.records]
            out.append(bd)
        return frame_objects.records_value_object(rv, out)

    def frame(self, f: Frame) -> str:
        # RECORDS values of a body live as long as the frame, so their ids name them (bare record
        # data has no body and no place)
        self._places = {} if f.kind == "records" else \
            {id(rv): place_in_frame(ctx) for _, ctx, rv in f.records_fields()}
        records = self.records_value(next(iter(f.records_fields()))[2]) if f.kind == "records" else None
        d_ = frame_objects.frame_object(f, records)
        return self._dumps(d_)

    def _dumps(self, d_: dict[str, Any]) -> str:
        """The frame object's text: the decoded tree is written as it is, its bytes and RECORDS
        values converted as the encoder meets them (:meth:`_convert`, in the order they are
        written); a tree holding a NaN or an infinity is converted first by :meth:`value`."""
        held = self._held
        made = 0 if held is None else len(held)
        try:
            return jsontext.dumps(d_, default=self._convert, allow_nan=False)
        except ValueError:
            for token in list(held or ())[made:]:  # placeholders of the attempt: made again below
                del held[token]  # type: ignore[union-attr]
        for key in ("header", "body"):
            if d_.get(key) is not None:
                d_[key] = self.value(d_[key])
        return jsontext.dumps(d_)

    def _convert(self, v: object) -> Any:
        """What the JSON encoder cannot write by itself, as :meth:`value` converts it."""
        if isinstance(v, (bytes, bytearray)):
            return self.enc(bytes(v))
        if isinstance(v, RecordsValue):
            return self.records_value(v)
        raise TypeError(f"{type(v).__name__} in a decoded tree")

    def frame_pieces(self, f: Frame) -> Iterator[str]:
        """:meth:`frame` in pieces, the same text: the records of a batch of many records are
        written a run at a time instead of being held as one tree."""
        self._held = {}
        try:
            text = self.frame(f)
            held = self._held
        finally:
            self._held = None
        if not held:
            yield text
            return
        # the placeholders are in the text in the order they were made (the tree is converted
        # in the order it is written), each once: a token holds a NUL, which no other string of
        # the text can hold raw
        pos = 0
        for token, (b, place) in held.items():
            form = jsontext.dumps(token)
            at = text.index(form, pos)
            yield text[pos:at]
            yield from self._record_list(b, place)
            pos = at + len(form)
        yield text[pos:]

    def _record_list(self, b: Batch, place: Place) -> Iterator[str]:
        """``[record object, ...]`` of ``b`` as :func:`jsontext.dumps` writes a list, a run at a time."""
        sep = "["
        obj = self._record
        for chunk in record_chunks(b.records):
            yield sep + jsontext.dumps([obj(r, b, place) for r in chunk])[1:-1]
            sep = ","
        yield "[]" if sep == "[" else "]"

    def note(self, n: StreamNote) -> str:
        return jsontext.dumps(frame_objects.stream_note_object(n))

    def record_lines(self, f: Frame) -> str:
        """The records a frame carries, in the ``records --json`` contract plus frame/topic/partition."""
        return "".join(self.record_line_runs(f))

    def record_line_runs(self, f: Frame, views: FrameViews | None = None) -> Iterator[str]:
        """:meth:`record_lines` a run of records at a time (newline-terminated lines); with
        ``views`` (payload options), the records ``--where`` keeps with their payload views."""
        for _, ctx, rv in f.records_fields():
            place = place_in_frame(ctx, sighting(f, ctx))
            for b in rv.items:
                if not isinstance(b, Batch) or not b.records:
                    continue
                for chunk in record_chunks(b.records):
                    if views is None:
                        yield self.records.batch_lines(b, chunk, place)
                        continue
                    kept = [r for r in chunk if views.keeps(r, b)]
                    seen = [v for v in (views.view(r, b) for r in kept) if v is not None]
                    yield (self.records.batch_lines(b, kept, place) if len(seen) < len(kept)  # no view: not asked
                           else self.records.view_lines(b, kept, seen, place))


# --- record table ------------------------------------------------------------------------------

def record_rows(f: Frame, views: FrameViews | None = None, whole: bool = False) -> Iterator[tuple[list[object], Record]]:
    """A row per record of ``f`` (with payload ``views``: those ``--where`` keeps, shown by their views);
    ``whole``: values not cut (plain output)."""
    from kafkadump.render.generated_cells import RECORD_CELL_INDEX
    from kafkadump.render.table import HEADER_PREVIEW, PREVIEW_CHARS, WHOLE, record_cells

    preview, header_preview = (WHOLE, WHOLE) if whole else (PREVIEW_CHARS, HEADER_PREVIEW)
    for _, ctx, rv in f.records_fields():
        for r, b in rv.records():
            if views is not None and not views.keeps(r, b):
                continue
            cells = record_cells(r, None if views is None else views.view(r, b), preview, header_preview)
            yield [f.index, ctx.get("topic") or ctx.get("topicId") or "-", ctx.get("partition", "-"),
                   *(cells[RECORD_CELL_INDEX[name]] for name in ("offset", "timestamp", "key", "value", "headers"))], r


# --- hexdump ------------------------------------------------------------------------------------

def _display_spans(f: Frame) -> list[Span]:
    """Spans with values made readable where a batch gives them meaning (CRC verdicts, attributes)."""
    batches: dict[int, Batch] = {}
    for _, _, rv in f.records_fields():
        for item in rv.items:
            if isinstance(item, Batch):
                batches[item.position] = item
    out: list[Span] = []
    for s in f.spans or ():
        v = s.value
        leaf = s.path.rsplit(".", 1)[-1]
        if leaf in ("crc", "attributes") and isinstance(v, int) and (".batch[" in s.path or ".message[" in s.path):
            b = _batch_of(batches, s)
            if b is not None and s.source == "file":
                if leaf == "crc" and b.computed_crc is not None and s.offset == b.position + (17 if b.magic >= 2 else 12):
                    kind = "crc32c" if b.magic >= 2 else "crc32"
                    v = f"{v} (computed {kind} {b.computed_crc}: {'ok' if b.crc_valid else 'MISMATCH'})"
                elif leaf == "attributes":
                    v = f"0x{v:02x} = {d.describe_attributes(v, b.magic)}"
        out.append(Span(s.path, s.offset, s.length, v, s.source, s.raw))
    return out


def _batch_of(batches: dict[int, Batch], s: Span) -> Batch | None:
    best: Batch | None = None
    for pos, b in batches.items():
        if pos <= s.offset < pos + b.size and (best is None or pos > best.position):
            best = b
    return best


def render_hexdump(f: Frame, *, expand_records: bool = False, console: Console | None = None,
                   out: TextIO | None = None, masked: list[tuple[str, int, int]] | None = None,
                   layout: HexLayout | None = None) -> None:
    """Annotated hexdump of one frame: the frame's bytes, then each batch's decompressed bytes
    (``layout``: bytes per row and the width to fit, as :func:`.hexdump.render_panes` takes it)."""
    from kafkadump.render import hexdump as hd

    spans = _display_spans(f)
    leaves = hd.leaf_spans(spans, expand_records)
    what = f.kind if f.kind == "records" else f"{f.api_name or '?'} v{f.api_version} {f.kind}"
    title = f"frame {f.index}: {what} at position {f.position}, {f.size} bytes"
    if f.correlation_id is not None:
        title += f", correlation id {f.correlation_id}"
    panes = [hd.Pane(title, f.data or b"", f.position, leaves, "file", masked)]
    for _, _, rv in f.records_fields():
        for item in rv.items:
            if isinstance(item, Batch) and item.decompressed is not None:
                size = f"{len(item.decompressed):,}".replace(",", " ")
                panes.append(hd.Pane(f"batch at {item.position}: decompressed, {size} bytes ({item.compression})",
                                     item.decompressed, 0, leaves, f"decompressed@{item.position}", masked))
    hd.render_panes(panes, list(f.all_findings()), console=console, out=out, layout=layout)


def span_lines(f: Frame, encoding: str = "hex") -> str:
    from kafkadump.render import hexdump as hd

    return "".join(hd.span_json(s, encoding) + "\n" for s in (f.spans or ()))


__all__ = ["FRAME_COLUMNS", "RECORD_COLUMNS", "frame_cells", "frame_style", "summary", "FrameJson",
           "render_hexdump", "record_rows", "connection_line", "findings_lines", "time_text", "span_lines"]


# --- tree view of one frame ---------------------------------------------------------------------

def tree_lines(f: Frame, width: int = 100) -> list[str]:
    """The decoded header and body as indented ``name: value`` lines (one frame, table mode)."""
    out: list[str] = []

    def val(v: object) -> str:
        if isinstance(v, (bytes, bytearray)):
            return d.preview(bytes(v), 48)
        if isinstance(v, str):
            return jsontext.dumps(v)
        return str(v)

    def walk(v: object, indent: int, name: str) -> None:
        pad = "  " * indent
        if isinstance(v, dict):
            out.append(f"{pad}{name}:")
            for k, x in v.items():
                walk(x, indent + 1, k)
        elif isinstance(v, list):
            if not v or all(not isinstance(x, (dict, list)) for x in v):
                text = "[" + ", ".join(val(x) for x in v) + "]"
                out.append(f"{pad}{name}: {text[:width]}")
            else:
                out.append(f"{pad}{name}: ({len(v)})")
                for i, x in enumerate(v):
                    walk(x, indent + 1, f"[{i}]")
        elif isinstance(v, RecordsValue):
            out.append(f"{pad}{name}: {v.size} bytes, {len(v.batches)} batches, {v.record_count} records")
            for item in v.items:
                if isinstance(item, Gap):
                    out.append(f"{pad}  gap at {item.position}, {item.size} bytes: "
                               + "; ".join(x.code.value for x in item.findings))
                else:
                    out.append(f"{pad}  batch at {item.position}: magic {item.magic}, {item.compression}, "
                               f"offsets {item.base_offset if item.magic >= 2 else item.offset}.."
                               f"{item.last_offset}, {len(item.records or ())} records, crc "
                               f"{'ok' if item.crc_valid else 'MISMATCH' if item.crc_valid is False else '-'}")
        else:
            out.append(f"{pad}{name}: {'null' if v is None else val(v)}")

    if f.header is not None:
        walk(f.header, 1, "header")
    if f.body is not None:
        walk(f.body, 1, "body")
    elif f.kind == "records":
        walk(next(iter(f.records_fields()))[2], 1, "records")
    return out


# --- whole reports (items from kafkadump.reports.capture.capture_report) --------------------------------

def totals_line(t: CaptureTotals) -> str:
    extra = "" if t.packets is None else f"  packets: {t.packets}  connections: {t.connections}"
    if t.ignored_connections:
        extra += f" (+{t.ignored_connections} not Kafka)"
    shown = "" if t.shown == t.frames else f" ({t.shown} shown)"
    return (f"frames: {t.frames}{shown}  requests: {t.requests}  responses: {t.responses}  records: {t.records}"
            f"{extra}  ({'no problems' if not t.problems else str(t.problems) + ' problems'})")


def write_frames_json(items: Iterable[CaptureItem], out: TextIO,
                      encoding: str = records_model.DEFAULT_ENCODING) -> None:
    """A line per stream note and frame, then the summary."""
    from kafkadump.decoders.protocol.stream import StreamNote
    from kafkadump.reports.capture import CaptureTotals, FrameViews, TimeSpan

    fj = FrameJson(encoding)
    for item in items:
        if isinstance(item, StreamNote):
            out.write(fj.note(item) + "\n")
        elif isinstance(item, CaptureTotals):
            out.write(jsontext.dumps(frame_objects.capture_summary_object(item)) + "\n")
        elif isinstance(item, TimeSpan):
            continue
        else:
            f, fj.views = (item.frame, item) if isinstance(item, FrameViews) else (item, None)
            for piece in fj.frame_pieces(f):
                out.write(piece)
            out.write("\n")


def frame_columns(dated: bool) -> tuple[Column, ...]:
    """The frame table's columns; a capture that spans days gets a time column wide enough for dates."""
    if not dated:
        return FRAME_COLUMNS
    cols = list(FRAME_COLUMNS)
    cols[TIME_COLUMN] = cols[TIME_COLUMN].replace(width=DATED_TIME_WIDTH)
    return tuple(cols)


class _Row:
    """What one frame or stream note prints, held until its turn in time order."""

    __slots__ = ("connection", "cells", "style", "notes")

    def __init__(self, connection: Connection | None, cells: list[object] | None, style: str | None,
                 notes: Sequence[tuple[str, str | None]]) -> None:
        self.connection = connection
        self.cells = cells
        self.style = style
        self.notes = notes


class _FrameTable:
    """The frame table: rows in time order (through a window of :data:`TIME_ORDER_WINDOW` rows), a
    connection's line before its first row, notes wrapped to the terminal's width."""

    def __init__(self, out: TextIO, console: Console | None, layout: TableLayout | None, dated: bool) -> None:
        from kafkadump.render.table import TableStream

        self.table = TableStream(out, frame_columns(dated), console, layout)
        self.width = None if layout is None else layout.width
        self.dated = dated
        self.clock = RowClock(dated)
        self.held: list[tuple[float, int, _Row]] = []
        self.count = 0
        self.latest = float("-inf")
        self.introduced: set[int] = set()

    def add(self, t: float | None, row: _Row) -> None:
        if t is not None and t > self.latest:
            self.latest = t
        item = (self.latest if t is None else t, self.count, row)
        self.count += 1
        if len(self.held) < TIME_ORDER_WINDOW:
            heapq.heappush(self.held, item)
        else:   # the window is full: the earliest row of the window and the new one prints
            self._print(heapq.heappushpop(self.held, item)[2])

    def frame(self, f: Frame) -> None:
        found = f.all_findings()
        if found:
            notes: Sequence[tuple[str, str | None]] = [(line, "yellow") for line in findings_lines(found)]
            style = frame_style(f, found)
        else:   # (most frames)
            notes, style = (), None if f.kind == "request" else "cyan"
        self.add(f.time, _Row(f.connection, frame_cells(f, self.dated, found, self.clock), style, notes))

    def stream_note(self, n: StreamNote) -> None:
        where = "" if n.connection is None else f"c{n.connection.id} {n.direction}: "
        self.add(n.time, _Row(None, None, None, [(f"{where}{line.strip()}", "red")
                                                 for line in findings_lines(n.findings)]))

    def finish(self, totals: CaptureTotals) -> None:
        while self.held:
            self._print(heapq.heappop(self.held)[2])
        self.note(totals_line(totals), None)

    def _print(self, row: _Row) -> None:
        c = row.connection
        if c is not None and c.id not in self.introduced:
            self.introduced.add(c.id)
            self.note(connection_line(c), "bold")
        if row.cells is not None:
            self.table.row(row.cells, row.style)
        for text, style in row.notes:
            self.note(text, style)

    def note(self, text: str, style: str | None) -> None:
        """A line under the rows, wrapped (not cut) to a terminal's width."""
        text = terminal_safe(text)   # escaped first: the escapes take room too
        if self.width is None or len(text) <= self.width:
            self.table.note(text, style)
            return
        import textwrap

        indent = len(text) - len(text.lstrip()) + 2
        for line in textwrap.wrap(text, self.width, subsequent_indent=" " * indent,
                                  break_long_words=True, break_on_hyphens=False):
            self.table.note(line, style)


def write_frames_table(items: Iterable[CaptureItem], out: TextIO, console: Console | None = None,
                       layout: TableLayout | None = None) -> None:
    """A row per frame in time order, the connection as a column and its line before its first row,
    findings as notes, then the totals (how many frames the filters kept, when not all)."""
    batched = _BatchedLines(out) if console is None else None   # (rich's console writes its own way)
    try:
        _frame_rows(items, out if batched is None else cast(TextIO, batched), console, layout)
    finally:
        if batched is not None:
            batched.flush()


class _BatchedLines:
    """Whole lines to ``out`` a few hundred at a time, in one write each (a write per row costs the
    long table more than its rows' text)."""

    __slots__ = ("out", "held")

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.held: list[str] = []

    def write(self, text: str) -> int:
        held = self.held
        held.append(text)
        if len(held) >= 256:
            self.flush()
        return len(text)

    def flush(self) -> None:
        if self.held:
            text = "".join(self.held)
            self.held = []
            self.out.write(text)


def _frame_rows(items: Iterable[CaptureItem], out: TextIO, console: Console | None,
                layout: TableLayout | None) -> None:
    """:func:`write_frames_table`'s rows, to ``out``."""
    from kafkadump.decoders.protocol.stream import StreamNote
    from kafkadump.reports.capture import CaptureTotals, FrameViews, TimeSpan

    table: _FrameTable | None = None
    for item in items:
        if isinstance(item, TimeSpan):
            table = _FrameTable(out, console, layout, spans_days(item.first, item.last))
            continue
        if table is None:
            table = _FrameTable(out, console, layout, False)
        if isinstance(item, StreamNote):
            table.stream_note(item)
        elif isinstance(item, CaptureTotals):
            table.finish(item)
        else:
            table.frame(item.frame if isinstance(item, FrameViews) else item)


def _frames(items: Iterable[CaptureItem]) -> Iterator[tuple[Frame, FrameViews | None]]:
    """Each frame of ``items`` with its payload views (None without payload options)."""
    from kafkadump.decoders.protocol.stream import StreamNote
    from kafkadump.reports.capture import CaptureTotals, FrameViews, TimeSpan

    for i in items:
        if isinstance(i, FrameViews):
            yield i.frame, i
        elif not isinstance(i, (StreamNote, CaptureTotals, TimeSpan)):
            yield i, None


def write_records_json(items: Iterable[CaptureItem], out: TextIO,
                       encoding: str = records_model.DEFAULT_ENCODING) -> None:
    """The records the frames carry, a line each (``records --json`` plus frame/topic/partition)."""
    fj = FrameJson(encoding)
    for f, views in _frames(items):
        for run in fj.record_line_runs(f, views):
            out.write(run)


def write_records_table(items: Iterable[CaptureItem], out: TextIO, console: Console | None = None,
                        layout: TableLayout | None = None) -> None:
    from kafkadump.render.table import TableStream

    table = TableStream(out, RECORD_COLUMNS, console, layout)
    for f, views in _frames(items):
        for cells, r in record_rows(f, views, whole=not table.cuts):
            table.row(cells, "cyan" if r.control is not None else None)


def write_frame_table(items: Iterable[CaptureItem], out: TextIO, console: Console | None = None,
                      layout: TableLayout | None = None) -> None:
    """One frame in full: its row, its decoded tree, its findings."""
    from kafkadump.render.table import TableStream

    table = TableStream(out, FRAME_COLUMNS, console, layout)
    for f, _ in _frames(items):
        table.row(frame_cells(f), frame_style(f))
        for line in tree_lines(f):
            table.note(line)
        for line in findings_lines(f.all_findings()):
            table.note(line, "yellow")


def write_hexdump_json(items: Iterable[CaptureItem], out: TextIO, encoding: str = "hex") -> None:
    """One frame's spans, a line each, then its findings."""
    for f, _ in _frames(items):
        out.write(span_lines(f, encoding))
        for x in f.all_findings():
            out.write(jsontext.dumps(records_model.finding_object(x)) + "\n")


def write_hexdump_text(items: Iterable[CaptureItem], out: TextIO, console: Console | None = None,
                       expand_records: bool = False, layout: HexLayout | None = None) -> None:
    for f, views in _frames(items):
        render_hexdump(f, expand_records=expand_records, console=console, out=out,
                       masked=None if views is None else views.masked, layout=layout)
