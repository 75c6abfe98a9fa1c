"""Builders for log-dir tests: segments, indexes, snapshots, checkpoints with known layout.

Record batches are encoded by kafka-python's ``DefaultRecordBatchBuilder``
(an encoder independent of kafkadump); what it cannot express (base offset,
partition leader epoch -- both outside the CRC -- and the control bit) is
patched in, the CRC recomputed with crc32c where needed.  Index, snapshot and
checkpoint bytes are packed here from the Kafka layouts.  Every builder
records where things are (batch positions, offsets) from its own
bookkeeping, so tests assert against these, never against kafkadump's output.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder

T0 = 1_700_000_000_000
ABORT, COMMIT = 0, 1


@dataclass
class B:
    """One encoded batch and its facts."""

    data: bytes
    base_offset: int
    last_offset: int
    max_ts: int
    pid: int = -1
    epoch: int = -1
    seq: int = -1
    leader_epoch: int = 0
    position: int = 0   # set when laid out in a segment

    @property
    def size(self):
        return len(self.data)


def batch(base_offset: int, n: int = 3, *, pid: int = -1, epoch: int = -1, seq: int = -1, txn: bool = False,
          leader_epoch: int = 0, ts: int = T0, codec: int = 0, value_size: int = 8) -> B:
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=txn, producer_id=pid,
                                    producer_epoch=epoch, base_sequence=seq, batch_size=1 << 22)
    for i in range(n):
        assert bld.append(i, timestamp=ts + i, key=b"k%d" % (base_offset + i),
                          value=(b"v%d-" % (base_offset + i)).ljust(value_size, b"x"), headers=[]) is not None
    buf = bytearray(bld.build())
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, 12, leader_epoch)
    return B(bytes(buf), base_offset, base_offset + n - 1, ts + n - 1, pid, epoch, seq, leader_epoch)


def control(base_offset: int, ctype: int, *, pid: int, epoch: int, leader_epoch: int = 0, ts: int = T0,
            coordinator_epoch: int = 7) -> B:
    """A COMMIT (1) or ABORT (0) marker batch."""
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True, producer_id=pid,
                                    producer_epoch=epoch, base_sequence=-1, batch_size=1 << 20)
    bld.append(0, timestamp=ts, key=struct.pack(">hh", 0, ctype), value=struct.pack(">hi", 0, coordinator_epoch),
               headers=[])
    buf = bytearray(bld.build())
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, 12, leader_epoch)
    (attrs,) = struct.unpack_from(">h", buf, 21)
    struct.pack_into(">h", buf, 21, attrs | 0x20)
    fix_crc(buf, 0)
    return B(bytes(buf), base_offset, base_offset, ts, pid, epoch, -1, leader_epoch)


def fix_crc(buf: bytearray, pos: int) -> None:
    (length,) = struct.unpack_from(">i", buf, pos + 8)
    struct.pack_into(">I", buf, pos + 17, crc32c.crc32c(bytes(buf[pos + 21:pos + 12 + length])))


@dataclass
class Seg:
    """A segment laid out from batches: bytes and each batch's position."""

    batches: list
    data: bytes = b""

    def __post_init__(self):
        pos = 0
        out = []
        for b in self.batches:
            b.position = pos
            out.append(b.data)
            pos += b.size
        self.data = b"".join(out)

    def at(self, i) -> int:
        return self.batches[i].position


def index_bytes(entries, base: int = 0) -> bytes:
    """.index from (absolute offset, position) pairs."""
    return b"".join(struct.pack(">ii", o - base, p) for o, p in entries)


def timeindex_bytes(entries, base: int = 0) -> bytes:
    """.timeindex from (timestamp, absolute offset) pairs."""
    return b"".join(struct.pack(">qi", t, o - base) for t, o in entries)


def txnindex_bytes(entries, version: int = 0) -> bytes:
    """.txnindex from (producerId, firstOffset, lastOffset, lastStableOffset)."""
    return b"".join(struct.pack(">hqqqq", version, *e) for e in entries)


def snapshot_bytes(entries, version: int = 1) -> bytes:
    """Producer snapshot from (pid, epoch, lastSeq, lastOffset, offsetDelta, ts, coordEpoch, txnFirst)."""
    body = struct.pack(">i", len(entries)) + b"".join(struct.pack(">qhiqiqiq", *e) for e in entries)
    return struct.pack(">hI", version, crc32c.crc32c(body)) + body


def checkpoint_text(lines, version: int = 0) -> bytes:
    return ("%d\n%d\n" % (version, len(lines)) + "".join(" ".join(str(x) for x in l) + "\n" for l in lines)).encode()


def name(offset: int, ext: str) -> str:
    return f"{offset:020d}{ext}"


def write(path, data: bytes) -> str:
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def flip(data: bytes, pos: int, xor: int = 0xFF) -> bytes:
    b = bytearray(data)
    b[pos] ^= xor
    return bytes(b)


def findings(report_or_file, code=None):
    """Findings of a triage report (all files) or of one file dict, optionally of one code."""
    files = report_or_file["files"] if "files" in report_or_file else [report_or_file]
    out = []
    for f in files:
        for x in f["findings"]:
            if code is None or x["code"] == code:
                out.append(dict(x, file=f["file"]))
    return out


def file_of(report, path) -> dict:
    path = str(path)
    return next(f for f in report["files"] if f["file"] == path)


__all__ = ["B", "batch", "control", "Seg", "index_bytes", "timeindex_bytes", "txnindex_bytes", "snapshot_bytes",
           "checkpoint_text", "name", "write", "flip", "findings", "file_of", "fix_crc", "T0", "ABORT", "COMMIT"]
