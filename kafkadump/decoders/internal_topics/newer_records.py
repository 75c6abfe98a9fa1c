"""Record types of Kafka's internal topics added after the generated schema tables.

The tables (:mod:`kafkadump.decoders.protocol.tables.records`) are generated from the
schema files beside the project, which stop before Kafka 4.x.  Kafka 4.x
writes more record types; this module holds what is known of them, as facts
transcribed from Kafka's own schema files (same entry format as the tables,
described in :mod:`kafkadump.decoders.protocol.tables`):

    __consumer_offsets key version (record type)
        16      ConsumerGroupRegularExpression   key and value layouts (KIP-848, Kafka 4.0)
        17-24   the streams group records         key layouts only (KIP-1071): Kafka marks
                (Metadata, PartitionMetadata,      their values "subject to non-backwards-compatible
                MemberMetadata, TargetAssignment-  changes", so no value layout is trusted here:
                Metadata, TargetAssignmentMember,  the value is named, kept raw, and an info
                CurrentMemberAssignment, Topology, finding (``internal-layout-unknown``) says so
                TargetAssignmentResolvedTopicIds)
    __cluster_metadata apiKey
        28      ClearElrRecord                    TopicName (KIP-966, Kafka 4.0)
        29      UnregisterControllerRecord        ControllerId (Kafka 4.1)

A coordinator key schema's valid versions are its record type, as in the
tables.  A name in the tables wins over the same name here (a regenerated
table is the better source).  Nothing here is guessed: a record type whose
value layout is not known is in :data:`VALUE_LAYOUT_UNKNOWN`, never decoded.
"""

from __future__ import annotations

_OPEN = 32767
_ALL = [0, _OPEN]


def _field(name: str, typ: str, versions: list[int]) -> list:
    """A plain field (not nullable, not tagged, no default) in the tables' 9-element form."""
    return [name, typ, versions, None, None, None, [], None, False]


def _coordinator_key(type_id: int, *names: str) -> dict:
    """A coordinator key schema of string fields, valid at its record type only (flexible: none)."""
    at = [type_id, type_id]
    return {"type": "data", "valid": at, "flexible": None, "fields": [_field(n, "string", at) for n in names],
            "group": "group-coordinator"}


# streams group record types (KIP-1071), key version -> record name (Key/Value appended)
STREAMS_GROUP_TYPES = {
    17: "StreamsGroupMetadata",
    18: "StreamsGroupPartitionMetadata",
    19: "StreamsGroupMemberMetadata",
    20: "StreamsGroupTargetAssignmentMetadata",
    21: "StreamsGroupTargetAssignmentMember",
    22: "StreamsGroupCurrentMemberAssignment",
    23: "StreamsGroupTopology",
    24: "StreamsGroupTargetAssignmentResolvedTopicIds",
}
_STREAMS_MEMBER_KEYS = {19, 21, 22}  # keyed by group and member; the others by group alone

LAYOUTS: dict[str, dict] = {
    "ConsumerGroupRegularExpressionKey": _coordinator_key(16, "GroupId", "RegularExpression"),
    "ConsumerGroupRegularExpressionValue": {
        "type": "data", "valid": [0, 0], "flexible": _ALL, "group": "group-coordinator",
        "fields": [_field("Topics", "[]string", _ALL), _field("Version", "int64", _ALL),
                   _field("Timestamp", "int64", _ALL)]},
    **{f"{name}Key": _coordinator_key(t, "GroupId", *(("MemberId",) if t in _STREAMS_MEMBER_KEYS else ()))
       for t, name in STREAMS_GROUP_TYPES.items()},
    "ClearElrRecord": {
        "type": "metadata", "valid": [0, 0], "flexible": _ALL, "apiKey": 28, "group": "metadata",
        "fields": [_field("TopicName", "string", _ALL)]},
    "UnregisterControllerRecord": {
        "type": "metadata", "valid": [0, 0], "flexible": _ALL, "apiKey": 29, "group": "metadata",
        "fields": [_field("ControllerId", "int32", _ALL)]},
}

# value schemas whose record type is known by name but whose layout is not: kept raw
VALUE_LAYOUT_UNKNOWN = frozenset(f"{name}Value" for name in STREAMS_GROUP_TYPES.values())


__all__ = ["LAYOUTS", "VALUE_LAYOUT_UNKNOWN", "STREAMS_GROUP_TYPES"]
