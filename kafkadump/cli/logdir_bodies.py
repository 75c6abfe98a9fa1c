"""The bodies of dump, triage and carve, without typer.

Each takes the command's options (by the names of the parameters of the
commands in :mod:`.logdir_commands`, the option group built: ``output``) and
returns the exit status.  The typer commands run them through
:func:`.typer_main.run_command`, the fast path (:mod:`.fast_path`) through
:func:`.running.run_body`: one body per command whichever parsed its options.
"""

from __future__ import annotations

import os
import sys

from kafkadump.base.errors import InputError, UsageError
from kafkadump.base.status import Tally
from kafkadump.cli.option_values import FileType, Format, Output
from kafkadump.cli.running import finish


def dump(paths: list[str], type_: FileType | None, no_verify: bool, output: Output) -> int:
    from kafkadump.render import logdir_files as render
    from kafkadump.reports.dump import dump_report

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


def _dump_dumplog(paths: list[str], kind: str | None, tally: Tally) -> int:
    """``dump --format dump-log``: Kafka's DumpLogSegments lines; its exit status."""
    from kafkadump.render.dumplog_files import write_dump_dumplog
    from kafkadump.reports.dumplog_source import dumplog_events

    write_dump_dumplog(dumplog_events(paths, kind, tally), sys.stdout, sys.stderr)
    return finish(tally)


def triage(paths: list[str], jobs: int, shallow: bool, max_findings: int, no_files: bool, show_all: bool,
           output: Output) -> int:
    from kafkadump.cli.progress import Progress
    from kafkadump.objects.logdir_objects import triage_report
    from kafkadump.reports.triage import Triage

    for path in paths:
        if not os.path.exists(path):
            raise UsageError(f"{path}: no such file or directory")
    progress = Progress("triage") if sys.stderr.isatty() else None
    try:
        report = triage_report(Triage(paths[0] if len(paths) == 1 else paths, jobs=jobs, records=not shallow,
                                      max_findings=max_findings,
                                      progress=progress.update if progress else None).run())
    finally:
        if progress:
            progress.stop()
    if not report["files"]:   # nothing to read: said and exit 2, as batches says it
        raise InputError(f"{', '.join(paths)}: no Kafka file (segment, index, checkpoint, snapshot) to triage")
    return show_triage(report, output, files=not no_files, show_all=show_all)


def show_triage(report: dict, output: Output, files: bool = True, show_all: bool = False) -> int:
    """Write a triage report as ``output`` asks (``kafkadump triage`` and ``spark triage``); its exit status."""
    from kafkadump.objects.logdir_objects import triage_exit_status
    from kafkadump.render import triage_table as render

    if output.json:
        render.render_triage_json(report, sys.stdout)
    elif output.fields is not None or output.columns is not None or output.wide:
        console = output.console()   # the columns named (or every one) in the tables of every partition and file
        render.render_triage_columns(report, sys.stdout, console, output.layout(console), files=files)
    else:
        render.render_triage(report, sys.stdout, output.console(), files=files, show_all=show_all)
    return triage_exit_status(report)


def carve(segment: str, output_file: str | None, force: bool, list_: bool, output: Output) -> int:
    from kafkadump.render import logdir_files as render
    from kafkadump.reports.carve import carve_report

    tally = Tally()
    items = carve_report(segment, tally, output_file, force)
    if output.json:
        render.write_carve_json(items, sys.stdout)
    else:
        render.write_carve_table(items, sys.stdout, output.console(), list_recovered=list_)
    return finish(tally)
