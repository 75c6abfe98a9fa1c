"""diff, metadata: two copies of a partition compared; KRaft metadata history.

The options are declared here, for typer; the bodies are in :mod:`.replica_bodies`
(the fast path runs the same ones).
"""

from __future__ import annotations

from typing import List, Optional

import typer

from kafkadump.cli import replica_bodies as bodies
from kafkadump.cli.option_groups import FROM_OPTIONS, InputLimits, Output, input_limits, output_options
from kafkadump.cli.typer_app import app
from kafkadump.cli.typer_main import run_command

JSON_LINES = "JSON Lines on stdout, one object per line."


@app.command()
@input_limits()
@output_options(encoding=None, json_help=JSON_LINES)
def metadata(
    path: str = typer.Argument(..., show_default=False,
                               help="A __cluster_metadata-0 directory (newest snapshot, then the log after it), "
                                    "or one KRaft .checkpoint snapshot or .log segment."),
    at: Optional[str] = typer.Option(None, "--at", metavar="OFFSET|TIME",
                                     help="Print the cluster's state after this offset, or at this time (ISO-8601, "
                                          "or epoch ms: a number of 13 digits or more): topics, partitions with "
                                          "leader/ISR/ELR, brokers, controllers, configs, features."),
    brokers: bool = typer.Option(False, "--brokers",
                                 help="Brokers registered, fenced, unfenced, shut down and unregistered "
                                      "in the timeline too."),
    topic: Optional[List[str]] = typer.Option(None, "--topic", metavar="NAME|ID",
                                              help="Only the changes (with --at: the state) of this topic, a name "
                                                   "or a topic id; repeatable."),
    output: Output = FROM_OPTIONS,
    limits: InputLimits = FROM_OPTIONS,
) -> None:
    """KRaft metadata history: partition changes, unclean elections, brokers; or the state --at a point.

    Every partition change (leader, ISR, ELR, epochs), unclean elections, topics
    deleted and re-created, brokers (--brokers).

    An election is unclean when the record says LeaderRecoveryState
    RECOVERING or the new leader was in neither the previous ISR nor ELR.
    Exit 1 when an unclean election or a re-created topic is found (or the
    bytes are damaged), 0 otherwise.
    """
    run_command(lambda: bodies.metadata(path, at, brokers, topic, output, limits))


@app.command()
@input_limits()
@output_options(encoding=None, json_help=JSON_LINES)
def diff(
    a: str = typer.Argument(..., show_default=False, metavar="A",
                            help="A copy of a partition: its directory (segments in offset order) or a segment file."),
    b: str = typer.Argument(..., show_default=False, metavar="B",
                            help="Another copy of the same partition (a replica, a backup, a mirror)."),
    output: Output = FROM_OPTIONS,
    limits: InputLimits = FROM_OPTIONS,
) -> None:
    """Compare two copies of a partition by offset: where they agree, diverge and lose records.

    Where they agree up to, where they diverge, what each has that the other
    lost, with leader epochs.

    Batches are compared whole where both copies have the same batch, else
    record by record.  Offsets one copy lacks by log compaction or retention
    are shown as such, not as loss.  Verdict: identical, a-contains-b,
    b-contains-a, equivalent (each lacks only what compaction removed) or
    diverged.  Exit 1 when the copies diverge (or their bytes are damaged).
    """
    run_command(lambda: bodies.diff(a, b, output, limits))
