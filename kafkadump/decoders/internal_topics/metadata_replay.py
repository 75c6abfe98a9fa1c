"""KRaft metadata replayed record by record: the history of partitions, topics and brokers.

    replay = MetadataReplay()
    for d, where in decoded_records:        # DecodedRecord, RecordPlace (file, byte position), in log order
        for event in replay.apply(d, where, snapshot=False):
            ...                             # PartitionChange, TopicChange, BrokerChange
    state = replay.state()                  # ClusterState: topics, partitions, brokers, features

Records are applied as the controller applies them (Kafka's
``PartitionRegistration.merge``, ``ClusterControlManager``):

    PartitionRecord          a partition's whole state (creation, or a snapshot's copy); its
                             leaderRecoveryState, a tagged field Kafka leaves out at its default,
                             is RECOVERED when absent
    PartitionChangeRecord    absent fields keep their value: isr/replicas/elr null, leader -2,
                             leaderRecoveryState -1; a leader field (even the same leader) bumps the
                             leader epoch; every change bumps the partition epoch
    TopicRecord              a topic id for a name; a name seen before under another id is a
                             topic deleted and re-created (``topic-recreated``)
    RemoveTopicRecord        the topic and its partitions are gone
    RegisterBrokerRecord, UnregisterBrokerRecord, FenceBrokerRecord, UnfenceBrokerRecord,
    BrokerRegistrationChangeRecord (fenced: 1 fence, -1 unfence; inControlledShutdown: 1)
    RegisterControllerRecord, UnregisterControllerRecord   a controller's registration (its listeners)
    FeatureLevelRecord       a feature's finalized level (0 removes it)
    ConfigRecord             a config of a resource (a topic, a broker, ``""`` the cluster's
                             default) set, or removed by a null value; a RemoveTopicRecord
                             removes the topic's configs too (Kafka's ``MetadataDelta``)

An election is **unclean** (``unclean-election``) when the record sets
LeaderRecoveryState RECOVERING (1), or when the partition's ISR and ELR before it are known and its new leader (a broker,
not the one before) was in neither the previous ISR nor the previous ELR
(eligibleLeaderReplicas).  A partition first seen in a PartitionChangeRecord
(the log starts after a snapshot that is not there) has no known ISR and
ELR (None) until a record sets them: until then its elections are not judged.

State is bounded: at most :data:`MAX_PARTITIONS` topics and partitions,
:data:`MAX_BROKERS` brokers, :data:`MAX_TOPIC_NAMES` names and :data:`MAX_CONFIGS` configs
of a resource are followed;
records about others are counted in ``untracked``.  Decoding only: nothing here reads files or prints.
"""

from __future__ import annotations

import sys
from typing import Any

from kafkadump.base.findings import Code, Finding
from kafkadump.base.values import FrozenValue, Value
from kafkadump.decoders.internal_topics.constants import CONFIG_RESOURCE_TYPES, enum_name
from kafkadump.decoders.internal_topics.decoded import DecodedRecord

RECOVERED, RECOVERING = 0, 1   # LeaderRecoveryState; a PartitionRecord without the (tagged) field: RECOVERED
NO_LEADER = -1
NO_LEADER_CHANGE = -2
MAX_PARTITIONS = 1_000_000
MAX_BROKERS = 100_000
MAX_TOPIC_NAMES = 1_000_000
MAX_CONFIGS = 10_000    # configs followed per resource


class RecordPlace(FrozenValue):
    """Where a record is: its file and the absolute byte position the finding about it anchors at
    (the record itself; in a compressed batch, the batch's payload with ``source_offset``)."""

    __match_args__ = ("file", "position", "source_offset")

    file: str | None
    position: int
    source_offset: int | None

    def __init__(self, file: str | None, position: int, source_offset: int | None = None) -> None:
        self._set(file=file, position=position, source_offset=source_offset)


class PartitionState(Value):
    """A partition as the controller holds it."""

    __match_args__ = ("topic_id", "partition", "replicas", "isr", "elr", "last_known_elr", "leader",
                       "leader_epoch", "partition_epoch", "leader_recovery_state")
    __slots__ = __match_args__

    topic_id: str
    partition: int
    replicas: tuple[int, ...] | None      # None: not known (first seen in a PartitionChangeRecord)
    isr: tuple[int, ...] | None
    elr: tuple[int, ...] | None
    last_known_elr: tuple[int, ...] | None
    leader: int
    leader_epoch: int | None
    partition_epoch: int | None
    leader_recovery_state: int | None

    def __init__(self, topic_id: str, partition: int, replicas: tuple[int, ...] | None = None,
                 isr: tuple[int, ...] | None = None, elr: tuple[int, ...] | None = None,
                 last_known_elr: tuple[int, ...] | None = None, leader: int = NO_LEADER,
                 leader_epoch: int | None = None, partition_epoch: int | None = None,
                 leader_recovery_state: int | None = None) -> None:
        self.topic_id = topic_id
        self.partition = partition
        self.replicas = replicas
        self.isr = isr
        self.elr = elr
        self.last_known_elr = last_known_elr
        self.leader = leader
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.leader_recovery_state = leader_recovery_state


class PartitionChange(Value):
    """One PartitionRecord or PartitionChangeRecord, with the state it leaves and the one before."""

    __match_args__ = ("offset", "timestamp", "topic", "topic_id", "partition", "record", "snapshot", "state",
                       "previous", "election", "unclean", "unclean_reason", "place", "findings")

    offset: int
    timestamp: int | None
    topic: str | None
    topic_id: str
    partition: int
    record: str
    snapshot: bool
    state: PartitionState
    previous: PartitionState | None
    election: bool
    unclean: bool
    unclean_reason: str | None
    place: RecordPlace
    findings: list[Finding]

    def __init__(self, offset: int, timestamp: int | None, topic: str | None, topic_id: str, partition: int,
                 record: str, snapshot: bool, state: PartitionState, previous: PartitionState | None,
                 election: bool, unclean: bool, unclean_reason: str | None, place: RecordPlace,
                 findings: list[Finding] | None = None) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.topic = topic
        self.topic_id = topic_id
        self.partition = partition
        self.record = record
        self.snapshot = snapshot
        self.state = state
        self.previous = previous
        self.election = election
        self.unclean = unclean
        self.unclean_reason = unclean_reason
        self.place = place
        self.findings = list() if findings is None else findings


class TopicChange(Value):
    """A topic created, deleted, or created again under a name another topic id had."""

    __match_args__ = ("offset", "timestamp", "topic", "topic_id", "change", "previous_topic_id",
                       "previous_deleted_at", "snapshot", "place", "findings")

    offset: int
    timestamp: int | None
    topic: str | None
    topic_id: str
    change: str                     # "created" | "deleted" | "recreated"
    previous_topic_id: str | None
    previous_deleted_at: int | None
    snapshot: bool
    place: RecordPlace
    findings: list[Finding]

    def __init__(self, offset: int, timestamp: int | None, topic: str | None, topic_id: str, change: str,
                 previous_topic_id: str | None, previous_deleted_at: int | None, snapshot: bool,
                 place: RecordPlace, findings: list[Finding] | None = None) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.topic = topic
        self.topic_id = topic_id
        self.change = change
        self.previous_topic_id = previous_topic_id
        self.previous_deleted_at = previous_deleted_at
        self.snapshot = snapshot
        self.place = place
        self.findings = list() if findings is None else findings


class BrokerState(Value):
    __match_args__ = ("broker", "epoch", "incarnation_id", "endpoints", "rack", "fenced", "in_controlled_shutdown",
                      "registered_at")

    broker: int
    epoch: int | None
    incarnation_id: str | None
    endpoints: list[str]
    rack: str | None
    fenced: bool | None
    in_controlled_shutdown: bool
    registered_at: int | None

    def __init__(self, broker: int, epoch: int | None = None, incarnation_id: str | None = None,
                 endpoints: list[str] | None = None, rack: str | None = None, fenced: bool | None = None,
                 in_controlled_shutdown: bool = False, registered_at: int | None = None) -> None:
        self.broker = broker
        self.epoch = epoch
        self.incarnation_id = incarnation_id
        self.endpoints = list() if endpoints is None else endpoints
        self.rack = rack
        self.fenced = fenced
        self.in_controlled_shutdown = in_controlled_shutdown
        self.registered_at = registered_at


class ControllerState(Value):
    __match_args__ = ("controller", "incarnation_id", "endpoints", "registered_at")

    controller: int
    incarnation_id: str | None
    endpoints: list[str]
    registered_at: int | None

    def __init__(self, controller: int, incarnation_id: str | None = None, endpoints: list[str] | None = None,
                 registered_at: int | None = None) -> None:
        self.controller = controller
        self.incarnation_id = incarnation_id
        self.endpoints = list() if endpoints is None else endpoints
        self.registered_at = registered_at


class BrokerChange(Value):
    """A broker registered, fenced, unfenced, put in controlled shutdown, or unregistered."""

    __match_args__ = ("offset", "timestamp", "broker", "change", "epoch", "state", "snapshot", "place")

    offset: int
    timestamp: int | None
    broker: int
    change: str   # "registered" | "fenced" | "unfenced" | "controlled-shutdown" | "unregistered"
    epoch: int | None
    state: BrokerState | None
    snapshot: bool
    place: RecordPlace

    def __init__(self, offset: int, timestamp: int | None, broker: int, change: str, epoch: int | None,
                 state: BrokerState | None, snapshot: bool, place: RecordPlace) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.broker = broker
        self.change = change
        self.epoch = epoch
        self.state = state
        self.snapshot = snapshot
        self.place = place


MetadataEvent = PartitionChange | TopicChange | BrokerChange


class ClusterState(Value):
    """The cluster's state after the last record applied."""

    __match_args__ = ("offset", "timestamp", "topics", "partitions", "brokers", "features", "configs",
                       "controllers")

    offset: int | None
    timestamp: int | None
    topics: dict[str, str | None]                  # topicId -> name
    partitions: dict[tuple[str, int], PartitionState]
    brokers: dict[int, BrokerState]
    features: dict[str, int]
    configs: dict[tuple[str, str], dict[str, str]]   # (type, name) -> configs
    controllers: dict[int, ControllerState]

    def __init__(self, offset: int | None, timestamp: int | None, topics: dict[str, str | None],
                 partitions: dict[tuple[str, int], PartitionState], brokers: dict[int, BrokerState],
                 features: dict[str, int], configs: dict[tuple[str, str], dict[str, str]] | None = None,
                 controllers: dict[int, ControllerState] | None = None) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.topics = topics
        self.partitions = partitions
        self.brokers = brokers
        self.features = features
        self.configs = dict() if configs is None else configs
        self.controllers = dict() if controllers is None else controllers


class ReplayCounts(Value):
    __match_args__ = ("records", "partition_changes", "elections", "unclean_elections", "topics_created",
                      "topics_deleted", "topics_recreated", "broker_changes", "untracked")

    records: int
    partition_changes: int
    elections: int
    unclean_elections: int
    topics_created: int
    topics_deleted: int
    topics_recreated: int
    broker_changes: int
    untracked: int

    def __init__(self, records: int = 0, partition_changes: int = 0, elections: int = 0,
                 unclean_elections: int = 0, topics_created: int = 0, topics_deleted: int = 0,
                 topics_recreated: int = 0, broker_changes: int = 0, untracked: int = 0) -> None:
        self.records = records
        self.partition_changes = partition_changes
        self.elections = elections
        self.unclean_elections = unclean_elections
        self.topics_created = topics_created
        self.topics_deleted = topics_deleted
        self.topics_recreated = topics_recreated
        self.broker_changes = broker_changes
        self.untracked = untracked


def _ids(v: Any) -> tuple[int, ...]:
    """Broker ids as a tuple, one shared tuple per distinct list (a cluster's partitions mostly
    repeat a few replica sets: 300,000 partitions hold a few hundred tuples, not 1.2 million lists)."""
    ids = tuple(x for x in v if isinstance(x, int)) if isinstance(v, list) else ()
    shared = _SHARED_IDS.get(ids)
    if shared is not None:
        return shared
    if len(_SHARED_IDS) >= MAX_SHARED_IDS:
        _SHARED_IDS.clear()
    _SHARED_IDS[ids] = ids
    return ids


# the id tuples _ids has handed out (bounded: past it, begun again; sharing only saves memory)
_SHARED_IDS: dict[tuple[int, ...], tuple[int, ...]] = {}
MAX_SHARED_IDS = 65536


def _listed(ids: tuple[int, ...] | None) -> str:
    return "None" if ids is None else str(list(ids))


def _endpoint(e: Any) -> str:
    if not isinstance(e, dict):
        return "?"
    return f"{e.get('name')}://{e.get('host')}:{e.get('port')}"


class MetadataReplay:
    """Applies metadata records in log order; :meth:`apply` returns the events each record makes."""

    def __init__(self) -> None:
        self.topics: dict[str, str | None] = {}                 # live topic id -> name
        self.names: dict[str, tuple[str, int | None]] = {}      # name -> (last topic id, deleted at offset)
        self.partitions: dict[tuple[str, int], PartitionState] = {}
        self.brokers: dict[int, BrokerState] = {}
        self.controllers: dict[int, ControllerState] = {}
        self.features: dict[str, int] = {}
        self.configs: dict[tuple[str, str], dict[str, str]] = {}   # (resource type name, resource name)
        self.counts = ReplayCounts()
        self.last_offset: int | None = None
        self.last_timestamp: int | None = None

    # --- applying -------------------------------------------------------------------------------
    def apply(self, d: DecodedRecord, place: RecordPlace, snapshot: bool = False) -> list[MetadataEvent]:
        """Apply one decoded record; the events it makes (none for most record types)."""
        self.counts.records += 1
        self.last_offset, self.last_timestamp = d.offset, d.timestamp
        if d.control is not None or d.value is None or not isinstance(d.value.data, dict):
            return []
        name, v = d.value.schema, d.value.data
        handler = _HANDLERS.get(name or "")
        if handler is None:
            return []
        return handler(self, d, v, place, snapshot)

    def _topic(self, d: DecodedRecord, v: dict, place: RecordPlace, snapshot: bool) -> list[MetadataEvent]:
        name, tid = v.get("name"), v.get("topicId")
        if not isinstance(tid, str):
            return []
        if tid not in self.topics and len(self.topics) >= MAX_PARTITIONS:
            self.counts.untracked += 1
            return []
        before = self.names.get(name) if isinstance(name, str) else None
        self.topics[tid] = name if isinstance(name, str) else None
        if isinstance(name, str) and (name in self.names or len(self.names) < MAX_TOPIC_NAMES):
            self.names[name] = (tid, None)
        ev = TopicChange(d.offset, d.timestamp, name, tid, "created", None, None, snapshot, place)
        if before is not None and before[0] != tid:
            ev.change, ev.previous_topic_id, ev.previous_deleted_at = "recreated", before[0], before[1]
            ev.findings.append(_finding(Code.TOPIC_RECREATED, place,
                                        f"topic {name} re-created at offset {d.offset} with topic id {tid}; it was "
                                        f"{before[0]}" + (f", deleted at offset {before[1]}" if before[1] is not None
                                                          else "")))
            self.counts.topics_recreated += 1
        self.counts.topics_created += 1
        return [ev]

    def _remove_topic(self, d: DecodedRecord, v: dict, place: RecordPlace, snapshot: bool) -> list[MetadataEvent]:
        tid = v.get("topicId")
        if not isinstance(tid, str):
            return []
        name = self.topics.pop(tid, None)
        if name is not None:
            self.names[name] = (tid, d.offset)
            self.configs.pop(("TOPIC", name), None)
        for key in [k for k in self.partitions if k[0] == tid]:
            del self.partitions[key]
        self.counts.topics_deleted += 1
        return [TopicChange(d.offset, d.timestamp, name, tid, "deleted", None, None, snapshot, place)]

    def _slot(self, v: dict) -> tuple[str, int, PartitionState | None] | None:
        """The partition a PartitionRecord or PartitionChangeRecord value names and its state so far;
        None when the value names none, or when it is new and the partitions followed are at their bound."""
        tid, pid = v.get("topicId"), v.get("partitionId")
        if not isinstance(tid, str) or not isinstance(pid, int):
            return None
        tid = sys.intern(tid)   # one string per topic, not one per partition record
        previous = self.partitions.get((tid, pid))
        if previous is None and len(self.partitions) >= MAX_PARTITIONS:
            self.counts.untracked += 1
            return None
        return tid, pid, previous

    def _partition(self, d: DecodedRecord, v: dict, place: RecordPlace, snapshot: bool) -> list[MetadataEvent]:
        slot = self._slot(v)
        if slot is None:
            return []
        tid, pid, previous = slot
        st = PartitionState(tid, pid, _ids(v.get("replicas")), _ids(v.get("isr")),
                            _ids(v.get("eligibleLeaderReplicas")), _ids(v.get("lastKnownElr")),
                            _int_or(v.get("leader"), NO_LEADER), _int(v.get("leaderEpoch")),
                            _int(v.get("partitionEpoch")), _int_or(v.get("leaderRecoveryState"), RECOVERED))
        self.partitions[(tid, pid)] = st
        return [self._change(d, "PartitionRecord", st, previous, place, snapshot,
                             v.get("leaderRecoveryState") == RECOVERING)]

    def _partition_change(self, d: DecodedRecord, v: dict, place: RecordPlace, snapshot: bool
                          ) -> list[MetadataEvent]:
        slot = self._slot(v)
        if slot is None:
            return []
        tid, pid, previous = slot
        st = _merged(previous, tid, pid, v)
        self.partitions[(tid, pid)] = st
        return [self._change(d, "PartitionChangeRecord", st, previous, place, snapshot,
                             v.get("leaderRecoveryState") == RECOVERING)]

    def _change(self, d: DecodedRecord, record: str, st: PartitionState, previous: PartitionState | None,
                place: RecordPlace, snapshot: bool, recovering: bool) -> PartitionChange:
        # the first leader of a partition being created (or copied from a snapshot) is no election
        election = not snapshot and st.leader >= 0 and (
            st.leader != previous.leader if previous is not None else record == "PartitionChangeRecord")
        reason = None
        if recovering:
            reason = "leader-recovery-state"
        elif election and previous is not None and previous.isr is not None and previous.elr is not None \
                and st.leader not in previous.isr + previous.elr:
            reason = "leader-not-in-isr"
        ev = PartitionChange(d.offset, d.timestamp, self.topics.get(st.topic_id), st.topic_id, st.partition, record,
                             snapshot, _copy(st), previous, election, reason is not None, reason, place)
        if reason is not None:
            ev.findings.append(_finding(Code.UNCLEAN_ELECTION, place, _unclean_message(ev)))
            self.counts.unclean_elections += 1
        self.counts.partition_changes += 1
        self.counts.elections += election
        return ev

    def _broker(self, d: DecodedRecord, v: dict, place: RecordPlace, snapshot: bool) -> list[MetadataEvent]:
        name = d.value.schema if d.value is not None else None
        bid = v.get("brokerId", v.get("id"))
        if not isinstance(bid, int):
            return []
        b = self.brokers.get(bid)
        if b is None:
            if len(self.brokers) >= MAX_BROKERS:
                self.counts.untracked += 1
                return []
            b = BrokerState(bid)
        epoch = _int(v.get("brokerEpoch", v.get("epoch")))
        changes: list[str] = []
        if name == "RegisterBrokerRecord":
            b = BrokerState(bid, epoch, v.get("incarnationId"), [_endpoint(e) for e in v.get("endPoints") or ()],
                            v.get("rack"), bool(v.get("fenced", True)), bool(v.get("inControlledShutdown", False)),
                            d.offset)
            changes.append("registered")
        elif name == "UnregisterBrokerRecord":
            self.brokers.pop(bid, None)
            self.counts.broker_changes += 1
            return [BrokerChange(d.offset, d.timestamp, bid, "unregistered", epoch, None, snapshot, place)]
        elif name in ("FenceBrokerRecord", "UnfenceBrokerRecord"):
            b.fenced = name == "FenceBrokerRecord"
            changes.append("fenced" if b.fenced else "unfenced")
        else:  # BrokerRegistrationChangeRecord
            if v.get("fenced") in (1, -1):
                b.fenced = v.get("fenced") == 1
                changes.append("fenced" if b.fenced else "unfenced")
            if v.get("inControlledShutdown") == 1:
                b.in_controlled_shutdown = True
                changes.append("controlled-shutdown")
        self.brokers[bid] = b
        self.counts.broker_changes += len(changes)
        return [BrokerChange(d.offset, d.timestamp, bid, c, epoch, _copy_broker(b), snapshot, place) for c in changes]

    def _controller(self, d: DecodedRecord, v: dict, place: RecordPlace, snapshot: bool) -> list[MetadataEvent]:
        cid = v.get("controllerId")
        if not isinstance(cid, int):
            return []
        if d.value is not None and d.value.schema == "UnregisterControllerRecord":
            self.controllers.pop(cid, None)
        elif cid in self.controllers or len(self.controllers) < MAX_BROKERS:
            self.controllers[cid] = ControllerState(cid, v.get("incarnationId"),
                                                    [_endpoint(e) for e in v.get("endPoints") or ()], d.offset)
        else:
            self.counts.untracked += 1
        return []

    def _feature(self, d: DecodedRecord, v: dict, place: RecordPlace, snapshot: bool) -> list[MetadataEvent]:
        name, level = v.get("name"), v.get("featureLevel")
        if isinstance(name, str) and isinstance(level, int):
            if level == 0:
                self.features.pop(name, None)
            elif name in self.features or len(self.features) < MAX_BROKERS:
                self.features[name] = level
        return []

    def _config(self, d: DecodedRecord, v: dict, place: RecordPlace, snapshot: bool) -> list[MetadataEvent]:
        rtype, rname, name, value = v.get("resourceType"), v.get("resourceName"), v.get("name"), v.get("value")
        if not isinstance(rtype, int) or not isinstance(rname, str) or not isinstance(name, str):
            return []
        key = (enum_name(CONFIG_RESOURCE_TYPES, rtype), rname)
        configs = self.configs.get(key)
        if value is None:
            if configs is not None:
                configs.pop(name, None)
                if not configs:
                    del self.configs[key]
        elif configs is None and len(self.configs) >= MAX_PARTITIONS or configs is not None and \
                name not in configs and len(configs) >= MAX_CONFIGS:
            self.counts.untracked += 1
        else:
            self.configs.setdefault(key, {})[name] = str(value)
        return []

    # --- reading ---------------------------------------------------------------------------------
    def state(self) -> ClusterState:
        """The cluster as the records applied so far leave it (the replay's own objects: copy to keep)."""
        return ClusterState(self.last_offset, self.last_timestamp, self.topics, self.partitions, self.brokers,
                            self.features, self.configs, self.controllers)


_HANDLERS = {
    "TopicRecord": MetadataReplay._topic,
    "RemoveTopicRecord": MetadataReplay._remove_topic,
    "PartitionRecord": MetadataReplay._partition,
    "PartitionChangeRecord": MetadataReplay._partition_change,
    "RegisterBrokerRecord": MetadataReplay._broker,
    "UnregisterBrokerRecord": MetadataReplay._broker,
    "FenceBrokerRecord": MetadataReplay._broker,
    "UnfenceBrokerRecord": MetadataReplay._broker,
    "BrokerRegistrationChangeRecord": MetadataReplay._broker,
    "RegisterControllerRecord": MetadataReplay._controller,
    "UnregisterControllerRecord": MetadataReplay._controller,
    "FeatureLevelRecord": MetadataReplay._feature,
    "ConfigRecord": MetadataReplay._config,
}


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _int_or(x: Any, default: int) -> int:
    return x if isinstance(x, int) and not isinstance(x, bool) else default


def _copy(st: PartitionState) -> PartitionState:
    return PartitionState(st.topic_id, st.partition, st.replicas, st.isr, st.elr, st.last_known_elr,  # (tuples)
                          st.leader, st.leader_epoch, st.partition_epoch, st.leader_recovery_state)


def _copy_broker(b: BrokerState) -> BrokerState:
    return BrokerState(b.broker, b.epoch, b.incarnation_id, list(b.endpoints), b.rack, b.fenced,
                       b.in_controlled_shutdown, b.registered_at)


def _merged(previous: PartitionState | None, tid: str, pid: int, v: dict) -> PartitionState:
    """``previous`` with a PartitionChangeRecord's present fields applied (as PartitionRegistration.merge)."""
    st = _copy(previous) if previous is not None else PartitionState(tid, pid)
    for name, attr in (("replicas", "replicas"), ("isr", "isr"), ("eligibleLeaderReplicas", "elr"),
                       ("lastKnownElr", "last_known_elr")):
        if isinstance(v.get(name), list):
            setattr(st, attr, _ids(v[name]))
    leader = _int_or(v.get("leader"), NO_LEADER_CHANGE)
    if leader != NO_LEADER_CHANGE:
        st.leader = leader
        if st.leader_epoch is not None:
            st.leader_epoch += 1
    lrs = _int_or(v.get("leaderRecoveryState"), -1)
    if lrs != -1:
        st.leader_recovery_state = lrs
    if st.partition_epoch is not None:
        st.partition_epoch += 1
    return st


def _finding(code: Code, place: RecordPlace, message: str) -> Finding:
    return Finding(code, place.position, message, source_offset=place.source_offset)


def _unclean_message(ev: PartitionChange) -> str:
    name = ev.topic if ev.topic is not None else ev.topic_id
    if ev.unclean_reason == "leader-recovery-state":
        return (f"{name}-{ev.partition}: unclean election at offset {ev.offset}: leader {ev.state.leader} is "
                f"RECOVERING (elected from outside the ISR)")
    prev = ev.previous
    assert prev is not None
    return (f"{name}-{ev.partition}: unclean election at offset {ev.offset}: new leader {ev.state.leader} was not "
            f"in the ISR {_listed(prev.isr)}" + (f" nor the ELR {_listed(prev.elr)}" if prev.elr else "")
            + f" (previous leader {prev.leader})")


__all__ = ["MetadataReplay", "RecordPlace", "PartitionState", "PartitionChange", "TopicChange", "BrokerState",
           "ControllerState", "BrokerChange", "MetadataEvent", "ClusterState", "ReplayCounts", "MAX_PARTITIONS", "MAX_BROKERS",
           "MAX_CONFIGS"]
