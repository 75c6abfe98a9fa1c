"""A small generated "fleet" (a Kafka log dir) for the Spark tests, with known facts.

Built with ``tests/builders.py`` (the tests' own encoder, independent of the
decoder).  :func:`make_fleet` writes the files and returns what a correct
reader must say about them, computed from the builders' layouts, not by
decoding:

    orders-0/   two segments, producer 1000, every codec, headers; in the second
                the sequence skips 5 numbers once (a sequence-gap), a batch is
                missing (offsets and sequence skip: explained), the epoch goes
                to 1 (sequence restarts at 0); a transaction and its COMMIT
    orders-1/   one ~2.5 MB segment of 1 200 batches (split into many tasks by a
                small split size) with damage: a flipped value byte (crc-mismatch),
                30 garbage bytes (a gap), a batch repeated out of order
                (offset-order) and a zero-padded tail
    legacy-0/   magic 0 and 1 messages and a gzip wrapper
    broken-0/   a segment cut in the middle of its last batch (truncated)
    misc/       a segment in a directory that is not a partition (topic null)
    gone-0/     a dangling symlink: listed, cannot be opened (an error row)
"""

from __future__ import annotations

import os
import random

from builders import GZIP, LZ4, SNAPPY, ZSTD, Rec, control_batch, legacy_message, legacy_wrapper, simple_batch, v2_batch

SEG = "{:020d}.log"
PID = 1000


def _write(path, chunks) -> bytes:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = b"".join(chunks)
    with open(path, "wb") as f:
        f.write(data)
    return data


def make_fleet(root: str) -> dict:
    rnd = random.Random(7)
    facts: dict = {"files": [], "partitions": {}}

    # --- orders-0: two clean segments, one idempotent producer -----------------------------
    codecs = [0, GZIP, SNAPPY, LZ4, ZSTD]
    seq = 0
    chunks, off, nrec, nbatch = [], 0, 0, 0
    for i in range(40):
        recs = [Rec(f"user-{(off + j) % 17}".encode(), f"order {off + j} ".encode() * rnd.randint(1, 6),
                    ts_delta=j * 3, headers=(("trace", f"{off + j}".encode()), ("dup", None), ("dup", b"2")))
                for j in range(5)]
        chunks.append(v2_batch(off, recs, codec=codecs[i % 5], base_ts=1_700_000_000_000 + off * 10,
                               producer_id=PID, producer_epoch=0, base_sequence=seq).data)
        off += 5
        seq += 5
        nrec += 5
        nbatch += 1
    first = os.path.join(root, "orders-0", SEG.format(0))
    _write(first, chunks)
    facts["files"].append(first)
    chunks = []
    gap_at = None
    epoch = 0
    for i in range(20):
        if i == 7:
            seq += 5           # the producer's sequence skips 5 with no offset missing: a sequence-gap
            gap_at = off
        if i == 12:
            explained = {"atOffset": off + 4, "afterOffset": off - 1, "missing": 4, "explained": True}
            seq += 4           # a batch removed (as compaction would): offsets and sequence both skip,
            off += 4           # an explained gap, no finding
            continue
        if i == 15:
            epoch, seq = 1, 0  # a new epoch starts again at sequence 0: no finding
        b = simple_batch(off, 4, codec=codecs[i % 5], base_ts=1_700_000_000_000 + off * 10,
                         producer_id=PID, producer_epoch=epoch, base_sequence=seq)
        chunks.append(b.data)
        off += 4
        seq += 4
        nrec += 4
        nbatch += 1
    # a transaction of another producer, and its COMMIT marker
    chunks.append(simple_batch(off, 2, producer_id=5000, producer_epoch=2, base_sequence=0,
                               transactional=True).data)
    off += 2
    nrec += 2
    chunks.append(control_batch(off, 1).data)
    off += 1
    nrec += 1
    nbatch += 2
    second = os.path.join(root, "orders-0", SEG.format(200))
    _write(second, chunks)
    facts["files"].append(second)
    # the partition objects of the triage report (kafkadump.objects.logdir_objects): the
    # leader-epoch-checkpoint below is the third file; the explained gap is an info offset-gap
    facts["partitions"][("orders", 0)] = {
        "files": 3, "segments": 2, "batches": nbatch, "records": nrec, "firstOffset": 0, "logEndOffset": off,
        "crcFailures": 0, "damagedRanges": 0, "findings": {"error": 0, "warning": 1, "info": 1},
        "sequenceGapsExplained": 1, "verdict": "warnings", "findingCounts": {"offset-gap": 1, "sequence-gap": 1}}
    facts["sequence_gap"] = {"topic": "orders", "partition": 0, "kind": "sequence-gap", "explained": False,
                             "producerId": PID, "producerEpoch": 0, "atOffset": gap_at, "afterOffset": gap_at - 1,
                             "missing": 5}
    facts["explained_gap"] = explained

    # --- orders-1: one large segment with damage -----------------------------------------
    chunks, off = [], 0
    layouts = []
    for i in range(1200):
        b = simple_batch(off, 3, value_size=rnd.randint(400, 2400), base_ts=1_700_000_000_000 + off,
                         codec=GZIP if i % 50 == 0 else 0)
        layouts.append(b)
        chunks.append(b.data)
        off += 3
    # damage: flip a byte inside a record of batch 401 (CRC no longer matches)
    flipped = bytearray(chunks[401])
    flipped[layouts[401].record_positions[1] + 12] ^= 0x20
    chunks[401] = bytes(flipped)
    # 30 garbage bytes before batch 700
    chunks[700] = bytes(rnd.randrange(1, 256) for _ in range(30)) + chunks[700]
    # batch 10 written again after batch 900: its offsets go backwards
    chunks[900] = chunks[900] + layouts[10].data
    big = os.path.join(root, "orders-1", SEG.format(0))
    data = _write(big, chunks + [bytes(4096)])
    facts["files"].append(big)
    facts["big_file"] = big
    facts["big_size"] = len(data)
    facts["partitions"][("orders", 1)] = {
        "files": 1, "batches": 1200, "crcFailures": 1,   # CRC-valid batches (the repeated one too), the flipped one
        "damagedRanges": 2,                              # the flipped batch, the garbage (zero padding is no damage)
        "firstOffset": 0, "logEndOffset": off, "sequenceGapsExplained": 0}

    # --- legacy-0 ---------------------------------------------------------------------------
    inner = [legacy_message(k, f"inner-{k}".encode(), key=b"k", magic=1) for k in range(3)]
    wrapper, _ = legacy_wrapper(5, inner, codec=GZIP, magic=1)
    legacy = os.path.join(root, "legacy-0", SEG.format(0))
    _write(legacy, [legacy_message(0, b"zero", magic=0), legacy_message(1, b"one", key=b"k1", magic=0),
                    legacy_message(2, b"two", magic=1), wrapper])
    facts["files"].append(legacy)

    # --- broken-0: a cut tail ----------------------------------------------------------------
    whole = [simple_batch(o * 3, 3).data for o in range(10)]
    cut = b"".join(whole)[:-25]
    broken = os.path.join(root, "broken-0", SEG.format(0))
    _write(broken, [cut])
    facts["files"].append(broken)
    facts["partitions"][("broken", 0)] = {"files": 1, "batches": 9, "records": 27, "damagedRanges": 1,
                                          "firstOffset": 0, "logEndOffset": 27}

    # --- misc: not a partition directory ----------------------------------------------------
    misc = os.path.join(root, "misc", SEG.format(0))
    _write(misc, [simple_batch(0, 2).data])
    facts["files"].append(misc)

    # --- gone-0: a dangling symlink ---------------------------------------------------------
    gone = os.path.join(root, "gone-0", SEG.format(0))
    os.makedirs(os.path.dirname(gone), exist_ok=True)
    os.symlink(os.path.join(root, "nowhere.log"), gone)
    facts["gone"] = gone
    # not a segment: must not be listed from a directory
    with open(os.path.join(root, "orders-0", "leader-epoch-checkpoint"), "w") as f:
        f.write("0\n1\n0 0\n")
    return facts


def damaged_variants(data: bytes, seed: int, count: int):
    """``count`` mutated copies of ``data``: flipped bits, inserted/deleted runs, cut tails,
    appended zeros, chunks copied from elsewhere (duplicate / out-of-order batches)."""
    rnd = random.Random(seed)
    for _ in range(count):
        d = bytearray(data)
        for _ in range(rnd.randint(1, 6)):
            op = rnd.random()
            p = rnd.randrange(len(d))
            if op < 0.4:
                d[p] ^= 1 << rnd.randrange(8)
            elif op < 0.55:
                d[p:p] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 40)))
            elif op < 0.7:
                del d[p:p + rnd.randint(1, 200)]
            elif op < 0.8:
                d = d[:p]
            elif op < 0.9:
                d += bytes(rnd.randint(1, 3000))
            else:
                q = rnd.randrange(len(d))
                d[p:p] = d[q:q + rnd.randint(50, 5000)]
            if not d:
                d = bytearray(b"\0")
        yield bytes(d)
