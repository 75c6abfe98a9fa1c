"""Triage of a segment, a partition directory or a whole log dir tree.

Three stages, none of which prints:

1. :func:`plan` walks the path and groups files by directory into *units*:
   a segment with its sibling ``.index`` / ``.timeindex`` / ``.txnindex``
   (checked against it in one pass), or any other single file.
2. :class:`Triage` scans the units -- in two worker processes when there is
   enough to do, in order of the plan -- and, as each directory's units are
   done, folds them into a partition verdict (:mod:`kafkadump.logdir.partition`).
   Memory is bounded by one batch per worker plus the per-file summaries.
3. :meth:`Triage.report` assembles the JSON-ready report: per file the chain
   of custody (size, mtime, SHA-256), counts, ranges and findings; per
   partition a summary and a verdict; totals.
"""

from __future__ import annotations

import os
import stat
import time
from collections import Counter, deque
from dataclasses import dataclass, field

from .. import __version__
from ..decode import Options
from ..findings import SEVERITY, Code, Finding
from ..sources.segment import InputError
from . import names
from .partition import finalize_partition, fold_logdir, fold_partition, verdict
from .scan import DEFAULT_MAX_FINDINGS, FileScan, scan_file, scan_segment

PARALLEL_MIN_BYTES = 16 << 20

_PARTITION_KINDS = {names.SEGMENT, names.OFFSET_INDEX, names.TIME_INDEX, names.TXN_INDEX,
                    names.PRODUCER_SNAPSHOT, names.LEADER_EPOCH_CHECKPOINT, names.PARTITION_METADATA}
_SIBLINGS = {names.OFFSET_INDEX: ".index", names.TIME_INDEX: ".timeindex", names.TXN_INDEX: ".txnindex"}


@dataclass
class Unit:
    """One piece of work: a segment with its indexes, or one file."""

    group: int
    kind: str                       # "segment" or "file"
    path: str
    siblings: dict = field(default_factory=dict)   # index kind -> path
    size: int = 0
    orphan: bool = False
    irregular: str | None = None    # not a regular file: why


@dataclass
class Group:
    """The files directly inside one directory."""

    path: str
    files: list
    units: list = field(default_factory=list)
    is_partition: bool = False


def _file_size(path: str):
    try:
        st = os.stat(path)
    except OSError as e:
        return None, e.strerror or str(e)
    if not stat.S_ISREG(st.st_mode):
        return None, "not a regular file"
    return st.st_size, None


def plan(root: str) -> list[Group]:
    """Group the files under ``root`` by directory and cut them into units.

    ``root`` may be a file (a segment brings its sibling indexes along), a
    partition directory, a log dir, or any tree holding log dirs.
    """
    if not os.path.exists(root):
        raise InputError(f"{root}: no such file or directory")
    if os.path.isfile(root):
        d = os.path.dirname(os.path.abspath(root))
        files = [root]
        fn = names.classify(root)
        if fn.kind == names.SEGMENT:
            stem = os.path.join(os.path.dirname(root), fn.stem)
            for ext in _SIBLINGS.values():
                p = stem + ext + (fn.suffix or "")
                if os.path.isfile(p):
                    files.append(p)
        groups = [Group(d, files)]
    elif os.path.isdir(root):
        groups = []
        for dirpath, dirnames, filenames in os.walk(root, onerror=None):
            dirnames.sort()
            if filenames:
                groups.append(Group(dirpath, [os.path.join(dirpath, f) for f in sorted(filenames)]))
    else:
        raise InputError(f"{root}: not a file or directory")
    for gi, g in enumerate(groups):
        _cut(gi, g)
    return groups


def _cut(gi: int, g: Group) -> None:
    classified = [(p, names.classify(p)) for p in g.files]
    g.is_partition = (names.parse_partition_dir(g.path) is not None
                      or any(fn.kind in _PARTITION_KINDS for _, fn in classified))
    by_name = {os.path.basename(p): p for p in g.files}
    used = set()
    for p, fn in classified:
        if fn.kind != names.SEGMENT:
            continue
        sib = {}
        for kind, ext in _SIBLINGS.items():
            q = by_name.get(fn.stem + ext + (fn.suffix or ""))
            if q is not None:
                sib[kind] = q
                used.add(q)
        used.add(p)
        g.units.append(Unit(gi, "segment", p, sib))
    for p, fn in classified:
        if p in used:
            continue
        g.units.append(Unit(gi, "file", p, orphan=fn.kind in _SIBLINGS))
    for u in g.units:
        total = 0
        for q in [u.path, *u.siblings.values()]:
            size, why = _file_size(q)
            if why and q == u.path:
                u.irregular = why
            total += size or 0
        u.size = total


def run_unit(unit: Unit, records: bool = True, max_findings: int | None = DEFAULT_MAX_FINDINGS) -> list[FileScan]:
    """Scan one unit (runs in a worker process): its file scans, log first."""
    if unit.irregular:
        s = FileScan(unit.path, names.classify(unit.path).kind)
        s.error = f"{unit.path}: {unit.irregular}"
        return [s]
    opt = Options(records=records)
    if unit.kind == "segment":
        return scan_segment(unit.path, index=unit.siblings.get(names.OFFSET_INDEX),
                            timeindex=unit.siblings.get(names.TIME_INDEX),
                            txnindex=unit.siblings.get(names.TXN_INDEX), options=opt, max_findings=max_findings)
    s = scan_file(unit.path, options=opt, max_findings=max_findings)
    if unit.orphan:
        s.add(Finding(Code.ORPHAN_FILE, 0, "no segment .log of the same base offset beside it: "
                                           "not checked against a log"))
    return [s]


def _run_units(units, records, max_findings):
    """A worker task: several small units at once (fewer round trips), results in order."""
    return [run_unit(u, records, max_findings) for u in units]


def _chunks(units, max_bytes: int = 4 << 20, max_units: int = 64):
    """Consecutive units cut into tasks of at most ``max_bytes`` (a larger unit goes alone)."""
    chunk, size = [], 0
    for u in units:
        if chunk and (size + u.size > max_bytes or len(chunk) >= max_units):
            yield chunk
            chunk, size = [], 0
        chunk.append(u)
        size += u.size
    if chunk:
        yield chunk


def _pool(jobs: int):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork: workers start at once and need no importable __main__.  Both are
    # started by the first submissions, before any progress callback (and
    # so before a progress display's refresh thread) runs.
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    return ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)


class Triage:
    """Runs a plan; collects file scans and partition summaries.

    ``progress(done_bytes, total_bytes, path)`` is called after each unit.
    """

    def __init__(self, root: str, *, jobs: int = 2, records: bool = True,
                 max_findings: int | None = DEFAULT_MAX_FINDINGS, progress=None):
        self.root = root
        self.jobs = max(1, jobs)
        self.records = records
        self.max_findings = max_findings
        self.progress = progress
        self.groups = plan(root)
        self.total_bytes = sum(u.size for g in self.groups for u in g.units)
        self.scans: dict[int, list[FileScan]] = {}
        self.partitions: dict[int, dict] = {}
        self.started = None
        self.elapsed = None

    def _results(self):
        units = [u for g in self.groups for u in g.units]
        if self.jobs == 1 or len(units) < 2 or self.total_bytes < PARALLEL_MIN_BYTES:
            for u in units:
                yield u, run_unit(u, self.records, self.max_findings)
            return
        window = 4 * self.jobs
        pool = _pool(self.jobs)
        try:
            pending: deque = deque()
            tasks = _chunks(units)

            def submit():
                chunk = next(tasks, None)
                if chunk is not None:
                    pending.append((chunk, pool.submit(_run_units, chunk, self.records, self.max_findings)))
                return chunk is not None

            while len(pending) < window and submit():
                pass
            while pending:
                chunk, fut = pending.popleft()
                res = fut.result()
                submit()
                yield from zip(chunk, res)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def run(self) -> "Triage":
        self.started = time.time()
        t0 = time.perf_counter()
        done = 0
        remaining = {gi: len(g.units) for gi, g in enumerate(self.groups)}
        for u, res in self._results():
            self.scans.setdefault(u.group, []).extend(res)
            done += u.size
            remaining[u.group] -= 1
            if remaining[u.group] == 0:
                self._fold_group(u.group)
            if self.progress:
                self.progress(done, self.total_bytes, u.path)
        self._fold_logdirs()
        for gi, summary in self.partitions.items():
            finalize_partition(summary, self.scans.get(gi, []))
        self.elapsed = time.perf_counter() - t0
        return self

    def _fold_group(self, gi: int) -> None:
        g = self.groups[gi]
        if g.is_partition:
            scans = self.scans.get(gi, [])
            self.partitions[gi] = fold_partition(g.path, scans)
            # what the log-dir fold needs is small; the segments' digests are not needed again
            for s in scans:
                if s.kind not in (names.OFFSET_CHECKPOINT, names.PARTITION_METADATA):
                    s.digest = None

    def _fold_logdirs(self) -> None:
        # a log dir's checkpoints describe the partition directories right below it
        children: dict[str, dict] = {}
        for gi, summary in self.partitions.items():
            parent = os.path.dirname(os.path.normpath(self.groups[gi].path))
            pd = names.parse_partition_dir(self.groups[gi].path)
            if pd is None:
                continue
            key = pd.name if pd.state is None else os.path.basename(os.path.normpath(self.groups[gi].path))
            meta = next((s for s in self.scans.get(gi, []) if s.kind == names.PARTITION_METADATA), None)
            children.setdefault(parent, {})[key] = (summary, meta)
        for gi, g in enumerate(self.groups):
            kids = children.get(os.path.normpath(g.path), {})
            scans = self.scans.get(gi, [])
            if not kids or not scans:
                continue
            fold_logdir(g.path, scans, {k: v[0] for k, v in kids.items()},
                        {k: v[1] for k, v in kids.items() if v[1] is not None})

    # --- the report -----------------------------------------------------------------------
    def file_scans(self):
        for gi in sorted(self.scans):
            yield from self.scans[gi]

    def report(self) -> dict:
        from datetime import datetime, timezone

        counts: Counter = Counter()
        files = []
        nbytes = 0
        unreadable = 0
        for s in self.file_scans():
            counts.update(s.finding_counts)
            nbytes += s.size or 0
            unreadable += bool(s.error)
            files.append(s.to_dict())
        by_sev = Counter()
        for c, n in counts.items():
            by_sev[SEVERITY[c].value] += n
        v = "errors" if unreadable else verdict(counts)
        parts = [self.partitions[gi] for gi in sorted(self.partitions)]
        segs = sum(1 for s in self.file_scans() if s.kind == names.SEGMENT)
        return {
            "type": "triage",
            "tool": f"kafkadump {__version__}",
            "path": self.root,
            "startedAt": datetime.fromtimestamp(self.started, timezone.utc).isoformat().replace("+00:00", "Z")
            if self.started else None,
            "elapsedSeconds": round(self.elapsed, 3) if self.elapsed is not None else None,
            "verdict": v,
            "totals": {
                "files": len(files), "bytes": nbytes, "unreadableFiles": unreadable,
                "partitions": len(parts), "segments": segs,
                "batches": sum(p["batches"] for p in parts), "records": sum(p["records"] for p in parts),
                "findings": {k: by_sev.get(k, 0) for k in ("error", "warning", "info")},
                "partitionVerdicts": dict(Counter(p["verdict"] for p in parts)),
            },
            "findingCounts": {c.value: n for c, n in sorted(counts.items(), key=lambda x: x[0].value)},
            "partitions": parts,
            "files": files,
        }


def triage(root: str, **kw) -> dict:
    """Triage ``root`` and return the report (see :meth:`Triage.report`)."""
    return Triage(root, **kw).run().report()


__all__ = ["Triage", "triage", "plan", "run_unit", "Unit", "Group"]
