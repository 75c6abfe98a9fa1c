"""Tiered storage: a partition of ``__remote_log_metadata`` folded into its remote segments' fate.

The broker's remote log metadata manager writes, per remote log segment
(``RemoteLogSegmentMetadataRecord`` then ``RemoteLogSegmentMetadataUpdateRecord``s):

    COPY_SEGMENT_STARTED -> COPY_SEGMENT_FINISHED -> DELETE_SEGMENT_STARTED -> DELETE_SEGMENT_FINISHED

All the records of one user partition go to one metadata partition, so one
metadata partition directory holds each of its segments' whole history.
The last state of each segment id (the log in offset order; a later
record wins) says what remote storage should hold:

* a segment whose copy started and never finished is ``remote-copy-unfinished``
  (the broker copies one segment at a time per partition: a copy still
  started at the end of the log was in flight or abandoned, and its bytes
  may sit in remote storage with no finished metadata);
* the finished segments of one topic partition must tile its remote log:
  two holding the same offsets are ``remote-segment-overlap``, offsets
  between two of them in none is ``remote-segment-gap`` (what retention
  deleted is before the first finished segment, never between two).

Findings go to the metadata segment file holding the record that set the
state, at that record's batch.  The state per segment comes from the
internal-topic summary of each segment file (:mod:`kafkadump.decoders.internal_topics.summary`).
"""

from __future__ import annotations

from kafkadump.base.findings import Code, Finding
from kafkadump.base.values import Value
from kafkadump.reports.scan import FileScan

COPY_STARTED = "COPY_SEGMENT_STARTED"
COPY_FINISHED = "COPY_SEGMENT_FINISHED"


class RemoteSegment(Value):
    """One remote log segment's last known metadata, and where the record that set it is."""

    __match_args__ = ("segment_id", "topic", "topic_id", "partition", "start", "end", "state", "scan", "position")

    segment_id: str
    topic: str | None
    topic_id: str | None
    partition: int | None
    start: int | None
    end: int | None
    state: str
    scan: FileScan
    position: int

    def __init__(self, segment_id: str, topic: str | None, topic_id: str | None, partition: int | None,
                 start: int | None, end: int | None, state: str, scan: FileScan, position: int) -> None:
        self.segment_id = segment_id
        self.topic = topic
        self.topic_id = topic_id
        self.partition = partition
        self.start = start
        self.end = end
        self.state = state
        self.scan = scan
        self.position = position


def remote_segments(segment_scans: list[FileScan]) -> dict[str, RemoteSegment]:
    """Segment id -> its last metadata, from the internal summaries of a metadata partition's
    segment scans (given in log order)."""
    out: dict[str, RemoteSegment] = {}
    for scan in segment_scans:
        internal = scan.summary.get("internal") or {}
        for sid, seg in (internal.get("segments") or {}).items():
            old = out.get(sid)
            out[sid] = RemoteSegment(
                sid, seg.get("topic", old.topic if old else None), seg.get("topicId", old.topic_id if old else None),
                seg.get("partition", old.partition if old else None),
                seg.get("startOffset", old.start if old else None), seg.get("endOffset", old.end if old else None),
                seg.get("state", "unknown"), scan, seg.get("recordPosition") or 0)
    return out


def check_remote_segments(segments: dict[str, RemoteSegment]) -> None:
    """The findings above, added to the metadata files' scans."""
    finished: dict[tuple, list[RemoteSegment]] = {}
    for s in segments.values():
        if s.state == COPY_STARTED:
            s.scan.add(Finding(Code.REMOTE_COPY_UNFINISHED, s.position,
                               f"remote segment {s.segment_id} of {_where(s)} (offsets {s.start}..{s.end}): its "
                               f"copy started and never finished (in flight when the log was copied, or "
                               f"abandoned: its bytes may be in remote storage with no finished metadata)"))
        elif s.state == COPY_FINISHED and s.start is not None and s.end is not None:
            finished.setdefault((s.topic_id, s.topic, s.partition), []).append(s)
    for segs in finished.values():
        segs.sort(key=lambda x: (x.start, x.end, x.segment_id))
        prev = segs[0]
        for s in segs[1:]:
            assert prev.end is not None and s.start is not None and s.end is not None  # finished ones have both
            if s.start <= prev.end:
                s.scan.add(Finding(Code.REMOTE_SEGMENT_OVERLAP, s.position,
                                   f"remote segments {prev.segment_id} ({prev.start}..{prev.end}) and "
                                   f"{s.segment_id} ({s.start}..{s.end}) of {_where(s)} both hold offsets "
                                   f"{s.start}..{min(prev.end, s.end)}"))
            elif s.start > prev.end + 1:
                s.scan.add(Finding(Code.REMOTE_SEGMENT_GAP, s.position,
                                   f"offsets {prev.end + 1}..{s.start - 1} of {_where(s)} are in no remote segment "
                                   f"(between {prev.segment_id} and {s.segment_id})"))
            if s.end > prev.end:
                prev = s


def check_remote_files(segments: dict[str, RemoteSegment], scans: list[FileScan]) -> None:
    """Remote segment files (``OFFSET-SEGMENTID.log``) against the metadata of their segment id, when
    the metadata partition holding it was triaged too: ``remote-segment-mismatch`` when the file's
    offsets are not the metadata's, or when the metadata says the segment was deleted (or its copy
    never finished, so the broker never serves it).  A file whose id no metadata names is not judged
    (its metadata may be in a partition not given)."""
    for scan in scans:
        sid = scan.summary.get("remoteSegmentId")
        if scan.kind != "segment" or scan.summary.get("tier") != "remote" or sid not in segments:
            continue
        meta = segments[sid]
        first, last = scan.summary.get("firstOffset"), scan.summary.get("lastOffset")
        where = f"the metadata of remote segment {sid} ({_where(meta)}"
        if meta.state in ("DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED"):
            scan.add(Finding(Code.REMOTE_SEGMENT_MISMATCH, 0, f"{where}) says {meta.state}: this copy should "
                                                                f"be gone (a deletion that failed, or a backup)"))
        elif meta.state == COPY_STARTED:
            scan.add(Finding(Code.REMOTE_SEGMENT_MISMATCH, 0, f"{where}) says COPY_SEGMENT_STARTED: the copy "
                                                                f"never finished and the broker does not serve it"))
        elif last is not None and (meta.end != last or (first is not None and meta.start is not None
                                                          and first < meta.start)):
            scan.add(Finding(Code.REMOTE_SEGMENT_MISMATCH, 0, f"{where}) says offsets {meta.start}..{meta.end}; "
                                                                f"the file holds {first}..{last}"))


def _where(s: RemoteSegment) -> str:
    return f"{s.topic}-{s.partition}"


__all__ = ["RemoteSegment", "remote_segments", "check_remote_segments", "check_remote_files"]
