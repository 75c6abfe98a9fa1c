"""``kafkadump diff A B``: two copies of a partition compared by offset.

Copies are built with kafka-python's ``DefaultRecordBatchBuilder`` (through
``logdir_helpers``, base offset and leader epoch patched in), laid out in
segments whose boundaries differ between the copies; a compacted copy keeps
the original batches' base offsets, offset deltas and timestamps, as Kafka's
cleaner does.  Expected values come from the scenarios, never from kafkadump.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import pytest
from cli_inprocess import run
from conftest import FIXTURES, need_corpus
from kafka.record.default_records import DefaultRecordBatchBuilder
from logdir_helpers import T0, B, Seg
from logdir_helpers import batch as kp_batch

from kafkadump.decoders.batches import Options
from kafkadump.reports.diff import diff_report
from kafkadump.base.status import Tally


def compacted(base: int, offsets: list[int], *, n: int, leader_epoch: int = 0) -> B:
    """What the cleaner leaves of ``kp_batch(base, n)``: the records at ``offsets`` only, the base offset and
    the last offset delta kept, every record's timestamp, key and value as they were."""
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 22)
    for o in offsets:
        assert bld.append(o - base, timestamp=T0 + (o - base), key=b"k%d" % o, value=(b"v%d-" % o).ljust(8, b"x"),
                          headers=[]) is not None
    buf = bytearray(bld.build())
    struct.pack_into(">q", buf, 0, base)
    struct.pack_into(">i", buf, 12, leader_epoch)
    # the cleaner keeps lastOffsetDelta (n - 1) when the last record went: kafka-python wrote the last kept one
    assert struct.unpack_from(">i", buf, 23)[0] == offsets[-1] - base
    if offsets[-1] != base + n - 1:
        pytest.skip("the builder cannot keep a last offset delta past its last record")
    return B(bytes(buf), base, base + n - 1, T0 + n - 1, leader_epoch=leader_epoch)


def copy(tmp_path, name: str, segments: list[list[B]]) -> str:
    """A partition directory ``name``/orders-0 holding one segment per list of batches."""
    d = tmp_path / name / "orders-0"
    d.mkdir(parents=True)
    for batches in segments:
        (d / f"{batches[0].base_offset:020d}.log").write_bytes(Seg(batches).data)
    return str(d)


def run_process(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, text=True)


def diff_json(a: str, b: str) -> tuple[list[dict], dict, int]:
    r = run("diff", "--json", a, b)
    assert "Traceback" not in r.stderr, r.stderr
    objs = [json.loads(x) for x in r.stdout.splitlines()]
    assert objs[-1]["type"] == "diff"
    return [o for o in objs if o["type"] == "divergence"], objs[-1], r.returncode


def side(path: str, files: int, batches: int, records: int, first: int, last: int, epochs: list) -> dict:
    return {"path": path, "files": files, "batches": batches, "records": records, "firstOffset": first,
            "lastOffset": last, "leaderEpochs": [{"epoch": e, "startOffset": o} for e, o in epochs]}


def seg_path(d: str, base: int) -> str:
    return os.path.join(d, f"{base:020d}.log")


# --- identical, whatever the segment boundaries ------------------------------------------------------

def test_identical_copies_with_other_segment_boundaries(tmp_path):
    bs = [kp_batch(0), kp_batch(3), kp_batch(6, leader_epoch=1)]
    a = copy(tmp_path, "a", [bs])
    b = copy(tmp_path, "b", [bs[:2], bs[2:]])
    runs, s, code = diff_json(a, b)
    assert code == 0 and runs == []
    assert s == {"type": "diff", "verdict": "identical", "identicalThrough": 8, "firstDivergentOffset": None,
                 "onlyInA": 0, "onlyInB": 0, "different": 0, "same": 9, "onlyInAByPattern": {},
                 "onlyInBByPattern": {}, "identicalBatches": 3, "recordsCompared": 0,
                 "a": side(a, 1, 3, 9, 0, 8, [(0, 0), (1, 6)]), "b": side(b, 2, 3, 9, 0, 8, [(0, 0), (1, 6)])}
    r = run("diff", a, b)
    assert r.returncode == 0
    assert r.stdout.splitlines() == ["IDENTICAL: A and B hold the same 9 records, offsets 0..8 "
                                     "(leader epochs 0@0, 1@6)"]


def test_identical_when_batches_are_cut_differently(tmp_path):
    # the same records, one batch of 6 in A, two of 3 in B: compared record by record, all the same
    a = copy(tmp_path, "a", [[kp_batch(0, 6)]])
    b = copy(tmp_path, "b", [[kp_batch(0, 3)], [kp_batch(3, 3, ts=T0 + 3)]])
    runs, s, code = diff_json(a, b)
    assert (s["verdict"], s["same"], s["identicalBatches"], s["recordsCompared"], code) == ("identical", 6, 0, 6, 0)


# --- diverged after a leader epoch change --------------------------------------------------------------

def diverged(tmp_path) -> tuple[str, str]:
    """A: the old leader (epoch 1 from offset 6); B: the new leader (epoch 2), truncated to 5 and rewritten."""
    common = [kp_batch(0), kp_batch(3)]
    a = copy(tmp_path, "a", [common + [kp_batch(6, leader_epoch=1)], [kp_batch(9, leader_epoch=1)]])
    b = copy(tmp_path, "b", [common, [kp_batch(6, 2, leader_epoch=2, value_size=12),
                                      kp_batch(8, 6, leader_epoch=2, value_size=12)]])
    return a, b


def test_replicas_diverging_after_a_leader_epoch_change(tmp_path):
    a, b = diverged(tmp_path)
    runs, s, code = diff_json(a, b)
    assert code == 1
    assert runs == [
        {"type": "divergence", "fromOffset": 6, "toOffset": 11, "kind": "different", "leaderEpochA": 1,
         "leaderEpochB": 2, "records": 6, "pattern": None, "fields": ["value", "leaderEpoch", "timestamp"],
         "fileA": seg_path(a, 0), "positionA": 2 * kp_batch(0).size, "fileB": seg_path(b, 6), "positionB": 0},
        {"type": "divergence", "fromOffset": 12, "toOffset": 13, "kind": "only-in-b", "leaderEpochA": None,
         "leaderEpochB": 2, "records": 2, "pattern": "tail", "fields": [], "fileA": None, "positionA": None,
         "fileB": seg_path(b, 6), "positionB": kp_batch(6, 2, leader_epoch=2, value_size=12).size}]
    assert s == {"type": "diff", "verdict": "diverged", "identicalThrough": 5, "firstDivergentOffset": 6,
                 "onlyInA": 0, "onlyInB": 2, "different": 6, "same": 6, "onlyInAByPattern": {},
                 "onlyInBByPattern": {"tail": 2}, "identicalBatches": 2, "recordsCompared": 6,
                 "a": side(a, 2, 4, 12, 0, 11, [(0, 0), (1, 6)]), "b": side(b, 2, 4, 14, 0, 13, [(0, 0), (2, 6)])}


def test_diverged_table_says_it_in_one_line(tmp_path):
    a, b = diverged(tmp_path)
    r = run("diff", a, b)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines[0].split()[:4] == ["6..11", "differ", "6", "records"]
    assert lines[1].split()[:5] == ["12..13", "only", "in", "B", "2"]
    assert lines[-1] == ("DIVERGED: A and B agree through offset 5; they diverge at offset 6: offsets 6..11 differ "
                         "(6 records: A leader epoch 1, B leader epoch 2); each copy's records at those offsets are "
                         "lost from the other (different leader epochs: the usual sign of a truncation after an "
                         "unclean election); B has offsets 12..13 (2 records, leader epoch 2) that A lacks  "
                         "[A: leader epochs 0@0, 1@6; B: leader epochs 0@0, 2@6]")


# --- compaction is not loss -------------------------------------------------------------------------------

def test_a_compacted_copy_is_not_divergent(tmp_path):
    a = copy(tmp_path, "a", [[kp_batch(0, 5), kp_batch(5, 5)]])
    b = copy(tmp_path, "b", [[compacted(0, [1, 4], n=5), compacted(5, [7, 9], n=5)]])
    runs, s, code = diff_json(a, b)
    assert code == 0
    assert [(r["fromOffset"], r["toOffset"], r["kind"], r["pattern"], r["records"], r["leaderEpochA"])
            for r in runs] == [(0, 0, "only-in-a", "compaction-hole", 1, 0), (2, 3, "only-in-a", "compaction-hole", 2, 0),
                               (5, 6, "only-in-a", "compaction-hole", 2, 0), (8, 8, "only-in-a", "compaction-hole", 1, 0)]
    assert {k: s[k] for k in ("verdict", "identicalThrough", "firstDivergentOffset", "onlyInA", "onlyInB",
                              "different", "same", "onlyInAByPattern")} == {
        "verdict": "a-contains-b", "identicalThrough": 9, "firstDivergentOffset": None, "onlyInA": 6, "onlyInB": 0,
        "different": 0, "same": 4, "onlyInAByPattern": {"compaction-hole": 6}}
    line = run("diff", a, b).stdout.splitlines()[-1]
    assert line.startswith("A CONTAINS B: A and B agree through offset 9; not loss: 6 of A's offsets are "
                           "compaction holes in B")


def test_the_compacted_live_log_contains_an_older_backup(tmp_path):
    backup = copy(tmp_path, "backup", [[kp_batch(0, 5), kp_batch(5, 5)]])
    live = copy(tmp_path, "live", [[compacted(0, [1, 4], n=5), compacted(5, [7, 9], n=5), kp_batch(10, 3)]])
    runs, s, code = diff_json(backup, live)
    assert (s["verdict"], s["onlyInAByPattern"], s["onlyInBByPattern"], code) == (
        "b-contains-a", {"compaction-hole": 6}, {"tail": 3}, 0)


def test_copies_compacted_differently_are_equivalent(tmp_path):
    a = copy(tmp_path, "a", [[compacted(0, [0, 1, 3, 4], n=5)]])
    b = copy(tmp_path, "b", [[compacted(0, [0, 2, 3, 4], n=5)]])
    runs, s, code = diff_json(a, b)
    assert (s["verdict"], s["onlyInA"], s["onlyInB"], s["same"], code) == ("equivalent", 1, 1, 3, 0)
    assert [(r["fromOffset"], r["kind"], r["pattern"]) for r in runs] == [
        (1, "only-in-a", "compaction-hole"), (2, "only-in-b", "compaction-hole")]


# --- one copy has more ----------------------------------------------------------------------------------------

def test_a_lagging_replica_and_a_retention_trimmed_one(tmp_path):
    full = copy(tmp_path, "full", [[kp_batch(0), kp_batch(3)], [kp_batch(6, leader_epoch=1)]])
    lagging = copy(tmp_path, "lagging", [[kp_batch(0), kp_batch(3)]])
    runs, s, code = diff_json(full, lagging)
    assert code == 0
    assert runs == [{"type": "divergence", "fromOffset": 6, "toOffset": 8, "kind": "only-in-a", "leaderEpochA": 1,
                     "leaderEpochB": None, "records": 3, "pattern": "tail", "fields": [],
                     "fileA": seg_path(full, 6), "positionA": 0, "fileB": None, "positionB": None}]
    assert (s["verdict"], s["identicalThrough"], s["onlyInA"], s["identicalBatches"]) == ("a-contains-b", 5, 3, 2)
    line = run("diff", full, lagging).stdout.splitlines()[-1]
    assert line.startswith("A CONTAINS B: A and B agree through offset 5; A has offsets 6..8 (3 records, "
                           "leader epoch 1) that B lacks  [")
    # the other way round, and a copy whose retention removed its first segment
    _, s, code = diff_json(lagging, full)
    assert (s["verdict"], s["onlyInBByPattern"], code) == ("b-contains-a", {"tail": 3}, 0)
    trimmed = copy(tmp_path, "trimmed", [[kp_batch(3)], [kp_batch(6, leader_epoch=1)]])
    runs, s, code = diff_json(full, trimmed)
    assert (s["verdict"], s["onlyInAByPattern"], s["identicalThrough"], code) == (
        "a-contains-b", {"log-start": 3}, 8, 0)
    assert runs[0]["pattern"] == "log-start" and (runs[0]["fromOffset"], runs[0]["toOffset"]) == (0, 2)


# --- counting work, inputs, damage ------------------------------------------------------------------------------

def test_identical_batches_are_not_decoded_record_by_record(tmp_path):
    bs = [kp_batch(i * 50, 50) for i in range(40)]
    a = copy(tmp_path, "a", [bs[:20], bs[20:]])
    b = copy(tmp_path, "b", [bs[:7], bs[7:31], bs[31:]])
    tally = Tally()
    items = list(diff_report(a, b, Options(records=False), tally))
    s = items[-1]
    assert (s.verdict, s.identical_batches, s.records_compared, s.same, tally.exit_status) == ("identical", 40, 0,
                                                                                               2000, 0)


def test_legacy_messages_compare_record_by_record():
    mixed = str(FIXTURES / "segment-mixed/00000000000000000000.log")
    _, s, code = diff_json(mixed, mixed)
    # the fixture's expect file: 10 magic 0/1 messages holding 19 records, then 2 v2 batches of 5
    assert (s["verdict"], s["same"], s["recordsCompared"], s["identicalBatches"], code) == ("identical", 24, 19, 2, 0)


def test_damage_in_one_copy_is_reported_and_the_diff_goes_on(tmp_path):
    bs = [kp_batch(0), kp_batch(3), kp_batch(6)]
    a = copy(tmp_path, "a", [bs])
    data = bytearray(Seg(bs).data)
    data[bs[1].position + 70] ^= 0xFF            # a record byte of the second batch: its CRC fails
    d = tmp_path / "b" / "orders-0"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(bytes(data))
    r = run("diff", "--json", a, str(d))
    objs = [json.loads(x) for x in r.stdout.splitlines()]
    assert r.returncode == 1
    problems = [o for o in objs if o["type"] == "findings"]
    assert problems[0]["side"] == "b" and problems[0]["findings"][0]["code"] == "crc-mismatch"
    s = objs[-1]
    assert s["identicalBatches"] == 2 and s["a"]["lastOffset"] == s["b"]["lastOffset"] == 8
    # B's records at 3..5 are no evidence: A's only, lost from B to damage; no divergence
    line = run("diff", a, str(d)).stdout.splitlines()[-1]
    assert line.startswith("A CONTAINS B: A and B agree through offset 2; B lost 3 of A's records to damage  [")
    (run_,) = [o for o in objs if o["type"] == "divergence"]
    assert {k: run_[k] for k in ("fromOffset", "toOffset", "kind", "pattern", "records", "leaderEpochA")} == {
        "fromOffset": 3, "toOffset": 5, "kind": "only-in-a", "pattern": "damaged", "records": 3, "leaderEpochA": 0}
    assert (s["verdict"], s["firstDivergentOffset"], s["identicalThrough"], s["onlyInAByPattern"]) == (
        "a-contains-b", None, 2, {"damaged": 3})


def damaged_copy(tmp_path, name: str, bs: list[B], garble: int) -> str:
    """A copy of ``bs`` whose batch ``garble`` is overwritten with garbage (a gap the walk resyncs past)."""
    data = bytearray(Seg(bs).data)
    b = bs[garble]
    data[b.position:b.position + b.size] = b"\xee" * b.size
    d = tmp_path / name / "orders-0"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(bytes(data))
    return str(d)


def test_copies_that_each_lost_records_the_other_has_diverge(tmp_path):
    bs = [kp_batch(0), kp_batch(3), kp_batch(6), kp_batch(9)]
    a = damaged_copy(tmp_path, "a", bs, 1)
    b = damaged_copy(tmp_path, "b", bs, 2)
    runs, s, code = diff_json(a, b)
    assert code == 1
    assert [(r["fromOffset"], r["toOffset"], r["kind"], r["pattern"]) for r in runs] == [
        (3, 5, "only-in-b", "damaged"), (6, 8, "only-in-a", "damaged")]
    assert (s["verdict"], s["firstDivergentOffset"], s["identicalThrough"], s["same"]) == ("diverged", 3, 2, 6)


@pytest.mark.parametrize("which", ["missing", "logdir", "empty"])
def test_input_errors_are_exit_2(tmp_path, which):
    a = copy(tmp_path, "a", [[kp_batch(0)]])
    if which == "missing":
        other = str(tmp_path / "nope")
    elif which == "logdir":
        copy(tmp_path / "x", "b", [[kp_batch(0)]])
        (tmp_path / "x" / "b" / "orders-1").mkdir()
        (tmp_path / "x" / "b" / "orders-1" / "00000000000000000000.log").write_bytes(kp_batch(0).data)
        other = str(tmp_path / "x" / "b")
    else:
        (tmp_path / "empty").mkdir()
        other = str(tmp_path / "empty")
    r = run("diff", a, other)
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1


# --- the real corpus --------------------------------------------------------------------------------------------

def test_real_metadata_log_against_its_older_copy():
    root = need_corpus("real/segments/ArthurArutunyan04+Backend_labs")
    now = str(root / "kafka-data/__cluster_metadata-0")
    old = str(root / "_history/d8748dd/kafka-data/__cluster_metadata-0")
    runs, s, code = diff_json(now, old)
    assert code == 0
    # the older copy of segment 5151 held offsets 5151..7093; the newer log goes on to 7319 (leader epoch 8)
    assert {k: s[k] for k in ("verdict", "identicalThrough", "firstDivergentOffset", "onlyInA", "onlyInB",
                              "different", "same", "onlyInAByPattern", "identicalBatches", "recordsCompared")} == {
        "verdict": "a-contains-b", "identicalThrough": 7093, "firstDivergentOffset": None, "onlyInA": 5377,
        "onlyInB": 0, "different": 0, "same": 1943, "onlyInAByPattern": {"log-start": 5151, "tail": 226},
        "identicalBatches": 1641, "recordsCompared": 0}
    assert runs[-1]["fromOffset"] == 7094 and runs[-1]["toOffset"] == 7319 and runs[-1]["leaderEpochA"] == 8
    _, same, code = diff_json(now, now)
    assert (same["verdict"], same["same"], same["identicalBatches"], code) == ("identical", 7320, 6436, 0)


def test_damaged_copies_never_raise_and_every_offset_is_accounted_for(tmp_path):
    import random

    bs = [kp_batch(0), kp_batch(3, leader_epoch=1), kp_batch(6, codec=1), kp_batch(9, leader_epoch=2)]
    a = copy(tmp_path, "a", [bs])
    good = Seg(bs).data
    d = tmp_path / "b" / "orders-0"
    d.mkdir(parents=True)
    rnd = random.Random(16)
    for _ in range(40):
        data = bytearray(good)
        for _ in range(rnd.randint(1, 6)):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
        (d / "00000000000000000000.log").write_bytes(bytes(data[:rnd.choice([len(data), rnd.randrange(len(data))])]))
        items = list(diff_report(a, str(d), Options(records=False), Tally()))
        s = items[-1]
        assert s.verdict in ("identical", "diverged", "a-contains-b", "b-contains-a", "equivalent")
        # every offset of A is the same, different or A's only
        assert s.same + s.different + s.only_in_a == 12


def test_real_metadata_log_at_two_commits():
    root = need_corpus("real/segments/PhilippDuck+rotorwind")
    now = str(root / "kafka/data/__cluster_metadata-0")
    older = str(root / "_history/99d10de/kafka/data/__cluster_metadata-0")
    runs, s, code = diff_json(now, older)
    # the older copy holds offsets 0..27532, the newer 0..27642: the broker appended 110 records, leader epoch 35
    assert code == 0
    assert (s["verdict"], s["identicalThrough"], s["firstDivergentOffset"], s["onlyInA"], s["onlyInB"],
            s["different"], s["same"]) == ("a-contains-b", 27532, None, 110, 0, 0, 27533)
    assert [(r["fromOffset"], r["toOffset"], r["kind"], r["pattern"], r["leaderEpochA"]) for r in runs] == [
        (27533, 27642, "only-in-a", "tail", 35)]
    assert (s["a"]["lastOffset"], s["b"]["lastOffset"], s["a"]["leaderEpochs"][-1]) == (
        27642, 27532, {"epoch": 35, "startOffset": 27168})


def test_inputs_are_left_untouched(tmp_path):
    a, b = diverged(tmp_path)
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    for p in files:
        p.chmod(0o444)
    before = {p: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in files}
    for args in (["diff", a, b], ["diff", "--json", a, b], ["metadata", a], ["metadata", "--json", "--at", "3", a]):
        r = run_process(*args)
        assert r.returncode in (0, 1, 2) and "Traceback" not in r.stderr
    assert {p: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in files} == before


# --- at scale: memory bounded, work counted ------------------------------------------------------------------

def _many(path, n: int, epoch_of) -> None:
    """``n`` one-record batches (kafka-python's bytes, base offset and leader epoch patched: both outside the CRC)."""
    t = bytearray(kp_batch(0, 1).data)
    out = bytearray()
    for i in range(n):
        struct.pack_into(">q", t, 0, i)
        struct.pack_into(">i", t, 12, epoch_of(i))
        out += t
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(out))


@pytest.mark.parametrize("n", [10_000, 20_000])
def test_diff_at_scale_streams(tmp_path, n):
    from measured import RSS_LIMIT_MB, kd

    _many(tmp_path / "a" / "orders-0" / "00000000000000000000.log", n, lambda i: 0)
    # B: every 10th batch carries another leader epoch: a run of one different offset each
    _many(tmp_path / "b" / "orders-0" / "00000000000000000000.log", n, lambda i: 1 if i % 10 == 9 else 0)
    rc, out, err, rss = kd("diff", "--json", str(tmp_path / "a" / "orders-0"), str(tmp_path / "b" / "orders-0"))
    assert rc == 1, err
    lines = out.splitlines()
    s = json.loads(lines[-1])
    assert (s["verdict"], s["same"], s["different"], s["identicalBatches"], s["recordsCompared"]) == (
        "diverged", n - n // 10, n // 10, n - n // 10, n // 10)
    assert len(lines) == n // 10 + 1 and s["identicalThrough"] == 8 and s["firstDivergentOffset"] == 9
    assert rss < RSS_LIMIT_MB


def test_a_log_dir_holding_one_partition_is_that_partition(tmp_path):
    a = copy(tmp_path, "a", [[kp_batch(0)]])
    _, s, code = diff_json(str(tmp_path / "a"), a)
    assert (s["verdict"], s["a"]["files"], code) == ("identical", 1, 0)
