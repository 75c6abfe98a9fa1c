"""The data commands' usual command lines, parsed and run without typer (start-up time).

Importing typer costs more than a small ``batches`` run.  For the commands
in :mod:`.fast_options` (generated from the typer app by
tools/gen_fast_options.py), :func:`run_fast` parses the command line as
typer's parser would and runs the same command body (:mod:`.segment_bodies`, ...)
through the same runner (:mod:`.running`).  It parses only what it fully
understands: known options with valid values and the arguments the command
takes.  Anything else (``--help``, an unknown or misspelt option, a bad value,
a missing argument) returns to the caller, and typer parses the command line
and says what is wrong in its own words.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from kafkadump.cli.fast_options import COMMANDS
from kafkadump.cli.option_values import CHOICES, GROUP_BUILDERS
from kafkadump.cli.running import quiet_exit, run_body, run_guarded, set_parsed_options


def _segment_bodies() -> ModuleType:
    from kafkadump.cli import segment_bodies

    return segment_bodies


def _capture_body() -> ModuleType:
    from kafkadump.cli import capture_body

    return capture_body


def _logdir_bodies() -> ModuleType:
    from kafkadump.cli import logdir_bodies

    return logdir_bodies


def _forensics_bodies() -> ModuleType:
    from kafkadump.cli import forensics_bodies

    return forensics_bodies


def _replica_bodies() -> ModuleType:
    from kafkadump.cli import replica_bodies

    return replica_bodies


def _payload_bodies() -> ModuleType:
    from kafkadump.cli import payload_bodies

    return payload_bodies


def _report_body() -> ModuleType:
    from kafkadump.cli import report_body

    return report_body


# the typer command module -> the module of its commands' bodies (by the same function names)
BODY_MODULES: dict[str, Callable[[], ModuleType]] = {"segment_commands": _segment_bodies,
                                                     "capture_command": _capture_body,
                                                     "logdir_commands": _logdir_bodies,
                                                     "forensics_commands": _forensics_bodies,
                                                     "replica_commands": _replica_bodies,
                                                     "payload_commands": _payload_bodies,
                                                     "report_command": _report_body}


# set, typer answers a shell's completion request instead of running the command
COMPLETION_VARIABLE = "_KAFKADUMP_COMPLETE"


class _NotMine(Exception):
    """The command line is not one the fast path fully understands: typer's turn."""


def parse(argv: list[str]) -> tuple[str, dict[str, Any]] | None:
    """``(command, its parameters by name)`` for a command line the fast path fully understands (the
    values typer would give the command function), else None."""
    spec = COMMANDS.get(argv[0]) if argv else None
    if spec is None or os.environ.get(COMPLETION_VARIABLE):
        return None
    try:
        return argv[0], _parse_command(spec, argv[1:])
    except _NotMine:
        return None


def _parse_command(spec: dict[str, Any], args: list[str]) -> dict[str, Any]:
    options: dict[str, tuple[str, str, bool, Any]] = spec["options"]
    given: dict[str, Any] = {}
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            positional += args[i:]
            break
        if arg[:1] != "-" or len(arg) == 1:
            positional.append(arg)
            continue
        name, value = _split(arg, options)
        row = options[name]
        if row[1] == "flag":
            if value is not None:
                raise _NotMine  # a flag given a value
            given[row[0]] = row[3]
            continue
        if value is None:
            if i == len(args):
                raise _NotMine  # the value is missing
            value = args[i]
            i += 1
        converted = _converted(row, value)
        if row[2]:
            given.setdefault(row[0], []).append(converted)
        else:
            given[row[0]] = converted
    params = _with_defaults(spec, given)
    params.update(_arguments(spec["arguments"], positional))
    return params


def _split(arg: str, options: dict[str, Any]) -> tuple[str, str | None]:
    """The option an argument names and the value it carries (``--name=value``, ``-xvalue``)."""
    if arg.startswith("--"):
        name, eq, value = arg.partition("=")
        if name not in options:
            raise _NotMine
        return name, value if eq else None
    name = arg[:2]
    if name not in options:
        raise _NotMine
    if len(arg) == 2:
        return name, None
    if options[name][1] == "flag":
        raise _NotMine  # short flags run together: typer's to parse
    return name, arg[2:]


def _converted(row: tuple[str, str, bool, Any], value: str) -> Any:
    kind, detail = row[1], row[3]
    if kind == "text":
        return value
    if kind == "choice":
        if value not in detail[1]:
            raise _NotMine
        return CHOICES[detail[0]](value)
    digits = value[1:] if value[:1] == "-" else value
    if not (digits.isascii() and digits.isdigit()):
        raise _NotMine  # not plain decimal digits: typer says what it thinks
    number = int(value)
    low, high = detail
    if (low is not None and number < low) or (high is not None and number > high):
        raise _NotMine
    return number


def _with_defaults(spec: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name, default in spec["defaults"].items():
        if name in given:
            params[name] = given[name]
            continue
        if isinstance(default, list):  # a repeatable option's default: the command's own copy
            params[name] = list(default)
            continue
        row = next(r for r in spec["options"].values() if r[0] == name)
        params[name] = CHOICES[row[3][0]](default) if row[1] == "choice" and default is not None else default
    return params


def _arguments(arguments: tuple[tuple[str, int], ...], positional: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    rest = list(positional)
    for name, nargs in arguments:
        if not rest:
            raise _NotMine  # a missing argument
        if nargs == -1:
            out[name], rest = rest, []
        else:
            out[name], rest = rest[0], rest[1:]
    if rest:
        raise _NotMine  # an extra argument
    return out


def body_of(command: str) -> Callable[..., int]:
    """The body function of a command in the table."""
    module, name = COMMANDS[command]["body"]
    body: Callable[..., int] = getattr(BODY_MODULES[module](), name)
    return body


def call_body(command: str, params: dict[str, Any]) -> int:
    """Run the command's body with its parameters (the option groups built as typer's wrappers
    build them), as :func:`.main.run_command` runs it under typer: its exit status."""
    kwargs = dict(params)
    for group, names in COMMANDS[command]["groups"].items():
        kwargs[group] = GROUP_BUILDERS[group](**{n: kwargs.pop(n) for n in names})
    body = body_of(command)
    set_parsed_options(params)
    try:
        return run_body(lambda: body(**kwargs))
    except KeyboardInterrupt:  # as typer answers them: exit 130 (after a new line on stderr for EOF)
        return 130
    except EOFError:
        sys.stderr.write("\n")
        sys.stderr.flush()
        quiet_exit(130)
    finally:
        set_parsed_options(None)


def run_fast(argv: list[str]) -> None:
    """Run the command line and exit, when it is one the fast path fully understands; else return."""
    parsed = parse(argv)
    if parsed is None:
        return
    command, params = parsed
    run_guarded(lambda: call_body(command, params), argv)
