"""Segment files, mapped read-only.

The file is opened with O_RDONLY and mapped with ACCESS_READ: kafkadump
cannot modify evidence even by accident.  The mapping lets the walker copy
one batch at a time out of the page cache, so memory stays bounded by the
largest batch whatever the file size; the walkers hand the pages behind
them back as they go, so the resident set stays small too.

Inputs that are not regular files: a pipe (FIFO) is read whole up to
:data:`MAX_STREAM` bytes (a FIFO with no writer reads as empty, never
hangs); a block device is mapped at its size; character devices
(``/dev/zero``, ``/dev/urandom``, terminals) and sockets are refused.

A file truncated while it is mapped (log retention, recovery) would fault
on the pages past its new end: :meth:`Segment.current_size` tells the
walkers (:mod:`kafkadump.sources.inputs`) how much is still there.
"""

from __future__ import annotations

import mmap
import os
import stat
from collections.abc import Callable
from typing import overload

from kafkadump.base.errors import InputError

# the most bytes read from a pipe: a stream is held in memory, so it is bounded
MAX_STREAM = 64 << 20


def _open_fd(path: str) -> int:
    """A read-only descriptor of ``path``; ``-`` is standard input (a pipe is read, a redirected
    file mapped, as any other path)."""
    if path == "-":
        try:
            return os.dup(0)
        except OSError as e:
            raise InputError(f"-: standard input cannot be read ({e.strerror})") from None
    try:
        # O_NONBLOCK: opening a FIFO with no writer does not wait for one
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file; check the path") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a file (for a log directory use 'kafkadump triage')") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied; kafkadump needs read access (it never writes to inputs)") from None
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}") from None


def _refuse_special(path: str, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise InputError(f"{path}: is a directory, expected a file (for a log directory use 'kafkadump triage')")
    if stat.S_ISCHR(mode):
        raise InputError(f"{path}: is a character device, not a file; copy the bytes to a file first")
    if stat.S_ISSOCK(mode):
        raise InputError(f"{path}: is a socket, not a file; copy the bytes to a file first")


def _read_stream(path: str, fd: int) -> bytes:
    """A pipe's bytes, at most :data:`MAX_STREAM` of them (no writer: empty)."""
    os.set_blocking(fd, True)
    chunks, total = [], 0
    try:
        while total <= MAX_STREAM:
            chunk = os.read(fd, min(1 << 20, MAX_STREAM + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}") from None
    if total > MAX_STREAM:
        raise InputError(f"{path}: more than {MAX_STREAM} bytes from a pipe; save them to a file first")
    return b"".join(chunks)


def page_releaser(buf: object) -> Callable[[int], None] | None:
    """For a mapped ``buf``: a function handing its resident pages before a position back
    to the kernel (a read-only file mapping: they stay in the page cache); else None."""
    if not isinstance(buf, mmap.mmap) or not hasattr(buf, "madvise"):
        return None
    mapped = buf

    def release(upto: int) -> None:
        upto -= upto % mmap.PAGESIZE
        if upto > 0:
            try:
                mapped.madvise(mmap.MADV_DONTNEED, 0, upto)
            except (OSError, ValueError, AttributeError):
                pass

    return release


class Segment:
    """A read-only view of one file.  ``buf`` supports slicing and indexing."""

    def __init__(self, path: str):
        self.path = path
        self.buf: bytes | mmap.mmap
        self._fd: int | None = None
        self._map: mmap.mmap | None = None
        fd = _open_fd(path)
        try:
            st = os.fstat(fd)
            _refuse_special(path, st.st_mode)
            self.size = st.st_size
            if stat.S_ISBLK(st.st_mode):
                self.size = os.lseek(fd, 0, os.SEEK_END)
            if stat.S_ISFIFO(st.st_mode) or self.size == 0:
                # a pipe is read (bounded); an empty file cannot be mapped
                self.buf = b"" if self.size == 0 and not stat.S_ISFIFO(st.st_mode) \
                    else _read_stream(path, fd)
                self.size = len(self.buf)
            else:
                self._map = mmap.mmap(fd, self.size, access=mmap.ACCESS_READ)
                self.buf = self._map
                self._fd, fd = fd, -1
        finally:
            if fd >= 0:
                os.close(fd)

    def current_size(self) -> int:
        """How many of the mapped bytes the file still has (less than ``size`` once truncated)."""
        if self._fd is None:
            return self.size
        try:
            return min(self.size, os.fstat(self._fd).st_size)
        except OSError:
            return 0

    def release(self, upto: int) -> None:
        """Drop the mapping's resident pages before ``upto`` (page-aligned down).

        The walkers do this themselves for any mapped buffer as they go
        (:func:`page_releaser`); this is for callers that read the mapping
        some other way.  A no-op where unsupported.
        """
        release = page_releaser(self._map) if self._map is not None else None
        if release is not None:
            release(upto)

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Segment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class MappedRange:
    """Bytes ``start..end`` of an open :class:`Segment`, read a slice at a time (a large item shown
    row by row is never copied whole); the pages behind the last read handed back as reads go on.
    Owns the segment: :meth:`close` closes it."""

    RELEASE_EVERY = 8 << 20

    def __init__(self, seg: Segment, start: int, end: int) -> None:
        self.seg, self.start, self.end = seg, start, end
        self._released = start

    def __len__(self) -> int:
        return self.end - self.start

    @overload
    def __getitem__(self, k: int) -> int: ...

    @overload
    def __getitem__(self, k: slice) -> bytes: ...

    def __getitem__(self, k: int | slice) -> int | bytes:
        if isinstance(k, slice):
            a, b, step = k.indices(len(self))
            if step != 1:
                raise ValueError("a mapped range is read in plain slices")
            data = bytes(self.seg.buf[self.start + a:self.start + max(a, b)])
            if self.start + a - self._released >= self.RELEASE_EVERY:
                self.seg.release(self.start + a)
                self._released = self.start + a
            return data
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError("mapped range index out of range")
        return self.seg.buf[self.start + k]

    def close(self) -> None:
        self.seg.close()


def open_segment(path: str) -> Segment:
    """The file at ``path``, opened read-only (see :class:`Segment`)."""
    return Segment(path)
