"""KRaft metadata logs and snapshots for tests, from encoders that are not kafkadump's.

Records are encoded by ``internal_encoder`` straight from Kafka's JSON schemas
(``records/metadata``, ``message/Snapshot*Record``) and framed as KRaft frames
them (frameVersion 1, apiKey, version: unsigned varints); batches are built by
kafka-python's ``DefaultRecordBatchBuilder``, one record per batch, base offset
and leader epoch patched in (outside the CRC), the control bit set and the CRC
recomputed for control batches.  One record per batch means a record starts 61
bytes (the v2 batch header) after its batch: tests know every record's byte
position from this module's own bookkeeping.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import internal_encoder as E
from kafka.record.default_records import DefaultRecordBatchBuilder
from logdir_helpers import fix_crc

T0 = 1_700_000_000_000
HEADER = 61  # bytes of a v2 batch header: where its first record starts
SNAPSHOT_HEADER, SNAPSHOT_FOOTER = 3, 4


def uuid(n: int) -> bytes:
    """A topic id: 16 bytes that spell ``n``."""
    return bytes([n]) * 16


def uuid_text(n: int) -> str:
    return E.kafka_uuid(uuid(n))


def record(schema: str, version: int, **fields) -> bytes:
    """A metadata record's frame: every field of ``version`` (defaults: zero, empty, null), ``fields`` set."""
    doc = E.load(schema)
    value = E.sample(doc, version, 1, {k: v for k, v in fields.items()})
    return E.uvarint(1) + E.uvarint(doc["apiKey"]) + E.uvarint(version) + E.encode(doc, version, value)


def _batch(base_offset: int, key: bytes | None, value: bytes, ts: int, leader_epoch: int, control: bool) -> bytes:
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    assert bld.append(0, timestamp=ts, key=key, value=value, headers=[]) is not None
    buf = bytearray(bld.build())
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, 12, leader_epoch)
    if control:
        (attrs,) = struct.unpack_from(">h", buf, 21)
        struct.pack_into(">h", buf, 21, attrs | 0x20)
        fix_crc(buf, 0)
    return bytes(buf)


@dataclass
class MetaLog:
    """A metadata log or snapshot being built: each record at the next offset, in its own batch."""

    next_offset: int = 0
    leader_epoch: int = 1
    data: bytearray = field(default_factory=bytearray)
    positions: dict[int, int] = field(default_factory=dict)   # offset -> the record's byte position
    timestamps: dict[int, int] = field(default_factory=dict)

    def add(self, frame: bytes, *, key: bytes | None = None, control: bool = False) -> int:
        off = self.next_offset
        ts = T0 + 1000 * off
        self.positions[off] = len(self.data) + HEADER
        self.timestamps[off] = ts
        self.data += _batch(off, key, frame, ts, self.leader_epoch, control)
        self.next_offset += 1
        return off

    def rec(self, schema: str, version: int, **fields) -> int:
        return self.add(record(schema, version, **fields))

    def control(self, ctype: int, schema: str, **fields) -> int:
        doc = E.load(schema)
        value = E.encode(doc, 0, E.sample(doc, 0, 1, fields))   # its first field is its own Version
        return self.add(value, key=struct.pack(">hh", 0, ctype), control=True)


# --- the records a scenario is made of -----------------------------------------------------------------

def broker(log: MetaLog, bid: int, epoch: int) -> int:
    return log.rec("RegisterBrokerRecord", 3, brokerId=bid, brokerEpoch=epoch, incarnationId=uuid(100 + bid),
                   endPoints=[{"name": "PLAINTEXT", "host": f"b{bid}", "port": 9092, "securityProtocol": 0}],
                   rack=f"r{bid}", fenced=True, inControlledShutdown=False)


def unfence(log: MetaLog, bid: int, epoch: int) -> int:
    return log.rec("BrokerRegistrationChangeRecord", 2, brokerId=bid, brokerEpoch=epoch, fenced=-1,
                   inControlledShutdown=0)


def topic(log: MetaLog, name: str, tid: int) -> int:
    return log.rec("TopicRecord", 0, name=name, topicId=uuid(tid))


def partition(log: MetaLog, tid: int, pid: int, replicas, isr, leader, *, elr=None, epoch=0, lrs=0) -> int:
    return log.rec("PartitionRecord", 2, partitionId=pid, topicId=uuid(tid), replicas=replicas, isr=isr,
                   removingReplicas=[], addingReplicas=[], leader=leader, leaderRecoveryState=lrs,
                   leaderEpoch=epoch, partitionEpoch=epoch, directories=[],
                   **({} if elr is None else {"eligibleLeaderReplicas": elr, "lastKnownElr": []}))


def change(log: MetaLog, tid: int, pid: int, **fields) -> int:
    """A PartitionChangeRecord v2 holding only ``fields`` (the tagged fields absent mean "no change")."""
    return log.rec("PartitionChangeRecord", 2, partitionId=pid, topicId=uuid(tid), **fields)
