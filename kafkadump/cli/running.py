"""Running a command body, without typer: exit codes, one-line errors, quiet on a closed pipe or Ctrl-C.

Both entry paths use these: :mod:`.main` (typer parses the command line) and
:mod:`.fast_path` (the data commands' usual command lines, parsed without
typer).  A body returns the exit status of the data
(:mod:`kafkadump.base.status`); usage and input/output errors
(:mod:`kafkadump.base.errors`) become one line on stderr and exit 2.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeVar

from kafkadump.base.errors import KafkadumpError
from kafkadump.objects.command_objects import error_line_object
from kafkadump.render.jsontext import dumps
from kafkadump.render.lines import terminal_safe

if TYPE_CHECKING:
    from kafkadump.base.status import Tally

_T = TypeVar("_T")

# the parsed options of the command the fast path is running (typer's are in its click context)
_fast_params: dict[str, Any] | None = None


def set_parsed_options(params: dict[str, Any] | None) -> None:
    """The options the fast path parsed for the command it runs (None when it is done): what
    :func:`json_wanted` reads, as it reads typer's context under typer."""
    global _fast_params
    _fast_params = params


def _parsed_options() -> dict[str, Any] | None:
    if _fast_params is not None:
        return _fast_params
    click_globals = sys.modules.get("typer._click.globals")  # typer is running the command (never imported here)
    ctx = click_globals.get_current_context(silent=True) if click_globals is not None else None
    return ctx.params if ctx is not None else None


def json_wanted(argv: list[str] | None = None) -> bool:
    """Whether the command being run asked for JSON (then errors are JSON objects on stderr too)."""
    params = _parsed_options()
    if params:
        fmt = params.get("fmt")
        return bool(params.get("json_")) or getattr(fmt, "value", fmt) == "json"
    argv = sys.argv[1:] if argv is None else argv
    return "--json" in argv or "--format=json" in argv or "-fjson" in argv or any(
        a in ("--format", "-f") and b == "json" for a, b in zip(argv, argv[1:]))


def say_error(message: str, code: int = 2, as_json: bool | None = None) -> None:
    """One line on stderr: ``kafkadump: MESSAGE`` (under --json, a JSON object)."""
    message = terminal_safe(" ".join(str(message).split()))
    if as_json is None:
        as_json = json_wanted()
    if as_json:
        line = dumps(error_line_object(message, code))
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


def run_body(fn: Callable[[], int]) -> int:
    """Run a command body: its exit status, our errors mapped to exit 2 and a message on stderr."""
    try:
        code = fn()
    except KafkadumpError as e:
        say_error(str(e))
        return 2
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
    return code


def _write_failed(e: OSError) -> NoReturn:
    """An output that cannot be written (a full disk): an I/O error, exit 2, naming the file."""
    where = e.filename if e.filename else "standard output"
    say_error(f"{where}: cannot write: {e.strerror or e}")
    quiet_exit(2)


_WRITE_CHUNK = 8192  # the text stream's chunk and its buffer's size


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
        if len(text) <= _WRITE_CHUNK:
            return self._guarded(self._stream.write, text)
        return self._guarded(self._write_in_chunks, text)

    def _write_in_chunks(self, text: str) -> int:
        # CPython's text stream loses the rest of a write larger than its buffer when a signal cuts the
        # pipe write short and the handler returns (a window of record lines, 582 KB, reached the pipe
        # as its first 128 KiB): written a buffer's worth at a time, every byte goes out
        write = self._stream.write
        for start in range(0, len(text), _WRITE_CHUNK):
            write(text[start:start + _WRITE_CHUNK])
        return len(text)

    def flush(self) -> None:
        return self._guarded(self._stream.flush)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def run_guarded(run: Callable[[], int | None], argv: list[str]) -> NoReturn:
    """Run a parsed command line (``run`` returns its exit status) and exit: one-line errors, quiet
    on a closed pipe or Ctrl-C, never a traceback (``KAFKADUMP_DEBUG=1`` shows a bug's)."""
    # (without threading imported, no thread but the main one runs Python: threading's import is spared)
    threading = sys.modules.get("threading")
    main_thread = threading is None or threading.current_thread() is threading.main_thread()
    _escape_what_the_terminal_cannot_encode()
    if main_thread and not isinstance(sys.stdout, _WholeWrites):
        sys.stdout = _WholeWrites(sys.stdout)
    stdout_was = _stdout_identity()
    try:
        code = run()
    except SystemExit as e:
        # rich answers a closed pipe (``kafkadump --help | head -1``) by pointing stdout at
        # /dev/null and exiting 1: the reader went away, which is not a failure
        if e.code == 1 and stdout_was is not None and _stdout_identity() == _devnull_identity() != stdout_was:
            quiet_exit(0)
        raise
    except (KeyboardInterrupt, EOFError):  # (typer's path gets these as its Abort)
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
