"""The command line: a thin layer of typer commands over the library.

A command parses its options, calls the one library function that yields
the items of its report (:mod:`kafkadump.segment_report`, :mod:`kafkadump.logdir`,
...), hands them to the renderer its format names (:mod:`kafkadump.render`)
and exits with the status the report's findings give
(:mod:`kafkadump.report.status`): 0 clean, 1 the data has problems, 2 usage
or I/O error.  Data goes to stdout, diagnostics to stderr.  Nothing outside
this package imports it.

Keep heavy imports inside command bodies: every invocation imports these
modules.
"""

from __future__ import annotations

from . import (  # noqa: F401  (their commands register on the app)
    capture_command,
    forensics_commands,
    logdir_commands,
    manual_command,
    payload_commands,
    replica_commands,
    segment_commands,
    spark_commands,
)
from .app import app
from .main import main

__all__ = ["app", "main"]
