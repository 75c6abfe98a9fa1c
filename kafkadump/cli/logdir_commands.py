"""dump, triage, carve: the files of a Kafka log directory.

The options are declared here, for typer; the bodies are in :mod:`.logdir_bodies`
(the fast path runs the same ones).
"""

from __future__ import annotations

from typing import List, Optional

import typer

from kafkadump.cli import logdir_bodies as bodies
from kafkadump.cli.option_groups import FROM_OPTIONS, Output, output_options
from kafkadump.cli.option_values import FileType
from kafkadump.cli.typer_app import app
from kafkadump.cli.typer_main import run_command

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
    run_command(lambda: bodies.dump(paths, type_, no_verify, output))


@app.command()
@output_options(encoding=None, json_help="The full report as one JSON object on stdout.", table_columns=True)
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
    run_command(lambda: bodies.triage(paths, jobs, shallow, max_findings, no_files, show_all, output))


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
    run_command(lambda: bodies.carve(segment, output_file, force, list_, output))
