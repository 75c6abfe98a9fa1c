"""kafkadump man: the manual page, installed with the package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from kafkadump.base.errors import InputError
from kafkadump.cli.typer_app import app
from kafkadump.cli.typer_main import run_command

PAGE = "kafkadump.1"


def manual_page() -> str:
    """Where the page is: installed under the environment's share/man/man1, or beside the
    package in a source checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = (os.path.join(sys.prefix, "share", "man", "man1", PAGE),
                  os.path.join(here, os.pardir, os.pardir, "man", PAGE))
    for p in candidates:
        if os.path.isfile(p):
            return os.path.normpath(p)
    raise InputError(f"the manual page ({PAGE}) is not installed beside this kafkadump")


@app.command("man")
def manual() -> None:
    """Show the manual page: options, the JSON contract, every finding code, exit status."""

    def body() -> int:
        page = manual_page()
        man = shutil.which("man")
        if man is None:
            with open(page, encoding="utf-8") as f:
                sys.stdout.write(f.read())
            return 0
        sys.stdout.flush()
        env = dict(os.environ, MANPAGER=os.environ.get("MANPAGER", "less -R"))
        args = [man, "-l", page] if sys.stdout.isatty() else [man, "-P", "cat", "-l", page]
        return subprocess.run(args, env=env, check=False).returncode and 2

    run_command(body)
