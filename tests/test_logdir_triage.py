"""Triage and cross-checks on generated partitions with known damage: every finding's code and byte offset.

Segments are encoded by kafka-python (tests/logdir_helpers.py); expected
offsets come from the builders' own layout, never from kafkadump.
"""

import json
import os
import struct
import subprocess
import sys

import pytest
from logdir_helpers import (
    ABORT,
    COMMIT,
    T0,
    Seg,
    batch,
    checkpoint_text,
    control,
    file_of,
    findings,
    flip,
    index_bytes,
    name,
    snapshot_bytes,
    timeindex_bytes,
    txnindex_bytes,
    write,
)
from typer.testing import CliRunner

from kafkadump.cli import app
from kafkadump.base.findings import DESCRIPTION
from kafkadump.base.findings import SEVERITY
from kafkadump.base.findings import Code
from kafkadump.reports import triage as triage_mod
from kafkadump.reports.triage import Triage
from kafkadump.objects.logdir_objects import triage_report
from kafkadump.objects.logdir_objects import triage

runner = CliRunner()

# the finding codes whose mutation tests live in this file (read by test_mutations.py)
MUTATION_CODES = {
    "index-entry-mismatch", "index-not-monotonic", "index-out-of-step", "timeindex-not-monotonic",
    "timeindex-mismatch", "txnindex-mismatch", "entry-invalid", "file-version-unknown", "file-malformed",
    "offset-gap", "segment-name-mismatch", "sequence-gap", "sequence-order", "open-transaction",
    "aborted-transaction", "leader-epoch-mismatch", "producer-snapshot-mismatch", "snapshot-incomplete",
    "checkpoint-mismatch", "pending-file", "orphan-file",
}


def one(report, code, file=None):
    """The single finding of ``code`` (in ``file`` when given)."""
    fs = [f for f in findings(report, code) if file is None or f["file"] == str(file)]
    assert len(fs) == 1, (code, fs, findings(report))
    return fs[0]


def partition(tmp_path, seg: Seg, *, base=0, topic="orders-0", index=None, timeindex=None, extra=None,
              data=None):
    d = tmp_path / topic
    log = write(d / name(base, ".log"), seg.data if data is None else data)
    if index is not None:
        write(d / name(base, ".index"), index)
    if timeindex is not None:
        write(d / name(base, ".timeindex"), timeindex)
    for fname, content in (extra or {}).items():
        write(d / fname, content)
    return d, log


def three(**kw):
    return Seg([batch(0, 3, **kw), batch(3, 2), batch(5, 4)])


# --- healthy ----------------------------------------------------------------------------------

def test_healthy_partition_is_clean_and_fully_verified(tmp_path):
    s = Seg([batch(0, 3, pid=5, epoch=0, seq=0), batch(3, 2, pid=5, epoch=0, seq=3),
             batch(5, 4, pid=6, epoch=1, seq=0, leader_epoch=1)])
    d, log = partition(tmp_path, s, index=index_bytes([(4, s.at(1)), (8, s.at(2))]),
                       timeindex=timeindex_bytes([(s.batches[1].max_ts, 4), (s.batches[2].max_ts, 8)]),
                       extra={"leader-epoch-checkpoint": checkpoint_text([(0, 0), (1, 5)]),
                              name(9, ".snapshot"): snapshot_bytes([(5, 0, 4, 4, 1, T0, -1, -1),
                                                                    (6, 1, 3, 8, 3, T0, -1, -1)])})
    r = triage(str(d))
    assert r["verdict"] == "clean" and findings(r) == []
    p = r["partitions"][0]
    assert (p["topic"], p["partition"], p["firstOffset"], p["logEndOffset"], p["records"], p["producers"]) == \
        ("orders", 0, 0, 9, 9, 2)
    assert p["snapshotsChecked"] == 1 and p["leaderEpochs"] == [0, 1]
    assert file_of(r, d / name(0, ".index"))["verifiedEntries"] == 2
    assert file_of(r, d / name(0, ".timeindex"))["verifiedEntries"] == 2
    f = file_of(r, log)
    assert (f["batches"], f["records"], f["firstOffset"], f["lastOffset"]) == (3, 9, 0, 8)
    import hashlib

    assert f["sha256"] == hashlib.sha256(s.data).hexdigest() and f["size"] == len(s.data)


def test_multi_batch_append_index_entries_are_accepted(tmp_path):
    # brokers before 3.7 (and the cleaner) index a whole append: the entry's offset is a later batch's last
    s = three()
    d, _ = partition(tmp_path, s, index=index_bytes([(8, s.at(1))]))
    r = triage(str(d))
    assert findings(r) == [] and file_of(r, d / name(0, ".index"))["verifiedEntries"] == 1


# --- damage in the segment (decoder findings, surfaced by triage) ----------------------------

def test_flipped_byte_crc(tmp_path):
    s = three()
    d, log = partition(tmp_path, s, data=flip(s.data, s.at(1) + 70))
    r = triage(str(d))
    assert one(r, "crc-mismatch")["offset"] == s.at(1) + 17
    assert r["verdict"] == "errors" and r["partitions"][0]["verdict"] == "errors"
    assert file_of(r, log)["damagedRanges"] == 1


def test_flipped_base_offset_is_outside_the_crc_but_breaks_the_offsets(tmp_path):
    s = three()
    d, _ = partition(tmp_path, s, data=flip(s.data, s.at(1) + 2))   # baseOffset is not covered by the CRC
    r = triage(str(d))
    assert findings(r, "crc-mismatch") == []
    assert one(r, "offset-order")["offset"] == s.at(2)


def test_truncated_tail(tmp_path):
    s = three()
    d, log = partition(tmp_path, s, data=s.data[:-10])
    r = triage(str(d))
    assert one(r, "truncated")["offset"] == s.at(2)
    assert file_of(r, log)["lastOffset"] == 4


def test_garbage_between_batches(tmp_path):
    s = three()
    junk = bytes(range(1, 38))
    data = s.data[:s.at(1)] + junk + s.data[s.at(1):]
    d, log = partition(tmp_path, s, data=data)
    r = triage(str(d))
    g = one(r, "garbage")
    assert (g["offset"], g["length"]) == (s.at(1), len(junk))
    assert file_of(r, log)["batches"] == 3 and file_of(r, log)["records"] == 9


def test_zero_filled_preallocated_tail_is_info(tmp_path):
    s = three()
    d, log = partition(tmp_path, s, data=s.data + bytes(4096))
    r = triage(str(d))
    z = one(r, "zero-padding")
    assert (z["offset"], z["length"], z["severity"]) == (len(s.data), 4096, "info")
    assert r["verdict"] == "clean"


def test_absurd_batch_length(tmp_path):
    s = three()
    data = bytearray(s.data)
    struct.pack_into(">i", data, s.at(1) + 8, 0x7FFFFFF0)
    d, _ = partition(tmp_path, s, data=bytes(data))
    r = triage(str(d))
    # the length alone is damaged: the stored CRC up to the next batch recovers the batch
    assert one(r, "length-repaired")["offset"] == s.at(1) + 8 and r["partitions"][0]["records"] == 9
    data[s.at(1) + 17] ^= 0xFF   # and its CRC too: the batch cannot be trusted
    partition(tmp_path, s, data=bytes(data))
    assert one(triage(str(d)), "length-invalid")["offset"] == s.at(1) + 8


def test_unknown_magic(tmp_path):
    s = three()
    data = bytearray(s.data)
    data[s.at(1) + 16] = 7
    d, _ = partition(tmp_path, s, data=bytes(data))
    r = triage(str(d))
    assert one(r, "unknown-magic")["offset"] == s.at(1) + 16


def test_crc_valid_batch_with_malformed_record(tmp_path):
    from logdir_helpers import fix_crc

    s = three()
    data = bytearray(s.data)
    data[s.at(1) + 61] = 0x7E          # first record's length varint: 63, more than the batch holds
    fix_crc(data, s.at(1))
    d, _ = partition(tmp_path, s, data=bytes(data))
    r = triage(str(d))
    assert one(r, "record-malformed")["offset"] == s.at(1) + 61
    assert findings(r, "crc-mismatch") == []


# --- indexes ----------------------------------------------------------------------------------

def test_wrong_index_entry(tmp_path):
    s = three()
    d, _ = partition(tmp_path, s, index=index_bytes([(4, s.at(1)), (8, s.at(2) + 5)]))
    r = triage(str(d))
    f = one(r, "index-entry-mismatch", d / name(0, ".index"))
    assert f["offset"] == 8 and f["severity"] == "error"
    assert file_of(r, d / name(0, ".index"))["verifiedEntries"] == 1


def test_index_entry_offset_inside_a_batch(tmp_path):
    s = three()
    d, _ = partition(tmp_path, s, index=index_bytes([(6, s.at(2))]))
    assert one(triage(str(d)), "index-entry-mismatch")["offset"] == 0


def test_index_with_zero_tail(tmp_path):
    s = three()
    d, _ = partition(tmp_path, s, index=index_bytes([(4, s.at(1)), (8, s.at(2))]) + bytes(80))
    r = triage(str(d))
    z = one(r, "zero-padding", d / name(0, ".index"))
    assert (z["offset"], z["length"], z["severity"]) == (16, 80, "info")
    f = file_of(r, d / name(0, ".index"))
    assert (f["entries"], f["zeroEntries"], f["verifiedEntries"]) == (2, 10, 2)
    assert r["verdict"] == "clean"


def test_preallocated_index_entry_zero_may_be_zero_zero(tmp_path):
    # entry 0 = (base offset, position 0) is real when a non-zero entry follows
    s = Seg([batch(0, 1), batch(1, 2), batch(3, 2)])
    d, _ = partition(tmp_path, s, index=index_bytes([(0, 0), (2, s.at(1))]) + bytes(16))
    r = triage(str(d))
    f = file_of(r, d / name(0, ".index"))
    assert (f["entries"], f["verifiedEntries"], f["zeroEntries"]) == (2, 2, 2) and r["verdict"] == "clean"


def test_index_not_monotonic(tmp_path):
    s = three()
    d, _ = partition(tmp_path, s, index=index_bytes([(8, s.at(2)), (4, s.at(1))]))
    assert one(triage(str(d)), "index-not-monotonic")["offset"] == 8


def test_zero_entry_in_the_middle_is_not_a_tail(tmp_path):
    s = three()
    d, _ = partition(tmp_path, s, index=index_bytes([(4, s.at(1))]) + bytes(8) + index_bytes([(8, s.at(2))]))
    r = triage(str(d))
    assert one(r, "index-not-monotonic")["offset"] == 8 and findings(r, "zero-padding") == []


def test_index_entry_invalid(tmp_path):
    s = three()
    d, _ = partition(tmp_path, s, index=index_bytes([(4, s.at(1)), (8, -5)]))
    assert one(triage(str(d)), "entry-invalid")["offset"] == 8


def test_index_partial_entry_is_truncated(tmp_path):
    s = three()
    d, _ = partition(tmp_path, s, index=index_bytes([(4, s.at(1))]) + b"\x00\x00\x00\x07\x00")
    r = triage(str(d))
    t = one(r, "truncated", d / name(0, ".index"))
    assert (t["offset"], t["length"]) == (8, 5)


def test_index_out_of_step_with_a_shorter_log(tmp_path):
    # the index of a longer version of this log: one warning, not a mismatch per entry
    s = three()
    d, _ = partition(tmp_path, s, index=index_bytes([(4, s.at(1)), (8, s.at(2)), (12, len(s.data) + 40),
                                                     (20, len(s.data) + 900)]))
    r = triage(str(d))
    f = one(r, "index-out-of-step")
    assert (f["offset"], f["severity"]) == (16, "warning") and "2 of 4 entries" in f["message"]
    assert findings(r, "index-entry-mismatch") == [] and r["verdict"] == "warnings"


def test_orphan_index_decodes_alone(tmp_path):
    d = tmp_path / "orders-0"
    write(d / name(0, ".index"), index_bytes([(4, 100), (8, 300)]))
    r = triage(str(d))
    f = file_of(r, d / name(0, ".index"))
    assert f["entries"] == 2 and f["checkedAgainstLog"] is False
    assert one(r, "orphan-file")["offset"] == 0 and r["verdict"] == "clean"


def test_timeindex_not_monotonic(tmp_path):
    s = three()
    ts = [b.max_ts for b in s.batches]
    d, _ = partition(tmp_path, s, timeindex=timeindex_bytes([(ts[2] + 5, 8), (ts[1], 4)]))
    assert one(triage(str(d)), "timeindex-not-monotonic")["offset"] == 12


def test_timeindex_mismatch(tmp_path):
    s = three()
    d, _ = partition(tmp_path, s, timeindex=timeindex_bytes([(s.batches[1].max_ts + 1000, 4)]))
    f = one(triage(str(d)), "timeindex-mismatch")
    assert (f["offset"], f["severity"]) == (0, "warning")


def test_timeindex_zero_tail(tmp_path):
    s = three()
    d, _ = partition(tmp_path, s, timeindex=timeindex_bytes([(s.batches[1].max_ts, 4)]) + bytes(36))
    r = triage(str(d))
    assert one(r, "zero-padding", d / name(0, ".timeindex"))["offset"] == 12 and r["verdict"] == "clean"


# --- offsets and segments ------------------------------------------------------------------------

def test_offset_gap_within_a_segment_is_info(tmp_path):
    s = Seg([batch(0, 3), batch(10, 2)])
    d, log = partition(tmp_path, s)
    r = triage(str(d))
    g = one(r, "offset-gap")
    assert (g["offset"], g["severity"]) == (s.at(1), "info") and "3..9" in g["message"]
    assert file_of(r, log)["missingOffsets"] == 7 and r["verdict"] == "clean"


def test_offset_gap_next_to_damage_says_lost(tmp_path):
    s = Seg([batch(0, 3), batch(3, 2), batch(5, 4)])
    d, _ = partition(tmp_path, s, data=flip(s.data, s.at(1) + 70))
    g = one(triage(str(d)), "offset-gap")
    assert g["offset"] == s.at(2) and "lost" in g["message"] and "3..4" in g["message"]


def test_offset_gap_and_overlap_across_segments(tmp_path):
    d = tmp_path / "orders-0"
    a, b, c = Seg([batch(0, 3)]), Seg([batch(10, 2)]), Seg([batch(11, 2)])
    write(d / name(0, ".log"), a.data)
    write(d / name(10, ".log"), b.data)
    r = triage(str(d))
    g = one(r, "offset-gap", d / name(10, ".log"))
    assert g["offset"] == 0 and "3..9" in g["message"]
    write(d / name(11, ".log"), c.data)
    r = triage(str(d))
    o = one(r, "offset-order", d / name(11, ".log"))
    assert o["offset"] == 0 and o["severity"] == "warning"


def test_segment_name_mismatch(tmp_path):
    s = three()
    d, log = partition(tmp_path, s, base=5)
    f = one(triage(str(d)), "segment-name-mismatch")
    assert (f["offset"], f["file"], f["severity"]) == (0, log, "error")


def test_segment_starting_after_its_name_is_a_gap(tmp_path):
    s = Seg([batch(7, 3)])
    d, log = partition(tmp_path, s, base=4)
    g = one(triage(str(d)), "offset-gap")
    assert g["offset"] == 0 and "4..6" in g["message"]


def test_pending_suffixes_are_decoded_and_kept_out_of_the_cross_checks(tmp_path):
    d = tmp_path / "orders-0"
    live, old = Seg([batch(0, 3)]), Seg([batch(0, 3)])
    write(d / name(0, ".log"), live.data)
    write(d / (name(0, ".log") + ".deleted"), old.data)
    write(d / (name(0, ".index") + ".swap"), index_bytes([]))
    r = triage(str(d))
    p = one(r, "pending-file", d / (name(0, ".log") + ".deleted"))
    assert p["offset"] == 0 and p["severity"] == "info"
    assert file_of(r, d / (name(0, ".log") + ".deleted"))["batches"] == 1
    assert findings(r, "offset-order") == [] and r["verdict"] == "clean"


def test_partition_directory_being_deleted(tmp_path):
    s = three()
    d, log = partition(tmp_path, s, topic="orders-0.0123456789abcdef0123456789abcdef-delete")
    r = triage(str(d))
    assert one(r, "pending-file")["file"] == log
    assert r["partitions"][0]["state"] == "delete"


# --- producers and transactions ---------------------------------------------------------------------

def test_sequence_gap(tmp_path):
    s = Seg([batch(0, 3, pid=5, epoch=0, seq=0), batch(3, 2, pid=5, epoch=0, seq=10)])
    d, _ = partition(tmp_path, s)
    f = one(triage(str(d)), "sequence-gap")
    assert (f["offset"], f["severity"]) == (s.at(1) + 53, "warning")


def test_sequence_gap_explained_by_compaction_is_not_reported(tmp_path):
    s = Seg([batch(0, 3, pid=5, epoch=0, seq=0), batch(20, 2, pid=5, epoch=0, seq=10)])
    d, _ = partition(tmp_path, s)
    r = triage(str(d))
    assert findings(r, "sequence-gap") == [] and len(findings(r, "offset-gap")) == 1


def test_sequence_gap_across_segments(tmp_path):
    d = tmp_path / "orders-0"
    a = Seg([batch(0, 3, pid=5, epoch=0, seq=0)])
    write(d / name(0, ".log"), a.data)
    write(d / name(3, ".log"), Seg([batch(3, 2, pid=5, epoch=0, seq=7)]).data)
    r = triage(str(d))
    f = one(r, "sequence-gap")
    assert (f["file"], f["offset"]) == (str(d / name(3, ".log")), 53)


def test_sequence_order_duplicate_and_epoch_regression(tmp_path):
    s = Seg([batch(0, 3, pid=5, epoch=1, seq=0), batch(3, 3, pid=5, epoch=1, seq=0),
             batch(6, 1, pid=5, epoch=0, seq=6)])
    d, _ = partition(tmp_path, s)
    r = triage(str(d))
    offs = sorted(f["offset"] for f in findings(r, "sequence-order"))
    assert offs == [s.at(1) + 53, s.at(2) + 51]


def test_new_epoch_restarts_sequence(tmp_path):
    s = Seg([batch(0, 3, pid=5, epoch=0, seq=0), batch(3, 3, pid=5, epoch=1, seq=0)])
    d, _ = partition(tmp_path, s)
    assert findings(triage(str(d))) == []


def test_missing_commit_marker_is_an_open_transaction(tmp_path):
    s = Seg([batch(0, 2), batch(2, 3, pid=7, epoch=0, seq=0, txn=True), batch(5, 2, pid=7, epoch=0, seq=3, txn=True)])
    d, _ = partition(tmp_path, s)
    r = triage(str(d))
    f = one(r, "open-transaction")
    assert (f["offset"], f["severity"]) == (s.at(1), "warning") and "offset 2" in f["message"]
    assert r["partitions"][0]["openTransactions"] == 1


def test_committed_transaction_is_closed(tmp_path):
    s = Seg([batch(0, 3, pid=7, epoch=0, seq=0, txn=True), control(3, COMMIT, pid=7, epoch=0)])
    d, log = partition(tmp_path, s)
    r = triage(str(d))
    assert findings(r) == [] and file_of(r, log)["controlBatches"] == {"COMMIT": 1}


def test_transaction_closed_in_a_later_segment(tmp_path):
    d = tmp_path / "orders-0"
    write(d / name(0, ".log"), Seg([batch(0, 3, pid=7, epoch=0, seq=0, txn=True)]).data)
    write(d / name(3, ".log"), Seg([batch(3, 1, pid=8, epoch=0, seq=0), control(4, COMMIT, pid=7, epoch=0)]).data)
    assert findings(triage(str(d))) == []


def test_aborted_transaction_matches_txnindex(tmp_path):
    s = Seg([batch(0, 3, pid=7, epoch=0, seq=0, txn=True), control(3, ABORT, pid=7, epoch=0)])
    d, log = partition(tmp_path, s, extra={name(0, ".txnindex"): txnindex_bytes([(7, 0, 3, 0)])})
    r = triage(str(d))
    a = one(r, "aborted-transaction")
    assert (a["offset"], a["file"], a["severity"]) == (s.at(1), log, "info")
    assert findings(r, "txnindex-mismatch") == [] and r["partitions"][0]["abortedTransactions"] == 1


def test_aborted_transaction_missing_from_txnindex(tmp_path):
    s = Seg([batch(0, 3, pid=7, epoch=0, seq=0, txn=True), control(3, ABORT, pid=7, epoch=0)])
    d, log = partition(tmp_path, s)
    f = one(triage(str(d)), "txnindex-mismatch")
    assert (f["file"], f["offset"]) == (log, s.at(1))


def test_txnindex_entry_without_abort_marker(tmp_path):
    s = Seg([batch(0, 3, pid=7, epoch=0, seq=0, txn=True), control(3, COMMIT, pid=7, epoch=0)])
    d, _ = partition(tmp_path, s, extra={name(0, ".txnindex"): txnindex_bytes([(7, 0, 3, 0), (9, 1, 5, 0)])})
    r = triage(str(d))
    offs = sorted((os.path.basename(f["file"]), f["offset"]) for f in findings(r, "txnindex-mismatch"))
    assert offs == [(name(0, ".txnindex"), 0), (name(0, ".txnindex"), 34)]


def test_txnindex_version_and_invalid_entry(tmp_path):
    d = tmp_path / "orders-0"
    write(d / name(0, ".txnindex"), txnindex_bytes([(7, 0, 3, 0)]) + txnindex_bytes([(7, 9, 4, 0)])
          + txnindex_bytes([(7, 10, 12, 0)], version=3))
    r = triage(str(d))
    assert one(r, "entry-invalid")["offset"] == 34
    assert one(r, "file-version-unknown")["offset"] == 68


# --- leader epochs, producer snapshots -----------------------------------------------------------------

def test_leader_epoch_checkpoint_starts_after_the_batches(tmp_path):
    s = Seg([batch(0, 3, leader_epoch=0), batch(3, 2, leader_epoch=1), batch(5, 4, leader_epoch=1)])
    d, _ = partition(tmp_path, s, extra={"leader-epoch-checkpoint": checkpoint_text([(0, 0), (1, 5)])})
    f = one(triage(str(d)), "leader-epoch-mismatch")
    assert (os.path.basename(f["file"]), f["offset"]) == ("leader-epoch-checkpoint", 8)


def test_leader_epoch_missing_from_checkpoint(tmp_path):
    s = Seg([batch(0, 3, leader_epoch=0), batch(3, 2, leader_epoch=2)])
    d, log = partition(tmp_path, s, extra={"leader-epoch-checkpoint": checkpoint_text([(0, 0), (1, 3)])})
    f = one(triage(str(d)), "leader-epoch-mismatch")
    assert (f["file"], f["offset"]) == (log, s.at(1) + 12)


def test_leader_epoch_going_back_in_the_log(tmp_path):
    s = Seg([batch(0, 3, leader_epoch=4), batch(3, 2, leader_epoch=3)])
    d, log = partition(tmp_path, s)
    f = one(triage(str(d)), "leader-epoch-mismatch")
    assert (f["file"], f["offset"]) == (log, s.at(1) + 12)


def test_leader_epoch_first_entry_may_start_after_the_log_start(tmp_path):
    # the broker moves the first entry up to the log start offset: not a disagreement
    s = Seg([batch(0, 3, leader_epoch=0), batch(3, 2, leader_epoch=1)])
    d, _ = partition(tmp_path, s, extra={"leader-epoch-checkpoint": checkpoint_text([(0, 2), (1, 3)])})
    assert findings(triage(str(d))) == []


def test_leader_epoch_checkpoint_malformed(tmp_path):
    s = three()
    bad = b"0\n3\n0 0\n1 x\n"
    d, _ = partition(tmp_path, s, extra={"leader-epoch-checkpoint": bad})
    r = triage(str(d))
    offs = sorted(f["offset"] for f in findings(r, "file-malformed"))
    assert offs == [2, 8]   # the count line (3 declared, 2 lines) and the bad line


def test_producer_snapshot_mismatch(tmp_path):
    s = Seg([batch(0, 3, pid=5, epoch=0, seq=0), batch(3, 2, pid=6, epoch=0, seq=0)])
    snap = snapshot_bytes([(5, 0, 2, 2, 2, T0, -1, -1), (6, 0, 9, 4, 1, T0, -1, -1)])
    d, _ = partition(tmp_path, s, extra={name(5, ".snapshot"): snap})
    r = triage(str(d))
    f = one(r, "producer-snapshot-mismatch")
    assert (os.path.basename(f["file"]), f["offset"]) == (name(5, ".snapshot"), 10 + 46)


def test_producer_snapshot_crc_version_and_truncation(tmp_path):
    d = tmp_path / "orders-0"
    good = snapshot_bytes([(5, 0, 2, 2, 2, T0, -1, -1), (6, 0, 9, 4, 1, T0, -1, -1)])
    write(d / name(1, ".snapshot"), flip(good, 30))
    write(d / name(2, ".snapshot"), snapshot_bytes([], version=2))
    write(d / name(3, ".snapshot"), good[:-20])
    r = triage(str(d))
    assert one(r, "crc-mismatch", d / name(1, ".snapshot"))["offset"] == 2
    assert one(r, "file-version-unknown", d / name(2, ".snapshot"))["offset"] == 0
    t = one(r, "truncated", d / name(3, ".snapshot"))
    assert (t["offset"], t["length"]) == (56, 26)


# --- log-dir level ------------------------------------------------------------------------------

def test_broker_checkpoint_beyond_log_end_and_topic_id_mismatch(tmp_path):
    ld = tmp_path / "kafka-logs"
    for p in range(3):
        write(ld / f"orders-{p}" / name(0, ".log"), three().data)
        tid = "1qqJytXMSWeR5tv_Z0us9g" if p != 2 else "3leiPE4XR96xYYZ5mFOORw"
        write(ld / f"orders-{p}" / "partition.metadata", f"version: 0\ntopic_id: {tid}\n".encode())
    write(ld / "recovery-point-offset-checkpoint", checkpoint_text([("orders", 0, 9), ("orders", 1, 100)]))
    write(ld / "meta.properties", b"#\nversion=1\nnode.id=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n")
    r = triage(str(ld))
    c = [(os.path.basename(f["file"]), f["offset"]) for f in findings(r, "checkpoint-mismatch")]
    line2 = len("0\n2\norders 0 9\n")
    assert sorted(c) == [("partition.metadata", 0), ("recovery-point-offset-checkpoint", line2)]
    assert r["totals"]["partitions"] == 3 and r["verdict"] == "warnings"


def segment_object(report):
    return next(f for f in report["files"] if f["kind"] == "segment")


def test_valid_bytes_is_where_kafka_recovery_truncates(tmp_path):
    # Kafka's log recovery keeps a segment up to its first invalid batch (a CRC failure, a cut batch,
    # garbage, a zero tail) and truncates the rest, intact batches after it included
    s = three()
    cases = {"crc": (flip(s.data, s.at(1) + 70), s.at(1)),
             "cut": (s.data[:s.at(2) + 30], s.at(2)),
             "cut in the base offset's zero bytes": (s.data[:s.at(2) + 3], s.at(2)),
             "zeros": (s.data + bytes(500), len(s.data)),
             "garbage": (s.data[:s.at(2)] + b"\x13" * 90 + s.data[s.at(2):], s.at(2)),
             "intact": (s.data, len(s.data))}
    for case, (data, valid) in cases.items():
        d, _ = partition(tmp_path / case, s, data=data)
        assert segment_object(triage(str(d)))["validBytes"] == valid, case


def test_an_empty_cleaner_checkpoint_is_clean(tmp_path):
    ld = tmp_path / "kafka-logs"
    write(ld / "orders-0" / name(0, ".log"), three().data)
    write(ld / "cleaner-offset-checkpoint", b"")
    write(ld / "recovery-point-offset-checkpoint", checkpoint_text([("orders", 0, 9)]))
    r = triage(str(ld))
    assert findings(r) == [] and r["verdict"] == "clean"


def test_meta_properties_and_quorum_state_findings(tmp_path):
    ld = tmp_path / "logs"
    write(ld / "meta.properties", b"version=3\nnode.id=1\n")
    write(ld / "__cluster_metadata-0" / "quorum-state", b'{"leaderId": 1, "data_version": 0')
    r = triage(str(ld))
    assert one(r, "file-version-unknown")["offset"] == 0
    assert one(r, "file-malformed")["file"].endswith("quorum-state")


def test_kraft_snapshot_without_footer(tmp_path):
    s = Seg([batch(0, 3), batch(3, 2)])
    d = tmp_path / "__cluster_metadata-0"
    write(d / "00000000000000000005-0000000001.checkpoint", s.data)
    r = triage(str(d))
    offs = sorted(f["offset"] for f in findings(r, "snapshot-incomplete"))
    assert offs == [0, s.at(1)]


# --- the report, the command ----------------------------------------------------------------------

def test_finding_shape_is_the_one_of_batches_json(tmp_path):
    s = three()
    d, log = partition(tmp_path, s, data=flip(s.data, s.at(1) + 70))
    r = triage(str(d))
    out = runner.invoke(app, ["batches", "--json", log]).output
    batch_findings = [f for line in out.splitlines() for f in json.loads(line)["findings"]]
    tri = [{k: v for k, v in f.items() if k != "file"} for f in findings(r, "crc-mismatch")]
    assert tri == [f for f in batch_findings if f["code"] == "crc-mismatch"]


def test_cli_triage_json_and_exit_codes(tmp_path):
    s = three()
    d, _ = partition(tmp_path, s)
    ok = runner.invoke(app, ["triage", "--json", str(d)])
    assert ok.exit_code == 0
    rep = json.loads(ok.output)
    assert rep["type"] == "triage" and rep["verdict"] == "clean"
    write(d / name(0, ".log"), flip(s.data, 70))
    bad = runner.invoke(app, ["triage", str(d)])
    assert bad.exit_code == 1 and "crc-mismatch" in bad.output and "verdict: errors" in bad.output
    # warnings only: exit 1 too (the one exit rule: 0 only when info findings alone are left)
    write(d / name(0, ".log"), Seg([batch(0, 3, pid=5, epoch=0, seq=0), batch(3, 2, pid=5, epoch=0, seq=9)]).data)
    warn = runner.invoke(app, ["triage", str(d)])
    assert warn.exit_code == 1 and "verdict: warnings" in warn.output
    # info findings only (an offset gap: compaction): exit 0
    write(d / name(0, ".log"), Seg([batch(0, 3), batch(5, 2)]).data)
    info = runner.invoke(app, ["triage", "--json", str(d)])
    assert info.exit_code == 0 and json.loads(info.output)["findingCounts"] == {"offset-gap": 1}


def test_cli_triage_missing_path_is_exit_2_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "kafkadump", "triage", "--json", str(tmp_path / "nope")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_triage_of_a_single_segment_brings_its_indexes(tmp_path):
    s = three()
    d, log = partition(tmp_path, s, index=index_bytes([(4, s.at(1)), (8, s.at(2) + 1)]))
    r = triage(log)
    assert [os.path.basename(f["file"]) for f in r["files"]] == [name(0, ".log"), name(0, ".index")]
    assert one(r, "index-entry-mismatch")["offset"] == 8


def test_parallel_and_serial_give_the_same_report(tmp_path, monkeypatch):
    ld = tmp_path / "logs"
    for p in range(4):
        s = Seg([batch(0, 3, pid=5, epoch=0, seq=0), batch(3, 2, pid=5, epoch=0, seq=3 + p)])
        write(ld / f"t-{p}" / name(0, ".log"), s.data if p != 2 else flip(s.data, 70))
        write(ld / f"t-{p}" / name(0, ".index"), index_bytes([(4, s.at(1))]))
    monkeypatch.setattr(triage_mod, "PARALLEL_MIN_BYTES", 0)
    a = triage_report(Triage(str(ld), jobs=1).run())
    b = triage_report(Triage(str(ld), jobs=2).run())
    for rep in (a, b):
        rep.pop("elapsedSeconds")
        rep.pop("startedAt")
    assert a == b and a["verdict"] == "errors"
    # t-0 continues, t-1 and t-3 skip sequences, t-2's first batch is damaged (nothing to compare)
    assert sorted((os.path.basename(os.path.dirname(f["file"])), f["code"]) for f in findings(a)
                  if f["severity"] != "info") == \
        [("t-1", "sequence-gap"), ("t-2", "crc-mismatch"), ("t-3", "sequence-gap")]


def test_findings_are_capped_per_code_but_counted(tmp_path):
    s = Seg([batch(i * 10, 1) for i in range(30)])
    d, log = partition(tmp_path, s)
    r = triage_report(Triage(str(d), max_findings=5).run())
    f = file_of(r, log)
    assert f["findingCounts"]["offset-gap"] == 29 and len(f["findings"]) == 5 and f["findingsOmitted"] == 24


def test_every_new_code_has_severity_and_description():
    for v in MUTATION_CODES:
        c = Code(v)
        assert c in SEVERITY and DESCRIPTION[c]
    info = {c.value for c in Code if SEVERITY[c].value == "info"}
    assert {"offset-gap", "aborted-transaction", "pending-file", "orphan-file"} <= info
