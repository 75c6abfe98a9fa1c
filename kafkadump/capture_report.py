"""The report of ``capture``: the frames of a pcap, a hex dump or raw frame bytes, in order.

:func:`capture_report` reads the input (:func:`kafkadump.inputs.read_capture_input`),
decodes it with the protocol decoder and yields stream notes and the frames
the request's :class:`~kafkadump.query.FrameFilter` keeps, then the totals;
with ``frame=N`` it yields that one frame only.  Every
problem finding passes through the caller's
:class:`~kafkadump.report.status.Tally`.  Nothing here prints.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .decode import Options
from .errors import UsageError
from .inputs import CaptureData, CaptureKind, read_capture_input
from .protocol.frames import Frame
from .protocol.stream import CaptureDecoder, Hints, StreamNote
from .query import FrameFilter
from .report.status import Tally

if TYPE_CHECKING:
    from .sources.hextext import HexBlock
    from .sources.pcap import CaptureReader


@dataclass
class CaptureTotals:
    """The closing summary of a capture."""

    file: str
    input: str
    frames: int = 0
    requests: int = 0
    responses: int = 0
    records: int = 0
    findings: int = 0
    connections: int = 0
    ignored_connections: int = 0
    packets: int | None = None
    problems: int = 0
    shown: int = 0       # frames the filters keep (all of them without filters)

    def count(self, frame: Frame) -> None:
        self.frames += 1
        if frame.kind == "request":
            self.requests += 1
        elif frame.kind == "response":
            self.responses += 1
        self.records += frame.record_count()


@dataclass(frozen=True)
class TimeSpan:
    """The earliest and latest packet times of a packet capture (epoch seconds), read from the
    packet records' headers before any frame: a table can choose its time format up front."""

    first: float
    last: float


@dataclass
class CaptureRequest:
    """What to decode and how: the user's hints for pasted bytes, the Kafka ports, the limits."""

    as_: str | None = None
    api_key: int | None = None
    api_version: int | None = None
    ports: list[int] = field(default_factory=lambda: [9092])
    detect: bool = True
    options: Options = field(default_factory=Options)
    frames: FrameFilter = field(default_factory=FrameFilter)


def capture_report(path: str, request: CaptureRequest, tally: Tally, *, frame: int | None = None,
                   spans: bool = False, time_span: bool = False
                   ) -> Iterator[TimeSpan | StreamNote | Frame | CaptureTotals]:
    """Stream notes and frames of ``path`` (``-``: stdin), then a :class:`CaptureTotals`.

    With ``frame``, only that frame (its spans recorded when ``spans``); a
    frame number beyond the input is a :class:`~kafkadump.errors.UsageError`.
    With ``time_span``, a packet capture's :class:`TimeSpan` comes first.
    """
    if request.api_version is not None and request.api_key is None:
        raise UsageError("--api-version needs --api-key")
    if frame is not None and request.frames.active:
        raise UsageError("--frame picks one frame; --api, --topic and --client filter the list: give one or the other")
    kind, data, close = read_capture_input(path, sys.stdin.buffer if path == "-" else None)
    try:
        dec = CaptureDecoder(path, ports=request.ports, options=request.options,
                             hints=Hints(request.as_, request.api_key, request.api_version), detect=request.detect)
        if frame is not None and spans:
            dec.ctx.spans = lambda: dec.count == frame
        if time_span and kind is CaptureKind.PCAP:
            yield from _time_span(data, path)
        yield from _report(path, kind, data, dec, tally, frame, request.frames)
    finally:
        if close is not None:
            close()


def _report(path: str, kind: CaptureKind, data: CaptureData, dec: CaptureDecoder, tally: Tally,
            frame: int | None, keep: FrameFilter) -> Iterator[StreamNote | Frame | CaptureTotals]:
    totals = CaptureTotals(path, kind.value)
    readers: list[CaptureReader] = []
    found: Frame | None = None
    for item in _items(kind, data, path, dec, readers):
        findings = item.findings if isinstance(item, StreamNote) else item.all_findings()
        totals.findings += len(findings)
        if isinstance(item, StreamNote):
            if frame is None:
                tally.see(findings)
                yield item
            continue
        totals.count(item)
        if frame is None:
            tally.see(findings)   # a frame the filters drop still counts: the exit rule is the same
            if not keep.active or keep.keeps(item):
                totals.shown += 1
                yield item
        elif item.index == frame:
            found = item
            break
    if frame is not None:
        if found is None:
            raise UsageError(f"{path}: no frame {frame} (the input has {dec.count} frames)")
        tally.see(found.all_findings())
        yield found
        return
    totals.connections = sum(1 for c in dec.order if c.state not in (None, False))
    totals.ignored_connections = dec.ignored
    totals.packets = readers[0].packets if readers else None
    totals.problems = tally.problems
    yield totals


def _time_span(data: CaptureData, path: str) -> Iterator[TimeSpan]:
    from .sources.pcap import CaptureReader

    assert not isinstance(data, str), "a capture file is read as bytes (only hex text is a str)"
    span = CaptureReader(data, path).time_span()  # a reader of its own: the real one reports the file's damage
    if span is not None:
        yield TimeSpan(*span)


def _items(kind: CaptureKind, data: CaptureData, path: str, dec: CaptureDecoder,
           readers: list[CaptureReader]) -> Iterator[StreamNote | Frame]:
    """Frames and notes from the input, in order."""
    from .sources import hextext
    from .sources.pcap import CaptureReader, packet_from_bytes

    if kind is CaptureKind.PCAP:
        assert not isinstance(data, str), "a capture file is read as bytes (only hex text is a str)"
        reader = CaptureReader(data, path)
        readers.append(reader)
        yield from dec.packets(reader)
        if reader.findings:
            yield StreamNote(None, None, reader.findings, None, path)
        return
    if kind is CaptureKind.BINARY:
        assert not isinstance(data, str), "a binary file is read as bytes"
        yield from dec.block(data, 0, None)
        return
    dec.lenient = True
    assert isinstance(data, str), "a hex dump is read as text"
    blocks = hextext.parse(data, path)
    superseded = _superseded(blocks)
    number = 0
    for i, b in enumerate(blocks):
        if b.kind == "derived" or i in superseded:
            continue
        if b.kind in ("packet", "raw"):
            number += 1
            p = packet_from_bytes(bytes(b.data), number, b.time)
            if p is not None:
                yield from dec.packet(p)
                continue
        for f in dec.block(bytes(b.data), 0, f"dump {i} (line {b.line})"):
            f.source = f"dump {i} (line {b.line})"
            yield f
    yield from dec.finish()


def _superseded(blocks: list[HexBlock]) -> set[int]:
    """tshark -x shows a PDU that spans packets as its last packet's frame plus a
    "Reassembled TCP" block: the reassembled bytes are the PDU, the frame only its tail."""
    out: set[int] = set()
    for i, b in enumerate(blocks):
        if b.kind != "packet" or not (b.title or "").startswith("Frame"):
            continue
        for later in blocks[i + 1:]:
            if later.kind == "reassembled":
                out.add(i)
                break
            if later.kind != "derived":
                break
    return out


__all__ = ["CaptureRequest", "CaptureTotals", "TimeSpan", "capture_report"]
