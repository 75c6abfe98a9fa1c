"""A batch whose only damage is its length field: recovered by its CRC, shown with its header, carved repaired.

The segments are kafka-python's (logdir_helpers); the expected offsets, positions, keys and the repaired
bytes come from the builder's own layout, never from kafkadump.  (The mutation cases of
``length-repaired`` are in test_mutations.py.)
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import pytest
from logdir_helpers import Seg, batch, name, write


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"})


def _segment():
    return Seg([batch(0, 3), batch(3, 2, codec=1), batch(5, 4)])   # the middle one gzip-compressed


def _damaged(tmp_path, index: int, length: int, *, also_at: int | None = None):
    s = _segment()
    data = bytearray(s.data)
    p = s.at(index)
    struct.pack_into(">i", data, p + 8, length)
    if also_at is not None:
        data[p + also_at] ^= 0xFF
    return s, write(tmp_path / "orders-0" / name(0, ".log"), bytes(data)), p


LENGTHS = {"larger than the file": 10_000_000, "past the next batch": None, "too small": 20, "negative": -1}


@pytest.mark.parametrize("how", sorted(LENGTHS))
def test_batches_shows_the_batch_with_its_header_and_a_finding(tmp_path, how):
    s = _segment()
    length = LENGTHS[how] if LENGTHS[how] is not None else s.batches[1].size - 12 + 40
    s, log, p = _damaged(tmp_path, 1, length)
    r = _cli("batches", "--json", log)
    assert r.returncode == 1, r.stderr
    docs = [json.loads(line) for line in r.stdout.splitlines()]
    assert [d["type"] for d in docs] == ["batch", "batch", "batch"]   # no gap: nothing is lost
    b = docs[1]
    assert (b["position"], b["baseOffset"], b["lastOffset"], b["recordCount"]) == (p, 3, 4, 2)
    assert b["crcValid"] is True and b["batchLength"] == length   # the length the file says
    (f,) = b["findings"]
    assert (f["code"], f["severity"], f["offset"], f["length"]) == ("length-repaired", "error", p + 8, 4)
    assert f"batchLength {length} is wrong" in f["message"]
    assert f"the next intact batch at {s.at(2)}" in f["message"]
    assert f"with batchLength {s.batches[1].size - 12}" in f["message"]
    table = _cli("batches", log).stdout
    assert "(not a batch)" not in table
    row = next(line for line in table.splitlines() if line.split()[:3] == [str(p), "3", "4"])
    assert row.split()[3] == str(s.batches[1].size)


def test_the_records_of_a_repaired_batch_are_read(tmp_path):
    s, log, p = _damaged(tmp_path, 1, 10_000_000)
    r = _cli("records", "--json", "--encoding", "text", log)
    assert r.returncode == 1
    recs = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(x["offset"], x["key"]) for x in recs if x["type"] == "record"] == \
        [(o, f"k{o}") for o in range(9)]


def test_the_last_batch_of_a_file_is_checked_up_to_the_end(tmp_path):
    s, log, p = _damaged(tmp_path, 2, 70_000)
    r = _cli("verify-crc", "--json", log)
    assert r.returncode == 1
    (doc,) = [json.loads(line) for line in r.stdout.splitlines() if '"length-repaired"' in line]
    assert doc["position"] == p and "up to the end of the data" in doc["findings"][0]["message"]


def test_carve_writes_the_batch_with_its_length_repaired(tmp_path):
    s, log, p = _damaged(tmp_path, 1, 10_000_000)
    out = tmp_path / "carved.log"
    r = _cli("carve", "--json", "-o", str(out), log)
    assert r.returncode == 1, r.stderr
    docs = [json.loads(line) for line in r.stdout.splitlines()]
    rec = [d for d in docs if d["type"] == "recovered"]
    assert [d["position"] for d in rec] == [s.at(0), s.at(1), s.at(2)]
    assert [f["code"] for f in rec[1]["findings"]] == ["length-repaired"] and rec[0]["findings"] == []
    summary = docs[-1]
    assert summary["lengthRepaired"] == 1 and summary["damagedRanges"] == 0
    assert out.read_bytes() == s.data          # byte for byte what the builder wrote
    assert _cli("verify-crc", str(out)).returncode == 0
    table = _cli("carve", log)
    assert table.returncode == 1
    assert f"recovered position: {p} size: {s.batches[1].size}" in table.stdout
    assert f"error length-repaired @{p + 8}: batchLength 10000000 is wrong" in table.stdout
    assert "length repaired: 1 batches" in table.stdout


@pytest.mark.parametrize("where", [17, 30, 70])   # the stored CRC, attributes, a record
def test_a_batch_damaged_elsewhere_too_is_not_repaired(tmp_path, where):
    s, log, p = _damaged(tmp_path, 1, 10_000_000, also_at=where)
    r = _cli("batches", "--json", log)
    assert r.returncode == 1
    docs = [json.loads(line) for line in r.stdout.splitlines()]
    assert "length-repaired" not in r.stdout
    assert [(d["type"], d["position"]) for d in docs] == [("batch", s.at(0)), ("gap", p), ("batch", s.at(2))]
    carved = tmp_path / "carved.log"
    assert _cli("carve", "-o", str(carved), log).returncode == 1
    assert carved.read_bytes() == s.batches[0].data + s.batches[2].data


def test_hexdump_of_a_repaired_batch_shows_its_fields_and_the_length_the_file_holds(tmp_path):
    s, log, p = _damaged(tmp_path, 1, 10_000_000)
    r = _cli("hexdump", "--json", "--position", str(p), log)
    assert r.returncode == 1, r.stderr
    docs = [json.loads(line) for line in r.stdout.splitlines()]
    spans = {d["path"]: d for d in docs if "path" in d}
    assert spans["batch.batchLength"]["value"] == 10_000_000 and spans["batch.batchLength"]["offset"] == p + 8
    assert spans["batch.lastOffsetDelta"]["value"] == 1
    end = p + s.batches[1].size
    assert all(p <= d["offset"] and d["offset"] + d["length"] <= end for d in docs
               if "path" in d and d.get("source") == "file")
    assert "trailing-bytes" not in r.stdout and "length-repaired" in r.stdout
    text = _cli("hexdump", "--position", str(p), log).stdout
    assert f"record batch at position {p}: {s.batches[1].size} bytes" in text


def test_a_batch_larger_than_max_decompressed_is_not_repaired(tmp_path):
    s, log, p = _damaged(tmp_path, 1, 10_000_000)
    size = s.batches[1].size
    small = _cli("batches", "--json", "--max-decompressed", str(size - 1), log)
    assert "length-repaired" not in small.stdout
    assert [json.loads(line)["type"] for line in small.stdout.splitlines()] == ["batch", "gap", "batch"]
    exact = _cli("batches", "--json", "--max-decompressed", str(size), log)
    assert "length-repaired" in exact.stdout
