"""Triage of a segment, a partition directory or a whole log dir tree.

Three stages, none of which prints:

1. :func:`plan` walks the path and groups files by directory into *units*:
   a segment with its sibling ``.index`` / ``.timeindex`` / ``.txnindex``
   (checked against it in one pass), or any other single file.
2. :class:`Triage` has a *runner* scan the units -- in two worker processes
   when there is enough to do (:func:`local_runner`), or in Spark tasks
   (:mod:`kafkadump.spark.jobs`) -- and, as each directory's units are done,
   folds them into a partition verdict (:mod:`kafkadump.reports.partition`).
   Memory is bounded by one batch per worker plus the per-file summaries.
3. :meth:`Triage.report` assembles the report (:mod:`kafkadump.objects.logdir_objects`):
   per file the chain of custody (size, mtime, SHA-256), counts, ranges and
   findings; per partition a summary and a verdict; totals.
"""

from __future__ import annotations

import os
import stat
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from kafkadump.base.errors import InputError
from kafkadump.base.findings import Code, Finding
from kafkadump.base.status import Tally
from kafkadump.base.values import Value
from kafkadump.decoders.batches import Options
from kafkadump.decoders.internal_topics.coordinator import DEFAULT_PARTITIONS, placement_note
from kafkadump.decoders.logfiles import names
from kafkadump.reports.partition import PartitionFacts, fold_logdir, fold_partition
from kafkadump.reports.remote import check_remote_files
from kafkadump.reports.scan import DEFAULT_MAX_FINDINGS, FileScan, scan_file, scan_segment
from kafkadump.reports.transactions import (
    HANGING,
    MAX_TRANSACTIONS,
    TxnReport,
    abort_command,
    hanging_finding,
    join_transactions,
)

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

PARALLEL_MIN_BYTES = 16 << 20

_PARTITION_KINDS = {names.SEGMENT, names.OFFSET_INDEX, names.TIME_INDEX, names.TXN_INDEX,
                    names.PRODUCER_SNAPSHOT, names.LEADER_EPOCH_CHECKPOINT, names.PARTITION_METADATA}
_SIBLINGS = {names.OFFSET_INDEX: ".index", names.TIME_INDEX: ".timeindex", names.TXN_INDEX: ".txnindex"}


class Unit(Value):
    """One piece of work: a segment with its indexes, or one file."""

    __match_args__ = ("group", "kind", "path", "siblings", "size", "orphan", "irregular")

    group: int
    kind: str                       # "segment" or "file"
    path: str
    siblings: dict   # index kind -> path
    size: int
    orphan: bool
    irregular: str | None    # not a regular file: why

    def __init__(self, group: int, kind: str, path: str, siblings: dict | None = None, size: int = 0,
                 orphan: bool = False, irregular: str | None = None) -> None:
        self.group = group
        self.kind = kind
        self.path = path
        self.siblings = dict() if siblings is None else siblings
        self.size = size
        self.orphan = orphan
        self.irregular = irregular


class Group(Value):
    """The files directly inside one directory."""

    __match_args__ = ("path", "files", "units", "is_partition")

    path: str
    files: list
    units: list
    is_partition: bool

    def __init__(self, path: str, files: list, units: list | None = None, is_partition: bool = False) -> None:
        self.path = path
        self.files = files
        self.units = list() if units is None else units
        self.is_partition = is_partition


def _file_size(path: str) -> tuple[int, None] | tuple[None, str]:
    """``(size, None)`` of a regular file, else ``(None, why)``."""
    try:
        st = os.stat(path)
    except OSError as e:
        return None, e.strerror or str(e)
    if not stat.S_ISREG(st.st_mode):
        return None, "not a regular file"
    return st.st_size, None


def plan(roots: str | list[str]) -> list[Group]:
    """Group the files under ``roots`` by directory and cut them into units.

    A root may be a file (a segment brings its sibling indexes along), a
    partition directory, a log dir, or any tree holding log dirs.  A
    directory reached from two roots is planned once.
    """
    groups: list[Group] = []
    seen: set[str] = set()
    for root in [roots] if isinstance(roots, str) else roots:
        for g in _groups_of(root):
            key = os.path.realpath(g.path) + "\0" + "\0".join(g.files)
            if key not in seen:
                seen.add(key)
                groups.append(g)
    for gi, g in enumerate(groups):
        _cut(gi, g)
    return groups


def _groups_of(root: str) -> list[Group]:
    if not os.path.exists(root) and not os.path.islink(root):
        raise InputError(f"{root}: no such file or directory")
    if os.path.isfile(root) or os.path.islink(root) and not os.path.isdir(root):
        return [Group(os.path.dirname(os.path.abspath(root)), _with_siblings(root))]
    if not os.path.isdir(root):
        raise InputError(f"{root}: not a file or directory")
    groups = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=None):
        dirnames.sort()
        if filenames:
            groups.append(Group(dirpath, [os.path.join(dirpath, f) for f in sorted(filenames)]))
    return groups


def _with_siblings(path: str) -> list[str]:
    """A file, and when it is a segment, its sibling index files."""
    files = [path]
    fn = names.classify(path)
    if fn.kind == names.SEGMENT:
        stem = os.path.join(os.path.dirname(path), fn.stem or "")
        for ext in _SIBLINGS.values():
            p = stem + ext + (fn.suffix or "")
            if os.path.isfile(p):
                files.append(p)
    return files


def _cut(gi: int, g: Group) -> None:
    classified = [(p, names.classify(p)) for p in g.files]
    # the broker's remote-log-index-cache/ holds indexes of remote segments: no partition; a .log not named
    # by an offset (a broker's own server.log) does not make a partition either
    g.is_partition = (names.parse_partition_dir(g.path) is not None
                      or any(fn.kind in _PARTITION_KINDS and fn.tier != names.INDEX_CACHE
                             and not (fn.kind == names.SEGMENT and fn.offset is None)
                             for _, fn in classified))
    by_name = {os.path.basename(p): p for p in g.files}
    used = set()
    for p, fn in classified:
        if fn.kind != names.SEGMENT:
            continue
        sib = {}
        for kind, ext in _SIBLINGS.items():
            q = by_name.get((fn.stem or "") + ext + (fn.suffix or ""))
            if q is not None:
                sib[kind] = q
                used.add(q)
        used.add(p)
        g.units.append(Unit(gi, "segment", p, sib))
    for p, fn in classified:
        if p in used:
            continue
        g.units.append(Unit(gi, "file", p, orphan=fn.kind in _SIBLINGS and fn.tier != names.INDEX_CACHE))
    for u in g.units:
        total = 0
        for q in [u.path, *u.siblings.values()]:
            size, why = _file_size(q)
            if why and q == u.path:
                u.irregular = why
            total += size or 0
        u.size = total


def run_unit(unit: Unit, records: bool = True, max_findings: int | None = DEFAULT_MAX_FINDINGS,
             custody: bool = True, on_bytes: Callable[[int], None] | None = None) -> list[FileScan]:
    """Scan one unit (in a worker process or a Spark task): its file scans, log first.

    ``on_bytes(n)`` is told, now and then, how far into the segment the scan is.
    Never raises on bad input: an unexpected failure becomes an unreadable
    file saying why.  ``custody``: hash every file (SHA-256) for the chain of
    custody (``kafkadump txn`` needs no hashes).
    """
    try:
        return _scan_unit(unit, records, max_findings, custody, on_bytes)
    except Exception as e:  # noqa: BLE001 - a decoder bug must not end the whole triage
        s = FileScan(unit.path, names.classify(unit.path).kind)
        s.error = f"{unit.path}: internal error while scanning: {type(e).__name__}: {e}"
        return [s]


def _scan_unit(unit: Unit, records: bool, max_findings: int | None, custody: bool,
               on_bytes: Callable[[int], None] | None) -> list[FileScan]:
    if unit.irregular:
        s = FileScan(unit.path, names.classify(unit.path).kind)
        s.error = f"{unit.path}: {unit.irregular}"
        return [s]
    opt = Options(records=records)
    if unit.kind == "segment":
        return scan_segment(unit.path, index=unit.siblings.get(names.OFFSET_INDEX),
                            timeindex=unit.siblings.get(names.TIME_INDEX),
                            txnindex=unit.siblings.get(names.TXN_INDEX), options=opt, max_findings=max_findings,
                            custody_of=custody, on_bytes=on_bytes)
    s = scan_file(unit.path, options=opt, max_findings=max_findings, custody_of=custody)
    if unit.orphan:
        s.add(Finding(Code.ORPHAN_FILE, 0, "no segment .log of the same base offset beside it: "
                                           "not checked against a log"))
    return [s]


def run_units(units: list, records: bool, max_findings: int | None, custody: bool = True,
              first: int = 0) -> list[list[FileScan]]:
    """Several units in a row (one worker or Spark task): their scans, in order.  In a worker of
    :func:`local_runner`'s pool, the bytes read are counted for the progress display (``first``:
    the index of ``units[0]`` in the plan)."""
    return [_counted(u, first + k, records, max_findings, custody) for k, u in enumerate(units)]


# in a worker process of the pool: the bytes read by its scans and the index of the unit it last
# started, shared with the parent (multiprocessing Values), for the progress display
_READ: Any = None
_STARTED: Any = None


def _init_worker(read: Any, started: Any) -> None:
    global _READ, _STARTED
    _READ, _STARTED = read, started


def _counted(u: Unit, index: int, records: bool, max_findings: int | None, custody: bool) -> list[FileScan]:
    read, started = _READ, _STARTED
    if read is None:
        return run_unit(u, records, max_findings, custody)
    started.value = index
    seen = 0

    def on_bytes(n: int) -> None:
        nonlocal seen
        n = min(n, u.size)
        if n > seen:
            with read.get_lock():
                read.value += n - seen
            seen = n

    scans = run_unit(u, records, max_findings, custody, on_bytes)
    on_bytes(u.size)
    return scans


def chunks(units: list[Unit], max_bytes: int = 4 << 20, max_units: int = 64) -> Iterator[list[Unit]]:
    """Consecutive units cut into tasks of at most ``max_bytes`` (a larger unit goes alone)."""
    chunk: list[Unit] = []
    size = 0
    for u in units:
        if chunk and (size + u.size > max_bytes or len(chunk) >= max_units):
            yield chunk
            chunk, size = [], 0
        chunk.append(u)
        size += u.size
    if chunk:
        yield chunk


def _pool(jobs: int, initargs: tuple | None = None) -> ProcessPoolExecutor:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork: workers start at once and need no importable __main__.  Both are
    # started by the first submissions, before any progress callback (and
    # so before a progress display's refresh thread) runs.
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    if initargs is None:
        return ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)
    return ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker, initargs=initargs)


# A runner scans units somewhere (here, in worker processes, in Spark tasks) and yields
# ``(index into units, scans)`` as units finish, in any order.
Runner = Callable[[list, bool, int | None], Iterator[tuple[int, list[FileScan]]]]


# ``on_bytes(bytes read of all units, path of a unit being read)``: how far the scan is, as it goes
BytesRead = Callable[[int, str], None]


def local_runner(jobs: int = 2, on_bytes: BytesRead | None = None, custody: bool = True) -> Runner:
    """Scan in this process, or in ``jobs`` worker processes when there is enough to do; tell
    ``on_bytes`` how far the scan is while files are read (``custody``: see :func:`run_unit`)."""

    def run(units: list, records: bool, max_findings: int | None) -> Iterator[tuple[int, list[FileScan]]]:
        total = sum(u.size for u in units)
        if jobs <= 1 or len(units) < 2 or total < PARALLEL_MIN_BYTES:
            done = 0
            for i, u in enumerate(units):
                yield i, run_unit(u, records, max_findings, custody, _within(on_bytes, done, u))
                done += u.size
            return
        yield from _in_pool(jobs, units, records, max_findings, on_bytes, custody)

    return run


def _within(on_bytes: BytesRead | None, done: int, u: Unit) -> Callable[[int], None] | None:
    """A unit's ``on_bytes(n)`` (n bytes into it) for the whole scan's ``on_bytes`` (``done`` before it)."""
    if on_bytes is None:
        return None
    return lambda n: on_bytes(done + min(n, u.size), u.path)


def _in_pool(jobs: int, units: list[Unit], records: bool, max_findings: int | None,
             on_bytes: BytesRead | None = None, custody: bool = True) -> Iterator[tuple[int, list[FileScan]]]:
    import multiprocessing
    from concurrent.futures import wait

    window = 4 * jobs
    shared = None
    if on_bytes is not None:
        ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        shared = (ctx.Value("q", 0), ctx.Value("q", 0, lock=False))
    pool = _pool(jobs, shared)
    try:
        pending: deque = deque()
        tasks = chunks(units)
        start = 0

        def submit() -> bool:
            nonlocal start
            chunk = next(tasks, None)
            if chunk is not None:
                pending.append((start, pool.submit(run_units, chunk, records, max_findings, custody, start)))
                start += len(chunk)
            return chunk is not None

        while len(pending) < window and submit():
            pass
        while pending:
            first, fut = pending.popleft()
            while shared is not None and on_bytes is not None and not fut.done():
                wait([fut], timeout=0.25)
                on_bytes(shared[0].value, units[min(shared[1].value, len(units) - 1)].path)
            res = fut.result()
            submit()
            yield from enumerate(res, first)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class Triage:
    """Runs a plan; folds file scans into partitions; builds the report.

    ``progress(done_bytes, total_bytes, path)`` is called after each unit.
    ``runner`` scans the units (default: :func:`local_runner` with ``jobs``
    workers; ``kafkadump spark triage`` passes one that scans in Spark
    tasks): the fold and the report are the same whoever scans.
    """

    def __init__(self, root: str | list[str], *, jobs: int = 2, records: bool = True,
                 max_findings: int | None = DEFAULT_MAX_FINDINGS, progress: Callable[[int, int, str], None] | None = None,
                 runner: Runner | None = None, keep_transactions: bool = False,
                 txn_partitions: int = DEFAULT_PARTITIONS, transactional_ids: tuple[str, ...] = (),
                 on_metadata_change: Callable[[str, Any], None] | None = None):
        self.on_metadata_change = on_metadata_change   # (metadata dir, PartitionChange): kafkadump report
        self.roots = [root] if isinstance(root, str) else list(root)
        self.keep_transactions = keep_transactions   # list closed transactions too (kafkadump txn)
        self.txn_partitions = txn_partitions
        self.transactional_ids = transactional_ids   # ids to locate (kafkadump txn --transactional-id)
        self.transactions: TxnReport | None = None   # the transaction join, after run()
        self.records = records
        self.max_findings = max_findings
        self.progress = progress
        self.runner = runner or local_runner(max(1, jobs), self._bytes_read if progress else None)
        self.shown_bytes = 0   # what the progress display was last told (it never goes back)
        self.groups = plan(self.roots)
        self.units = [u for g in self.groups for u in g.units]
        self.unit_ids: dict[int, list[int]] = {}               # group index -> its units' indexes
        for i, u in enumerate(self.units):
            self.unit_ids.setdefault(u.group, []).append(i)
        self.total_bytes = sum(u.size for u in self.units)
        self.results: dict[int, list[FileScan]] = {}      # unit index -> its scans
        self.partitions: dict[int, PartitionFacts] = {}   # group index -> its fold
        self.spans_kept = 0   # closed transactions the folds keep for the join, at most MAX_TRANSACTIONS
        self.started: float | None = None   # epoch seconds
        self.elapsed: float | None = None   # seconds

    def run(self) -> Triage:
        self.started = time.time()
        t0 = time.perf_counter()
        done = 0
        remaining = {gi: len(g.units) for gi, g in enumerate(self.groups)}
        for i, scans in self.runner(self.units, self.records, self.max_findings):
            u = self.units[i]
            self.results[i] = scans
            done += u.size
            remaining[u.group] -= 1
            if remaining[u.group] == 0:
                self._fold_group(u.group)
            self._bytes_read(done, u.path)
        self._fold_logdirs()
        self._join_transactions()
        self._fold_remote()
        self.elapsed = time.perf_counter() - t0
        return self

    def _bytes_read(self, n: int, path: str) -> None:
        if self.progress and n >= self.shown_bytes:
            self.shown_bytes = n
            self.progress(n, self.total_bytes, path)

    def group_scans(self, gi: int) -> list[FileScan]:
        """The scans of a directory's files, in plan order."""
        return [s for i in self.unit_ids.get(gi, ()) for s in self.results.get(i, [])]

    def _fold_group(self, gi: int) -> None:
        g = self.groups[gi]
        if g.is_partition:
            scans = self.group_scans(gi)
            self.partitions[gi] = fold_partition(g.path, scans, keep_spans=self.keep_transactions)
            self._bound_spans(self.partitions[gi])
            if self.partitions[gi].topic == METADATA_TOPIC:
                _check_metadata(g.path, self.partitions[gi], scans, self.on_metadata_change)
            # what the log-dir fold needs is small; the segments' digests are not needed again
            for s in scans:
                if s.kind not in (names.OFFSET_CHECKPOINT, names.PARTITION_METADATA):
                    s.digest = None

    def _bound_spans(self, facts: PartitionFacts) -> None:
        """Keep the closed transactions the join will list (the first :data:`MAX_TRANSACTIONS`, in fold
        order, as it takes them), not every partition's: past them, counted only."""
        room = max(0, MAX_TRANSACTIONS - self.spans_kept)
        if len(facts.closed_spans) > room:
            facts.closed_spans_dropped += len(facts.closed_spans) - room
            del facts.closed_spans[room:]
        self.spans_kept += len(facts.closed_spans)

    def _fold_logdirs(self) -> None:
        # a log dir's checkpoints describe the partition directories right below it
        children: dict[str, dict] = {}
        for gi, facts in self.partitions.items():
            path = self.groups[gi].path
            pd = names.parse_partition_dir(path)
            if pd is None:
                continue
            key = pd.name if pd.state is None else os.path.basename(os.path.normpath(path))
            meta = next((s for s in self.group_scans(gi) if s.kind == names.PARTITION_METADATA), None)
            children.setdefault(os.path.dirname(os.path.normpath(path)), {})[key] = (facts, meta)
        for gi, g in enumerate(self.groups):
            kids = children.get(os.path.normpath(g.path), {})
            scans = self.group_scans(gi)
            if not kids or not scans:
                continue
            fold_logdir(g.path, scans, {k: v[0] for k, v in kids.items()},
                        {k: v[1] for k, v in kids.items() if v[1] is not None})

    def _join_transactions(self) -> None:
        """Transactions across partitions with the coordinator's records: hanging ones become findings."""
        from kafkadump.decoders.internal_topics.kinds import kind_from_path

        state_scans = [s for s in self.file_scans()
                       if s.kind == names.SEGMENT and kind_from_path(s.path) == "transactions"]
        report = join_transactions(self.partitions.values(), state_scans, self.txn_partitions,
                                   self.transactional_ids)
        by_path = {f.path: f for f in self.partitions.values()}
        for t in report.transactions:
            for p in t.partitions:
                if p.state != HANGING:
                    continue
                by_path[p.path].hanging_transactions += 1
                if p.anchor is not None:
                    p.anchor.add(hanging_finding(t, p, abort_command(p.topic, p.partition, p.span.first_offset)))
        limited = next((s for s in self.file_scans() if s.finding_counts.get(Code.TRACKING_LIMIT)), None)
        if limited is not None:
            first = next((f for f in limited.findings if f.code is Code.TRACKING_LIMIT), None)
            report.findings.append(Finding(Code.TRACKING_LIMIT, first.offset if first else 0,
                                           f"{limited.path}: {first.message if first else 'tracking limit'}: "
                                           f"those producers' transactions are not listed"))
        self.transactions = report
    def _fold_remote(self) -> None:
        """Remote segment files against the __remote_log_metadata partitions triaged with them."""
        segments: dict = {}
        for facts in self.partitions.values():
            segments.update(facts.remote_segments or {})
        if segments:
            check_remote_files(segments, list(self.file_scans()))

    # --- the report -----------------------------------------------------------------------
    def file_scans(self) -> Iterator[FileScan]:
        for gi in range(len(self.groups)):
            yield from self.group_scans(gi)



METADATA_TOPIC = "__cluster_metadata"


def _check_metadata(path: str, facts: PartitionFacts, scans: list[FileScan],
                    on_change: Callable[[str, Any], None] | None = None) -> None:
    """A KRaft metadata directory: replayed (newest snapshot, then the log), its unclean elections and
    re-created topics become findings of the files holding their records, and facts of the partition;
    ``on_change(path, change)`` is handed each partition change of the replay."""
    from kafkadump.reports.metadata import check_metadata

    check = check_metadata(path, on_change=None if on_change is None else lambda c: on_change(path, c))
    if check is None:
        return
    facts.unclean_elections, facts.topics_recreated = check.unclean_elections, check.topics_recreated
    by_path = {os.path.normpath(s.path): s for s in scans}
    for file, finding in check.findings:
        scan = by_path.get(os.path.normpath(file))
        if scan is not None:
            scan.add(finding)


def transactions_report(paths: list[str], tally: Tally, *, jobs: int = 2, txn_partitions: int = DEFAULT_PARTITIONS,
                        transactional_ids: tuple[str, ...] = (),
                        progress: Callable[[int, int, str], None] | None = None) -> TxnReport:
    """``kafkadump txn``: the transaction join over ``paths`` (triage's scans, batch headers and markers).

    Its problems go to ``tally``: each hanging transaction, the report's own
    findings (``tracking-limit``), unreadable files (input errors, exit 2).
    """
    run = Triage(paths, records=False, keep_transactions=True, txn_partitions=txn_partitions,
                 transactional_ids=transactional_ids, progress=progress,
                 runner=local_runner(max(1, jobs), custody=False)).run()
    report = run.transactions
    assert report is not None
    tally.input_errors += [s.error for s in run.file_scans() if s.error]
    tally.problems += report.count(HANGING)
    tally.see(report.findings)
    if not report.partitions:
        tally.notes.append("no partition with segments among the inputs (give log dirs, or TOPIC-N partition "
                           "directories)")
    found = {t.coordinator.transactional_id: t.coordinator.state_partition for t in report.transactions
             if t.coordinator is not None and t.coordinator.state_partition is not None}
    note = placement_note("__transaction_state", "--txn-partitions", found, txn_partitions)
    if note:
        tally.notes.append(note)
    return report


__all__ = ["Triage", "transactions_report", "plan", "run_unit", "run_units", "chunks", "local_runner", "Runner", "Unit",
           "Group"]
