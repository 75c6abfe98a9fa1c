"""``kafkadump diff`` objects of the JSON contract: divergence runs and the summary.

* **divergence**: ``fromOffset toOffset kind leaderEpochA leaderEpochB records`` (kind: only-in-a,
  only-in-b, different), then ``pattern`` (only-in-*: ``compaction-hole``, ``log-start``, ``tail`` or ``damaged``;
  null for different), ``fields`` (different: what differs), ``fileA positionA fileB positionB`` (the
  batch holding fromOffset in each copy, null where it has none);
* **diff**: ``verdict identicalThrough firstDivergentOffset onlyInA onlyInB different``, then ``same
  onlyInAByPattern onlyInBByPattern identicalBatches recordsCompared`` and ``a``/``b``: ``path files
  batches records firstOffset lastOffset leaderEpochs`` ([{epoch, startOffset}]);
* **findings**: problems in the bytes of one copy (``side``: a or b).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkadump.objects.records import findings_list

if TYPE_CHECKING:
    from kafkadump.reports.diff import CopyInfo, CopyProblems, DiffSummary, Divergence


def divergence_object(d: Divergence) -> dict[str, Any]:
    return {"type": "divergence", "fromOffset": d.from_offset, "toOffset": d.to_offset, "kind": d.kind,
            "leaderEpochA": d.leader_epoch_a, "leaderEpochB": d.leader_epoch_b, "records": d.records,
            "pattern": d.pattern if d.kind != "different" else None, "fields": d.fields,
            "fileA": d.file_a, "positionA": d.position_a, "fileB": d.file_b, "positionB": d.position_b}


def copy_object(c: CopyInfo) -> dict[str, Any]:
    return {"path": c.path, "files": len(c.files), "batches": c.batches, "records": c.records,
            "firstOffset": c.first_offset, "lastOffset": c.last_offset,
            "leaderEpochs": [{"epoch": e, "startOffset": o} for e, o in c.leader_epochs]}


def diff_object(s: DiffSummary) -> dict[str, Any]:
    return {"type": "diff", "verdict": s.verdict, "identicalThrough": s.identical_through,
            "firstDivergentOffset": s.first_divergent_offset, "onlyInA": s.only_in_a, "onlyInB": s.only_in_b,
            "different": s.different, "same": s.same, "onlyInAByPattern": s.only_in_a_by_pattern,
            "onlyInBByPattern": s.only_in_b_by_pattern, "identicalBatches": s.identical_batches,
            "recordsCompared": s.records_compared, "a": copy_object(s.a), "b": copy_object(s.b)}


def copy_problems_object(p: CopyProblems) -> dict[str, Any]:
    return {"type": "findings", "side": p.side, "file": p.file, "position": p.position,
            "findings": findings_list(p.findings)}


__all__ = ["divergence_object", "diff_object", "copy_object", "copy_problems_object"]
