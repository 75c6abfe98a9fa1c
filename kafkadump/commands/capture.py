"""kafkadump commands: capture (not yet implemented)."""


def register(app) -> None:
    """Add this module's commands to the typer app."""
