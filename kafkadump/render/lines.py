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
    """Lines to ``out``, or, with a rich ``console``, printed in a style (never as markup).

    A styled line is the text between the style's escape codes, as rich prints it; the codes
    are rendered by rich once per style and the line written directly (``console.print`` per
    line would cost more than the decoding on a long table).
    """

    def __init__(self, out: TextIO, console: Console | None = None) -> None:
        self.out = out
        self.console = console
        self._codes: dict[str | None, tuple[str, str]] = {}

    def line(self, text: str, style: str | None = None, fold: bool = True) -> None:
        """Write one line; with ``fold``, a line wider than the terminal is folded between words
        (a table's rows are laid out by the table and never folded: ``--wide`` means every column)."""
        text = text.translate(_ONE_LINE)
        if self.console is not None:
            if fold and 2 * len(text) > self.console.width and self._wider_than_terminal(text):
                # a line longer than the terminal (a finding's message) is folded between words with the
                # terminal's width, never left to the terminal to break mid-word
                self.console.print(text, style=style, markup=False, highlight=False, overflow="fold")
                return
            before, after = self._codes.get(style) or self._style_codes(style)
            self.console.file.write(before + text + after + "\n")
        else:
            self.out.write(text + "\n")

    def _wider_than_terminal(self, text: str) -> bool:
        from rich.cells import cell_len

        assert self.console is not None, "a width is a console's"
        return cell_len(text) > self.console.width

    def _style_codes(self, style: str | None) -> tuple[str, str]:
        """The escape codes rich writes before and after a line in ``style`` (none for no style)."""
        from rich.console import COLOR_SYSTEMS
        from rich.style import Style

        assert self.console is not None, "styles are for a console"
        system = COLOR_SYSTEMS.get(self.console.color_system or "")
        codes = ("", "")
        if style and system is not None:
            before, _, after = Style.parse(style).render("\x00", color_system=system).partition("\x00")
            codes = (before, after)
        self._codes[style] = codes
        return codes


__all__ = ["LineWriter", "terminal_safe"]
