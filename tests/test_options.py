"""``Options`` is one frozen value whose limits reach every decoding path.

The decompression-ratio limit used to ride inside an ``int`` subclass of the
size cap, and paths that rebuilt or assigned the cap dropped it (with
``--max-scan 0`` a 40 KB batch decompressed to 42 MB with no finding).  Each
test here puts a ratio bomb through one path and asserts its
``decompression-ratio`` finding, at the payload's absolute offset.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import subprocess
import sys

import builders as bld
import capture_builders as cb
import pytest
from test_hardening import v2_raw

from kafkadump.decoders.batches import CrcScan
from kafkadump.decoders.batches import Options
from kafkadump.decoders.batches import iter_batches
from kafkadump.decoders.batches.step import decode_at
from kafkadump.decoders.batches.step import intact_batch_at
from kafkadump.decoders.batches.walk import decode_spanned
from kafkadump.decoders.batches.walk import locate
from kafkadump.base.findings import Code
from kafkadump.decoders.logfiles.carving import Recovered
from kafkadump.decoders.logfiles.carving import carve
from kafkadump.decoders.protocol import frames as F
from kafkadump.spark.splits import iter_task
from kafkadump.spark.tasks import options_for

MiB = 1 << 20
RATIO = Code.DECOMPRESSION_RATIO


@pytest.fixture(scope="module")
def cli_bomb():
    """The reported case: a ~43 KB gzip batch of 42 MiB of zeros (about 1028:1), behind a good batch."""
    good = bld.simple_batch(0, 3).data
    bomb = v2_raw(gzip.compress(b"\x00" * (42 * MiB), compresslevel=9, mtime=0), bld.GZIP, base_offset=3)
    assert 40_000 < len(bomb) < 45_000
    return good + bomb, len(good)


@pytest.fixture(scope="module")
def v2_bomb():
    """2 MiB of zeros in a gzip batch at position 100 (refused at --max-ratio 100)."""
    good = bld.simple_batch(0, 1).data
    pad = bld.simple_batch(1, 1).data
    bomb = v2_raw(gzip.compress(b"\x00" * (2 * MiB), mtime=0), bld.GZIP, base_offset=2)
    return good + pad + bomb, len(good) + len(pad)


@pytest.fixture(scope="module")
def legacy_bomb():
    """A magic 1 gzip wrapper around one message of 2 MiB of zeros, after a plain message."""
    first = bld.legacy_message(0, b"plain")
    inner = bld.legacy_message(0, b"\x00" * (2 * MiB), magic=1)
    wrapper, _ = bld.legacy_wrapper(1, [inner], magic=1)
    return first + wrapper, len(first)


LIMITED = Options(max_ratio=100, max_scan=0)


def ratio_offsets(items) -> list:
    return [f.offset for it in items for f in it.findings if f.code is RATIO]


def legacy_payload(pos: int) -> int:
    """The file offset of a magic 1 wrapper's value (no key): where its findings anchor."""
    return pos + bld.legacy_value_start(1)


# --- the object -----------------------------------------------------------------------------------------

def test_options_is_frozen_with_plain_limit_fields():
    opt = Options(max_decompressed=1000, max_ratio=7, max_depth=2, max_scan=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opt.max_ratio = 0  # type: ignore[misc]
    assert (type(opt.max_decompressed), opt.max_decompressed, opt.max_ratio, opt.max_depth, opt.max_scan) == \
        (int, 1000, 7, 2, 0)
    shallow = opt.shallow()
    assert shallow.records is False and (shallow.max_ratio, shallow.max_decompressed) == (7, 1000)
    assert opt.replace(max_scan=3).max_ratio == 7


# --- the CLI: the reported case ---------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["batches", "records"])
@pytest.mark.parametrize("max_scan", ["0", "16"])
def test_cli_max_scan_0_keeps_the_ratio_finding(tmp_path, cli_bomb, command, max_scan):
    data, at = cli_bomb
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(data)
    r = subprocess.run([sys.executable, "-m", "kafkadump", command, "--json", "--max-scan", max_scan, str(p)],
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    found = [f for line in r.stdout.splitlines() for f in json.loads(line).get("findings") or ()]
    assert [(f["code"], f["offset"]) for f in found] == [("decompression-ratio", at + 61)]


# --- every library path -------------------------------------------------------------------------------------

@pytest.mark.parametrize("records", [True, False])
def test_walk(v2_bomb, legacy_bomb, records):
    data, at = v2_bomb
    opt = Options(records=records, max_ratio=100, max_scan=0)
    # a shallow walk does not decompress v2 payloads; it does expand legacy wrappers
    assert ratio_offsets(iter_batches(data, options=opt)) == ([at + 61] if records else [])
    data, at = legacy_bomb
    assert ratio_offsets(iter_batches(data, options=opt)) == [legacy_payload(at)]


def test_walk_with_base_and_window(v2_bomb):
    data, at = v2_bomb
    opt = Options(max_ratio=100, max_scan=0, resync_window=64)
    assert ratio_offsets(iter_batches(b"junk" + data, start=4, options=opt, base=1000)) == [1000 + at + 65]


def test_step_api(v2_bomb):
    data, at = v2_bomb
    items, nxt = decode_at(data, at, len(data), "-", LIMITED)
    assert nxt == len(data) and ratio_offsets(items) == [at + 61]
    b = intact_batch_at(data, at, len(data), "-", LIMITED)
    assert b is not None and b.records is None and b.base_offset == 2


def test_crc_scan(legacy_bomb):
    data, at = legacy_bomb
    scan = CrcScan(data, "-", LIMITED, threads=1)
    assert ratio_offsets(list(scan)) == [legacy_payload(at)]
    assert scan.batches == 2


def test_carve(legacy_bomb):
    data, at = legacy_bomb
    out = list(carve(data, "-", options=LIMITED))
    assert [type(x) for x in out] == [Recovered, Recovered]
    assert ratio_offsets([x.batch for x in out]) == [legacy_payload(at)]


def test_locate_and_decode_spanned(v2_bomb):
    data, at = v2_bomb
    item = locate(data, "-", index=2, options=LIMITED)
    assert item.position == at and not item.findings  # located shallow: no payload expanded
    decoded, spans = decode_spanned(data, item, LIMITED)
    assert ratio_offsets([decoded]) == [at + 61]
    assert any(s.path == "batch.records" and "undecodable" in str(s.value) for s in spans)


def test_spark_task(v2_bomb):
    data, at = v2_bomb
    opt = options_for(max_decompressed=64 * MiB, max_depth=3, level="records")
    opt = opt.replace(max_ratio=100)
    assert (opt.max_decompressed, opt.max_depth) == (64 * MiB, 3)
    assert ratio_offsets(iter_task(data, len(data), "-", opt, 1 << 20, 0, 1)) == [at + 61]
    # a split task replays the walk from its cut
    assert ratio_offsets(iter_task(data, len(data), "-", opt, at, 1, 2)) == [at + 61]


def test_spark_options_keep_the_default_ratio():
    assert options_for(max_decompressed=1 << 20).max_ratio == Options().max_ratio


@pytest.mark.parametrize("spans", [False, True])
def test_protocol_records_field(v2_bomb, spans):
    data, at = v2_bomb
    frame = cb.fetch_v12_response(7, [(0, data, b"\x00")])
    f = F.decode_response(frame, 0, len(frame), 1, 12, base=5000, ctx=F.Ctx("-", LIMITED, spans))
    rv = f.body["responses"][0]["partitions"][0]["records"]
    start = rv.position
    assert ratio_offsets(rv.items) == [start + at + 61]
    if spans:
        assert any(s.path.endswith(".batch[2].records") and "undecodable" in str(s.value) for s in f.spans)


def test_decoders_default_to_the_ratio_limit():
    """A caller of the batch decoder that names no limits still gets the default ratio limit."""
    import zstandard

    from kafkadump.decoders.batches.batch import decode_batch

    bomb = v2_raw(zstandard.ZstdCompressor().compress(b"\x00" * (8 * MiB)), bld.ZSTD)
    assert len(bomb) < 1000
    assert ratio_offsets([decode_batch(bomb, 0, "-")]) == [61]
    assert ratio_offsets([decode_batch(bomb, 0, "-", max_ratio=0)]) == []


# --- page release: the walkers' job, not an option ------------------------------------------------------------

def test_walkers_release_the_mapped_pages_behind_them(tmp_path, monkeypatch):
    import mmap

    from kafkadump.decoders.batches import walk

    data = b"".join(bld.simple_batch(i * 3, 3, value_size=2000).data for i in range(40))
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(data)
    released: list = []
    real = walk.page_releaser

    def spy(buf):
        release = real(buf)
        assert release is not None  # a mapped buffer gets one
        return lambda upto: (released.append(upto), release(upto))

    monkeypatch.setattr(walk, "RELEASE_STEP", 50_000)
    monkeypatch.setattr(walk, "page_releaser", spy)
    with open(p, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        items = list(iter_batches(m, str(p)))
        assert len(items) == 40 and not any(i.findings for i in items)
        assert released and released == sorted(released) and released[-1] < len(data)
        assert all(b - a >= 50_000 for a, b in zip([0] + released, released))
        released.clear()
        assert not list(CrcScan(m, str(p), threads=1)) and released
    assert real(data) is None  # bytes: nothing to release
