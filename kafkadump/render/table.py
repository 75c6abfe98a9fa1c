"""Streaming tables: aligned rows printed as they are decoded.

A rich ``Table`` must hold every row before it renders (and renders about
3 000 rows/s), so a million-record listing cannot be one.  Instead the
columns have fixed widths chosen up front; each row is printed at once.
On a terminal rows are styled with rich (damage in red); when piped they
are plain text with no escape codes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TextIO

from kafkadump.base.errors import UsageError
from kafkadump.base.values import FrozenValue
from kafkadump.decoders.batches.model import Batch, Gap, Record
from kafkadump.render import describe as d
from kafkadump.render import generated_cells
from kafkadump.render.lines import LineWriter, terminal_safe
from kafkadump.render.record_cells import HEADER_PREVIEW, PREVIEW_CHARS

if TYPE_CHECKING:
    from rich.console import Console

    from kafkadump.decoders.internal_topics.decoded import DecodedRecord
    from kafkadump.decoders.payloads.view import RecordView
    from kafkadump.reports.segments import CrcTotals, FileStart, RecordsOf


class Column(FrozenValue):
    """A table column: its title and width (0: as wide as its text), right-aligned or not;
    ``priority`` (lower: kept first on a narrow terminal) and, for a value column that
    narrows and widens with the terminal, ``min_width``; a name whose end tells it apart (a
    partition's number, a segment's base offset) is cut in the middle (``name``); the text of a last
    column that holds what a person came for (a decoded record) folds under itself on a terminal
    instead of being cut (``fold``)."""

    __match_args__ = ("title", "width", "right", "priority", "min_width", "name", "fold")
    title: str
    width: int
    right: bool
    priority: int
    min_width: int
    name: bool
    fold: bool

    def __init__(self, title: str, width: int, right: bool = False, priority: int = 50, min_width: int = 0,
                 name: bool = False, fold: bool = False) -> None:
        self._set(title=title, width=width, right=right, priority=priority, min_width=min_width, name=name,
                  fold=fold)


# the field registry's table columns (objects/fields.py)
BATCH_COLUMNS = tuple(Column(*spec) for spec in generated_cells.BATCH_COLUMN_SPECS)
RECORD_COLUMNS = tuple(Column(*spec) for spec in generated_cells.RECORD_COLUMN_SPECS)


# records of internal topics (--decode): the decoded record as one line of text
DECODED_COLUMNS = (
    Column("offset", 11, True, 1), Column("timestamp", 24, False, 2), Column("record", 0, False, 3, 20, fold=True),
)

# how much of a key, value or header value a cell can show at most on a terminal


# ... and in plain output, which cuts nothing
WHOLE = sys.maxsize


class TableLayout(FrozenValue):
    """Which columns a table shows and how wide: ``width`` is the terminal's (None: the stable
    layout of piped output, every column at its width), ``wide`` shows every column, ``names``
    picks columns by title; ``tsv`` (``--fields``): those columns as tab-separated values."""

    __match_args__ = ("width", "wide", "names", "tsv")
    width: int | None
    wide: bool
    names: tuple[str, ...] | None
    tsv: bool

    def __init__(self, width: int | None = None, wide: bool = False, names: tuple[str, ...] | None = None,
                 tsv: bool = False) -> None:
        self._set(width=width, wide=wide, names=names, tsv=tsv)


def fit_columns(columns: Sequence[Column], layout: TableLayout | None) -> list[tuple[int, Column]]:
    """``(index, column)`` of the columns to show, widths set for ``layout``."""
    if layout is not None and layout.names:
        return _named(columns, layout.names)
    if layout is None or layout.width is None:
        return list(enumerate(columns))
    kept = list(range(len(columns))) if layout.wide else _by_priority(columns, layout.width)
    cols = _widened([(i, columns[i]) for i in kept], layout.width)
    return cols if layout.wide else _last_in_room(cols, layout.width)


def _last_in_room(cols: list[tuple[int, Column]], width: int) -> list[tuple[int, Column]]:
    """On a terminal, a last column as wide as its text gets the room the others leave (at least
    its title's), its text folding under itself: no row is wider than the terminal."""
    if not cols or cols[-1][1].width:
        return cols
    i, last = cols[-1]
    used = sum(c.width for _, c in cols[:-1]) + 2 * (len(cols) - 1)
    return [*cols[:-1], (i, last.replace(width=max(width - used, _narrowest(last)), fold=True))]


# ASCII names of the columns whose titles are not (the record JSON's field names)
ASCII_NAMES = {"Δoff": "offsetDelta", "Δts": "timestampDelta"}


def _column_index(columns: Sequence[Column]) -> dict[str, int]:
    """A column's index by its name, lower case (the ASCII name of a column whose title is not)."""
    index = {c.title.lower(): i for i, c in enumerate(columns)}
    index.update((ASCII_NAMES[c.title].lower(), i) for i, c in enumerate(columns) if c.title in ASCII_NAMES)
    return index


def left_out(columns: Sequence[Column], layout: TableLayout | None, also: Sequence[Sequence[Column]]) -> list[str]:
    """The names ``--columns``/``--fields`` give that this table lacks and another table of the same
    command (``also``) has: this table is then left out, not refused (``offsets --fields
    partition,earliest``: the partitions' table, not the groups')."""
    if layout is None or not layout.names or not also:
        return []
    mine = _column_index(columns)
    missing = [n for n in layout.names if n.lower() not in mine]
    if not missing:
        return []
    known = set(mine).union(*(_column_index(other) for other in also))
    return missing if all(n.lower() in known for n in layout.names) else []


def _named(columns: Sequence[Column], names: tuple[str, ...]) -> list[tuple[int, Column]]:
    index = _column_index(columns)
    unknown = [n for n in names if n.lower() not in index]
    if unknown:
        known = ", ".join(ASCII_NAMES.get(c.title, c.title) for c in columns)
        raise UsageError(f"--columns/--fields: no column {', '.join(unknown)} (one of {known})")
    return [(index[n.lower()], columns[index[n.lower()]]) for n in names]


# on a terminal, the narrowest a last column as wide as its text is shown (narrower: left out)
AS_WIDE_AS_TEXT_MIN = 24


def _narrowest(c: Column) -> int:
    return c.min_width or c.width or max(len(c.title), AS_WIDE_AS_TEXT_MIN)


def _by_priority(columns: Sequence[Column], width: int) -> list[int]:
    """The most important columns that fit ``width`` at their narrowest, in table order."""
    kept: list[int] = []
    used = 0
    for i in sorted(range(len(columns)), key=lambda i: (columns[i].priority, i)):
        need = _narrowest(columns[i]) + (2 if kept else 0)
        if used + need > width:
            break
        kept.append(i)
        used += need
    return sorted(kept) or [min(range(len(columns)), key=lambda i: columns[i].priority)]


def _widened(cols: list[tuple[int, Column]], width: int) -> list[tuple[int, Column]]:
    """Value columns share the room the fixed ones leave, in proportion to their usual widths."""
    flex = [c for _, c in cols if c.min_width]
    if not flex:
        return cols
    fixed = sum(c.width or _narrowest(c) for _, c in cols if not c.min_width) + 2 * (len(cols) - 1)
    room = max(width - fixed - sum(c.min_width for c in flex), 0)
    weights = sum(c.width or c.min_width for c in flex)
    out = []
    for i, c in cols:
        if c.min_width:
            c = c.replace(width=c.min_width + room * (c.width or c.min_width) // weights)
        out.append((i, c))
    return out


def _cell(text: str, col: Column) -> str:
    if col.width == 0:  # the last column: as wide as its text
        return text
    if len(text) > col.width and not col.right:
        text = cut_middle(text, col.width) if col.name else text[: col.width - 1] + "…"
    return text.rjust(col.width) if col.right else text.ljust(col.width)


def _cell_fitted(text: str, width: int, right: bool) -> str:
    """``text`` (wide characters in it: CJK, emoji take two cells) cut or padded to ``width``
    terminal cells."""
    from rich.cells import cell_len

    cells = cell_len(text)
    if cells > width:
        kept, used = [], 0
        for ch in text:
            w = cell_len(ch)
            if used + w > width - 1:
                break
            kept.append(ch)
            used += w
        text, cells = "".join(kept) + "…", used + 1
    pad = " " * (width - cells)
    return pad + text if right else text + pad


def cut_middle(text: str, width: int) -> str:
    """``text`` cut to ``width`` in the middle: its end (a partition's number, a segment's base offset,
    the last part of a path) kept whole when it fits in two thirds of the width, then as much of its start."""
    if len(text) <= width:
        return text
    if width < 3:
        return text[:width]
    last = max(text.rfind("/"), text.rfind("-", 0, len(text) - 1))
    end = len(text) - last if last >= 0 else 0
    tail = min(max(end, (width - 1) // 2), (2 * (width - 1)) // 3)
    head = width - 1 - tail
    return text[:head] + "…" + text[len(text) - tail:]


class TableStream(LineWriter):
    """Prints a header once, then rows as they come."""

    def __init__(self, out: TextIO, columns: Sequence[Column], console: Console | None = None,
                 layout: TableLayout | None = None, also: Sequence[Sequence[Column]] = ()) -> None:
        """``also``: the command's other tables (see :func:`left_out`)."""
        super().__init__(out, console)
        self.left_out = left_out(columns, layout, also)
        self._titles = ", ".join(ASCII_NAMES.get(c.title, c.title) for c in columns)
        self._said_left_out = False
        self.shown = [] if self.left_out else fit_columns(columns, layout)
        self.columns = [c for _, c in self.shown]
        self._fits = [(i, c.width, c.right) for i, c in self.shown]   # what row() needs of each column
        # --fields: the columns as tab-separated values, no header, notes on stderr
        self.tsv = layout is not None and layout.tsv
        self._header = self.tsv
        # the usual row (a cell for every column, printable ASCII, no cell wider than its column) in
        # one %-format of the cells in shown order, each padded as row() pads it (``%-15s`` pads
        # str(cell) as ``ljust(15)``, ``%5s`` as ``rjust(5)``)
        self._pick = [i for i, _ in self.shown]
        self._cells = max(self._pick, default=-1) + 1   # the cells a row needs for that
        self._percent = "  ".join(f"%{'' if c.right else '-'}{c.width}s" if c.width else "%s" for c in self.columns)
        self._every = self._pick == list(range(len(self._pick)))   # every cell shown, in order
        self._fixed = sum(c.width for c in self.columns) + 2 * (len(self.columns) - 1)
        self._as_wide = [k for k, c in enumerate(self.columns) if not c.width]   # columns as wide as their text
        self._names = {i for i, c in self.shown if c.name}   # cells cut in the middle
        self._whole: list[str] = []   # the whole names of the row being written, for lines under it
        # plain output (piped, or no terminal styling) cuts no cell: a value is written whole, so that
        # grep finds in the table what it finds in --json (the columns after a long cell move right)
        self.cuts = console is not None
        # on a terminal, a folding last column's text folds under itself instead of being cut
        last = self.columns[-1] if self.columns else None
        self._fold_at = None if last is None or not (last.fold and last.width) else \
            sum(c.width for c in self.columns[:-1]) + 2 * (len(self.columns) - 1)
        self._more_lines: list[str] = []   # the last cell's further lines for the row being written

    def header(self) -> None:
        if not self._header and not self.left_out:
            self._header = True
            self.line("  ".join(_cell(c.title, c) for c in self.columns).rstrip(), "bold", fold=False)

    def row(self, cells: Sequence[object], style: str | None = None) -> None:
        if self.left_out:
            if not self._said_left_out:
                self._said_left_out = True
                self.note(f"rows with no column {', '.join(self.left_out)} (a table of {self._titles}) are left out: "
                          f"--json has them", "dim")
            return
        if self.tsv:
            n = len(cells)
            self.out.write("\t".join(terminal_safe(str(cells[i])) if i < n else "" for i in self._pick) + "\n")
            return
        if not self._header:
            self.header()
        line = self.usual_line(cells)
        if line is not None:
            self._printable_line(line, style)
            return
        self.line(self.fitted_line(cells), style, fold=False)
        for more in self._more_lines:
            self.line(more, style, fold=False)
        for whole in self._whole:
            self.line(whole, style)
        self._more_lines.clear()
        self._whole.clear()

    def usual_line(self, cells: Sequence[object]) -> str | None:
        """:meth:`fitted_line` of the usual row (a cell for every column shown, printable ASCII, no
        cell wider than its column) in one format call; None for any other row."""
        n = len(cells)
        if n < self._cells:
            return None
        shown = tuple(cells) if self._every and n == self._cells else tuple(cells[i] for i in self._pick)
        line = self._percent % shown   # (the padding is spaces: the line is printable ASCII when the cells are)
        if not (line.isascii() and line.isprintable()):
            return None
        # longer than the widths add up to: a cell wider than its column (cut, or pushing a
        # right-aligned one)
        width = self._fixed
        for k in self._as_wide:
            width += len(str(shown[k]))
        return line.rstrip() if len(line) == width else None

    def fitted_line(self, cells: Sequence[object]) -> str:
        """A row's line: each cell escaped, then fitted to its column (cut with an ellipsis, or padded)."""
        n = len(cells)
        texts = []
        for i, width, right in self._fits:
            text = cells[i] if i < n else ""
            if type(text) is not str:
                text = str(text)
            # escaped before it is fitted, so that an escape sequence in a cell cannot push the columns
            # (printable ASCII, most cells, has nothing to escape: not translated)
            if not (text.isascii() and text.isprintable()):
                text = terminal_safe(text)
                if width and self.cuts and not text.isascii():   # wide characters: fitted by terminal cells
                    texts.append(_cell_fitted(text, width, right))
                    continue
            if width:   # fitted as _cell fits it (inline: a long table calls this per cell)
                if right:
                    text = text.rjust(width)
                elif len(text) > width:
                    text = self._cut(i, text, width) if self.cuts else text
                else:
                    text = text.ljust(width)
            texts.append(text)
        return "  ".join(texts).rstrip()

    def _cut(self, i: int, text: str, width: int) -> str:
        """A cell too wide for its column, on a terminal: the last column's text folded under
        itself, a name cut in the middle and kept whole for a line of its own under the row (names
        that differ in the middle stay told apart), any other cell cut."""
        if self._fold_at is not None and i == self._fits[-1][0]:
            import textwrap

            pieces = textwrap.wrap(text, width, break_on_hyphens=False) or [text[:width]]
            self._more_lines.extend(" " * self._fold_at + p for p in pieces[1:])
            return pieces[0]
        if i not in self._names:
            return text[:width - 1] + "…"
        self._whole.append("    " + text)
        return cut_middle(text, width)

    def _printable_line(self, text: str, style: str | None) -> None:
        """:meth:`line` (not folded) of printable ASCII text: nothing to escape, written as it is."""
        if self.console is not None:
            before, after = self._codes.get(style) or self._style_codes(style)
            self.console.file.write(before + text + after + "\n")
        else:
            self.out.write(text + "\n")

    def note(self, text: str, style: str | None = None) -> None:
        self.line(text, style)

    def line(self, text: str, style: str | None = None, fold: bool = True) -> None:
        if self.tsv:   # tab-separated values hold rows alone: any other line (a note, a command) is a diagnostic
            sys.stderr.write(terminal_safe(text) + "\n")
            return
        super().line(text, style, fold)


def batch_cells(b: Batch) -> list[object]:
    """A batch's cells (the registry's columns: :data:`BATCH_COLUMNS`)."""
    return generated_cells.batch_cells(b)


def batch_style(b: Batch) -> str | None:
    if any(f.severity.value == "error" for f in b.findings):
        return "red"
    if b.findings:
        return "yellow"
    if b.is_control:
        return "cyan"
    return None


def findings_lines(item: Batch | Gap | DecodedRecord) -> list[str]:
    return [f"  ! {f.code.value} @{f.offset}"
            + (f" (+{f.source_offset} decompressed)" if f.source_offset is not None else "")
            + f": {f.message}" for f in item.findings]


def gap_line(g: Gap) -> str:
    return f"{g.position:>10}  {'':>11}  {'':>11}  {g.size:>7}  (not a batch)"


def record_cells(r: Record, view: RecordView | None = None, preview: int = PREVIEW_CHARS,
                 header_preview: int = HEADER_PREVIEW) -> list[object]:
    """A record's cells (the registry's columns: :data:`RECORD_COLUMNS`): key, value and header values
    shown up to ``preview`` / ``header_preview`` characters (:data:`WHOLE` for plain output, which cuts
    nothing)."""
    return generated_cells.record_cells(r, view, preview, header_preview)


def decoded_record_cells(r: Record, dec: DecodedRecord) -> list[object]:
    """offset, timestamp and the one-line summary of a decoded internal-topic record."""
    from kafkadump.render.internal_records import summary

    return [r.offset, d.iso_ms(r.timestamp), summary(dec)]


def gap_cells(g: Gap) -> list[object]:
    return [g.position, "-", "-", g.size, "-", "-", "(not a batch)", "", "", "", "", "", "", "", "BAD"]


def verify_line(item: Batch | Gap) -> str:
    """One line per bad batch/message/gap for verify-crc."""
    if isinstance(item, Gap):
        codes = ",".join(sorted({f.code.value for f in item.findings}))
        return f"position: {item.position} size: {item.size} not-a-batch: {codes}"
    head = (f"position: {item.position} size: {item.size} magic: {item.magic} "
            f"baseOffset: {item.base_offset} lastOffset: {item.last_offset} "
            f"storedCrc: {item.crc} computedCrc: {item.computed_crc} crcValid: {str(item.crc_valid).lower()}")
    extra = "; ".join(f"{f.code.value}@{f.offset}: {f.message}" for f in item.findings
                      if f.code.value != "crc-mismatch")
    return head + (f"  [{extra}]" if extra else "")


# --- whole reports (items from kafkadump.reports.segments) ------------------------------------------------

def write_batch_report(items: Iterable[FileStart | Batch | Gap], out: TextIO, console: Console | None = None,
                       layout: TableLayout | None = None) -> None:
    """``batches`` as a table: a header per file (named when there are several), a row per item."""
    from kafkadump.reports.segments import FileStart

    t: TableStream | None = None
    where = ""
    for item in items:
        if isinstance(item, FileStart):
            t = TableStream(out, BATCH_COLUMNS, console, layout)
            where = _where(item)
            if where:
                t.note(f"== {item.path}", "bold")
            continue
        assert t is not None, "a file's items come after its FileStart"
        if isinstance(item, Gap):
            t.row(gap_cells(item), "red")
            for line in findings_lines(item):
                t.note(where + line, "red")
        else:
            t.row(batch_cells(item), batch_style(item))
            for line in findings_lines(item):
                t.note(where + line, "yellow")


def _where(start: FileStart) -> str:
    """What a problem line starts with: its file, when there are several."""
    return f"{start.path}: " if start.files > 1 else ""


def write_record_report(items: Iterable[FileStart | Gap | RecordsOf], out: TextIO,
                        console: Console | None = None, layout: TableLayout | None = None) -> None:
    """``records`` as a table: findings as notes, a row per kept record (decoded ones as one line)."""
    from kafkadump.reports.segments import FileStart

    t: TableStream | None = None
    where = ""
    for item in items:
        if isinstance(item, FileStart):
            t = TableStream(out, DECODED_COLUMNS if item.decoded else RECORD_COLUMNS, console, layout,
                            (RECORD_COLUMNS, DECODED_COLUMNS))
            where = _where(item)
            if where:
                t.note(f"== {item.path}", "bold")
            continue
        assert t is not None, "a file's items come after its FileStart"
        batch = item if isinstance(item, Gap) else item.batch
        for line in findings_lines(batch):
            t.note(f"{where}{batch.position}:" + line, "red")
        if isinstance(item, Gap):
            continue
        if item.decoded is None:
            views = item.views if item.views is not None else [None] * len(item.records)
            preview, header_preview = (PREVIEW_CHARS, HEADER_PREVIEW) if t.cuts else (WHOLE, WHOLE)
            for r, v in zip(item.records, views):
                t.row(record_cells(r, v, preview, header_preview), "cyan" if r.control is not None else None)
            continue
        for r, dr in zip(item.records, item.decoded):
            t.row(decoded_record_cells(r, dr), "yellow" if dr.findings else "cyan" if r.control is not None else None)
            for line in findings_lines(dr):
                t.note(where + line, "yellow")


def write_crc_report(items: Iterable[FileStart | Batch | Gap | CrcTotals], out: TextIO,
                     console: Console | None = None) -> None:
    """``verify-crc`` as text: a line per bad batch, message or gap, then the totals."""
    from kafkadump.reports.segments import CrcTotals, FileStart

    where = ""
    w = LineWriter(out, console)   # on a terminal, a long line folds between words
    for item in items:
        if isinstance(item, FileStart):
            where = _where(item)
            continue
        if isinstance(item, CrcTotals):
            verdict = "all valid" if item.valid else f"{item.bad} bad"
            w.line(f"files: {item.files}  batches: {item.batches}  bytes: {item.bytes}  "
                   f"bad: {item.bad}  ({verdict})")
        else:
            w.line(where + verify_line(item))
