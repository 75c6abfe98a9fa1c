"""Scaled inputs for "growth with the number of findings or entities": a damaged range of many
bad-CRC batch headers (carve), many producers with open transactions (triage), a large
leader-epoch-checkpoint (dump).  Each writes a file and returns what a test needs."""

from __future__ import annotations

import struct
from pathlib import Path

import builders as bld
from crc32c import crc32c

_BATCH = struct.Struct(">qiibI")


def _template(**kw) -> bytearray:
    return bytearray(bld.v2_batch(0, [bld.Rec(b"k", b"v")], **kw).data)


def bad_crc_range(path: Path, n: int) -> int:
    """``n`` one-record v2 batches with offsets 0.. and a wrong CRC each, between two intact batches:
    one damaged range of ``n`` crc-mismatch findings.  Returns the damaged range's size."""
    t = _template()
    out = bytearray(bld.simple_batch(0, 1).data)
    start = len(out)
    for i in range(n):
        struct.pack_into(">q", t, 0, i + 1)
        struct.pack_into(">I", t, 17, 0xDEADBEEF)
        out += t
    end = len(out)
    out += bld.simple_batch(n + 1, 1).data
    path.write_bytes(bytes(out))
    return end - start


def producers_segment(path: Path, n: int) -> None:
    """``n`` producers, each writing one transactional batch and no marker: ``n`` open transactions."""
    t = _template(producer_id=0, producer_epoch=0, base_sequence=0, transactional=True)
    out = bytearray()
    for i in range(n):
        struct.pack_into(">q", t, 0, i)
        struct.pack_into(">q", t, 43, 1000 + i)
        struct.pack_into(">I", t, 17, crc32c(bytes(t[21:])))
        out += t
    path.write_bytes(bytes(out))


def leader_epoch_checkpoint(path: Path, n: int) -> None:
    """A leader-epoch-checkpoint of ``n`` entries (epoch i at offset 10*i)."""
    with open(path, "w") as f:
        f.write(f"0\n{n}\n")
        for i in range(n):
            f.write(f"{i} {10 * i}\n")
