"""Log dirs for ``kafkadump txn`` and ``kafkadump offsets`` tests, built with encoders that are not kafkadump's.

Batches come from kafka-python's ``DefaultRecordBatchBuilder`` (through
``logdir_helpers``); the keys and values of ``__transaction_state`` and
``__consumer_offsets`` records from ``internal_encoder`` (written from Kafka's
JSON schemas).  Every expected value is this module's own bookkeeping.
"""

from __future__ import annotations

import os
import struct

import internal_encoder as E
from kafka.record.default_records import DefaultRecordBatchBuilder
from logdir_helpers import ABORT, COMMIT, T0, B, Seg, batch, checkpoint_text, control, name, txnindex_bytes, write

MINUTE = 60_000


def java_partition(key: str, n: int = 50) -> int:
    """``Utils.abs(key.hashCode()) % n`` written as Java's documented polynomial over UTF-16 units."""
    data = key.encode("utf-16-be")
    units = [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2)]
    h = sum(u * pow(31, len(units) - 1 - i, 1 << 32) for i, u in enumerate(units)) % (1 << 32)
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % n


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def kv_batch(base_offset: int, pairs, ts: int = T0) -> B:
    """One plain batch of (key, value) records, timestamps ts, ts+1, ..."""
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 22)
    for i, (k, v) in enumerate(pairs):
        assert bld.append(i, timestamp=ts + i, key=k, value=v, headers=[]) is not None
    buf = bytearray(bld.build())
    struct.pack_into(">q", buf, 0, base_offset)
    return B(bytes(buf), base_offset, base_offset + len(pairs) - 1, ts + len(pairs) - 1)


# --- __transaction_state --------------------------------------------------------------------------

STATUS = {"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3, "CompleteCommit": 4,
          "CompleteAbort": 5}


def txn_record(tid: str, status: str, pid: int, epoch: int, parts=(), *, timeout: int = 60_000,
               start: int = T0, update: int = T0, version: int = 0, previous: int | None = None):
    """A (key, value) pair of __transaction_state."""
    value = {"producerId": pid, "producerEpoch": epoch, "transactionTimeoutMs": timeout,
             "transactionStatus": STATUS[status],
             "transactionPartitions": [{"topic": t, "partitionIds": list(ps)} for t, ps in parts],
             "transactionLastUpdateTimestampMs": update, "transactionStartTimestampMs": start}
    if version >= 1 and previous is not None:
        value["previousProducerId"] = previous
    return (i16(0) + E.encode(E.load("TransactionLogKey"), 0, {"transactionalId": tid}),
            i16(version) + E.encode(E.load("TransactionLogValue"), version, value))


def _seg(root: str, pdir: str, batches, base: int = 0, **extra) -> Seg:
    s = Seg(batches)
    write(os.path.join(root, pdir, name(base, ".log")), s.data)
    for ext, data in extra.items():
        write(os.path.join(root, pdir, name(base, "." + ext)), data)
    return s


def make_txn_logdir(root, *, coordinator: bool = True) -> dict:
    """orders-0 and orders-1 with committed, aborted, ongoing and hanging transactions, and the
    coordinator's records in their __transaction_state partitions.

    ====================  =====  ==========================================================
    transactional id      pid/e  what
    ====================  =====  ==========================================================
    tx-commit             100/0  orders-0 0..2 + orders-1 0..1, both COMMIT: committed
    tx-abort              200/3  orders-0 4..5, ABORT: aborted
    tx-hang               400/2  transactions v2: orders-1 5 COMMIT (epoch 3), orders-0 7..8 no
                                 marker; coordinator CompleteCommit epoch 3: hanging (orders-0)
    (none)                500/0  orders-1 7, no marker, 20 minutes older than the partition's
                                 newest batch, no coordinator record: hanging
    tx-ongoing            300/1  orders-1 8..9, coordinator Ongoing with orders-1, 10 minutes
                                 old, timeout 15 minutes: ongoing
    ====================  =====  ==========================================================
    """
    root = os.fspath(root)
    o0 = _seg(root, "orders-0", [
        batch(0, 3, pid=100, epoch=0, seq=0, txn=True, ts=T0),
        control(3, COMMIT, pid=100, epoch=0, ts=T0 + 100),
        batch(4, 2, pid=200, epoch=3, seq=0, txn=True, ts=T0 + 1000),
        control(6, ABORT, pid=200, epoch=3, ts=T0 + 1100),
        batch(7, 2, pid=400, epoch=2, seq=0, txn=True, ts=T0 + 2000),
        batch(9, 1, ts=T0 + 2500),
    ], txnindex=txnindex_bytes([(200, 4, 6, 4)]))
    o1 = _seg(root, "orders-1", [
        batch(0, 2, pid=100, epoch=0, seq=0, txn=True, ts=T0 + 5),
        control(2, COMMIT, pid=100, epoch=0, ts=T0 + 100),
        batch(3, 1, pid=400, epoch=2, seq=0, txn=True, ts=T0 + 2001),
        control(4, COMMIT, pid=400, epoch=3, ts=T0 + 2100),
        batch(5, 2, ts=T0 + 2200),
        batch(7, 1, pid=500, epoch=0, seq=0, txn=True, ts=T0 + 3000),
        batch(8, 2, pid=300, epoch=1, seq=0, txn=True, ts=T0 + 10 * MINUTE),
        batch(10, 1, ts=T0 + 3000 + 20 * MINUTE),
    ])
    states = {}
    if coordinator:
        recs = {
            "tx-commit": [txn_record("tx-commit", "Ongoing", 100, 0, [("orders", [0, 1])]),
                          txn_record("tx-commit", "CompleteCommit", 100, 0, update=T0 + 90)],
            "tx-abort": [txn_record("tx-abort", "CompleteAbort", 200, 3, timeout=30_000, update=T0 + 1090)],
            "tx-hang": [txn_record("tx-hang", "Ongoing", 400, 2, [("orders", [0, 1])], version=1),
                        txn_record("tx-hang", "CompleteCommit", 400, 3, version=1, previous=400, start=T0 + 1990,
                                   update=T0 + 2090)],
            "tx-ongoing": [txn_record("tx-ongoing", "Ongoing", 300, 1, [("orders", [1])], timeout=15 * MINUTE,
                                      start=T0 + 10 * MINUTE - 5, update=T0 + 10 * MINUTE - 5)],
        }
        by_part: dict[int, list] = {}
        for tid, rs in recs.items():
            by_part.setdefault(java_partition(tid), []).extend(rs)
        for part, rs in by_part.items():
            _seg(root, f"__transaction_state-{part}", [kv_batch(0, rs, ts=T0)])
            states[part] = len(rs)
    return {"orders-0": o0, "orders-1": o1, "statePartitions": states}


# --- __consumer_offsets ---------------------------------------------------------------------------

def commit(group: str, topic: str, partition: int, offset: int | None, *, ts: int = T0, version: int = 3,
           leader_epoch: int = 5, metadata: str = ""):
    """A (key, value) pair of __consumer_offsets: an offset commit, or a tombstone (offset None)."""
    key = i16(1) + E.encode(E.load("OffsetCommitKey"), 1, {"group": group, "topic": topic, "partition": partition})
    if offset is None:
        return key, None
    value = {"offset": offset, "leaderEpoch": leader_epoch, "metadata": metadata, "commitTimestamp": ts,
             "expireTimestamp": -1}
    return key, i16(version) + E.encode(E.load("OffsetCommitValue"), version, value)


def make_offsets_logdir(root) -> dict:
    """orders-0 (offsets 0..9), orders-1 (0..10) with their high watermarks and log start offsets, and the
    __consumer_offsets partitions of groups ``billing`` and ``audit``:

    * billing/orders-0: 3, then 8 (its latest; lag 2); billing/orders-1: 4 then a tombstone (gone);
    * billing/payments-0: 17 (the partition is not on disk: lag null);
    * audit/orders-1: 15, beyond orders-1's log end 11 (``committed-beyond-log-end``).
    """
    root = os.fspath(root)
    make_txn_logdir(root, coordinator=False)
    write(os.path.join(root, "replication-offset-checkpoint"), checkpoint_text([("orders", 0, 9), ("orders", 1, 11)]))
    write(os.path.join(root, "log-start-offset-checkpoint"), checkpoint_text([("orders", 0, 4), ("orders", 1, 0)]))
    billing = [commit("billing", "orders", 0, 3, ts=T0 + 10), commit("billing", "orders", 1, 4, ts=T0 + 10),
               commit("billing", "payments", 0, 17, ts=T0 + 10), commit("billing", "orders", 0, 8, ts=T0 + 20),
               commit("billing", "orders", 1, None, ts=T0 + 30)]
    audit = [commit("audit", "orders", 1, 15, ts=T0 + 40, version=1, metadata="m")]
    placed = {}
    for group, recs in (("billing", billing), ("audit", audit)):
        part = java_partition(group)
        placed[group] = part
        _seg(root, f"__consumer_offsets-{part}", [kv_batch(0, recs, ts=T0 + 50)])
    return placed


__all__ = ["make_txn_logdir", "make_offsets_logdir", "java_partition", "txn_record", "commit", "kv_batch", "MINUTE"]
