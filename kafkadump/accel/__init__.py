"""The compiled twin of the hot loops, and which path is active.

``hotloops`` is a C extension (``hotloops.c`` beside this file) that ``pip install``
builds when a C compiler is there; without one the install still succeeds and
everything runs on the pure-Python path.  The pure-Python code is the
reference: each compiled loop computes what its Python twin computes for the
plain case (an intact, uncompressed or decompressed, non-control v2 batch; plain
record lines) and hands everything else back to it, so findings always come
from Python; tests run both paths on the same bytes and require the same output.

``KAFKADUMP_PURE_PYTHON=1`` (any value but empty or ``0``) forces the pure path, and so
does a build of ``hotloops`` whose ``INTERFACE`` is not this module's (built from other sources);
``kafkadump --version`` says which path is active.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

PURE_ENV = "KAFKADUMP_PURE_PYTHON"
# the signatures of hotloops' functions that this Python code calls (hotloops.c's HOTLOOPS_INTERFACE):
# a build that says otherwise is older or newer than the code, and is not used
INTERFACE = 2


def pure_forced() -> bool:
    """Whether ``KAFKADUMP_PURE_PYTHON`` asks for the pure path (any value but empty or ``0``)."""
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def _load() -> ModuleType | None:
    if pure_forced():
        return None
    try:
        from kafkadump.accel import hotloops
    except ImportError:
        return None
    if getattr(hotloops, "INTERFACE", None) != INTERFACE:
        return None
    return hotloops


_LOADED = _load()
_CONFIGURED: dict[str, bool] = {}


def compiled_loops(record_class: type[Any], batch_class: type[Any] | None = None) -> ModuleType | None:
    """The compiled loops set up for ``record_class`` (decode.model.Record) and, when given,
    ``batch_class`` (decode.model.Batch: for batch lines), or None (pure Python)."""
    if _LOADED is None:
        return None
    try:
        _LOADED.configure(record_class)
        if batch_class is not None:
            _LOADED.configure_batch(batch_class)
    except TypeError:  # a Record or Batch the C code does not know: stay on the pure path
        _CONFIGURED["ok"] = False
        return None
    _CONFIGURED["ok"] = True
    return _LOADED


def hotloops_built() -> bool:
    """Whether the compiled loops are installed (whatever KAFKADUMP_PURE_PYTHON says)."""
    if _LOADED is not None:
        return True
    try:
        from kafkadump.accel import hotloops  # noqa: F401
    except ImportError:
        return False
    return True


def active_path() -> str:
    """``compiled hot path`` or ``pure Python``: what this process runs."""
    if _LOADED is None or _CONFIGURED.get("ok") is False:
        return "pure Python"
    return "compiled hot path"


def capture_loops() -> ModuleType | None:
    """The compiled twin of the capture reader's packet loop (``pcapread.c``), or None: not built,
    or the pure path forced (``KAFKADUMP_PURE_PYTHON``), as for the hot loops."""
    if pure_forced():
        return None
    try:
        from kafkadump.accel import pcapread
    except ImportError:
        return None
    return pcapread


__all__ = ["compiled_loops", "capture_loops", "active_path", "hotloops_built", "pure_forced", "PURE_ENV"]
