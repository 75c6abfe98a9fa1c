#!/usr/bin/env python3
"""Generate a large, valid v2 segment file fast, for benchmarks.

One record batch is built with kafka-python's ``DefaultRecordBatchBuilder``
(a third-party encoder, so the file also cross-checks the decoder) and then
replicated: each copy gets its own ``baseOffset`` (bytes 0..8, outside the
CRC, which covers bytes 21..end), so offsets are consecutive and every CRC
stays valid.  Copies are assembled in a ~64 MiB buffer and written with
large writes; 1 GiB takes about as long as the disk needs to absorb it.

Two shapes are used by ``bench.py``:

* "crc": 16 KiB batches of ~1 KiB records (the default here)::

      make_segment.py /tmp/crc.log --size 1G

* "records": small uncompressed records (values 40-90 bytes, 10-byte keys,
  150 records a batch, so ~60-110 bytes per record on the wire)::

      make_segment.py /tmp/rec.log --size 128M --record-bytes 40-90 --records-per-batch 150

A JSON sidecar (``FILE.json``) records the parameters and the exact
batch/record counts; ``bench.py`` uses it to reuse a matching file.

Sizes take binary suffixes: ``64M``, ``1G``, ``16K`` (or plain bytes).  The
file is rounded down to a whole number of batches.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import struct
import sys
import time

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CHUNK = 64 << 20          # bytes assembled per write
BASE_TIMESTAMP = 1_700_000_000_000
_BASE_OFFSET = struct.Struct(">q")


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(?:i?[bB])?\s*", str(text))
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 64M, 1G, 16K, 4096)")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def parse_range(text: str) -> tuple[int, int]:
    """``N`` or ``LO-HI`` (inclusive) -> (lo, hi)."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", str(text))
    if not m:
        raise argparse.ArgumentTypeError(f"not a byte count or range: {text!r} (e.g. 1000, 40-90)")
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) else lo
    if hi < lo:
        raise argparse.ArgumentTypeError(f"empty range {text!r}")
    return lo, hi


def build_batch(*, batch_bytes: int, value_range: tuple[int, int], key_bytes: int,
                records_per_batch: int | None, headers: int, codec: str, payload: str,
                seed: int = 1) -> tuple[bytes, int]:
    """One v2 batch (baseOffset 0) and its record count."""
    rng = random.Random(seed)
    b = DefaultRecordBatchBuilder(magic=2, compression_type=CODECS[codec], is_transactional=False,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=batch_bytes if records_per_batch is None else 1 << 31)
    text = (b"The quick brown fox jumps over the lazy dog; " * 64)
    n = 0
    limit = records_per_batch if records_per_batch is not None else 1 << 31
    while n < limit:
        vlen = rng.randint(*value_range)
        if payload == "random":
            value = rng.randbytes(vlen)
        else:
            start = rng.randrange(0, 45)
            value = text[start:start + vlen]
        key = (b"key-%d-" % n).ljust(key_bytes, b"k")[:key_bytes] if key_bytes else None
        hdrs = [(f"h{i}", rng.randbytes(8)) for i in range(headers)]
        # timestamps 1 ms apart: deltas grow past one varint byte, like real data
        if b.append(n, BASE_TIMESTAMP + n, key, value, hdrs) is None:
            break
        n += 1
    return bytes(b.build()), n


def write_segment(path: str, batch: bytes, records_per_batch: int, size: int) -> int:
    """Write ``size // len(batch)`` copies with consecutive offsets; returns the number of batches."""
    blen = len(batch)
    n_batches = size // blen
    if n_batches < 1:
        raise SystemExit(f"--size {size} is smaller than one batch ({blen} bytes)")
    per_chunk = max(1, CHUNK // blen)
    chunk = bytearray(batch * per_chunk)
    pack = _BASE_OFFSET.pack_into
    tmp = path + ".part"
    with open(tmp, "wb", buffering=0) as f:
        done = 0
        while done < n_batches:
            k = min(per_chunk, n_batches - done)
            off = done * records_per_batch
            for i in range(k):
                pack(chunk, i * blen, off)
                off += records_per_batch
            mv = memoryview(chunk)[:k * blen]
            while mv:
                w = f.write(mv)
                mv = mv[w:]
            done += k
    os.replace(tmp, path)
    return n_batches


def make(path: str, *, size: int, batch_bytes: int = 16 << 10, record_bytes: str = "1000",
         key_bytes: int = 8, records_per_batch: int | None = None, headers: int = 0,
         codec: str = "none", payload: str | None = None, quiet: bool = False) -> dict:
    payload = payload or ("random" if codec == "none" else "text")
    value_range = parse_range(record_bytes)
    t0 = time.perf_counter()
    batch, nrec = build_batch(batch_bytes=batch_bytes, value_range=value_range, key_bytes=key_bytes,
                              records_per_batch=records_per_batch, headers=headers, codec=codec,
                              payload=payload)
    # sanity: kafka-python reads its own batch back with a valid CRC
    check = DefaultRecordBatch(batch)
    assert check.validate_crc() and check.records_count == nrec, "generated batch does not verify"
    n_batches = write_segment(path, batch, nrec, size)
    meta = {
        "path": os.path.abspath(path),
        "params": {"size": size, "batch_bytes": batch_bytes, "record_bytes": record_bytes,
                   "key_bytes": key_bytes, "records_per_batch": records_per_batch, "headers": headers,
                   "codec": codec, "payload": payload},
        "batch_size": len(batch),
        "records_per_batch": nrec,
        "batches": n_batches,
        "records": n_batches * nrec,
        "bytes": n_batches * len(batch),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    with open(path + ".json", "w") as f:
        json.dump(meta, f, indent=1)
    if not quiet:
        print(f"{path}: {meta['bytes']:,} bytes, {n_batches:,} batches of {len(batch):,} bytes, "
              f"{meta['records']:,} records ({nrec} a batch), {meta['seconds']} s", file=sys.stderr)
    return meta


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", help="output file (a FILE.json sidecar is written beside it)")
    p.add_argument("--size", type=parse_size, default=1 << 30, help="file size (default 1G)")
    p.add_argument("--batch-bytes", type=parse_size, default=16 << 10,
                   help="batch size to fill (before compression) when --records-per-batch is not given (default 16K)")
    p.add_argument("--record-bytes", default="1000",
                   help="value size in bytes, N or LO-HI random per record (default 1000)")
    p.add_argument("--key-bytes", type=int, default=8, help="key size (0: null keys; default 8)")
    p.add_argument("--records-per-batch", type=int, default=None,
                   help="exact records per batch (overrides --batch-bytes)")
    p.add_argument("--headers", type=int, default=0, help="headers per record (default 0)")
    p.add_argument("--codec", choices=sorted(CODECS), default="none", help="compression (default none)")
    p.add_argument("--payload", choices=("random", "text"), default=None,
                   help="value bytes: random (default for none) or repetitive text (default when compressed)")
    a = p.parse_args(argv)
    make(a.path, size=a.size, batch_bytes=a.batch_bytes, record_bytes=a.record_bytes, key_bytes=a.key_bytes,
         records_per_batch=a.records_per_batch, headers=a.headers, codec=a.codec, payload=a.payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
