"""The command line: a thin layer of typer commands over the library.

A command parses its options, calls the one library function that yields
the items of its report (:mod:`kafkadump.segment_report`, :mod:`kafkadump.logdir`,
...), hands them to the renderer its format names (:mod:`kafkadump.render`)
and exits with the status the report's findings give
(:mod:`kafkadump.report.status`): 0 clean, 1 the data has problems, 2 usage
or I/O error.  Data goes to stdout, diagnostics to stderr.  Nothing outside
this package imports it.

Keep heavy imports inside command bodies.  The command modules register
their commands on :data:`app` when imported: all of them the first time
typer reads the app's commands (``--help``, tests, the man page builder),
only the one the command line names when :func:`main` runs a command.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from .app import app
from .main import main as run_main


def _segment_commands() -> None:
    from . import segment_commands  # noqa: F401  (its commands register on the app)


def _capture_command() -> None:
    from . import capture_command  # noqa: F401


def _logdir_commands() -> None:
    from . import logdir_commands  # noqa: F401


def _forensics_commands() -> None:
    from . import forensics_commands  # noqa: F401


def _payload_commands() -> None:
    from . import payload_commands  # noqa: F401


def _replica_commands() -> None:
    from . import replica_commands  # noqa: F401


def _manual_command() -> None:
    from . import manual_command  # noqa: F401


def _spark_commands() -> None:
    from . import spark_commands  # noqa: F401


# every command module, in the order their commands appear in ``kafkadump --help``
_COMMAND_MODULES: list[tuple[Callable[[], None], tuple[str, ...]]] = [
    (_capture_command, ("capture",)),
    (_forensics_commands, ("txn", "offsets")),
    (_logdir_commands, ("dump", "triage", "carve")),
    (_manual_command, ("man",)),
    (_payload_commands, ("schemas",)),
    (_replica_commands, ("metadata", "diff")),
    (_segment_commands, ("batches", "records", "verify-crc", "hexdump")),
    (_spark_commands, ("spark",)),
]
_MODULE_OF_COMMAND = {name: load for load, names in _COMMAND_MODULES for name in names}


def load_all_commands() -> None:
    """Import every command module (their commands register on :data:`app`), the commands in the
    order of the table above whichever module was imported first."""
    for load, _names in _COMMAND_MODULES:
        load()
    order = {load.__name__.lstrip("_"): i for i, (load, _names) in enumerate(_COMMAND_MODULES)}
    app.registered_commands.sort(key=lambda info: order.get(info.callback.__module__.rsplit(".", 1)[-1], len(order)))


app.load_commands = load_all_commands


def main() -> None:
    """Console entry point: import the command module the command line names (all of them for anything
    else: ``--help``, ``--version``, an unknown command), then run it (:func:`kafkadump.cli.main.main`)."""
    argv = sys.argv[1:]
    load = _MODULE_OF_COMMAND.get(argv[0]) if argv else None
    if load is not None and app.load_commands is load_all_commands:
        app.load_commands = None
        load()
    run_main()


__all__ = ["app", "load_all_commands", "main"]
