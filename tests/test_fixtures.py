"""Checks on the shipped fixtures in fixtures/ (see fixtures/README.md).

1. Regenerating them with fixtures/make_fixtures.py gives byte-identical files.
2. Each *.expect.json describes a layout that tiles its .log exactly: batches
   (plus the listed damage regions for damaged files) are contiguous and
   cover the whole file.
"""

import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import crc32c
import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
GENERATOR = FIXTURES / "make_fixtures.py"
NOT_GENERATED = {"README.md", "make_fixtures.py"}

EXPECT_FILES = sorted(FIXTURES.rglob("*.expect.json"))


def _data_files(root):
    return {
        p.relative_to(root).as_posix(): p
        for p in root.rglob("*")
        if p.is_file() and p.name not in NOT_GENERATED and "__pycache__" not in p.parts
    }


def _log_for(expect_path):
    return expect_path.with_name(expect_path.name.replace(".expect.json", ".log"))


def _load(expect_path):
    expect = json.loads(expect_path.read_text(encoding="utf-8"))
    data = _log_for(expect_path).read_bytes()
    return expect, data


def test_expected_fixture_set_present():
    names = set(_data_files(FIXTURES))
    for rel in ("segment-v2/00000000000000000000", "segment-mixed/00000000000000000000",
                "damaged/00000000000000000000", "damaged/padded"):
        assert rel + ".log" in names
        assert rel + ".expect.json" in names


def test_regenerate_is_byte_identical(tmp_path):
    out = tmp_path / "fixtures"
    subprocess.run([sys.executable, str(GENERATOR), "--out", str(out)],
                   check=True, capture_output=True, cwd=str(tmp_path))
    committed = _data_files(FIXTURES)
    generated = _data_files(out)
    assert sorted(generated) == sorted(committed)
    for rel, path in committed.items():
        assert generated[rel].read_bytes() == path.read_bytes(), rel


@pytest.mark.parametrize("expect_path", EXPECT_FILES,
                         ids=[p.relative_to(FIXTURES).as_posix() for p in EXPECT_FILES])
def test_layout_tiles_file(expect_path):
    expect, data = _load(expect_path)
    assert expect["size"] == len(data)

    regions = [(b["position"], b["position"] + b["size"], "batch") for b in expect["batches"]]
    for d in expect.get("damage", []):
        if d["kind"] in ("garbage", "zero_padding"):
            regions.append((d["start"], d["end"], d["kind"]))
        elif d["kind"] == "truncated":
            assert d["bytesPresent"] < d["expectedSize"]
            regions.append((d["position"], d["position"] + d["bytesPresent"], "truncated"))
            assert d["position"] + d["bytesPresent"] == len(data)
        else:
            assert d["kind"] == "crc"

    if "damage" not in expect:
        assert all(kind == "batch" for _, _, kind in regions)
    regions.sort()
    pos = 0
    for start, end, kind in regions:
        assert start == pos, (kind, start, pos)
        assert end > start
        pos = end
    assert pos == len(data)

    for d in expect.get("damage", []):
        if d["kind"] == "zero_padding":
            assert set(data[d["start"]:d["end"]]) == {0}
        if d["kind"] == "garbage":
            assert 0 not in data[d["start"]:d["end"]]


@pytest.mark.parametrize("expect_path", EXPECT_FILES,
                         ids=[p.relative_to(FIXTURES).as_posix() for p in EXPECT_FILES])
def test_batch_headers_and_crcs(expect_path):
    """Length/magic/offset header fields and CRCs agree with the expectation."""
    expect, data = _load(expect_path)
    bad_crc = {d["batchPosition"]: d for d in expect.get("damage", []) if d["kind"] == "crc"}
    for b in expect["batches"]:
        p, size = b["position"], b["size"]
        offset, length = struct.unpack_from(">qi", data, p)
        assert length == size - 12
        assert data[p + 16] == b["magic"]
        if b["magic"] == 2:
            assert offset == b["baseOffset"]
            stored = struct.unpack_from(">I", data, p + 17)[0]
            computed = crc32c.crc32c(data[p + 21:p + size])
        else:
            assert offset == b["wrapperOffset"] == b["lastOffset"]
            stored = struct.unpack_from(">I", data, p + 12)[0]
            computed = zlib.crc32(data[p + 16:p + size])
        assert stored == b["crc"]
        if p in bad_crc:
            assert not b["intact"]
            d = bad_crc.pop(p)
            assert p + 61 <= d["bytePosition"] < p + size
            assert data[d["bytePosition"]] == d["flippedByte"]
            assert computed == d["computedCrc"] != stored
        else:
            assert b.get("intact", True)
            assert computed == stored
    assert not bad_crc


@pytest.mark.parametrize("name", ["segment-v2", "segment-mixed"])
def test_offsets_consecutive(name):
    expect, _ = _load(FIXTURES / name / "00000000000000000000.expect.json")
    nxt = 0
    for b in expect["batches"]:
        assert b["baseOffset"] == nxt
        assert [r["offset"] for r in b["records"]] == list(range(b["baseOffset"], b["lastOffset"] + 1))
        assert len(b["records"]) == b["recordCount"]
        nxt = b["lastOffset"] + 1
