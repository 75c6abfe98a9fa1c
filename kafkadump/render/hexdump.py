"""Annotated hexdump: every byte of a batch named by the field it belongs to.

Input is the decoder's spans for one batch (or gap); nothing is decoded
here.  Output is a classic hexdump (offset, 16 bytes, ASCII) where each
field's bytes share a colour, and beside each row the fields that start in
it: name, decoded value, raw bytes of varints, meaning of attribute bits,
CRC verdicts.  Bytes no field explains are shown as unparsed, in their own
style, with the finding that explains them.  Compressed batches get a second
pane for the decompressed bytes, addressed from 0, as Wireshark does.

The plain form (no terminal, NO_COLOR) marks field starts in the hex with
``|`` instead of colour so the annotations stay readable.

On a terminal the layout fits its width (:class:`HexLayout`): fewer bytes per
row, annotations folded between words beside them, or under the bytes when
the room beside is too narrow.  Piped, rows hold 16 bytes (or ``--cols``) and
lines are as long as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from kafkadump.decoders.batches.model import Batch, Gap, Span
from kafkadump.objects.records import finding_object, span_object
from kafkadump.render import describe as d
from kafkadump.render.jsontext import dumps
from kafkadump.render.lines import LineWriter, terminal_safe

if TYPE_CHECKING:
    from rich.console import Console

    from kafkadump.base.findings import Finding
    from kafkadump.reports.segments import HexdumpView
    from kafkadump.sources.segment import MappedRange

PALETTE = ("cyan", "green", "yellow", "magenta", "blue", "bright_cyan", "bright_green", "bright_magenta")
UNPARSED_STYLE = "bold white on red"
CONTEXT_STYLE = "dim"

_ROW = 16
NOTE_ROOM = 32      # the narrowest annotation column kept beside the bytes
UNDER_INDENT = 10   # annotations under the bytes start under the first hex digit


class HexLayout:
    """Bytes per row and where the annotations go.

    ``width`` is the terminal's (None: piped, lines as long as they are, 16 bytes
    a row unless ``cols`` says otherwise).  On a terminal without ``cols`` a row holds
    16 bytes, or 8, 4, 2, 1 when 16 do not fit; annotations go beside the bytes when
    that leaves them ``NOTE_ROOM`` columns, else on their own lines under the bytes.
    They are folded between words to the width, never cut mid-word.
    """

    __slots__ = ("width", "cols", "note_col", "beside")

    def __init__(self, width: int | None = None, cols: int | None = None) -> None:
        if cols is None:
            cols = _ROW if width is None else _fitting_cols(width)
        self.width = width
        self.cols = cols
        self.note_col = _row_width(cols) + 1          # where an annotation beside the row starts
        self.beside = width is None or width - self.note_col >= NOTE_ROOM


def _row_width(cols: int) -> int:
    """Columns of a row without its annotation: offset, hex, text column."""
    return 13 + 4 * cols


def _fitting_cols(width: int) -> int:
    """The most bytes a row holds within ``width``: 16, 8, 4, 2 or 1."""
    return next((c for c in (16, 8, 4, 2) if _row_width(c) <= width), 1)


def fold(text: str, room: int, later_room: int | None = None) -> list[str]:
    """``text`` folded between words: a first line of at most ``room`` cells (its leading
    spaces kept), then lines of at most ``later_room`` (default ``room``).  A word wider than
    the room alone is cut: nothing else keeps the line within the terminal."""
    from rich.cells import cell_len

    if cell_len(text) <= room:
        return [text]
    lines: list[str] = []
    body = text.lstrip(" ")
    cur = text[:len(text) - len(body)]
    limit = room
    for word in body.split(" "):
        cand = f"{cur} {word}" if cur.strip() else cur + word
        if cell_len(cand) <= limit:
            cur = cand
            continue
        if cur.strip():
            lines.append(cur.rstrip())
            limit = room if later_room is None else later_room
            cur = word
        else:
            cur = cand
        while cell_len(cur) > limit:
            cut = _cut(cur, limit)
            lines.append(cur[:cut])
            limit = room if later_room is None else later_room
            cur = cur[cut:]
    if cur.strip():
        lines.append(cur.rstrip())
    return lines or [""]


def _cut(word: str, room: int) -> int:
    from rich.cells import cell_len

    n = 1
    while n < len(word) and cell_len(word[:n + 1]) <= room:
        n += 1
    return n


def _widest_word(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(w) for w in text.split(" ")), default=0)


def leaf_spans(spans: list, expand_records: bool) -> list:
    """The spans to show: leaves only; without ``expand_records`` each record is one block."""
    out = []
    blocks: dict = {}
    for s in spans:
        prefix = None if expand_records or s.raw == "unparsed" else _record_prefix(s.path)
        if prefix is None:
            out.append(s)
            continue
        key = (prefix, s.source)
        blk = blocks.get(key)
        if blk is None:
            blk = blocks[key] = Span(prefix, s.offset, s.length, None, s.source, raw="block")
            out.append(blk)
        else:
            blk.length = max(blk.offset + blk.length, s.offset + s.length) - blk.offset
    return out


def _record_prefix(path: str) -> str | None:
    for marker in (".records[", ".inner["):
        i = path.find(marker)
        if i >= 0:
            j = path.find("]", i)
            return path[: j + 1]
    return None


def describe_span(s: Span, batch: Batch | None) -> str:
    """``name = value`` for the annotation column."""
    name = s.path.split(".", 1)[1] if "." in s.path else s.path
    v = s.value
    if s.raw == "unparsed":
        return f"{'' if name == 'unparsed' else name + ': '}unparsed ({s.length} bytes)"
    if s.raw == "block":
        return f"{name} ({s.length} bytes; --records to expand)"
    if name == "attributes" and isinstance(v, int) and batch is not None:
        width = 4 if s.length == 2 else 2
        return f"attributes 0x{v:0{width}x} = {d.describe_attributes(v, batch.magic)}"
    if name == "crc" and batch is not None and isinstance(batch, Batch) and batch.computed_crc is not None:
        verdict = "ok" if batch.crc_valid else "MISMATCH"
        kind = "crc32c" if batch.magic >= 2 else "crc32"
        return f"crc {v} (computed {kind} {batch.computed_crc}: {verdict})"
    if name.endswith("crc") and isinstance(v, int):
        return f"{name} {v}"
    if isinstance(v, (bytes, bytearray)):
        return f"{name} = {d.preview(bytes(v), 48)}"
    if name.endswith("Timestamp") or name.endswith("timestamp"):
        if isinstance(v, int) and v >= 0:
            return f"{name} = {v} ({d.iso_ms(v)})"
    return f"{name} = {v}"


_VARINT_FIELDS = ("length", "timestampDelta", "offsetDelta", "keyLength", "valueLength", "headersCount")


def _varint_note(s: Span, pane: Pane) -> str:
    """Raw bytes and zig-zag form of a record's varint fields (v2 records only)."""
    leaf = s.path.rsplit(".", 1)[-1]
    if leaf not in _VARINT_FIELDS or ".records[" not in s.path or not isinstance(s.value, int):
        return ""
    raw = pane.data[s.offset - pane.base: s.offset - pane.base + s.length]
    zz = ((s.value << 1) ^ (s.value >> 63)) & 0xFFFFFFFFFFFFFFFF
    return f"  [varint {raw.hex(' ')} = zig-zag {zz}]"


class Pane:
    """One addressed byte source: the file region, or the decompressed payload."""

    def __init__(self, title: str, data: bytes | MappedRange, base: int, spans: list, source: str,
                 masked: list[tuple[str, int, int]] | None = None):
        self.title = title
        self.data = data          # the bytes shown
        self.base = base          # address of data[0]
        self.spans = sorted((s for s in spans if s.source == source), key=lambda s: (s.offset, -s.length))
        self.source = source
        # redacted bytes (--redact, secrets): shown as ** in the hex and * in the text
        self.masked = [(a, z) for src, a, z in masked or () if src == source]

    def hidden(self, i: int) -> bool:
        return any(a <= i < z for a, z in self.masked)


def tiling_errors(spans: list, start: int, end: int, source: str = "file") -> list[str]:
    """Bytes in [start, end) covered by no span or by two: [] when the spans tile it."""
    errs = []
    pos = start
    for s in sorted((s for s in spans if s.source == source), key=lambda s: s.offset):
        if s.length == 0:
            continue
        if s.offset > pos:
            errs.append(f"gap [{pos}, {s.offset})")
        elif s.offset < pos:
            errs.append(f"overlap at {s.offset} ({s.path})")
        pos = max(pos, s.offset + s.length)
    if pos < end:
        errs.append(f"gap [{pos}, {end})")
    if pos > end:
        errs.append(f"spans run past the end to {pos}")
    return errs


def render_text(item: Batch | Gap, spans: list[Span], file_bytes: bytes | MappedRange, file_base: int, *,
                expand_records: bool = False, context: tuple[bytes, int, bytes] | None = None,
                console: Console | None = None, out: TextIO | None = None,
                masked: list[tuple[str, int, int]] | None = None, layout: HexLayout | None = None) -> None:
    """Print the annotated dump of one item.

    ``file_bytes`` are the item's bytes, starting at ``file_base``;
    ``context`` is ``(before, before_base, after)`` raw bytes shown dimmed.
    With a rich ``console`` bytes are coloured; else ``out.write`` gets plain text.
    """
    leaves = leaf_spans(spans, expand_records)
    title = _title(item)
    panes = [Pane(title, file_bytes, file_base, leaves, "file", masked)]
    dec = getattr(item, "decompressed", None)
    if dec is not None:
        size = f"{len(dec):,}".replace(",", " ")
        panes.append(Pane(f"decompressed, {size} bytes", dec, 0, leaves, "decompressed", masked))
    before = (context[0], context[1]) if context and context[0] else None
    after = (context[2], file_base + len(file_bytes)) if context and context[2] else None
    render_panes(panes, list(item.findings), batch=item if isinstance(item, Batch) else None,
                 console=console, out=out, before=before, after=after, layout=layout)


def render_panes(panes: list[Pane], findings: list[Finding | None], *, batch: Batch | None = None,
                 console: Console | None = None, out: TextIO | None = None,
                 before: tuple[bytes, int] | None = None, after: tuple[bytes, int] | None = None,
                 layout: HexLayout | None = None) -> None:
    """The one hexdump driver: each pane's rows under its title, dimmed context bytes around
    them, and last the findings no row could show (a batch's, a frame's).  ``layout``: bytes
    per row and the width to fit (default: 16 bytes a row, lines as long as they are)."""
    emit = _Emitter(console, out, layout or HexLayout())
    if before:
        emit.plain_rows(before[0], before[1], "context before")
    for pane in panes:
        emit.header(pane.title)
        _render_pane(emit, pane, batch, findings)
    if after:
        emit.plain_rows(after[0], after[1], "context after")
    for f in findings:
        if f is not None:
            emit.folded(f"  ! {f.code.value} @{f.offset}: {f.message}", "red", 4)


def _title(item: Batch | Gap) -> str:
    if isinstance(item, Gap):
        return f"unparsed bytes at position {item.position} ({item.size} bytes)"
    kind = "record batch" if item.magic >= 2 else f"message (magic {item.magic})"
    return (f"{kind} at position {item.position}: {item.size} bytes, {item.compression}"
            + (f", offsets {item.base_offset}..{item.last_offset}" if item.base_offset is not None else ""))


class _Emitter(LineWriter):
    def __init__(self, console: Console | None, out: TextIO | None, layout: HexLayout) -> None:
        super().__init__(out, console)  # type: ignore[arg-type]
        self.layout = layout

    def folded(self, text: str, style: str | None, indent: int) -> None:
        """A line; fitting a width, folded between words (continued ``indent`` columns in)."""
        width = self.layout.width
        if width is None:
            self.line(text, style)
            return
        text = terminal_safe(text)
        pieces = fold(text, width, max(1, width - indent))
        for k, piece in enumerate(pieces):
            self.line(piece if k == 0 else " " * indent + piece, style)

    def header(self, title: str) -> None:
        self.folded(f"── {title}", "bold", 3)

    def plain_rows(self, data: bytes, base: int, label: str) -> None:
        self.folded(f"   ({label}, {len(data)} bytes)", CONTEXT_STYLE, 4)
        cols = self.layout.cols
        for i in range(0, len(data), cols):
            chunk = data[i:i + cols]
            hexs = " ".join(f"{b:02x}" for b in chunk)
            self.line(f"{base + i:08x}  {hexs:<{3 * cols - 1}}  |{_ascii(chunk)}|", CONTEXT_STYLE, fold=False)


def _ascii(chunk: bytes) -> str:
    return "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)


def _render_pane(emit: _Emitter, pane: Pane, batch: Batch | None, findings: list[Finding | None]) -> None:
    data = pane.data
    base = pane.base
    n = len(data)
    # byte -> span index: the last span (by index) covering it, found per row among the spans
    # that reach into the row (no table of every byte: a decompressed pane may hold 64 MiB)
    spans = pane.spans
    by_index = 0   # the spans are in order of their offsets: those before it have begun
    active: list[int] = []
    step = emit.layout.cols
    row_start = (base // step) * step
    pos = row_start
    end = base + n
    # spans by start, walked with the rows (not every span for every row)
    starts = sorted(range(len(spans)), key=lambda k: (spans[k].offset, k))
    nxt = 0
    while nxt < len(starts) and spans[starts[nxt]].offset < pos:
        nxt += 1
    # the findings this pane shows, by where (a row takes its own, not every finding for every row)
    placed = []
    for j, f in enumerate(findings):
        if f is None or (pane.source == "file") != (f.source_offset is None):
            continue
        where = f.offset if pane.source == "file" else f.source_offset
        if where is not None:
            placed.append((where, j))
    placed.sort()
    here = 0
    last_key: tuple | None = None   # what the last row shown looks like (None: nothing to repeat)
    while pos < end:
        while by_index < len(spans) and spans[by_index].offset < pos + step:
            active.append(by_index)
            by_index += 1
        active = [k for k in active if spans[k].offset + spans[k].length > pos]
        same = 0 if last_key is None else _repeated_rows(last_key, pane, pos, step, active, starts, nxt, placed, here)
        if same * step >= REPEAT_MIN_BYTES:   # the same bytes of the same field, nothing to say: one line
            emit.folded(_repeat_line(same, step), CONTEXT_STYLE, 9)
            pos += same * step
            continue
        cells: list[tuple[int, int, int] | None] = []  # (position, byte, owning span index) or None
        first = max(pos, base)
        row_bytes = data[first - base:min(pos + step, end) - base]   # one read a row (data may be a file window)
        for i in range(pos, pos + step):
            if i < base or i >= end:
                cells.append(None)
            else:
                own = -1
                for k in active:
                    sk = spans[k]
                    if k > own and sk.offset <= i < sk.offset + sk.length:
                        own = k
                cells.append((i, -1 if pane.masked and pane.hidden(i) else row_bytes[i - first], own))
        notes = []
        row = []
        while nxt < len(starts) and pane.spans[starts[nxt]].offset < pos + step:
            row.append(starts[nxt])
            nxt += 1
        for idx in sorted(row):
            s = pane.spans[idx]
            notes.append((terminal_safe(describe_span(s, batch) + _varint_note(s, pane)), idx))
        while here < len(placed) and placed[here][0] < pos:
            here += 1   # (before the pane's first row: said after the rows)
        while here < len(placed) and placed[here][0] < pos + step:
            j = placed[here][1]
            f = findings[j]
            if f is not None:
                notes.append((terminal_safe(f"! {f.code.value}: {f.message}"), -2))
                findings[j] = None
            here += 1
        last_key = _repeat_key(cells, notes, spans)
        _emit_row(emit, pos, cells, notes, pane)
        pos += step


def _repeat_key(cells: list[tuple[int, int, int] | None], notes: list[tuple[str, int]], spans: list) -> tuple | None:
    """What makes a row look as it does when it holds no annotation and no field starts in it (the
    same bytes of the same field: a run of such rows is shown once, then ``*``, as ``hexdump -C``
    shows a zero run); None for a row that is always shown."""
    if notes or cells[0] is None or cells[-1] is None:
        return None
    pos, own = cells[0][0], cells[0][2]
    if any(c is None or c[2] != own for c in cells) or (own >= 0 and spans[own].offset > pos):
        return None
    return own, bytes(255 if c[1] < 0 else c[1] for c in cells if c is not None), tuple(c[1] < 0 for c in cells if c)


_BLOCK_BYTES = 4096   # bytes compared at once in a run of repeated rows (a copy this size, no more)
# a run of rows like the last one shown is one line (as ``hexdump -C``'s ``*``) from this many bytes on;
# shorter runs (a value's repeated bytes) are shown row by row
REPEAT_MIN_BYTES = 1024


def _repeated_rows(last_key: tuple, pane: Pane, pos: int, step: int, active: list[int], starts: list[int], nxt: int,
                   placed: list[tuple[int, int]], here: int) -> int:
    """How many rows from ``pos`` on are more like the last one shown (``last_key``), told without
    building their cells: whole, unmasked, no field starting and no finding in them, their bytes
    those of the last row, all still in the last row's field."""
    if pane.masked or pos < pane.base:
        return 0
    limit = pane.base + len(pane.data)
    if nxt < len(starts):
        limit = min(limit, pane.spans[starts[nxt]].offset)
    if here < len(placed):
        limit = min(limit, placed[here][0])
    own = last_key[0]
    if own < 0:
        if active:
            return 0
    else:
        if any(k > own for k in active):
            return 0
        limit = min(limit, pane.spans[own].offset + pane.spans[own].length)
    rows = max(0, (limit - pos) // step)
    if rows * step < REPEAT_MIN_BYTES:
        return 0
    row = last_key[1]
    block_rows = max(1, _BLOCK_BYTES // step)
    block = row * block_rows
    done = 0
    while done < rows:
        n = min(block_rows, rows - done)
        at = pos + done * step - pane.base
        if bytes(pane.data[at:at + n * step]) == (block if n == block_rows else row * n):
            done += n
            continue
        while done < rows and bytes(pane.data[at:at + step]) == row:   # the block's repeats, then the first other row
            done += 1
            at += step
        break
    return done


def _repeat_line(rows: int, step: int) -> str:
    return f"*        ({rows:,} more row{'s' if rows != 1 else ''} like the one above: {rows * step:,} bytes)"


def _emit_row(emit: _Emitter, pos: int, cells: list[tuple[int, int, int] | None], notes: list[tuple[str, int]],
              pane: Pane) -> None:
    layout = emit.layout
    console = emit.console
    if console is None:
        # plain: "|" before the first byte of a field, "!" before unparsed bytes
        parts = []
        for c in cells:
            if c is None:
                parts.append("   ")
                continue
            i, byte, own = c
            unparsed = own < 0 or pane.spans[own].raw == "unparsed"
            sep = "!" if unparsed else ("|" if pane.spans[own].offset == i else " ")
            parts.append(f"{sep}{_hex(byte)}")
        hexs = "".join(parts)
        asc = "".join(" " if c is None else _char(c[1]) for c in cells)
        row = f"{pos:08x} {hexs}  |{asc}|"
        if layout.width is None:
            emit.line(f"{row} {notes[0][0] if notes else ''}".rstrip(), fold=False)
            for note, _ in notes[1:]:
                emit.line(" " * (layout.note_col - 2) + note, fold=False)
            return
        placed = _placed_notes(layout, notes)
        if placed and placed[0][0] == layout.note_col:
            row += " " + placed.pop(0)[1]
        emit.line(row, fold=False)
        for indent, piece, _ in placed:
            emit.line(" " * indent + piece, fold=False)
        return
    from rich.text import Text

    t = Text(f"{pos:08x}  ")
    asc_text = Text()
    for c in cells:
        if c is None:
            t.append("   ")
            asc_text.append(" ")
            continue
        i, byte, own = c
        style = _style(pane, own)
        t.append(_hex(byte), style=style)
        t.append(" ")
        asc_text.append(_char(byte), style=style)
    t.append(" |")
    t.append_text(asc_text)
    t.append("|")
    if layout.width is None:
        t.append(" ")
        if notes:
            t.append(notes[0][0], style=_note_style(pane, notes[0][1]))
        console.print(t, highlight=False, soft_wrap=True)
        for note, idx in notes[1:]:
            line = Text(" " * (layout.note_col - 1))
            line.append(note, style=_note_style(pane, idx))
            console.print(line, highlight=False, soft_wrap=True)
        return
    placed = _placed_notes(layout, notes)
    if placed and placed[0][0] == layout.note_col:
        _, piece, idx = placed.pop(0)
        t.append(" ")
        t.append(piece, style=_note_style(pane, idx))
    console.print(t, highlight=False, soft_wrap=True)
    for indent, piece, idx in placed:
        line = Text(" " * indent)
        line.append(piece, style=_note_style(pane, idx))
        console.print(line, highlight=False, soft_wrap=True)


def _placed_notes(layout: HexLayout, notes: list[tuple[str, int]]) -> list[tuple[int, str, int]]:
    """A row's annotations fitted to the width: ``(indent, piece, note index)`` a line.  Beside the
    bytes (folded between words) when there is room for the note's widest word, else under them
    (left of the first hex digit when a word needs it: only a word wider than the terminal is cut);
    a note's later lines are indented two more columns."""
    assert layout.width is not None, "only a width is fitted"
    room = layout.width - layout.note_col
    placed: list[tuple[int, str, int]] = []
    for note, idx in notes:
        widest = _widest_word(note)
        if layout.beside and widest <= room - 2:
            indent, width, more = layout.note_col, room, 2
        else:   # under the bytes; further left when a word (a long field path) needs the room
            indent = max(0, min(UNDER_INDENT, layout.width - widest))
            width = layout.width - indent
            more = max(0, min(2, width - widest))
        pieces = fold(note, width, max(1, width - more))   # a note's later lines further in
        placed += [(indent + (more if k else 0), piece, idx) for k, piece in enumerate(pieces)]
    return placed


def _hex(byte: int) -> str:
    """A byte in the hex column: ``**`` for a masked (redacted) one."""
    return "**" if byte < 0 else f"{byte:02x}"


def _char(byte: int) -> str:
    """A byte in the text column: ``*`` masked, ``.`` not printable ASCII."""
    return "*" if byte < 0 else (chr(byte) if 32 <= byte < 127 else ".")


def _style(pane: Pane, own: int) -> str:
    if own < 0 or pane.spans[own].raw == "unparsed":
        return UNPARSED_STYLE
    return PALETTE[own % len(PALETTE)]


def _note_style(pane: Pane, idx: int) -> str:
    if idx == -2:
        return "bold red"
    return _style(pane, idx)


def span_json(s: Span, encoding: str = "hex") -> str:
    """:func:`~kafkadump.objects.records.span_object` as a JSON line's text."""
    return dumps(span_object(s, encoding))


# --- the hexdump command's report (a kafkadump.reports.segments.HexdumpView) -------------------------------

def write_json(view: HexdumpView, out: TextIO, encoding: str = "hex") -> None:
    """A line per leaf field (path, offset, length, value, source), then a line per finding."""

    for sp in leaf_spans(view.spans, expand_records=True):
        out.write(span_json(sp, encoding) + "\n")
    for f in view.decoded.findings:
        out.write(dumps(finding_object(f)) + "\n")

def write_text(view: HexdumpView, out: TextIO, console: Console | None = None, expand_records: bool = False,
               layout: HexLayout | None = None) -> None:
    """The annotated hexdump of the view's item, with its context bytes."""
    render_text(view.decoded, view.spans, view.raw, view.start, expand_records=expand_records,
                context=(view.before, view.start - len(view.before), view.after), console=console, out=out,
                masked=view.masked, layout=layout)
