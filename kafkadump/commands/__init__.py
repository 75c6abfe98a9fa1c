"""Command groups beyond the core three, each registering itself on the typer app.

Each module defines ``register(app)``; ``kafkadump.cli`` calls it after its
own commands and shared helpers exist, so a module may import ``_run``,
``UsageError``, ``_Status``, ``_console`` and the shared options from
``kafkadump.cli``.  Keep heavy imports inside command bodies: every
invocation of kafkadump imports these modules.
"""

MODULES = ("logdir", "spark")
