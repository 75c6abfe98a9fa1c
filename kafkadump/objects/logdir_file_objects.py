"""The JSON objects of ``dump`` and ``carve``: one log-dir file's entries, producers and text; carved ranges.

``dump --json`` writes, per file:

* **index-entry** / **timeindex-entry** / **txnindex-entry**: ``type file position entry``, the
  entry's fields, ``findings``;
* **producer-snapshot**: ``type file version crc computedCrc crcValid producerCount findings``,
  then a **producer-entry** per producer (``type file position entry producerId epoch
  lastSequence lastOffset offsetDelta timestamp coordinatorEpoch currentTxnFirstOffset``);
* a text file's object (its kind as its type): ``type file``, the decoded content, ``entries``
  last when it has any, ``findings``;
* **findings**: findings that belong to no entry, at the smallest offset among them.

``carve --json`` writes a **recovered** object per intact batch, a **damaged** object per damaged
range, and its **summary**.  Each is built here from the decoded values; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kafkadump.decoders.logfiles.indexes import IndexEntry, TimeIndexEntry
from kafkadump.objects.records import findings_list

if TYPE_CHECKING:
    from kafkadump.base.findings import Finding
    from kafkadump.decoders.batches.model import Batch
    from kafkadump.decoders.logfiles.carving import Damaged
    from kafkadump.decoders.logfiles.indexes import TxnEntry
    from kafkadump.decoders.logfiles.snapshot import ProducerEntry, ProducerSnapshot
    from kafkadump.reports.carve import CarveTotals


def index_entry_object(file: str, e: IndexEntry | TimeIndexEntry | TxnEntry, findings: Iterable[Finding]) -> dict:
    """An offset, time or transaction index entry (its type by the entry's class)."""
    out: dict[str, Any]
    if isinstance(e, IndexEntry):
        out = {"type": "index-entry", "file": file, "position": e.position, "entry": e.index,
               "relativeOffset": e.relative_offset, "offset": e.offset, "logPosition": e.log_position}
    elif isinstance(e, TimeIndexEntry):
        out = {"type": "timeindex-entry", "file": file, "position": e.position, "entry": e.index,
               "timestamp": e.timestamp, "relativeOffset": e.relative_offset, "offset": e.offset}
    else:
        out = {"type": "txnindex-entry", "file": file, "position": e.position, "entry": e.index,
               "version": e.version, "producerId": e.producer_id, "firstOffset": e.first_offset,
               "lastOffset": e.last_offset, "lastStableOffset": e.last_stable_offset}
    out["findings"] = findings_list(findings)
    return out


def snapshot_object(file: str, s: ProducerSnapshot) -> dict:
    """A producer snapshot's header (its producers are objects of their own)."""
    return {"type": "producer-snapshot", "file": file, "version": s.version, "crc": s.crc,
            "computedCrc": s.computed_crc, "crcValid": s.crc_valid, "producerCount": s.count,
            "findings": findings_list(s.findings)}


def producer_entry_object(file: str, e: ProducerEntry) -> dict:
    """One producer of a producer snapshot."""
    return {"type": "producer-entry", "file": file, "position": e.position, "entry": e.index,
            "producerId": e.producer_id, "epoch": e.epoch, "lastSequence": e.last_sequence,
            "lastOffset": e.last_offset, "offsetDelta": e.offset_delta, "timestamp": e.timestamp,
            "coordinatorEpoch": e.coordinator_epoch, "currentTxnFirstOffset": e.current_txn_first_offset}


def text_file_head(kind: str, file: str, content: dict) -> dict:
    """A text file's object up to its ``entries`` and ``findings``: its type (the file's kind),
    file and decoded content (a checkpoint's writer streams the entries after it)."""
    head: dict[str, Any] = {"type": kind, "file": file}
    head.update((k, v) for k, v in content.items() if k != "entries")
    return head


def text_file_object(kind: str, file: str, content: dict, findings: Iterable[Finding]) -> dict:
    """A checkpoint, properties, partition metadata or quorum state file: :func:`text_file_head`,
    then its ``entries`` (when it has any) and ``findings``."""
    out = text_file_head(kind, file, content)
    if "entries" in content:
        out["entries"] = [dict(e) for e in content["entries"]]
    out["findings"] = findings_list(findings)
    return out


def loose_findings_object(file: str, findings: list[Finding]) -> dict:
    """Findings of a file that belong to no entry (a zero tail, a partial last entry)."""
    return {"type": "findings", "file": file, "position": min(f.offset for f in findings),
            "findings": findings_list(findings)}


# --- carve ----------------------------------------------------------------------------------------

def recovered_object(file: str, b: Batch) -> dict:
    """An intact batch carved out of a damaged segment."""
    return {"type": "recovered", "file": file, "position": b.position, "size": b.size, "magic": b.magic,
            "baseOffset": b.base_offset, "lastOffset": b.last_offset, "recordCount": b.record_count,
            "crc": b.crc, "findings": findings_list(b.findings)}


def lost_offsets_object(dmg: Damaged) -> dict | None:
    """The offsets a damaged range lost (``first``, ``last``, ``count`` when both are known);
    None when its intact neighbours are contiguous."""
    if dmg.nothing_lost:
        return None
    out: dict[str, int | None] = {"first": dmg.lost_first, "last": dmg.lost_last}
    if dmg.lost_first is not None and dmg.lost_last is not None:
        out["count"] = dmg.lost_last - dmg.lost_first + 1
    return out


def damaged_object(dmg: Damaged) -> dict:
    """A damaged byte range: where, what it lost, what its damaged headers claim."""
    return {"type": "damaged", "file": dmg.file, "start": dmg.start, "end": dmg.end, "size": dmg.size,
            "lostOffsets": lost_offsets_object(dmg),
            "claimedOffsets": None if dmg.claimed_first is None else {"first": dmg.claimed_first,
                                                                       "last": dmg.claimed_last},
            "damagedBatchHeaders": dmg.batches,
            "findings": findings_list(dmg.findings)}


def carve_summary_object(t: CarveTotals) -> dict:
    """carve's closing line (``outputSha256`` only when an output was written)."""
    out: dict[str, Any] = {
        "type": "summary", "file": t.file, "size": t.size, "output": t.output, "recovered": t.recovered,
        "recoveredBytes": t.recovered_bytes, "damagedRanges": t.damaged_ranges, "damagedBytes": t.damaged_bytes,
        "paddingBytes": t.padding_bytes, "lengthRepaired": t.length_repaired, "firstOffset": t.first_offset,
        "lastOffset": t.last_offset}
    if t.output is not None:
        out["outputSha256"] = t.output_sha256
    return out


__all__ = ["index_entry_object", "snapshot_object", "producer_entry_object", "text_file_head", "text_file_object",
           "loose_findings_object", "recovered_object", "lost_offsets_object", "damaged_object",
           "carve_summary_object"]
