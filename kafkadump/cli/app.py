"""The typer application every command registers on."""

from __future__ import annotations

import typer

from .. import __version__


def command_group(name: str, help: str) -> typer.Typer:
    """A typer application with kafkadump's settings: -h/--help, no completion, no pretty tracebacks."""
    return typer.Typer(name=name, help=help, add_completion=False, pretty_exceptions_enable=False,
                       no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]})


app = command_group(
    "kafkadump",
    "Forensic inspector for Apache Kafka's binary data: segment files, record batches, "
    "legacy message sets.  Exit status: 0 clean, 1 the data has problems, 2 usage or I/O error.")


def _version(value: bool) -> None:
    if value:
        from ..accel import active_path
        from ..decode import batch  # noqa: F401 (sets up the compiled loops, when there are any)

        typer.echo(f"kafkadump {__version__} ({active_path()})")
        raise typer.Exit()


@app.callback()
def root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="Print the version and exit.")) -> None:
    """kafkadump: decode Kafka segments, batches and messages, byte-exact and damage-tolerant."""
