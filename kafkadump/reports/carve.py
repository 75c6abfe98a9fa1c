"""The report of ``carve``: what was recovered from a damaged segment, and the new file.

:func:`carve_report` walks the segment with :func:`kafkadump.decoders.logfiles.carving.carve`,
yields each recovered batch and damaged range, writes the intact batches to
a new file when asked (:class:`CarveOutput`: never an input, written beside
its name and renamed into place only when carving succeeds), and ends with
a :class:`CarveTotals`.  Nothing here prints.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

from kafkadump.base.errors import OutputError, UsageError
from kafkadump.base.status import Tally
from kafkadump.base.values import Value
from kafkadump.decoders.batches.guard import file_changed, guarded_walk
from kafkadump.decoders.batches.model import Batch
from kafkadump.decoders.batches.primitives import ByteBuffer
from kafkadump.decoders.logfiles import names
from kafkadump.decoders.logfiles.carving import Damaged, Padding, Recovered, carve
from kafkadump.sources.segment import open_segment


class CarveTotals(Value):
    """The closing summary of a carve."""

    __match_args__ = ("file", "size", "output", "recovered", "recovered_bytes", "length_repaired",
                       "damaged_ranges", "damaged_bytes", "padding_bytes", "first_offset", "last_offset",
                       "output_sha256")

    file: str
    size: int
    output: str | None
    recovered: int
    recovered_bytes: int
    length_repaired: int   # recovered batches whose length field was damaged (written repaired)
    damaged_ranges: int
    damaged_bytes: int
    padding_bytes: int
    first_offset: int | None
    last_offset: int | None
    output_sha256: str | None

    def __init__(self, file: str, size: int = 0, output: str | None = None, recovered: int = 0,
                 recovered_bytes: int = 0, length_repaired: int = 0, damaged_ranges: int = 0,
                 damaged_bytes: int = 0, padding_bytes: int = 0, first_offset: int | None = None,
                 last_offset: int | None = None, output_sha256: str | None = None) -> None:
        self.file = file
        self.size = size
        self.output = output
        self.recovered = recovered
        self.recovered_bytes = recovered_bytes
        self.length_repaired = length_repaired
        self.damaged_ranges = damaged_ranges
        self.damaged_bytes = damaged_bytes
        self.padding_bytes = padding_bytes
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.output_sha256 = output_sha256

    def add_recovered(self, b: Batch) -> None:
        self.recovered += 1
        self.recovered_bytes += b.size
        if self.first_offset is None:
            self.first_offset = b.base_offset
        if b.last_offset is not None:
            self.last_offset = max(b.last_offset, self.last_offset if self.last_offset is not None else b.last_offset)


class CarveOutput:
    """The carve output: written to a new temporary file beside ``path`` and renamed over it
    only when carving succeeds.  What was at ``path`` before is never removed by a failure
    (nor by SIGTERM: the temporary file is removed, the target untouched)."""

    def __init__(self, path: str, source: str, force: bool):
        _refuse_unsafe_output(path, source, force)
        self.path = path
        self.target = os.path.realpath(path)  # through a symbolic link: the file it names is replaced
        self.force = force
        directory = os.path.dirname(self.target)
        import hashlib  # (only with --output: start-up time)
        import tempfile

        try:
            fd, self.tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".carving", dir=directory)
        except OSError as e:
            raise UsageError(f"{path}: cannot create: {e.strerror}") from None
        self.file = os.fdopen(fd, "wb")
        self.hash = hashlib.sha256()
        self.sha256: str | None = None
        self._old_term = _remove_on_sigterm(self.tmp)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        try:
            self.file.write(data)
        except OSError as e:
            raise OutputError(f"{self.path}: cannot write: {e.strerror}") from None
        self.hash.update(data)

    def close(self, keep: bool) -> None:
        """Close the file: renamed into place (synced, hashed) when ``keep``, else the temporary file removed."""
        try:
            if keep:
                self._commit()
        finally:
            _restore_sigterm(self._old_term)
            if not self.file.closed:
                try:
                    self.file.close()
                except OSError:
                    pass
            _unlink_quietly(self.tmp)

    def _commit(self) -> None:
        try:
            self.file.flush()
            os.fsync(self.file.fileno())
            os.chmod(self.tmp, 0o644)
            self.file.close()
            if not self.force and os.path.lexists(self.target):
                raise UsageError(f"{self.path}: exists; give --force to overwrite it")
            os.replace(self.tmp, self.target)
        except OSError as e:
            raise OutputError(f"{self.path}: cannot write: {e.strerror}") from None
        self.sha256 = self.hash.hexdigest()


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _remove_on_sigterm(tmp: str) -> object:
    """SIGTERM while carving: the temporary file removed, then the usual exit (main thread only)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def on_term(signum: int, frame: object) -> None:
        _unlink_quietly(tmp)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    return signal.signal(signal.SIGTERM, on_term)


def _restore_sigterm(old: object) -> None:
    import signal

    if old is not None:
        signal.signal(signal.SIGTERM, old)  # type: ignore[arg-type]


def _refuse_unsafe_output(path: str, source: str, force: bool) -> None:
    if os.path.exists(path):
        if os.path.exists(source) and os.path.samefile(path, source):
            raise UsageError(f"{path}: is the input file; refusing to write over it")
        if not force:
            raise UsageError(f"{path}: exists; give --force to overwrite it")
        if os.path.isdir(path):
            raise UsageError(f"{path}: is a directory")
        if not os.path.isfile(path):
            raise UsageError(f"{path}: is not a regular file (a device, a pipe?); refusing to replace it")
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

            def walk(start: int, end: int) -> Iterator[Recovered | Damaged | Padding]:
                return carve(seg.buf, segment, base_offset=base, start=start, end=end)

            for item in guarded_walk(seg, segment, walk, _changed):
                if isinstance(item, Recovered):
                    b = item.batch
                    totals.add_recovered(b)
                    if item.length_repaired:
                        totals.length_repaired += 1
                        tally.see(b.findings)
                    if writer:
                        writer.write(_carved_bytes(seg.buf, b))
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


def _carved_bytes(buf: ByteBuffer, b: Batch) -> bytes | bytearray | memoryview:
    """A recovered batch's bytes as the new file holds them: a damaged length field repaired
    (the CRC does not cover it; the stored CRC confirmed every other byte)."""
    data = buf[b.position:b.position + b.size]
    if b.batch_length is None or b.batch_length == b.size - 12:
        return data
    fixed = bytearray(data)
    struct.pack_into(">i", fixed, 8, b.size - 12)
    return bytes(fixed)


def _changed(path: str, was: int, now: int) -> Damaged:
    """The bytes from ``now`` to ``was`` went while carving (the file was truncated): a damaged range."""
    d = Damaged(path, now)
    d.end = was
    d.findings = [file_changed(was, now)]
    return d


__all__ = ["CarveOutput", "CarveTotals", "carve_report"]
