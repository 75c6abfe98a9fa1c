"""``kafkadump report``: the reports of triage, txn, offsets, metadata and capture, gathered for one incident file.

Nothing here decodes on its own: it runs the reports the other commands run
and keeps, bounded, what the HTML renderer (:mod:`kafkadump.render.html_report`)
draws:

* one triage run (:class:`~kafkadump.reports.triage.Triage`) over every path that
  is not a capture, keeping transactions (the join ``txn`` prints, hanging ones as
  findings): verdict, findings, partitions, chain of custody;
* ``offsets``' items (log start, high watermark, consumer lag);
* ``diff`` of the copies of one partition among the inputs (the same topic id in two directories);
* ``metadata``'s partition changes of each ``__cluster_metadata`` directory, as
  triage's own replay of it hands them over (leader and ISR history, unclean elections);
* per pictured partition, ``batches``' headers (the timeline's marks), and per
  damaged segment its batches and gaps (the byte map); ``hexdump``'s view of the
  first damaged items;
* per capture, ``capture``'s frames as requests over time per connection.

Pictures are drawn for the partitions with problems first, then a bounded
sample of the clean ones; everything bounded here is said in :attr:`Incident.summarised`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kafkadump.base.errors import InputError, UsageError
from kafkadump.base.findings import Code, Severity
from kafkadump.base.status import Tally
from kafkadump.base.values import Value
from kafkadump.decoders.batches import Options
from kafkadump.decoders.batches.model import Batch, Gap
from kafkadump.decoders.logfiles import names
from kafkadump.sources.capture_magic import is_capture

if TYPE_CHECKING:
    from kafkadump.decoders.internal_topics.metadata_replay import PartitionChange
    from kafkadump.decoders.payloads.view import PayloadRequest
    from kafkadump.decoders.protocol.frames import Frame
    from kafkadump.reports.diff import DiffSummary, Divergence
    from kafkadump.reports.offsets import GroupOffset, PartitionOffsets
    from kafkadump.reports.scan import FileScan
    from kafkadump.reports.segments import HexdumpView
    from kafkadump.reports.transactions import TxnReport
    from kafkadump.reports.triage import Triage

MAX_TIMELINES = 24          # partitions drawn as timelines: those with problems first, then a sample
CLEAN_SAMPLE = 4            # of those, at most this many clean ones
MAX_MARKS = 600             # batch marks per timeline (more batches: every k-th, damaged ones always)
MAX_WALK_BYTES = 256 << 20  # segment bytes walked for timelines, all partitions together
MAX_MAPS = 12               # damaged segments drawn as byte maps
MAX_PIECES = 400            # pieces of one byte map (runs of the same kind merged)
MAX_HEXDUMPS = 8            # annotated hexdumps embedded
MAX_HISTORIES = 24          # partitions whose leader and ISR history is drawn
MAX_CHANGES = 200           # changes kept per partition history
MAX_GROUP_OFFSETS = 2000    # consumer lag bars
MAX_REQUESTS = 2000         # requests kept per capture (evenly thinned past it; errors always kept)
MAX_REPLICA_PAIRS = 12      # copies of one partition (same topic id) compared with diff
MAX_DIFF_BYTES = 1 << 20    # segment bytes diff reads, all pairs together
MAX_DIVERGENCES = 5         # divergent runs kept per pair

INTACT, DAMAGED, RESYNCED, ZEROS = "intact", "damaged", "resynced", "zero padding"


class Mark(Value):
    """One batch on a timeline: its offsets, its newest timestamp and whether it is damaged."""

    __match_args__ = ("first", "last", "timestamp", "damaged", "file", "position")

    def __init__(self, first: int, last: int, timestamp: int | None, damaged: bool, file: str, position: int) -> None:
        self.first = first
        self.last = last
        self.timestamp = timestamp
        self.damaged = damaged
        self.file = file
        self.position = position


class Timeline(Value):
    """A partition's offsets against time: its batches (thinned), the offsets missing between them,
    its segments' base offsets, the log start and high watermark."""

    __match_args__ = ("path", "topic", "partition", "marks", "gaps", "segment_starts", "log_start",
                      "high_watermark", "log_end", "batches", "thinned", "walked")

    def __init__(self, path: str, topic: str | None, partition: int | None) -> None:
        self.path = path
        self.topic = topic
        self.partition = partition
        self.marks: list[Mark] = []
        self.gaps: list[tuple[int, int]] = []          # [first missing, last missing]
        self.segment_starts: list[int] = []
        self.log_start: int | None = None
        self.high_watermark: int | None = None
        self.log_end: int | None = None
        self.batches = 0
        self.thinned = 1          # every k-th batch is a mark
        self.walked = True        # False: over the byte budget, not walked


class Piece(Value):
    """A run of bytes of one kind in a segment's byte map."""

    __match_args__ = ("kind", "start", "size")

    def __init__(self, kind: str, start: int, size: int) -> None:
        self.kind = kind
        self.start = start
        self.size = size


class ByteMap(Value):
    """A damaged segment's bytes: intact, damaged, resynced (intact after damage) and zero padding."""

    __match_args__ = ("path", "size", "pieces", "merged")

    def __init__(self, path: str, size: int) -> None:
        self.path = path
        self.size = size
        self.pieces: list[Piece] = []
        self.merged = False       # more pieces than MAX_PIECES: small ones folded into their neighbours


class LeaderChange(Value):
    """One partition change from the metadata log: leader and ISR after it."""

    __match_args__ = ("offset", "timestamp", "leader", "isr", "election", "unclean", "reason")

    def __init__(self, offset: int, timestamp: int | None, leader: int, isr: tuple[int, ...] | None,
                 election: bool, unclean: bool, reason: str | None) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.leader = leader
        self.isr = isr
        self.election = election
        self.unclean = unclean
        self.reason = reason


class LeaderHistory(Value):
    """A partition's leader and ISR history as one metadata directory records it."""

    __match_args__ = ("metadata_dir", "topic", "partition", "changes", "dropped", "unclean")

    def __init__(self, metadata_dir: str, topic: str, partition: int) -> None:
        self.metadata_dir = metadata_dir
        self.topic = topic
        self.partition = partition
        self.changes: list[LeaderChange] = []
        self.dropped = 0
        self.unclean = 0


class Exchange(Value):
    """A request of a capture: when, on which connection, which API, its latency, whether it failed."""

    __match_args__ = ("connection", "time", "api", "latency", "error", "frame")

    def __init__(self, connection: int, time: float | None, api: str, latency: float | None, error: str | None,
                 frame: int | None) -> None:
        self.connection = connection
        self.time = time
        self.api = api
        self.latency = latency
        self.error = error
        self.frame = frame


class CaptureSummary(Value):
    """One capture: its connections (id -> ``client -> server``), requests, clients and totals."""

    __match_args__ = ("path", "connections", "exchanges", "requests", "errors", "clients", "thinned", "findings")

    def __init__(self, path: str) -> None:
        self.path = path
        self.connections: dict[int, str] = {}
        self.exchanges: list[Exchange] = []
        self.requests = 0
        self.errors = 0
        self.clients: set[str] = set()
        self.thinned = False
        self.findings: dict[str, int] = {}


class ReplicaPair(Value):
    """Two copies of one partition (the same topic id in two directories) compared by ``diff``."""

    __match_args__ = ("topic", "partition", "path_a", "path_b", "summary", "divergences")

    def __init__(self, topic: str | None, partition: int | None, path_a: str, path_b: str) -> None:
        self.topic = topic
        self.partition = partition
        self.path_a = path_a
        self.path_b = path_b
        self.summary: DiffSummary | None = None
        self.divergences: list[Divergence] = []


class Hexdump(Value):
    """An annotated hexdump of a damaged item (``hexdump``'s view), and the finding it was taken for."""

    __match_args__ = ("anchor", "view", "code")

    def __init__(self, anchor: str, view: HexdumpView, code: str) -> None:
        self.anchor = anchor
        self.view = view
        self.code = code


class Incident:
    """Everything the incident file shows."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self.triage: Triage | None = None
        self.transactions: TxnReport | None = None
        self.partition_offsets: list[PartitionOffsets] = []
        self.group_offsets: list[GroupOffset] = []
        self.histories: list[LeaderHistory] = []
        self.timelines: list[Timeline] = []
        self.maps: list[ByteMap] = []
        self.hexdumps: list[Hexdump] = []
        self.hexdumps_left_out = 0
        self.captures: list[CaptureSummary] = []
        self.replicas: list[ReplicaPair] = []
        self.capture_custody: list[FileScan] = []
        self.not_read: list[str] = []       # inputs (or parts of them) not read, and why
        self.summarised: list[str] = []     # what was bounded, and how
        self.redacted: bool = False

    def batch_at(self, path: str, position: int) -> Mark | None:
        """The timeline mark of the batch at ``position`` of ``path`` (when that segment was walked)."""
        for t in self.timelines:
            for m in t.marks:
                if m.file == path and m.position == position:
                    return m
        return None


def _split_captures(paths: list[str]) -> tuple[list[str], list[str]]:
    captures, rest = [], []
    for p in paths:
        if not os.path.exists(p) and not os.path.islink(p):
            raise UsageError(f"{p}: no such file or directory")
        if os.path.isfile(p) and _is_capture_file(p):
            captures.append(p)
        else:
            rest.append(p)
    return captures, rest


def _is_capture_file(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return is_capture(f.read(4))
    except OSError:
        return False


def incident_report(paths: list[str], tally: Tally, *, jobs: int = 2, payloads: PayloadRequest | None = None,
                    progress: Any = None) -> Incident:
    """Run the reports over ``paths`` (log dirs, partition dirs, segments, captures) and keep what the
    incident file shows.  Problems go to ``tally`` (the triage's findings, the captures' and offsets'
    problems); unreadable inputs are its input errors."""
    from kafkadump.reports.triage import Triage

    captures, rest = _split_captures(paths)
    inc = Incident(list(paths))
    inc.redacted = bool(payloads is not None and payloads.redaction.active)
    if rest:
        histories: dict[tuple[str, str, int], LeaderHistory] = {}
        inc.triage = Triage(rest, jobs=jobs, keep_transactions=True, progress=progress,
                            on_metadata_change=lambda path, change: _add_change(histories, path, change)).run()
        inc.transactions = inc.triage.transactions
        _count_triage(inc.triage, tally)
        _offsets(inc, rest)
        _keep_histories(inc, list(histories.values()))
        _timelines(inc)
        _maps_and_hexdumps(inc, payloads)
        _replicas(inc, tally)
        _not_read(inc)
    for c in captures:
        _capture(inc, c, tally, payloads)
    return inc


def _count_triage(run: Triage, tally: Tally) -> None:
    for s in run.file_scans():
        if s.error:
            tally.input_errors.append(s.error)
        tally.problems += sum(n for code, n in s.finding_counts.items() if _severity(code) is not Severity.INFO)
    for p in run.partitions.values():
        tally.problems += sum(n for code, n in p.outside_findings.items() if _severity(code) is not Severity.INFO)
    if run.transactions is not None:
        tally.see(run.transactions.findings)


def _severity(code: Code) -> Severity:
    from kafkadump.base.findings import SEVERITY

    return SEVERITY[code]


def _offsets(inc: Incident, paths: list[str]) -> None:
    """``offsets``' items: per partition its log start and high watermark, per group its lag."""
    from kafkadump.reports.offsets import GroupOffset, OffsetsQuery, PartitionOffsets, offsets_report

    if inc.triage is None or not inc.triage.partitions:
        return
    dropped = 0
    try:
        for item in offsets_report(paths, OffsetsQuery(), Tally()):
            if isinstance(item, PartitionOffsets):
                inc.partition_offsets.append(item)
            elif isinstance(item, GroupOffset):
                if len(inc.group_offsets) < MAX_GROUP_OFFSETS:
                    inc.group_offsets.append(item)
                else:
                    dropped += 1
    except (InputError, UsageError, OSError) as e:
        inc.not_read.append(f"consumer offsets: {e}")
    if dropped:
        inc.summarised.append(f"consumer lag: the first {MAX_GROUP_OFFSETS} group commits drawn, {dropped} more "
                              f"not drawn (kafkadump offsets lists them all)")


def _keep_histories(inc: Incident, histories: list[LeaderHistory]) -> None:
    """The partition changes triage's replay of each ``__cluster_metadata`` directory handed over (the
    items ``metadata`` prints): leader and ISR history, the partitions with unclean elections first."""
    histories.sort(key=lambda h: (-h.unclean, h.topic, h.partition, h.metadata_dir))
    if len(histories) > MAX_HISTORIES:
        inc.summarised.append(f"leader and ISR history: {MAX_HISTORIES} of {len(histories)} partitions drawn "
                              f"(those with unclean elections first; kafkadump metadata lists them all)")
    inc.histories = histories[:MAX_HISTORIES]


def _add_change(histories: dict[tuple[str, str, int], LeaderHistory], path: str, item: PartitionChange) -> None:
    key = (path, item.topic or item.topic_id, item.partition)
    h = histories.get(key)
    if h is None:
        h = histories[key] = LeaderHistory(path, key[1], key[2])
    h.unclean += int(item.unclean)
    if len(h.changes) >= MAX_CHANGES and not item.unclean:
        h.dropped += 1
        return
    st = item.state
    h.changes.append(LeaderChange(item.offset, item.timestamp, st.leader, st.isr, item.election, item.unclean,
                                  item.unclean_reason))


def _problem_order(inc: Incident) -> list[int]:
    """The group indexes of the partitions to picture: with problems (worst first), then a clean sample."""
    assert inc.triage is not None
    run = inc.triage
    scored = []
    weight = {Severity.ERROR: 1000, Severity.WARNING: 1, Severity.INFO: 0}   # errors before warnings
    for gi, facts in run.partitions.items():
        counts = sum(n * weight[_severity(code)] for s in run.group_scans(gi) for code, n in s.finding_counts.items())
        counts += 1000 * facts.hanging_transactions + (facts.unclean_elections or 0)
        scored.append((-counts, run.groups[gi].path, gi))
    scored.sort()
    troubled = [gi for neg, _, gi in scored if neg < 0]
    # the clean sample: topics people write to before Kafka's own (__consumer_offsets, ...)
    clean = sorted((gi for neg, _, gi in scored if neg == 0 and run.partitions[gi].batches > 1),
                   key=lambda gi: (str(run.partitions[gi].topic).startswith("__"), run.groups[gi].path))
    chosen = troubled[:MAX_TIMELINES] + clean[:max(0, min(CLEAN_SAMPLE, MAX_TIMELINES - len(troubled)))]
    if len(troubled) + len(clean) > len(chosen):
        inc.summarised.append(f"timelines: {len(chosen)} of {len(run.partitions)} partitions drawn ("
                              f"{min(len(troubled), MAX_TIMELINES)} of {len(troubled)} with problems, "
                              f"{len(chosen) - min(len(troubled), MAX_TIMELINES)} clean as a sample); "
                              "the partition table lists them all")
    return chosen


def _timelines(inc: Incident) -> None:
    """Per pictured partition: ``batches``' headers as marks, the offsets missing between them."""
    assert inc.triage is not None
    run = inc.triage
    by_path = {p.path: p for p in inc.partition_offsets}
    budget = MAX_WALK_BYTES
    for gi in _problem_order(inc):
        facts = run.partitions[gi]
        t = Timeline(facts.path, facts.topic, facts.partition)
        po = by_path.get(facts.path)
        if po is not None:
            t.log_start, t.high_watermark, t.log_end = po.earliest, po.high_watermark, po.log_end
        t.batches = facts.batches
        t.thinned = max(1, -(-facts.batches // MAX_MARKS))
        segments = sorted((s for s in run.group_scans(gi) if s.kind == names.SEGMENT), key=lambda s: s.path)
        t.segment_starts = [n for n in (names.classify(s.path).offset for s in segments) if n is not None]
        size = sum(s.size or 0 for s in segments)
        if size > budget:
            t.walked = False
        else:
            budget -= size
            _walk_marks(t, [s.path for s in segments])
        inc.timelines.append(t)
    if any(not t.walked for t in inc.timelines):
        inc.summarised.append(f"timelines: batches read for the first {MAX_WALK_BYTES >> 20} MiB of segments; "
                              "past that, segments only")


def _walk_marks(t: Timeline, files: list[str]) -> None:
    from kafkadump.reports.segments import batch_report

    k = 0
    expected: int | None = None
    for item in batch_report(files, Options(records=False), Tally()) if files else ():
        if not isinstance(item, Batch) or item.base_offset is None:
            continue
        last = item.last_offset if item.last_offset is not None else item.base_offset
        if expected is not None and item.base_offset > expected:
            t.gaps.append((expected, item.base_offset - 1))
        expected = max(expected or 0, last + 1)
        damaged = item.crc_valid is False or any(f.severity is Severity.ERROR for f in item.findings)
        if damaged or k % t.thinned == 0:
            t.marks.append(Mark(item.base_offset, last, item.max_timestamp if item.max_timestamp is not None
                                else item.timestamp, damaged, item.file, item.position))
        k += 1


def _damaged_segments(run: Triage) -> list[FileScan]:
    out = []
    for s in run.file_scans():
        if s.kind != names.SEGMENT or s.error:
            continue
        if s.summary.get("damagedRanges") or s.summary.get("crcFailures") or s.finding_counts.get(Code.TRUNCATED):
            out.append(s)
    return out


def _maps_and_hexdumps(inc: Incident, payloads: PayloadRequest | None) -> None:
    """Per damaged segment (bounded): its byte map, and the hexdumps of its first damaged items."""
    assert inc.triage is not None
    damaged = _damaged_segments(inc.triage)
    for s in damaged[:MAX_MAPS]:
        inc.maps.append(_byte_map(inc, s, payloads))
    if len(damaged) > MAX_MAPS:
        inc.summarised.append(f"byte maps: {MAX_MAPS} of {len(damaged)} damaged segments drawn")


def _byte_map(inc: Incident, scan: FileScan, payloads: PayloadRequest | None) -> ByteMap:
    from kafkadump.reports.segments import batch_report

    m = ByteMap(scan.path, scan.size or 0)
    seen_damage = False
    for item in batch_report([scan.path], Options(records=False), Tally()):
        if isinstance(item, Gap):
            zero = any(f.code is Code.ZERO_PADDING for f in item.findings)
            kind = ZEROS if zero else DAMAGED
            seen_damage = seen_damage or not zero
        elif isinstance(item, Batch):
            bad = item.crc_valid is False or any(f.severity is Severity.ERROR for f in item.findings)
            kind = DAMAGED if bad else (RESYNCED if seen_damage else INTACT)
            seen_damage = seen_damage or bad
        else:
            continue
        if kind == DAMAGED:
            _hexdump(inc, item, payloads)
        _add_piece(m, kind, item.position, item.size)
    _bound_pieces(m)
    return m


def _add_piece(m: ByteMap, kind: str, start: int, size: int) -> None:
    last = m.pieces[-1] if m.pieces else None
    if last is not None and last.kind == kind and last.start + last.size == start:
        last.size += size
    else:
        m.pieces.append(Piece(kind, start, size))


def _bound_pieces(m: ByteMap) -> None:
    """At most :data:`MAX_PIECES`: the smallest intact runs folded into the piece before them."""
    while len(m.pieces) > MAX_PIECES:
        m.merged = True
        kept: list[Piece] = []
        cut = sorted(p.size for p in m.pieces)[len(m.pieces) // 2]
        for p in m.pieces:
            if kept and p.size <= cut and p.kind in (INTACT, RESYNCED):
                kept[-1].size = p.start + p.size - kept[-1].start
            else:
                kept.append(p)
        if len(kept) == len(m.pieces):
            del kept[MAX_PIECES:]
        m.pieces = kept


def _hexdump(inc: Incident, item: Batch | Gap, payloads: PayloadRequest | None) -> None:
    from kafkadump.reports.segments import hexdump_view

    if len(inc.hexdumps) >= MAX_HEXDUMPS:
        if not inc.hexdumps_left_out:
            inc.summarised.append(f"hexdumps: the first {MAX_HEXDUMPS} damaged items embedded (kafkadump hexdump "
                                  "FILE --position N shows any other)")
        inc.hexdumps_left_out += 1
        return
    code = next((f.code.value for f in item.findings if f.severity is not Severity.INFO), "damaged")
    try:
        view = hexdump_view(item.file, Options(), Tally(), position=item.position, payloads=payloads)
    except (InputError, UsageError, OSError):
        return
    inc.hexdumps.append(Hexdump(f"hex-{len(inc.hexdumps)}", view, code))


def _replicas(inc: Incident, tally: Tally) -> None:
    """``diff`` of the copies of a partition among the inputs (the same topic id and partition in two
    directories: replicas of two brokers, a backup and the live log), each against the first copy."""
    from kafkadump.reports.diff import DiffSummary, Divergence, diff_report

    assert inc.triage is not None
    copies: dict[tuple[str, int], list[Any]] = {}
    for facts in inc.triage.partitions.values():
        if facts.topic_id and facts.partition is not None and facts.state is None and facts.segments:
            copies.setdefault((facts.topic_id, facts.partition), []).append(facts)
    pairs = [(group[0], other) for _, group in sorted(copies.items()) for other in group[1:]]
    budget, done = MAX_DIFF_BYTES, 0
    for a, b in pairs:
        if done >= MAX_REPLICA_PAIRS or a.bytes + b.bytes > budget:
            continue
        budget -= a.bytes + b.bytes
        done += 1
        pair = ReplicaPair(a.topic, a.partition, a.path, b.path)
        try:
            for item in diff_report(a.path, b.path, Options(), Tally()):
                if isinstance(item, Divergence) and len(pair.divergences) < MAX_DIVERGENCES:
                    pair.divergences.append(item)
                elif isinstance(item, DiffSummary):
                    pair.summary = item
        except (InputError, UsageError, OSError) as e:
            inc.not_read.append(f"{a.path} against {b.path}: not compared: {e}")
            continue
        if pair.summary is not None and pair.summary.verdict == "diverged":
            tally.add_problem()
        inc.replicas.append(pair)
    if len(pairs) > done:
        inc.summarised.append(f"replicas: {done} of {len(pairs)} pairs of copies compared (kafkadump diff A B "
                              "compares any other)")


def _not_read(inc: Incident) -> None:
    assert inc.triage is not None
    for s in inc.triage.file_scans():
        if s.error:
            inc.not_read.append(s.error)
        elif s.kind == "unknown" and s.summary.get("note"):
            inc.not_read.append(f"{s.path}: {s.summary['note']}")


def _capture(inc: Incident, path: str, tally: Tally, payloads: PayloadRequest | None) -> None:
    """``capture``'s frames of one capture: requests over time per connection, with latency and errors."""
    from kafkadump.decoders.protocol.frames import Frame
    from kafkadump.reports.capture import CaptureRequest, CaptureTotals, FrameViews, capture_report
    from kafkadump.reports.scan import FileScan, custody

    scan = FileScan(path, "capture")
    try:
        custody(path, scan)
    except OSError as e:
        tally.input_errors.append(f"{path}: {e.strerror or e}")
        inc.not_read.append(f"{path}: {e.strerror or e}")
        return
    inc.capture_custody.append(scan)
    summary = CaptureSummary(path)
    pending: list[Exchange] = []
    try:
        for item in capture_report(path, CaptureRequest(), tally):
            if isinstance(item, CaptureTotals):
                break
            frame = item.frame if isinstance(item, FrameViews) else item
            if isinstance(frame, Frame) and frame.kind in ("request", "response"):
                _exchange(summary, frame, pending)
    except (InputError, UsageError, OSError) as e:
        tally.input_errors.append(f"{path}: {e}")
        inc.not_read.append(f"{path}: {e}")
    summary.exchanges = _thinned(pending, summary)
    inc.captures.append(summary)


def _exchange(summary: CaptureSummary, f: Frame, pending: list[Exchange]) -> None:
    conn = f.connection
    cid = getattr(conn, "id", None)
    cid = -1 if cid is None else cid
    if cid not in summary.connections:
        summary.connections[cid] = (f"{getattr(conn, 'client', '?')} \u2192 {getattr(conn, 'server', '?')}"
                                    if conn is not None else f.source or "stream")
    for finding in f.findings:
        summary.findings[finding.code.value] = summary.findings.get(finding.code.value, 0) + 1
    if f.client_id:
        summary.clients.add(f.client_id)
    api = _api_name(f)
    if f.kind == "request":
        summary.requests += 1
        if not any(e.frame == f.index for e in pending[-64:]):
            pending.append(Exchange(cid, f.time, api, None, _frame_problem(f), f.index))
        return
    error = _frame_problem(f) or _error_code(f.body)
    latency = f.time - f.request_time if f.time is not None and f.request_time is not None else None
    req = next((e for e in reversed(pending[-256:]) if e.frame == f.request_index), None)
    if req is not None:
        req.latency, req.error = latency, req.error or error
    else:
        pending.append(Exchange(cid, f.request_time or f.time, api, latency, error, f.request_index))
    if error:
        summary.errors += 1


def _api_name(f: Frame) -> str:
    if f.api_key is None:
        return "unknown"
    return f.api_name or f"api {f.api_key}"


def _frame_problem(f: Frame) -> str | None:
    bad = next((x for x in f.findings if x.severity is not Severity.INFO), None)
    return bad.code.value if bad is not None else None


def _error_code(body: Any, budget: int = 400) -> str | None:
    """The first non-zero ``errorCode`` in a response body (a bounded walk)."""
    stack, seen = [body], 0
    while stack and seen < budget:
        node = stack.pop()
        seen += 1
        if isinstance(node, dict):
            code = node.get("errorCode")
            if isinstance(code, int) and code != 0:
                return f"error code {code}"
            stack.extend(v for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend(v for v in node[:50] if isinstance(v, (dict, list)))
    return None


def _thinned(exchanges: list[Exchange], summary: CaptureSummary) -> list[Exchange]:
    if len(exchanges) <= MAX_REQUESTS:
        return exchanges
    summary.thinned = True
    step = -(-len(exchanges) // MAX_REQUESTS)
    return [e for i, e in enumerate(exchanges) if e.error or i % step == 0]


def problem_partitions(inc: Incident) -> Iterable[int]:
    """The group indexes of the partitions with a warning or error, in plan order."""
    assert inc.triage is not None
    for gi in sorted(inc.triage.partitions):
        if any(_severity(c) is not Severity.INFO for s in inc.triage.group_scans(gi) for c in s.finding_counts):
            yield gi


__all__ = ["Incident", "incident_report", "problem_partitions", "Timeline", "Mark", "ByteMap", "Piece",
           "LeaderHistory", "LeaderChange", "CaptureSummary", "Exchange", "Hexdump", "ReplicaPair", "INTACT", "DAMAGED", "RESYNCED",
           "ZEROS"]
