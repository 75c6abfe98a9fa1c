"""The report of ``carve``: what was recovered from a damaged segment, and the new file.

:func:`carve_report` walks the segment with :func:`kafkadump.logdir.carve.carve`,
yields each recovered batch and damaged range, writes the intact batches to
a new file when asked (:class:`CarveOutput`: never an input, removed again
if carving fails), and ends with a :class:`CarveTotals`.  Nothing here prints.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from ..decode.model import Batch
from ..errors import UsageError
from ..report.status import Tally
from ..sources.segment import open_segment
from . import names
from .carve import Damaged, Padding, Recovered, carve


@dataclass
class CarveTotals:
    """The closing summary of a carve."""

    file: str
    size: int = 0
    output: str | None = None
    recovered: int = 0
    recovered_bytes: int = 0
    damaged_ranges: int = 0
    damaged_bytes: int = 0
    padding_bytes: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    output_sha256: str | None = None

    def add_recovered(self, b: Batch) -> None:
        self.recovered += 1
        self.recovered_bytes += b.size
        if self.first_offset is None:
            self.first_offset = b.base_offset
        if b.last_offset is not None:
            self.last_offset = max(b.last_offset, self.last_offset if self.last_offset is not None else b.last_offset)


class CarveOutput:
    """The carve output: a new file, never an input, removed again if carving fails."""

    def __init__(self, path: str, source: str, force: bool):
        _refuse_unsafe_output(path, source, force)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL) | getattr(os, "O_BINARY", 0)
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as e:
            raise UsageError(f"{path}: cannot create: {e.strerror}") from None
        self.path = path
        self.file = os.fdopen(fd, "wb")
        self.hash = hashlib.sha256()
        self.sha256: str | None = None

    def write(self, data: bytes) -> None:
        self.file.write(data)
        self.hash.update(data)

    def close(self, keep: bool) -> None:
        """Close the file: kept (synced, hashed) when ``keep``, else removed (we created it)."""
        try:
            if keep:
                self.file.flush()
                os.fsync(self.file.fileno())
            self.file.close()
        finally:
            if keep:
                self.sha256 = self.hash.hexdigest()
            else:
                try:
                    os.unlink(self.path)
                except OSError:
                    pass


def _refuse_unsafe_output(path: str, source: str, force: bool) -> None:
    if os.path.exists(path):
        if os.path.exists(source) and os.path.samefile(path, source):
            raise UsageError(f"{path}: is the input file; refusing to write over it")
        if not force:
            raise UsageError(f"{path}: exists; give --force to overwrite it")
        if os.path.isdir(path):
            raise UsageError(f"{path}: is a directory")
    if os.path.realpath(path) == os.path.realpath(source):
        raise UsageError(f"{path}: is the input file; refusing to write over it")


def carve_report(segment: str, tally: Tally, output: str | None = None, force: bool = False) -> Iterator:
    """Recovered batches and damaged ranges of ``segment`` in order, then the totals; the intact
    batches written to ``output`` when given.  Each damaged range is a problem for ``tally``."""
    with open_segment(segment) as seg:
        writer = CarveOutput(output, segment, force) if output else None
        totals = CarveTotals(segment, seg.size, output)
        ok = False
        try:
            fn = names.classify(segment)
            base = fn.offset if fn.kind == names.SEGMENT else None
            for item in carve(seg.buf, segment, base_offset=base):
                if isinstance(item, Recovered):
                    b = item.batch
                    totals.add_recovered(b)
                    if writer:
                        writer.write(seg.buf[b.position:b.position + b.size])
                    yield item
                elif isinstance(item, Damaged):
                    totals.damaged_ranges += 1
                    totals.damaged_bytes += item.size
                    tally.add_problem()
                    yield item
                elif isinstance(item, Padding):
                    totals.padding_bytes += item.size
            ok = True
        finally:
            if writer:
                writer.close(keep=ok)
        if writer:
            totals.output_sha256 = writer.sha256
        yield totals


__all__ = ["CarveOutput", "CarveTotals", "carve_report"]
