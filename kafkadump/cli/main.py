"""Running a command: exit codes, one-line errors, quiet on a closed pipe or Ctrl-C.

Every command body runs through :func:`run_command`: usage and input/output
errors (:mod:`kafkadump.errors`) become one line on stderr and exit 2; the
body returns the exit status of the data (:mod:`kafkadump.report.status`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, NoReturn, TextIO, TypeVar

import typer

from ..errors import KafkadumpError
from ..render.lines import terminal_safe
from ..report.status import Tally
from .app import app

_T = TypeVar("_T")


def json_wanted(argv: list[str] | None = None) -> bool:
    """Whether the command being run asked for JSON (then errors are JSON objects on stderr too)."""
    try:
        from typer._click.globals import get_current_context

        ctx = get_current_context(silent=True)
    except Exception:  # pragma: no cover - typer internals moved
        ctx = None
    if ctx is not None and ctx.params:
        fmt = ctx.params.get("fmt")
        return bool(ctx.params.get("json_")) or getattr(fmt, "value", fmt) == "json"
    argv = sys.argv[1:] if argv is None else argv
    return "--json" in argv or "--format=json" in argv or "-fjson" in argv or any(
        a in ("--format", "-f") and b == "json" for a, b in zip(argv, argv[1:]))


def say_error(message: str, code: int = 2, as_json: bool | None = None) -> None:
    """One line on stderr: ``kafkadump: MESSAGE`` (under --json, a JSON object)."""
    message = terminal_safe(" ".join(str(message).split()))
    if as_json is None:
        as_json = json_wanted()
    if as_json:
        line = json.dumps({"type": "error", "message": message, "exitStatus": code})
    else:
        line = f"kafkadump: {message}"
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # pragma: no cover - stderr is gone too
        pass


def finish(tally: Tally) -> int:
    """After a report is written: its notes and the input errors met on the way on stderr; its exit status."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        quiet_exit(0)
    for note in tally.notes:
        say_error(f"note: {note}", 0)
    for error in tally.input_errors:
        say_error(error, 2)
    return tally.exit_status


def run_command(fn: Callable[[], int]) -> NoReturn:
    """Run a command body, mapping our errors to exit codes and messages on stderr."""
    try:
        code = fn()
    except KafkadumpError as e:
        say_error(str(e))
        raise typer.Exit(2) from None
    except BrokenPipeError:
        # the reader went away (``| head``): what was printed is complete lines
        quiet_exit(0)
    except OSError as e:
        _write_failed(e)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        quiet_exit(0)
    except OSError as e:
        _write_failed(e)
    raise typer.Exit(code)


def _write_failed(e: OSError) -> NoReturn:
    """An output that cannot be written (a full disk): an I/O error, exit 2, naming the file."""
    where = e.filename if e.filename else "standard output"
    say_error(f"{where}: cannot write: {e.strerror or e}")
    quiet_exit(2)


class _WholeWrites:
    """stdout whose writes and flushes Ctrl-C cannot cut in half.

    A KeyboardInterrupt raised inside a write (CPython checks for signals
    between the partial writes of a large buffer) can leave half a line on
    the pipe and drop the rest.  So SIGINT gets a handler that, during a
    write or flush, only notes the interrupt, and raises KeyboardInterrupt
    as soon as the write is complete; outside writes it raises at once, as
    usual.  What was printed is whole lines.
    """

    def __init__(self, stream: TextIO) -> None:
        import signal

        self._stream = stream
        self._busy = False
        self._pending = False
        signal.signal(signal.SIGINT, self._on_sigint)

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self._busy:
            self._pending = True
            return
        raise KeyboardInterrupt

    def _guarded(self, fn: Callable[..., _T], *a: object) -> _T:
        self._busy = True
        try:
            return fn(*a)
        finally:
            self._busy = False
            if self._pending:
                self._pending = False
                raise KeyboardInterrupt

    def write(self, text: str) -> int:
        return self._guarded(self._stream.write, text)

    def flush(self) -> None:
        return self._guarded(self._stream.flush)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main() -> None:
    """Console entry point: one-line errors, quiet on a closed pipe or Ctrl-C, never a traceback."""
    from typer._click.exceptions import ClickException, NoArgsIsHelpError
    from typer._click.exceptions import UsageError as ClickUsageError
    from typer.exceptions import Abort

    argv = sys.argv[1:]
    import threading

    _escape_what_the_terminal_cannot_encode()
    if threading.current_thread() is threading.main_thread() and not isinstance(sys.stdout, _WholeWrites):
        sys.stdout = _WholeWrites(sys.stdout)
    stdout_was = _stdout_identity()
    try:
        code = app(args=argv, standalone_mode=False, prog_name="kafkadump")
    except SystemExit as e:
        # rich answers a closed pipe (``kafkadump --help | head -1``) by pointing stdout at
        # /dev/null and exiting 1: the reader went away, which is not a failure
        if e.code == 1 and stdout_was is not None and _stdout_identity() == _devnull_identity() != stdout_was:
            quiet_exit(0)
        raise
    except NoArgsIsHelpError:
        app(args=argv + ["--help"], prog_name="kafkadump")
        return
    except ClickUsageError as e:
        hint = f" (see '{e.ctx.command_path} -h')" if e.ctx is not None and e.ctx.parent is not None \
            else " (see 'kafkadump -h')"
        say_error(e.format_message() + hint, 2, json_wanted(argv))
        quiet_exit(2)
    except ClickException as e:
        say_error(e.format_message(), 2, json_wanted(argv))
        quiet_exit(2)
    except (KeyboardInterrupt, Abort):
        quiet_exit(130)
    except BrokenPipeError:
        quiet_exit(0)
    except MemoryError:
        say_error("out of memory; lower --max-decompressed or give smaller inputs", 2, json_wanted(argv))
        quiet_exit(2)
    except Exception as e:
        if os.environ.get("KAFKADUMP_DEBUG"):
            raise
        # a bug in kafkadump, not in the input: still one line, exit 2
        say_error(f"internal error: {type(e).__name__}: {e}; please report it "
                   f"(KAFKADUMP_DEBUG=1 shows the traceback)", 2, json_wanted(argv))
        quiet_exit(2)
    if code == 130:
        quiet_exit(130)
    sys.exit(code or 0)


def _escape_what_the_terminal_cannot_encode() -> None:
    """Characters the output encoding lacks (``PYTHONIOENCODING=ascii``, a C locale) become
    ``\\u`` escapes instead of an error."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # pragma: no cover - a stream that cannot change
                pass


def _stdout_identity() -> tuple[int, int] | None:
    try:
        st = os.fstat(1)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _devnull_identity() -> tuple[int, int] | None:
    try:
        st = os.stat(os.devnull)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def quiet_exit(code: int) -> NoReturn:
    # Flush what is buffered (whole lines: a cut line would be half flushed and half lost);
    # if stdout is gone, point it at devnull so the interpreter's final flush is silent.
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    except KeyboardInterrupt:  # pragma: no cover - a second Ctrl-C while flushing
        pass
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
    sys.exit(code)
