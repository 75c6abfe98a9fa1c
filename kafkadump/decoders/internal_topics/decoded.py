"""What the internal-topic decoder hands to renderers and the summarizer."""

from __future__ import annotations


class Part:
    """A decoded key or value (or a payload embedded in one).

    ``schema`` is the schema's name in the generated tables
    (``OffsetCommitKey``, ``TopicRecord``, ``LeaderChangeMessage``, ...), or
    None when the bytes name no schema the tables know (then ``data`` is
    None and only ``raw`` is shown).  ``version`` is the version the bytes
    declare (also when it is beyond the tables).  ``data`` is the decoded
    struct (dict, field names in camelCase, as
    :func:`kafkadump.decoders.protocol.decoder.decode_message` returns them), with
    embedded payloads replaced by nested :class:`Part` objects; None when
    nothing could be decoded.  ``partial`` is True when decoding stopped
    before the end (the reason is a finding).  ``frame_version`` and
    ``api_key`` are set for KRaft metadata and remote-log-metadata values
    (the frame before the record).  ``raw`` is every byte of the key/value.
    """

    __slots__ = ("schema", "version", "data", "raw", "partial", "frame_version", "api_key")

    def __init__(self, schema, version, data, raw, partial=False, frame_version=None, api_key=None):
        self.schema = schema
        self.version = version
        self.data = data
        self.raw = raw
        self.partial = partial
        self.frame_version = frame_version
        self.api_key = api_key

    @property
    def decoded(self) -> bool:
        return self.data is not None

    def __repr__(self) -> str:  # pragma: no cover
        return f"Part({self.schema} v{self.version}{' partial' if self.partial else ''}: {self.data!r})"


class DecodedRecord:
    """One record of an internal topic, decoded.

    ``key``/``value`` are :class:`Part` objects, or None when the record's
    key/value is null.  ``tombstone``: the key decoded and the value is null
    (log compaction will delete the key).  ``control`` is the control
    record type name for records of control batches (their key is a
    ``ControlRecordKey`` part), else None.  ``findings`` are this record's
    decoding problems, with absolute offsets (as every finding).
    """

    __slots__ = ("kind", "offset", "timestamp", "key", "value", "control", "findings")

    def __init__(self, kind, offset, timestamp, key, value, control=None, findings=None):
        self.kind = kind
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.control = control
        self.findings = findings if findings is not None else []

    @property
    def tombstone(self) -> bool:
        return self.value is None and self.key is not None and self.control is None

    def __repr__(self) -> str:  # pragma: no cover
        return f"DecodedRecord({self.kind}@{self.offset}: key={self.key!r} value={self.value!r})"


__all__ = ["Part", "DecodedRecord"]
