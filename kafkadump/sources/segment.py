"""Segment files, mapped read-only.

The file is opened with O_RDONLY and mapped with ACCESS_READ: kafkadump
cannot modify evidence even by accident.  The mapping lets the walker copy
one batch at a time out of the page cache, so memory stays bounded by the
largest batch whatever the file size; the walkers hand the pages behind
them back as they go, so the resident set stays small too.
"""

from __future__ import annotations

import mmap
import os
import stat

from ..errors import InputError


class Segment:
    """A read-only view of one file.  ``buf`` supports slicing and indexing."""

    def __init__(self, path: str):
        self.path = path
        self.buf: bytes | mmap.mmap
        self._map: mmap.mmap | None
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except FileNotFoundError:
            raise InputError(f"{path}: no such file; check the path") from None
        except IsADirectoryError:
            raise InputError(f"{path}: is a directory, expected a file (for a log directory use 'kafkadump triage')") from None
        except PermissionError:
            raise InputError(f"{path}: permission denied; kafkadump needs read access (it never writes to inputs)") from None
        except OSError as e:
            raise InputError(f"{path}: {e.strerror}") from None
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise InputError(f"{path}: is a directory, expected a file (for a log directory use 'kafkadump triage')")
            self.size = st.st_size
            if self.size == 0 or not stat.S_ISREG(st.st_mode):
                # Empty files cannot be mapped; pipes and devices are read whole
                # (they are not segments, but be useful rather than fail).
                with os.fdopen(os.dup(fd), "rb") as f:
                    self.buf = f.read()
                self.size = len(self.buf)
                self._map = None
            else:
                self._map = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
                self.buf = self._map
        finally:
            os.close(fd)

    def release(self, upto: int) -> None:
        """Drop the mapping's resident pages before ``upto`` (page-aligned down).

        The walkers do this themselves for any mapped buffer as they go
        (:func:`kafkadump.decode.walk.page_releaser`); this is for callers
        that read the mapping some other way.  A no-op where unsupported.
        """
        from ..decode.walk import page_releaser

        release = page_releaser(self._map) if self._map is not None else None
        if release is not None:
            release(upto)

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None

    def __enter__(self) -> Segment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_segment(path: str) -> Segment:
    return Segment(path)
