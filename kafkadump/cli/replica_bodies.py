"""The bodies of metadata and diff, without typer.

Each takes the command's options (by the names of the parameters of the
commands in :mod:`.replica_commands`, the option groups built: ``output``,
``limits``) and returns the exit status.  The typer commands run them through
:func:`.typer_main.run_command`, the fast path (:mod:`.fast_path`) through
:func:`.running.run_body`: one body per command whichever parsed its options.
"""

from __future__ import annotations

import sys

from kafkadump.base.status import Tally
from kafkadump.cli.option_values import InputLimits, Output
from kafkadump.cli.running import finish


def metadata(path: str, at: str | None, brokers: bool, topic: list[str] | None, output: Output,
             limits: InputLimits) -> int:
    from kafkadump.render import metadata_views as render
    from kafkadump.reports.metadata import metadata_report

    tally = Tally()
    items = metadata_report(path, limits.options(), tally, at=at, brokers=brokers, topics=topic)
    if output.json:
        render.write_metadata_json(items, sys.stdout)
    else:
        render.write_metadata_table(items, sys.stdout, output.console())
    return finish(tally)


def diff(a: str, b: str, output: Output, limits: InputLimits) -> int:
    from kafkadump.render import diff_views as render
    from kafkadump.reports.diff import diff_report

    tally = Tally()
    items = diff_report(a, b, limits.options(records=False), tally)
    if output.json:
        render.write_diff_json(items, sys.stdout)
    else:
        render.write_diff_table(items, sys.stdout, output.console())
    return finish(tally)
