"""Seed inputs for each fuzz target: the project's fixtures and the shared corpus, read in place.

``seeds(name)`` yields bytes already shaped for the target (e.g. with the
selector byte the target expects in front).  Files larger than ``MAX_SEED``
are skipped, and at most ``PER_SOURCE`` files are taken from each source, so
seeding stays fast.
"""

from __future__ import annotations

import gzip
import os
import struct
from pathlib import Path

import payload_targets

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CORPUS = Path(os.environ.get("KAFKADUMP_SHARED", ROOT.parent / "shared")) / "corpus"
MAX_SEED = 1 << 16
PER_SOURCE = 40


def _files(root: Path, pattern: str, limit: int = PER_SOURCE):
    if not root.exists():
        return
    n = 0
    for p in sorted(root.rglob(pattern)):
        if n >= limit:
            return
        try:
            if p.is_file() and 0 < p.stat().st_size <= MAX_SEED:
                n += 1
                yield p.read_bytes()
        except OSError:
            continue


def _segments():
    yield from _files(FIXTURES, "*.log")
    yield from _files(CORPUS / "real" / "segments", "*.log")


def _compressed():
    payload = b"kafkadump fuzz seed " * 8
    yield b"\x00" + payload
    yield b"\x01" + gzip.compress(payload, mtime=0)
    try:
        import snappy

        yield b"\x02" + snappy.compress(payload)
        blk = snappy.compress(payload)
        yield b"\x02" + b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(blk)) + blk
    except ImportError:  # pragma: no cover
        pass
    try:
        import lz4.frame

        yield b"\x03" + lz4.frame.compress(payload)
    except ImportError:  # pragma: no cover
        pass
    try:
        import zstandard

        yield b"\x04" + zstandard.ZstdCompressor().compress(payload)
    except ImportError:  # pragma: no cover
        pass


def _legacy():
    yield b"\x00hello"
    yield b"\x01" + b"\x00" * 8
    # a gzip wrapper whose inner bytes are a legacy message set (bit 7: the target gzips it)
    inner = struct.pack(">qi", 0, 14) + b"\x00\x00\x00\x00\x00\x00" + b"\xff\xff\xff\xff" + b"\x00\x00\x00\x00"
    yield bytes([0x82]) + inner
    for s in _files(FIXTURES / "segment-mixed", "*.log", 1):
        yield b"\x00" + s[:4096]


def _prefixed(pairs):
    for i, (root, pattern) in enumerate(pairs):
        for b in _files(root, pattern, PER_SOURCE // 2):
            yield bytes([i]) + b


def _index():
    seg = CORPUS / "real" / "segments"
    yield from _prefixed([(seg, "*.index"), (seg, "*.timeindex"), (seg, "*.txnindex")])
    yield b"\x00" + struct.pack(">ii", 0, 0) + struct.pack(">ii", 1, 78)
    yield b"\x02" + struct.pack(">hqqqq", 0, 7, 0, 3, 4)


def _checkpoint():
    from targets import _TEXT_NAMES

    seg = CORPUS / "real" / "segments"
    yield from _prefixed([(seg, n) for n in _TEXT_NAMES])


def _text():
    for name in ("test_capture_hextext.py",):
        p = ROOT / "tests" / name
        if p.exists():
            # the dumps embedded in the tests' string literals
            import re

            for m in re.finditer(r'"""(.*?)"""', p.read_text(), re.S):
                if any(c in m.group(1) for c in "0123456789abcdef"):
                    yield m.group(1).encode("ascii", "replace")
    yield from _files(ROOT / "tests" / "golden", "hexdump_*.txt", 5)
    yield b"0000  00 00 00 0a 00 12 00 03 00 00 00 01 00 00  ..............\n"


def _pcaps():
    yield from _files(CORPUS / "real" / "pcaps", "*.pcap")
    yield from _files(CORPUS / "real" / "pcaps", "*.pcapng")
    yield from _generated_pcaps()


def _generated_pcaps():
    """Small instances of the capture generators (tests/capture_scaled.py): IPv4 fragments, a
    fragment lost, TSO super-packets, a link type kafkadump cannot read, a huge size prefix."""
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    import capture_builders as cb
    import capture_scaled as cs

    yield cs.fragmented_capture(1, whole=1)[0]
    yield cs.unknown_link_capture(3)
    yield cs.bogus_prefix_capture(2)[0]
    c, _, _ = cs.conversation()
    yield cb.pcap([(t, cs.tso(ip)) for t, ip, _ in c.packets])[0]


def _frames():
    for b in _files(CORPUS / "real" / "vectors", "*.bin", 80):
        yield b"\x00" + b


def _internal():
    from kafkadump.decoders.batches import Batch
    from kafkadump.decoders.batches import Options
    from kafkadump.decoders.batches import iter_batches
    from kafkadump.decoders.internal_topics.constants import KINDS

    seg = CORPUS / "real" / "segments"
    dirs = {"offsets": "__consumer_offsets-*", "transactions": "__transaction_state-*",
            "metadata": "__cluster_metadata-*"}
    for kind, pattern in dirs.items():
        if not seg.exists() or kind not in KINDS:
            continue
        n = 0
        for d in sorted(seg.rglob(pattern)):
            for p in sorted(d.glob("*.log")):
                if n >= 30 or p.stat().st_size > 1 << 20:
                    continue
                for it in iter_batches(p.read_bytes(), str(p), options=Options()):
                    if isinstance(it, Batch) and it.records:
                        for r in it.records[:3]:
                            k, v = r.key or b"", r.value or b""
                            if len(k) < 256 and n < 30:
                                n += 1
                                ctl = (1 if r.control is not None else 0) | (2 if r.key is None else 0) \
                                    | (4 if r.value is None else 0)
                                yield bytes([KINDS.index(kind), ctl, len(k)]) + k + v


def _coordinator_segments():
    """Segments of __transaction_state and __consumer_offsets, and transactional data (small ones)."""
    seg = CORPUS / "real" / "segments"
    for pattern in ("__transaction_state-*", "__consumer_offsets-*", "_confluent-ksql-*"):
        n = 0
        for p in sorted(seg.rglob(f"{pattern}/*.log")) if seg.exists() else ():
            if n < 8 and 0 < p.stat().st_size <= 1 << 16:
                n += 1
                yield p.read_bytes()


SOURCES = {
    "segment": _segments,
    "records": _segments,
    "carve": _segments,
    "legacy": _legacy,
    "compression": _compressed,
    "index": _index,
    "snapshot": lambda: _files(CORPUS / "real" / "segments", "*.snapshot"),
    "checkpoint": _checkpoint,
    "hextext": _text,
    "pcap": _pcaps,
    "protocol": _frames,
    "internal": _internal,
    "forensics": lambda: _coordinator_segments(),
}
SOURCES.update(payload_targets.SEEDS)  # avro, protobuf, jsonschema, schemas


def seeds(name: str) -> list[bytes]:
    out = [b""]
    try:
        out.extend(SOURCES[name]())
    except Exception:  # pragma: no cover - a broken corpus must not stop fuzzing
        pass
    return out
