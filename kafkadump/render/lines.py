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

from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from kafkadump.render.jsontext import BIDI_CONTROLS

if TYPE_CHECKING:
    from rich.console import Console

_UNSAFE = {**{c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F)}, 0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r",
           **{c: f"\\u{c:04x}" for c in (*range(0x80, 0xA0), 0x2028, 0x2029, *BIDI_CONTROLS)}}
_ONE_LINE = str.maketrans(_UNSAFE)
_MULTI_LINE = str.maketrans({c: e for c, e in _UNSAFE.items() if c != 0x0A})
# text that is printable holds none of them (each is a control, format or separator character), and
# nearly all text is: str.translate with multi-character escapes takes its slow path (a table lookup
# per character, ~0.3 us each) on every text, so it is kept for the text that is not


def one_line_safe(text: str) -> str:
    """``text`` with every control character (newlines too), line separator and bidi override escaped."""
    return text if text.isprintable() else text.translate(_ONE_LINE)


def terminal_safe(text: str, keep_newlines: bool = False) -> str:
    """``text`` with every control character, line separator and bidi override escaped
    (newlines kept as they are with ``keep_newlines``, for text written in bulk)."""
    if keep_newlines:
        return text if text.replace("\n", "").isprintable() else text.translate(_MULTI_LINE)
    return one_line_safe(text)


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
        """Write one line; with ``fold``, a line wider than the terminal is folded between words, its
        continuation indented under the line's text (a table's rows are laid out by the table and never
        folded: ``--wide`` means every column).  Nothing is cut."""
        text = one_line_safe(text)
        if self.console is not None:
            if fold and 2 * len(text) > self.console.width and self._wider_than_terminal(text):
                for part in self._folded(text, continuation="", indent=4):
                    self._styled(part, style)
                return
            self._styled(text, style)
        else:
            self.out.write(text + "\n")

    def command(self, text: str, style: str | None = None) -> None:
        """Write a shell command a person will copy: on a terminal narrower than it, folded between
        words with a `` \\`` at each break, so the lines paste as one command."""
        text = one_line_safe(text)
        if self.console is not None and self._wider_than_terminal(text):
            for part in self._folded(text, continuation=" \\", indent=4):
                self._styled(part, style)
        else:
            self.line(text, style, fold=False)

    def labelled_command(self, label: str, command: str, style: str | None = None) -> None:
        """``label`` and a shell command on one line when it fits, else the label on a line of its
        own and the command under it (folded as :meth:`command` folds it), so it can be copied."""
        if self.console is None or not self._wider_than_terminal(label + command):
            self.line(label + command, style, fold=False)
            return
        self.line(label.rstrip(), style)
        self.command(" " * (len(label) - len(label.lstrip()) + 2) + command, style)

    def _styled(self, text: str, style: str | None) -> None:
        assert self.console is not None, "a style is a console's"
        before, after = self._codes.get(style) or self._style_codes(style)
        self.console.file.write(before + text + after + "\n")

    def _folded(self, text: str, continuation: str, indent: int) -> list[str]:
        """``text`` broken between words into lines of the terminal's width (``continuation`` ending
        each line but the last, the later lines indented ``indent`` past the text's own indent); a
        word wider than the line is broken where the line ends, never cut."""
        import textwrap

        from rich.cells import cell_len

        assert self.console is not None, "a width is a console's"
        width = self.console.width
        lead = len(text) - len(text.lstrip(" "))
        room = max(width - len(continuation), 20)
        if not text.isascii():   # wide characters: rich measures cells
            return _cell_folded(text, room, cell_len)
        parts = textwrap.wrap(text, room, subsequent_indent=" " * min(lead + indent, room // 2),
                              break_on_hyphens=False, drop_whitespace=True)
        return [p + continuation for p in parts[:-1]] + parts[-1:]

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


def _cell_folded(text: str, width: int, cell_len: Callable[[str], int]) -> list[str]:
    """``text`` in pieces of at most ``width`` terminal cells (text with wide characters)."""
    parts: list[str] = []
    piece: list[str] = []
    cells = 0
    for ch in text:
        w = cell_len(ch)
        if cells + w > width and piece:
            parts.append("".join(piece))
            piece, cells = [], 0
        piece.append(ch)
        cells += w
    return [*parts, "".join(piece)]


__all__ = ["LineWriter", "terminal_safe"]
