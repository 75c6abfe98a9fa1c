"""The command line: a thin layer of typer commands over the library.

A command parses its options, calls the one library function that yields
the items of its report (:mod:`kafkadump.reports.segments`, :mod:`kafkadump.reports.triage`,
...), hands them to the renderer its format names (:mod:`kafkadump.render`)
and exits with the status the report's findings give
(:mod:`kafkadump.base.status`): 0 clean, 1 the data has problems, 2 usage
or I/O error.  Data goes to stdout, diagnostics to stderr.  Nothing outside
this package imports it.

Keep heavy imports inside command bodies.  The command modules register
their commands on :data:`app` when imported: all of them the first time
typer reads the app's commands (``--help``, tests, the man page builder),
only the one the command line names when :func:`main` runs a command.

A data command's usual command line never reaches typer: :mod:`.fast_path`
parses it with an option table generated from the typer app and runs the
same command body; anything it does not fully understand goes to typer.
Importing this package imports neither typer nor the app until :data:`app`
is read.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkadump.cli.typer_app import CommandsOnDemand, app


def _segment_commands() -> None:
    from kafkadump.cli import segment_commands  # noqa: F401  (its commands register on the app)


def _capture_command() -> None:
    from kafkadump.cli import capture_command  # noqa: F401


def _logdir_commands() -> None:
    from kafkadump.cli import logdir_commands  # noqa: F401


def _forensics_commands() -> None:
    from kafkadump.cli import forensics_commands  # noqa: F401


def _payload_commands() -> None:
    from kafkadump.cli import payload_commands  # noqa: F401


def _replica_commands() -> None:
    from kafkadump.cli import replica_commands  # noqa: F401


def _manual_command() -> None:
    from kafkadump.cli import manual_command  # noqa: F401


def _report_command() -> None:
    from kafkadump.cli import report_command  # noqa: F401


def _spark_commands() -> None:
    from kafkadump.cli import spark_commands  # noqa: F401


# every command module, in the order their commands appear in ``kafkadump --help``
_COMMAND_MODULES: list[tuple[Callable[[], None], tuple[str, ...]]] = [
    (_segment_commands, ("batches", "records", "verify-crc", "hexdump")),
    (_logdir_commands, ("dump", "triage", "carve")),
    (_capture_command, ("capture",)),
    (_forensics_commands, ("txn", "offsets")),
    (_replica_commands, ("metadata", "diff")),
    (_payload_commands, ("schemas",)),
    (_report_command, ("report",)),
    (_spark_commands, ("spark",)),
    (_manual_command, ("man",)),
]
# the heading each command is listed under in ``kafkadump --help`` (everyday ones first)
HELP_PANELS = {"batches": "Segments", "records": "Segments", "verify-crc": "Segments", "hexdump": "Segments",
               "dump": "Log directories", "triage": "Log directories", "carve": "Log directories",
               "capture": "Wire traffic", "txn": "Incidents", "offsets": "Incidents", "metadata": "Incidents",
               "diff": "Incidents", "schemas": "Incidents", "report": "Incidents", "spark": "Fleet", "man": "Manual"}
_MODULE_OF_COMMAND = {name: load for load, names in _COMMAND_MODULES for name in names}


def load_all_commands() -> None:
    """Import every command module (their commands register on :data:`app`), the commands in the
    order of the table above whichever module was imported first."""
    app = _typer_app()
    for load, _names in _COMMAND_MODULES:
        load()
    order = {load.__name__.lstrip("_"): i for i, (load, _names) in enumerate(_COMMAND_MODULES)}
    app.registered_commands.sort(key=lambda info: order.get(info.callback.__module__.rsplit(".", 1)[-1], len(order)))
    _dressed(app)


def _dressed(app: CommandsOnDemand) -> None:
    """The commands under their headings, their options' help short (for ``--help``)."""
    for info in app.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")
        info.rich_help_panel = info.rich_help_panel or HELP_PANELS.get(name)
    for group in app.registered_groups:
        group.rich_help_panel = group.rich_help_panel or HELP_PANELS.get(group.name or "")
    for info in app.registered_commands:
        _help_fitted(info.callback)


# an option's help in --help: at most about two lines of an 80-column terminal's help column; the
# rest is in the manual page (``kafkadump man``)
HELP_CHARS = 110


def _help_fitted(callback: Callable[..., Any]) -> None:
    """The options of a command listed under headings (input limits, payloads, output) with short
    help: a longer text is cut at a sentence's end and points to the manual page."""
    import inspect

    for param in inspect.signature(callback).parameters.values():
        info = param.default
        help_text = getattr(info, "help", None)
        if help_text is None:
            continue
        if getattr(info, "rich_help_panel", None) is None:
            info.rich_help_panel = _OPTION_PANELS.get(param.name)
        if len(help_text) > HELP_CHARS:
            info.help = _first_sentences(help_text)


_OPTION_PANELS = {**dict.fromkeys(("max_decompressed", "max_depth", "max_ratio", "max_scan"), "Input limits"),
                  **dict.fromkeys(("detect", "schemas", "where", "redact", "redact_fields", "redact_secrets"),
                                  "Payloads and redaction"),
                  **dict.fromkeys(("json_", "fmt", "encoding", "color", "wide", "columns", "fields", "cols"),
                                  "Output")}


def _first_sentences(text: str) -> str:
    """``text`` up to the end of its last sentence within :data:`HELP_CHARS`, else up to a word, and
    where the rest is."""
    room = HELP_CHARS - 20
    ends, depth = [], 0
    for i, c in enumerate(text[:room]):
        depth += (c == "(") - (c == ")")
        if c in ".;" and depth == 0 and text[i + 1:i + 2] in (" ", "") and text[i - 3:i] not in ("e.g", "i.e"):
            ends.append(i + 1)
    cut = ends[-1] if ends and ends[-1] >= 30 else text.rfind(" ", 0, room)
    return text[:cut].rstrip(" .;:,") + " (more: kafkadump man)"


def _typer_app() -> CommandsOnDemand:
    """The typer application, every command module to be imported the first time its commands are read."""
    from kafkadump.cli.typer_app import app

    if not app.configured:
        app.configured = True
        app.load_commands = load_all_commands
    globals()["app"] = app
    return app


def __getattr__(name: str) -> Any:
    """:data:`app`, the typer application, imported (with typer) when first read."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _typer_app()


def main() -> None:
    """Console entry point: a data command's usual command line run by :mod:`.fast_path`; anything
    else by typer, after importing the command module the command line names (all of them for
    anything else: ``--help``, ``--version``, an unknown command) (:func:`.typer_main.main`)."""
    argv = sys.argv[1:]
    from kafkadump.cli.fast_path import run_fast

    run_fast(argv)  # returns only when the command line is not one it fully understands
    from kafkadump.cli.typer_main import main as run_main

    app = _typer_app()
    load = _MODULE_OF_COMMAND.get(argv[0]) if argv else None
    if load is not None and app.load_commands is load_all_commands:
        app.load_commands = None
        load()
        _dressed(app)
    run_main()


__all__ = ["app", "load_all_commands", "main"]
