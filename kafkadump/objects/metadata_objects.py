"""``kafkadump metadata`` objects of the JSON contract: partition, topic and broker changes, the
cluster's state at a point, the summary.  Built here only; the table reads the same values.

* **partition-change**: ``offset timestamp topic topicId partition leader isr elr leaderEpoch
  leaderRecoveryState unclean`` (the state the record leaves), then ``uncleanReason election record
  snapshot replicas partitionEpoch lastKnownElr previousLeader previousIsr previousElr
  previousLeaderEpoch file position findings``;
* **topic-change**: ``offset timestamp topic topicId change previousTopicId previousDeletedAt snapshot
  file position findings`` (``change``: created, deleted, recreated);
* **broker-change**: ``offset timestamp broker change brokerEpoch incarnationId endpoints rack fenced
  inControlledShutdown snapshot file position``;
* **cluster-state**: ``offset timestamp topics brokers controllers features metadataVersion configs``
  (``metadataVersion``: the release name of the metadata.version level, as Kafka's tools print it,
  or null; ``configs``: the resources' configs, as ConfigRecords set them);
* **metadata-summary**: what was read and what was found.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kafkadump.decoders.internal_topics.constants import METADATA_VERSIONS
from kafkadump.objects.records import findings_list

if TYPE_CHECKING:
    from kafkadump.decoders.internal_topics.metadata_replay import (
        BrokerChange,
        BrokerState,
        ClusterState,
        PartitionChange,
        PartitionState,
        TopicChange,
    )
    from kafkadump.reports.metadata import FileProblems, MetadataSummary

# org.apache.kafka.metadata.LeaderRecoveryState
LEADER_RECOVERY_STATES = {0: "RECOVERED", 1: "RECOVERING"}


def _ids(ids: tuple[int, ...] | None) -> list[int] | None:
    """Broker ids as a JSON array (the replay holds them as shared tuples)."""
    return None if ids is None else list(ids)


def recovery_state_name(value: int | None) -> str | None:
    """LeaderRecoveryState as its name (``RECOVERED``, ``RECOVERING``; ``unknown(N)``); None when not known."""
    if value is None:
        return None
    return LEADER_RECOVERY_STATES.get(value, f"unknown({value})")


def partition_change_object(ev: PartitionChange) -> dict[str, Any]:
    st, prev = ev.state, ev.previous
    return {
        "type": "partition-change", "offset": ev.offset, "timestamp": ev.timestamp, "topic": ev.topic,
        "topicId": ev.topic_id, "partition": ev.partition, "leader": st.leader, "isr": _ids(st.isr), "elr": _ids(st.elr),
        "leaderEpoch": st.leader_epoch, "leaderRecoveryState": recovery_state_name(st.leader_recovery_state),
        "unclean": ev.unclean, "uncleanReason": ev.unclean_reason, "election": ev.election, "record": ev.record,
        "snapshot": ev.snapshot, "replicas": _ids(st.replicas), "partitionEpoch": st.partition_epoch,
        "lastKnownElr": _ids(st.last_known_elr),
        "previousLeader": None if prev is None else prev.leader,
        "previousIsr": None if prev is None else _ids(prev.isr),
        "previousElr": None if prev is None else _ids(prev.elr),
        "previousLeaderEpoch": None if prev is None else prev.leader_epoch,
        "file": ev.place.file, "position": ev.place.position, "findings": findings_list(ev.findings),
    }


def topic_change_object(ev: TopicChange) -> dict[str, Any]:
    return {
        "type": "topic-change", "offset": ev.offset, "timestamp": ev.timestamp, "topic": ev.topic,
        "topicId": ev.topic_id, "change": ev.change, "previousTopicId": ev.previous_topic_id,
        "previousDeletedAt": ev.previous_deleted_at, "snapshot": ev.snapshot, "file": ev.place.file,
        "position": ev.place.position, "findings": findings_list(ev.findings),
    }


def _broker_fields(b: BrokerState | None) -> dict[str, Any]:
    if b is None:
        return {"incarnationId": None, "endpoints": None, "rack": None, "fenced": None, "inControlledShutdown": None}
    return {"incarnationId": b.incarnation_id, "endpoints": b.endpoints, "rack": b.rack, "fenced": b.fenced,
            "inControlledShutdown": b.in_controlled_shutdown}


def broker_change_object(ev: BrokerChange) -> dict[str, Any]:
    return {"type": "broker-change", "offset": ev.offset, "timestamp": ev.timestamp, "broker": ev.broker,
            "change": ev.change, "brokerEpoch": ev.epoch, **_broker_fields(ev.state), "snapshot": ev.snapshot,
            "file": ev.place.file, "position": ev.place.position}


def _partition_state(p: PartitionState) -> dict[str, Any]:
    return {"partition": p.partition, "leader": p.leader, "isr": _ids(p.isr), "elr": _ids(p.elr),
            "replicas": _ids(p.replicas),
            "leaderEpoch": p.leader_epoch, "partitionEpoch": p.partition_epoch,
            "leaderRecoveryState": recovery_state_name(p.leader_recovery_state), "lastKnownElr": _ids(p.last_known_elr)}


def cluster_state_object(st: ClusterState) -> dict[str, Any]:
    """The state at ``--at``: topics by name (their partitions by number), brokers by id, features
    (whole; :func:`cluster_state_topics` and :func:`cluster_state_rest` give it a topic at a time)."""
    return {**cluster_state_head(st), "topics": list(cluster_state_topics(st)), **cluster_state_rest(st)}


def cluster_state_head(st: ClusterState) -> dict[str, Any]:
    """The fields of :func:`cluster_state_object` before its topics."""
    return {"type": "cluster-state", "offset": st.offset, "timestamp": st.timestamp}


def cluster_state_topics(st: ClusterState) -> Iterator[dict[str, Any]]:
    """The ``topics`` of :func:`cluster_state_object`, one object at a time (a state of 300,000
    partitions is never one list of objects): by name, then the partitions of no known topic."""
    import bisect

    keys = sorted(st.partitions)   # (topicId, partition): the partitions' own keys, in order
    for tid, name in sorted(st.topics.items(), key=lambda kv: (kv[1] or "", kv[0])):
        yield {"topic": name, "topicId": tid,
               "partitions": _topic_partitions(st, keys, tid, bisect.bisect_left(keys, (tid,)))}
    at = 0
    while at < len(keys):
        tid = keys[at][0]
        end = bisect.bisect_left(keys, (tid, _PAST_PARTITIONS), at)
        if tid not in st.topics:
            yield {"topic": None, "topicId": tid, "partitions": _topic_partitions(st, keys, tid, at)}
        at = end


_PAST_PARTITIONS = 1 << 63


def _topic_partitions(st: ClusterState, keys: list[tuple[str, int]], tid: str, at: int) -> list[dict[str, Any]]:
    """The partition objects of topic ``tid``, whose keys start at ``keys[at]``."""
    out = []
    while at < len(keys) and keys[at][0] == tid:
        out.append(_partition_state(st.partitions[keys[at]]))
        at += 1
    return out


def cluster_state_rest(st: ClusterState) -> dict[str, Any]:
    """The fields of :func:`cluster_state_object` after its topics."""
    brokers = [{"broker": b.broker, "brokerEpoch": b.epoch, **_broker_fields(b), "registeredAt": b.registered_at}
               for _, b in sorted(st.brokers.items())]
    controllers = [{"controller": c.controller, "incarnationId": c.incarnation_id, "endpoints": c.endpoints,
                    "registeredAt": c.registered_at} for _, c in sorted(st.controllers.items())]
    return {"brokers": brokers, "controllers": controllers, "features": dict(sorted(st.features.items())),
            "metadataVersion": METADATA_VERSIONS.get(st.features.get("metadata.version", 0)),
            "configs": [{"resourceType": rtype, "resourceName": rname, "configs": dict(sorted(c.items()))}
                        for (rtype, rname), c in sorted(st.configs.items())]}


def metadata_summary_object(s: MetadataSummary) -> dict[str, Any]:
    c = s.counts
    at = None if s.at is None else ({"offset": s.at.offset} if s.at.offset is not None else {"time": s.at.time})
    return {
        "type": "metadata-summary", "path": s.path, "snapshot": s.files.snapshot,
        "snapshotOffset": s.files.snapshot_offset, "logFiles": s.files.logs, "records": c.records,
        "firstOffset": s.first_offset, "lastOffset": s.last_offset, "historyFrom": s.history_from,
        "partitionChanges": c.partition_changes, "elections": c.elections, "uncleanElections": c.unclean_elections,
        "topicsCreated": c.topics_created, "topicsDeleted": c.topics_deleted, "topicsRecreated": c.topics_recreated,
        "brokerChanges": c.broker_changes, "topics": s.topics, "partitions": s.partitions, "brokers": s.brokers,
        "untracked": c.untracked, "at": at, "uncleanAt": s.unclean, "recreatedTopics": s.recreated,
        "problems": s.problems,
    }


def file_problems_object(p: FileProblems) -> dict[str, Any]:
    """Problems in the bytes of a metadata file (the ``findings`` line of ``records --json``)."""
    return {"type": "findings", "file": p.file, "position": p.position, "findings": findings_list(p.findings)}


__all__ = ["partition_change_object", "topic_change_object", "broker_change_object", "cluster_state_object", "cluster_state_head",
           "metadata_summary_object", "file_problems_object", "recovery_state_name", "LEADER_RECOVERY_STATES"]
