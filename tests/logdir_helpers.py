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


def make_logdir(root) -> dict:
    """A broker log dir whose partitions exercise every cross-check of the partition and log-dir folds.

    Returns ``{partition directory name: expected verdict}`` (the builders' own facts)::

        healthy-0   two segments, indexes, time index, leader-epoch-checkpoint, a producer
                    snapshot at the boundary, a committed transaction across the boundary: clean
        txn-0       an aborted transaction and its .txnindex, a transaction left open: warnings
        seq-0       a producer's sequence skips (warning) and a later one repeats (warning)
        damaged-0   a flipped byte (crc-mismatch), an index entry off a batch boundary: errors
        epochs-0    batches of leader epoch 2 the checkpoint does not know: warnings
        gone-0.abc-delete   a partition being deleted (pending, info): clean
        log dir     recovery-point checkpoint beyond a log end (warning), meta.properties
    """
    import os

    root = os.fspath(root)
    out = {}

    def seg(pdir, base, batches, **extra):
        s = Seg(batches)
        write(os.path.join(root, pdir, name(base, ".log")), s.data)
        for ext, data in extra.items():
            write(os.path.join(root, pdir, name(base, "." + ext)), data(s) if callable(data) else data)
        return s

    # healthy-0
    seg("healthy-0", 0, [batch(0, 3, pid=5, epoch=0, seq=0), batch(3, 2, pid=5, epoch=0, seq=3, leader_epoch=1),
                             batch(5, 2, pid=9, epoch=0, seq=0, txn=True, leader_epoch=1)],
            index=lambda s: index_bytes([(4, s.at(1))]),
            timeindex=lambda s: timeindex_bytes([(s.batches[1].max_ts, 4)]))
    seg("healthy-0", 7, [control(7, COMMIT, pid=9, epoch=0, leader_epoch=1),
                         batch(8, 4, pid=5, epoch=0, seq=5, leader_epoch=1)],
        index=lambda s: index_bytes([(11, s.at(1))], base=7))
    write(os.path.join(root, "healthy-0", "leader-epoch-checkpoint"), checkpoint_text([(0, 0), (1, 3)]))
    write(os.path.join(root, "healthy-0", name(7, ".snapshot")),
          snapshot_bytes([(5, 0, 4, 4, 1, T0, -1, -1), (9, 0, 1, 6, 1, T0, 0, 5)]))
    out["healthy-0"] = "clean"
    # txn-0
    seg("txn-0", 0, [batch(0, 3, pid=7, epoch=0, seq=0, txn=True), control(3, ABORT, pid=7, epoch=0),
                     batch(4, 2, pid=8, epoch=0, seq=0, txn=True)],
        txnindex=txnindex_bytes([(7, 0, 3, 0)]))
    out["txn-0"] = "warnings"
    # seq-0
    seg("seq-0", 0, [batch(0, 3, pid=5, epoch=0, seq=0), batch(3, 2, pid=5, epoch=0, seq=9)])
    seg("seq-0", 5, [batch(5, 2, pid=5, epoch=0, seq=4)])
    out["seq-0"] = "warnings"
    # damaged-0
    s = Seg([batch(0, 3), batch(3, 2), batch(5, 4)])
    write(os.path.join(root, "damaged-0", name(0, ".log")), flip(s.data, s.at(1) + 70))
    write(os.path.join(root, "damaged-0", name(0, ".index")), index_bytes([(8, s.at(2) + 1)]))
    out["damaged-0"] = "errors"
    # epochs-0
    seg("epochs-0", 0, [batch(0, 3, leader_epoch=0), batch(3, 2, leader_epoch=2)])
    write(os.path.join(root, "epochs-0", "leader-epoch-checkpoint"), checkpoint_text([(0, 0), (1, 3)]))
    out["epochs-0"] = "warnings"
    # a partition being deleted
    seg("gone-0.0123456789abcdef0123456789abcdef-delete", 0, [batch(0, 2)])
    out["gone-0.0123456789abcdef0123456789abcdef-delete"] = "clean"
    # the log dir's own files
    write(os.path.join(root, "recovery-point-offset-checkpoint"),
          checkpoint_text([("healthy", 0, 12), ("seq", 0, 500)]))
    write(os.path.join(root, "meta.properties"), b"#\nversion=1\nnode.id=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n")
    return out
