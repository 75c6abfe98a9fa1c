"""txn, offsets: incident forensics joining the files of log dirs (transactions, offsets and lag)."""

from __future__ import annotations

import os
import sys
from enum import Enum
from typing import List, Optional

import typer

from kafkadump.base.errors import InputError, UsageError
from kafkadump.base.status import Tally
from kafkadump.cli.option_groups import FROM_OPTIONS, Output, output_options
from kafkadump.cli.typer_app import app
from kafkadump.cli.typer_main import finish, run_command

JSON_LINES = "JSON Lines on stdout, one object per line."
PathsOpt = typer.Argument(..., show_default=False,
                          help="Log dirs, partition directories (or trees of log dirs: several brokers side by side).")
TxnState = Enum("TxnState", {s: s for s in ("committed", "aborted", "ongoing", "hanging")}, type=str)  # type: ignore[misc]
JobsOpt = typer.Option(2, "--jobs", "-j", min=1, max=64, help="Worker processes scanning separate files in parallel.")


def _existing(paths: list[str]) -> None:
    """Every path exists, and one at least is (or holds, or is inside) a partition directory: txn and
    offsets read partitions; anything else is an input that holds nothing they can read (exit 2)."""
    for path in paths:
        if not os.path.exists(path):
            raise UsageError(f"{path}: no such file or directory")
    if not any(_holds_partitions(p) for p in paths):
        raise InputError(f"{', '.join(paths)}: no partition directory (TOPIC-N) among the inputs; give log dirs, "
                         "partition directories or the segments inside them")


def _holds_partitions(path: str) -> bool:
    from kafkadump.decoders.logfiles.names import parse_partition_dir

    if not os.path.isdir(path):
        return parse_partition_dir(os.path.dirname(os.path.abspath(path))) is not None
    level, seen = [path], 0
    for _ in range(PARTITION_SEARCH_DEPTH):   # a partition directory at most this deep, as the reports look
        below = []
        for d in level:
            if parse_partition_dir(d) is not None:
                return True
            try:
                below += [e.path for e in os.scandir(d) if e.is_dir(follow_symlinks=False)]
            except OSError:
                return True   # the report says what is wrong with it
        seen += len(below)
        if seen > PARTITION_SEARCH_DIRS:
            return True   # too many to look through here: the report looks
        level = below
    return False


PARTITION_SEARCH_DEPTH = 5
PARTITION_SEARCH_DIRS = 100_000


@app.command()
@output_options(encoding=None, json_help=JSON_LINES, table_columns=True)
def txn(
    paths: List[str] = PathsOpt,
    txn_partitions: int = typer.Option(50, "--txn-partitions", min=1, metavar="N",
                                       help="Partitions of __transaction_state (transaction.state.log.num.partitions): "
                                            "where a transactional id's coordinator records live."),
    bootstrap: str = typer.Option("<host:port>", "--bootstrap-server", metavar="HOST:PORT",
                                  help="Put in the printed kafka-transactions.sh abort commands."),
    transactional_id: Optional[List[str]] = typer.Option(None, "--transactional-id", metavar="ID",
                                                         help="Say which __transaction_state partition holds this "
                                                              "transactional id, and whether it was read "
                                                              "(repeatable)."),
    state: Optional[List[TxnState]] = typer.Option(None, "--state", "-s",
                                                   help="List only transactions in this state (repeatable; the "
                                                        "summary still counts all)."),
    jobs: int = JobsOpt,
    output: Output = FROM_OPTIONS,
) -> None:
    """Transactions across partitions: committed, aborted, ongoing, hanging.

    Joins the transactional batches and COMMIT/ABORT markers of every
    partition with the coordinator's records in __transaction_state-N
    (when on disk).  For each hanging transaction: why, the last stable
    offset its partition is stuck at, and the kafka-transactions.sh command
    that aborts it.  Exit 0 when no transaction hangs, 1 when one does,
    2 on usage or I/O errors.
    """
    from kafkadump.cli.progress import Progress
    from kafkadump.render import transaction_table as render
    from kafkadump.reports.triage import transactions_report

    def body() -> int:
        _existing(paths)
        tally = Tally()
        progress = Progress("txn") if sys.stderr.isatty() else None
        try:
            report = transactions_report(paths, tally, jobs=jobs, txn_partitions=txn_partitions,
                                         transactional_ids=tuple(transactional_id or ()),
                                         progress=progress.update if progress else None)
        finally:
            if progress:
                progress.stop()
        states = [s.value for s in state] if state else None
        if output.json:
            render.write_txn_json(report, sys.stdout, bootstrap, states)
        else:
            console = output.console()
            render.write_txn_table(report, sys.stdout, console, output.layout(console), bootstrap, states)
        return finish(tally)

    run_command(body)


@app.command()
@output_options(encoding=None, json_help=JSON_LINES, table_columns=True)
def offsets(
    paths: List[str] = PathsOpt,
    time: Optional[str] = typer.Option(None, "--time", "-t", metavar="T",
                                       help="Also the first offset whose timestamp is >= T (ISO-8601 or epoch ms), "
                                            "as ListOffsets answers it."),
    history: bool = typer.Option(False, "--history", help="Every commit of every group, in log order, not only "
                                                          "the latest per partition."),
    group: Optional[List[str]] = typer.Option(None, "--group", "-g", metavar="GROUP",
                                              help="Only this consumer group (repeatable)."),
    offsets_partitions: int = typer.Option(50, "--offsets-partitions", min=1, metavar="N",
                                           help="Partitions of __consumer_offsets (offsets.topic.num.partitions): "
                                                "where a group's commits live."),
    output: Output = FROM_OPTIONS,
) -> None:
    """Offsets and consumer lag, offline: per partition and per group.

    Per partition: earliest offset, log end offset, high watermark
    (replication-offset-checkpoint), max timestamp and its offset, and with
    --time the offset for that time.  From __consumer_offsets on disk:
    every group's latest committed offset per partition (tombstones
    honoured), its commit time and its lag against the log end offset of
    that partition when its data is on disk.  Exit 0 when nothing is wrong,
    1 when a committed offset is beyond its partition's log end or the data
    has problems, 2 on usage or I/O errors.
    """
    from kafkadump.render import offsets_table as render
    from kafkadump.reports.offsets import OffsetsQuery, offsets_report
    from kafkadump.reports.query import parse_time

    def body() -> int:
        _existing(paths)
        tally = Tally()
        query = OffsetsQuery(parse_time(time, "--time"), history, tuple(group) if group else None,
                             offsets_partitions)
        items = offsets_report(paths, query, tally)
        if output.json:
            render.write_offsets_json(items, sys.stdout)
        else:
            console = output.console()
            render.write_offsets_table(items, sys.stdout, console, output.layout(console))
        return finish(tally)

    run_command(body)
