"""Producer-state snapshots (``00000000000000001234.snapshot``).

The broker writes one when a segment is rolled and at shutdown: the state
of every live producer at that offset (the file name), so that on restart
it need not re-read the whole log.  Schema ProducerSnapshot (version 1),
preceded by its version:

    version: INT16                     1
    crc: UINT32                        CRC-32C of every byte after this field
    producerEntries: ARRAY             INT32 count, then count entries of 46 bytes:
        producerId: INT64
        epoch: INT16
        lastSequence: INT32
        lastOffset: INT64              -1 when the producer has no data left (only markers)
        offsetDelta: INT32             lastSequence - the first sequence of the last batch
        timestamp: INT64               max timestamp of the last batch
        coordinatorEpoch: INT32
        currentTxnFirstOffset: INT64   first offset of its open transaction, -1 if none
"""

from __future__ import annotations

import struct
from mmap import mmap

from kafkadump.base.findings import Code, Finding
from kafkadump.decoders.batches.crc import crc32c

_HEAD = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
ENTRY_SIZE = _ENTRY.size  # 46
HEAD_SIZE = _HEAD.size    # 10
ENTRY_FIELDS = ("producerId", "epoch", "lastSequence", "lastOffset", "offsetDelta", "timestamp",
                "coordinatorEpoch", "currentTxnFirstOffset")

# a snapshot's bytes: the file's mapping, or bytes in memory
_Buf = bytes | bytearray | memoryview | mmap


class ProducerEntry:
    __slots__ = ("index", "position", "producer_id", "epoch", "last_sequence", "last_offset", "offset_delta",
                 "timestamp", "coordinator_epoch", "current_txn_first_offset")

    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int

    def __init__(self, index: int, position: int, values: tuple[int, ...]) -> None:
        self.index = index
        self.position = position
        (self.producer_id, self.epoch, self.last_sequence, self.last_offset, self.offset_delta,
         self.timestamp, self.coordinator_epoch, self.current_txn_first_offset) = values

    def values(self) -> tuple[int, ...]:
        return (self.producer_id, self.epoch, self.last_sequence, self.last_offset, self.offset_delta,
                self.timestamp, self.coordinator_epoch, self.current_txn_first_offset)


class ProducerSnapshot:
    """A decoded snapshot: header, entries, findings.  Never raises on bad bytes."""

    def __init__(self, buf: _Buf, file: str = "-") -> None:
        self.file = file
        self.size = len(buf)
        self.version: int | None = None
        self.crc: int | None = None
        self.computed_crc: int | None = None
        self.count: int | None = None
        self.entries: list[ProducerEntry] = []
        self.findings: list[Finding] = []
        self._decode(buf)

    @property
    def crc_valid(self) -> bool | None:
        if self.crc is None or self.computed_crc is None:
            return None
        return self.crc == self.computed_crc

    def _decode(self, buf: _Buf) -> None:
        size = self.size
        if size < HEAD_SIZE:
            self.findings.append(Finding(Code.TRUNCATED, 0, f"{size} bytes, too few for a snapshot header "
                                                            f"(version, crc, entry count: 10 bytes)", length=size))
            return
        version, crc, count = _HEAD.unpack_from(buf, 0)
        self.version, self.crc, self.count = version, crc, count
        self.computed_crc = crc32c(memoryview(buf)[6:size]) if size > 6 else None
        if self.version != 1:
            self.findings.append(Finding(Code.FILE_VERSION_UNKNOWN, 0,
                                         f"snapshot version {self.version} (only 1 is defined)"))
            return
        if self.crc != self.computed_crc:
            self.findings.append(Finding(Code.CRC_MISMATCH, 2,
                                         f"stored crc {self.crc} != computed crc32c {self.computed_crc}"))
        if count < 0:
            self.findings.append(Finding(Code.ENTRY_INVALID, 6, f"entry count {self.count} is negative"))
            return
        room = (size - HEAD_SIZE) // ENTRY_SIZE
        n = min(count, room)
        for i in range(n):
            pos = HEAD_SIZE + i * ENTRY_SIZE
            self.entries.append(ProducerEntry(i, pos, _ENTRY.unpack_from(buf, pos)))
        end = HEAD_SIZE + n * ENTRY_SIZE
        if count > room:
            self.findings.append(Finding(Code.TRUNCATED, end,
                                         f"{self.count} entries declared, room for {room} "
                                         f"({size - end} bytes after entry {n - 1})", length=size - end))
        elif end < size:
            self.findings.append(Finding(Code.TRAILING_BYTES, end,
                                         f"{size - end} bytes after the {self.count} entries", length=size - end))


__all__ = ["ProducerSnapshot", "ProducerEntry", "ENTRY_FIELDS", "ENTRY_SIZE", "HEAD_SIZE"]
