"""The incident file's pictures, as inline SVG text (:mod:`kafkadump.render.html_report`).

Hand-written SVG: no plotting library, no script, nothing fetched.  Every
picture labels its own marks (a line says what it is beside it), so it reads
without a legend, and scales with the page (``viewBox``, width 100%).  Every
string from the input passes through :func:`esc` (HTML text and attributes are
escaped the same way; SVG inline in HTML is parsed by the HTML parser).

Colours are presentation attributes (``fill``/``stroke``), not ``style``
attributes: the file's Content-Security-Policy allows its one ``<style>`` only.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from kafkadump.render.describe import iso_ms
from kafkadump.render.lines import terminal_safe

if TYPE_CHECKING:
    from kafkadump.reports.incident import ByteMap, CaptureSummary, LeaderHistory, Timeline
    from kafkadump.reports.offsets import GroupOffset
    from kafkadump.reports.transactions import Transaction

WIDTH = 800
LEFT = 96          # room for the offset axis labels
RIGHT = 150        # room for the labels of horizontal lines
FONT = 12

OK = "#4c9a6a"
BAD = "#d62f2f"
WARN = "#e08a00"
MUTED = "#9aa3ad"
INK = "#222"
BLUE = "#3a6fc4"
SHADE = "#f6d7a8"

KIND_COLOURS = {"intact": OK, "damaged": BAD, "resynced": BLUE, "zero padding": "#c9ced4"}
STATE_COLOURS = {"committed": OK, "aborted": MUTED, "ongoing": BLUE, "hanging": BAD}

MAX_TXN_ROWS = 40
MAX_LAG_ROWS = 60
MAX_LANES = 24


def esc(value: object) -> str:
    """Text from the input, safe in HTML text, attributes and inline SVG (control characters shown
    escaped, as on a terminal)."""
    return html.escape(terminal_safe(str(value)), quote=True)


def _num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _text(x: float, y: float, content: str, *, anchor: str = "start", fill: str = INK, size: int = FONT,
          weight: str | None = None) -> str:
    """A ``<text>``; ``content`` already escaped."""
    bold = f' font-weight="{weight}"' if weight else ""
    return (f'<text x="{_num(x)}" y="{_num(y)}" text-anchor="{anchor}" fill="{fill}" font-size="{size}"{bold}>'
            f"{content}</text>")


def _svg(height: float, body: Iterable[str], label: str) -> str:
    return (f'<svg class="chart" viewBox="0 0 {WIDTH} {_num(height)}" width="100%" role="img" '
            f'aria-label="{esc(label)}" font-family="system-ui, sans-serif">'
            + "".join(body) + "</svg>")


class _Scale:
    """A linear map from ``[lo, hi]`` to ``[a, b]`` (a flat range maps to the middle)."""

    def __init__(self, lo: float, hi: float, a: float, b: float) -> None:
        self.lo, self.hi, self.a, self.b = lo, hi, a, b

    def __call__(self, v: float) -> float:
        if self.hi == self.lo:
            return (self.a + self.b) / 2
        return self.a + (v - self.lo) * (self.b - self.a) / (self.hi - self.lo)


def bytes_text(n: int) -> str:
    """A byte count for people: 1.2 MiB."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


# --- a partition's offsets against time -------------------------------------------------------------

def timeline_svg(t: Timeline) -> str:
    """Batches as marks (offset range at their newest timestamp), missing offsets shaded, segment
    starts, log start and high watermark as labelled lines."""
    marks = t.marks
    stamps = [m.timestamp for m in marks if m.timestamp is not None and m.timestamp >= 0]
    by_time = len(stamps) == len(marks) and bool(marks)
    offsets = [m.first for m in marks] + [m.last for m in marks] + [a for g in t.gaps for a in g]
    offsets += [v for v in (t.log_start, t.high_watermark, t.log_end) if v is not None] + t.segment_starts
    if not offsets:
        return _svg(40, [_text(10, 24, "no batches on disk", fill=MUTED)], "empty partition")
    lo, hi = min(offsets), max(offsets)
    top, bottom = 14, 150
    y = _Scale(lo, hi, bottom, top)
    xs = [float(s) for s in stamps] if by_time else [float(i) for i in range(len(marks))]
    x = _Scale(min(xs, default=0), max(xs, default=1), LEFT, WIDTH - RIGHT)
    out = [f'<rect x="{LEFT}" y="{top}" width="{WIDTH - RIGHT - LEFT}" height="{bottom - top}" fill="#fbfbfb" '
           f'stroke="#ddd"/>']
    for a, b in t.gaps[:200]:
        y1, y2 = y(b + 1), y(a)
        out.append(f'<rect x="{LEFT}" y="{_num(y1)}" width="{WIDTH - RIGHT - LEFT}" height="{_num(max(2, y2 - y1))}" '
                   f'fill="{SHADE}"><title>offsets {a}\u2013{b} missing</title></rect>')
    if t.gaps:
        a, b = t.gaps[0]
        more = f" (+{len(t.gaps) - 1} more gaps)" if len(t.gaps) > 1 else ""
        out.append(_text(WIDTH - RIGHT + 6, y((a + b) / 2) + 4, f"missing {a}\u2013{b}{more}", fill=WARN, size=11))
    out += _hlines(t, y)
    # the intact batches as one path (a few bytes a mark), the damaged ones each with its tooltip
    strokes = []
    for m, px in zip(marks, xs):
        y1, y2 = y(m.last) - 1, y(m.first) + 1
        if m.damaged:
            out.append(f'<rect x="{_num(x(px) - 2)}" y="{_num(y1)}" width="4" height="{_num(max(3, y2 - y1))}" '
                       f'fill="{BAD}"><title>damaged batch, offsets {m.first}\u2013{m.last}'
                       f'{" at " + iso_ms(m.timestamp) if m.timestamp is not None else ""}</title></rect>')
        else:
            strokes.append(f"M{_num(x(px))} {_num(y1)}V{_num(max(y2, y1 + 2))}")
    if strokes:
        out.append(f'<path d="{"".join(strokes)}" stroke="{BLUE}" stroke-width="3"><title>batches</title></path>')
    damaged = [m for m in marks if m.damaged]
    if damaged:
        m = damaged[0]
        px = x(xs[marks.index(m)])
        out.append(_text(min(px + 6, WIDTH - RIGHT - 4), y(m.last) - 4,
                         f"damaged batch{'es' if len(damaged) > 1 else ''} ({len(damaged)})", fill=BAD, size=11,
                         weight="bold"))
    out.append(_text(LEFT - 6, top + 10, str(hi), anchor="end", size=11))
    out.append(_text(LEFT - 6, bottom, str(lo), anchor="end", size=11))
    out.append(_text(LEFT - 6, (top + bottom) / 2, "offset", anchor="end", fill=MUTED, size=11))
    if by_time:
        out.append(_text(LEFT, bottom + 16, esc(iso_ms(int(min(xs)))), size=11))
        out.append(_text(WIDTH - RIGHT, bottom + 16, esc(iso_ms(int(max(xs)))), anchor="end", size=11))
    else:
        out.append(_text(LEFT, bottom + 16, "batches in log order (no timestamps)", fill=MUTED, size=11))
    if t.thinned > 1:
        out.append(_text(WIDTH - RIGHT, bottom + 32, f"every {t.thinned}th of {t.batches} batches drawn; "
                                                     "damaged ones all", anchor="end", fill=MUTED, size=11))
    if not t.walked:
        out.append(_text(LEFT + 8, top + 20, "batches not read (byte budget spent): lines only", fill=MUTED))
    return _svg(bottom + (40 if t.thinned > 1 else 24), out, f"offsets against time of {t.topic}-{t.partition}")


def _hlines(t: Timeline, y: _Scale) -> list[str]:
    """Segment starts (dashed, grey), log start (green), high watermark (blue), labelled at the right."""
    out = []
    starts = t.segment_starts[:50]
    for base in starts:
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_num(y(base))}" y2="{_num(y(base))}" '
                   f'stroke="{MUTED}" stroke-dasharray="4 3"><title>segment starting at offset {base}</title></line>')
    if starts and len(starts) <= 6:
        for base in starts:
            out.append(_text(WIDTH - RIGHT + 6, y(base) + 12, f"segment {base}", fill=MUTED, size=10))
    elif starts:
        out.append(_text(WIDTH - RIGHT + 6, y(starts[0]) + 12, f"{len(t.segment_starts)} segments (dashed)",
                         fill=MUTED, size=10))
    for value, name, colour in ((t.log_start, "log start", OK), (t.high_watermark, "high watermark", BLUE)):
        if value is None:
            continue
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_num(y(value))}" y2="{_num(y(value))}" '
                   f'stroke="{colour}" stroke-width="1.5"/>')
        out.append(_text(WIDTH - RIGHT + 6, y(value) - 3, f"{name} {value}", fill=colour, size=11, weight="bold"))
    return out


# --- a damaged segment's bytes ----------------------------------------------------------------------

def byte_map_svg(m: ByteMap) -> str:
    """A disk-usage bar: the segment's bytes by kind, each run labelled on hover, the totals under it."""
    size = max(m.size, sum(p.size for p in m.pieces), 1)
    x = _Scale(0, size, 10, WIDTH - 10)
    out = []
    for p in m.pieces:
        x1, x2 = x(p.start), x(p.start + p.size)
        out.append(f'<rect x="{_num(x1)}" y="8" width="{_num(max(1.0, x2 - x1))}" height="34" '
                   f'fill="{KIND_COLOURS.get(p.kind, MUTED)}"><title>{esc(p.kind)}: bytes {p.start}\u2013'
                   f'{p.start + p.size - 1} ({bytes_text(p.size)})</title></rect>')
    totals: dict[str, int] = {}
    for p in m.pieces:
        totals[p.kind] = totals.get(p.kind, 0) + p.size
    cursor = 10.0
    for kind in ("intact", "damaged", "resynced", "zero padding"):
        n = totals.get(kind)
        if not n:
            continue
        label = f"{kind} {bytes_text(n)} ({100 * n / size:.1f}%)"
        out.append(f'<rect x="{_num(cursor)}" y="52" width="12" height="12" fill="{KIND_COLOURS[kind]}"/>')
        out.append(_text(cursor + 16, 62, label, size=12))
        cursor += 30 + len(label) * 7.4
    out.append(_text(WIDTH - 10, 62, f"0 \u2013 {bytes_text(size)}", anchor="end", fill=MUTED, size=11))
    return _svg(72, out, "byte map of a damaged segment")


# --- transactions per producer across partitions ---------------------------------------------------

def transactions_svg(transactions: Sequence[Transaction]) -> str:
    """One row per transaction (hanging first): its spans per partition over time, coloured by state
    and labelled with the state, the producer and the partitions."""
    rows = sorted(transactions, key=lambda t: (t.state != "hanging", t.state != "ongoing", t.producer_id,
                                               t.producer_epoch))[:MAX_TXN_ROWS]
    stamps = [s for t in rows for s in (t.first_timestamp, t.last_timestamp) if s is not None and s >= 0]
    if not rows:
        return ""
    x = _Scale(min(stamps, default=0), max(stamps, default=1), 250, WIDTH - 10)
    row_h = 22
    out = []
    for i, t in enumerate(rows):
        top = 8 + i * row_h
        colour = STATE_COLOURS.get(t.state, MUTED)
        who = f"pid {t.producer_id} e{t.producer_epoch}" + (f" {t.transactional_id}" if t.transactional_id else "")
        out.append(_text(4, top + 14, esc(_short(who, 26)), size=11))
        out.append(_text(246, top + 14, esc(t.state), anchor="end", fill=colour, size=11, weight="bold"))
        for p in t.partitions[:20]:
            s = p.span
            a = s.first_timestamp if s.first_timestamp is not None else s.marker_timestamp
            b = s.marker_timestamp if s.marker_timestamp is not None else s.last_timestamp
            if a is None or b is None:
                continue
            x1, x2 = x(a), x(b)
            pcol = STATE_COLOURS.get(p.state, MUTED)
            out.append(f'<rect x="{_num(x1)}" y="{top + 3}" width="{_num(max(3.0, x2 - x1))}" height="14" rx="3" '
                       f'fill="{pcol}" stroke="{INK if p.state == "hanging" else "none"}"><title>'
                       f'{esc(p.topic)}-{esc(p.partition)}: {esc(p.state)}, offsets {esc(s.first_offset)}\u2013'
                       f'{esc(s.last_offset)}{", " + esc(p.reason) if p.reason else ""}</title></rect>')
            if p.state == "hanging":
                out.append(_text(min(x2 + 6, WIDTH - 150), top + 14,
                                 esc(_short(f"{p.topic}-{p.partition} from {s.first_offset}", 30)), fill=BAD,
                                 size=11))
    height = 8 + len(rows) * row_h + 20
    if stamps:
        out.append(_text(250, height - 6, esc(iso_ms(min(stamps))), size=11))
        out.append(_text(WIDTH - 10, height - 6, esc(iso_ms(max(stamps))), anchor="end", size=11))
    return _svg(height, out, "transactions over time")


def _short(text: str, room: int) -> str:
    return text if len(text) <= room else text[: room - 1] + "\u2026"


# --- leader and ISR history -------------------------------------------------------------------------

def leaders_svg(h: LeaderHistory) -> str:
    """A lane per broker: the leader's lane solid, the ISR members' thin, one column per change; unclean
    elections marked and labelled."""
    changes = h.changes
    if not changes:
        return ""
    brokers = sorted({b for c in changes for b in (c.isr or ())} | {c.leader for c in changes if c.leader >= 0})
    brokers = brokers[:MAX_LANES]
    lane = {b: i for i, b in enumerate(brokers)}
    top, lane_h = 28, 22
    x = _Scale(0, len(changes), 90, WIDTH - 20)
    out = []
    for b, i in lane.items():
        out.append(_text(80, top + i * lane_h + 15, f"broker {b}", anchor="end", size=11))
        out.append(f'<line x1="90" x2="{WIDTH - 20}" y1="{top + i * lane_h + 11}" y2="{top + i * lane_h + 11}" '
                   f'stroke="#eee"/>')
    for k, c in enumerate(changes):
        x1, x2 = x(k), x(k + 1)
        when = iso_ms(c.timestamp) if c.timestamp is not None else f"offset {c.offset}"
        for b in c.isr or ():
            if b in lane:
                out.append(f'<rect x="{_num(x1)}" y="{top + lane[b] * lane_h + 8}" width="{_num(max(1.0, x2 - x1))}" '
                           f'height="6" fill="#b8cbe8"><title>broker {b} in ISR after offset {c.offset} '
                           f'({esc(when)})</title></rect>')
        if c.leader in lane:
            out.append(f'<rect x="{_num(x1)}" y="{top + lane[c.leader] * lane_h + 3}" '
                       f'width="{_num(max(1.0, x2 - x1))}" height="16" fill="{BAD if c.unclean else BLUE}">'
                       f'<title>broker {c.leader} leads after offset {c.offset} ({esc(when)})'
                       f'{": UNCLEAN election, " + esc(c.reason or "") if c.unclean else ""}</title></rect>')
        if c.unclean:
            out.append(f'<path d="M{_num(x1)} 18 l-6 -10 h12 z" fill="{BAD}"/>')
            out.append(_text(x1 + 8, 16, f"unclean election at offset {c.offset}", fill=BAD, size=11, weight="bold"))
    height = top + len(brokers) * lane_h + 22
    first, last = changes[0], changes[-1]
    out.append(_text(90, height - 6, esc(iso_ms(first.timestamp) if first.timestamp is not None
                                          else f"offset {first.offset}"), size=11))
    out.append(_text(WIDTH - 20, height - 6, esc(iso_ms(last.timestamp) if last.timestamp is not None
                                                 else f"offset {last.offset}"), anchor="end", size=11))
    out.append(_text(WIDTH / 2, height - 6, f"{len(changes)} changes, in log order", anchor="middle", fill=MUTED,
                     size=11))
    return _svg(height, out, f"leader and ISR history of {h.topic}-{h.partition}")


# --- consumer lag -----------------------------------------------------------------------------------

def lag_svg(offsets: Sequence[GroupOffset]) -> str:
    """A bar per group and partition, longest lag first, the number at the end of the bar."""
    rows = sorted((g for g in offsets if g.lag is not None), key=lambda g: (-(g.lag or 0), g.group, g.topic,
                                                                            g.partition))[:MAX_LAG_ROWS]
    if not rows:
        return ""
    most = max(max(g.lag or 0 for g in rows), 1)
    x = _Scale(0, most, 300, WIDTH - 170)
    row_h = 20
    out = []
    for i, g in enumerate(rows):
        top = 6 + i * row_h
        lag = g.lag or 0
        colour = BAD if lag < 0 else (WARN if lag > 0 else OK)
        out.append(_text(294, top + 13, esc(_short(f"{g.group} \u00b7 {g.topic}-{g.partition}", 44)), anchor="end",
                         size=11))
        out.append(f'<rect x="300" y="{top + 2}" width="{_num(max(2.0, x(abs(lag)) - 300))}" height="14" '
                   f'fill="{colour}"><title>{esc(g.group)} {esc(g.topic)}-{g.partition}: committed '
                   f'{g.committed}, log end {g.log_end}</title></rect>')
        out.append(_text(x(abs(lag)) + 6, top + 13, f"{lag:,}".replace(",", "\u2009") + (
            " (beyond log end)" if lag < 0 else ""), size=11))
    return _svg(10 + len(rows) * row_h, out, "consumer lag per group and partition")


# --- a capture's requests ---------------------------------------------------------------------------

def capture_svg(c: CaptureSummary) -> str:
    """A lane per connection: each request a bar from its time to its response (its latency), errors
    red with a cross; per lane the request count and the slowest latency."""
    lanes = list(c.connections)[:MAX_LANES]
    if not c.exchanges or not lanes:
        return ""
    index = {cid: i for i, cid in enumerate(lanes)}
    times = [e.time for e in c.exchanges if e.time is not None]
    ends = [e.time + (e.latency or 0) for e in c.exchanges if e.time is not None]
    if not times:
        return ""
    x = _Scale(min(times), max(ends), 230, WIDTH - 110)
    top, lane_h = 6, 24
    out = []
    for cid, i in index.items():
        mine = [e for e in c.exchanges if e.connection == cid]
        slow = max((e.latency for e in mine if e.latency is not None), default=None)
        y0 = top + i * lane_h
        out.append(_text(224, y0 + 15, esc(_short(c.connections[cid], 34)), anchor="end", size=11))
        out.append(f'<line x1="230" x2="{WIDTH - 110}" y1="{y0 + 11}" y2="{y0 + 11}" stroke="#eee"/>')
        note = f"{len(mine)} req" + (f", max {slow * 1000:.1f} ms" if slow is not None else "")
        out.append(_text(WIDTH - 104, y0 + 15, note, size=11, fill=MUTED))
    for e in c.exchanges:
        if e.time is None or e.connection not in index:
            continue
        y0 = top + index[e.connection] * lane_h
        x1 = x(e.time)
        w = max(2.0, x(e.time + (e.latency or 0)) - x1)
        tip = (f"{esc(e.api)} at {esc(_clock(e.time))}"
               + (f", {e.latency * 1000:.2f} ms" if e.latency is not None else ", no response seen")
               + (f", {esc(e.error)}" if e.error else ""))
        out.append(f'<rect x="{_num(x1)}" y="{y0 + 4}" width="{_num(w)}" height="14" '
                   f'fill="{BAD if e.error else BLUE}" fill-opacity="0.8"><title>{tip}</title></rect>')
        if e.error:
            out.append(f'<path d="M{_num(x1 - 4)} {y0 + 1} l8 8 m0 -8 l-8 8" stroke="{BAD}" stroke-width="2"/>')
    height = top + len(lanes) * lane_h + 22
    out.append(_text(230, height - 6, esc(_clock(min(times))), size=11))
    out.append(_text(WIDTH - 110, height - 6, esc(_clock(max(ends))), anchor="end", size=11))
    out.append(_text((230 + WIDTH - 110) / 2, height - 6, "bar: request to response (latency); red \u00d7: error",
                     anchor="middle", fill=MUTED, size=11))
    return _svg(height, out, "requests over time per connection")


def _clock(t: float) -> str:
    return iso_ms(int(t * 1000))


__all__ = ["esc", "bytes_text", "timeline_svg", "byte_map_svg", "transactions_svg", "leaders_svg", "lag_svg",
           "capture_svg"]
