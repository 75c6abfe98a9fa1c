"""kafkadump commands for log directories: dump (any log-dir file), triage, carve."""

from __future__ import annotations

from enum import Enum
from typing import List, Optional

import typer

TYPES = ("segment", "offset-index", "time-index", "txn-index", "producer-snapshot", "leader-epoch-checkpoint",
         "partition-metadata", "offset-checkpoint", "meta-properties", "quorum-state", "kraft-snapshot")
FileType = Enum("FileType", {t.replace("-", "_"): t for t in TYPES}, type=str)


def register(app) -> None:
    """Add this module's commands to the typer app."""
    from ..cli import ColorOpt, UsageError, _console, _run

    JsonOpt = typer.Option(False, "--json", help="JSON Lines on stdout, one object per line.")

    @app.command()
    def dump(
        paths: List[str] = typer.Argument(..., show_default=False,
                                          help="Any file of a Kafka log dir: .index, .timeindex, .txnindex, "
                                               ".snapshot, leader-epoch-checkpoint, partition.metadata, the "
                                               "*-offset-checkpoint files, meta.properties, quorum-state, KRaft "
                                               ".checkpoint snapshots, segments; also with a .deleted, "
                                               ".cleaned or .swap suffix."),
        type_: Optional[FileType] = typer.Option(None, "--type", "-t",
                                                 help="Decode as this kind instead of guessing from the name."),
        json_: bool = JsonOpt,
        no_verify: bool = typer.Option(False, "--no-verify",
                                       help="Do not check .index / .timeindex entries against the sibling .log "
                                            "(index-only sanity checks)."),
        color: Optional[bool] = ColorOpt,
    ):
        """Decode any file of a log dir, kind guessed from its name.

        Index entries are checked against the sibling .log (each entry at a
        batch boundary whose offsets match; time index monotonic and
        consistent) unless --no-verify.  Exit 1 when a warning or error
        finding is reported.
        """
        from ..decode import Options, iter_batches
        from ..decode.model import Gap
        from ..findings import Severity
        from ..logdir import names
        from ..logdir.dump import iter_dump
        from ..render import jsonl, table
        from ..render import logdir as r
        import json
        import sys

        def body():
            out = sys.stdout
            problems = 0
            console = None if json_ else _console(color)

            def see(findings):
                nonlocal problems
                problems += sum(1 for f in findings if f.severity is not Severity.INFO)

            def emit(line: str, style=None):
                if console is not None:
                    console.print(line, style=style, markup=False, highlight=False, soft_wrap=True)
                else:
                    out.write(line + "\n")

            for path in paths:
                kind = type_.value if type_ else None
                if kind is None and names.classify(path).kind == names.UNKNOWN:
                    raise UsageError(f"{path}: cannot tell what kind of file this is from its name; give --type")
                _open(path).close()  # a missing or unreadable file: one error line, before any output
                if not json_ and len(paths) > 1:
                    emit(f"== {path}", "bold")
                stream = None
                for ev in iter_dump(path, kind, verify=not no_verify):
                    tag = ev[0]
                    if tag == "batches":
                        with _open(path) as seg:
                            for item in iter_batches(seg.buf, path, options=Options(records=True)):
                                see(item.findings)
                                if json_:
                                    out.write(jsonl.render_batch_line(item) + "\n")
                                    continue
                                if stream is None:
                                    stream = table.TableStream(out, table.BATCH_COLUMNS, console)
                                stream.row(table.gap_cells(item) if isinstance(item, Gap) else table.batch_cells(item),
                                           "red" if isinstance(item, Gap) else table.batch_style(item))
                                for line in table.findings_lines(item):
                                    stream.note(line, "yellow")
                    elif tag == "entry":
                        _, k, e, fs = ev
                        see(fs)
                        if json_:
                            out.write(json.dumps(r.entry_dict(k, path, e, fs)) + "\n")
                            continue
                        if stream is None:
                            stream = table.TableStream(out, r.COLUMNS[k], console)
                        stream.row(r.entry_cells(k, e), "red" if fs else None)
                        for line in r.findings_lines(fs):
                            stream.note(line, "yellow")
                    elif tag == "snapshot":
                        s = ev[1]
                        see(s.findings)
                        if json_:
                            out.write(json.dumps(r.snapshot_dict(path, s)) + "\n")
                            continue
                        emit(r.snapshot_header_line(path, s), "bold")
                        for line in r.findings_lines(s.findings):
                            emit(line, "yellow")
                    elif tag == "producer-entry":
                        if json_:
                            out.write(json.dumps(r.producer_entry_dict(path, ev[1])) + "\n")
                            continue
                        if stream is None:
                            stream = table.TableStream(out, r.SNAPSHOT_COLUMNS, console)
                        stream.row(r.producer_entry_cells(ev[1]))
                    elif tag == "text":
                        _, k, content, fs = ev
                        see(fs)
                        if json_:
                            out.write(json.dumps(r.text_dict(k, path, content, fs)) + "\n")
                            continue
                        for line in r.text_lines(k, content):
                            emit(line)
                        for line in r.findings_lines(fs):
                            emit(line, "yellow")
                    elif tag == "findings":
                        fs = ev[1]
                        see(fs)
                        if json_:
                            out.write(json.dumps({"type": "findings", "file": path,
                                                  "position": min(f.offset for f in fs),
                                                  "findings": jsonl.findings_list(fs)}) + "\n")
                            continue
                        for line in r.findings_lines(fs):
                            emit(line, "yellow")
                    elif tag == "note":
                        if not json_:
                            emit(f"# {ev[1]}", "dim")
            return 1 if problems else 0

        _run(body)

    @app.command()
    def triage(
        path: str = typer.Argument(..., help="A segment, a partition directory, a log dir, or any tree of them."),
        json_: bool = typer.Option(False, "--json", help="The full report as one JSON object on stdout."),
        jobs: int = typer.Option(2, "--jobs", "-j", min=1, max=64,
                                 help="Worker processes scanning separate files in parallel."),
        shallow: bool = typer.Option(False, "--shallow",
                                     help="Batch headers and CRCs only (control batches still decoded): "
                                          "faster, but damage inside records is not seen."),
        max_findings: int = typer.Option(100, "--max-findings", min=1, metavar="N",
                                         help="Findings kept per code per file (counts stay exact)."),
        no_files: bool = typer.Option(False, "--no-files", help="(table) Leave out the per-file table."),
        color: Optional[bool] = ColorOpt,
    ):
        """Everything wrong with a segment, partition or log dir: a report with a verdict.

        Per file: SHA-256, size, modification time, counts, offset and time
        ranges, codecs, producers and every finding (severity, file, byte
        offset); per partition: cross-checks across segments and a verdict.
        Exit 0 clean (info findings only), 1 any warning or error finding or
        unreadable file, 2 usage or I/O error.
        """
        import os
        import sys

        from ..logdir.triage import Triage
        from ..render import triage as r
        from ..report.logdir import triage_exit_status

        def body():
            if not os.path.exists(path):
                raise UsageError(f"{path}: no such file or directory")
            progress = _Progress() if sys.stderr.isatty() else None
            try:
                report = Triage(path, jobs=jobs, records=not shallow, max_findings=max_findings,
                                progress=progress.update if progress else None).run().report()
            finally:
                if progress:
                    progress.stop()
            if json_:
                r.render_triage_json(report, sys.stdout)
            else:
                r.render_triage(report, sys.stdout, _console(color), files=not no_files)
            return triage_exit_status(report)

        _run(body)

    @app.command()
    def carve(
        segment: str = typer.Argument(..., help="A damaged segment (or any file of record batches)."),
        output: Optional[str] = typer.Option(None, "--output", "-o", metavar="NEW_FILE",
                                             help="Write the recovered batches, in order, to this new file."),
        force: bool = typer.Option(False, "--force", help="Overwrite NEW_FILE if it exists (never an input)."),
        json_: bool = JsonOpt,
        list_: bool = typer.Option(False, "--list", help="(table) Also list every recovered batch."),
        color: Optional[bool] = ColorOpt,
    ):
        """Find every intact batch in a damaged segment; report what was lost.

        Scans past damage for plausible headers whose CRC passes, reports
        each damaged byte range [start, end) with the offsets it held
        (inferred from its intact neighbours), and with --output writes a
        new segment holding only the intact batches.  The input is never
        modified.  Exit 0 when nothing is damaged, 1 when something is.
        """
        import json
        import os
        import sys

        from ..logdir import names
        from ..logdir.carve import Damaged, Padding, Recovered, carve as do_carve
        from ..render import logdir as r

        def body():
            out = sys.stdout
            console = None if json_ else _console(color)

            def emit(line, style=None):
                if console is not None:
                    console.print(line, style=style, markup=False, highlight=False, soft_wrap=True)
                else:
                    out.write(line + "\n")

            with _open(segment) as seg:
                writer = _Writer(output, segment, force) if output else None
                totals = {"recovered": 0, "recoveredBytes": 0, "damagedRanges": 0, "damagedBytes": 0,
                          "paddingBytes": 0, "firstOffset": None, "lastOffset": None}
                ok = False
                try:
                    base = names.classify(segment).offset if names.classify(segment).kind == names.SEGMENT else None
                    for item in do_carve(seg.buf, segment, base_offset=base):
                        if isinstance(item, Recovered):
                            b = item.batch
                            totals["recovered"] += 1
                            totals["recoveredBytes"] += b.size
                            if totals["firstOffset"] is None:
                                totals["firstOffset"] = b.base_offset
                            if b.last_offset is not None:
                                totals["lastOffset"] = max(b.last_offset, totals["lastOffset"] or b.last_offset)
                            if writer:
                                writer.write(seg.buf[b.position:b.position + b.size])
                            if json_:
                                out.write(json.dumps(r.recovered_dict(segment, b)) + "\n")
                            elif list_:
                                emit(r.recovered_line(b))
                        elif isinstance(item, Damaged):
                            totals["damagedRanges"] += 1
                            totals["damagedBytes"] += item.size
                            if json_:
                                out.write(json.dumps(r.damaged_dict(item)) + "\n")
                            else:
                                emit(r.damaged_line(item), "red")
                        elif isinstance(item, Padding):
                            totals["paddingBytes"] += item.size
                    ok = True
                finally:
                    if writer:
                        writer.close(keep=ok)
            summary = {"type": "summary", "file": segment, "size": seg.size, "output": output, **totals}
            if writer:
                summary["outputSha256"] = writer.sha256
            if json_:
                out.write(json.dumps(summary) + "\n")
            else:
                emit(f"recovered: {totals['recovered']} batches ({totals['recoveredBytes']} bytes, offsets "
                     f"{totals['firstOffset']}..{totals['lastOffset']})  damaged: {totals['damagedRanges']} ranges "
                     f"({totals['damagedBytes']} bytes)  zero padding: {totals['paddingBytes']} bytes"
                     + (f"  written: {output} (sha256 {writer.sha256})" if writer else ""),
                     "bold")
            return 1 if totals["damagedRanges"] else 0

        _run(body)

    class _Writer:
        """The carve output: a new file, never an input, removed again if carving fails."""

        def __init__(self, path: str, source: str, force: bool):
            import hashlib
            import os

            if os.path.exists(path):
                if os.path.exists(source) and os.path.samefile(path, source):
                    raise UsageError(f"{path}: is the input file; refusing to write over it")
                if not force:
                    raise UsageError(f"{path}: exists; give --force to overwrite it")
                if os.path.isdir(path):
                    raise UsageError(f"{path}: is a directory")
            if os.path.realpath(path) == os.path.realpath(source):
                raise UsageError(f"{path}: is the input file; refusing to write over it")
            flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL) | getattr(os, "O_BINARY", 0)
            try:
                fd = os.open(path, flags, 0o644)
            except OSError as e:
                raise UsageError(f"{path}: cannot create: {e.strerror}") from None
            self.path = path
            self.f = os.fdopen(fd, "wb")
            self.h = hashlib.sha256()
            self.sha256 = None

        def write(self, data) -> None:
            self.f.write(data)
            self.h.update(data)

        def close(self, keep: bool) -> None:
            import os

            try:
                if keep:
                    self.f.flush()
                    os.fsync(self.f.fileno())
                self.f.close()
            finally:
                if keep:
                    self.sha256 = self.h.hexdigest()
                else:
                    try:
                        os.unlink(self.path)
                    except OSError:
                        pass


def _open(path):
    from ..sources.segment import open_segment

    return open_segment(path)


class _Progress:
    """A rich progress bar on stderr (only created when stderr is a terminal), started at the first update."""

    def __init__(self):
        self.p = None
        self.task = None

    def update(self, done: int, total: int, path: str) -> None:
        if self.p is None:
            from rich.console import Console
            from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                                       TransferSpeedColumn)

            self.p = Progress(TextColumn("triage"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                              TimeRemainingColumn(), TextColumn("{task.description}"),
                              console=Console(stderr=True), transient=True)
            self.p.start()
            self.task = self.p.add_task("", total=total)
        import os

        self.p.update(self.task, completed=done, description=os.path.basename(path))

    def stop(self) -> None:
        if self.p is not None:
            self.p.stop()
