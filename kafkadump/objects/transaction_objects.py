"""The JSON objects of ``kafkadump txn``, and the command that ends a hanging transaction.

* **transaction**: ``type transactionalId producerId producerEpoch state partitions firstTimestamp
  lastTimestamp coordinator coordinatorPartition abortCommands``; each partition
  ``topic partition path firstOffset lastOffset batches marker markerOffset markerEpoch
  firstTimestamp lastTimestamp state reason lastStableOffset logEndOffset``; ``coordinator``
  (null when no ``__transaction_state`` record names the producer) ``state timeoutMs partitions
  producerId producerEpoch previousProducerId nextProducerId startTimestamp lastUpdateTimestamp
  recordOffset statePartition``.
* **transactions-summary**: ``type transactions committed aborted ongoing hanging notListed
  partitions statePartitions coordinators stuckPartitions lookups findings``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkadump.objects.records import findings_list
from kafkadump.reports.transactions import BOOTSTRAP_PLACEHOLDER, abort_command

if TYPE_CHECKING:  # pragma: no cover
    from kafkadump.reports.transactions import CoordinatorRecord, Transaction, TxnPartition, TxnReport

def _partition(p: TxnPartition) -> dict[str, Any]:
    s = p.span
    return {
        "topic": p.topic, "partition": p.partition, "path": p.path, "firstOffset": s.first_offset,
        "lastOffset": s.last_offset, "batches": s.batches, "marker": s.marker, "markerOffset": s.marker_offset,
        "markerEpoch": s.marker_epoch, "firstTimestamp": s.first_timestamp,
        "lastTimestamp": s.marker_timestamp if s.marker_timestamp is not None else s.last_timestamp,
        "state": p.state, "reason": p.reason, "lastStableOffset": p.last_stable_offset,
        "logEndOffset": p.log_end_offset,
    }


def coordinator_object(c: CoordinatorRecord) -> dict[str, Any]:
    return {
        "state": c.state, "timeoutMs": c.timeout_ms,
        "partitions": [{"topic": t, "partition": p} for t, p in c.partitions],
        "producerId": c.producer_id, "producerEpoch": c.producer_epoch,
        "previousProducerId": c.previous_producer_id, "nextProducerId": c.next_producer_id,
        "startTimestamp": c.start_timestamp, "lastUpdateTimestamp": c.last_update_timestamp,
        "recordOffset": c.record_offset, "statePartition": c.state_partition,
    }


def abort_commands(t: Transaction, bootstrap: str = BOOTSTRAP_PLACEHOLDER) -> list[str]:
    """One command per partition of ``t`` whose data is hanging."""
    return [abort_command(p.topic, p.partition, p.span.first_offset, bootstrap)
            for p in t.partitions if p.state == "hanging"]


def transaction_object(t: Transaction, bootstrap: str = BOOTSTRAP_PLACEHOLDER) -> dict[str, Any]:
    """One transaction's object (``kafkadump txn --json``)."""
    return {
        "type": "transaction", "transactionalId": t.transactional_id, "producerId": t.producer_id,
        "producerEpoch": t.producer_epoch, "state": t.state,
        "partitions": [_partition(p) for p in t.partitions],
        "firstTimestamp": t.first_timestamp, "lastTimestamp": t.last_timestamp,
        "coordinator": coordinator_object(t.coordinator) if t.coordinator is not None else None,
        "coordinatorPartition": t.coordinator_partition,
        "abortCommands": abort_commands(t, bootstrap),
    }


def transactions_summary_object(r: TxnReport) -> dict[str, Any]:
    """The closing summary of ``kafkadump txn --json``: counts, and the partitions stuck behind hanging data."""
    return {
        "type": "transactions-summary", "transactions": len(r.transactions) + r.not_listed,
        "committed": r.count("committed"), "aborted": r.count("aborted"), "ongoing": r.count("ongoing"),
        "hanging": r.count("hanging"), "notListed": r.not_listed, "partitions": r.partitions,
        "statePartitions": r.state_partitions, "coordinators": r.coordinators,
        "stuckPartitions": [{"topic": p.topic, "partition": p.partition, "path": p.path,
                             "lastStableOffset": p.last_stable_offset, "logEndOffset": p.log_end_offset}
                            for p in r.stuck_partitions()],
        "lookups": [{"transactionalId": x.key, "coordinatorPartition": x.partition, "onDisk": x.on_disk,
                     "known": x.known} for x in r.lookups],
        "findings": findings_list(r.findings),
    }


__all__ = ["abort_command", "abort_commands", "transaction_object", "transactions_summary_object",
           "coordinator_object", "BOOTSTRAP_PLACEHOLDER"]
