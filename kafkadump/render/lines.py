"""Writing human output: one line at a time, plain or styled, and never raw bytes from the input.

Every line-oriented renderer (tables, hexdumps, log-dir dumps) writes through
:class:`LineWriter`, so how a line reaches the terminal is decided once; text
written in bulk (dump-log, verify-crc lines) goes through :func:`terminal_safe`.

A forensic tool must not obey the bytes it shows: keys, values, header
keys, topic names, client ids, file names may hold escape sequences that
clear the screen or retitle the terminal.  :func:`terminal_safe` shows every
C0 control (``\\x1b``), DEL (``\\x7f``), C1 control (``\\u009b``), Unicode
line and paragraph separator and bidirectional override (``\\u202e``) as its
escape.  Rich markup in the text is never interpreted (``markup=False``;
rich table cells are ``Text`` objects).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from .jsontext import BIDI_CONTROLS

if TYPE_CHECKING:
    from rich.console import Console

_UNSAFE = {**{c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F)}, 0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r",
           **{c: f"\\u{c:04x}" for c in (*range(0x80, 0xA0), 0x2028, 0x2029, *BIDI_CONTROLS)}}
_ONE_LINE = str.maketrans(_UNSAFE)
_MULTI_LINE = str.maketrans({c: e for c, e in _UNSAFE.items() if c != 0x0A})


def terminal_safe(text: str, keep_newlines: bool = False) -> str:
    """``text`` with every control character, line separator and bidi override escaped
    (newlines kept as they are with ``keep_newlines``, for text written in bulk)."""
    return text.translate(_MULTI_LINE if keep_newlines else _ONE_LINE)


class LineWriter:
    """Lines to ``out``, or, with a rich ``console``, printed in a style (never as markup)."""

    def __init__(self, out: TextIO, console: Console | None = None) -> None:
        self.out = out
        self.console = console

    def line(self, text: str, style: str | None = None) -> None:
        text = text.translate(_ONE_LINE)
        if self.console is not None:
            from rich.cells import cell_len

            # a line longer than the terminal (a finding's message) is folded between words with the
            # terminal's width, never left to the terminal to break mid-word
            fold = cell_len(text) > self.console.width
            self.console.print(text, style=style, markup=False, highlight=False, soft_wrap=not fold,
                               overflow="fold" if fold else None)
        else:
            self.out.write(text + "\n")


__all__ = ["LineWriter", "terminal_safe"]
