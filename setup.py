"""Build script: the optional C extensions of the compiled twin (kafkadump/accel/*.c).

Everything else is in pyproject.toml.  Each extension is optional: when one cannot
be built (no compiler, no Python headers) the install goes on without it and
kafkadump runs that part on its pure-Python path (``kafkadump --version`` says which).
kafkadump/accel/__init__.py's MODULES names every extension built here.
"""

from __future__ import annotations

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """build_ext that warns and goes on when the extension does not build."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 (any failure: no compiler, no headers, a compile error)
            self._skip(e)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001
            self._skip(e)

    @staticmethod
    def _skip(e: Exception) -> None:
        print(f"warning: kafkadump's compiled hot path was not built ({e}); "
              "kafkadump will run on its pure-Python path", file=sys.stderr)


ACCEL = "kafkadump/accel/"


def twin(name: str, *headers: str) -> Extension:
    """The optional extension kafkadump.accel.``name`` of ``accel/name.c`` (``headers``: what it includes)."""
    return Extension(f"kafkadump.accel.{name}", [f"{ACCEL}{name}.c"], depends=[ACCEL + h for h in headers],
                     optional=True)


setup(
    ext_modules=[
        # the record loop of a plain v2 batch
        twin("recordloop", "record_slots.h", "slots.h", "runs.h", "recordparse.h", "varint.h"),
        # the record lines of --json
        twin("recordlines", "record_slots.h", "slots.h", "runs.h", "recordparse.h", "varint.h", "jsonout.h",
             "line_literals.h", "generated_fields.h", "plainwindow.h"),
        # the walk's step over an intact plain v2 batch, and over a window of them
        twin("batchstep", "batch_slots.h", "slots.h", "runs.h", "recordparse.h", "varint.h", "crc32c.h", "pycrc.h",
             "plainwindow.h"),
        # the batch lines of batches --json
        twin("batchlines", "batch_slots.h", "slots.h", "runs.h", "jsonout.h", "line_literals.h",
             "generated_fields.h", "plainwindow.h"),
        # verify-crc's hop and its CRC-32C
        twin("crchop", "runs.h", "crc32c.h", "pycrc.h"),
        # the Spark data source's record columns as Arrow buffers
        twin("arrowcols", "varint.h"),
        # the capture reader's packet loop (pcap records to TCP segments)
        twin("pcapread"),
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
