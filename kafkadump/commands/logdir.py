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
    from ..cli.main import run_command as _run
    from ..cli.options import ColorOpt, console_for as _console
    from ..errors import UsageError

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
        import sys

        from ..logdir.dump import dump_report
        from ..render import logdir as r
        from ..report.status import Tally

        def body():
            tally = Tally()
            events = dump_report(paths, type_.value if type_ else None, tally, verify=not no_verify)
            if json_:
                r.write_dump_json(events, sys.stdout)
            else:
                r.write_dump_table(events, sys.stdout, _console(color))
            return tally.exit_status

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
        import sys

        from ..logdir.recover import carve_report
        from ..render import logdir as r
        from ..report.status import Tally

        def body():
            tally = Tally()
            items = carve_report(segment, tally, output, force)
            if json_:
                r.write_carve_json(items, sys.stdout)
            else:
                r.write_carve_table(items, sys.stdout, _console(color), list_recovered=list_)
            return tally.exit_status

        _run(body)

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
