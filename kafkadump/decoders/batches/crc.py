"""CRC-32C (Castagnoli), the checksum of v2 record batches and snapshots, from the ``crc32c`` package.

``import crc32c`` runs the package's ``__init__``, which asks the installed
package metadata for its own version (``importlib.metadata``, about half of
a bare interpreter's start-up) and loads its command-line tool.  kafkadump
needs only the C function, so it loads the extension module
``crc32c._crc32c`` under a bare stand-in for the package (a module with the
package's ``__path__`` and nothing else), then takes the stand-in out of
``sys.modules`` again: a later ``import crc32c`` anywhere runs the real
``__init__``, which finds the extension already loaded.  When the package
is laid out differently, or was imported already, this is the plain
``from crc32c import crc32c``.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable

__all__ = ["crc32c"]


def _package_dir() -> str | None:
    """The directory of the installed ``crc32c`` package holding its C extension, or None."""
    for entry in sys.path:
        candidate = os.path.join(entry or os.curdir, "crc32c")
        try:
            names = os.listdir(candidate)
        except OSError:
            continue
        if "__init__.py" in names and any(n.startswith("_crc32c.") and not n.endswith(".pyi") for n in names):
            return candidate
    return None


def _load_extension_only() -> Callable[..., int] | None:
    """``crc32c._crc32c.crc32c`` without running the package's ``__init__``; None when that cannot be done."""
    if "crc32c" in sys.modules:
        return None
    where = _package_dir()
    if where is None:
        return None
    stand_in = types.ModuleType("crc32c")
    stand_in.__path__ = [where]
    sys.modules["crc32c"] = stand_in
    try:
        from crc32c._crc32c import crc32c as function
    except ImportError:
        sys.modules.pop("crc32c._crc32c", None)
        return None
    finally:
        if sys.modules.get("crc32c") is stand_in:
            del sys.modules["crc32c"]
    return function


def _crc32c_function() -> Callable[..., int]:
    function = _load_extension_only()
    if function is not None:
        return function
    from crc32c import crc32c as packaged

    return packaged


crc32c: Callable[..., int] = _crc32c_function()
