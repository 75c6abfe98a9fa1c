"""The reports of ``batches``, ``records``, ``verify-crc`` and ``hexdump``, as streams of items.

Each function opens its inputs (:mod:`kafkadump.sources.inputs`), walks them with
the shared decoder and yields what the command reports, in order; a
renderer (:mod:`kafkadump.render`) turns the items into a table, JSON Lines
or kafka-dump-log lines.  Every problem finding passes through the
caller's :class:`~kafkadump.base.status.Tally`, which gives the exit
status.  Nothing here prints.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, cast

from kafkadump.base.errors import InputError, UsageError
from kafkadump.base.findings import Code
from kafkadump.base.status import Tally
from kafkadump.base.values import FrozenValue, Value
from kafkadump.decoders.batches import CrcScan, Options, iter_batches
from kafkadump.decoders.batches.guard import Walk, file_changed, guarded_walk
from kafkadump.decoders.batches.model import EVERY_RECORD, Batch, Gap, PlainRun, Record, Span
from kafkadump.decoders.batches.walk import decode_spanned, iter_windows, locate
from kafkadump.sources.input_paths import expand
from kafkadump.sources.inputs import check_batches, open_segments
from kafkadump.sources.segment import MappedRange, Segment, open_segment

if TYPE_CHECKING:
    from kafkadump.decoders.internal_topics.decoded import DecodedRecord
    from kafkadump.decoders.internal_topics.record_decoder import Decoder
    from kafkadump.decoders.payloads.view import PayloadInspector, PayloadRequest, RecordFilter, RecordView
    from kafkadump.reports.query import RecordQuery


class FileStart(FrozenValue):
    """The next items come from ``path`` (one of ``files`` inputs); ``decoded``: its records are
    of an internal topic and are decoded."""

    __match_args__ = ("path", "files", "decoded")
    path: str
    files: int
    decoded: bool

    def __init__(self, path: str, files: int, decoded: bool = False) -> None:
        self._set(path=path, files=files, decoded=decoded)


class RecordsOf(Value):
    """The records of ``batch`` that the query keeps, with their internal-topic decoding
    (``decoded``, parallel to ``records``) when the file is of an internal topic.

    ``shown``: whether the batch itself is worth a line (it has kept records or
    findings, or nothing is filtered).
    """

    __match_args__ = ("batch", "records", "decoded", "shown", "views")

    def __init__(self, batch: Batch, records: Sequence[Record], decoded: list[DecodedRecord] | None = None,
                 shown: bool = True, views: list[RecordView] | None = None) -> None:
        self.batch = batch
        self.records = records
        self.decoded = decoded
        self.shown = shown
        self.views = views  # with payload options: per record, what they made of it


class CrcTotals(Value):
    """verify-crc's closing summary."""

    __match_args__ = ("files", "batches", "bytes", "bad", "findings", "valid")

    def __init__(self, files: int = 0, batches: int = 0, bytes: int = 0, bad: int = 0, findings: int = 0,
                 valid: bool = True) -> None:
        self.files = files
        self.batches = batches
        self.bytes = bytes
        self.bad = bad
        self.findings = findings
        self.valid = valid


def segment_files(paths: list[str], tally: Tally) -> list[str]:
    """The segment files ``paths`` name (directories expanded, non-segments of a list skipped: a
    note in ``tally``); a directory without segments is an input error."""
    inputs = expand(paths)
    note = inputs.note()
    if note:
        tally.notes.append(note)
    for d in inputs.empty_directories:
        message = f"{d}: no segment files (*.log) in it or in its partition directories"
        if not inputs.files and len(paths) == 1:
            raise InputError(message)
        tally.input_errors.append(message)
    return inputs.files


def batch_report(paths: list[str], options: Options, tally: Tally) -> Iterator[FileStart | Batch | Gap]:
    """``batches``: every batch (or top-level legacy message) and gap of every file."""
    return cast(Iterator[FileStart | Batch | Gap], _batch_items(paths, options, tally, False))


def batch_windows(paths: list[str], options: Options, tally: Tally) -> Iterator[FileStart | Batch | Gap | PlainRun]:
    """:func:`batch_report`, windows of plain batches as :class:`PlainRun` items (for a renderer that
    writes them: render.jsonl)."""
    return _batch_items(paths, options, tally, True)


def _batch_items(paths: list[str], options: Options, tally: Tally,
                 runs: bool) -> Iterator[FileStart | Batch | Gap | PlainRun]:
    files = segment_files(paths, tally)
    for path, seg in open_segments(files, tally):
        yield FileStart(path, len(files))
        for item in guarded_walk(seg, path, _walker(seg, path, options, EVERY_RECORD if runs else None)):
            tally.see(item.findings)
            yield item


def _walker(seg: Segment, path: str, options: Options, runs: tuple[int, int, int, int] | None = None) -> Walk:
    """``iter_batches`` over ``seg`` from ``start`` to ``end`` (for :func:`guarded_walk`); ``runs``: its
    windows' record bounds (None: batch by batch)."""
    def walk(start: int, end: int) -> Iterator[Batch | Gap | PlainRun]:
        return iter_windows(seg.buf, path, start=start, end=end, options=options, runs=runs)
    return walk


def _internal_decoder(decode: str, path: str, redact_secrets: bool = True) -> Decoder | None:
    from kafkadump.decoders.internal_topics.kinds import resolve_kind

    kind = resolve_kind(decode, path)
    if kind is None:
        return None
    from kafkadump.decoders.internal_topics.record_decoder import decoder_for

    return decoder_for(kind, redact_secrets)


def _control_decoder() -> Decoder:
    """The records of control batches decode alike under every kind (their key says the type)."""
    from kafkadump.decoders.internal_topics.record_decoder import control_decoder

    return control_decoder()


def record_report(paths: list[str], options: Options, query: RecordQuery, tally: Tally,
                  decode: str = "auto", control_values: bool = False,
                  payloads: PayloadRequest | None = None) -> Iterator[FileStart | Gap | RecordsOf]:
    """``records``: see :func:`record_windows` (which this is, without windows)."""
    return cast(Iterator[FileStart | Gap | RecordsOf],
                record_windows(paths, options, query, tally, decode, control_values, payloads, runs=False))


def record_windows(paths: list[str], options: Options, query: RecordQuery, tally: Tally,
                   decode: str = "auto", control_values: bool = False,
                   payloads: PayloadRequest | None = None, runs: bool = True
                   ) -> Iterator[FileStart | Gap | RecordsOf | PlainRun]:
    """``records``: per batch, the records ``query`` keeps (batches pruned by header first),
    decoded as internal-topic records where ``decode`` (``auto``, ``none`` or a kind) says so.
    With ``control_values`` the records of control batches are decoded in every file (their
    KRaft bodies: LeaderChange, SnapshotHeader, ...; kafka-dump-log prints them decoded).

    Gaps come as they are; a batch comes as :class:`RecordsOf`, findings and all.
    ``payloads``: the payload options (framing, schemas, ``--where``, redaction): records of
    other topics get their :class:`~kafkadump.decoders.payloads.view.RecordView`.
    With ``runs`` (the renderer writes them), the windows of plain batches of a file whose records
    need nothing but the query's offsets and times come as :class:`PlainRun` items.
    """
    from kafkadump.decoders.internal_topics.kinds import kind_from_path

    options = options.replace(records=True, select=query.batch_selector())
    files = segment_files(paths, tally)
    secrets = payloads is None or payloads.redaction.secrets
    redacting = payloads is not None and payloads.redaction.bytes_redacted
    inspector = _payload_inspector(payloads, files)
    bounds = query.run_bounds() if runs and inspector is None and (payloads is None or payloads.where is None) \
        else None
    for path, seg in open_segments(files, tally):
        # --redact wins over --decode: an internal topic's keys and values are shown as digests too
        internal = None if redacting else _internal_decoder(decode, path, secrets)
        metadata = kind_from_path(path) == "metadata"   # (once a file: it parses the path)
        yield FileStart(path, len(files), decoded=internal is not None)
        plain = None if internal is not None or (secrets and metadata) else bounds
        for item in guarded_walk(seg, path, _walker(seg, path, options, plain)):
            tally.see(item.findings)
            if isinstance(item, (Gap, PlainRun)):
                yield item
                continue
            kept = query.select(item.records or ())
            decoded = None
            reader = internal if internal is not None or not (control_values and item.is_control) \
                else _control_decoder()
            if reader is not None:
                decoded = [reader.decode_record(r, item) for r in kept]
                for dr in decoded:
                    tally.see(dr.findings)
            views = None
            if inspector is not None and payloads is not None and decoded is None:
                kept, views = _payload_views(inspector, payloads, item, kept, tally)
            elif payloads is not None and payloads.where is not None and decoded is not None:
                kept, decoded = _where_decoded(payloads.where, item, kept, decoded)
            if secrets and decoded is None and kept and metadata:
                views = _secret_views(item, kept, views)
            yield RecordsOf(item, kept, decoded, shown=bool(kept or item.findings or not query.active), views=views)


def secret_records(batch: Batch, records: Sequence[Record]) -> set[tuple[str, int]]:
    """The :attr:`~kafkadump.decoders.batches.model.Record.identity` of each record of a KRaft metadata batch whose value holds a secret (a SCRAM
    credential, a sensitive config value): shown undecoded, its bytes are hidden all the same."""
    from kafkadump.decoders.internal_topics.record_decoder import decoder_for

    reader = decoder_for("metadata", True)
    out = set()
    for r in records:
        if r.value is not None and r.control is None:
            part = reader.decode_record(r, batch).value
            if part is not None and part.raw is None:   # the decoder masked a secret in it
                out.add(r.identity)
    return out


def _secret_views(batch: Batch, kept: Sequence[Record], views: list[RecordView] | None) -> list[RecordView] | None:
    """``views`` with the records whose values hold secrets marked (created when needed)."""
    secret = secret_records(batch, kept)
    if not secret:
        return views

    from kafkadump.decoders.payloads.view import RecordView

    base = views if views is not None else [RecordView(None, None) for _ in kept]
    return [v.replace(secret=True) if r.identity in secret else v for r, v in zip(kept, base)]


def _where_decoded(where: RecordFilter, batch: Batch, kept: Sequence[Record],
                   decoded: list[DecodedRecord]) -> tuple[list[Record], list[DecodedRecord]]:
    """The internal-topic records ``--where`` keeps (it sees their decoded key and value)."""
    out: tuple[list[Record], list[DecodedRecord]] = ([], [])
    for r, d in zip(kept, decoded):
        if where.keeps(r, batch, decoded=d):
            out[0].append(r)
            out[1].append(d)
    return out


def _payload_inspector(payloads: PayloadRequest | None, files: list[str]) -> PayloadInspector | None:
    if payloads is None or not payloads.active:
        return None
    from kafkadump.decoders.payloads.view import open_inspector

    return open_inspector(payloads, files)


def _payload_views(inspector: PayloadInspector, payloads: PayloadRequest, batch: Batch, kept: Sequence[Record],
                   tally: Tally) -> tuple[list[Record], list[RecordView]]:
    """The records of ``batch`` that ``--where`` keeps, with their payload views; the views'
    findings are counted (and shown in the batch's findings line)."""
    records: list[Record] = []
    views: list[RecordView] = []
    for r in kept:
        view, findings = inspector.view(r, batch)
        if payloads.where is not None and not payloads.where.keeps(r, batch, None, view):
            continue
        if findings:
            tally.see(findings)
            batch.findings.extend(findings)
        records.append(r)
        views.append(view)
    return records, views


def crc_report(paths: list[str], options: Options, tally: Tally) -> Iterator[FileStart | Batch | Gap | CrcTotals]:
    """``verify-crc``: every batch and gap with its CRC verdict (records not decoded), then the totals."""
    totals = CrcTotals()
    options = options.replace(records=False)
    files = segment_files(paths, tally)
    for path, seg in open_segments(files, tally):
        yield FileStart(path, len(files))
        for item in _crc_items(seg, path, options, totals):
            tally.see(item.findings)
            totals.findings += len(item.findings)
            yield item
        totals.files += 1
    totals.valid = not tally.problems
    yield totals


class _Shrunk(Exception):
    """The file shrank while the CRC scan read it (raised at a page-release point, before the pages
    past the new end are read)."""

    def __init__(self, upto: int):
        super().__init__(upto)
        self.upto = upto


def _checking_release(seg: Segment, release: Callable[[int], None] | None) -> Callable[[int], None]:
    """The scan's page release (every 32 MiB), checking the file's size as well."""
    def release_and_check(upto: int) -> None:
        if release is not None:
            release(upto)
        if seg.current_size() < seg.size:
            raise _Shrunk(upto)
    return release_and_check


def _crc_items(seg: Segment, path: str, options: Options, totals: CrcTotals) -> Iterator[Batch | Gap]:
    """The problem items of ``seg`` by the CRC scan, counted in ``totals``; if the file shrinks
    while it is read, the rest of what is still there is walked by :func:`guarded_walk`."""
    scan = CrcScan(seg.buf, path, options)
    scan.release = _checking_release(seg, scan.release)
    end = 0
    try:
        for item in scan:
            yield item
            end = item.position + item.size
            if seg.current_size() < seg.size:
                break
    except _Shrunk as e:
        end = max(end, e.upto)
    totals.batches += scan.batches
    totals.bad += scan.bad
    totals.bytes += min(seg.size, seg.current_size())
    if seg.current_size() >= seg.size:
        return
    options = options.replace(records=False)
    rest = guarded_walk(seg, path, lambda _, now: iter_batches(seg.buf, path, start=min(end, now), end=now,
                                                             options=options))
    for item in rest:
        if isinstance(item, Batch):
            totals.batches += 1
            # the CRC scan judges each batch on its own: the walk's offset-order is not its verdict
            item.findings = [f for f in item.findings if f.code is not Code.OFFSET_ORDER]
        if item.findings:
            totals.bad += any(f.severity.value != "info" for f in item.findings)
            yield item


class HexdumpView(Value):
    """One located item, decoded with every field's span, and the raw bytes around it."""

    __match_args__ = ("path", "decoded", "spans", "raw", "start", "before", "after", "masked")

    def __init__(self, path: str, decoded: Batch | Gap, spans: list[Span], raw: bytes | MappedRange, start: int,
                 before: bytes = b"", after: bytes = b"", masked: list[tuple[str, int, int]] | None = None) -> None:
        self.path = path
        self.decoded = decoded
        self.spans = spans
        self.raw = raw
        self.start = start
        self.before = before
        self.after = after
        self.masked = [] if masked is None else masked  # (source, start, end): bytes not shown


def hexdump_view(path: str, options: Options, tally: Tally, *, position: int | None = None,
                 offset: int | None = None, index: int | None = None, context: int = 0,
                 decode: str = "auto", payloads: PayloadRequest | None = None) -> HexdumpView:
    """``hexdump``: the item holding ``position``, Kafka ``offset`` or the ``index``-th batch
    (default the first), its spans, internal-topic fields split out where ``decode`` says so;
    with ``payloads``, keys and values split into their framing, redacted bytes masked (and no
    context bytes: they are other records')."""
    if sum(x is not None for x in (position, offset, index)) > 1:
        raise UsageError("give at most one of --position, --offset, --batch")
    seg = open_segment(path)
    try:
        return _hexdump_view(seg, path, options, tally, position, offset, index, context, decode, payloads)
    except BaseException:
        seg.close()
        raise


# an item larger than this is read from the mapping a row at a time, not copied (the segment stays open)
HEXDUMP_COPY_LIMIT = 1 << 20


def _hexdump_view(seg: Segment, path: str, options: Options, tally: Tally, position: int | None,
                  offset: int | None, index: int | None, context: int, decode: str,
                  payloads: PayloadRequest | None) -> HexdumpView:
    """:func:`hexdump_view` on the open ``seg``: closed when done, unless the view reads it (a large item)."""
    from kafkadump.decoders.internal_topics.kinds import kind_from_path, resolve_kind

    check_batches(path, seg)
    item = locate(seg.buf, path, position=position, offset=offset, index=index, options=options)
    if item is None:
        what = ("position " + str(position) if position is not None else
                "offset " + str(offset) if offset is not None else
                "batch " + str(index) if index is not None else "batch at all")
        raise UsageError(f"{path}: no {what} in this file")
    _still_there(seg, path, item)
    decoded, spans = decode_spanned(seg.buf, item, options)
    if seg.current_size() < seg.size:
        decoded.findings.append(file_changed(seg.size, seg.current_size()))
    secrets = payloads is None or payloads.redaction.secrets
    kind = None if payloads is not None and payloads.redaction.bytes_redacted else resolve_kind(decode, path)
    if kind is not None:
        from kafkadump.decoders.internal_topics.record_decoder import expand_spans

        spans, more = expand_spans(kind, decoded, spans, secrets)
        decoded.findings.extend(more)
    masked: list[tuple[str, int, int]] = []
    inspector = _payload_inspector(payloads, [path])
    if inspector is not None:
        from kafkadump.decoders.payloads.payload_spans import payload_spans

        named = payload_spans(decoded, spans, inspector)
        spans, masked = named.spans, named.masked
        decoded.findings.extend(named.findings)
    elif kind is not None:
        from kafkadump.decoders.payloads.redact import SECRET_MASK

        masked = [(s.source, s.offset, s.offset + s.length) for s in spans if s.value == SECRET_MASK]
    if secrets and kind is None and kind_from_path(path) == "metadata" and isinstance(decoded, Batch):
        masked += _secret_value_spans(decoded, spans)
    if payloads is not None and payloads.redaction.active:   # other records' bytes: not shown
        context = 0
    tally.see(decoded.findings)
    start, end = item.position, item.position + item.size
    before = bytes(seg.buf[max(0, start - context):start]) if context else b""
    after = bytes(seg.buf[end:min(end + context, seg.current_size())]) if context else b""
    raw: bytes | MappedRange
    if end - start > HEXDUMP_COPY_LIMIT and isinstance(seg.buf, mmap.mmap):
        raw = MappedRange(seg, start, end)
    else:
        raw = bytes(seg.buf[start:end])
        seg.close()
    return HexdumpView(path, decoded, spans, raw, start, before, after, masked)


def _secret_value_spans(batch: Batch, spans: list[Span]) -> list[tuple[str, int, int]]:
    """The byte ranges of the values that hold secrets (a metadata batch shown undecoded), their
    spans' values masked."""
    from kafkadump.decoders.payloads.redact import SECRET_MASK

    secret = secret_records(batch, batch.records or ())
    places = {(r.source, r.value_position) for r in batch.records or () if r.identity in secret}
    out = []
    for s in spans:
        if s.path.endswith(".value") and (s.source, s.offset) in places:
            s.value = SECRET_MASK
            out.append((s.source, s.offset, s.offset + s.length))
    return out


def _still_there(seg: Segment, path: str, item: Batch | Gap) -> None:
    """Refuse (exit 2) to show an item the file no longer holds (truncated while it was located)."""
    now = seg.current_size()
    if item.position + item.size > now:
        raise InputError(f"{path}: the file shrank from {seg.size} to {now} bytes while it was read; "
                         f"the item at {item.position} is gone")


__all__ = ["FileStart", "RecordsOf", "CrcTotals", "HexdumpView", "batch_report", "batch_windows", "record_report",
           "record_windows", "crc_report",
           "hexdump_view"]
