"""dump, triage, carve: the files of a Kafka log directory."""

from __future__ import annotations

import os
import sys
from enum import Enum
from typing import List, Optional

import typer

from kafkadump.base.errors import InputError, UsageError
from kafkadump.base.status import Tally
from kafkadump.cli.option_groups import FROM_OPTIONS, Output, output_options
from kafkadump.cli.option_values import Format
from kafkadump.cli.running import finish
from kafkadump.cli.typer_app import app
from kafkadump.cli.typer_main import run_command

# the kinds --type can name (logdir.names' kinds that dump decodes)
DUMPABLE_KINDS = ("segment", "offset-index", "time-index", "txn-index", "producer-snapshot",
                  "leader-epoch-checkpoint", "partition-metadata", "offset-checkpoint", "meta-properties",
                  "quorum-state", "kraft-snapshot")
FileType = Enum("FileType", {t.replace("-", "_"): t for t in DUMPABLE_KINDS}, type=str)  # type: ignore[misc]

JSON_LINES = "JSON Lines on stdout, one object per line."
# the options of both triages (kafkadump triage and spark triage), defined once
TriageShallowOpt = typer.Option(False, "--shallow", help="Batch headers and CRCs only (control batches and "
                                                         "__transaction_state records still decoded): faster, but "
                                                         "damage inside records is not seen.")
MaxFindingsOpt = typer.Option(100, "--max-findings", min=1, metavar="N",
                              help="Findings kept per code per file (counts stay exact).")
NoFilesOpt = typer.Option(False, "--no-files", help="(table) Leave out the per-file table.")
ShowAllOpt = typer.Option(False, "--all", help="(table) Every partition, file and finding; on a terminal the "
                                               "problems come first and clean partitions are counted.")


@app.command()
@output_options(formats=True, encoding=None, json_help=JSON_LINES, table_columns=True)
def dump(
    paths: List[str] = typer.Argument(..., show_default=False,
                                      help="Any file of a Kafka log dir: .index, .timeindex, .txnindex, "
                                           ".snapshot, leader-epoch-checkpoint, partition.metadata, the "
                                           "*-offset-checkpoint files, meta.properties, quorum-state, KRaft "
                                           ".checkpoint snapshots, segments; also with a .deleted, "
                                           ".cleaned or .swap suffix."),
    type_: Optional[FileType] = typer.Option(None, "--type", "-t",
                                             help="Decode as this kind instead of guessing from the name."),
    no_verify: bool = typer.Option(False, "--no-verify",
                                   help="Do not check .index / .timeindex entries against the sibling .log "
                                        "(index-only sanity checks)."),
    output: Output = FROM_OPTIONS,
) -> None:
    """Decode any file of a log dir, kind guessed from its name.

    Index entries are checked against the sibling .log (each entry at a
    batch boundary whose offsets match; time index monotonic and
    consistent) unless --no-verify.  With --format dump-log: the lines
    of Kafka's kafka-dump-log.sh --deep-iteration --print-data-log for
    the kinds it reads (.log, .checkpoint, .index, .timeindex,
    .txnindex, .snapshot), its mismatch sections on stderr.  Exit 1
    when a warning or error finding is reported.
    """
    from kafkadump.render import logdir_files as render
    from kafkadump.reports.dump import dump_report

    def body() -> int:
        tally = Tally()
        kind = type_.value if type_ else None
        if output.format is Format.dump_log:
            return _dump_dumplog(paths, kind, tally)
        if output.format is Format.blocks:
            raise UsageError("--format blocks is for batches and records: dump writes table, json or dump-log")
        events = dump_report(paths, kind, tally, verify=not no_verify)
        if output.json:
            render.write_dump_json(events, sys.stdout)
        else:
            console = output.console()
            render.write_dump_table(events, sys.stdout, console, output.layout(console))
        return finish(tally)

    run_command(body)


def _dump_dumplog(paths: list[str], kind: str | None, tally: Tally) -> int:
    """``dump --format dump-log``: Kafka's DumpLogSegments lines; its exit status."""
    from kafkadump.render.dumplog_files import write_dump_dumplog
    from kafkadump.reports.dumplog_source import dumplog_events

    write_dump_dumplog(dumplog_events(paths, kind, tally), sys.stdout, sys.stderr)
    return finish(tally)


@app.command()
@output_options(encoding=None, json_help="The full report as one JSON object on stdout.")
def triage(
    paths: List[str] = typer.Argument(..., show_default=False,
                                      help="Segments, partition directories, log dirs, or any trees of them "
                                           "(several log dirs: replicas or brokers side by side)."),
    jobs: int = typer.Option(2, "--jobs", "-j", min=1, max=64,
                             help="Worker processes scanning separate files in parallel."),
    shallow: bool = TriageShallowOpt,
    max_findings: int = MaxFindingsOpt,
    no_files: bool = NoFilesOpt,
    show_all: bool = ShowAllOpt,
    output: Output = FROM_OPTIONS,
) -> None:
    """Everything wrong with a segment, partition or log dir: a report with a verdict.

    Per file: SHA-256, size, modification time, counts, offset and time
    ranges, codecs, producers and every finding (severity, file, byte
    offset); per partition: cross-checks across segments and a verdict.
    Exit 0 clean (info findings only), 1 any warning or error finding, 2 an
    unreadable file (the rest is still reported), usage or I/O error.
    """
    from kafkadump.cli.progress import Progress
    from kafkadump.objects.logdir_objects import triage_report
    from kafkadump.reports.triage import Triage

    def body() -> int:
        for path in paths:
            if not os.path.exists(path):
                raise UsageError(f"{path}: no such file or directory")
        progress = Progress("triage") if sys.stderr.isatty() else None
        try:
            report = triage_report(Triage(paths[0] if len(paths) == 1 else paths, jobs=jobs, records=not shallow, max_findings=max_findings,
                            progress=progress.update if progress else None).run())
        finally:
            if progress:
                progress.stop()
        if not report["files"]:   # nothing to read: said and exit 2, as batches says it
            raise InputError(f"{', '.join(paths)}: no Kafka file (segment, index, checkpoint, snapshot) to triage")
        return show_triage(report, output, files=not no_files, show_all=show_all)

    run_command(body)


def show_triage(report: dict, output: Output, files: bool = True, show_all: bool = False) -> int:
    """Write a triage report as ``output`` asks (``kafkadump triage`` and ``spark triage``); its exit status."""
    from kafkadump.objects.logdir_objects import triage_exit_status
    from kafkadump.render import triage_table as render

    if output.json:
        render.render_triage_json(report, sys.stdout)
    else:
        render.render_triage(report, sys.stdout, output.console(), files=files, show_all=show_all)
    return triage_exit_status(report)


@app.command()
@output_options(encoding=None, json_help=JSON_LINES)
def carve(
    segment: str = typer.Argument(..., help="A damaged segment (or any file of record batches)."),
    output_file: Optional[str] = typer.Option(None, "--output", "-o", metavar="NEW_FILE",
                                              help="Write the recovered batches, in order, to this new file."),
    force: bool = typer.Option(False, "--force", help="Overwrite NEW_FILE if it exists (never an input)."),
    list_: bool = typer.Option(False, "--list", help="(table) Also list every recovered batch."),
    output: Output = FROM_OPTIONS,
) -> None:
    """Find every intact batch in a damaged segment; report what was lost.

    Scans past damage for plausible headers whose CRC passes, reports
    each damaged byte range [start, end) with the offsets it held
    (inferred from its intact neighbours), and with --output writes a
    new segment holding only the intact batches.  The input is never
    modified.  Exit 0 when nothing is damaged, 1 when something is.
    """
    from kafkadump.render import logdir_files as render
    from kafkadump.reports.carve import carve_report

    def body() -> int:
        tally = Tally()
        items = carve_report(segment, tally, output_file, force)
        if output.json:
            render.write_carve_json(items, sys.stdout)
        else:
            render.write_carve_table(items, sys.stdout, output.console(), list_recovered=list_)
        return finish(tally)

    run_command(body)
