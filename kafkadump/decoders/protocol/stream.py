"""From bytes to frames: splitting streams by size prefix, pairing responses with requests.

:class:`CaptureDecoder` is the one entry point the ``capture`` command uses,
for every kind of input:

* ``packets(iterable of Packet)``: TCP segments from a pcap/pcapng file or
  from tcpdump / tshark text.  Connections are tracked by their endpoints;
  a connection is Kafka when one end is on a ``--port`` or when the first
  bytes its client sends are a plausible request header (Kafka on other
  ports).  Each direction is reassembled (:mod:`kafkadump.sources.pcap`)
  and split into frames by their size prefixes.
* ``block(data, ...)``: bytes pasted as hex (or a raw binary file): one or
  more frames, or bare record batches / message sets.

Requests are remembered per connection by correlation id, so each response
is decoded with its request's API key and version.  A response whose
request is not there is decoded with ``--api-key/--api-version`` when given,
else by trial (:func:`~kafkadump.decoders.protocol.frames.guess_response`), else its
body is kept raw.

Yields :class:`~kafkadump.decoders.protocol.frames.Frame` and :class:`StreamNote`
objects in the order they complete.  Memory: each direction holds at most
one frame's bytes (plus the TCP layer's bounded buffers).
"""

from __future__ import annotations

import heapq
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import TYPE_CHECKING

from kafkadump.base.findings import Code, Finding
from kafkadump.decoders.batches.options import DEFAULT_MAX_SCAN, SCAN_FLOOR
from kafkadump.decoders.batches.primitives import ByteBuffer, int32_at
from kafkadump.decoders.batches.work import WORK
from kafkadump.decoders.protocol import frames as F
from kafkadump.sources.pcap import Connection, Endpoint, HalfStream, Packet, endpoint_str

if TYPE_CHECKING:
    from kafkadump.decoders.batches.options import Options

MAX_PENDING_REQUESTS = 1 << 16   # unanswered requests remembered per connection


class StreamNote:
    """Findings about a stream rather than a frame: TCP gaps, retransmissions, skipped bytes."""

    __slots__ = ("connection", "direction", "findings", "time", "file", "block")

    def __init__(self, connection: Connection | None, direction: str | None, findings: list[Finding],
                 time: float | None = None, file: str | None = None, block: int | None = None):
        self.connection = connection
        self.direction = direction
        self.findings = findings
        self.time = time
        self.file = file
        self.block = block


class Hints:
    """How to read what the bytes do not say: ``--as``, ``--api-key``, ``--api-version``."""

    def __init__(self, as_: str | None = None, api_key: int | None = None, api_version: int | None = None):
        self.as_ = as_
        self.api_key = api_key
        self.api_version = api_version


class _Splitter:
    """One direction of a conversation: bytes in, frames out."""

    __slots__ = ("conv", "role", "buf", "base", "synced", "marks", "skip_from", "scan", "cands", "cand_order",
                 "cand_gone", "weak")

    def __init__(self, conv: Conversation, role: str):
        self.conv = conv
        self.role = role            # "request" | "response"
        self.buf = bytearray()
        self.base = 0               # stream offset of buf[0]
        self.synced = conv.syn_seen
        self.marks: deque = deque()  # (start, end, packet number, time), in stream order
        self.skip_from: int | None = None  # stream offset where unexplained bytes began
        self.scan = 0               # resync: buffer positions below this were examined
        self.cands: list = []       # resync: heap of (frame end, start), stream offsets, of plausible
        #                             starts waiting for their frame's bytes
        self.cand_order: deque = deque()  # the same starts in stream order (some already gone)
        self.cand_gone: set = set()       # starts popped from the heap, still in cand_order
        self.weak: int | None = None      # resync: the first whole frame that fits only with warnings,
        #                                   found while an earlier start still waited (stream offset)

    def reset_resync(self) -> None:
        """Forget the resync state (positions examined, starts waiting)."""
        self.scan = 0
        self.cands = []
        self.cand_order = deque()
        self.cand_gone = set()
        self.weak = None

    def add(self, offset: int, data: bytes, packet: Packet | None) -> None:
        if not self.buf:
            self.base = offset
        self.buf += data
        self.conv.dec.bytes_in += len(data)
        if packet is None:
            self.marks.append((offset, offset + len(data), None, None))
        else:
            self.marks.append((offset, offset + len(data), packet.number, packet.time))

    def _plausible(self, i: int) -> bool:
        buf = self.buf
        n = len(buf)
        if self.role == "request":
            return F.request_plausible(buf, i, n)
        if n - i < 8:
            return False
        size = int32_at(buf, i)
        if size < 4 or size > F.MAX_FRAME:
            return False
        return int32_at(buf, i + 4) in self.conv.pending

    def _verified(self, i: int, size: int) -> int:
        """How well the whole frame at ``i`` decodes (:func:`~kafkadump.decoders.protocol.frames.fit`: 2 exactly,
        1 only with warnings, 0 with an error).  (Resync: no false starts.)

        Decoding candidates is charged to the decoder's resync budget (``--max-scan`` times
        the bytes seen, at least 64 MiB): candidates whose sizes reach far ahead would
        otherwise cost quadratic work.  Past it, a plausible header is taken as a start and
        a ``scan-limit`` note says so, once.
        """
        dec = self.conv.dec
        opt = dec.ctx.options
        max_scan = getattr(opt, "max_scan", DEFAULT_MAX_SCAN)
        if max_scan and dec.verify_spent >= max(SCAN_FLOOR, max_scan * dec.bytes_in):
            if not dec.verify_hit:
                dec.verify_hit = True
                dec.scan_note = (StreamNote(self.conv.connection, self.role, [Finding(
                    Code.SCAN_LIMIT, self.base + i,
                    f"looking for the next frame spent {dec.verify_spent} bytes decoding candidates that "
                    f"were not (--max-scan); from here on, candidates are accepted by their headers")],
                    self._time(), self.conv.file))
            return 2
        dec.verify_spent += size + 4
        WORK.frames += 1
        WORK.verified += size + 4
        quiet = F.Ctx(self.conv.file, opt, False)
        end = i + 4 + size
        if self.role == "request":
            f = F.decode_request(self.buf, i, end, ctx=quiet)
        else:
            key, ver, _ = self.conv.pending[int32_at(self.buf, i + 4)]
            f = F.decode_response(self.buf, i, end, key, ver, ctx=quiet)
        return F.fit(f)

    def drain(self, final: bool = False) -> Iterator[F.Frame | StreamNote]:
        """Frames (and notes) that the buffered bytes complete, one at a time: a buffer may hold
        many (the bytes behind a size prefix waited for, up to ``MAX_RESYNC_WAIT``), and they are
        not gathered in a list."""
        buf = self.buf
        dec = self.conv.dec
        while True:
            n = len(buf)
            if not self.synced:
                start, drop = self._find_start(final)
                if dec.scan_note is not None:
                    yield dec.scan_note
                    dec.scan_note = None
                if start is None:
                    if drop:
                        if self.skip_from is None:
                            self.skip_from = self.base
                        del buf[:drop]
                        self.base += drop
                        self._forget_marks()
                    if final and self.skip_from is not None:
                        yield self._garbage(self.base)
                    break
                if start:
                    if self.skip_from is None:
                        self.skip_from = self.base
                    del buf[:start]
                    self.base += start
                if self.skip_from is not None:
                    yield self._garbage(self.base)
                self.synced = True
                continue
            if n < 4:
                if final and n:
                    yield self._frame(n, final=True)
                break
            size = int32_at(buf, 0)
            minimum = F.MIN_REQUEST if self.role == "request" else F.MIN_RESPONSE
            if size < minimum or size > F.MAX_FRAME:
                yield self._lose_sync(f"size prefix {size} is impossible for a {self.role}; "
                                      f"looking for the next frame")
                continue
            need = 4 + size
            if n < need:
                if size > F.MAX_RESYNC_WAIT and (final or n >= F.MAX_RESYNC_WAIT):
                    # a huge size prefix would swallow the rest of the direction: the wait is capped
                    yield self._lose_sync(
                        f"size prefix {size}: {'the stream ends after' if final else 'still incomplete after'} "
                        f"{n - 4} bytes (a frame over {F.MAX_RESYNC_WAIT} bytes is waited for only that long); "
                        f"looking for the next frame")
                    continue
                if final:
                    yield self._frame(n, final=True)
                break
            yield self._frame(need)

    def _lose_sync(self, message: str) -> StreamNote:
        """The frame at the buffer's start is not one: a note, and resync from the next byte."""
        note = StreamNote(self.conv.connection, self.role, [Finding(Code.FRAME_SIZE_INVALID, self.base, message)],
                          self._time(), self.conv.file)
        self.synced = False
        self.skip_from = self.base
        self.reset_resync()
        del self.buf[:1]
        self.base += 1
        return note

    def _find_start(self, final: bool) -> tuple[int | None, int]:
        """``(start, drop)``: the first position where a whole, cleanly decoding frame starts
        (None if none yet), and how many leading bytes can be dropped for sure while
        waiting (up to the first plausible start whose frame is not complete yet).

        Positions already examined are not examined again when more bytes arrive
        (``scan``); plausible starts whose frames were incomplete are kept in
        ``cands`` and verified once complete.
        """
        buf = self.buf
        n = len(buf)
        if self.role == "response" and not self.conv.pending and self.base == 0 and n >= 8:
            size = int32_at(buf, 0)
            if 4 <= size <= F.MAX_FRAME:
                return 0, 0  # the stream's first bytes, no request known: trust the start
        found = self._complete_candidate(n)
        if found is None:
            found = self._scan_for_start(n)
        order, gone = self.cand_order, self.cand_gone
        while order and order[0] in gone:
            gone.discard(order.popleft())
        if found is None and self.weak is not None and (final or not order or order[0] > self.weak):
            # no earlier start is waiting any more: the frame that fits with warnings it is
            found = self.weak - self.base
        if found is not None or final:
            self.reset_resync()
            return (found, found) if found is not None else (None, n)
        drop = order[0] - self.base if order else max(0, min(self.scan, n - 13))
        self.scan = max(0, self.scan - drop)
        return None, drop

    def _complete_candidate(self, n: int) -> int | None:
        """The first waiting start whose frame the buffer now completes and that decodes cleanly
        (buffer position), or None; every completed start leaves the waiting list (each is
        looked at once, whatever the number of segments)."""
        base = self.base
        done = []
        while self.cands and self.cands[0][0] <= base + n:
            _, start = heapq.heappop(self.cands)
            self.cand_gone.add(start)
            done.append(start)
        for start in sorted(done):
            if self.weak is not None and start > self.weak:
                break  # the frame that fits with warnings comes first
            i = start - base
            grade = self._verified(i, int32_at(self.buf, i))
            if grade == 2 or (grade == 1 and not self._waiting(start)):
                return i
            if grade == 1 and self.weak is None:
                self.weak = start
        return None

    def _scan_for_start(self, n: int) -> int | None:
        """Examine the positions not examined yet: the first whose whole frame is here and decodes
        without an error (buffer position), or None; starts whose frames are not complete wait.

        A whole frame that fits only with warnings does not win over an earlier start still
        waiting for its bytes (the frame the text began with, cut by the packets, against a
        "frame" inside its record data): it is kept (``weak``) and taken when no earlier start
        is left waiting."""
        buf = self.buf
        base = self.base
        i = self.scan
        found = None
        while i < n - 7:
            if self._plausible(i):
                size = int32_at(buf, i)
                if i + 4 + size <= n:
                    grade = self._verified(i, size)
                    if grade == 2 or (grade == 1 and not self._waiting(base + i)):
                        found = i
                        break
                    if grade == 1 and self.weak is None:
                        self.weak = base + i
                elif size <= F.MAX_RESYNC_WAIT:
                    heapq.heappush(self.cands, (base + i + 4 + size, base + i))
                    self.cand_order.append(base + i)
            i += 1
        WORK.positions += i - self.scan
        self.scan = max(self.scan, i)
        return found

    def _waiting(self, before: int) -> bool:
        """Is a start before stream offset ``before`` still waiting for its frame's bytes?  (Starts
        already gone leave the front of ``cand_order`` here: each is dropped once.)"""
        order, gone = self.cand_order, self.cand_gone
        while order and order[0] in gone:
            gone.discard(order.popleft())
        return bool(order) and order[0] < before

    def _garbage(self, upto: int) -> StreamNote:
        start = self.skip_from
        assert start is not None  # called only while bytes are being skipped
        k = upto - start
        f = Finding(Code.GARBAGE, start, f"skipped {k} bytes that start no frame", length=k)
        self.skip_from = None
        return StreamNote(self.conv.connection, self.role, [f], self._time(), self.conv.file)

    def _forget_marks(self) -> None:
        """Drop the marks of bytes skipped for good (the last one stays: its time is the note's)."""
        marks = self.marks
        while len(marks) > 1 and marks[0][1] <= self.base:
            marks.popleft()

    def _time(self) -> float | None:
        return self.marks[-1][3] if self.marks else None

    def _frame(self, need: int, final: bool = False) -> F.Frame:
        buf = self.buf
        start = self.base
        end = start + need
        conv = self.conv
        ctx = conv.dec.ctx
        if self.role == "request":
            f = F.decode_request(buf, 0, need, base=start, ctx=ctx)
        else:
            f = conv.dec.response(buf, 0, need, start, conv)
        f.connection = conv.connection
        pk = []
        when = None
        # the packets that carried the frame and the last one's time: the marks are in stream
        # order, so those the frame used up leave from the front and the look stops at the first
        # mark after the frame (a frame costs the packets it spans, not every packet buffered
        # behind it: a buffer of many frames would cost their number squared)
        marks = self.marks
        looked = 0
        while marks and marks[0][1] <= end:
            m = marks.popleft()
            looked += 1
            if m[0] < end and m[1] > start:
                if m[2] is not None:
                    pk.append(m[2])
                if m[3] is not None:
                    when = m[3]
        for m in marks:
            looked += 1
            if m[0] >= end:
                break
            if m[1] > start:
                if m[2] is not None:
                    pk.append(m[2])
                if m[3] is not None:
                    when = m[3]
        WORK.marks += looked
        f.packets = pk or None
        f.time = when
        del buf[:need]
        self.base = end
        f = conv.dec.number(f)
        if f.kind == "request":
            conv.remember(f)
        return f


class Conversation:
    """A Kafka connection: two splitters and the requests awaiting answers."""

    def __init__(self, dec: CaptureDecoder, connection: Connection | None, syn_seen: bool, file: str):
        self.dec = dec
        self.connection = connection
        self.syn_seen = syn_seen
        self.file = file
        # correlation id -> (api key, version, (request index, client id))
        # correlation id -> (api key, version, (frame index, client id, capture time))
        # (ordered: the oldest leaves in constant time; a dict's first key is found by walking past
        # the keys deleted before it, which made 300,000 unanswered requests cost minutes)
        self.pending: OrderedDict[int, tuple[int, int | None, tuple[int | None, str | None, float | None] | None]] = \
            OrderedDict()
        self.req = _Splitter(self, "request")
        self.resp = _Splitter(self, "response")

    def remember(self, f: F.Frame) -> None:
        """A request awaiting its response (bounded: requests never answered, such as acks=0
        produce requests, are forgotten oldest first)."""
        if f.correlation_id is None or f.api_key is None:
            return
        self.pending.pop(f.correlation_id, None)
        self.pending[f.correlation_id] = (f.api_key, f.api_version, (f.index, f.client_id, f.time))
        if len(self.pending) > MAX_PENDING_REQUESTS:
            self.pending.popitem(last=False)


class CaptureDecoder:
    """Turns packets or byte blocks into frames; see the module docstring."""

    def __init__(self, file: str = "-", ports: Iterable[int] | None = (9092,), options: Options | None = None,
                 spans: bool = False, hints: Hints | None = None, detect: bool = True, lenient: bool = False):
        self.ctx = F.Ctx(file, options, spans)
        self.lenient = lenient
        self.file = file
        self.ports = set(ports or ())
        self.hints = hints or Hints()
        self.detect = detect
        self.count = 0
        self.conns: dict[tuple[Endpoint, Endpoint], Connection] = {}   # key -> Connection
        self.order: list[Connection] = []   # connections in order of appearance
        self.ignored = 0             # non-Kafka connections
        self.lone = Conversation(self, None, False, file)  # for pasted blocks: pairing across blocks
        self.topic_names: dict[str, str] = {}  # topic id -> name, from Metadata responses seen so far
        # what the packet being read gives: frames and notes, and the splitters' drains, run in
        # this order only when the packet's items are read (a drain may give many frames)
        self._out: list[Iterable[F.Frame | StreamNote]] = []
        self.scan_note: StreamNote | None = None  # the scan-limit note, for the drain that ran out
        self.bytes_in = 0            # bytes handed to the splitters
        self.verify_spent = 0        # bytes of candidate frames decoded while resynchronising
        self.verify_hit = False      # the resync budget ran out (said once, with a scan-limit note)

    # --- numbering ---------------------------------------------------------------------------
    def number(self, f: F.Frame) -> F.Frame:
        f.index = self.count
        self.count += 1
        f.topic_names = self.topic_names
        if f.api_key == 3 and f.kind == "response" and isinstance(f.body, dict):
            for t in f.body.get("topics") or ():
                if isinstance(t, dict) and isinstance(t.get("topicId"), str) and isinstance(t.get("name"), str):
                    self.topic_names[t["topicId"]] = t["name"]
        return f

    # --- responses ---------------------------------------------------------------------------
    def response(self, buf: ByteBuffer, pos: int, end: int, base: int, conv: Conversation) -> F.Frame:
        ctx = self.ctx
        size = int32_at(buf, pos) if end - pos >= 4 else None
        if size is None or size < F.MIN_RESPONSE or size > F.MAX_FRAME:
            return F.decode_response(buf, pos, end, None, None, base=base, ctx=ctx)  # says why
        corr = int32_at(buf, pos + 4) if end - pos >= 8 else None
        req = conv.pending.pop(corr, None) if corr is not None else None
        if req is not None:
            f = F.decode_response(buf, pos, end, req[0], req[1], base=base, ctx=ctx)
            f = _apiversions_fallback(f, buf, pos, end, base, ctx)
            if req[2] is not None:
                f.request_index, f.client_id, f.request_time = req[2]
            return f
        h = self.hints
        if h.api_key is not None and h.api_version is not None:
            f = F.decode_response(buf, pos, end, h.api_key, h.api_version, base=base, ctx=ctx)
            return _apiversions_fallback(f, buf, pos, end, base, ctx)
        guessed = F.guess_response(buf, pos, end, base=base, ctx=ctx, api_key=h.api_key)
        strict = conv.syn_seen and conv.connection is not None
        if guessed is None:
            f = F.decode_response(buf, pos, end, None, None, base=base, ctx=ctx)
            f.findings.insert(0, Finding(Code.RESPONSE_UNPAIRED, base + pos,
                                         f"no request with correlation id {corr} in the input: the body is kept "
                                         f"raw (give --api-key and --api-version to decode it)"))
            return f
        f = guessed
        if strict:
            f.findings.insert(0, Finding(Code.RESPONSE_UNPAIRED, base + pos,
                                         f"no request with correlation id {corr} on this connection"))
        return f

    # --- packets -----------------------------------------------------------------------------
    def packets(self, packets: Iterable[Packet]) -> Iterator[F.Frame | StreamNote]:
        """Frames and notes from TCP segments (generator)."""
        for p in packets:
            yield from self.packet(p)
        yield from self.finish()

    def _conn(self, p: Packet) -> Connection:
        a = (p.src, p.sport)
        b = (p.dst, p.dport)
        key = (a, b) if a <= b else (b, a)
        c = self.conns.get(key)
        if c is None:
            c = Connection(len(self.order), a, b)
            c.first_time = p.time
            self.conns[key] = c
            self.order.append(c)
            if p.dport in self.ports:
                c.client, c.server = a, b
            elif p.sport in self.ports:
                c.client, c.server = b, a
            if p.syn and not p.ack_flag:
                c.syn_from = a
        return c

    def packet(self, p: Packet) -> Iterator[F.Frame | StreamNote]:
        """The frames and notes that segment ``p`` completes, as they are decoded: the splitters
        are fed and drained, in the order the segment's data arrived, while the items are read
        (read them all before the next packet)."""
        WORK.segments += 1
        flags = p.flags
        if not p.payload and not p.missing and not flags & 0x02:  # no data, no SYN
            a, b = (p.src, p.sport), (p.dst, p.dport)
            if ((a, b) if a <= b else (b, a)) not in self.conns:
                return iter(())  # the last ACK of a closed connection, or a stray: nothing to follow
        c = self._conn(p)
        src = (p.src, p.sport)
        halves = c.halves
        half = halves.get(src)
        if half is None:
            half = halves[src] = HalfStream(self, src)
        self._out = []
        self._current = c
        if flags & 0x10:  # ACK
            other = halves.get((p.dst, p.dport))
            if other is not None:
                other.peer_ack(p.ack)
        data = p.payload
        conv = c.state
        if not flags & 0x07 and data and not p.missing and half.next_seq == p.seq and not half.pending \
                and type(conv) is Conversation:
            # (most segments) the next bytes of an established Kafka connection, in order: what
            # half.segment and self.deliver do with them, without the cases they judge
            sp = conv.req if src == c.client else conv.resp
            offset = half.offset
            self._out.append(self._feed(conv, sp, offset, data, p))
            half.offset = offset + len(data)
            half.next_seq = (p.seq + len(data)) & 0xFFFFFFFF
            half.remember(data)
        else:
            half.segment(p)
        if half.notes:
            conv = c.state
            if isinstance(conv, Conversation):
                role = "request" if src == c.client else "response"
                self._out.append((StreamNote(c, role, half.notes, p.time, self.file),))
            half.notes = []
        out = self._out
        self._out = []
        if flags & 0x04 or half.fin and len(halves) == 2 and _both_done(halves):  # RST, or both directions over
            out.append(self._close(c))
        return chain.from_iterable(out)

    def _feed(self, conv: Conversation, sp: _Splitter, offset: int, data: bytes,
              packet: Packet | None) -> Iterator[F.Frame | StreamNote]:
        """Bytes into a splitter, and what they complete; a request may unblock a response waiting
        for resync (a synced, empty direction has nothing to give)."""
        sp.add(offset, data, packet)
        yield from sp.drain()
        if sp is conv.req and (conv.resp.buf or not conv.resp.synced):
            yield from conv.resp.drain()

    # HalfStream sink interface
    def deliver(self, half: HalfStream, offset: int, data: bytes, packet: Packet | None) -> None:
        c = self._current
        if c.state is False:
            return
        if c.state is None:
            c.state = _Probe(c)
        probe = c.state
        if isinstance(probe, _Probe):
            probe.add(half.direction, offset, data, packet)
            conv = self._decide(c, probe)
            if conv is None:
                return
            for direction, items in probe.items():
                sp = conv.req if direction == c.client else conv.resp
                for off, d, pk in items:
                    sp.add(off, d, pk)
            c.probe = None
            c.state = conv
            self._out.append(conv.req.drain())
            self._out.append(conv.resp.drain())
            return
        live: Conversation = probe  # type: ignore[assignment]  # neither None, False nor a probe: its Conversation
        sp = live.req if half.direction == c.client else live.resp
        self._out.append(self._feed(live, sp, offset, data, packet))

    def gap(self, half: HalfStream, offset: int, length: int, finding: Finding) -> None:
        c = self._current
        conv = c.state
        if not isinstance(conv, Conversation):
            return
        sp = conv.req if half.direction == c.client else conv.resp
        self._out.append(self._gap(c, sp, offset + length, finding))

    def _gap(self, c: Connection, sp: _Splitter, resume: int, finding: Finding) -> Iterator[F.Frame | StreamNote]:
        """What a splitter holds before a hole in its stream, flushed; it starts afresh after it."""
        yield from sp.drain(final=True)
        sp.buf.clear()
        sp.marks.clear()
        sp.base = resume
        sp.synced = False
        sp.skip_from = None
        sp.reset_resync()
        yield StreamNote(c, sp.role, [finding], None, self.file)

    def _decide(self, c: Connection, probe: _Probe) -> Conversation | None:
        """Is this connection Kafka, and which side is the client?  A Conversation, or None (not yet / not Kafka).

        Without a port match, the first direction to carry a whole frame
        decides: a frame that decodes cleanly as a request makes its sender
        the client.  In ``lenient`` mode (packets pasted as text, where a
        lone response is common) a frame that decodes as a response makes
        its sender the server.  A first frame too large to wait for is judged
        by its header alone.
        """
        if c.client is None:
            first = probe.first_full(14)
            if first is None:
                if probe.total() > 1 << 16:
                    self._not_kafka(c)
                return None
            direction, held = first
            if not self.detect:
                self._not_kafka(c)
                return None
            other = c.b if direction == c.a else c.a
            size = int32_at(held, 0)
            complete = 0 <= size <= len(held) - 4
            if not complete and len(held) <= 1 << 16 and probe.total() <= 1 << 20:
                return None  # wait for the whole first frame (nothing copied)
            data = bytes(held)  # copied once: this call decides
            quiet = F.Ctx(self.file, self.ctx.options, False)
            role = None
            if complete:
                if F.request_plausible(data, 0, len(data)) and F.clean(
                        F.decode_request(data, 0, size + 4, ctx=quiet)):
                    role = "client"
                elif self.lenient and (F.guess_response(data, 0, size + 4, ctx=quiet) is not None
                                       or (self.hints.api_key is not None and size >= 4)):
                    role = "server"
            elif len(data) > 1 << 16 or probe.total() > 1 << 20:
                if F.request_plausible(data, 0, len(data)):
                    role = "client"
                elif self.lenient and 4 <= size <= F.MAX_FRAME:
                    role = "server"  # pasted packets of one large frame that is no request: a response
            else:
                return None  # wait for the whole first frame
            if role is None:
                if self.lenient and complete and size >= 4:
                    role = "server"  # pasted bytes that are no request: take them as responses
                else:
                    self._not_kafka(c)
                    return None
            c.client, c.server = (direction, other) if role == "client" else (other, direction)
            c.detected = True
        c.probe = probe.items()
        return Conversation(self, c, c.syn_from is not None, self.file)

    def _last_chance(self, c: Connection, probe: _Probe) -> None:
        """End of input with a connection still undecided (its first frame never completed).

        Pasted packets (lenient): the side holding a whole request anywhere is the
        client, else the bytes are taken as responses; the splitters resynchronise.
        Captures: not Kafka.
        """
        if not self.lenient or not self.detect:
            self._not_kafka(c)
            return
        if c.client is None:
            client = None
            for direction, data in probe.streams():
                n = len(data)
                for i in range(0, max(0, n - 13)):
                    if F.request_plausible(data, i, n):
                        size = int32_at(data, i)
                        quiet = F.Ctx(self.file, self.ctx.options, False)
                        if i + 4 + size <= n and F.clean(F.decode_request(data, i, i + 4 + size, ctx=quiet)):
                            client = direction
                            break
                if client is not None:
                    break
            if client is None:
                server = next(iter(probe.data))
                client = c.b if server == c.a else c.a
            c.client = client
            c.server = c.b if client == c.a else c.a
            c.detected = True
        conv = Conversation(self, c, False, self.file)
        for direction, items in probe.items():
            sp = conv.req if direction == c.client else conv.resp
            for off, d, pk in items:
                sp.add(off, d, pk)
        c.probe = None
        c.state = conv

    def _not_kafka(self, c: Connection) -> None:
        c.state = False
        c.probe = None
        self.ignored += 1

    def finish(self) -> Iterator[F.Frame | StreamNote]:
        """Flush every connection at the end of the input: held segments, cut frames."""
        for c in self.order:
            if c.halves:
                yield from self._close(c)
        self._out = []

    def _close(self, c: Connection) -> Iterator[F.Frame | StreamNote]:
        """A connection ends (both FINs, a RST, or the end of the input): flush it and free its buffers.

        Its endpoints may be reused by a later connection, which starts afresh."""
        saved = self._out
        self._current = c
        self._out = []
        if isinstance(c.state, _Probe):
            self._last_chance(c, c.state)
        for half in c.halves.values():
            half.finish()
            if half.notes and isinstance(c.state, Conversation):
                role = "request" if half.direction == c.client else "response"
                self._out.append((StreamNote(c, role, half.notes, None, self.file),))
                half.notes = []
        conv = c.state
        if isinstance(conv, Conversation):
            self._out.append(conv.req.drain(final=True))
            self._out.append(conv.resp.drain(final=True))
        out = self._out
        self._out = saved
        c.halves = {}
        c.probe = None
        key = (c.a, c.b) if c.a <= c.b else (c.b, c.a)  # as _conn keyed it
        if self.conns.get(key) is c:
            del self.conns[key]
        for items in out:
            yield from items
        if isinstance(conv, Conversation):
            conv.req.buf = bytearray()
            conv.resp.buf = bytearray()
            conv.pending.clear()

    # --- pasted blocks -------------------------------------------------------------------------
    def block(self, data: ByteBuffer, base: int = 0, label: str | None = None) -> list[F.Frame]:
        """Frames from one pasted dump (or a binary file's bytes): a list."""
        from kafkadump.decoders.batches.walk import iter_batches, plausible_at

        out = []
        n = len(data)
        pos = 0
        conv = self.lone
        as_ = self.hints.as_
        self._base = base
        while pos < n:
            kind = as_
            known = None
            if kind is None:
                kind, known = self._detect(data, pos, n, conv)
            if kind == "records":
                items = list(iter_batches(data, self.file, start=pos, end=n, options=self.ctx.options, base=base))
                f = F.Frame("records", base + pos, n - pos)
                f.items = items
                f.file = self.file
                if self.ctx.want_spans():
                    from kafkadump.decoders.protocol.decoder import State, decode_records
                    f.spans = []
                    st = State(f.findings, f.spans, base, self.ctx.options, self.file, False, False)
                    rv = decode_records(data, pos, n, st, "records")
                    f.items = rv.items
                    f.data = bytes(data[pos:n])
                out.append(self.number(f))
                break
            if n - pos >= 4:
                size = int32_at(data, pos)
                minimum = F.MIN_REQUEST if kind == "request" else F.MIN_RESPONSE
                if (size < minimum or size > F.MAX_FRAME) and as_ is None:
                    if plausible_at(data, pos, n, check_crc=False):
                        as_ = "records"
                        continue
            if kind == "request":
                f = known or F.decode_request(data, pos, n, base=base, ctx=self.ctx)
            elif known is not None:
                f = known
            else:
                f = self.response(data, pos, n, base, conv)
            f.source = label
            out.append(self.number(f))
            if f.kind == "request":
                conv.remember(f)
            if f.declared is None or f.declared < 0 or any(x.code is Code.FRAME_SIZE_INVALID for x in f.findings) \
                    and f.size <= 4:
                # the size prefix cannot be trusted: the rest of the dump is not framed
                rest = n - pos - max(f.size, 0)
                if rest > 0:
                    f.findings.append(Finding(Code.GARBAGE, base + pos + f.size,
                                              f"{rest} bytes after an untrustworthy size prefix", length=rest))
                break
            pos += max(f.size, 1)
        return out

    def _detect(self, data, pos, n, conv):
        """``(kind, frame)`` for the bytes at ``pos`` of a pasted dump: kind request | response | records;
        ``frame`` is the decoded frame when detection had to decode it (else None)."""
        from kafkadump.decoders.batches.walk import plausible_at

        plausible_req = F.request_plausible(data, pos, n)
        if plausible_req:
            f = F.decode_request(data, pos, n, base=self._base, ctx=self.ctx)
            if F.fit(f):
                return self._request_or_response(f, data, pos, n)
        if plausible_at(data, pos, n, check_crc=True):
            return "records", None
        if n - pos >= 8:
            size = int32_at(data, pos)
            if 4 <= size <= F.MAX_FRAME:
                corr = int32_at(data, pos + 4)
                if corr in conv.pending or self.hints.api_key is not None or not plausible_req:
                    return "response", None
                g = F.guess_response(data, pos, n, base=self._base, ctx=self.ctx)
                if g is not None:
                    return "response", g
        if plausible_req:
            return "request", None
        if plausible_at(data, pos, n, check_crc=False):
            return "records", None
        return "response", None


    def _request_or_response(self, req: F.Frame, data, pos: int, n: int) -> tuple[str, F.Frame]:
        """A pasted dump that is one frame and reads as a request: a lone response may read so too.

        The reading that fits exactly wins (a request that fits only with warnings, e.g. bytes
        after its body, gives way to a response that fits exactly); when both fit exactly the
        request is kept, and either way a ``frame-ambiguous`` finding names the other reading.
        """
        lone = pos == 0 and 4 + int32_at(data, pos) == n and self.hints.api_key is None
        if not lone:
            return "request", req
        resp = F.guess_response(data, pos, n, base=self._base, ctx=self.ctx)
        if resp is None:
            return "request", req
        req_text = f"{req.api_name} v{req.api_version}"
        resp_text = f"{resp.api_name} v{resp.api_version}"
        if F.exact(req):
            req.findings.append(Finding(Code.FRAME_AMBIGUOUS, self._base + pos,
                                        f"read as request {req_text}; the bytes fit response {resp_text} exactly "
                                        f"as well (--as response to read them so)"))
            return "request", req
        why = ", ".join(sorted({x.code.value for x in req.findings if x.severity.value != "info"})) \
            or "bytes kept raw"
        resp.findings.append(Finding(Code.FRAME_AMBIGUOUS, self._base + pos,
                                     f"read as response {resp_text}, which fits exactly; as request {req_text} the "
                                     f"bytes fit only with warnings ({why}) (--as request to read them so)"))
        return "response", resp


class _Probe:
    """Bytes of a connection held until we know whether it is Kafka and who the client is.

    Each direction's bytes are also kept joined, extended as segments arrive and
    their total kept, so deciding costs no re-joining per segment."""

    def __init__(self, c: Connection):
        self.c = c
        self.data: dict[Endpoint, list[tuple[int, bytes, Packet | None]]] = {}  # direction -> (offset, bytes, packet)s
        self.joined: dict[Endpoint, bytearray] = {}   # direction -> its held bytes, in arrival order
        self.size = 0

    def add(self, direction: Endpoint, offset: int, data: bytes, packet: Packet | None) -> None:
        data = bytes(data)
        self.data.setdefault(direction, []).append((offset, data, packet))
        self.joined.setdefault(direction, bytearray()).extend(data)
        self.size += len(data)

    def stream(self, direction: Endpoint) -> bytes:
        return bytes(self.joined.get(direction, b""))

    def streams(self) -> Iterator[tuple[Endpoint, bytes]]:
        for direction in self.data:
            yield direction, self.stream(direction)

    def total(self) -> int:
        return self.size

    def items(self) -> list[tuple[Endpoint, list[tuple[int, bytes, Packet | None]]]]:
        return list(self.data.items())

    def first_full(self, n: int) -> tuple[Endpoint, bytearray] | None:
        """The first direction (in arrival order) holding at least ``n`` bytes: ``(direction, held)``;
        ``held`` is the live joined buffer (read it, copy what is kept)."""
        for direction in self.data:
            d = self.joined[direction]
            if len(d) >= n:
                return direction, d
        return None


def _both_done(halves: dict[Endpoint, HalfStream]) -> bool:
    """Both directions of a connection ended (FIN) with nothing held out of order."""
    one, two = halves.values()
    return one.fin and two.fin and not one.pending and not two.pending


def _apiversions_fallback(f: F.Frame, buf: ByteBuffer, pos: int, end: int, base: int, ctx: F.Ctx) -> F.Frame:
    """An ApiVersions answer that does not fit the version asked for, in a layout brokers are known
    to use: the v0 layout of a broker that does not support the version (KIP-511), or the layout of
    librdkafka's mock broker.  Decoded in that layout, with an info finding naming it."""
    if f.api_key != 18 or not f.api_version or F.clean(f) and not any(
            x.code is Code.FRAME_TRAILING for x in f.findings):
        return f
    g = F.decode_response(buf, pos, end, 18, 0, base=base, ctx=ctx)
    if F.clean(g) and not any(x.code is Code.FRAME_TRAILING for x in g.findings):
        g.api_version = f.api_version
        g.body_version = 0
        assert g.body is not None  # clean
        g.findings.insert(0, Finding(Code.CLIENT_QUIRK, base + pos,
                                     f"ApiVersions v{f.api_version} answered in the v0 layout (error "
                                     f"{g.body.get('errorCode')}): a broker's answer to a version it does not "
                                     f"support (KIP-511)"))
        return g
    m = F.decode_apiversions_mock(buf, pos, end, f.api_version, base=base, ctx=ctx)
    if m is not None:
        m.findings.insert(0, Finding(Code.CLIENT_QUIRK, base + pos,
                                     f"ApiVersions v{f.api_version} answered in the layout librdkafka's mock broker "
                                     f"writes (a one-byte count of {len(m.body['apiKeys']) if m.body else 0} APIs, "
                                     f"no tagged fields), not the v{f.api_version} layout"))
        return m
    return f


__all__ = ["CaptureDecoder", "Conversation", "StreamNote", "Hints", "endpoint_str"]
