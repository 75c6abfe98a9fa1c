"""The triage report's JSON objects: file, partition and triage; and the triage exit rule.

``kafkadump triage`` and ``kafkadump spark triage`` fold the same per-file
scans with the same code (:mod:`kafkadump.reports.partition`) and build their
report here, so both give the same objects:

* **file**: ``file kind size mtime sha256 [error]``, the kind's summary
  fields (a segment: ``baseOffset batches records firstOffset lastOffset
  firstTimestamp maxTimestamp codecs magic controlBatches
  transactionalBatches producers producerIds openTransactionsAtEnd
  offsetGaps missingOffsets compactedBatches sequenceGapsExplained
  crcFailures damagedRanges damagedBytes validBytes leaderEpochs [internal]``), then
  ``findingCounts findings [findingsOmitted]``;
* **partition**: :data:`PARTITION_FIELDS`;
* **triage**: ``type tool path paths startedAt elapsedSeconds verdict totals
  findingCounts partitions files``.

Timing fields (``startedAt``, ``elapsedSeconds``) are the only ones that
differ between two runs over the same files.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from kafkadump import __version__
from kafkadump.base.findings import SEVERITY, Severity, worst_severity
from kafkadump.base.status import exit_status
from kafkadump.base.values import Value
from kafkadump.objects.records import findings_list

if TYPE_CHECKING:  # pragma: no cover
    from kafkadump.reports.partition import PartitionFacts
    from kafkadump.reports.scan import FileScan
    from kafkadump.reports.triage import Triage

CLEAN, WARNINGS, ERRORS = "clean", "warnings", "errors"
TIMING_FIELDS = ("startedAt", "elapsedSeconds")

PARTITION_FIELDS = (
    "path", "logDir", "topic", "partition", "state", "topicId", "files", "segments", "bytes", "batches", "records",
    "firstOffset", "logEndOffset", "missingOffsets", "firstTimestamp", "maxTimestamp", "crcFailures",
    "damagedRanges", "damagedBytes", "producers", "abortedTransactions", "openTransactions",
    "hangingTransactions", "sequenceGapsExplained", "leaderEpochs", "snapshotsChecked", "snapshotsBeyondLog",
    "unreadableFiles", "uncleanElections", "topicsRecreated", "findings", "findingCounts", "verdict",
)

def verdict_of(counts: Counter, unreadable: int = 0) -> str:
    """``errors`` (an error finding, or an unreadable file), ``warnings``, or ``clean`` (info findings only)."""
    w = worst_severity(c for c, n in counts.items() if n)
    if unreadable or w is Severity.ERROR:
        return ERRORS
    return WARNINGS if w is Severity.WARNING else CLEAN


def triage_exit_status(report: dict) -> int:
    """The exit status of both triage commands, by the one rule (:func:`.status.exit_status`): 2 when
    a file could not be read, else 1 for any warning or error finding, else 0."""
    findings = report["totals"]["findings"]
    return exit_status(findings["error"] + findings["warning"], report["totals"]["unreadableFiles"])


def _counts_object(counts: Counter) -> dict:
    return {c.value: n for c, n in sorted(counts.items(), key=lambda x: x[0].value) if n}


def _by_severity(counts: Counter) -> dict:
    out = {"error": 0, "warning": 0, "info": 0}
    for c, n in counts.items():
        out[SEVERITY[c].value] += n
    return out


def file_object(scan: FileScan) -> dict:
    """One file's object: chain of custody, the kind's summary, its findings (sorted by offset)."""
    d: dict[str, Any] = {"file": scan.path, "kind": scan.kind, "size": scan.size, "mtime": scan.mtime,
                         "sha256": scan.sha256}
    if scan.error:
        d["error"] = scan.error
    d.update(scan.summary)
    d["findingCounts"] = {c.value: n for c, n in sorted(scan.finding_counts.items(), key=lambda x: x[0].value)}
    d["findings"] = findings_list(sorted(scan.findings, key=lambda f: f.offset))
    total = sum(scan.finding_counts.values())
    if total > len(scan.findings):
        d["findingsOmitted"] = total - len(scan.findings)
    return d


def partition_object(p: PartitionFacts, scans: list[FileScan]) -> dict:
    """One partition directory's object: the fold's facts, its files' finding counts, its verdict."""
    counts: Counter = Counter(p.outside_findings)   # what a log dir's checkpoint says wrong about it
    for s in scans:
        counts.update(s.finding_counts)
    unreadable = sum(1 for s in scans if s.error)
    return {
        "path": p.path, "logDir": p.log_dir, "topic": p.topic, "partition": p.partition, "state": p.state,
        "topicId": p.topic_id, "files": p.files, "segments": p.segments, "bytes": p.bytes, "batches": p.batches,
        "records": p.records, "firstOffset": p.first_offset, "logEndOffset": p.log_end_offset,
        "missingOffsets": p.missing_offsets, "firstTimestamp": p.first_timestamp, "maxTimestamp": p.max_timestamp,
        "crcFailures": p.crc_failures, "damagedRanges": p.damaged_ranges, "damagedBytes": p.damaged_bytes,
        "producers": p.producers, "abortedTransactions": p.aborted_transactions,
        "openTransactions": p.open_transactions, "hangingTransactions": p.hanging_transactions,
        "sequenceGapsExplained": p.sequence_gaps_explained,
        "leaderEpochs": p.leader_epochs, "snapshotsChecked": p.snapshots_checked,
        "snapshotsBeyondLog": p.snapshots_beyond_log, "unreadableFiles": unreadable,
        "uncleanElections": p.unclean_elections, "topicsRecreated": p.topics_recreated,
        "findings": _by_severity(counts), "findingCounts": _counts_object(counts),
        "verdict": verdict_of(counts, unreadable),
    }


class TriageRun(Value):
    """What a triage run hands the report: its paths, timing, files (in plan order) and partitions."""

    __match_args__ = ("paths", "files", "partitions", "started", "elapsed")

    paths: list[str]
    files: list[FileScan]
    partitions: list[dict]        # partition objects, in plan order
    started: float | None  # epoch seconds
    elapsed: float | None  # seconds

    def __init__(self, paths: list[str], files: list[FileScan], partitions: list[dict],
                 started: float | None = None, elapsed: float | None = None) -> None:
        self.paths = paths
        self.files = files
        self.partitions = partitions
        self.started = started
        self.elapsed = elapsed


def _iso(t: float | None) -> str | None:
    """ISO-8601 UTC of epoch seconds; None when none, or beyond the calendar."""
    from datetime import datetime, timezone

    if t is None:
        return None
    try:
        return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


def triage_object(run: TriageRun) -> dict:
    """The whole report: one object, as ``triage --json`` and ``spark triage --json`` print it."""
    import os

    counts: Counter = Counter()
    for s in run.files:
        counts.update(s.finding_counts)
    unreadable = sum(1 for s in run.files if s.error)
    parts = run.partitions
    paths = list(run.paths)
    files = [file_object(s) for s in run.files]
    # batches and records counted from the segments the files table lists (a loose segment whose name
    # is no base offset belongs to no partition, and its batches are still read and shown)
    segments = [f for f in files if f["kind"] == "segment"]
    return {
        "type": "triage",
        "tool": f"kafkadump {__version__}",
        "path": paths[0] if len(paths) == 1 else os.path.commonpath([os.path.abspath(p) for p in paths]),
        "paths": paths,
        "startedAt": _iso(run.started),
        "elapsedSeconds": None if run.elapsed is None else round(run.elapsed, 3),
        "verdict": verdict_of(counts, unreadable),
        "totals": {
            "files": len(run.files), "bytes": sum(s.size or 0 for s in run.files), "unreadableFiles": unreadable,
            "partitions": len(parts), "segments": sum(1 for s in run.files if s.kind == "segment"),
            "batches": sum(f.get("batches") or 0 for f in segments),
            "records": sum(f.get("records") or 0 for f in segments),
            "hangingTransactions": sum(p["hangingTransactions"] for p in parts),
            "findings": _by_severity(counts),
            "partitionVerdicts": dict(Counter(p["verdict"] for p in parts)),
            "uncleanElections": sum(p["uncleanElections"] or 0 for p in parts),
            "topicsRecreated": sum(p["topicsRecreated"] or 0 for p in parts),
        },
        "findingCounts": _counts_object(counts),
        # every file's findings in one list, each with its file (the files' own lists hold the same)
        "findings": [{"file": f["file"], **x} for f in files for x in f["findings"]],
        "partitions": parts,
        "files": files,
    }


def without_timing(obj: dict) -> dict:
    """``obj`` without its timing fields (what two runs over the same files may not agree on)."""
    return {k: v for k, v in obj.items() if k not in TIMING_FIELDS}


__all__ = ["PARTITION_FIELDS", "TriageRun", "triage_report", "triage", "file_object", "partition_object", "triage_object",
           "triage_exit_status", "verdict_of", "worst_severity", "without_timing", "CLEAN", "WARNINGS", "ERRORS"]


def triage_report(done: Triage) -> dict:
    """The report of a triage that has run: one object, as ``triage --json`` prints it."""
    parts = [partition_object(done.partitions[gi], done.group_scans(gi)) for gi in sorted(done.partitions)]
    return triage_object(TriageRun(done.roots, list(done.file_scans()), parts, done.started, done.elapsed))


def triage(root: str | list[str], **kw: Any) -> dict:  # kw: Triage's keyword arguments
    """Triage ``root`` and return the report (see :func:`triage_report`)."""
    from kafkadump.reports.triage import Triage

    return triage_report(Triage(root, **kw).run())
