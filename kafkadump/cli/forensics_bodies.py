"""The bodies of txn and offsets, without typer.

Each takes the command's options (by the names of the parameters of the
commands in :mod:`.forensics_commands`, the option group built: ``output``)
and returns the exit status.  The typer commands run them through
:func:`.typer_main.run_command`, the fast path (:mod:`.fast_path`) through
:func:`.running.run_body`: one body per command whichever parsed its options.
"""

from __future__ import annotations

import os
import sys

from kafkadump.base.errors import InputError, UsageError
from kafkadump.base.status import Tally
from kafkadump.cli.option_values import Output, TxnState
from kafkadump.cli.running import finish

PARTITION_SEARCH_DEPTH = 5
PARTITION_SEARCH_DIRS = 100_000


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


def txn(paths: list[str], txn_partitions: int, bootstrap: str, transactional_id: list[str] | None,
        state: list[TxnState] | None, jobs: int, output: Output) -> int:
    from kafkadump.cli.progress import Progress
    from kafkadump.render import transaction_table as render
    from kafkadump.reports.triage import transactions_report

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


def offsets(paths: list[str], time: str | None, history: bool, group: list[str] | None, offsets_partitions: int,
            output: Output) -> int:
    from kafkadump.render import offsets_table as render
    from kafkadump.reports.offsets import OffsetsQuery, offsets_report
    from kafkadump.reports.query import parse_time

    _existing(paths)
    tally = Tally()
    query = OffsetsQuery(parse_time(time, "--time"), history, tuple(group) if group else None, offsets_partitions)
    items = offsets_report(paths, query, tally)
    if output.json:
        render.write_offsets_json(items, sys.stdout)
    else:
        console = output.console()
        render.write_offsets_table(items, sys.stdout, console, output.layout(console))
    return finish(tally)
