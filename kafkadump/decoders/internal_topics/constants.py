"""Names of the internal topics, and of the enum values their records hold.

Facts from Apache Kafka's sources (the schema files give only the integer
types): the transaction coordinator's ``TransactionState`` ids, the share
coordinator's ``RecordState``, ``ConfigResource.Type``, the remote log
metadata states, the security protocol ids of broker endpoints.  Used by
the renderers (to name values) and the summarizer; the decoder keeps the
numbers.
"""

from __future__ import annotations

# --- kinds ------------------------------------------------------------------------------------------

OFFSETS = "offsets"
TRANSACTIONS = "transactions"
METADATA = "metadata"
SHARE_STATE = "share-state"
REMOTE_LOG_METADATA = "remote-log-metadata"

KINDS = (OFFSETS, TRANSACTIONS, METADATA, SHARE_STATE, REMOTE_LOG_METADATA)

# internal topic name -> kind
TOPICS = {
    "__consumer_offsets": OFFSETS,
    "__transaction_state": TRANSACTIONS,
    "__cluster_metadata": METADATA,
    "__share_group_state": SHARE_STATE,
    "__remote_log_metadata": REMOTE_LOG_METADATA,
}

# --- enum values ----------------------------------------------------------------------------------

# org.apache.kafka.coordinator.transaction.TransactionState
TRANSACTION_STATES = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}
# states in which a transaction is not finished: data may sit in the log undecided
OPEN_TRANSACTION_STATES = frozenset({1, 2, 3, 7})

# org.apache.kafka.server.share.fetch.RecordState (share group delivery state)
DELIVERY_STATES = {0: "AVAILABLE", 1: "ACQUIRED", 2: "ACKNOWLEDGED", 3: "ARCHIVING", 4: "ARCHIVED"}

# org.apache.kafka.common.config.ConfigResource.Type
CONFIG_RESOURCE_TYPES = {0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS",
                         32: "GROUP"}

# org.apache.kafka.server.log.remote.storage.RemoteLogSegmentState / RemotePartitionDeleteState
REMOTE_SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED",
                         3: "DELETE_SEGMENT_FINISHED"}
REMOTE_PARTITION_DELETE_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED",
                                  2: "DELETE_PARTITION_FINISHED"}

# org.apache.kafka.common.security.auth.SecurityProtocol
SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}

# org.apache.kafka.server.common.MetadataVersion: the metadata.version feature level -> its release
# name, as Kafka's metadata shell and storage tool print it.  Levels 1-6 predate production KRaft
# (Kafka 4 no longer knows them); levels past the newest release are unstable, their names not yet
# fixed, and left unnamed.
METADATA_VERSIONS = {
    1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2", 7: "3.3-IV3",
    8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1", 14: "3.6-IV2",
    15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0",
    22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1",
}

# (schema, top-level field) -> names of its values, for renderers (schema None: a field of a nested struct)
ENUMS = {
    ("TransactionLogValue", "transactionStatus"): TRANSACTION_STATES,
    ("ConfigRecord", "resourceType"): CONFIG_RESOURCE_TYPES,
    ("RemoteLogSegmentMetadataRecord", "remoteLogSegmentState"): REMOTE_SEGMENT_STATES,
    ("RemoteLogSegmentMetadataUpdateRecord", "remoteLogSegmentState"): REMOTE_SEGMENT_STATES,
    ("RemotePartitionDeleteMetadataRecord", "remotePartitionDeleteState"): REMOTE_PARTITION_DELETE_STATES,
    # inside nested structs (schema None): the share state batches
    (None, "deliveryState"): DELIVERY_STATES,
}


def enum_name(table: dict, value: object) -> str:
    """``table[value]``, or ``unknown(<value>)``."""
    name = table.get(value)
    return name if name is not None else f"unknown({value})"


__all__ = ["KINDS", "TOPICS", "OFFSETS", "TRANSACTIONS", "METADATA", "SHARE_STATE", "REMOTE_LOG_METADATA",
           "TRANSACTION_STATES", "OPEN_TRANSACTION_STATES", "DELIVERY_STATES", "CONFIG_RESOURCE_TYPES",
           "REMOTE_SEGMENT_STATES", "REMOTE_PARTITION_DELETE_STATES", "SECURITY_PROTOCOLS", "METADATA_VERSIONS", "ENUMS", "enum_name"]
