"""kafkadump carve: the exact set of batches recovered from damaged segments, and what was lost.

Expected positions and offsets come from the builders' layout (kafka-python
encodes the batches), never from kafkadump.
"""

import hashlib
import json
import os
import struct
import subprocess
import sys

import pytest
from conftest import need_corpus
from logdir_helpers import Seg, batch, flip, name, write
from typer.testing import CliRunner

from kafkadump.cli import app
from kafkadump.decoders.logfiles.carving import Damaged
from kafkadump.decoders.logfiles.carving import Recovered
from kafkadump.decoders.logfiles.carving import carve

runner = CliRunner()


def six():
    return Seg([batch(i * 3, 3, pid=4, epoch=0, seq=i * 3) for i in range(6)])


def run_json(*args):
    r = runner.invoke(app, ["carve", "--json", *args])
    lines = [json.loads(x) for x in r.output.splitlines()]
    return r.exit_code, lines


def recovered(lines):
    return [(x["position"], x["baseOffset"], x["lastOffset"]) for x in lines if x["type"] == "recovered"]


def damaged(lines):
    return [(x["start"], x["end"], x["lostOffsets"]) for x in lines if x["type"] == "damaged"]


def expect(s, idx):
    return [(s.at(i), s.batches[i].base_offset, s.batches[i].last_offset) for i in idx]


def test_damaged_middle_recovers_every_other_batch_and_output_passes_verify_crc(tmp_path):
    s = six()
    data = bytearray(s.data)
    data[s.at(2) + 80] ^= 0x55                            # batch 2: CRC
    struct.pack_into(">i", data, s.at(3) + 8, 0x7FFFFFF0)  # batch 3: absurd length
    src = write(tmp_path / name(0, ".log"), bytes(data))
    before = hashlib.sha256(bytes(data)).hexdigest()
    out = tmp_path / "carved.log"
    code, lines = run_json(src, "--output", str(out))
    assert code == 1
    assert recovered(lines) == expect(s, [0, 1, 4, 5])
    assert damaged(lines) == [(s.at(2), s.at(4), {"first": 6, "last": 11, "count": 6})]
    # the new segment: exactly the intact batches, in order; the input untouched
    assert out.read_bytes() == b"".join(s.batches[i].data for i in (0, 1, 4, 5))
    assert hashlib.sha256(open(src, "rb").read()).hexdigest() == before
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["recovered"] == 4 and summary["damagedBytes"] == s.at(4) - s.at(2)
    assert summary["outputSha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    v = subprocess.run([sys.executable, "-m", "kafkadump", "verify-crc", str(out)], capture_output=True, text=True)
    assert v.returncode == 0 and "all valid" in v.stdout


def test_a_length_damaged_into_a_larger_one_does_not_hide_the_next_batch(tmp_path):
    # batch 2's length swallows batch 3 exactly: the walk lands on batch 4 and would skip 3
    s = six()
    data = bytearray(s.data)
    (length,) = struct.unpack_from(">i", data, s.at(2) + 8)
    struct.pack_into(">i", data, s.at(2) + 8, length + s.batches[3].size)
    src = write(tmp_path / name(0, ".log"), bytes(data))
    code, lines = run_json(src)
    assert recovered(lines) == expect(s, [0, 1, 3, 4, 5])
    assert damaged(lines) == [(s.at(2), s.at(3), {"first": 6, "last": 8, "count": 3})]
    d = next(x for x in lines if x["type"] == "damaged")
    assert d["claimedOffsets"] == {"first": 6, "last": 8} and d["findings"][0]["code"] == "crc-mismatch"


def test_garbage_between_batches_loses_no_offsets(tmp_path):
    s = six()
    junk = b"\xde\xad\xbe\xef" * 9
    data = s.data[:s.at(3)] + junk + s.data[s.at(3):]
    src = write(tmp_path / name(0, ".log"), data)
    code, lines = run_json(src)
    shifted = [(p + (len(junk) if i >= 3 else 0), lo, hi) for i, (p, lo, hi) in enumerate(expect(s, range(6)))]
    assert code == 1 and recovered(lines) == shifted
    assert damaged(lines) == [(s.at(3), s.at(3) + len(junk), None)]


def test_truncated_tail_lost_to_an_unknown_end(tmp_path):
    s = six()
    src = write(tmp_path / name(0, ".log"), s.data[:s.at(5) + 30])
    code, lines = run_json(src)
    assert recovered(lines) == expect(s, range(5))
    assert damaged(lines) == [(s.at(5), s.at(5) + 30, {"first": 15, "last": None})]


def test_damage_at_the_start_uses_the_segment_name(tmp_path):
    s = Seg([batch(100 + i * 3, 3) for i in range(3)])
    src = write(tmp_path / name(100, ".log"), flip(s.data, 40))   # inside batch 0's CRC range
    code, lines = run_json(src)
    assert recovered(lines) == expect(s, [1, 2])
    assert damaged(lines) == [(0, s.at(1), {"first": 100, "last": 102, "count": 3})]


def test_zero_tail_is_not_damage(tmp_path):
    s = six()
    src = write(tmp_path / name(0, ".log"), s.data + bytes(1000))
    code, lines = run_json(src)
    assert code == 0 and recovered(lines) == expect(s, range(6)) and damaged(lines) == []
    assert lines[-1]["paddingBytes"] == 1000


def test_carve_api_streams_items_in_file_order(tmp_path):
    s = six()
    data = flip(s.data, s.at(1) + 70)
    items = list(carve(data, "x", base_offset=0))
    kinds = [type(i).__name__ for i in items]
    assert kinds == ["Recovered", "Damaged", "Recovered", "Recovered", "Recovered", "Recovered"]
    d = items[1]
    assert isinstance(d, Damaged) and (d.start, d.end, d.lost_first, d.lost_last) == (s.at(1), s.at(2), 3, 5)
    assert all(isinstance(i, Recovered) and i.batch.crc_valid for i in items if i is not d)


def test_output_refusals(tmp_path):
    s = six()
    src = write(tmp_path / name(0, ".log"), flip(s.data, s.at(1) + 70))
    before = open(src, "rb").read()
    # never the input, not even with --force, not through a link
    for args in ([src, "-o", src], [src, "-o", src, "--force"]):
        r = subprocess.run([sys.executable, "-m", "kafkadump", "carve", *args], capture_output=True, text=True)
        assert r.returncode == 2 and "input" in r.stderr and "Traceback" not in r.stderr
    link = tmp_path / "link.log"
    os.symlink(src, link)
    assert runner.invoke(app, ["carve", src, "-o", str(link), "--force"]).exit_code == 2
    assert open(src, "rb").read() == before
    # an existing output only with --force
    out = tmp_path / "out.log"
    out.write_bytes(b"keep me")
    assert runner.invoke(app, ["carve", src, "-o", str(out)]).exit_code == 2
    assert out.read_bytes() == b"keep me"
    assert runner.invoke(app, ["carve", src, "-o", str(out), "--force"]).exit_code == 1
    assert out.read_bytes() == b"".join(s.batches[i].data for i in (0, 2, 3, 4, 5))
    # a directory that does not exist: usage error, nothing created
    assert runner.invoke(app, ["carve", src, "-o", str(tmp_path / "no" / "x.log")]).exit_code == 2


def test_table_output(tmp_path):
    s = six()
    src = write(tmp_path / name(0, ".log"), flip(s.data, s.at(1) + 70))
    r = runner.invoke(app, ["carve", "--list", src])
    assert r.exit_code == 1
    assert f"damaged [{s.at(1)}, {s.at(2)})" in r.output and "lost offsets 3..5 (3)" in r.output
    assert r.output.count("recovered position:") == 5


def test_carve_of_a_real_broker_segment_recovers_everything():
    p = need_corpus("real/segments/ArthurArutunyan04+Backend_labs/_history/d8748dd/kafka-data/"
                    "oms_order_created-0/00000000000000000000.log")
    code, lines = run_json(str(p))
    # MANIFEST.md (written by the corpus' own analyzer): 1190 batches, offsets 0..11796
    assert code == 0 and len(recovered(lines)) == 1190 and damaged(lines) == []
    assert (lines[-1]["firstOffset"], lines[-1]["lastOffset"]) == (0, 11796)
