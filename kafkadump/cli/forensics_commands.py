"""txn, offsets: incident forensics joining the files of log dirs (transactions, offsets and lag).

The options are declared here, for typer; the bodies are in :mod:`.forensics_bodies`
(the fast path runs the same ones).
"""

from __future__ import annotations

from typing import List, Optional

import typer

from kafkadump.cli import forensics_bodies as bodies
from kafkadump.cli.option_groups import FROM_OPTIONS, Output, output_options
from kafkadump.cli.option_values import TxnState
from kafkadump.cli.typer_app import app
from kafkadump.cli.typer_main import run_command

JSON_LINES = "JSON Lines on stdout, one object per line."
PathsOpt = typer.Argument(..., show_default=False,
                          help="Log dirs, partition directories (or trees of log dirs: several brokers side by side).")
JobsOpt = typer.Option(2, "--jobs", "-j", min=1, max=64, help="Worker processes scanning separate files in parallel.")


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
    run_command(lambda: bodies.txn(paths, txn_partitions, bootstrap, transactional_id, state, jobs, output))


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
    run_command(lambda: bodies.offsets(paths, time, history, group, offsets_partitions, output))
