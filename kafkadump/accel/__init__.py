"""The compiled twin of the hot loops, the one loader of its modules, and which path is active.

Each module of :data:`MODULES` is a C extension (``<name>.c`` beside this file) that ``pip install``
builds when a C compiler is there; without one the install still succeeds and everything runs
on the pure-Python path.  The pure-Python code is the reference: each compiled loop computes
what its Python twin computes for the plain case (an intact, uncompressed or decompressed,
non-control v2 batch; plain record lines; intact pcap records of TCP over IPv4) and hands
everything else back to it, so findings always come from Python; tests/test_compiled_twins.py
runs every compiled function and its twin on the same bytes and requires the same output.

:func:`compiled` is the only way kafkadump reaches a compiled module: it imports one the first time
it is asked for (a command imports only the modules it uses) and gives None, the pure path, when
``KAFKADUMP_PURE_PYTHON=1`` (any value but empty or ``0``) forces it, when the module is not built,
or when the build's ``INTERFACE`` is not the one :data:`MODULES` expects (built from other sources).
``kafkadump --version`` says which path is active.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any

PURE_ENV = "KAFKADUMP_PURE_PYTHON"

# every compiled module beside this file, and the INTERFACE its build must say (the signatures of its
# functions that this Python code calls: <NAME>_INTERFACE in <name>.c): a build that says otherwise is
# older or newer than the code, and is not used.  Raise both when a function's arguments change.
MODULES: dict[str, int] = {
    "recordloop": 1,    # the record loop of a plain v2 batch (decode.batch)
    "recordlines": 3,   # the record lines of --json (render.jsonl)
    "batchstep": 2,     # the walk's step over an intact plain v2 batch, and over a window of them (decode.step)
    "batchlines": 2,    # the batch lines of batches --json (render.jsonl)
    "crchop": 1,        # verify-crc's hop and its CRC-32C (decode.walk)
    "arrowcols": 1,     # a plain run of records as Arrow column buffers (spark.record_buffers)
    "pcapread": 1,      # the capture reader's packet loop (sources.pcap)
}
# the modules of the segment decoder's hot path: what ``--version`` reports on
HOT_PATH = ("recordloop", "recordlines", "batchstep", "batchlines", "crchop")

_LOADED: dict[str, ModuleType | None] = {}
_CONFIGURED: dict[str, bool] = {}   # a module's last configure (False: the classes were not its own)


def pure_forced() -> bool:
    """Whether ``KAFKADUMP_PURE_PYTHON`` asks for the pure path (any value but empty or ``0``)."""
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def _import(name: str) -> ModuleType | None:
    full = f"{__name__}.{name}"
    try:
        __import__(full)  # (the import statement's own path: -X importtime shows it)
    except ImportError:
        return None
    return sys.modules[full]


def _load(name: str) -> ModuleType | None:
    """The module ``name`` if it may be used: not forced off, built, its ``INTERFACE`` the expected one."""
    if pure_forced():
        return None
    module = _import(name)
    if module is None or getattr(module, "INTERFACE", None) != MODULES[name]:
        return None
    return module


def compiled(name: str, record_class: type[Any] | None = None,
             batch_class: type[Any] | None = None) -> ModuleType | None:
    """The compiled module ``name`` (a key of :data:`MODULES`), or None (the pure-Python path); set up,
    when given, for ``record_class`` (decode.model.Record: its ``configure``) and ``batch_class``
    (decode.model.Batch: its ``configure_batch``).  A class the C code does not know gives None too."""
    if name not in _LOADED:
        _LOADED[name] = _load(name)
    module = _LOADED[name]
    if module is None or (record_class is None and batch_class is None):
        return module
    try:
        if record_class is not None:
            module.configure(record_class)
        if batch_class is not None:
            module.configure_batch(batch_class)
    except TypeError:  # a Record or Batch the C code does not know: stay on the pure path
        _CONFIGURED[name] = False
        return None
    _CONFIGURED[name] = True
    return module


def built(name: str) -> bool:
    """Whether the compiled module ``name`` is installed (whatever KAFKADUMP_PURE_PYTHON says)."""
    return _LOADED.get(name) is not None or _import(name) is not None


def active_path() -> str:
    """``compiled hot path`` or ``pure Python``: what this process runs (the modules of
    :data:`HOT_PATH`; those that are not in use are named when some are)."""
    pure = [name for name in HOT_PATH if compiled(name) is None or _CONFIGURED.get(name) is False]
    if not pure:
        return "compiled hot path"
    if len(pure) == len(HOT_PATH):
        return "pure Python"
    return f"compiled hot path, pure Python for {', '.join(pure)}"


__all__ = ["MODULES", "HOT_PATH", "compiled", "built", "active_path", "pure_forced", "PURE_ENV"]
