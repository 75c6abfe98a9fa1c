"""Cross-checks that span the files of one partition, and of one log dir.

The per-file scans (:mod:`kafkadump.logdir.scan`) run independently, in any
process; this module folds their digests in offset order, in the main
process, with state bounded per partition (per producer: last epoch,
sequence, offset and open transaction; per leader epoch: where it starts):

* offsets continue from one segment to the next (a gap is compaction or
  retention, unless damage borders it; an overlap is reported);
* each producer's sequence continues across segments, unless offsets are
  missing in between (compaction removes whole batches);
* every transaction is closed by a COMMIT or ABORT marker, possibly in a
  later segment; aborted ones are listed (info) and compared with the
  ``.txnindex`` of the segment holding their ABORT marker;
* the leader epochs stamped on batches match ``leader-epoch-checkpoint``;
* a producer snapshot taken at offset N matches the producers' last batches
  before N;
* at log-dir level, the broker checkpoints (recovery point, high watermark,
  log start, cleaner) are not beyond a partition's log end, and the
  partitions of one topic carry the same topic id.

Findings are attached to the :class:`~kafkadump.logdir.scan.FileScan` of the
file they are anchored in.
"""

from __future__ import annotations

import os
from collections import Counter

from ..findings import Code, Finding, Severity
from . import names
from .scan import FileScan, check_sequence, worst_of


class _State:
    __slots__ = ("epoch", "last_seq", "last_offset", "missing_at", "open")

    def __init__(self):
        self.epoch = None
        self.last_seq = None
        self.last_offset = None
        self.missing_at = 0
        self.open = None   # (firstOffset, FileScan, position)


def verdict(counts) -> str:
    w = worst_of(counts)
    if w is Severity.ERROR:
        return "errors"
    if w is Severity.WARNING:
        return "warnings"
    return "clean"


def _order_key(s: FileScan):
    d = s.digest or {}
    base = d.get("base")
    first = d.get("first")
    return (base if base is not None else (first if first is not None else -1), s.path)


def fold_partition(path: str, scans: list[FileScan]) -> dict:
    """Cross-check the scans of one partition directory; return its summary.

    ``scans`` are every file scan of the directory (any order).  Findings
    are added to the scans they concern.
    """
    pdir = names.parse_partition_dir(path)
    live = [s for s in scans if names.classify(s.path).suffix is None and not s.error]
    segs = sorted((s for s in live if s.kind == names.SEGMENT and s.digest is not None), key=_order_key)
    snaps = sorted(((names.classify(s.path).offset, s) for s in live
                    if s.kind == names.PRODUCER_SNAPSHOT and s.digest and names.classify(s.path).offset is not None),
                   key=lambda x: x[0])
    lec = next((s for s in live if s.kind == names.LEADER_EPOCH_CHECKPOINT and s.digest), None)
    meta = next((s for s in live if s.kind == names.PARTITION_METADATA and s.digest), None)
    txn_scans = {s.path: s for s in live if s.kind == names.TXN_INDEX}

    producers: dict[int, _State] = {}
    epochs: list = []              # (epoch, first offset, FileScan, position)
    missing = 0
    prev_last = None
    prev_scan = None
    aborted_total = 0
    snap_i = 0
    snapshots_beyond = 0
    snapshots_checked = 0
    first_offset = None
    records = batches = size = 0

    def compare_snapshots(upto: int | None):
        """Compare snapshots taken at offsets <= upto (None: all) with the state so far."""
        nonlocal snap_i, snapshots_beyond, snapshots_checked
        while snap_i < len(snaps) and (upto is None or snaps[snap_i][0] <= upto):
            off, s = snaps[snap_i]
            snap_i += 1
            if prev_last is None:
                continue
            if off > prev_last + 1:
                snapshots_beyond += 1   # taken when the log was longer than this copy of it
                continue
            if off <= prev_last:
                continue   # taken inside what we folded already: not a boundary we stopped at
            snapshots_checked += 1
            for pid, epoch, last_seq, last_off, pos in s.digest["snapshot"]:
                st = producers.get(pid)
                if last_off < 0 or st is None or st.last_offset is None:
                    continue
                if st.last_offset != last_off or st.last_seq != last_seq:
                    s.add(Finding(Code.PRODUCER_SNAPSHOT_MISMATCH, pos,
                                  f"producer {pid}: the snapshot at offset {off} says last offset {last_off}, "
                                  f"sequence {last_seq}; the log's last batch of this producer before {off} "
                                  f"ends at {st.last_offset} with sequence {st.last_seq}"))

    for seg in segs:
        d = seg.digest
        size += seg.size or 0
        records += seg.summary.get("records") or 0
        batches += seg.summary.get("batches") or 0
        f = d["first"]
        if f is None:
            continue
        compare_snapshots(f)
        if first_offset is None:
            first_offset = f
        if prev_last is not None:
            if f <= prev_last:
                seg.add(Finding(Code.OFFSET_ORDER, d["firstPosition"],
                                f"segment starts at offset {f}, not after offset {prev_last} where "
                                f"{os.path.basename(prev_scan.path)} ends (segments overlap)"))
            elif f > prev_last + 1:
                missing += f - prev_last - 1
                lo = prev_last + 1
                hi = f - 1 if d["base"] is None or d["base"] > f else min(f, d["base"]) - 1
                if hi >= lo:
                    why = ("probably lost: the previous segment ends in damaged bytes" if prev_scan.digest["endsDamaged"]
                           else "removed by log compaction, or the segments between were deleted")
                    seg.add(Finding(Code.OFFSET_GAP, d["firstPosition"],
                                    f"offsets {lo}..{hi} ({hi - lo + 1}) are absent between "
                                    f"{os.path.basename(prev_scan.path)} and this segment ({why})"))
        base_missing = missing
        # producers: sequences and transactions across the boundary
        expected_aborts = []
        for pid, (first, epoch, last_seq, last_off, last_pos, missing_at, open_, first_marker) in d["producers"].items():
            st = producers.get(pid)
            if st is None:
                st = producers[pid] = _State()
            if first is not None and st.epoch is not None:
                check_sequence(seg.add, pid, first[0], first[1], first[3], st.epoch, st.last_seq,
                               base_missing + first[4] > st.missing_at)
            if first_marker is not None:
                ctype, moff, mpos, open_before, _ = first_marker
                start = st.open or (open_before and (open_before[0], seg, open_before[1]))
                if start and ctype == "ABORT":
                    expected_aborts.append((pid, start[0], moff, mpos))
                st.open = (open_[0], seg, open_[1]) if open_ else None
            elif open_ is not None and st.open is None:
                st.open = (open_[0], seg, open_[1])
            if last_seq is not None:
                st.epoch, st.last_seq, st.last_offset = epoch, last_seq, last_off
                st.missing_at = base_missing + missing_at
        for pid, first, moff, mpos, _ in d["aborted"]:
            expected_aborts.append((pid, first, moff, mpos))
        aborted_total += len(expected_aborts)
        for pid, first, moff, mpos in expected_aborts:
            seg.add(Finding(Code.ABORTED_TRANSACTION, mpos,
                            f"producer {pid}: transaction from offset {first} aborted by the marker at offset {moff}"))
        _check_txnindex(seg, expected_aborts, txn_scans)
        # leader epochs
        for e, off, pos in d["epochs"]:
            if epochs and e <= epochs[-1][0]:
                if e < epochs[-1][0]:
                    seg.add(Finding(Code.LEADER_EPOCH_MISMATCH, pos + 12,
                                    f"partitionLeaderEpoch {e} at offset {off} after epoch {epochs[-1][0]} "
                                    f"(epochs never decrease in a log)"))
                continue
            epochs.append((e, off, seg, pos))
        missing += d["missing"]
        if d["last"] is not None and (prev_last is None or d["last"] > prev_last):
            prev_last = d["last"]
            prev_scan = seg
    compare_snapshots(None)

    open_txns = 0
    for pid, st in producers.items():
        if st.open is not None:
            open_txns += 1
            off, s, pos = st.open
            s.add(Finding(Code.OPEN_TRANSACTION, pos,
                          f"producer {pid}: transaction from offset {off} has no COMMIT or ABORT marker "
                          f"up to the end of the log (still in flight, or hanging)"))
    if lec is not None and epochs:
        _check_leader_epochs(lec, epochs)

    summary = {
        "path": path,
        "topic": pdir.topic if pdir else None,
        "partition": pdir.partition if pdir else None,
        "state": pdir.state if pdir else None,
        "files": len(scans),
        "segments": len(segs),
        "bytes": size,
        "batches": batches,
        "records": records,
        "firstOffset": first_offset,
        "logEndOffset": None if prev_last is None else prev_last + 1,
        "missingOffsets": missing,
        "producers": len(producers),
        "abortedTransactions": aborted_total,
        "openTransactions": open_txns,
        "leaderEpochs": [e for e, _, _, _ in epochs[-20:]],
        "snapshotsChecked": snapshots_checked,
        "snapshotsBeyondLog": snapshots_beyond,
        "topicId": meta.digest["content"].get("topicId") if meta else None,
    }
    if pdir and pdir.state:
        what = {"delete": "being deleted", "future": "a replica being moved to this log dir",
                "stray": "left behind (stray)"}[pdir.state]
        anchor = segs[0] if segs else (scans[0] if scans else None)
        if anchor is not None:
            anchor.add(Finding(Code.PENDING_FILE, 0, f"partition directory {os.path.basename(path)}: {what}"))
    return summary


def finalize_partition(summary: dict, scans: list[FileScan]) -> dict:
    """Set the partition's finding counts and verdict from its files' findings (after every fold)."""
    counts: Counter = Counter()
    for s in scans:
        counts.update(s.finding_counts)
    summary["findingCounts"] = {c.value: n for c, n in sorted(counts.items(), key=lambda x: x[0].value) if n}
    summary["verdict"] = "errors" if any(s.error for s in scans) else verdict(counts)
    return summary


def _check_txnindex(seg: FileScan, expected: list, txn_scans: dict) -> None:
    d = seg.digest
    entries = d.get("txnindex")
    tpath = d.get("txnindexPath")
    if entries is None:
        if expected:
            pid, first, moff, mpos = expected[0]
            seg.add(Finding(Code.TXNINDEX_MISMATCH, mpos,
                            f"{len(expected)} aborted transactions (first: producer {pid}, offsets {first}..{moff}) "
                            f"but no .txnindex beside the segment"))
        return
    tscan = txn_scans.get(tpath)
    want = {(pid, moff): (first, mpos) for pid, first, moff, mpos in expected}
    seen = set()
    for pid, first, last, lso, pos in entries:
        key = (pid, last)
        if key not in want:
            if tscan is not None:
                tscan.add(Finding(Code.TXNINDEX_MISMATCH, pos,
                                  f"aborted transaction of producer {pid}, offsets {first}..{last}: the segment has "
                                  f"no ABORT marker of that producer at offset {last} closing a transaction"))
            continue
        seen.add(key)
        wfirst, _ = want[key]
        if first > wfirst and tscan is not None:
            tscan.add(Finding(Code.TXNINDEX_MISMATCH, pos,
                              f"aborted transaction of producer {pid} starts at {first} in the index, but its "
                              f"data starts at offset {wfirst} in the log"))
    for key, (first, mpos) in want.items():
        if key not in seen:
            seg.add(Finding(Code.TXNINDEX_MISMATCH, mpos,
                            f"producer {key[0]}: transaction {first}..{key[1]} was aborted but the .txnindex "
                            f"has no entry for it"))


def _check_leader_epochs(lec: FileScan, epochs: list) -> None:
    """Batch leader epochs against leader-epoch-checkpoint.

    When the log start offset advances, the broker drops the checkpoint's
    entries below it and moves the first remaining entry's start offset up
    to it, while the segment holding those offsets may still be on disk.  So
    epochs older than the checkpoint's first, and a first entry starting
    after the batches carrying it, are not disagreements.
    """
    entries = lec.digest["content"]["entries"]
    if not entries:
        return
    by_epoch = {e["epoch"]: e for e in entries}
    first_epoch = entries[0]["epoch"]
    for e, off, seg, pos in epochs:
        ent = by_epoch.get(e)
        if ent is None:
            if e < first_epoch:
                continue
            seg.add(Finding(Code.LEADER_EPOCH_MISMATCH, pos + 12,
                            f"batches of leader epoch {e} from offset {off}, but leader-epoch-checkpoint has no "
                            f"epoch {e}"))
        elif ent["startOffset"] > off and e != first_epoch:
            lec.add(Finding(Code.LEADER_EPOCH_MISMATCH, ent["position"],
                            f"epoch {e} starts at offset {ent['startOffset']} here, but the batch at offset {off} "
                            f"({os.path.basename(seg.path)}, position {pos}) already carries it"))


def fold_logdir(path: str, scans: list[FileScan], partitions: dict[str, dict],
                meta_scans: dict[str, FileScan]) -> None:
    """Log-dir-level checks: broker checkpoints and topic ids against the partitions.

    ``scans`` are the files directly in the log dir; ``partitions`` maps a
    partition directory name (``orders-3``) to its summary, ``meta_scans``
    to its partition.metadata scan.
    """
    for s in scans:
        if s.kind != names.OFFSET_CHECKPOINT or s.error or not s.digest:
            continue
        which = names.classify(s.path).checkpoint
        what = {"recovery-point-offset-checkpoint": "recovery point",
                "replication-offset-checkpoint": "high watermark",
                "log-start-offset-checkpoint": "log start offset",
                "cleaner-offset-checkpoint": "cleaner checkpoint"}[which]
        for e in s.digest["content"]["entries"]:
            p = partitions.get(f"{e['topic']}-{e['partition']}")
            if p is None or p["logEndOffset"] is None:
                continue
            if e["offset"] > p["logEndOffset"]:
                s.add(Finding(Code.CHECKPOINT_MISMATCH, e["position"],
                              f"{e['topic']}-{e['partition']}: {what} {e['offset']} is beyond the partition's "
                              f"log end offset {p['logEndOffset']} on disk"))
    ids: dict = {}
    for name, p in partitions.items():
        if p.get("topicId") and p.get("state") is None:
            ids.setdefault(p["topic"], Counter())[p["topicId"]] += 1
    for name, p in sorted(partitions.items()):
        c = ids.get(p.get("topic"))
        ms = meta_scans.get(name)
        if not c or len(c) < 2 or ms is None or p.get("state") is not None:
            continue
        common, n = c.most_common(1)[0]
        if p["topicId"] != common:
            ms.add(Finding(Code.CHECKPOINT_MISMATCH, 0,
                           f"topic id {p['topicId']} differs from {common}, held by {n} other partitions of "
                           f"{p['topic']} in this log dir (a deleted and re-created topic?)"))


__all__ = ["fold_partition", "finalize_partition", "fold_logdir", "verdict"]
