"""Annotated hexdump: the tiling invariant and golden outputs."""

import glob
import json
import os
from pathlib import Path

import pytest
from conftest import FIXTURES, need_corpus
from typer.testing import CliRunner

from kafkadump.cli import app
from kafkadump.decoders.batches import Batch
from kafkadump.decoders.batches import iter_batches
from kafkadump.decoders.batches.walk import decode_spanned
from kafkadump.render.hexdump import leaf_spans, tiling_errors

GOLDEN = Path(__file__).parent / "golden"
runner = CliRunner()


def assert_tiles(data: bytes, name: str):
    """Every byte of every item belongs to exactly one leaf span or an unparsed range."""
    n = 0
    for item in iter_batches(data, name):
        decoded, spans = decode_spanned(data, item)
        leaves = leaf_spans(spans, expand_records=True)
        errs = tiling_errors(leaves, item.position, item.position + item.size)
        dec = getattr(decoded, "decompressed", None)
        if dec is not None:
            errs += ["decompressed: " + e for e in tiling_errors(leaves, 0, len(dec), "decompressed")]
        assert not errs, (name, item.position, errs[:5])
        n += 1
    return n


@pytest.mark.parametrize("path", sorted(glob.glob(str(FIXTURES / "*/*.log"))))
def test_tiling_on_fixtures(path):
    assert assert_tiles(Path(path).read_bytes(), path) > 0


def test_tiling_on_corpus_batches():
    root = need_corpus("clients/batches")
    files = sorted(root.glob("*.bin")) + sorted(root.glob("*.log"))
    assert files
    for f in files:
        assert assert_tiles(f.read_bytes(), f.name) > 0


def test_tiling_on_generated_batches_of_every_codec_and_magic():
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    for codec in (0, 1, 2, 3, 4):
        b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                      producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
        for i in range(20):
            b.append(i, timestamp=1700000000000 + i * 300, key=None if i % 5 == 0 else b"k%d" % i,
                     value=b"value %d " % i * 8, headers=[("h", b"x"), ("h", None)] if i % 3 == 0 else [])
        assert assert_tiles(bytes(b.build()), f"v2-{codec}")
    for magic in (0, 1):
        for codec in (0, 1, 2, 3):
            b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
            for i in range(10):
                b.append(i, timestamp=1700000000000 + i if magic else None, key=b"k%d" % i, value=b"v" * 40)
            assert assert_tiles(bytes(b.build()), f"v{magic}-{codec}")


def test_tiling_on_damaged_batch_marks_unparsed():
    data = bytearray((FIXTURES / "segment-v2/00000000000000000000.log").read_bytes()[:310])
    data[62] = 0x7F  # first record's length varint: 0x7f = -64, impossible
    import struct

    from crc32c import crc32c
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    items = list(iter_batches(bytes(data), "x"))
    decoded, spans = decode_spanned(bytes(data), items[0])
    assert any(s.raw == "unparsed" for s in spans)
    assert not tiling_errors(leaf_spans(spans, True), 0, len(data))


GOLDENS = {
    "v2_batch": ["hexdump", "--no-color", "--records", str(FIXTURES / "segment-v2/00000000000000000000.log")],
    "legacy_wrapper": ["hexdump", "--no-color", "--records", "--batch", "6",
                       str(FIXTURES / "segment-mixed/00000000000000000000.log")],
    "control_batch": ["hexdump", "--no-color", "--records", "--offset", "34",
                      str(FIXTURES / "segment-v2/00000000000000000000.log")],
    "damaged_batch": ["hexdump", "--no-color", "--offset", "6", str(FIXTURES / "damaged/00000000000000000000.log")],
    "garbage": ["hexdump", "--no-color", "--context", "16", "--position", "1230",
                str(FIXTURES / "damaged/00000000000000000000.log")],
}


@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_golden(name):
    r = runner.invoke(app, GOLDENS[name])
    golden = GOLDEN / f"hexdump_{name}.txt"
    if os.environ.get("KAFKADUMP_UPDATE_GOLDEN"):
        golden.write_text(r.stdout)
    assert r.stdout == golden.read_text()
    assert r.exit_code == (1 if name in ("damaged_batch", "garbage") else 0)


def test_json_fields_have_path_offset_length_value_source():
    r = runner.invoke(app, ["hexdump", "--json", "--offset", "9", str(FIXTURES / "segment-v2/00000000000000000000.log")])
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert rows[0] == {"path": "batch.baseOffset", "offset": 700, "length": 8, "value": 8, "source": "file"}
    dec = [x for x in rows if x["source"] == "decompressed"]
    assert dec[0]["path"] == "batch.records[0].length" and dec[0]["offset"] == 0
    keys = [x for x in rows if x["path"] == "batch.records[1].key"]
    assert keys == [{"path": "batch.records[1].key", "offset": keys[0]["offset"], "length": 10,
                     "value": b"gzip-key-1".hex(), "source": "decompressed"}]


def test_selector_errors_are_exit_2():
    p = str(FIXTURES / "segment-v2/00000000000000000000.log")
    assert runner.invoke(app, ["hexdump", "--offset", "999999", p]).exit_code == 2
    assert runner.invoke(app, ["hexdump", "--offset", "1", "--batch", "1", p]).exit_code == 2
