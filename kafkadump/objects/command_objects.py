"""The JSON objects of a command's run itself, not of its inputs: the error line, spark scan's summary.

* **error**: ``type message exitStatus``, the one line a command writes on stderr under
  ``--json`` when it stops (a usage error, an input it cannot read, an internal error);
* **summary** of ``spark scan --json``: ``type`` then the scan's counts, as the job returns them.

Built from plain values; no I/O, no import (the error line is written on every command's path).
"""

from __future__ import annotations

from typing import Any


def error_line_object(message: str, exit_status: int) -> dict[str, Any]:
    """Why a command stopped, and the status it exits with."""
    return {"type": "error", "message": message, "exitStatus": exit_status}


def scan_summary_object(stats: dict[str, Any]) -> dict[str, Any]:
    """``spark scan``'s closing line: its counts (files, rows, problem rows, unreadable files, ...)."""
    return {"type": "summary", **stats}


__all__ = ["error_line_object", "scan_summary_object"]
