"""Issue 12, defect classes 1-4: work is linear in the input and memory bounded by design.

Each class has a generator in ``fuzz/hostile.py`` building a scaled instance.
Work is read from :data:`kafkadump.decoders.batches.work.WORK` (counters, never
clocks): doubling the input must roughly double it.  Memory is the peak RSS
of the real CLI in a child process (``ru_maxrss`` from the kernel, through
``test_hardening.kd``), under 200 MB.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_hardening import RSS_LIMIT_MB, codes, kd

from kafkadump.decoders.batches import Batch
from kafkadump.decoders.batches import Gap
from kafkadump.decoders.batches import Options
from kafkadump.decoders.batches import iter_batches
from kafkadump.decoders.batches.work import WORK
from kafkadump.base.findings import Code
from kafkadump.decoders.logfiles.carving import carve

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import hostile  # noqa: E402

MiB = 1 << 20


def work_of(fn, *args, **kwargs) -> int:
    """The decoder work counted while ``fn(*args, **kwargs)`` runs to the end."""
    WORK.reset()
    fn(*args, **kwargs)
    return WORK.total()


def doubles(small: int, large: int) -> bool:
    """``large`` is about twice ``small`` (linear work, not quadratic nor bounded away)."""
    return small > 0 and 1.6 <= large / small <= 2.5


def walk(data: bytes, **options) -> list:
    return list(iter_batches(data, options=Options(**options)))


def segment(tmp_path: Path, data: bytes) -> str:
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(data)
    return str(p)


# --- class 1: items, not bytes -----------------------------------------------------------------------

def test_shallow_walk_counts_inner_messages_without_keeping_them():
    small, large = hostile.tiny_inner_wrapper(20_000), hostile.tiny_inner_wrapper(40_000)
    (b,) = walk(small, records=False)
    assert b.records is None and b.record_count == 20_000 and b.base_offset == 0 and b.crc_valid
    assert doubles(work_of(walk, small, records=False), work_of(walk, large, records=False))
    (deep,) = walk(small)
    assert len(deep.records) == 20_000 and deep.records[-1].offset == 19_999


def test_wrapper_of_500000_tiny_messages_in_bounded_memory(tmp_path):
    path = segment(tmp_path, hostile.tiny_inner_wrapper(500_000))
    for cmd in (["verify-crc", "--json"], ["batches", "--json", "--shallow"], ["records", "--json"]):
        rc, out, err, rss = kd(*cmd, path)
        assert rc == 0, err
        assert rss < RSS_LIMIT_MB, (cmd, rss)
    assert out.count("\n") == 500_000


def test_wrapper_records_stream_the_same_records(monkeypatch):
    from kafkadump.decoders.batches import legacy
    from kafkadump.decoders.batches.model import RecordSource

    data = hostile.tiny_inner_wrapper(50)
    (listed,) = walk(data)
    monkeypatch.setattr(legacy, "STREAM_RECORDS", 7)
    (streamed,) = walk(data)
    assert isinstance(streamed.records, RecordSource) and isinstance(listed.records, list)
    assert [(r.offset, r.value) for r in streamed.records] == [(r.offset, r.value) for r in listed.records]
    assert streamed.findings == listed.findings == [] and len(streamed.records) == 50


# --- class 2: nested legacy width bombs -------------------------------------------------------------

def test_width_bomb_is_held_by_one_budget_per_top_level_message():
    bomb = hostile.width_bomb(1000)
    one = work_of(walk, bomb, max_decompressed=4 * MiB)
    assert WORK.inflated <= 4 * MiB  # the budget, over every depth (naively: 10**6 MiB)
    assert one <= 4 * 4 * MiB  # inflated, plus the inner messages checksummed in both passes
    items = walk(bomb, max_decompressed=4 * MiB)
    assert [f.code for i in items for f in i.findings].count(Code.DECOMPRESSION_LIMIT) == 1
    # two bombs: two budgets
    assert doubles(one, work_of(walk, bomb * 2, max_decompressed=4 * MiB))


def test_width_bomb_cli(tmp_path):
    path = segment(tmp_path, hostile.width_bomb(1000))
    for cmd in (["verify-crc", "--json"], ["batches", "--json"], ["records", "--json"], ["records", "-f", "dump-log"]):
        rc, out, err, rss = kd(*cmd, path)
        assert rc == 1, err
        assert "decompression-limit" in out or cmd[0] == "verify-crc" and '"bad":0' not in out
        assert rss < RSS_LIMIT_MB, (cmd, rss)


# --- class 3: lengths that fit the file's apparent size -------------------------------------------

def test_sparse_file_declaring_a_512_mib_batch(tmp_path):
    path = str(tmp_path / "00000000000000000000.log")
    hostile.sparse_declared_batch(path, 512 * MiB)
    for cmd in (["verify-crc", "--json"], ["batches", "--json"], ["records", "--json"], ["carve", "--json"]):
        rc, out, err, rss = kd(*cmd, path)
        assert rc == 1, (cmd, err)
        assert "crc-mismatch" in out, (cmd, out[:500])
        assert rss < RSS_LIMIT_MB, (cmd, rss)


def test_zero_run_pages_are_handed_back(tmp_path):
    path = str(tmp_path / "00000000000000000000.log")
    hostile.zero_run_between(path, 320 * MiB)
    for cmd in (["batches", "--json"], ["carve", "--json"]):
        rc, out, err, rss = kd(*cmd, path)
        assert rc in (0, 1), (cmd, err)
        assert rss < RSS_LIMIT_MB, (cmd, rss)
    rc, out, err, rss = kd("records", "--json", path)
    assert out.count('"type":"record"') == 2, out[:500]
    assert rss < RSS_LIMIT_MB


def test_zero_run_skip_is_linear():
    def data(n):
        return hostile.v2_batch(0, [b"a"]) + b"\x07" * 40 + bytes(n) + hostile.v2_batch(1, [b"b"])

    small, large = work_of(walk, data(8 * MiB)), work_of(walk, data(16 * MiB))
    items = walk(data(8 * MiB))
    assert sum(isinstance(i, Batch) and i.crc_valid for i in items) == 2
    assert small < 1000 and large < 1000  # a zero run is skipped whole, not byte by byte


# --- class 4: quadratic walks ------------------------------------------------------------------------

@pytest.mark.parametrize("make", [hostile.legacy_fake_headers, hostile.v2_fake_headers])
def test_fake_headers_reaching_the_end_walk_linearly(make):
    small, large = make(512 * 1024), make(1024 * 1024)
    ws, wl = work_of(walk, small), work_of(walk, large)
    assert doubles(ws, wl), (ws, wl)
    items = walk(small)
    assert sum(i.size for i in items) == len(small)
    assert any(f.code is Code.CRC_MISMATCH for i in items for f in i.findings)


@pytest.mark.parametrize("make", [hostile.legacy_fake_headers, hostile.v2_fake_headers])
def test_carve_on_fake_headers_is_linear(make):
    def run(data):
        return list(carve(data, "x.log", options=Options()))

    # past the resync budget's 64 MiB floor, so that the budget is what bounds the work
    ws, wl = work_of(run, make(6 * MiB)), work_of(run, make(12 * MiB))
    assert doubles(ws, wl), (ws, wl)


def test_resync_through_random_bytes_is_linear():
    small, large = hostile.random_bytes(4 * MiB), hostile.random_bytes(8 * MiB)
    ws, wl = work_of(walk, small), work_of(walk, large)
    assert doubles(ws, wl), (ws, wl)
    items = walk(small)
    assert all(isinstance(i, Gap) for i in items) and sum(i.size for i in items) == len(small)


# --- class 1: records stream out of a batch ---------------------------------------------------------

def many_records_batch(n: int, codec: int = 1) -> bytes:
    """One v2 batch of ``n`` one-byte-value records (gzip by default: ~1 byte per record on disk)."""
    import gzip
    import struct

    from crc32c import crc32c

    parts = []
    for i in range(n):
        od = hostile._varint(i)
        rec = b"\x00\x00" + od + b"\x01\x02v\x00"
        parts.append(hostile._varint(len(rec)) + rec)
    recs = b"".join(parts)
    if codec:
        recs = gzip.compress(recs, 9)
    head = struct.pack(">qiibIhiqqqhii", 0, 49 + len(recs), 0, 2, 0, codec, n - 1, 0, 0, -1, -1, -1, n)
    raw = bytearray(head + recs)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def test_a_batch_of_many_records_streams_the_same_records():
    from kafkadump.decoders.batches.batch import STREAM_RECORDS
    from kafkadump.decoders.batches.batch import RecordStream

    n = 3 * STREAM_RECORDS + 5
    (b,) = walk(many_records_batch(n, codec=0))
    assert isinstance(b.records, RecordStream) and len(b.records) == n and not b.findings
    offsets = [r.offset for r in b.records]
    assert offsets == list(range(n)) and b.records[0].offset == 0
    assert [r.offset for r in b.records.filtered(lambda r: r.offset % 1000 == 0)] == list(range(0, n, 1000))
    assert doubles(work_of(walk, many_records_batch(20_000)), work_of(walk, many_records_batch(40_000)))


def test_streamed_batch_keeps_the_list_path_findings(monkeypatch):
    """Damage inside a many-record batch gives the same findings streamed as listed."""
    from kafkadump.decoders.batches import batch as B

    data = bytearray(many_records_batch(50, codec=0))
    data[61 + 9 * 30] = 0x7F  # record 30's length: runs past the batch
    data[61 + 9 * 10 + 3] = 0x04  # record 10's offsetDelta: 2, out of order
    (listed,) = walk(bytes(data))
    monkeypatch.setattr(B, "STREAM_RECORDS", 7)
    (streamed,) = walk(bytes(data))
    assert isinstance(streamed.records, B.RecordStream)
    assert [(f.code, f.offset, f.message) for f in streamed.findings] == \
        [(f.code, f.offset, f.message) for f in listed.findings]
    assert [r.offset for r in streamed.records] == [r.offset for r in listed.records]


@pytest.mark.parametrize("fmt", [["--json"], ["-f", "dump-log"]])
def test_a_million_records_in_a_10_kb_batch(tmp_path, fmt):
    path = segment(tmp_path, many_records_batch(1_000_000))
    rc, out, err, rss = kd("records", *fmt, path)
    assert rc == 0, err
    assert out.count("\n") >= 1_000_000
    assert rss < RSS_LIMIT_MB, rss


# --- class 1: hexdump spans are capped -------------------------------------------------------------

MUTATION_CODES = {"span-limit"}


def test_hexdump_annotates_a_bounded_number_of_records(monkeypatch):
    """span-limit: past SPAN_RECORDS records, the rest of the records is one block (a mutation test)."""
    from kafkadump.decoders.batches import batch as B
    from kafkadump.decoders.batches.walk import decode_spanned
    from kafkadump.decoders.batches.walk import locate
    from kafkadump.render.hexdump import tiling_errors

    monkeypatch.setattr(B, "SPAN_RECORDS", 20)
    data = many_records_batch(50, codec=0)
    item = locate(data, "x.log")
    b, spans = decode_spanned(data, item)
    f = [f for f in b.findings if f.code is Code.SPAN_LIMIT]
    assert len(f) == 1 and f[0].offset == 61 + 20 * 8 and f[0].severity.value == "info"
    assert spans[-1].path == "batch.records[20:]" and spans[-1].length == 30 * 8
    assert not tiling_errors(spans, 0, len(data))
    assert len(b.records) == 50 and not [x for x in b.findings if x.code is not Code.SPAN_LIMIT]


def test_hexdump_of_a_million_records(tmp_path):
    path = segment(tmp_path, many_records_batch(1_000_000))
    rc, out, err, rss = kd("hexdump", "--json", path)
    assert rc == 0, err
    assert "span-limit" in out
    assert rss < RSS_LIMIT_MB, rss


def test_hexdump_annotates_a_bounded_number_of_inner_messages(monkeypatch):
    """span-limit on a legacy wrapper: past SPAN_RECORDS inner messages the rest of the decompressed
    set is one block, and the wrapper's records stream instead of being kept (issue 26, class 5:
    a hexdump of a wrapper of 1.9 M tiny messages held every span and record, 5.7 GB)."""
    from kafkadump.decoders.batches import legacy as L
    from kafkadump.decoders.batches.walk import decode_spanned
    from kafkadump.decoders.batches.walk import locate
    from kafkadump.render.hexdump import tiling_errors

    monkeypatch.setattr(L, "SPAN_RECORDS", 20)
    data = hostile.tiny_inner_wrapper(50)
    b, spans = decode_spanned(data, locate(data, "x.log"))
    f = [f for f in b.findings if f.code is Code.SPAN_LIMIT]
    assert len(f) == 1 and f[0].offset == 34 and f[0].source_offset == 20 * 35 and f[0].length == 30 * 35
    block = [s for s in spans if s.source == "decompressed" and s.raw == "block"]
    assert [(s.path, s.offset, s.length) for s in block] == [("message.inner[20:]", 700, 1050)]
    assert not [s for s in spans if s.path.startswith("message.inner[20].")]
    assert not tiling_errors(spans, 0, 50 * 35, source="decompressed")
    assert [r.offset for r in b.records] == list(range(50))


def test_hexdump_spans_of_a_wrapper_grow_no_further(monkeypatch):
    """The spans a hexdump holds for a wrapper stop growing at SPAN_RECORDS inner messages."""
    from kafkadump.decoders.batches import legacy as L
    from kafkadump.decoders.batches.walk import decode_spanned
    from kafkadump.decoders.batches.walk import locate

    monkeypatch.setattr(L, "SPAN_RECORDS", 100)
    sizes = []
    for n in (1000, 2000):
        data = hostile.tiny_inner_wrapper(n)
        _, spans = decode_spanned(data, locate(data, "x.log"))
        sizes.append(len(spans))
    assert sizes[0] == sizes[1] and sizes[0] < 100 * 10


@pytest.mark.parametrize("codec", [1, 2, 3])
def test_decompressed_bytes_are_held_once(codec):
    """gzip, xerial snappy and lz4 output gathered in pieces is held once: a list of the pieces and
    their join held it twice (a 64 MiB wrapper cost 128 MiB; issue 26, class 5)."""
    import gzip
    import tracemalloc

    import lz4.frame

    from kafkadump.decoders.batches.compression import decompress

    size = 16 * MiB
    plain = bytes(range(256)) * (size // 256)
    packed = {1: lambda: gzip.compress(plain, 1),
              2: lambda: _xerial(plain),
              3: lambda: b"".join(lz4.frame.compress(plain[i:i + MiB]) for i in range(0, size, MiB))}[codec]()
    tracemalloc.start()
    try:
        out = decompress(codec, packed, 64 * MiB)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out == plain
    assert peak < 1.4 * size, peak / size


def _xerial(plain: bytes) -> bytes:
    """Kafka's xerial snappy framing: the magic header, then (length, raw block) of 1 MiB pieces."""
    import struct

    import snappy

    out = [b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)]
    for i in range(0, len(plain), MiB):
        block = snappy.compress(plain[i:i + MiB])
        out.append(struct.pack(">i", len(block)) + block)
    return b"".join(out)
