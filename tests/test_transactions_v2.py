"""Transactions v2 (KIP-890) in the log-dir cross-checks.

With transaction version 2 the coordinator bumps the producer epoch at the
end of every transaction: its COMMIT/ABORT marker carries the data's epoch
plus one, and the producer's next transaction starts at that epoch with
sequence 0.  When the epoch would pass 32766 the transactional id moves to a
new producer id (the last marker carries epoch 32767).  None of this is a
sequence or epoch error; a data batch of the old epoch after such a marker
is (a zombie write Kafka would have fenced).  Segments are encoded by
kafka-python (tests/logdir_helpers.py).
"""

import struct

from logdir_helpers import (
    ABORT,
    COMMIT,
    T0,
    Seg,
    batch,
    control,
    findings,
    name,
    snapshot_bytes,
    txnindex_bytes,
    write,
)

from kafkadump.objects.logdir_objects import triage


def partition(tmp_path, seg, extra=None):
    d = tmp_path / "orders-0"
    write(d / name(0, ".log"), seg.data)
    for fname, content in (extra or {}).items():
        write(d / fname, content)
    return d


def v2_transactions():
    """Producer 7: three transactions, each marker one epoch above its data (KIP-890)."""
    return Seg([batch(0, 3, pid=7, epoch=0, seq=0, txn=True), batch(3, 2, pid=7, epoch=0, seq=3, txn=True),
                control(5, COMMIT, pid=7, epoch=1),
                batch(6, 2, pid=7, epoch=1, seq=0, txn=True), control(8, ABORT, pid=7, epoch=2),
                batch(9, 4, pid=7, epoch=2, seq=0, txn=True), control(13, COMMIT, pid=7, epoch=3)])


def test_v2_markers_one_epoch_above_the_data_are_clean(tmp_path):
    s = v2_transactions()
    # the producer snapshot after the last marker: epoch 3, no sequence (Kafka clears it on the bump)
    d = partition(tmp_path, s, extra={name(14, ".snapshot"): snapshot_bytes([(7, 3, -1, -1, 0, T0, 7, -1)]),
                                      name(0, ".txnindex"): txnindex_bytes([(7, 6, 8, 6)])})
    r = triage(str(d))
    assert findings(r) == [f for f in findings(r) if f["code"] == "aborted-transaction"]
    assert [f["offset"] for f in findings(r)] == [s.at(4)]
    p = r["partitions"][0]
    assert (p["openTransactions"], p["abortedTransactions"], p["verdict"]) == (0, 1, "clean")


def test_v2_across_segments(tmp_path):
    d = tmp_path / "orders-0"
    write(d / name(0, ".log"), Seg([batch(0, 3, pid=7, epoch=4, seq=0, txn=True)]).data)
    write(d / name(3, ".log"), Seg([control(3, COMMIT, pid=7, epoch=5)]).data)
    write(d / name(4, ".log"), Seg([batch(4, 2, pid=7, epoch=5, seq=0, txn=True),
                                    control(6, COMMIT, pid=7, epoch=6)]).data)
    r = triage(str(d))
    assert findings(r) == [] and r["partitions"][0]["openTransactions"] == 0


def test_epoch_overflow_moves_to_a_new_producer_id(tmp_path):
    s = Seg([batch(0, 2, pid=7, epoch=32765, seq=0, txn=True), control(2, COMMIT, pid=7, epoch=32766),
             batch(3, 2, pid=7, epoch=32766, seq=0, txn=True), control(5, COMMIT, pid=7, epoch=32767),
             batch(6, 3, pid=8, epoch=0, seq=0, txn=True), control(9, COMMIT, pid=8, epoch=1)])
    d = partition(tmp_path, s)
    r = triage(str(d))
    assert findings(r) == [] and r["partitions"][0]["producers"] == 2


def test_zombie_write_after_a_v2_marker_is_flagged(tmp_path):
    """Mutation: the next transaction's first batch carries the old epoch (one INT16 changed)."""
    s = Seg([batch(0, 3, pid=7, epoch=0, seq=0, txn=True), control(3, COMMIT, pid=7, epoch=1),
             batch(4, 2, pid=7, epoch=0, seq=3, txn=True)])
    r = triage(str(partition(tmp_path, s)))
    [f] = findings(r, "sequence-order")
    assert f["offset"] == s.at(2) + 51 and "epoch 0 after epoch 1" in f["message"]


def test_sequence_must_restart_after_a_v2_marker(tmp_path):
    s = Seg([batch(0, 3, pid=7, epoch=0, seq=0, txn=True), control(3, COMMIT, pid=7, epoch=1),
             batch(4, 2, pid=7, epoch=1, seq=5, txn=True)])
    r = triage(str(partition(tmp_path, s)))
    [f] = findings(r, "sequence-gap")
    assert f["offset"] == s.at(2) + 53


def test_v1_markers_keep_the_epoch(tmp_path):
    s = Seg([batch(0, 3, pid=7, epoch=2, seq=0, txn=True), control(3, COMMIT, pid=7, epoch=2),
             batch(4, 2, pid=7, epoch=2, seq=3, txn=True), control(6, ABORT, pid=7, epoch=2)])
    r = triage(str(partition(tmp_path, s, extra={name(0, ".txnindex"): txnindex_bytes([(7, 4, 6, 4)])})))
    assert [f["code"] for f in findings(r)] == ["aborted-transaction"]


def test_transaction_state_summary_names_the_transaction_version():
    """__transaction_state: a v2 transactional id after an epoch overflow (its producer id moved on)."""
    import builders as bld
    import internal_encoder as E

    from kafkadump.decoders.batches import iter_batches
    from kafkadump.decoders.internal_topics.record_decoder import decoder_for
    from kafkadump.decoders.internal_topics.summary import summarize

    key = struct.pack(">h", 0) + E.encode(E.load("TransactionLogKey"), 0, {"transactionalId": "tx-1"})
    value = struct.pack(">h", 1) + E.encode(E.load("TransactionLogValue"), 1, {
        "producerId": 8, "previousProducerId": 7, "nextProducerId": -1, "producerEpoch": 0,
        "transactionTimeoutMs": 60000, "transactionStatus": 4, "transactionPartitions": None,
        "transactionLastUpdateTimestampMs": T0, "transactionStartTimestampMs": T0, "clientTransactionVersion": 2})
    data = bld.v2_batch(0, [bld.Rec(key, value)]).data
    dec = decoder_for("transactions")
    decoded = [dec.decode_record(r, b) for b in iter_batches(data, "t") for r in b.records]
    assert [d.findings for d in decoded] == [[]]
    e = summarize("transactions", decoded)["transactionalIds"]["tx-1"]
    assert (e["producerId"], e["previousProducerId"], e["clientTransactionVersion"], e["state"]) == (
        8, 7, 2, "CompleteCommit")
