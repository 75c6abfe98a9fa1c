"""Segment-level objects of the JSON contract: batch, gap, finding, record.

Each object is built here and only here; ``--json`` writes them, the table,
dump-log and Spark-row renderers read the same values.  Field names are the
spec's; the contract is documented in man/kafkadump.1 and fields are only
ever added.  Byte fields (keys, values, header values) are encoded by the
``encode`` function the caller chose (``--encoding``: base64, hex, text).
"""

from __future__ import annotations

import binascii
from collections.abc import Iterable
from typing import Any, Protocol, overload

from ..decode.model import Batch, Gap, Record
from ..findings import Finding

_b64 = binascii.b2a_base64


class Encoder(Protocol):
    """Bytes as JSON text per ``--encoding``; null stays null."""

    @overload
    def __call__(self, b: bytes, /) -> str: ...
    @overload
    def __call__(self, b: None, /) -> None: ...


@overload
def encode_base64(b: bytes) -> str: ...
@overload
def encode_base64(b: None) -> None: ...
def encode_base64(b: bytes | None) -> str | None:
    return None if b is None else _b64(b, newline=False).decode("ascii")


@overload
def encode_hex(b: bytes) -> str: ...
@overload
def encode_hex(b: None) -> None: ...
def encode_hex(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


@overload
def encode_text(b: bytes) -> str: ...
@overload
def encode_text(b: None) -> None: ...
def encode_text(b: bytes | None) -> str | None:
    return None if b is None else b.decode("utf-8", "replace")


ENCODERS: dict[str, Encoder] = {"base64": encode_base64, "hex": encode_hex, "text": encode_text}


def findings_list(findings: Iterable[Finding]) -> list[dict[str, Any]]:
    """Findings as objects: ``code``, ``severity``, ``offset``, ``message`` and, when known,
    ``length`` and ``decompressedOffset``."""
    return [f.to_dict() for f in findings]


def batch_object(b: Batch) -> dict[str, Any]:
    """A batch (or top-level legacy message) as a JSON-ready dict."""
    d: dict[str, Any] = {"type": "batch", "file": b.file, "position": b.position, "size": b.size}
    if b.magic >= 2:
        d.update({
            "baseOffset": b.base_offset,
            "batchLength": b.batch_length,
            "partitionLeaderEpoch": b.partition_leader_epoch,
            "magic": b.magic,
            "crc": b.crc,
            "attributes": b.attributes,
            "lastOffsetDelta": b.last_offset_delta,
            "baseTimestamp": b.base_timestamp,
            "maxTimestamp": b.max_timestamp,
            "producerId": b.producer_id,
            "producerEpoch": b.producer_epoch,
            "baseSequence": b.base_sequence,
            "recordCount": b.record_count,
            "lastOffset": b.last_offset,
            "lastSequence": b.last_sequence,
        })
    else:
        d.update({
            "offset": b.offset,
            "messageSize": b.message_size,
            "magic": b.magic,
            "crc": b.crc,
            "attributes": b.attributes,
            "timestamp": b.timestamp,
            "baseOffset": b.base_offset,
            "lastOffset": b.last_offset,
            "recordCount": b.record_count,
            # what Kafka reports for a legacy batch, so that one jq filter serves every magic
            "partitionLeaderEpoch": -1,
            "producerId": -1,
            "producerEpoch": -1,
            "baseSequence": -1,
        })
    d.update({
        "compression": b.compression,
        "timestampType": b.timestamp_type,
        "isTransactional": b.is_transactional,
        "isControlBatch": b.is_control,
        "hasDeleteHorizonMs": b.has_delete_horizon,
        "crcValid": b.crc_valid,
        "computedCrc": b.computed_crc,
    })
    if b.decompressed_size is not None:
        d["decompressedSize"] = b.decompressed_size
    d["findings"] = findings_list(b.findings)
    return d


def gap_object(g: Gap) -> dict[str, Any]:
    """Bytes that are not a batch, with the findings that say why."""
    return {"type": "gap", "file": g.file, "position": g.position, "size": g.size,
            "findings": findings_list(g.findings)}


def item_object(item: Batch | Gap) -> dict[str, Any]:
    """A batch or a gap, as the walkers yield them."""
    return gap_object(item) if isinstance(item, Gap) else batch_object(item)


def findings_object(item: Batch) -> dict[str, Any]:
    """The findings of a batch, as a line of their own in the record stream."""
    return {"type": "findings", "file": item.file, "position": item.position,
            "findings": findings_list(item.findings)}


def record_object(r: Record, b: Batch, encode: Encoder) -> dict[str, Any]:
    """A record (of batch ``b``) as its object: the one definition of a record's fields.

    ``render.jsonl.RecordLines`` writes the same object without building the
    dict (the hot path); a test holds the two equal.
    """
    d: dict[str, Any] = {"type": "record", "file": b.file, "batchPosition": b.position, "offset": r.offset,
         "timestamp": r.timestamp, "timestampType": r.timestamp_type,
         "key": encode(r.key), "value": encode(r.value),
         "headers": [{"key": k, "value": encode(v)} for k, v in r.headers],
         "offsetDelta": r.offset_delta, "timestampDelta": r.timestamp_delta, "control": r.control}
    if r.magic < 2:
        d["magic"] = r.magic
        d["crc"] = r.crc
        d["crcValid"] = r.crc == r.computed_crc
    return d


def crc_summary_object(files: int, batches: int, size: int, bad: int, findings: int,
                       valid: bool) -> dict[str, Any]:
    """verify-crc's closing line."""
    return {"type": "summary", "files": files, "batches": batches, "bytes": size, "bad": bad,
            "findings": findings, "valid": valid}


__all__ = ["ENCODERS", "batch_object", "gap_object", "item_object", "findings_list", "findings_object",
           "record_object", "crc_summary_object", "encode_base64", "encode_hex", "encode_text"]
