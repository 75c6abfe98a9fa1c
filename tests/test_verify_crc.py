"""verify-crc: the threaded fast path agrees with the serial one and with the full walker."""

import struct

import pytest
from conftest import FIXTURES
from crc32c import crc32c

from kafkadump.decoders.batches import Batch
from kafkadump.decoders.batches import CrcScan
from kafkadump.decoders.batches import Gap
from kafkadump.decoders.batches import iter_batches


def _big_segment(copies: int) -> bytearray:
    """Replicate the fixture's v2 batches with rewritten baseOffsets (outside the CRC)."""
    src = (FIXTURES / "segment-v2/00000000000000000000.log").read_bytes()
    out = bytearray()
    off = 0
    for _ in range(copies):
        pos = 0
        while pos < len(src):
            (length,) = struct.unpack_from(">i", src, pos + 8)
            (lod,) = struct.unpack_from(">i", src, pos + 23)
            b = bytearray(src[pos:pos + 12 + length])
            struct.pack_into(">q", b, 0, off)
            out += b
            off += lod + 1
            pos += 12 + length
    return out


def _summary(items):
    return [(type(i).__name__, i.position, i.size, sorted((f.code.value, f.offset) for f in i.findings))
            for i in items]


@pytest.fixture(scope="module")
def damaged_big():
    data = _big_segment(3500)  # ~9.8 MB: above the threaded threshold
    assert len(data) > CrcScan.THREAD_MIN_BYTES
    # 1) flip a byte inside a batch early on
    data[5000] ^= 0xFF
    # 2) garbage in the middle, at a batch boundary
    pos = 0
    while pos < len(data) // 2:
        (length,) = struct.unpack_from(">i", data, pos + 8)
        pos += 12 + length
    data[pos:pos] = b"\x07" * 53
    # 3) a batch whose length field is corrupted (CRC no longer matters: the walk must resync)
    pos2 = pos + 53
    for _ in range(500):
        (length,) = struct.unpack_from(">i", data, pos2 + 8)
        pos2 += 12 + length
    struct.pack_into(">i", data, pos2 + 8, 61)
    # 4) truncated tail
    del data[-40:]
    return bytes(data)


def test_threaded_equals_serial_equals_walker(damaged_big):
    serial = CrcScan(damaged_big, "x", threads=1)
    threaded = CrcScan(damaged_big, "x", threads=2)
    s_items = _summary(serial)
    t_items = _summary(threaded)
    assert s_items == t_items
    assert (serial.batches, serial.bytes, serial.bad) == (threaded.batches, threaded.bytes, threaded.bad)
    walk = [i for i in iter_batches(damaged_big, "x") if i.findings and
            any(f.severity.value != "info" for f in i.findings)]
    # the walker may add record-level findings; the CRC verdicts and gaps must agree
    assert [(type(i).__name__, i.position, i.size) for i in walk] == [(t, p, s) for t, p, s, _ in t_items]
    codes = {c for *_, fs in t_items for c, _ in fs}
    assert {"crc-mismatch", "garbage", "truncated"} <= codes
    assert serial.bad == len(s_items)


def test_clean_big_file_has_no_problems():
    data = bytes(_big_segment(3200))
    scan = CrcScan(data, "x", threads=2)
    assert list(scan) == []
    assert scan.bytes == len(data)
    assert scan.batches == 3200 * 14


def test_every_crc_is_really_checked():
    """Flip one byte in each of several batches: each is reported, none missed."""
    data = bytearray(_big_segment(3200))
    starts = []
    pos = 0
    while pos < len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        starts.append(pos)
        pos += 12 + length
    victims = starts[7::4001]
    for v in victims:
        data[v + 70] ^= 0x01  # inside the CRC-covered region, not the length
    scan = CrcScan(bytes(data), "x", threads=2)
    bad = [i.position for i in scan]
    assert bad == victims
    assert all(crc32c(bytes(data[v + 21:v + 12 + struct.unpack_from(">i", data, v + 8)[0]])) for v in victims)
