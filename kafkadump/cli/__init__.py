"""The command line: a thin layer of typer commands over the library.

A command parses its options, calls the one library function that yields
the items of its report (:mod:`kafkadump.scans`, :mod:`kafkadump.logdir`,
...), hands them to the renderer its format names (:mod:`kafkadump.render`)
and exits with the status the report's findings give
(:mod:`kafkadump.report.status`): 0 clean, 1 the data has problems, 2 usage
or I/O error.  Data goes to stdout, diagnostics to stderr.  Nothing outside
this package imports it.

Keep heavy imports inside command bodies: every invocation imports these
modules.
"""

from __future__ import annotations

from ..commands import logdir as _logdir_commands
from ..commands import spark as _spark_commands
from . import capture, segments  # noqa: F401  (their commands register on the app)
from .app import app
from .main import main

_logdir_commands.register(app)
_spark_commands.register(app)

__all__ = ["app", "main"]
