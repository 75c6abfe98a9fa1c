"""The triage report as tables: one renderer for ``triage`` and ``spark triage``.

Input is the report object of :mod:`kafkadump.objects.logdir_objects` (plain dicts,
no scans, no Spark objects): partitions with their verdicts, the files'
chain of custody, every finding kept (worst first), and a closing
``verdict:`` line.  A rich table on a terminal, aligned plain text otherwise.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO, cast

from kafkadump.decoders.logfiles import names
from kafkadump.render import describe as d
from kafkadump.render.jsontext import SEPARATORS, escape_unsafe
from kafkadump.render.lines import LineWriter, terminal_safe
from kafkadump.render.table import Column, TableLayout, TableStream

if TYPE_CHECKING:
    from rich.box import Box
    from rich.console import Console
    from rich.table import Table

PARTITION_COLUMNS = (Column("partition", 40), Column("verdict", 8), Column("files", 5, True),
                     Column("segs", 4, True), Column("batches", 9, True), Column("records", 9, True),
                     Column("offsets", 23), Column("producers", 9, True), Column("openTxn", 7, True),
                     Column("aborted", 7, True), Column("crcBad", 6, True), Column("findings", 30))
FILE_COLUMNS = (Column("file", 48), Column("kind", 23), Column("size", 10, True), Column("mtime", 27),
                Column("sha256", 64), Column("contents", 44), Column("findings", 24))

_STYLE = {"errors": "bold red", "warnings": "yellow", "clean": "green", "error": "red", "warning": "yellow",
          "info": "cyan", "unreadable": "red"}


def _rel(path: str, root: str) -> str:
    base = root if os.path.isdir(root) else os.path.dirname(root)
    try:
        r = os.path.relpath(path, base)
    except ValueError:
        return path
    return path if r.startswith("..") else r


def _tail(text: str, width: int) -> str:
    """``text`` cut to ``width`` from the left: a partition's name is at the end of its path."""
    return text if len(text) <= width else "…" + text[-(width - 1):]


def _counts(fc: dict, sep: str = ",") -> str:
    return sep.join(f"{c}:{n}" for c, n in sorted(fc.items())) or "-"


def _range(a: int | None, b: int | None) -> str:
    if a is None and b is None:
        return "-"
    return f"{'?' if a is None else a}..{'?' if b is None else b}"


def file_contents(f: dict, whole: bool = False) -> str:
    """A short description of what a file holds (the report's "contents" column); a text file's
    note cut to the column unless ``whole``."""
    k = f["kind"]
    if f.get("error"):
        return f"unreadable: {f['error']}"
    if k == names.SEGMENT:
        codecs = "/".join(f.get("codecs") or {}) or "-"
        return (f"{f.get('batches', 0)} batches {f.get('records', 0)} records "
                f"{_range(f.get('firstOffset'), f.get('lastOffset'))} {codecs}")
    if k in (names.OFFSET_INDEX, names.TIME_INDEX, names.TXN_INDEX):
        return _index_contents(f)
    if k == names.PRODUCER_SNAPSHOT:
        return f"v{f.get('version')} crc {d.crc_verdict(f.get('crcValid'))}, {f.get('producers', 0)} producers"
    if k == names.KRAFT_SNAPSHOT:
        return f"{f.get('batches', 0)} batches {f.get('records', 0)} records"
    if k == names.LEADER_EPOCH_CHECKPOINT:
        eps = f.get("epochs") or []
        return f"{len(eps)} epochs" + (f", last {eps[-1][0]}@{eps[-1][1]}" if eps else "")
    if k == names.OFFSET_CHECKPOINT:
        return f"{f.get('entries', 0)} partitions"
    if k == names.PARTITION_METADATA:
        return f"topic id {f.get('topicId')}"
    if k == names.META_PROPERTIES:
        return f"v{f.get('version')} node {f.get('nodeId')} cluster {f.get('clusterId')}"
    if k == names.QUORUM_STATE:
        return f"leader {f.get('leaderId')} epoch {f.get('leaderEpoch')}"
    note = f.get("note")
    return "-" if not note else note if whole else note[:44]


def _index_contents(f: dict) -> str:
    s = f"{f.get('entries', 0)} entries"
    if f.get("zeroEntries"):
        s += f" +{f['zeroEntries']} zero"
    if f.get("checkedAgainstLog") and f["kind"] != names.TXN_INDEX:
        s += f", {f.get('verifiedEntries', 0)} verified"
        if f.get("unverifiedEntries"):
            s += f", {f['unverifiedEntries']} unverifiable (damage)"
    return s


def partition_name(p: dict, root: str, replicas: bool = False) -> str:
    """``orders-3`` (with ``(delete)``-like state); its path under the root when it is not a partition
    directory, or when the report holds partitions of several log dirs (replicas)."""
    if p.get("topic") is None or replicas:
        name = _rel(p["path"], root)
    else:
        name = f"{p['topic']}-{p['partition']}"
    if p.get("state") and not replicas:
        name += f" ({p['state']})"
    return name


def partition_cells(p: dict, root: str, replicas: bool = False) -> list:
    first, leo = p.get("firstOffset"), p.get("logEndOffset")
    return [partition_name(p, root, replicas), p["verdict"], p["files"], p["segments"], p["batches"], p["records"],
            _range(first, None if leo is None else leo - 1), p["producers"], p["openTransactions"],
            p["abortedTransactions"], p["crcFailures"], _counts(p.get("findingCounts", {}))]


def file_cells(f: dict, root: str, sep: str = ",", whole: bool = False) -> list:
    """A file's row; on a terminal its mtime to the second and the first 16 digits of its SHA-256,
    ``whole`` (piped: grep finds in the table what it finds in --json) every value as it is."""
    mtime, sha = f.get("mtime") or "-", f.get("sha256") or "-"
    return [_rel(f["file"], root), f["kind"], "-" if f.get("size") is None else f["size"],
            mtime if whole else mtime[:19], sha if whole else sha[:16], file_contents(f, whole),
            _counts(f.get("findingCounts", {}), sep)]


# the problems-first view on a terminal: what a reader needs to decide what to look at
PROBLEM_COLUMNS = (Column("partition", 40), Column("verdict", 8), Column("records", 9, True),
                   Column("offsets", 23), Column("crcBad", 6, True), Column("findings", 40))
PROBLEM_FILE_COLUMNS = (Column("file", 48), Column("kind", 23), Column("contents", 44), Column("findings", 40))


def _problem_cells(p: dict, root: str, replicas: bool) -> list:
    first, leo = p.get("firstOffset"), p.get("logEndOffset")
    return [partition_name(p, root, replicas), p["verdict"], p["records"],
            _range(first, None if leo is None else leo - 1), p["crcFailures"],
            _counts(p.get("findingCounts", {}), ", ")]


def finding_rows(report: dict) -> list[tuple]:
    """``(severity, code, file, offset, message)`` of every finding in the report, worst first."""
    rank = {"unreadable": 0, "error": 0, "warning": 1, "info": 2}
    rows = []
    root = report["path"]
    for f in report["files"]:
        if f.get("error"):   # not a finding: the totals count it as an unreadable file
            rows.append(("unreadable", "-", _rel(f["file"], root), 0, f["error"]))
        for x in f["findings"]:
            rows.append((x["severity"], x["code"], _rel(f["file"], root), x["offset"], x["message"]))
    rows.sort(key=lambda r: (rank.get(r[0], 3), r[2], r[3]))
    return rows


def summary_line(report: dict) -> str:
    """The closing line."""
    t = report["totals"]
    fs = t["findings"]
    pv = t["partitionVerdicts"]
    line = (f"verdict: {report['verdict']}  files: {t['files']}  bytes: {t['bytes']}  partitions: {t['partitions']} "
            f"(clean {pv.get('clean', 0)}, warnings {pv.get('warnings', 0)}, errors {pv.get('errors', 0)})  "
            f"segments: {t['segments']}  batches: {t['batches']}  records: {t['records']}  "
            f"findings: {fs['error']} errors, {fs['warning']} warnings, {fs['info']} info")
    if t.get("unreadableFiles"):
        line += f"  unreadable files: {t['unreadableFiles']}"
    if t.get("uncleanElections"):
        line += f"  unclean elections: {t['uncleanElections']}"
    if t.get("topicsRecreated"):
        line += f"  re-created topics: {t['topicsRecreated']}"
    if t.get("hangingTransactions"):
        line += f"  hanging transactions: {t['hangingTransactions']} (kafkadump txn: how to end them)"
    return line


def _fitted(line: str, width: int) -> str:
    """``line`` broken into lines of at most ``width`` characters between its fields (two spaces
    apart), never inside one: a terminal never wraps it."""
    out: list[str] = []
    for field in line.split("  "):
        if out and len(out[-1]) + 2 + len(field) <= width:
            out[-1] += "  " + field
        else:
            out.append(field)
    return "\n".join(out)


def _print_summary(report: dict, console: Console) -> None:
    console.print(_fitted(terminal_safe(summary_line(report)), console.width), style=_STYLE.get(report["verdict"]),
                  markup=False, highlight=False, soft_wrap=False, overflow="fold")


def render_triage_json(report: dict, out: TextIO) -> None:
    """``--json``: the report as one JSON object on one line, written a piece at a time (the text of
    a large report is never held whole), in the one JSON style."""
    for piece in json.JSONEncoder(separators=SEPARATORS, ensure_ascii=False).iterencode(report):
        out.write(escape_unsafe(piece))
    out.write("\n")


# on a terminal, without --all: how many findings are listed before "... and N more"
FINDINGS_SHOWN = 50
# ... and how many partitions and files with findings (a rich table holds its rows until it is printed)
ROWS_SHOWN = 50
_WORST_FIRST = {"errors": 0, "warnings": 1, "clean": 2}
_SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def _file_rank(f: dict) -> int:
    """0 for a file with an error finding (or unreadable), 1 with a warning, 2 with info findings only."""
    if f.get("error"):
        return 0
    return min((_SEVERITY_RANK.get(x["severity"], 3) for x in f["findings"]), default=3)


def _more(n: int, what: str) -> str:
    return f"{n:,} more {what}"


def render_triage(report: dict, out: TextIO, console: Console | None = None, files: bool = True,
                  show_all: bool = False) -> None:
    """The triage report as tables: partitions, files (chain of custody), findings, verdict.

    On a terminal (``console``) the problems come first: the verdict, then the
    partitions and files with findings, worst first, and a count of the clean
    ones; the findings list stops after :data:`FINDINGS_SHOWN`, the partition and file
    lists after :data:`ROWS_SHOWN`, and each says how many more there are.  ``show_all`` (and plain output) lists everything, in order.
    """
    root = report["path"]
    replicas = len({p.get("logDir") for p in report["partitions"] if p.get("logDir")}) > 1
    if console is not None and not show_all:
        _problems_first(report, console, root, replicas, files)
        return
    rows_p = [partition_cells(p, root, replicas) for p in report["partitions"]]
    rows_f = [file_cells(f, root, whole=console is None) for f in report["files"]] if files else []
    rows_x = finding_rows(report)
    if console is not None:
        _rich_triage(report, console, rows_p, rows_f, rows_x)
        return
    if rows_p:
        t = TableStream(out, PARTITION_COLUMNS)
        for r in rows_p:
            t.row(r)   # piped: names whole (a table cuts no cell)
        out.write("\n")
    if rows_f:
        t = TableStream(out, FILE_COLUMNS)
        for r in rows_f:
            t.row(r)
        out.write("\n")
    for sev, code, file, off, msg in rows_x:
        out.write(terminal_safe(f"{sev:<7}  {code:<26}  {file} @{off}: {msg}") + "\n")
    if rows_x:
        out.write("\n")
    out.write(terminal_safe(summary_line(report)) + "\n")


def render_triage_columns(report: dict, out: TextIO, console: Console | None, layout: TableLayout,
                          files: bool = True) -> None:
    """``--columns``, ``--wide``, ``--fields``: every partition and file in the columns ``layout`` names
    (a name of the files' table leaves the partitions' out, and the other way round), values whole but
    for a terminal's cut names; the findings and the verdict after them (under ``--fields`` on stderr)."""
    root = report["path"]
    replicas = len({p.get("logDir") for p in report["partitions"] if p.get("logDir")}) > 1
    parts = TableStream(out, PARTITION_COLUMNS, console, layout, (FILE_COLUMNS,))
    for p in report["partitions"]:
        parts.row(partition_cells(p, root, replicas), _STYLE.get(p["verdict"]) if p["verdict"] != "clean" else None)
    if files and report["files"]:
        if not parts.left_out:
            parts.note("")
        table = TableStream(out, FILE_COLUMNS, console, layout, (PARTITION_COLUMNS,))
        for f in report["files"]:
            table.row(file_cells(f, root, whole=console is None))
    parts.note("")
    for sev, code, file, off, msg in finding_rows(report):
        parts.note(f"{sev:<7}  {code}  {file} @{off}: {msg}", _STYLE.get(sev))
    parts.note(summary_line(report), _STYLE.get(report["verdict"]))


def _problems_first(report: dict, console: Console, root: str, replicas: bool, files: bool) -> None:
    _print_summary(report, console)
    bad = sorted((p for p in report["partitions"] if p["verdict"] != "clean"),
                 key=lambda p: _WORST_FIRST.get(p["verdict"], 3))
    clean = len(report["partitions"]) - len(bad)
    with_findings = sorted((f for f in report["files"] if f["findings"] or f.get("error")), key=_file_rank)
    rows_x = finding_rows(report)
    # the name's tail tells segments apart: cut paths from the left
    shown = [(sev, code, file, off, msg) for sev, code, file, off, msg in rows_x
             if sev != "info"][:FINDINGS_SHOWN]
    if bad:
        t = _rich_table("partitions with findings, worst first", PROBLEM_COLUMNS, console.width)
        for p in bad[:ROWS_SHOWN]:
            t.add_row(*_cells(_problem_cells(p, root, replicas)), style=_STYLE.get(p["verdict"]))
        console.print(t, soft_wrap=False)
    if files and with_findings:
        t = _rich_table("files with findings (chain of custody of every file: --all or --json)",
                        PROBLEM_FILE_COLUMNS, console.width)
        for f in with_findings[:ROWS_SHOWN]:
            c = file_cells(f, root, ", ")
            t.add_row(*_cells([c[0], c[1], c[5], c[6]]))
        console.print(t, soft_wrap=False)
    _rich_triage(report, console, [], [], shown, summary=False)
    notes = []
    if len(bad) > ROWS_SHOWN:
        notes.append(_more(len(bad) - ROWS_SHOWN, "partitions with findings"))
    if files and len(with_findings) > ROWS_SHOWN:
        notes.append(_more(len(with_findings) - ROWS_SHOWN, "files with findings"))
    if clean:
        notes.append(f"{clean:,} partition{'s' if clean != 1 else ''} clean")
    if files and len(report["files"]) > len(with_findings):
        notes.append(f"{len(report['files']) - len(with_findings):,} files without findings")
    if len(rows_x) > len(shown):
        notes.append(_more(len(rows_x) - len(shown), "findings (info ones included)"))
    if notes:
        console.print("; ".join(notes) + " (--all lists everything; --json gives every field)", style="dim",
                      markup=False, highlight=False, soft_wrap=False)


def _rich_table(title: str, columns: Sequence[Column], width: int, name_width: int | None = None,
                bordered: bool | None = None) -> Table:
    """A table of ``columns`` no wider than ``width``: its long words (names, codes) fold inside their
    cells; on a narrow terminal without borders.  ``name_width``: the least width of the name column."""
    from rich.table import Table

    if bordered is None:
        bordered = width >= NARROW
    t = Table(title=title, title_justify="left", header_style="bold", box=box_style() if bordered else None,
              padding=(0, 1))
    for c in columns:
        # nothing is cut inside a cell: text wraps at spaces, and a word too long for its column (a name,
        # a path, a finding code) is folded onto the next line whole, so that two names that differ only
        # in their middle or at their end stay told apart
        keep = (name_width or (20 if width >= NARROW else 10)) if c.title in _NAME_TITLES else len(c.title)
        t.add_column(c.title, justify="right" if c.right else "left", overflow="fold", min_width=keep)
    return t


_NAME_TITLES = ("file", "partition")


def _least_width(columns: Sequence[Column], name_width: int, bordered: bool) -> int:
    """How wide a table of ``columns`` is at the least: each column as wide as its title (the name
    column ``name_width``), its padding, and with borders a rule between columns and at each side."""
    cells = sum(name_width if c.title in _NAME_TITLES else len(c.title) for c in columns)
    return cells + 2 * len(columns) + ((len(columns) + 1) if bordered else 0)


# below this width a triage table has no borders and narrower name columns
NARROW = 100


def box_style() -> Box:
    from rich import box

    return box.HEAVY_HEAD


def _table_or_blocks(console: Console, title: str, columns: Sequence[Column],
                     rows: list[tuple[list, str | None]]) -> None:
    """``rows`` as a table when its columns fit the terminal, else a block per row (a line per
    column, folded between words): nothing is cut."""
    # the names whole on a line when the table has room for them, else folded inside their cells;
    # with borders when they fit too, else without: the table is never wider than the terminal
    longest = min(max((len(str(r[0])) for r, _ in rows), default=10), 48)
    for name_width in dict.fromkeys((max(longest, len(columns[0].title)), 10)):
        for bordered in (True, False):
            if (not bordered or console.width >= NARROW) and \
                    _least_width(columns, name_width, bordered) <= console.width:
                t = _rich_table(title, columns, console.width, name_width, bordered)
                for r, style in rows:
                    t.add_row(*_cells(r), style=style)
                console.print(t, soft_wrap=False)
                return
    lines = LineWriter(cast(TextIO, console.file), console)
    lines.line(title, "bold")
    for r, style in rows:
        lines.line(f"{columns[0].title}: {r[0]}", style or "bold")
        for c, v in zip(columns[1:], r[1:]):
            lines.line(f"  {c.title}: {v}", style)


def _cells(row: list | tuple) -> list:
    """Table cells as rich ``Text`` (never parsed as markup), control characters escaped."""
    from rich.text import Text

    return [Text(terminal_safe(str(x))) for x in row]


def _rich_triage(report: dict, console: Console, rows_p: list[list], rows_f: list[list], rows_x: list[tuple],
                 summary: bool = True) -> None:
    if rows_p:
        _table_or_blocks(console, "partitions", PARTITION_COLUMNS,
                         [(r, _STYLE.get(r[1]) if r[1] != "clean" else None) for r in rows_p])
    if rows_f:
        _table_or_blocks(console, "files (chain of custody: full SHA-256 in --json)", FILE_COLUMNS,
                         [(r, None) for r in rows_f])
    if rows_x:   # a line per finding, folded between words under itself: a message is never cut
        lines = LineWriter(cast(TextIO, console.file), console)
        lines.line("findings", "bold")
        for sev, code, file, off, msg in rows_x:
            lines.line(f"{sev:<7}  {code}  {file} @{off}: {msg}", _STYLE.get(sev))
    if summary:
        _print_summary(report, console)


__all__ = ["render_triage", "render_triage_json", "render_triage_columns", "summary_line", "finding_rows", "file_contents",
           "PARTITION_COLUMNS", "FILE_COLUMNS"]
