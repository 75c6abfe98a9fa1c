"""The compiled CRC-32C (kafkadump/accel/crc32c.h) and verify-crc's hop that uses it.

Every code the CPU runs (carry-less multiply, the crc32 instruction, the tables) must give what the
crc32c package gives, the oracle: on every length around the folding code's edges, at every alignment,
continuing any CRC; on random bytes (hypothesis); on the CRC-32C check value; and on the stored CRC of
every v2 batch of the shared corpus.  The hop's verdicts must be the pure path's.
"""

from __future__ import annotations

import mmap
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from builders import Rec, v2_batch
from conftest import need_corpus
from crc32c import crc32c as oracle
from hypothesis import given, settings
from hypothesis import strategies as st
from test_accel_parity import compiled, pure_python

from kafkadump.decoders.batches import CrcScan
from kafkadump.decoders.batches import Options
from kafkadump.decoders.batches import walk as walk_module

pytestmark = compiled

HOT = walk_module._HOT
CODES = HOT.crc32c_codes() if HOT is not None else ()
SEEDS = (0, 1, 0xFFFFFFFF, 0xE3069283, 0x12345678)
# lengths around the edges of the folding code: below a first lane, one round of 64, the rounds, the tail
EDGES = sorted({*range(0, 300), *(64 * k + d for k in range(2, 40) for d in (-9, -1, 0, 1, 7, 8, 15, 16, 63))})


_BLOCK = bytes((i * 131 + (i >> 8) * 29 + (i >> 13) * 7 + 17) & 0xFF for i in range(1 << 15))


def _data(n: int, salt: int = 0) -> bytes:
    """``n`` bytes that are not a repeating pattern (every lane of the fold differs), from ``salt`` on."""
    start = (salt * 4099) % len(_BLOCK)
    block = _BLOCK * (1 + (start + n) // len(_BLOCK))
    return block[start:start + n]


def test_codes_named_the_one_in_use_first():
    assert CODES[-1] == "table"
    assert set(CODES) <= {"sse4.2+pclmul", "sse4.2", "table"}
    assert HOT.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value (Castagnoli, RFC 3720)
    with pytest.raises(ValueError):
        HOT.crc32c(b"x", 0, "crc64")


@pytest.mark.parametrize("code", CODES)
def test_every_length_alignment_and_seed(code):
    block = _data(max(EDGES) + 16)
    view = memoryview(block)
    for n in EDGES:
        for align in (0, 1, 3, 8, 13):
            piece = view[align:align + n]
            seed = SEEDS[(n + align) % len(SEEDS)]
            assert HOT.crc32c(piece, seed, code) == oracle(piece, seed), (code, n, align, seed)


@pytest.mark.parametrize("code", CODES)
def test_continuing_equals_one_call(code):
    data = _data(5000, 3)
    whole = oracle(data)
    for cut in (0, 1, 63, 64, 129, 2500, 4999, 5000):
        assert HOT.crc32c(data[cut:], HOT.crc32c(data[:cut], 0, code), code) == whole, cut


@pytest.mark.parametrize("code", CODES)
def test_large_buffer_without_the_gil(code):
    data = _data((1 << 20) + 77, 5)  # past the size the GIL is released at
    assert HOT.crc32c(data, 7, code) == oracle(data, 7)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000), st.integers(0, 15), st.integers(0, 0xFFFFFFFF))
def test_random_bytes(data, align, seed):
    piece = memoryview(b"\xa5" * align + data)[align:]
    expected = oracle(piece, seed)
    for code in CODES:
        assert HOT.crc32c(piece, seed, code) == expected, code


_PROGRAM = r"""
#include <stdio.h>
#include "crc32c.h"
int main(void) {
    static unsigned char data[1 << 16];
    size_t n = fread(data, 1, sizeof data, stdin);
    crc32c_setup();
    printf("%s %u %u\n", crc32c_codes[0].name, kafkadump_crc32c(0, data, n), kafkadump_crc32c(0xE3069283u, data + 3, n - 3));
    return 0;
}
"""


@pytest.mark.parametrize("defines", [["-DKAFKADUMP_CRC32C_PORTABLE"], []], ids=["portable", "native"])
def test_header_alone_without_warnings(tmp_path, defines):
    """crc32c.h in a C program of its own, warnings as errors: as built where only the tables exist (any CPU
    that is not x86-64, checked here by the macro that leaves the x86 code out) and natively."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler")
    (tmp_path / "t.c").write_text(_PROGRAM)
    header_dir = Path(walk_module.__file__).resolve().parent.parent / "accel"
    exe = tmp_path / "t"
    subprocess.run([cc, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", *defines, "-I", str(header_dir),
                    str(tmp_path / "t.c"), "-o", str(exe)], check=True, capture_output=True)
    data = _data(40000, 11)
    name, whole, seeded = subprocess.run([str(exe)], input=data, check=True, capture_output=True).stdout.split()
    assert name.decode() == ("table" if defines else CODES[0])  # natively: the code the extension chose
    assert (int(whole), int(seeded)) == (oracle(data), oracle(data[3:], 0xE3069283))


def _v2_regions(data: bytes) -> list[tuple[int, int, int]]:
    """(start, end, stored CRC) of each v2 batch walked by length from the start of ``data``."""
    out = []
    pos = 0
    while len(data) - pos >= 61:
        (length,) = struct.unpack_from(">i", data, pos + 8)
        if data[pos + 16] != 2 or length < 49 or pos + 12 + length > len(data):
            break
        out.append((pos + 21, pos + 12 + length, struct.unpack_from(">I", data, pos + 17)[0]))
        pos += 12 + length
    return out


def test_corpus_stored_crcs():
    """Every v2 batch of the corpus's segments (all stored CRCs are right there, says its manifest)."""
    root = need_corpus("real/segments")
    checked = 0
    for path in sorted(root.rglob("*.log")):
        data = path.read_bytes()
        for start, end, stored in _v2_regions(data):
            assert oracle(data[start:end]) == stored, (path, start)
            for code in CODES:
                assert HOT.crc32c(data[start:end], 0, code) == stored, (path, start, code)
            checked += 1
    assert checked > 1000


# --- verify-crc's hop ------------------------------------------------------------------------------------

def _scan(data: bytes, threads: int) -> tuple[list, tuple[int, int, int]]:
    scan = CrcScan(data, "x", Options(records=False), threads=threads)
    items = [(type(i).__name__, i.position, i.size, [(f.code.value, f.offset, f.message) for f in i.findings])
             for i in scan]
    return items, (scan.batches, scan.bytes, scan.bad)


def _segment(batches: int) -> bytearray:
    """``batches`` one-record v2 batches of 3,000 to 5,000 value bytes (every alignment of a batch's start)."""
    out = bytearray()
    for i in range(batches):
        value = _data(3000 + (i * 389) % 2001, i)
        out += v2_batch(i, [Rec(b"k%d" % i, value)]).data
    return out


def _damaged(batches: int) -> bytes:
    """A flipped byte in the CRC region of every 97th batch, and one batch with a length past the file."""
    data = _segment(batches)
    starts = [start - 21 for start, _, _ in _v2_regions(bytes(data))]
    for s in starts[5::97]:
        data[s + 61] ^= 0x40
    struct.pack_into(">i", data, starts[len(starts) // 2] + 8, 1 << 30)
    return bytes(data)


def test_hop_equals_pure_serial_and_threaded():
    """The compiled hop (one thread) against the pure path, serial and on its two threads."""
    data = _damaged(2200)  # above the pure path's threaded threshold
    assert len(data) > CrcScan.THREAD_MIN_BYTES
    fast = _scan(data, 2)
    with pure_python():
        assert _scan(data, 1) == fast
        assert _scan(data, 2) == fast
    assert fast[1][2] == len(fast[0]) > 20


def test_hop_stops_at_a_failed_crc_and_at_until():
    data = bytes(_segment(20))
    regions = _v2_regions(data)
    n = len(data)
    assert HOT.crc_hop(data, 0, n, n, 1 << 20) == (n, len(regions), n)
    second = regions[1][0] - 21
    assert HOT.crc_hop(data, 0, n, second, 1 << 20) == (second, 1, second)  # stops at ``until``
    bad = bytearray(data)
    bad[regions[3][1] - 1] ^= 1  # the last byte of the fourth batch
    fourth = regions[3][0] - 21
    assert HOT.crc_hop(bytes(bad), 0, n, n, 1 << 20) == (fourth, 3, fourth)
    # a batch longer than max_length is left to the Python loop
    assert HOT.crc_hop(data, 0, n, n, regions[0][1] - regions[0][0] + 7) == (0, 0, 0)



@pytest.mark.skipif(HOT is None or sys.maxsize < 1 << 32, reason="needs the compiled hop and a 64-bit address space")
def test_hop_counts_a_batch_near_two_gib_without_overflow():
    """A batch whose length + 12 passes 2**31 - 1 is counted in full (the count was an int sum once).
    The mapping is anonymous: untouched pages are the zero page and cost no memory."""
    length = 0x7FFFFFFF - 3
    size = 12 + length
    m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
    try:
        m[8:12] = struct.pack(">i", length)
        m[16] = 2
        view = memoryview(m)
        m[17:21] = struct.pack(">I", HOT.crc32c(view[21:size]))
        view.release()
        assert HOT.crc_hop(m, 0, size, size, 0x7FFFFFFF) == (size, 1, size)
    finally:
        m.close()

def test_hop_with_the_packages_function():
    """Where crc32c.h has only its tables the hop calls the crc32c package instead: the same walk."""
    data = _damaged(300)
    n = len(data)
    stops = set()
    for start in [start - 21 for start, _, _ in _v2_regions(data)][::7] + [1, n - 70]:
        ours = HOT.crc_hop(data, start, n, n, 1 << 20)
        assert HOT.crc_hop(data, start, n, n, 1 << 20, oracle) == ours
        stops.add(ours[0])
    assert len(stops) > 3  # at a flipped byte, at the bad length, at the start of no batch

    def broken(_region):
        raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        HOT.crc_hop(data, 0, n, n, 1 << 20, broken)


def test_scan_with_the_packages_function(monkeypatch):
    data = _damaged(300)
    fast = _scan(data, 1)
    monkeypatch.setattr(walk_module, "_HOP_CRC", oracle)
    assert _scan(data, 1) == fast


def test_a_build_of_other_sources_is_not_used(monkeypatch):
    """An in-place build older than the Python code (its functions take other arguments) leaves the pure path on."""
    from kafkadump import accel

    assert accel._load() is HOT
    monkeypatch.setattr(HOT, "INTERFACE", accel.INTERFACE - 1)
    assert accel._load() is None
    monkeypatch.delattr(HOT, "INTERFACE")
    assert accel._load() is None
