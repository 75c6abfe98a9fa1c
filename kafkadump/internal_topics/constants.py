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
           "REMOTE_SEGMENT_STATES", "REMOTE_PARTITION_DELETE_STATES", "SECURITY_PROTOCOLS", "ENUMS", "enum_name"]
