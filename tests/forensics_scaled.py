"""Scaled inputs for the forensic commands' memory (issue 26, class 3): a ``__cluster_metadata-0``
log of many partitions (``metadata``), a log dir of many tiny segments (``triage``), and a log dir
of many producers' transactions with their ``__transaction_state`` records (``txn``).

Each writes its files in a few seconds at the issue's sizes and scales linearly with its argument.
Records are encoded by kafka-python's ``DefaultRecordBatchBuilder`` and ``internal_encoder`` (not
kafkadump's encoders): a template record is encoded once and its fixed-width fields patched.
"""

from __future__ import annotations

import os
import struct

import forensics_builders as fb
import metadata_builders as mb
from kafka.record.default_records import DefaultRecordBatchBuilder
from logdir_helpers import T0, batch, control, name, write

PER_BATCH = 500


def _kv_batches(records, *, per_batch: int = PER_BATCH, ts: int = T0) -> bytes:
    """Plain batches of (key, value) records, ``per_batch`` a batch, offsets 0.. in order."""
    out = bytearray()
    off = 0
    for start in range(0, len(records), per_batch):
        chunk = records[start:start + per_batch]
        bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 24)
        for i, (k, v) in enumerate(chunk):
            assert bld.append(i, timestamp=ts + off + i, key=k, value=v, headers=[]) is not None
        buf = bytearray(bld.build())
        struct.pack_into(">q", buf, 0, off)
        struct.pack_into(">i", buf, 12, 1)
        out += buf
        off += len(chunk)
    return bytes(out)


# --- metadata -------------------------------------------------------------------------------------

def metadata_log(root, partitions: int, *, per_topic: int = 100, brokers: int = 3) -> str:
    """``root/__cluster_metadata-0/00000000000000000000.log``: ``brokers`` brokers registered, then
    ``partitions // per_topic`` topics of ``per_topic`` partitions each (a TopicRecord, then its
    PartitionRecords: replicas and ISR all the brokers, leader the partition's turn).  Clean: no finding.
    Returns the partition directory."""
    recs: list[tuple[None, bytes]] = []
    for b in range(brokers):
        recs.append((None, mb.record("RegisterBrokerRecord", 3, brokerId=b, brokerEpoch=10 + b,
                                     incarnationId=mb.uuid(100 + b),
                                     endPoints=[{"name": "PLAINTEXT", "host": f"b{b}", "port": 9092,
                                                 "securityProtocol": 0}],
                                     rack=f"r{b}", fenced=False, inControlledShutdown=False)))
    ids = list(range(brokers))
    templates = [mb.record("PartitionRecord", 2, partitionId=0, topicId=bytes(16), replicas=ids, isr=ids,
                           removingReplicas=[], addingReplicas=[], leader=lead, leaderRecoveryState=0,
                           leaderEpoch=0, partitionEpoch=0, directories=[]) for lead in range(brokers)]
    # frame (1, apiKey, version: one byte each), partitionId int32, topicId 16 bytes
    topics = (partitions + per_topic - 1) // per_topic
    for t in range(topics):
        tid = struct.pack(">QQ", 0x1000 + t, t + 1)
        recs.append((None, mb.record("TopicRecord", 0, name=f"topic-{t:06d}", topicId=tid)))
        for p in range(min(per_topic, partitions - t * per_topic)):
            buf = bytearray(templates[p % brokers])
            struct.pack_into(">i", buf, 3, p)
            buf[7:23] = tid
            recs.append((None, bytes(buf)))
    d = os.path.join(os.fspath(root), "__cluster_metadata-0")
    write(os.path.join(d, name(0, ".log")), _kv_batches(recs))
    return d


# --- triage: many tiny segments -------------------------------------------------------------------

def tiny_segments(root, segments: int, *, partitions: int = 1) -> str:
    """A log dir of ``segments`` one-record segments spread over ``partitions`` partitions
    (``tiny-P``, segment k of a partition at base offset k).  Clean: no finding.  Returns the log dir."""
    root = os.fspath(root)
    data = bytearray(batch(0, 1).data)
    for i in range(segments):
        p, k = i % partitions, i // partitions
        struct.pack_into(">q", data, 0, k)    # the base offset is outside the CRC
        write(os.path.join(root, f"tiny-{p}", name(k, ".log")), bytes(data))
    return root


# --- txn: many producers and transactions ---------------------------------------------------------

def transactions(root, producers: int, *, partitions: int = 10, txns: int = 2, state_partitions: int = 50) -> str:
    """A log dir where ``producers`` transactional producers (``tx-N``, producer id 1000+N) each run
    ``txns`` committed transactions on one data partition of ``pay-0..`` (producer N on partition N %
    ``partitions``), and the coordinator's records (Ongoing then CompleteCommit, per transaction) sit in
    their ``__transaction_state`` partitions.  Clean: no finding.  Returns the log dir."""
    root = os.fspath(root)
    per_part: dict[int, list[bytes]] = {}
    next_off: dict[int, int] = {}
    states: dict[int, list] = {}
    for n in range(producers):
        p = n % partitions
        tid, pid = f"tx-{n}", 1000 + n
        out = per_part.setdefault(p, [])
        for t in range(txns):
            ts = T0 + 1000 * t
            off = next_off.get(p, 0)
            out.append(batch(off, 1, pid=pid, epoch=0, seq=t, txn=True, ts=ts).data)
            out.append(control(off + 1, 1, pid=pid, epoch=0, ts=ts + 10).data)
            next_off[p] = off + 2
            states.setdefault(fb.java_partition(tid, state_partitions), []).extend([
                fb.txn_record(tid, "Ongoing", pid, 0, [("pay", [p])], start=ts, update=ts),
                fb.txn_record(tid, "CompleteCommit", pid, 0, start=ts, update=ts + 10)])
    for p, bs in per_part.items():
        write(os.path.join(root, f"pay-{p}", name(0, ".log")), b"".join(bs))
    for sp, recs in states.items():
        write(os.path.join(root, f"__transaction_state-{sp}", name(0, ".log")), _kv_batches(recs))
    return root


__all__ = ["metadata_log", "tiny_segments", "transactions"]
