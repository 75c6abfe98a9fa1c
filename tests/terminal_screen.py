"""kafkadump on a real pseudo-terminal of a given width, read back by a terminal emulator (pyte).

:func:`on_screen` runs the CLI with stdout (and stderr) on a pty of ``cols`` columns, feeds what it
wrote to a pyte screen as a terminal would show it and returns the screen's rows.  A line longer
than the width wraps on the screen (the cursor ends further down than the lines written), so
:attr:`Screen.wrapped` says whether any did; :meth:`Screen.text` is the screen's text with every
run of white space made one space, for "is this sentence whole on screen" checks.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios

import pyte
import pytest


class Screen:
    def __init__(self, raw: bytes, cols: int, rc: int, stderr: str = "") -> None:
        self.raw, self.cols, self.rc, self.stderr = raw, cols, rc, stderr
        lines = raw.count(b"\n")
        screen = pyte.Screen(cols, max(24, lines * 3 + 10))
        pyte.ByteStream(screen).feed(raw)
        self.rows = [row.rstrip() for row in screen.display]
        while self.rows and not self.rows[-1]:
            self.rows.pop()
        self.wrapped = screen.cursor.y != lines

    def text(self) -> str:
        return " ".join(" ".join(self.rows).split())

    def holds(self, sentence: str) -> bool:
        """``sentence`` is on the screen whole (folded between words is whole, and so is a word
        longer than the line broken where the line ends)."""
        return "".join(sentence.split()) in "".join(self.text().split())


def run_in_terminal(args: list[str], cols: int, rows: int = 50, *, stderr_tty: bool = False,
                    timeout: float = 120, no_color: bool = False) -> tuple[bytes, bytes, int]:
    """``kafkadump ARGS`` with stdout (or, with ``stderr_tty``, stderr) on a ``cols``-wide pty, the other
    on a pipe: ``(what the terminal got, what the pipe got, exit status)``."""
    try:
        master, slave = pty.openpty()
    except OSError as e:  # pragma: no cover - a sandbox without /dev/ptmx
        pytest.skip(f"no pseudo-terminal can be opened here: {e}")
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR")}
    env["TERM"] = "xterm-256color"
    if no_color:
        env["NO_COLOR"] = "1"
    p = subprocess.Popen([sys.executable, "-m", "kafkadump", *args], stdin=slave,
                         stdout=subprocess.PIPE if stderr_tty else slave,
                         stderr=slave if stderr_tty else subprocess.PIPE, env=env, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            p.kill()
            raise AssertionError(f"kafkadump {args} wrote nothing for {timeout} s")
        try:
            data = os.read(master, 1 << 16)
        except OSError:   # EIO: every holder of the terminal has closed it
            break
        if not data:
            break
        chunks.append(data)
    out, err = p.communicate(timeout=timeout)
    os.close(master)
    return b"".join(chunks), out if stderr_tty else err, p.returncode


def on_screen(args: list[str], cols: int, rows: int = 50, timeout: float = 120) -> Screen:
    """``kafkadump ARGS`` with stdout on a ``cols``-wide pty (stderr on a pipe: no progress bar)."""
    raw, err, rc = run_in_terminal(args, cols, rows, timeout=timeout)
    return Screen(raw, cols, rc, err.decode(errors="replace"))


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

__all__ = ["Screen", "on_screen", "run_in_terminal", "ANSI"]


def finding_messages(docs: list[dict]) -> list[str]:
    """Every finding's message in ``--json`` documents, wherever it is nested (what a screen must show whole)."""
    out: list[str] = []

    def walk(o: object) -> None:
        if isinstance(o, dict):
            if "code" in o and "message" in o and "severity" in o:
                out.append(o["message"])
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    for d in docs:
        walk(d)
    return out
