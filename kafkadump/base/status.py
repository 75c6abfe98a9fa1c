"""The exit rule, the same for every command.

``0`` the data is clean (info findings only), ``1`` the data has problems
(any warning or error finding), ``2`` a usage or input/output error (raised
as :mod:`kafkadump.base.errors`, never decided here).
"""

from __future__ import annotations

from collections.abc import Iterable

from kafkadump.base.findings import Finding, Severity

CLEAN = 0
PROBLEMS = 1
USAGE_OR_IO = 2


def is_problem(f: Finding) -> bool:
    """A finding that makes the data not clean: a warning or an error."""
    return f.severity is not Severity.INFO


class Tally:
    """Counts the problem findings a command reports, for its exit status; keeps the input
    errors met on the way (a bad path in a list: the rest is still read, the exit status is 2)
    and notes about the inputs, for stderr."""

    __slots__ = ("problems", "input_errors", "notes")

    def __init__(self) -> None:
        self.problems = 0
        self.input_errors: list[str] = []
        self.notes: list[str] = []

    def see(self, findings: Iterable[Finding]) -> None:
        """Count the problems among ``findings``."""
        for f in findings:
            if f.severity is not Severity.INFO:
                self.problems += 1

    def add_problem(self) -> None:
        """Count a problem that is no single finding (a damaged range as a whole)."""
        self.problems += 1

    @property
    def exit_status(self) -> int:
        return exit_status(self.problems, len(self.input_errors))


def exit_status(problems: int, input_errors: int = 0) -> int:
    """The one exit rule: ``2`` when an input could not be read (a file in a list, a partition's
    segment), else ``1`` when there is any problem (a warning or error finding), else ``0``."""
    if input_errors:
        return USAGE_OR_IO
    return PROBLEMS if problems else CLEAN


__all__ = ["Tally", "exit_status", "is_problem", "CLEAN", "PROBLEMS", "USAGE_OR_IO"]
