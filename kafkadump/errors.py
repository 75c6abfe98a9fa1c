"""Errors that end a command with exit status 2: usage and input/output problems.

Problems *in the data* are never exceptions: they are findings
(:mod:`kafkadump.findings`), and decoding goes on.
"""

from __future__ import annotations

from .sources.segment import InputError


class UsageError(Exception):
    """The command line asks for something impossible or contradictory: exit 2."""


__all__ = ["InputError", "UsageError"]
