"""The typer application every command registers on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from kafkadump import __version__

_SETTINGS: dict[str, Any] = dict(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True,
                                 context_settings={"help_option_names": ["-h", "--help"]})


def command_group(name: str, help: str) -> typer.Typer:
    """A typer application with kafkadump's settings: -h/--help, no completion, no pretty tracebacks."""
    return typer.Typer(name=name, help=help, **_SETTINGS)


class CommandsOnDemand(typer.Typer):
    """The root application: its commands are registered the first time typer asks for them.

    The command modules register their commands when imported; importing all
    of them costs more than a small command's whole run.  ``load_commands``
    (the package's, which knows the modules) imports them all the first
    time the commands or groups are read; the entry point sets it to None
    after importing the one module the command line names.  Registering a
    command (a module imported directly) does not count as reading.
    """

    load_commands: Callable[[], None] | None = None
    configured = False  # load_commands set by the package (once)
    _registering = False

    def _loaded(self) -> None:
        if self._registering:
            return
        load, self.load_commands = self.load_commands, None
        if load is not None:
            load()

    def command(self, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
        register = super().command(*args, **kwargs)

        def quietly(function: Any) -> Any:
            self._registering = True
            try:
                return register(function)
            finally:
                self._registering = False

        return quietly

    def add_typer(self, *args: Any, **kwargs: Any) -> None:
        self._registering = True
        try:
            super().add_typer(*args, **kwargs)
        finally:
            self._registering = False

    @property
    def registered_commands(self) -> list[Any]:
        self._loaded()
        return self._commands

    @registered_commands.setter
    def registered_commands(self, commands: list[Any]) -> None:
        self._commands = commands

    @property
    def registered_groups(self) -> list[Any]:
        self._loaded()
        return self._groups

    @registered_groups.setter
    def registered_groups(self, groups: list[Any]) -> None:
        self._groups = groups


app = CommandsOnDemand(
    name="kafkadump",
    help="Forensic inspector for Apache Kafka's binary data: segment files, record batches, "
    "legacy message sets.  Exit status: 0 clean, 1 the data has problems, 2 usage or I/O error.",
    **_SETTINGS)


def _version(value: bool) -> None:
    if value:
        from kafkadump.accel import active_path
        from kafkadump.decoders.batches import batch  # noqa: F401 (sets up the compiled loops, when there are any)

        typer.echo(f"kafkadump {__version__} ({active_path()})")
        raise typer.Exit()


@app.callback()
def root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="Print the version and exit.")) -> None:
    """kafkadump: decode Kafka segments, batches and messages, byte-exact and damage-tolerant."""
