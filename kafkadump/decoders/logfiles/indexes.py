"""The three index files of a segment: offset index, time index, transaction index.

    OffsetIndex (.index), 8-byte entries, big-endian
        relativeOffset: INT32      offset - the segment's base offset (file name)
        position: INT32            byte position of a batch in the .log

    TimeIndex (.timeindex), 12-byte entries
        timestamp: INT64           the largest timestamp seen so far in the segment
        relativeOffset: INT32      the offset holding that timestamp, minus the base offset

    TransactionIndex (.txnindex), 34-byte entries: one per aborted transaction
        version: INT16             0
        producerId: INT64
        firstOffset: INT64         first offset of the aborted transaction
        lastOffset: INT64          offset of its ABORT marker
        lastStableOffset: INT64    the partition's last stable offset when it was aborted

The broker preallocates the active segment's .index and .timeindex
(10 MiB by default) and trims them when the segment is rolled or the broker
shuts down cleanly, so a copy taken from a running or crashed broker ends in
zero entries.  The zero tail is where the all-zero bytes at the end of the
file begin; entry 0 may legitimately be (0, 0), but an all-zero entry after a
non-zero one ends the entries.  Zero entries followed by non-zero ones are
not a tail: they are reported as entries that go backwards.

Offsets and positions are checked for order here; whether each entry agrees
with the .log is checked by :mod:`kafkadump.reports.scan`, which walks the
log and the index together.  Readers never load a whole index: entries are
unpacked from the (memory-mapped) buffer as they are iterated.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from mmap import mmap

from kafkadump.base.findings import Code, Finding

_OFF = struct.Struct(">ii")
_TIME = struct.Struct(">qi")
_TXN = struct.Struct(">hqqqq")

OFFSET_ENTRY = _OFF.size   # 8
TIME_ENTRY = _TIME.size    # 12
TXN_ENTRY = _TXN.size      # 34

# an index's bytes: the file's mapping, or bytes in memory
_Buf = bytes | bytearray | memoryview | mmap


def last_nonzero(buf: _Buf, end: int) -> int:
    """Position of the last non-zero byte in ``buf[:end]``, or -1."""
    chunk = 1 << 16
    q = end
    while q > 0:
        p = max(0, q - chunk)
        part = bytes(buf[p:q]).rstrip(b"\x00")
        if part:
            return p + len(part) - 1
        q = p
    return -1


class _FixedIndex:
    """Common part: entry count, partial last entry, preallocated zero tail."""

    entry_size = 8
    what = "entry"

    def __init__(self, buf: _Buf, file: str, base_offset: int | None, zero_tail: bool = True) -> None:
        self.buf = buf
        self.file = file
        self.base_offset = base_offset or 0
        self.size = len(buf)
        self.findings: list[Finding] = []   # file-level findings (tail, partial entry)
        n, rem = divmod(self.size, self.entry_size)
        if rem:
            at = n * self.entry_size
            self.findings.append(Finding(
                Code.TRUNCATED, at, f"the file ends {rem} bytes into a {self.entry_size}-byte {self.what} "
                                    f"(size {self.size} is not a multiple of {self.entry_size})", length=rem))
        self.slots = n
        self.count = n
        if zero_tail and n:
            used = last_nonzero(buf, n * self.entry_size) + 1
            k = -(-used // self.entry_size)
            if k < n:
                start = k * self.entry_size
                self.findings.append(Finding(
                    Code.ZERO_PADDING, start,
                    f"{n - k} zero entries from entry {k} to the end (preallocated index of an active "
                    f"segment, or copied before the broker trimmed it)", length=(n - k) * self.entry_size))
                self.count = k

    @property
    def zero_tail(self) -> int:
        """Number of zero entries at the end (not counted as entries)."""
        return self.slots - self.count


class IndexEntry:
    __slots__ = ("index", "position", "relative_offset", "offset", "log_position", "findings")

    def __init__(self, index: int, position: int, relative_offset: int, offset: int, log_position: int) -> None:
        self.index = index
        self.position = position
        self.relative_offset = relative_offset
        self.offset = offset
        self.log_position = log_position
        self.findings: list[Finding] = []


class OffsetIndex(_FixedIndex):
    """A ``.index`` file.  Iterate for :class:`IndexEntry` objects, each with its order findings."""

    entry_size = OFFSET_ENTRY
    what = "offset index entry"

    def __iter__(self) -> Iterator[IndexEntry]:
        buf = self.buf
        base = self.base_offset
        unpack = _OFF.unpack_from
        prev: IndexEntry | None = None
        for i in range(self.count):
            pos = i * 8
            rel, lpos = unpack(buf, pos)
            e = IndexEntry(i, pos, rel, base + rel, lpos)
            if rel < 0 or lpos < 0:
                e.findings.append(Finding(Code.ENTRY_INVALID, pos,
                                          f"entry {i}: relative offset {rel}, position {lpos} "
                                          f"(neither may be negative)"))
            elif prev is not None and (rel <= prev.relative_offset or lpos <= prev.log_position):
                e.findings.append(Finding(Code.INDEX_NOT_MONOTONIC, pos,
                                          f"entry {i} (offset {base + rel}, position {lpos}) is not after "
                                          f"entry {prev.index} (offset {prev.offset}, position {prev.log_position})"))
            else:
                prev = e
            yield e


class TimeIndexEntry:
    __slots__ = ("index", "position", "timestamp", "relative_offset", "offset", "findings")

    def __init__(self, index: int, position: int, timestamp: int, relative_offset: int, offset: int) -> None:
        self.index = index
        self.position = position
        self.timestamp = timestamp
        self.relative_offset = relative_offset
        self.offset = offset
        self.findings: list[Finding] = []


class TimeIndex(_FixedIndex):
    """A ``.timeindex`` file: timestamps strictly increase, offsets never decrease."""

    entry_size = TIME_ENTRY
    what = "time index entry"

    def __iter__(self) -> Iterator[TimeIndexEntry]:
        buf = self.buf
        base = self.base_offset
        unpack = _TIME.unpack_from
        prev: TimeIndexEntry | None = None
        for i in range(self.count):
            pos = i * 12
            ts, rel = unpack(buf, pos)
            e = TimeIndexEntry(i, pos, ts, rel, base + rel)
            if rel < 0:
                e.findings.append(Finding(Code.ENTRY_INVALID, pos,
                                          f"entry {i}: relative offset {rel} is negative"))
            elif prev is not None and (ts <= prev.timestamp or rel < prev.relative_offset):
                e.findings.append(Finding(Code.TIMEINDEX_NOT_MONOTONIC, pos,
                                          f"entry {i} (timestamp {ts}, offset {base + rel}) is not after "
                                          f"entry {prev.index} (timestamp {prev.timestamp}, offset {prev.offset})"))
            else:
                prev = e
            yield e


class TxnEntry:
    __slots__ = ("index", "position", "version", "producer_id", "first_offset", "last_offset",
                 "last_stable_offset", "findings")

    def __init__(self, index: int, position: int, version: int, producer_id: int, first_offset: int,
                 last_offset: int, lso: int) -> None:
        self.index = index
        self.position = position
        self.version = version
        self.producer_id = producer_id
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.last_stable_offset = lso
        self.findings: list[Finding] = []


class TxnIndex(_FixedIndex):
    """A ``.txnindex`` file (never preallocated: no zero tail)."""

    entry_size = TXN_ENTRY
    what = "transaction index entry"

    def __init__(self, buf: _Buf, file: str, base_offset: int | None = None) -> None:
        super().__init__(buf, file, base_offset, zero_tail=False)

    def __iter__(self) -> Iterator[TxnEntry]:
        buf = self.buf
        unpack = _TXN.unpack_from
        prev_last: int | None = None
        for i in range(self.count):
            pos = i * TXN_ENTRY
            version, pid, first, last, lso = unpack(buf, pos)
            e = TxnEntry(i, pos, version, pid, first, last, lso)
            if version != 0:
                e.findings.append(Finding(Code.FILE_VERSION_UNKNOWN, pos,
                                          f"entry {i}: version {version} (only 0 is defined)"))
            elif pid < 0 or first < 0 or first > last:
                e.findings.append(Finding(Code.ENTRY_INVALID, pos,
                                          f"entry {i}: producerId {pid}, firstOffset {first}, lastOffset {last}"))
            elif prev_last is not None and last <= prev_last:
                e.findings.append(Finding(Code.ENTRY_INVALID, pos,
                                          f"entry {i}: lastOffset {last} is not after the previous entry's {prev_last}"))
            else:
                prev_last = last
            yield e


__all__ = ["OffsetIndex", "TimeIndex", "TxnIndex", "IndexEntry", "TimeIndexEntry", "TxnEntry",
           "OFFSET_ENTRY", "TIME_ENTRY", "TXN_ENTRY", "last_nonzero"]
