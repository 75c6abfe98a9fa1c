"""Running a command under typer: exit codes, one-line errors, quiet on a closed pipe or Ctrl-C.

Every typer command body runs through :func:`run_command`: usage and input/output
errors (:mod:`kafkadump.base.errors`) become one line on stderr and exit 2; the
body returns the exit status of the data (:mod:`kafkadump.base.status`).
The typer-free part (shared with the fast path) is :mod:`.running`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NoReturn

import typer

from kafkadump.cli.running import (  # noqa: F401 (re-exported: the command modules import them from here)
    finish,
    json_wanted,
    quiet_exit,
    run_body,
    run_guarded,
    say_error,
)
from kafkadump.cli.typer_app import app


def run_command(fn: Callable[[], int]) -> NoReturn:
    """Run a command body, mapping our errors to exit codes and messages on stderr."""
    raise typer.Exit(run_body(fn))


def main() -> None:
    """Console entry point: one-line errors, quiet on a closed pipe or Ctrl-C, never a traceback."""
    argv = sys.argv[1:]
    run_guarded(lambda: _run_typer(argv), argv)


def _run_typer(argv: list[str]) -> int | None:
    """The command line parsed and run by typer: its exit status; usage errors as one line, exit 2."""
    from typer._click.exceptions import ClickException, NoArgsIsHelpError
    from typer._click.exceptions import UsageError as ClickUsageError
    from typer.exceptions import Abort

    try:
        code: int | None = app(args=argv, standalone_mode=False, prog_name="kafkadump")
    except NoArgsIsHelpError:
        return 2   # no command: typer has shown the help (once); a usage error
    except ClickUsageError as e:
        hint = f" (see '{e.ctx.command_path} -h')" if e.ctx is not None and e.ctx.parent is not None \
            else " (see 'kafkadump -h')"
        say_error(e.format_message() + hint, 2, json_wanted(argv))
        quiet_exit(2)
    except ClickException as e:
        say_error(e.format_message(), 2, json_wanted(argv))
        quiet_exit(2)
    except Abort:
        quiet_exit(130)
    return code
