"""kafkadump txn and kafkadump offsets: transactions across partitions, offsets and lag, offline.

The log dirs are built by ``forensics_builders`` (kafka-python's batch builder, the schema-driven
``internal_encoder`` for the coordinators' records); every expected value below is the builder's
bookkeeping or a fact verified by hand in the shared corpus.
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import need_corpus
from forensics_builders import (
    MINUTE,
    commit,
    java_partition,
    kv_batch,
    make_offsets_logdir,
    make_txn_logdir,
    txn_record,
)
from logdir_helpers import T0, Seg, batch, control, findings, name, write
from typer.testing import CliRunner

from kafkadump.cli import app
from kafkadump.decoders.internal_topics.coordinator import coordinator_partition
from kafkadump.decoders.internal_topics.coordinator import java_string_hash
from kafkadump.objects.logdir_objects import triage

runner = CliRunner()

# the finding codes whose mutation tests live in this file (read by test_mutations.py)
MUTATION_CODES = {"hanging-transaction", "committed-beyond-log-end"}

ABORT_CMD = "kafka-transactions.sh --bootstrap-server {b} abort --topic orders --partition {p} --start-offset {o}"


def lines(result) -> list[dict]:
    return [json.loads(x) for x in result.stdout.splitlines() if x.strip()]


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


# --- the coordinator partition ------------------------------------------------------------------------

def test_java_string_hash_known_values():
    # facts of Java's String.hashCode
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -(1 << 31)


@pytest.mark.parametrize("key", ["", "hello", "polygenelubricants", "tx-commit", "default_", "billing", "é€😀",
                                 "connect-cluster", "x" * 300])
@pytest.mark.parametrize("n", [1, 7, 50, 51])
def test_coordinator_partition_matches_the_polynomial(key, n):
    assert coordinator_partition(key, n) == java_partition(key, n)


def test_coordinator_partition_of_min_value_is_zero():
    assert coordinator_partition("polygenelubricants", 50) == 0


# --- txn ------------------------------------------------------------------------------------------------

def _partition(d, topic, part, first, last, marker, marker_offset, marker_epoch, first_ts, last_ts, state,
               lso=None, log_end=None, reason=None):
    return {"topic": topic, "partition": part, "path": os.path.join(d, f"{topic}-{part}"), "firstOffset": first,
            "lastOffset": last, "batches": 1, "marker": marker, "markerOffset": marker_offset,
            "markerEpoch": marker_epoch, "firstTimestamp": first_ts, "lastTimestamp": last_ts, "state": state,
            "reason": reason, "lastStableOffset": lso, "logEndOffset": log_end}


def _coordinator(state, pid, epoch, parts, timeout, start, update, offset, part, previous=-1):
    return {"state": state, "timeoutMs": timeout, "partitions": [{"topic": t, "partition": p} for t, p in parts],
            "producerId": pid, "producerEpoch": epoch, "previousProducerId": previous, "nextProducerId": -1,
            "startTimestamp": start, "lastUpdateTimestamp": update, "recordOffset": offset, "statePartition": part}


@pytest.fixture(scope="module")
def txn_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("txn") / "kafka-logs"
    facts = make_txn_logdir(d)
    return str(d), facts


def test_txn_objects_every_field(txn_dir):
    d, facts = txn_dir
    r = run("txn", "--json", d)
    assert r.exit_code == 1, r.output
    objs = lines(r)
    txns, summary = objs[:-1], objs[-1]
    by = {(t["producerId"], t["producerEpoch"]): t for t in txns}
    assert [(t["producerId"], t["state"]) for t in txns] == [(400, "hanging"), (500, "hanging"), (300, "ongoing"),
                                                             (100, "committed"), (200, "aborted")]
    hang_reason = "the coordinator's latest record says CompleteCommit: the transaction was completed"
    assert by[(400, 2)] == {
        "type": "transaction", "transactionalId": "tx-hang", "producerId": 400, "producerEpoch": 2, "state": "hanging",
        "partitions": [
            _partition(d, "orders", 0, 7, 8, None, None, None, T0 + 2000, T0 + 2001, "hanging", 7, 10, hang_reason),
            _partition(d, "orders", 1, 3, 3, "COMMIT", 4, 3, T0 + 2001, T0 + 2100, "committed", None, 11)],
        "firstTimestamp": T0 + 2000, "lastTimestamp": T0 + 2100,
        "coordinator": _coordinator("CompleteCommit", 400, 3, [], 60_000, T0 + 1990, T0 + 2090, 1,
                                    java_partition("tx-hang"), previous=400),
        "coordinatorPartition": java_partition("tx-hang"),
        "abortCommands": [ABORT_CMD.format(b="<host:port>", p=0, o=7)],
    }
    assert by[(500, 0)] == {
        "type": "transaction", "transactionalId": None, "producerId": 500, "producerEpoch": 0, "state": "hanging",
        "partitions": [_partition(d, "orders", 1, 7, 7, None, None, None, T0 + 3000, T0 + 3000, "hanging", 7, 11,
                                  "no coordinator record, and the data's last write is 1200000 ms older than the "
                                  "partition's newest timestamp (beyond the default timeout of 900000 ms)")],
        "firstTimestamp": T0 + 3000, "lastTimestamp": T0 + 3000, "coordinator": None, "coordinatorPartition": None,
        "abortCommands": [ABORT_CMD.format(b="<host:port>", p=1, o=7)],
    }
    t10 = T0 + 10 * MINUTE
    assert by[(300, 1)] == {
        "type": "transaction", "transactionalId": "tx-ongoing", "producerId": 300, "producerEpoch": 1,
        "state": "ongoing",
        "partitions": [_partition(d, "orders", 1, 8, 9, None, None, None, t10, t10 + 1, "ongoing", 7, 11,
                                  "the coordinator lists it as Ongoing, within its timeout")],
        "firstTimestamp": t10, "lastTimestamp": t10 + 1,
        "coordinator": _coordinator("Ongoing", 300, 1, [("orders", 1)], 15 * MINUTE, t10 - 5, t10 - 5, 0,
                                    java_partition("tx-ongoing")),
        "coordinatorPartition": java_partition("tx-ongoing"), "abortCommands": [],
    }
    assert by[(100, 0)] == {
        "type": "transaction", "transactionalId": "tx-commit", "producerId": 100, "producerEpoch": 0,
        "state": "committed",
        "partitions": [_partition(d, "orders", 0, 0, 2, "COMMIT", 3, 0, T0, T0 + 100, "committed", None, 10),
                       _partition(d, "orders", 1, 0, 1, "COMMIT", 2, 0, T0 + 5, T0 + 100, "committed", None, 11)],
        "firstTimestamp": T0, "lastTimestamp": T0 + 100,
        "coordinator": _coordinator("CompleteCommit", 100, 0, [], 60_000, T0, T0 + 90, 1,
                                    java_partition("tx-commit")),
        "coordinatorPartition": java_partition("tx-commit"), "abortCommands": [],
    }
    assert by[(200, 3)] == {
        "type": "transaction", "transactionalId": "tx-abort", "producerId": 200, "producerEpoch": 3,
        "state": "aborted",
        "partitions": [_partition(d, "orders", 0, 4, 5, "ABORT", 6, 3, T0 + 1000, T0 + 1100, "aborted", None, 10)],
        "firstTimestamp": T0 + 1000, "lastTimestamp": T0 + 1100,
        "coordinator": _coordinator("CompleteAbort", 200, 3, [], 30_000, T0, T0 + 1090, 0,
                                    java_partition("tx-abort")),
        "coordinatorPartition": java_partition("tx-abort"), "abortCommands": [],
    }
    assert summary == {
        "type": "transactions-summary", "transactions": 5, "committed": 1, "aborted": 1, "ongoing": 1, "hanging": 2,
        "notListed": 0, "partitions": 2 + len(facts["statePartitions"]),
        "statePartitions": sorted(facts["statePartitions"]), "coordinators": 4,
        "stuckPartitions": [
            {"topic": "orders", "partition": 0, "path": os.path.join(d, "orders-0"), "lastStableOffset": 7,
             "logEndOffset": 10},
            {"topic": "orders", "partition": 1, "path": os.path.join(d, "orders-1"), "lastStableOffset": 7,
             "logEndOffset": 11}],
        "lookups": [], "findings": [],
    }


def test_txn_table_says_what_to_do(txn_dir):
    d, _ = txn_dir
    r = run("txn", "--bootstrap-server", "broker-1:9092", d)
    assert r.exit_code == 1
    out = r.stdout
    assert "end it: " + ABORT_CMD.format(b="broker-1:9092", p=0, o=7) in out
    assert "end it: " + ABORT_CMD.format(b="broker-1:9092", p=1, o=7) in out
    assert f"transactional id 'tx-hang' lives in __transaction_state-{java_partition('tx-hang')}" in out
    assert "stuck: orders-0 at last stable offset 7 (log end 10)" in out
    assert "transactions: 5 (1 committed, 1 aborted, 1 ongoing, 2 hanging)" in out
    assert out.splitlines()[1].startswith("hanging")


def test_txn_locates_transactional_ids(txn_dir):
    d, facts = txn_dir
    objs = lines(run("txn", "--json", "--transactional-id", "tx-abort", "--transactional-id", "ghost", d))
    assert objs[-1]["lookups"] == [
        {"transactionalId": "tx-abort", "coordinatorPartition": java_partition("tx-abort"), "onDisk": True,
         "known": True},
        {"transactionalId": "ghost", "coordinatorPartition": java_partition("ghost"),
         "onDisk": False, "known": False}]
    assert java_partition("ghost") not in facts["statePartitions"]
    out = run("txn", "--transactional-id", "ghost", d).stdout
    assert f"transactional id 'ghost' lives in __transaction_state-{java_partition('ghost')} (not among " \
           "the inputs: collect it)" in out


def test_offsets_locates_groups(offsets_dir):
    d, placed = offsets_dir
    objs = lines(run("offsets", "--json", "--group", "audit", "--group", "nobody", d))
    assert [o["group"] for o in objs if o["type"] == "group-offset"] == ["audit"]
    assert objs[-1]["lookups"] == [
        {"group": "audit", "coordinatorPartition": placed["audit"], "onDisk": True, "known": True},
        {"group": "nobody", "coordinatorPartition": java_partition("nobody"), "onDisk": False, "known": False}]


def test_txn_state_filter_lists_only_those(txn_dir):
    d, _ = txn_dir
    objs = lines(run("txn", "--json", "--state", "hanging", "--state", "ongoing", d))
    assert [o["producerId"] for o in objs[:-1]] == [400, 500, 300]
    assert objs[-1]["transactions"] == 5 and objs[-1]["committed"] == 1
    assert run("txn", "--state", "stuck", d).exit_code == 2


def test_txn_partition_count_option_moves_the_coordinator_partition(txn_dir):
    d, _ = txn_dir
    objs = lines(run("txn", "--json", "--txn-partitions", "7", d))
    tx = next(o for o in objs if o.get("transactionalId") == "tx-commit")
    assert tx["coordinatorPartition"] == java_partition("tx-commit", 7)
    assert tx["coordinator"]["statePartition"] == java_partition("tx-commit")   # where it was read


def test_txn_without_the_coordinator_judges_by_the_timeout(tmp_path):
    make_txn_logdir(tmp_path, coordinator=False)
    r = run("txn", "--json", tmp_path)
    objs = lines(r)
    states = {(o["producerId"], o["producerEpoch"]): o["state"] for o in objs[:-1]}
    # tx-hang's open data in orders-0 is 500 ms older than orders-0's newest batch: within 15 minutes
    assert states == {(400, 2): "ongoing", (500, 0): "hanging", (300, 1): "ongoing", (100, 0): "committed",
                      (200, 3): "aborted"}
    assert all(o["transactionalId"] is None and o["coordinator"] is None for o in objs[:-1])
    assert objs[-1]["statePartitions"] == [] and objs[-1]["coordinators"] == 0
    assert r.exit_code == 1
    assert "collect the __transaction_state partitions" in run("txn", tmp_path).stdout


def test_txn_clean_log_dir_exits_0(tmp_path):
    s = Seg([batch(0, 2, pid=9, epoch=0, seq=0, txn=True), control(2, 1, pid=9, epoch=0), batch(3, 1)])
    write(tmp_path / "t-0" / name(0, ".log"), s.data)
    r = run("txn", "--json", tmp_path)
    assert r.exit_code == 0
    assert [o["state"] for o in lines(r)[:-1]] == ["committed"]


def test_txn_transactions_v1_reuse_an_epoch(tmp_path):
    """Transactions v1 keep one epoch for many transactions: each marker closes one; two partitions'
    pieces are one transaction only when their times overlap."""
    s0 = Seg([batch(0, 1, pid=9, epoch=4, seq=0, txn=True, ts=T0), control(1, 1, pid=9, epoch=4, ts=T0 + 10),
              batch(2, 1, pid=9, epoch=4, seq=1, txn=True, ts=T0 + 100), control(3, 1, pid=9, epoch=4, ts=T0 + 110)])
    s1 = Seg([batch(0, 1, pid=9, epoch=4, seq=0, txn=True, ts=T0 + 1), control(1, 1, pid=9, epoch=4, ts=T0 + 10)])
    write(tmp_path / "t-0" / name(0, ".log"), s0.data)
    write(tmp_path / "t-1" / name(0, ".log"), s1.data)
    txns = lines(run("txn", "--json", tmp_path))[:-1]
    assert [[(p["partition"], p["firstOffset"], p["markerOffset"]) for p in t["partitions"]] for t in txns] == \
        [[(0, 0, 1), (1, 0, 1)], [(0, 2, 3)]]


def test_txn_spans_cross_segments(tmp_path):
    """Data in one segment, its COMMIT marker in the next: one closed transaction."""
    a = Seg([batch(0, 2, pid=9, epoch=0, seq=0, txn=True, ts=T0)])
    b = Seg([batch(2, 1, pid=9, epoch=0, seq=2, txn=True, ts=T0 + 5), control(3, 1, pid=9, epoch=0, ts=T0 + 9)])
    write(tmp_path / "t-0" / name(0, ".log"), a.data)
    write(tmp_path / "t-0" / name(2, ".log"), b.data)
    (t,) = lines(run("txn", "--json", tmp_path))[:-1]
    p = t["partitions"][0]
    assert (t["state"], p["firstOffset"], p["lastOffset"], p["batches"], p["markerOffset"], p["lastTimestamp"]) == \
        ("committed", 0, 2, 2, 3, T0 + 9)


def test_txn_usage_and_io_errors(tmp_path):
    r = run("txn", tmp_path / "nope")
    assert r.exit_code == 2


# --- triage reports hanging transactions ---------------------------------------------------------------------

def test_triage_counts_hanging_transactions_in_summary_and_verdict(txn_dir):
    d, facts = txn_dir
    rep = triage(d)
    assert rep["totals"]["hangingTransactions"] == 2
    parts = {p["topic"] + "-" + str(p["partition"]): p for p in rep["partitions"]}
    assert parts["orders-0"]["hangingTransactions"] == 1 and parts["orders-1"]["hangingTransactions"] == 1
    assert parts["orders-0"]["verdict"] == "errors" and rep["verdict"] == "errors"
    hung = findings(rep, "hanging-transaction")
    assert sorted((os.path.basename(os.path.dirname(f["file"])), f["offset"], f["severity"]) for f in hung) == [
        ("orders-0", facts["orders-0"].at(4), "error"), ("orders-1", facts["orders-1"].at(5), "error")]
    assert ABORT_CMD.format(b="<host:port>", p=0, o=7) in next(f for f in hung if "orders-0" in f["file"])["message"]
    r = run("triage", d)
    assert r.exit_code == 1
    assert "hanging transactions: 2 (kafkadump txn: how to end them)" in r.stdout.splitlines()[-1]


# --- mutation: the same log dir, one byte or one record changed ----------------------------------------------

def test_mutation_hanging_transaction(tmp_path):
    """Clean: a COMMIT closes the data.  Mutation: the marker's producer id changed, so no marker
    closes the data, and the coordinator says CompleteCommit: hanging, at the data batch."""
    good = Seg([batch(0, 2, pid=9, epoch=0, seq=0, txn=True), control(2, 1, pid=9, epoch=0)])
    bad = Seg([batch(0, 2, pid=9, epoch=0, seq=0, txn=True), control(2, 1, pid=10, epoch=0)])
    rec = kv_batch(0, [txn_record("t", "CompleteCommit", 9, 0)])
    for root, seg in (("good", good), ("bad", bad)):
        write(tmp_path / root / "t-0" / name(0, ".log"), seg.data)
        write(tmp_path / root / f"__transaction_state-{java_partition('t')}" / name(0, ".log"), Seg([rec]).data)
    assert findings(triage(str(tmp_path / "good")), "hanging-transaction") == []
    (f,) = findings(triage(str(tmp_path / "bad")), "hanging-transaction")
    assert f["offset"] == bad.at(0) and "transactional id 't'" in f["message"]
    assert run("txn", tmp_path / "good").exit_code == 0 and run("txn", tmp_path / "bad").exit_code == 1


def test_mutation_committed_beyond_log_end(tmp_path):
    for root, off in (("good", 3), ("bad", 30)):
        write(tmp_path / root / "t-0" / name(0, ".log"), Seg([batch(0, 5)]).data)
        write(tmp_path / root / f"__consumer_offsets-{java_partition('g')}" / name(0, ".log"),
              Seg([kv_batch(0, [commit("g", "t", 0, 7), commit("g", "t", 0, off)])]).data)
    assert run("offsets", tmp_path / "good").exit_code == 0
    r = run("offsets", "--json", tmp_path / "bad")
    assert r.exit_code == 1
    (g,) = [o for o in lines(r) if o["type"] == "group-offset"]
    (f,) = g["findings"]
    assert (f["code"], f["severity"], f["offset"], g["lag"]) == ("committed-beyond-log-end", "warning", 0, -25)


# --- offsets ----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def offsets_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("off") / "kafka-logs"
    placed = make_offsets_logdir(d)
    return str(d), placed


def _partition_offsets(d, topic, part, earliest, log_end, hw, max_ts, max_ts_off, for_time, first, lso, segs=1):
    return {"type": "partition-offsets", "topic": topic, "partition": part, "path": os.path.join(d, f"{topic}-{part}"),
            "earliest": earliest, "logEnd": log_end, "highWatermark": hw, "maxTimestamp": max_ts,
            "maxTimestampOffset": max_ts_off, "offsetForTime": for_time, "firstOffset": first,
            "logStartOffset": lso, "segments": segs, "findingCounts": {}}


def test_offsets_objects_every_field(offsets_dir):
    d, placed = offsets_dir
    r = run("offsets", "--json", "--time", str(T0 + 2001), d)
    objs = lines(r)
    parts = [o for o in objs if o["type"] == "partition-offsets"]
    assert parts[:2] == [
        # orders-0: offsets 0..9; newest batch (offset 9) at T0+2500; the first record at >= T0+2001 is
        # offset 8 (the batch 7..8 holds T0+2000 and T0+2001); log start offset 4 from the checkpoint
        _partition_offsets(d, "orders", 0, 4, 10, 9, T0 + 2500, 9, 8, 0, 4),
        # orders-1: offsets 0..10; newest batch (10) at T0+3000+20min; first at >= T0+2001: offset 3
        _partition_offsets(d, "orders", 1, 0, 11, 11, T0 + 3000 + 20 * MINUTE, 10, 3, 0, 0),
    ]
    # __consumer_offsets come last; their records are at T0+50, +51, ...
    assert [o["topic"] for o in parts[2:]] == ["__consumer_offsets"] * 2
    groups = [o for o in objs if o["type"] == "group-offset"]
    cp = {g: java_partition(g) for g in ("billing", "audit")}
    base = {"leaderEpoch": 5, "expireTimestamp": None, "deleted": False}
    assert groups == [
        {"type": "group-offset", "group": "audit", "topic": "orders", "partition": 1, "committed": 15,
         "commitTimestamp": T0 + 40, "logEnd": 11, "lag": -4, **base, "leaderEpoch": None, "metadata": "m",
         "expireTimestamp": -1, "recordOffset": 0,
         "file": os.path.join(d, f"__consumer_offsets-{placed['audit']}", name(0, ".log")),
         "offsetsPartition": placed["audit"], "coordinatorPartition": cp["audit"],
         "findings": groups[0]["findings"]},
        {"type": "group-offset", "group": "billing", "topic": "orders", "partition": 0, "committed": 8,
         "commitTimestamp": T0 + 20, "logEnd": 10, "lag": 2, **base, "metadata": "", "recordOffset": 3,
         "file": os.path.join(d, f"__consumer_offsets-{placed['billing']}", name(0, ".log")),
         "offsetsPartition": placed["billing"], "coordinatorPartition": cp["billing"], "findings": []},
        {"type": "group-offset", "group": "billing", "topic": "payments", "partition": 0, "committed": 17,
         "commitTimestamp": T0 + 10, "logEnd": None, "lag": None, **base, "metadata": "", "recordOffset": 2,
         "file": os.path.join(d, f"__consumer_offsets-{placed['billing']}", name(0, ".log")),
         "offsetsPartition": placed["billing"], "coordinatorPartition": cp["billing"], "findings": []},
    ]
    assert [f["code"] for f in groups[0]["findings"]] == ["committed-beyond-log-end"]
    assert objs[-1] == {"type": "offsets-summary", "partitions": 4, "groups": 2, "groupOffsets": 3, "commits": 5,
                        "tombstones": 1, "beyondLogEnd": 1, "notTracked": 0, "lookups": [], "findings": []}
    assert r.exit_code == 1


def test_offsets_history_lists_every_commit_and_tombstone(offsets_dir):
    d, _ = offsets_dir
    objs = [o for o in lines(run("offsets", "--json", "--history", "--group", "billing", d))
            if o["type"] == "group-offset"]
    assert [(o["topic"], o["partition"], o["committed"], o["deleted"], o["recordOffset"]) for o in objs] == [
        ("orders", 0, 3, False, 0), ("orders", 1, 4, False, 1), ("payments", 0, 17, False, 2),
        ("orders", 0, 8, False, 3), ("orders", 1, None, True, 4)]
    assert [o["lag"] for o in objs] == [7, 7, None, 2, None]


def test_offsets_table(offsets_dir):
    d, placed = offsets_dir
    r = run("offsets", "--time", "2023-11-14T22:13:22.001Z", d)
    out = r.stdout
    assert r.exit_code == 1
    row = next(x for x in out.splitlines() if x.startswith("billing") and "orders-0" in x)
    assert row.split()[2:5] == ["8", "10", "2"]
    assert "committed-beyond-log-end" in out
    assert f"__consumer_offsets-{placed['billing']}" in row


def test_offsets_bad_time_is_a_usage_error(offsets_dir):
    d, _ = offsets_dir
    assert run("offsets", "--time", "yesterday", d).exit_code == 2


def test_offsets_cap_is_a_finding(tmp_path, monkeypatch):
    from kafkadump.reports import offsets as offsets_lag

    monkeypatch.setattr(offsets_lag, "MAX_GROUP_OFFSETS", 2)
    write(tmp_path / f"__consumer_offsets-{java_partition('g')}" / name(0, ".log"),
          Seg([kv_batch(0, [commit("g", "t", p, 1) for p in range(5)])]).data)
    objs = lines(run("offsets", "--json", tmp_path))
    assert len([o for o in objs if o["type"] == "group-offset"]) == 2
    assert objs[-1]["notTracked"] == 3 and [f["code"] for f in objs[-1]["findings"]] == ["tracking-limit"]


def test_txn_cap_is_a_finding(tmp_path, monkeypatch):
    from kafkadump.reports import transactions

    monkeypatch.setattr(transactions, "MAX_TRANSACTIONS", 1)
    bs = []
    for i in range(3):
        bs += [batch(2 * i, 1, pid=9, epoch=i, seq=0, txn=True, ts=T0 + 10 * i),
               control(2 * i + 1, 1, pid=9, epoch=i, ts=T0 + 10 * i + 1)]
    write(tmp_path / "t-0" / name(0, ".log"), Seg(bs).data)
    r = run("txn", "--json", tmp_path)
    objs = lines(r)
    assert len(objs) == 2 and objs[-1]["notListed"] == 2 and objs[-1]["transactions"] == 3
    assert [f["code"] for f in objs[-1]["findings"]] == ["tracking-limit"] and r.exit_code == 1


# --- the shared corpus ------------------------------------------------------------------------------------------

def test_corpus_ksqldb_transaction():
    d = need_corpus("real/segments/ItumelengMogase+Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data")
    r = run("txn", "--json", d)
    assert r.exit_code == 0, r.output
    (t, summary) = lines(r)
    # verified with `kafkadump records`: producer 0 epoch 0 writes offset 0, COMMIT at 1; __transaction_state-44
    # holds default_ Empty, Ongoing, PrepareCommit, CompleteCommit (offsets 0..3)
    assert (t["transactionalId"], t["producerId"], t["producerEpoch"], t["state"]) == ("default_", 0, 0, "committed")
    p = t["partitions"][0]
    assert (p["topic"], p["partition"], p["firstOffset"], p["lastOffset"], p["marker"], p["markerOffset"]) == \
        ("_confluent-ksql-default__command_topic", 0, 0, 0, "COMMIT", 1)
    assert (t["coordinator"]["state"], t["coordinator"]["timeoutMs"], t["coordinator"]["recordOffset"],
            t["coordinator"]["statePartition"], t["coordinatorPartition"]) == ("CompleteCommit", 60000, 3, 44, 44)
    assert summary["statePartitions"] == [44] and summary["hanging"] == 0


def test_corpus_consumer_offsets_and_lag():
    d = need_corpus("real/segments/xpxwo100+bullShit/tmp/kafka-logs")
    r = run("offsets", "--json", d)
    assert r.exit_code == 0, r.output
    objs = lines(r)
    # magic 1 commits: GroupA committed foo-0 up to 204 (= foo-0's log end: lag 0), in __consumer_offsets-40
    (g,) = [o for o in objs if o["type"] == "group-offset"]
    assert (g["group"], g["topic"], g["partition"], g["committed"], g["logEnd"], g["lag"], g["offsetsPartition"],
            g["coordinatorPartition"]) == ("GroupA", "foo", 0, 204, 204, 0, 40, 40)
    co = next(o for o in objs if o["type"] == "partition-offsets" and o["topic"] == "__consumer_offsets")
    assert (co["earliest"], co["logEnd"], co["highWatermark"]) == (0, 860, 856)
    assert objs[-1]["commits"] == 855


def test_corpus_lag_against_snappy_partitions():
    d = need_corpus("real/segments/ArthurArutunyan04+Backend_labs/kafka-data")
    objs = lines(run("offsets", "--json", d))
    lag = {(o["topic"], o["partition"]): (o["committed"], o["logEnd"], o["lag"]) for o in objs
           if o["type"] == "group-offset"}
    # oms_order_status_changed-1: offsets 21236..24650 on disk (batches); the group committed 21188
    assert lag[("oms_order_status_changed", 1)] == (21188, 24651, 3463)
    assert lag[("oms_order_created", 1)] == (81731, None, None)   # that partition is not in the corpus


@pytest.mark.parametrize("sub", ["real/segments/DonaldY+kafka-2.7.1/kafka-logs", "real/segments/Bheem6005+kafka",
                                 "real/segments/LestFeeD+online-shop-user", "real/segments/MashaKosher+Internship"])
def test_corpus_runs_clean_of_tracebacks(sub):
    d = need_corpus(sub)
    for cmd in ("txn", "offsets"):
        r = run(cmd, "--json", d)
        assert r.exit_code in (0, 1), r.output
        assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
        assert lines(r)[-1]["type"] in ("transactions-summary", "offsets-summary")


# --- the state rules, one log dir each ---------------------------------------------------------------------------

def _one_open(tmp_path, records, *, epoch=0, newest=T0 + 1000):
    """t-0: producer 9's open data at T0 (epoch ``epoch``), then a plain batch at ``newest``; the coordinator
    records of transactional id ``a`` in its partition."""
    write(tmp_path / "t-0" / name(0, ".log"),
          Seg([batch(0, 2, pid=9, epoch=epoch, seq=0, txn=True, ts=T0), batch(2, 1, ts=newest)]).data)
    if records:
        write(tmp_path / f"__transaction_state-{java_partition('a')}" / name(0, ".log"),
              Seg([kv_batch(0, records)]).data)
    (t, summary) = lines(run("txn", "--json", tmp_path))
    return t, summary


@pytest.mark.parametrize("case, records, epoch, newest, state, reason", [
    ("not listed", [txn_record("a", "Ongoing", 9, 0, [("t", [1])])], 0, T0 + 1000, "hanging",
     "the coordinator's Ongoing transaction does not list t-0"),
    # Kafka's find-hanging reports only what the coordinator does not list: a timed-out transaction it lists
    # is aborted by the coordinator itself, and a later epoch's transaction listing the partition ends its data
    ("timed out", [txn_record("a", "Ongoing", 9, 0, [("t", [0])], timeout=60_000)], 0, T0 + 120_000, "ongoing",
     "the coordinator lists it as Ongoing, and the data is 120000 ms older than the partition's newest timestamp "
     "(timeout 60000 ms): timed out, the coordinator aborts it itself"),
    ("tombstone", [txn_record("a", "Ongoing", 9, 0, [("t", [0])]), (txn_record("a", "Empty", 9, 0)[0], None)],
     0, T0 + 1000, "hanging", "the coordinator deleted the transactional id (a tombstone: it expired)"),
    ("moved producer id", [txn_record("a", "Ongoing", 10, 0, [("t", [0])], version=1, previous=9)], 0, T0 + 1000,
     "hanging", "the coordinator moved the transactional id to producer id 10"),
    ("later epoch", [txn_record("a", "Ongoing", 9, 2, [("t", [0])])], 1, T0 + 1000, "ongoing",
     "the coordinator's Ongoing transaction of a later epoch (2 > 1) lists it: that transaction's marker ends this "
     "data too"),
    ("later epoch, not listed", [txn_record("a", "Ongoing", 9, 2, [("t", [1])])], 1, T0 + 1000, "hanging",
     "the coordinator's Ongoing transaction does not list t-0"),
    ("no record, last write old", [], 0, T0 + 15 * MINUTE + 2, "hanging",
     "no coordinator record, and the data's last write is 900001 ms older than the partition's newest timestamp "
     "(beyond the default timeout of 900000 ms)"),
    ("empty", [txn_record("a", "Empty", 9, 0)], 0, T0 + 1000, "hanging",
     "the coordinator's latest record says Empty: the transaction was completed"),
    ("markers in flight", [txn_record("a", "PrepareCommit", 9, 0, [("t", [0])])], 0, T0 + 1000, "ongoing",
     "the coordinator lists it as PrepareCommit, within its timeout"),
    ("no record, young", [], 0, T0 + 15 * MINUTE, "ongoing", "no coordinator record; within the default timeout"),
])
def test_txn_state_rules(tmp_path, case, records, epoch, newest, state, reason):
    t, summary = _one_open(tmp_path, records, epoch=epoch, newest=newest)
    (p,) = t["partitions"]
    assert (t["state"], p["state"], p["reason"], p["lastStableOffset"], p["logEndOffset"]) == (state, state, reason, 0, 3)
    assert t["transactionalId"] == ("a" if records else None)
    assert summary["hanging"] == (state == "hanging")


# --- bad bytes never end the commands --------------------------------------------------------------------------

def test_flipped_bytes_never_raise(tmp_path):
    """Every byte of the scenario's segments in turn (a sample of positions) flipped: txn and offsets
    answer (exit 0, 1 or 2), never a traceback."""
    import random

    d = tmp_path / "kafka-logs"
    make_offsets_logdir(d)
    make_txn_logdir(tmp_path / "txn")
    segs = sorted(str(p) for p in tmp_path.rglob("*.log"))
    rnd = random.Random(16)
    for i in range(12):
        path = segs[i % len(segs)]
        data = bytearray(open(path, "rb").read())
        pos = rnd.randrange(len(data))
        data[pos] ^= 1 << rnd.randrange(8)
        with open(path, "wb") as f:
            f.write(data)
        for cmd in ("txn", "offsets"):
            r = run(cmd, "--json", tmp_path)
            assert r.exit_code in (0, 1, 2) and isinstance(r.exception, (SystemExit, type(None))), (path, pos, r.output)
            assert lines(r)[-1]["type"] in ("transactions-summary", "offsets-summary")


def test_ids_from_the_input_reach_the_terminal_escaped(tmp_path):
    tid = "evil\x1b[2J\u202eid"
    write(tmp_path / "t-0" / name(0, ".log"), Seg([batch(0, 2, pid=9, epoch=0, seq=0, txn=True)]).data)
    write(tmp_path / f"__transaction_state-{java_partition(tid)}" / name(0, ".log"),
          Seg([kv_batch(0, [txn_record(tid, "CompleteCommit", 9, 0)])]).data)
    write(tmp_path / f"__consumer_offsets-{java_partition(tid)}" / name(0, ".log"),
          Seg([kv_batch(0, [commit(tid, "t", 0, 1)])]).data)
    for cmd in ("txn", "offsets"):
        out = run(cmd, tmp_path).stdout
        assert "\x1b" not in out and "\u202e" not in out and "evil\\x1b[2J\\u202eid" in out
    assert lines(run("txn", "--json", tmp_path))[0]["transactionalId"] == tid


def test_txn_says_when_producers_were_not_followed(tmp_path, monkeypatch):
    from kafkadump.reports import partition
    from kafkadump.decoders.logfiles import trackers

    monkeypatch.setattr(trackers, "MAX_PRODUCERS", 2)
    monkeypatch.setattr(partition, "MAX_PRODUCERS", 2)
    s = Seg([batch(i, 1, pid=10 + i, epoch=0, seq=0, txn=True) for i in range(4)])
    write(tmp_path / "t-0" / name(0, ".log"), s.data)
    r = run("txn", "--json", tmp_path)
    objs = lines(r)
    assert [o["producerId"] for o in objs[:-1]] == [10, 11]
    (f,) = objs[-1]["findings"]
    assert f["code"] == "tracking-limit" and f["offset"] == s.at(2) and "not listed" in f["message"]
    assert r.exit_code == 1


def test_offsets_log_append_time_batches_answer_their_first_offset(tmp_path):
    """LogAppendTime: every record has the batch's time, so ListOffsets answers the batch's first offset."""
    import struct

    from logdir_helpers import fix_crc

    b = bytearray(batch(5, 3, ts=T0).data)
    (attrs,) = struct.unpack_from(">h", b, 21)
    struct.pack_into(">h", b, 21, attrs | 0x08)
    fix_crc(b, 0)
    write(tmp_path / "t-0" / name(5, ".log"), bytes(b))
    (p, _) = lines(run("offsets", "--json", "--time", str(T0 + 1), tmp_path))
    assert (p["earliest"], p["logEnd"], p["maxTimestamp"], p["maxTimestampOffset"], p["offsetForTime"]) == \
        (5, 8, T0 + 2, 5, 5)


# brokers placed these ids: the directory each one's records are in (read with `kafkadump records`)
REAL_PLACEMENTS = [("console-consumer-55231", 17), ("console-consumer-70596", 28), ("console-consumer-10731", 33),
                   ("console-consumer-52588", 39), ("console-consumer-65070", 39), ("console-consumer-1152", 8),
                   ("GroupA", 40), ("universe-labs-oms-consumer", 19), ("schema-registry", 29), ("default_", 44)]


@pytest.mark.parametrize("key, partition", REAL_PLACEMENTS)
def test_coordinator_partition_agrees_with_real_brokers(key, partition):
    need_corpus("real/segments")
    assert coordinator_partition(key) == partition


def test_corpus_tombstone_deletes_a_real_commit():
    d = need_corpus("real/segments/DonaldY+kafka-2.7.1/kafka-logs")
    latest = [o for o in lines(run("offsets", "--json", d)) if o["type"] == "group-offset"]
    assert latest == []   # console-consumer-65070's only commit was deleted at offset 18
    hist = [o for o in lines(run("offsets", "--json", "--history", d)) if o["type"] == "group-offset"]
    assert [(o["group"], o["topic"], o["partition"], o["committed"], o["deleted"], o["recordOffset"],
             os.path.basename(o["file"]), o["offsetsPartition"], o["coordinatorPartition"]) for o in hist] == [
        ("console-consumer-65070", "test_topic_0603", 0, 9, False, 16, name(0, ".log"), 39, 39),
        ("console-consumer-65070", "test_topic_0603", 0, None, True, 18, name(18, ".log"), 39, 39)]
    assert hist[0]["commitTimestamp"] == 1685814551579


def test_open_pieces_are_matched_against_a_window_not_every_transaction(tmp_path, monkeypatch):
    """Work, not time: 400 closed transactions of one producer and epoch, open data in 20 partitions:
    each open piece is compared with at most OVERLAP_WINDOW closed transactions."""
    from kafkadump.reports import transactions

    calls = []
    real = transactions._overlaps
    monkeypatch.setattr(transactions, "_overlaps", lambda t, s: calls.append(1) or real(t, s))
    bs = []
    for i in range(400):
        bs += [batch(2 * i, 1, pid=9, epoch=0, seq=i, txn=True, ts=T0 + 10 * i),
               control(2 * i + 1, 1, pid=9, epoch=0, ts=T0 + 10 * i + 1)]
    write(tmp_path / "t-0" / name(0, ".log"), Seg(bs).data)
    for p in range(1, 21):
        write(tmp_path / f"t-{p}" / name(0, ".log"), Seg([batch(0, 1, pid=9, epoch=0, seq=0, txn=True,
                                                                ts=T0 + 10 * 400 + p)]).data)
    objs = lines(run("txn", "--json", tmp_path))
    assert objs[-1]["committed"] == 400 and objs[-1]["ongoing"] == 1
    (open_txn,) = [o for o in objs[:-1] if o["state"] == "ongoing"]
    assert len(open_txn["partitions"]) == 20
    assert len(calls) <= 400 + 20 * transactions.OVERLAP_WINDOW


def test_offsets_earliest_of_a_compacted_head_is_the_segment_base(tmp_path):
    """Compaction empties the head of segment 0 without moving the log start offset, and the broker
    checkpoints a log start offset only when it is past the first segment's base offset: ListOffsets
    EARLIEST answers the segment's base offset (0), not the first batch left in it (as Kafka 4.1's
    GetOffsetShell answered on a compacted topic, tests/test_broker_forensics.py)."""
    write(tmp_path / "t-0" / name(0, ".log"), Seg([batch(180, 3, ts=T0), batch(183, 2, ts=T0 + 1)]).data)
    write(tmp_path / "t-0" / name(185, ".log"), Seg([batch(185, 2, ts=T0 + 2)]).data)
    (p, _) = lines(run("offsets", "--json", tmp_path))
    assert (p["earliest"], p["firstOffset"], p["logEnd"], p["logStartOffset"]) == (0, 180, 187, None)


def test_offsets_earliest_honours_the_log_start_checkpoint_past_the_segment_base(tmp_path):
    """A log start offset moved by DeleteRecords (inside segment 0) is checkpointed: EARLIEST answers it."""
    from logdir_helpers import checkpoint_text

    write(tmp_path / "t-0" / name(0, ".log"), Seg([batch(0, 5, ts=T0), batch(5, 5, ts=T0 + 1)]).data)
    write(tmp_path / "log-start-offset-checkpoint", checkpoint_text([("t", 0, 7)]))
    (p, _) = lines(run("offsets", "--json", tmp_path))
    assert (p["earliest"], p["firstOffset"], p["logStartOffset"]) == (7, 0, 7)


def test_a_record_where_the_partition_count_does_not_place_it_is_noted(tmp_path):
    """A cluster of 4 __transaction_state and 4 __consumer_offsets partitions (as the broker tests' node): the
    ids' records are not where the default 50 places them; a note says so and names the count that places
    them all; with that count, no note (found on a real Kafka 4.1, tests/test_broker_forensics.py)."""
    write(tmp_path / "t-0" / name(0, ".log"), Seg([batch(0, 2, pid=9, epoch=0, seq=0, txn=True, ts=T0)]).data)
    write(tmp_path / f"__transaction_state-{java_partition('a', 4)}" / name(0, ".log"),
          Seg([kv_batch(0, [txn_record("a", "Ongoing", 9, 0, [("t", [0])])])]).data)
    write(tmp_path / f"__consumer_offsets-{java_partition('readers', 4)}" / name(0, ".log"),
          Seg([kv_batch(0, [commit("readers", "t", 0, 1)])]).data)
    assert java_partition("a", 4) != java_partition("a") and java_partition("readers", 4) != java_partition("readers")
    for cmd, option, topic, key in (("txn", "--txn-partitions", "__transaction_state", "a"),
                                    ("offsets", "--offsets-partitions", "__consumer_offsets", "readers")):
        r = run(cmd, "--json", tmp_path)
        assert (f"1 id(s) are not where 50 {topic} partitions place them ({key!r} is in "
                f"{topic}-{java_partition(key, 4)}, not {java_partition(key)}): give {option}") in r.stderr
        assert "partitions place every one where it is" in r.stderr
        assert "not where" not in run(cmd, "--json", option, 4, tmp_path).stderr
