"""Reading a mapped file in place: checksums without copies, and handing passed pages back.

A read-only file mapping's pages stay in the page cache when they are
dropped from the process (``MADV_DONTNEED``): nothing can be lost, and a
walk's resident memory stays bounded whatever the file's size.
"""

from __future__ import annotations

from typing import Callable

from kafkadump.decoders.batches.primitives import ByteBuffer
from kafkadump.decoders.batches.work import WORK
from kafkadump.sources.segment import page_releaser

_CRC_PIECE = 8 << 20   # in-place checksums go this many bytes at a time, releasing pages behind

# The walks hand the mapped pages behind them back every this many bytes, so
# a mapped segment's resident pages stay bounded (a read-only file mapping:
# the pages stay in the page cache, nothing can be lost).
RELEASE_STEP = 32 << 20


def checksum(fn: Callable[..., int], buf: ByteBuffer, start: int, stop: int) -> int:
    """``fn`` (crc32c or zlib.crc32) of ``buf[start:stop]`` on the buffer itself, no copy; on a
    mapping, large ranges go piece by piece and the pages already summed are handed back."""
    WORK.crc_bytes += stop - start
    release = page_releaser(buf) if stop - start > _CRC_PIECE else None
    mv = memoryview(buf)
    try:
        if release is None:
            return fn(mv[start:stop])
        value = 0
        for a in range(start, stop, _CRC_PIECE):
            value = fn(mv[a:min(stop, a + _CRC_PIECE)], value)
            if a - start >= RELEASE_STEP:
                release(a)
        return value
    finally:
        mv.release()


__all__ = ["RELEASE_STEP", "checksum", "page_releaser"]
