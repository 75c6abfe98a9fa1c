"""kafkadump man: the manual page, installed with the package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..errors import InputError
from .app import app
from .main import run_command

PAGE = "kafkadump.1"


def manual_page() -> Path:
    """Where the page is: installed under the environment's share/man/man1, or beside the
    package in a source checkout."""
    candidates = (Path(sys.prefix) / "share" / "man" / "man1" / PAGE,
                  Path(__file__).resolve().parents[2] / "man" / PAGE)
    for p in candidates:
        if p.is_file():
            return p
    raise InputError(f"the manual page ({PAGE}) is not installed beside this kafkadump")


@app.command("man")
def manual() -> None:
    """Show the manual page: options, the JSON contract, every finding code, exit status."""

    def body() -> int:
        page = manual_page()
        man = shutil.which("man")
        if man is None:
            sys.stdout.write(page.read_text())
            return 0
        sys.stdout.flush()
        env = dict(os.environ, MANPAGER=os.environ.get("MANPAGER", "less -R"))
        args = [man, "-l", str(page)] if sys.stdout.isatty() else [man, "-P", "cat", "-l", str(page)]
        return subprocess.run(args, env=env, check=False).returncode and 2

    run_command(body)
