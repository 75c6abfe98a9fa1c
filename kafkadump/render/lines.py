"""Writing one line of human output: plain to a stream, or styled through a rich console.

Every line-oriented renderer (tables, hexdumps, log-dir dumps) writes through
:class:`LineWriter`, so how a line reaches the terminal is decided once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console


class LineWriter:
    """Lines to ``out``, or, with a rich ``console``, printed in a style (never as markup)."""

    def __init__(self, out: TextIO, console: Console | None = None) -> None:
        self.out = out
        self.console = console

    def line(self, text: str, style: str | None = None) -> None:
        if self.console is not None:
            self.console.print(text, style=style, markup=False, highlight=False, soft_wrap=True)
        else:
            self.out.write(text + "\n")


__all__ = ["LineWriter"]
