"""What an internal topic's records say, folded into state: for triage and reports.

    s = Summary("offsets")
    for d in decoded_records:          # DecodedRecord objects, in log order (segment by segment)
        s.add(d)
    report = s.result()                # a JSON-ready dict
    # or: summarize("offsets", decoded_records)
    # or, straight from the shared decoder's batches (decodes them; returns the findings):
    findings = s.add_batch(batch)

A Summary is a plain picklable object (worker processes can fill one per
partition and send it back).

Records are applied in the order given, as the broker replays the log:
a later record for a key replaces the earlier one, a tombstone deletes
it.  Deleted entries are kept with ``"deleted": true`` (and the record
offset that deleted them) because for an investigation "this group's
offsets were deleted at offset N" matters as much as the offsets.  Every
entry carries ``recordOffset``, the log offset of the record it was last
set from.  Byte fields become hex strings.  Records that did not decode
(no ``data``) are counted under ``undecoded`` and otherwise ignored.

Shape per kind (besides ``kind``, ``records``, ``tombstones``,
``controlRecords``, ``undecoded``, ``findings``, ``recordTypes``):

``offsets``
    ``groups``: {group: {"type": "classic"|"consumer"|"share" (null: only offsets seen), "deleted",
    classic: "protocolType", "generation", "protocol", "leader",
    "currentStateTimestamp", "members": [{memberId, groupInstanceId,
    clientId, clientHost, sessionTimeout, rebalanceTimeout,
    "subscribedTopics", "assignedPartitions": {topic: [partitions]}}];
    consumer/share (KIP-848/932 records): one entry per record type
    (``metadata``, ``partitionMetadata``, ``targetAssignmentMetadata``,
    ``statePartitionMetadata``) and ``members``: {memberId: {one entry per
    record type: memberMetadata, targetAssignmentMember,
    currentMemberAssignment}};
    "offsets": {topic: {partition: {offset, leaderEpoch, metadata,
    commitTimestamp, expireTimestamp, recordOffset, deleted}}}};
    ``committedOffsets`` (live ones), ``groupCount``.
``transactions``
    ``transactionalIds``: {id: {state, stateCode, producerId,
    producerEpoch, previousProducerId, nextProducerId, timeoutMs,
    partitions: {topic: [partitions]}, lastUpdateTimestamp,
    startTimestamp, recordOffset, deleted}}; ``open``: the ids whose
    state is Ongoing, PrepareCommit, PrepareAbort or PrepareEpochFence;
    ``states``: {state: count}.
``metadata``
    ``topics``: {topicId: {name, createdAt, deleted, deletedAt,
    partitions: {partition: {replicas, isr, leader, leaderEpoch,
    partitionEpoch, ..., changes, recordOffset}}}}; ``topicsCreated`` / ``topicsDeleted``
    (names, in log order); ``brokers``: {id: {epoch, incarnationId,
    endpoints, rack, fenced, inControlledShutdown, registeredAt,
    unregistered}}; ``controllers``; ``features``: {name: level};
    ``configs``: {"TOPIC:name": {key: value}}; ``leaderChanges``:
    [{recordOffset, leaderId, voters}]; ``producerIds``; ``snapshot``
    (header/footer seen); ``zkMigrationState``.  A partition is its last
    PartitionRecord with the later PartitionChangeRecords applied as the
    controller applies them (``changes`` counts those).
``share-state``
    ``shareGroups``: {group: {topicId: {partition: {snapshotEpoch,
    stateEpoch, leaderEpoch, startOffset, stateBatches, updates,
    recordOffset, deleted}}}}.
``remote-log-metadata``
    ``segments``: {segmentId: {topic, topicId, partition, startOffset,
    endOffset, brokerId, state, eventTimestampMs, recordOffset, ...}};
    ``partitionDeletes``: {"topic-partition": {state, ...}}; ``states``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kafkadump.decoders.internal_topics import constants as K
from kafkadump.decoders.internal_topics.decoded import DecodedRecord, Part

if TYPE_CHECKING:
    from kafkadump.base.findings import Finding
    from kafkadump.decoders.batches.model import Batch, Gap


def summarize(kind: str, decoded: Iterable[DecodedRecord]) -> dict[str, Any]:
    """Fold an iterable of :class:`DecodedRecord` (log order) into a JSON-ready dict."""
    s = Summary(kind)
    for d in decoded:
        s.add(d)
    return s.result()


def _plain(v: object) -> Any:
    """JSON-ready: Parts become their data, bytes hex, dict/list recursively."""
    if isinstance(v, Part):
        return _plain(v.data) if v.data is not None else v.raw.hex()
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, float) and v != v:  # NaN is not JSON
        return "NaN"
    return v


def _camel(name: str) -> str:
    return name[:1].lower() + name[1:]


class Summary:
    """Accumulates one kind's state; :meth:`add` records in log order, :meth:`result` at the end."""

    def __init__(self, kind: str) -> None:
        if kind not in K.KINDS:
            raise ValueError(f"unknown internal topic kind {kind!r}")
        self.kind = kind
        self.counts: Counter[str] = Counter()
        self.types: Counter[str] = Counter()
        self.state: dict[str, Any] = {}
        self.position: int | None = None   # file offset of the batch being added (add_batch)

    def add_batch(self, batch: Batch | Gap) -> list[Finding]:
        """Decode the records of one :class:`~kafkadump.decoders.batches.model.Batch` (or gap: nothing) and
        add them; returns their decoding findings (absolute offsets) for the caller's report."""
        from kafkadump.decoders.batches.model import Batch
        from kafkadump.decoders.internal_topics.record_decoder import decoder_for

        dec = decoder_for(self.kind)
        findings: list[Finding] = []
        if not isinstance(batch, Batch):  # a gap has no records
            return findings
        self.position = batch.position
        for r in batch.records or ():
            d = dec.decode_record(r, batch)
            findings += d.findings
            self.add(d)
        return findings

    def add(self, d: DecodedRecord) -> None:
        c = self.counts
        c["records"] += 1
        c["findings"] += len(d.findings)
        if d.control is not None:
            c["controlRecords"] += 1
        if d.tombstone:
            c["tombstones"] += 1
        # a metadata record's key is not part of it (Kafka writes none)
        framed = self.kind in (K.METADATA, K.REMOTE_LOG_METADATA) and d.control is None
        for p in ((d.value,) if framed else (d.key, d.value)):
            if p is not None and (p.data is None or p.partial):
                c["undecoded"] += 1
                return
        for p in (d.value, d.key):
            if p is not None and p.schema:
                self.types[p.schema] += 1
                break
        getattr(self, "_" + self.kind.replace("-", "_"))(d)

    def result(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        for k in ("records", "tombstones", "controlRecords", "undecoded", "findings"):
            out[k] = self.counts[k]
        out["recordTypes"] = dict(sorted(self.types.items()))
        out.update(getattr(self, "_result_" + self.kind.replace("-", "_"))())
        return _plain(out)

    # --- __consumer_offsets -------------------------------------------------------------------------

    def _group(self, name: str, typ: str | None = None) -> dict:
        groups = self.state.setdefault("groups", {})
        g = groups.get(name)
        if g is None:
            g = groups[name] = {"type": typ, "deleted": False}
        elif typ is not None:
            g["type"] = typ  # the latest record's protocol (a classic group can be converted, KIP-848)
        return g

    def _offsets(self, d: DecodedRecord) -> None:
        if d.control is not None or d.key is None:
            return
        k = d.key.data
        schema = d.key.schema
        v = d.value.data if d.value is not None else None
        if schema == "OffsetCommitKey":
            g = self._group(k["group"])
            parts = g.setdefault("offsets", {}).setdefault(k["topic"], {})
            e = parts.setdefault(str(k["partition"]), {})
            if v is None:
                e["deleted"] = True
            else:
                e.clear()
                e.update({f: v.get(f) for f in ("offset", "leaderEpoch", "metadata", "commitTimestamp",
                                                "expireTimestamp") if f in v})
                e["deleted"] = False
            e["recordOffset"] = d.offset
        elif schema == "GroupMetadataKey":
            g = self._group(k["group"], "classic")
            g["recordOffset"] = d.offset
            if v is None:
                g["deleted"] = True
                return
            g["deleted"] = False
            for f in ("protocolType", "generation", "protocol", "leader", "currentStateTimestamp"):
                if f in v:
                    g[f] = v[f]
            g["members"] = [_classic_member(m) for m in v.get("members") or ()]
        elif schema and (schema.startswith("ConsumerGroup") or schema.startswith("ShareGroup")):
            typ = "consumer" if schema.startswith("ConsumerGroup") else "share"
            what = _camel(schema[len("ConsumerGroup" if typ == "consumer" else "ShareGroup"):-len("Key")])
            g = self._group(k["groupId"], typ)
            holder = g
            if "memberId" in k:
                holder = g.setdefault("members", {}).setdefault(k["memberId"], {})
            if v is None:
                holder[what] = {"deleted": True, "recordOffset": d.offset}
                if what == "metadata":
                    g["deleted"] = True
            else:
                holder[what] = {**v, "recordOffset": d.offset}
                if what == "metadata":
                    g["deleted"] = False

    def _result_offsets(self) -> dict:
        groups = self.state.get("groups", {})
        live = sum(1 for g in groups.values() for t in g.get("offsets", {}).values()
                   for e in t.values() if not e.get("deleted"))
        return {"groupCount": len(groups), "committedOffsets": live,
                "groups": {name: groups[name] for name in sorted(groups)}}

    # --- __transaction_state ----------------------------------------------------------------------

    def _transactions(self, d: DecodedRecord) -> None:
        if d.control is not None or d.key is None or d.key.schema != "TransactionLogKey":
            return
        txns = self.state.setdefault("transactionalIds", {})
        tid = d.key.data.get("transactionalId")
        e = txns.setdefault(tid, {})
        e["recordOffset"] = d.offset
        if d.value is None:
            e["deleted"] = True
            return
        v = d.value.data
        code = v.get("transactionStatus")
        e.clear()
        e.update({
            "state": K.enum_name(K.TRANSACTION_STATES, code), "stateCode": code,
            "producerId": v.get("producerId"), "producerEpoch": v.get("producerEpoch"),
            "previousProducerId": v.get("previousProducerId", -1), "nextProducerId": v.get("nextProducerId", -1),
            # 2: transactions v2 (KIP-890), markers one epoch above the data, the epoch bumped every transaction
            "clientTransactionVersion": v.get("clientTransactionVersion", 0),
            "timeoutMs": v.get("transactionTimeoutMs"),
            "partitions": {p.get("topic"): p.get("partitionIds") for p in v.get("transactionPartitions") or ()},
            "lastUpdateTimestamp": v.get("transactionLastUpdateTimestampMs"),
            "startTimestamp": v.get("transactionStartTimestampMs"),
            "recordOffset": d.offset, "deleted": False,
        })

    def _result_transactions(self) -> dict:
        txns = self.state.get("transactionalIds", {})
        live = {t: e for t, e in txns.items() if not e.get("deleted") and "state" in e}
        return {
            "transactionalIds": {t: txns[t] for t in sorted(txns, key=str)},
            "open": sorted((t for t, e in live.items() if e["stateCode"] in K.OPEN_TRANSACTION_STATES), key=str),
            "states": dict(sorted(Counter(e["state"] for e in live.values()).items())),
        }

    # --- __cluster_metadata -----------------------------------------------------------------------

    def _metadata(self, d: DecodedRecord) -> None:
        st = self.state
        if d.control is not None:
            v = d.value.data if d.value is not None else None
            if d.control == "LEADER_CHANGE" and v is not None:
                st.setdefault("leaderChanges", []).append({
                    "recordOffset": d.offset, "leaderId": v.get("leaderId"),
                    "voters": [x.get("voterId") for x in v.get("voters") or ()]})
            elif d.control == "SNAPSHOT_HEADER":
                st.setdefault("snapshot", {})["header"] = {"recordOffset": d.offset, **(v or {})}
            elif d.control == "SNAPSHOT_FOOTER":
                st.setdefault("snapshot", {})["footer"] = {"recordOffset": d.offset}
            elif d.control in ("KRAFT_VERSION", "KRAFT_VOTERS") and v is not None:
                st[_camel(d.control.title().replace("_", ""))] = {"recordOffset": d.offset, **v}
            return
        if d.value is None:
            return
        name, v, off = d.value.schema, d.value.data, d.offset
        topics = st.setdefault("topics", {})
        if name == "TopicRecord":
            topics[v["topicId"]] = {"name": v["name"], "createdAt": off, "deleted": False, "partitions": {}}
            st.setdefault("topicsCreated", []).append(v["name"])
        elif name == "RemoveTopicRecord":
            t = topics.setdefault(v["topicId"], {"name": None, "partitions": {}})
            t["deleted"] = True
            t["deletedAt"] = off
            st.setdefault("topicsDeleted", []).append(t["name"] if t["name"] is not None else v["topicId"])
        elif name == "PartitionRecord":
            t = topics.setdefault(v["topicId"], {"name": None, "deleted": False, "partitions": {}})
            p = {k: x for k, x in v.items() if k not in ("topicId", "partitionId", "_rawTaggedFields")}
            p["recordOffset"] = off
            p["changes"] = 0
            t["partitions"][str(v["partitionId"])] = p
        elif name == "PartitionChangeRecord":
            t = topics.setdefault(v["topicId"], {"name": None, "deleted": False, "partitions": {}})
            p = t["partitions"].setdefault(str(v["partitionId"]), {"changes": 0})
            # as PartitionRegistration.merge: absent (null) fields keep their value; a leader
            # (even the same one) bumps the leader epoch; every change bumps the partition epoch
            for k, x in v.items():
                if k in ("topicId", "partitionId", "_rawTaggedFields") or (k == "leader" and x == -2) \
                        or (k == "leaderRecoveryState" and x == -1) or x is None:
                    continue
                p[k] = x
            if "leader" in v and v["leader"] != -2 and isinstance(p.get("leaderEpoch"), int):
                p["leaderEpoch"] += 1
            if isinstance(p.get("partitionEpoch"), int):
                p["partitionEpoch"] += 1
            p["changes"] = p.get("changes", 0) + 1
            p["recordOffset"] = off
        elif name == "RegisterBrokerRecord":
            st.setdefault("brokers", {})[str(v["brokerId"])] = {
                "epoch": v.get("brokerEpoch"), "incarnationId": v.get("incarnationId"),
                "endpoints": [_endpoint(e) for e in v.get("endPoints") or ()], "rack": v.get("rack"),
                "fenced": v.get("fenced"), "inControlledShutdown": v.get("inControlledShutdown", False),
                "registeredAt": off, "unregistered": False}
        elif name == "UnregisterBrokerRecord":
            b = st.setdefault("brokers", {}).setdefault(str(v["brokerId"]), {})
            b["unregistered"] = True
            b["unregisteredAt"] = off
        elif name in ("FenceBrokerRecord", "UnfenceBrokerRecord"):
            b = st.setdefault("brokers", {}).setdefault(str(v["id"]), {})
            b["fenced"] = name == "FenceBrokerRecord"
        elif name == "BrokerRegistrationChangeRecord":
            b = st.setdefault("brokers", {}).setdefault(str(v["brokerId"]), {})
            fenced = v.get("fenced", 0)  # BrokerRegistrationFencingChange: 1 fence, -1 unfence, 0 none
            if fenced in (1, -1):
                b["fenced"] = fenced == 1
            if v.get("inControlledShutdown", 0) == 1:
                b["inControlledShutdown"] = True
        elif name == "RegisterControllerRecord":
            st.setdefault("controllers", {})[str(v["controllerId"])] = {
                "incarnationId": v.get("incarnationId"),
                "endpoints": [_endpoint(e) for e in v.get("endPoints") or ()], "registeredAt": off}
        elif name == "UnregisterControllerRecord":
            c = st.setdefault("controllers", {}).setdefault(str(v["controllerId"]), {})
            c["unregistered"] = True
            c["unregisteredAt"] = off
        elif name == "ClearElrRecord":
            _clear_elr(topics, v.get("topicName") or "")
        elif name == "FeatureLevelRecord":
            st.setdefault("features", {})[v["name"]] = v["featureLevel"]
        elif name == "ConfigRecord":
            rt = K.enum_name(K.CONFIG_RESOURCE_TYPES, v["resourceType"])
            cfg = st.setdefault("configs", {}).setdefault(f"{rt}:{v['resourceName']}", {})
            if v.get("value") is None:
                cfg.pop(v["name"], None)
            else:
                cfg[v["name"]] = v["value"]
        elif name == "ProducerIdsRecord":
            st["producerIds"] = {**v, "recordOffset": off}
        elif name == "ZkMigrationStateRecord":
            st["zkMigrationState"] = v.get("zkMigrationState")

    def _result_metadata(self) -> dict:
        st = self.state
        out = {
            "topics": st.get("topics", {}),
            "topicsCreated": st.get("topicsCreated", []),
            "topicsDeleted": st.get("topicsDeleted", []),
            "brokers": dict(sorted(st.get("brokers", {}).items(), key=lambda kv: int(kv[0]))),
            "controllers": dict(sorted(st.get("controllers", {}).items(), key=lambda kv: int(kv[0]))),
            "features": st.get("features", {}),
            "configs": st.get("configs", {}),
            "leaderChanges": st.get("leaderChanges", []),
        }
        for k in ("producerIds", "snapshot", "zkMigrationState", "kraftVersion", "kraftVoters"):
            if k in st:
                out[k] = st[k]
        return out

    # --- __share_group_state ----------------------------------------------------------------------

    def _share_state(self, d: DecodedRecord) -> None:
        if d.control is not None or d.key is None or d.key.schema not in ("ShareSnapshotKey", "ShareUpdateKey"):
            return
        k = d.key.data
        groups = self.state.setdefault("shareGroups", {})
        e = groups.setdefault(k["groupId"], {}).setdefault(k["topicId"], {}).setdefault(str(k["partition"]), {})
        e["recordOffset"] = d.offset
        if d.value is None:
            e["deleted"] = True
            return
        v = d.value.data
        if d.key.schema == "ShareSnapshotKey":
            e.clear()
            e.update({"snapshotEpoch": v.get("snapshotEpoch"), "stateEpoch": v.get("stateEpoch"),
                      "leaderEpoch": v.get("leaderEpoch"), "startOffset": v.get("startOffset"),
                      "stateBatches": len(v.get("stateBatches") or ()), "updates": 0,
                      "recordOffset": d.offset, "deleted": False})
        else:
            e["updates"] = e.get("updates", 0) + 1
            e["leaderEpoch"] = v.get("leaderEpoch")
            if v.get("startOffset", -1) != -1:
                e["startOffset"] = v.get("startOffset")
            e["lastUpdateStateBatches"] = len(v.get("stateBatches") or ())
            e.setdefault("deleted", False)

    def _result_share_state(self) -> dict:
        return {"shareGroups": self.state.get("shareGroups", {})}

    # --- __remote_log_metadata --------------------------------------------------------------------

    def _remote_log_metadata(self, d: DecodedRecord) -> None:
        if d.control is not None or d.value is None:
            return
        name, v, off = d.value.schema, d.value.data, d.offset
        if name in ("RemoteLogSegmentMetadataRecord", "RemoteLogSegmentMetadataUpdateRecord"):
            sid = v["remoteLogSegmentId"]
            tip = sid.get("topicIdPartition") or {}
            seg = self.state.setdefault("segments", {}).setdefault(sid.get("id"), {
                "topic": tip.get("name"), "topicId": tip.get("id"), "partition": tip.get("partition")})
            for f in ("startOffset", "endOffset", "brokerId", "maxTimestampMs", "eventTimestampMs",
                      "segmentSizeInBytes"):
                if f in v:
                    seg[f] = v[f]
            seg["state"] = K.enum_name(K.REMOTE_SEGMENT_STATES, v.get("remoteLogSegmentState"))
            seg["recordOffset"] = off
            seg["recordPosition"] = self.position  # the batch holding that record (None: not from a file)
        elif name == "RemotePartitionDeleteMetadataRecord":
            tip = v.get("topicIdPartition") or {}
            self.state.setdefault("partitionDeletes", {})[f"{tip.get('name')}-{tip.get('partition')}"] = {
                "topicId": tip.get("id"), "brokerId": v.get("brokerId"),
                "eventTimestampMs": v.get("eventTimestampMs"),
                "state": K.enum_name(K.REMOTE_PARTITION_DELETE_STATES, v.get("remotePartitionDeleteState")),
                "recordOffset": off}

    def _result_remote_log_metadata(self) -> dict:
        segs = self.state.get("segments", {})
        return {"segments": segs, "partitionDeletes": self.state.get("partitionDeletes", {}),
                "states": dict(sorted(Counter(s["state"] for s in segs.values()).items()))}


def _clear_elr(topics: dict[str, Any], topic_name: str) -> None:
    """As the controller replays a ClearElrRecord: the ELR fields of one topic's partitions (every
    topic's when the name is empty) become empty."""
    for t in topics.values():
        if topic_name and t.get("name") != topic_name:
            continue
        for p in t["partitions"].values():
            for field in ("eligibleLeaderReplicas", "lastKnownElr"):
                if field in p:
                    p[field] = []


def _classic_member(m: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {f: m.get(f) for f in ("memberId", "groupInstanceId", "clientId", "clientHost",
                                                 "sessionTimeout", "rebalanceTimeout") if f in m}
    sub, asg = m.get("subscription"), m.get("assignment")
    if isinstance(sub, Part) and sub.data is not None:
        out["subscribedTopics"] = sub.data.get("topics")
    if isinstance(asg, Part) and asg.data is not None:
        out["assignedPartitions"] = {tp.get("topic"): tp.get("partitions")
                                     for tp in asg.data.get("assignedPartitions") or ()}
    return out


def _endpoint(e: dict[str, Any]) -> str:
    """``NAME://host:port`` (the listener name; the security protocol when it differs)."""
    code = e.get("securityProtocol")
    proto = None if code is None else K.SECURITY_PROTOCOLS.get(code)
    name = e.get("name")
    s = f"{name}://{e.get('host')}:{e.get('port')}"
    return s if proto in (None, name) else f"{s} ({proto})"


__all__ = ["Summary", "summarize"]
