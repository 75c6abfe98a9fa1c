"""Build script: the optional C extension of the hot loops (kafkadump/accel/hotloops.c).

Everything else is in pyproject.toml.  The extension is optional: when it cannot
be built (no compiler, no Python headers) the install goes on without it and
kafkadump runs on its pure-Python path (``kafkadump --version`` says which).
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


setup(
    ext_modules=[Extension("kafkadump.accel.hotloops", ["kafkadump/accel/hotloops.c"],
                           depends=["kafkadump/accel/varint.h", "kafkadump/accel/crc32c.h"], optional=True),
                 # the Spark data source's record columns as Arrow buffers
                 Extension("kafkadump.accel.arrowcols", ["kafkadump/accel/arrowcols.c"],
                           depends=["kafkadump/accel/varint.h"], optional=True),
                 # the capture reader's packet loop (pcap records to TCP segments)
                 Extension("kafkadump.accel.pcapread", ["kafkadump/accel/pcapread.c"], optional=True)],
    cmdclass={"build_ext": OptionalBuildExt},
)
