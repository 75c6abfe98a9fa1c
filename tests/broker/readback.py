"""What the broker tests read back with kafkadump: the CLI as a process, and byte fields of its JSON."""

from __future__ import annotations

import base64
import subprocess
import sys


def kafkadump(*args: str) -> subprocess.CompletedProcess:
    """``python -m kafkadump ARGS`` in a child process, text out (the exit status is the caller's to judge)."""
    return subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, text=True, timeout=300)


def as_bytes(field: str | dict | None) -> bytes | None:
    """A key, value or header value of kafkadump's JSON as bytes: text, ``{"base64": ...}`` or null."""
    if field is None:
        return None
    if isinstance(field, dict):
        return base64.b64decode(field["base64"])
    return field.encode()
