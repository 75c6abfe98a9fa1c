"""The command line run in this process: a bug in kafkadump raises in the test instead of becoming exit 2."""

from __future__ import annotations

from types import SimpleNamespace

from typer.testing import CliRunner

from kafkadump.cli import app


def run(*args: str) -> SimpleNamespace:
    """``kafkadump ARGS`` in this process (a bug in kafkadump raises here): returncode, stdout, stderr."""
    r = CliRunner().invoke(app, list(args))
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return SimpleNamespace(returncode=r.exit_code, stdout=r.stdout, stderr=r.stderr)
