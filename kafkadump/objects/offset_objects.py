"""The JSON objects of ``kafkadump offsets``.

* **partition-offsets**: ``type topic partition path earliest logEnd highWatermark maxTimestamp
  maxTimestampOffset offsetForTime firstOffset logStartOffset segments findingCounts``;
* **group-offset**: ``type group topic partition committed commitTimestamp logEnd lag leaderEpoch
  metadata expireTimestamp deleted recordOffset file offsetsPartition coordinatorPartition findings``
  (``lag`` null when the partition's data is not on disk; ``deleted`` true only for the
  tombstones ``--history`` lists);
* **offsets-summary**: ``type partitions groups groupOffsets commits tombstones beyondLogEnd notTracked
  lookups findings``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkadump.objects.records import findings_list

if TYPE_CHECKING:  # pragma: no cover
    from kafkadump.reports.offsets import GroupOffset, OffsetsSummary, PartitionOffsets


def partition_offsets_object(p: PartitionOffsets) -> dict[str, Any]:
    return {
        "type": "partition-offsets", "topic": p.topic, "partition": p.partition, "path": p.path,
        "earliest": p.earliest, "logEnd": p.log_end, "highWatermark": p.high_watermark,
        "maxTimestamp": p.max_timestamp, "maxTimestampOffset": p.max_timestamp_offset,
        "offsetForTime": p.offset_for_time, "firstOffset": p.first_offset, "logStartOffset": p.log_start_offset,
        "segments": p.segments,
        "findingCounts": {c.value: n for c, n in sorted(p.finding_counts.items(), key=lambda x: x[0].value)},
    }


def group_offset_object(g: GroupOffset) -> dict[str, Any]:
    return {
        "type": "group-offset", "group": g.group, "topic": g.topic, "partition": g.partition,
        "committed": g.committed, "commitTimestamp": g.commit_timestamp, "logEnd": g.log_end, "lag": g.lag,
        "leaderEpoch": g.leader_epoch, "metadata": g.metadata, "expireTimestamp": g.expire_timestamp,
        "deleted": g.deleted, "recordOffset": g.record_offset, "file": g.file,
        "offsetsPartition": g.offsets_partition, "coordinatorPartition": g.coordinator_partition,
        "findings": findings_list(g.findings),
    }


def offsets_summary_object(s: OffsetsSummary) -> dict[str, Any]:
    return {
        "type": "offsets-summary", "partitions": s.partitions, "groups": s.groups, "groupOffsets": s.group_offsets,
        "commits": s.commits, "tombstones": s.tombstones, "beyondLogEnd": s.beyond_log_end,
        "notTracked": s.not_tracked,
        "lookups": [{"group": x.key, "coordinatorPartition": x.partition, "onDisk": x.on_disk, "known": x.known}
                    for x in s.lookups],
        "findings": findings_list(s.findings),
    }


__all__ = ["partition_offsets_object", "group_offset_object", "offsets_summary_object"]
