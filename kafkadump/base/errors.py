"""The exceptions that end a command with exit status 2: usage and input errors.

Bad *data* is never an exception (it becomes findings); these are for the
cases where there is nothing to decode: a path that names nothing readable,
options that contradict each other, a runtime that is missing.

    KafkadumpError        the root: catch this to map any of them to exit 2
        InputError        the input itself: missing, a directory, unreadable, not the kind expected
        UsageError        the command line: options that contradict each other or name nothing
        OutputError       an output cannot be written (a full disk, a write error): which file, and why
"""

from __future__ import annotations


class KafkadumpError(Exception):
    """A usage or input problem: the message is for the operator, the exit status 2."""


class InputError(KafkadumpError):
    """A problem with the input itself (missing, a directory, unreadable): exit 2."""


class UsageError(KafkadumpError):
    """Options that cannot be honoured as given: exit 2."""


class OutputError(KafkadumpError):
    """An output that cannot be written (a full disk, an I/O error): exit 2, naming the file."""


__all__ = ["KafkadumpError", "InputError", "UsageError", "OutputError"]
