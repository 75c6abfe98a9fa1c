"""Packet captures: pcap and pcapng files, link/IP/TCP headers, TCP reassembly.

Pure Python, read-only, streaming: packets are read one at a time from a
read-only mapping of the file; each TCP direction keeps only the bytes not
yet handed on (plus a bounded tail for judging retransmissions and a
bounded store of out-of-order segments).

* pcap: both byte orders, microsecond and nanosecond variants; pcapng:
  section header (both byte orders), interface description (link type,
  ``if_tsresol``), enhanced / simple / obsolete packet blocks; other
  blocks are skipped by their length.
* link types: Ethernet (with VLAN tags), Linux cooked v1/v2, BSD
  loopback (NULL/LOOP), raw IPv4/IPv6.  For packets from hex text (no link
  type) the header is found by trying each and checking the IP header.
* IPv4 (options; fragments are reassembled, within a bound; TSO/GSO
  super-packets with total length 0 are read to the end of the capture) and
  IPv6 (extension headers; fragments are not reassembled); TCP.
* Every packet that is not read (a link type kafkadump cannot read, IPv6
  fragments, IPv4 fragments that never complete, headers cut short) is
  counted by reason and reported as ``packets-not-read`` at the end; packets
  that are simply not TCP (ARP, UDP, ...) are not.
* TCP reassembly per direction by sequence number (wrapping modulo 2**32):
  in-order data is delivered; data before the expected sequence is a
  retransmission (``tcp-retransmission`` when identical to what was
  delivered, ``tcp-overlap-conflict`` when it differs: the first copy is
  kept); data after it waits for the missing bytes, and when they never
  come (end of capture, FIN, or too much waiting) the hole is a ``tcp-gap``.
  Bytes a short snapshot length cut from a packet are a gap too.

Offsets in findings about the file's structure are file offsets; offsets
in findings about a TCP stream count the bytes of that direction of the
connection from its first byte (the byte after the SYN).
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from kafkadump.base.errors import InputError
from kafkadump.base.findings import Code, Finding
from kafkadump.decoders.batches.primitives import ByteBuffer
from kafkadump.sources.capture_magic import PCAP_MAGICS, PCAPNG_MAGIC, is_capture
from kafkadump.sources.segment import page_releaser

# an endpoint: (ip, port)
Endpoint = tuple[str, int]
# (src, dst, tcp_start, tcp_end, fragmented) of an IP packet
IpInfo = tuple[str, str, int, int, bool]


class StreamSink(Protocol):
    """Where a :class:`HalfStream` delivers its bytes (the capture decoder)."""

    def deliver(self, half: HalfStream, offset: int, data: bytes, packet: Packet | None) -> None: ...

    def gap(self, half: HalfStream, offset: int, length: int, finding: Finding) -> None: ...

MAX_PENDING = 16 << 20       # out-of-order bytes held per direction before declaring a gap
RECENT = 1 << 16             # delivered bytes kept per direction to judge retransmissions
RECENT_HELD = 2 * RECENT     # held at most: trimmed back to RECENT only past this (a copy per 64 KiB, not per packet)
MAX_SNAPLEN = 1 << 28        # a packet record larger than this is not trusted
MAX_FRAGMENT_BYTES = 16 << 20  # IPv4 fragment bytes held while waiting for the rest of their datagrams
MAX_DATAGRAMS = 4096         # IPv4 datagrams being reassembled at once
MAX_PARTS = 256              # fragments of one datagram (a 64 KiB datagram over a 576-byte MTU: 120)
RELEASE_STEP = 32 << 20      # the reader hands the mapped pages behind it back every this many bytes

LINK_NULL, LINK_ETHERNET, LINK_RAW, LINK_LOOP, LINK_SLL, LINK_IPV4, LINK_IPV6, LINK_SLL2 = 0, 1, 101, 108, 113, 228, 229, 276
LINK_NAMES = {0: "null", 1: "ethernet", 12: "raw", 14: "raw", 101: "raw", 108: "loop", 113: "linux-sll",
              228: "ipv4", 229: "ipv6", 276: "linux-sll2"}


class CaptureError(InputError):
    """The file is not a capture at all (wrong magic): exit 2."""


class Packet:
    """One TCP segment as captured."""

    __slots__ = ("number", "time", "src", "dst", "sport", "dport", "seq", "flags", "payload", "missing",
                 "position", "ack")

    def __init__(self, number: int, time: float | None, src: str, dst: str, sport: int, dport: int, seq: int,
                 flags: int, payload: bytes, missing: int, position: int, ack: int = 0):
        self.number = number      # 1-based packet number in the file (as Wireshark counts)
        self.time = time          # epoch seconds (float), or seconds of the day for tcpdump text
        self.src = src
        self.dst = dst
        self.sport = sport
        self.dport = dport
        self.seq = seq
        self.flags = flags
        self.payload = payload    # captured TCP payload
        self.missing = missing    # payload bytes the snapshot length cut off
        self.position = position  # file offset of the packet record
        self.ack = ack            # acknowledgment number (valid when the ACK flag is set)

    @property
    def syn(self) -> bool:
        return bool(self.flags & 0x02)

    @property
    def fin(self) -> bool:
        return bool(self.flags & 0x01)

    @property
    def rst(self) -> bool:
        return bool(self.flags & 0x04)

    @property
    def ack_flag(self) -> bool:
        return bool(self.flags & 0x10)


# --- IP / TCP ---------------------------------------------------------------------------

def _ipv4_checksum_ok(data: ByteBuffer, pos: int, ihl: int) -> bool:
    s = 0
    for i in range(pos, pos + ihl, 2):
        s += (data[i] << 8) | data[i + 1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


_IPV6_TEXT: dict[bytes, str] = {}
_IPV6_CACHED = 4096  # addresses remembered (a capture has few; a hostile one is bounded)


def _ipv6_text(raw: bytes) -> str:
    """An IPv6 address as ipaddress writes it, remembered: a capture names the same few again and again."""
    text = _IPV6_TEXT.get(raw)
    if text is None:
        if len(_IPV6_TEXT) >= _IPV6_CACHED:
            _IPV6_TEXT.clear()
        import ipaddress  # (here: an IPv4 capture does not pay for its import)

        text = _IPV6_TEXT[raw] = str(ipaddress.IPv6Address(raw))
    return text


_IPV4_PAIRS: dict[bytes, tuple[str, str]] = {}


def _ipv4_pair(raw: bytes) -> tuple[str, str]:
    """The source and destination of an IPv4 header (its bytes 12-19) as dotted quads, as ipaddress
    writes them; remembered, as :func:`_ipv6_text` remembers: a capture's packets repeat a few pairs."""
    pair = _IPV4_PAIRS.get(raw)
    if pair is None:
        if len(_IPV4_PAIRS) >= _IPV6_CACHED:
            _IPV4_PAIRS.clear()
        pair = _IPV4_PAIRS[raw] = (f"{raw[0]}.{raw[1]}.{raw[2]}.{raw[3]}", f"{raw[4]}.{raw[5]}.{raw[6]}.{raw[7]}")
    return pair


def _ipv4_addresses(addresses: int) -> tuple[str, str]:
    """:func:`_ipv4_pair` of an IPv4 header's bytes 12-19 read as one big-endian integer (as the
    compiled reader hands them over)."""
    pair = _IPV4_BY_NUMBER.get(addresses)
    if pair is None:
        if len(_IPV4_BY_NUMBER) >= _IPV6_CACHED:
            _IPV4_BY_NUMBER.clear()
        pair = _IPV4_BY_NUMBER[addresses] = _ipv4_pair(addresses.to_bytes(8, "big"))
    return pair


_IPV4_BY_NUMBER: dict[int, tuple[str, str]] = {}


def _compiled_reader() -> Any:
    """The compiled packet loop (``accel/pcapread``), or None: not built, or the pure path forced."""
    from kafkadump.accel import compiled

    return compiled("pcapread")


def parse_ip(data: ByteBuffer, pos: int, strict: bool = False) -> IpInfo | None:
    """``(src, dst, tcp_start, tcp_end, fragmented)`` of the IP packet at ``pos``, or None.

    ``strict`` (used when guessing the link header of a hex dump) also
    requires a valid IPv4 header checksum or an exact total length.
    Returns None for anything that is not TCP over IPv4/IPv6.
    """
    n = len(data)
    if pos >= n:
        return None
    ver = data[pos] >> 4
    if ver == 4:
        if pos + 20 > n:
            return None
        ihl = (data[pos] & 0x0F) * 4
        total = (data[pos + 2] << 8) | data[pos + 3]
        if total == 0:  # TSO/GSO super-packet: the length is left to the capture
            total = n - pos
        if ihl < 20 or pos + ihl > n or total < ihl:
            return None
        if data[pos + 9] != 6:
            return None
        if strict and not (_ipv4_checksum_ok(data, pos, ihl) or total == n - pos):
            return None
        if strict and total > n - pos:
            return None
        frag = (data[pos + 6] << 8) | data[pos + 7]
        fragmented = bool(frag & 0x2000) or (frag & 0x1FFF) != 0
        src, dst = _ipv4_pair(bytes(data[pos + 12:pos + 20]))
        return src, dst, pos + ihl, pos + total, fragmented
    if ver == 6:
        if pos + 40 > n:
            return None
        plen = (data[pos + 4] << 8) | data[pos + 5]
        nh = data[pos + 6]
        src = _ipv6_text(bytes(data[pos + 8:pos + 24]))
        dst = _ipv6_text(bytes(data[pos + 24:pos + 40]))
        end = pos + 40 + plen if plen else n
        if strict and end > n:
            return None
        p = pos + 40
        for _ in range(8):  # extension headers
            if nh in (0, 43, 60, 51):
                if p + 2 > n:
                    return None
                hlen = (data[p + 1] + 2) * 4 if nh == 51 else (data[p + 1] + 1) * 8
                nh = data[p]
                p += hlen
                continue
            break
        if nh == 44:
            return src, dst, p, end, True
        if nh != 6:
            return None
        return src, dst, p, end, False
    return None


def parse_tcp(data: ByteBuffer, ip: IpInfo, captured_end: int, strict: bool = False
              ) -> tuple[int, int, int, int, int, int, int, int] | None:
    """``(sport, dport, seq, flags, payload_start, payload_end, missing, ack)`` or None."""
    src, dst, start, end, _frag = ip
    if start + 20 > captured_end:
        return None
    sport, dport, seq, ack, off_flags = struct.unpack_from(">HHIIH", data, start)
    doff = (off_flags >> 12) * 4
    flags = off_flags & 0x1FF
    if doff < 20:
        return None
    if strict and start + doff > min(end, captured_end):
        return None
    pstart = start + doff
    pend = min(end, captured_end)
    missing = max(0, end - max(pend, pstart))
    if pstart > pend:
        pstart = pend
    return sport, dport, seq, flags, pstart, pend, missing, ack


def link_offset(linktype: int, data: ByteBuffer) -> int | None:
    """Where the IP header starts for a known link type, or None (not IP)."""
    n = len(data)
    if linktype == LINK_ETHERNET:
        p = 12
        while p + 2 <= n:
            et = (data[p] << 8) | data[p + 1]
            if et in (0x8100, 0x88A8, 0x9100):
                p += 4
                continue
            return p + 2 if et in (0x0800, 0x86DD) else None
        return None
    if linktype in (LINK_RAW, 12, 14, LINK_IPV4, LINK_IPV6):
        return 0
    if linktype in (LINK_NULL, LINK_LOOP):
        return 4 if n >= 4 else None
    if linktype == LINK_SLL:
        if n < 16:
            return None
        et = (data[14] << 8) | data[15]
        return 16 if et in (0x0800, 0x86DD) else None
    if linktype == LINK_SLL2:
        if n < 20:
            return None
        et = (data[0] << 8) | data[1]
        return 20 if et in (0x0800, 0x86DD) else None
    return None


def packet_from_bytes(data: ByteBuffer, number: int = 0, time: float | None = None, linktype: int | None = None,
                      position: int = 0, orig_len: int | None = None, ip_at: int | None = None) -> Packet | None:
    """A :class:`Packet` from one captured frame's bytes, or None (not TCP/IP).

    With ``linktype`` None (hex text) the link header is guessed: raw IP,
    Ethernet, Linux cooked v1/v2, BSD loopback; the IP header must check out.
    ``ip_at``: where ``linktype``'s header puts IP, when the caller knows it already.
    """
    if ip_at is not None and linktype is not None:
        candidates = [ip_at]
        strict = False
    elif linktype is None:
        candidates = []
        for lt in (LINK_RAW, LINK_ETHERNET, LINK_SLL, LINK_SLL2, LINK_NULL):
            off = link_offset(lt, data)
            if off is not None:
                candidates.append(off)
        strict = True
    else:
        off = link_offset(linktype, data)
        candidates = [] if off is None else [off]
        strict = False
    for off in candidates:
        ip = parse_ip(data, off, strict)
        if ip is None or ip[4]:
            continue
        captured_end = len(data)
        tcp = parse_tcp(data, ip, captured_end, strict)
        if tcp is None:
            continue
        sport, dport, seq, flags, ps, pe, missing, ack = tcp
        return Packet(number, time, ip[0], ip[1], sport, dport, seq, flags, bytes(data[ps:pe]), missing, position,
                      ack)
    return None


def _ipv4_tcp_fragment(data: ByteBuffer, off: int) -> bool:
    """Is the IP packet at ``off`` a fragment of a TCP-over-IPv4 datagram?"""
    if off + 20 > len(data) or data[off] >> 4 != 4 or data[off + 9] != 6:
        return False
    frag = (data[off + 6] << 8) | data[off + 7]
    return bool(frag & 0x2000) or (frag & 0x1FFF) != 0


def _why_not_read(data: ByteBuffer, linktype: int, off: int | None) -> str | None:
    """Why a packet that is not a TCP segment was not read, or None when it is simply not TCP."""
    if off is None:
        if linktype not in LINK_NAMES:
            return f"link type {linktype}, which kafkadump cannot read"
        return None  # ARP, LLDP, ...: not IP
    if off >= len(data):
        return "link header cut short"
    ver = data[off] >> 4
    if ver == 4:
        if off + 20 > len(data):
            return "IP header cut short"
        if data[off + 9] != 6:
            return None
        return "TCP/IP headers malformed or cut short"
    if ver == 6:
        if off + 40 > len(data):
            return "IP header cut short"
        ip = parse_ip(data, off)
        if ip is not None and ip[4]:
            return "IPv6 fragments (not reassembled)"
        return None if ip is None else "TCP/IP headers malformed or cut short"
    return "not IPv4 or IPv6 where the link type puts IP"


class _Datagrams:
    """IPv4 datagrams being reassembled from fragments, bounded in bytes and in number.

    ``add`` returns the whole datagram (raw IP bytes) once its fragments cover
    it; datagrams dropped for the bound, and those never completed
    (``finish``), are reported through ``unread`` as packets not read.
    """

    def __init__(self, unread: Callable[..., None]) -> None:
        self.unread = unread
        self.open: dict = {}   # key -> [header, {frag offset: payload}, total or None, held bytes, packets, pos, number]
        self.held = 0

    def add(self, data: ByteBuffer, off: int, position: int, number: int) -> bytes | None:
        ihl = (data[off] & 0x0F) * 4
        total = (data[off + 2] << 8) | data[off + 3]
        if ihl < 20 or off + ihl > len(data) or total < ihl:
            self.unread("IPv4 fragment with a malformed header", position, number)
            return None
        frag = (data[off + 6] << 8) | data[off + 7]
        payload = bytes(data[off + ihl:off + total])
        key = bytes(data[off + 12:off + 20]) + bytes(data[off + 4:off + 6])  # addresses and identification
        d = self.open.get(key)
        if d is None:
            d = self.open[key] = [None, {}, None, 0, 0, position, number]
        start = (frag & 0x1FFF) * 8
        if start == 0:
            d[0] = bytes(data[off:off + ihl])
        if not frag & 0x2000:
            d[2] = start + len(payload)
        if start not in d[1] or len(d[1][start]) < len(payload):
            grown = len(payload) - len(d[1].get(start, b""))
            d[1][start] = payload
            d[3] += grown
            self.held += grown
        d[4] += 1
        if len(d[1]) > MAX_PARTS:
            self._drop(key)
            self.unread(f"IPv4 datagrams in more than {MAX_PARTS} fragments",
                        d[5], d[6], d[4])
            return None
        whole = self._whole(d)
        if whole is not None:
            self._drop(key)
            return whole
        self._bound()
        return None

    @staticmethod
    def _whole(d: Any) -> bytes | None:
        header, parts, total = d[0], d[1], d[2]
        if header is None or total is None or d[3] < total:
            return None
        out = bytearray()
        for start in sorted(parts):
            if start > len(out):
                return None  # a hole
            out += parts[start][len(out) - start:]
        if len(out) < total:
            return None
        ip = bytearray(header)
        ip[2:4] = (len(header) + total).to_bytes(2, "big")
        ip[6:8] = b"\x00\x00"
        return bytes(ip) + bytes(out[:total])

    def _drop(self, key: bytes) -> list:
        d = self.open.pop(key)
        self.held -= d[3]
        return d

    def _bound(self) -> None:
        while self.open and (self.held > MAX_FRAGMENT_BYTES or len(self.open) > MAX_DATAGRAMS):
            d = self._drop(next(iter(self.open)))
            self.unread("IPv4 fragments of a datagram not completed within the reassembly bound", d[5], d[6], d[4])

    def finish(self) -> None:
        for key in list(self.open):
            d = self._drop(key)
            self.unread("IPv4 fragments of a datagram never completed", d[5], d[6], d[4])


# --- pcap / pcapng ----------------------------------------------------------------------------

# a packet record of the file: (captured bytes, time, link type, file position, original length)
_PacketRecord = tuple[ByteBuffer, float | None, int, int, int | None]


class CaptureReader:
    """Iterates a pcap or pcapng buffer: yields :class:`Packet` objects (TCP only).

    Problems with the file's structure are collected in ``findings``
    (``capture-malformed``) and reading stops at the first record that cannot
    be trusted.  ``packets`` counts every packet record, ``skipped`` those
    that are not TCP over IP.
    """

    def __init__(self, buf: ByteBuffer, name: str = "-"):
        self.buf = buf
        self.name = name
        self.findings: list[Finding] = []
        self.packets = 0
        self.skipped = 0
        self.fragments = 0
        self.format: str | None = None
        self.linktypes: set[int] = set()
        self.not_read: Counter = Counter()       # reason -> packets not read
        self.first_not_read: dict = {}           # reason -> (file position, packet number)
        self.datagrams = _Datagrams(self._unread)
        self._release = page_releaser(buf)
        self._released = 0
        head = bytes(buf[:4])
        if head in PCAP_MAGICS:
            self.format = "pcap"
        elif head == PCAPNG_MAGIC:
            self.format = "pcapng"
        else:
            raise CaptureError(f"{name}: not a pcap or pcapng file (magic {head.hex()})")

    def __iter__(self) -> Iterator[Packet]:
        packet = self._packet
        loop = _compiled_reader() if self.format == "pcap" else None
        records = self._records() if loop is None else self._compiled_pcap(loop)
        for record in records:
            if isinstance(record, Packet):
                yield record
                continue
            p = packet(*record)
            if p is not None:
                yield p
        self.datagrams.finish()
        self.findings.extend(self.not_read_findings())

    def _compiled_pcap(self, loop: Any) -> Iterator[_PacketRecord | Packet]:
        """:meth:`_pcap` with the compiled loop (``accel/pcapread.c``) reading the records: the
        packets it takes apart (the plain TCP-over-IPv4 case) come as :class:`Packet` objects,
        numbered and counted here as :meth:`_packet` does; every other record comes as
        :meth:`_pcap` yields it, for :meth:`_packet`; where the loop stops (a record it does
        not judge, or a point where mapped pages go back) this reader's own loop goes on."""
        buf = self.buf
        n = len(buf)
        if n < 24:
            yield from self._pcap()
            return
        bo, res = PCAP_MAGICS[bytes(buf[:4])]
        linktype = struct.unpack_from(bo + "I", buf, 20)[0] & 0xFFFF
        self.linktypes.add(linktype)
        rec = struct.Struct(bo + "IIII")
        big, nanos = bo == ">", res < 1e-6
        run = loop.pcap_run
        pos = 24
        while pos < n:
            release_at = self._released + RELEASE_STEP if self._release is not None else n
            items, pos, stopped = run(buf, pos, big, nanos, linktype, release_at, 1024)
            for item in items:
                if type(item) is int:   # not the plain case: the record as _pcap yields it
                    record = self._pcap_record(buf, item, n, rec, res, linktype)
                    if record is None:  # pragma: no cover - the loop hands back intact records only
                        return
                    yield record
                    continue
                self.packets += 1
                position, when, addresses, sport, dport, seq, flags, payload, missing, ack = item
                src, dst = _ipv4_addresses(addresses)
                yield Packet(self.packets, when, src, dst, sport, dport, seq, flags, payload, missing, position, ack)
            if stopped and pos < n:   # a record the loop does not judge, or the first one past release_at
                record = self._pcap_record(buf, pos, n, rec, res, linktype)
                if record is None:
                    return
                yield record
                pos += 16 + len(record[0])

    def _records(self) -> Iterator[_PacketRecord]:
        return self._pcap() if self.format == "pcap" else self._pcapng()

    def time_span(self) -> tuple[float, float] | None:
        """The earliest and latest packet time, from the packet records' headers alone (no packet
        is parsed); None when no packet has a time.  Use a reader of its own: this one's findings
        are those of the walk."""
        loop = _compiled_reader() if self.format == "pcap" and len(self.buf) >= 24 else None
        if loop is not None:   # the same loop over the records' headers, compiled
            bo, res = PCAP_MAGICS[bytes(self.buf[:4])]
            first, last, _ = loop.pcap_times(self.buf, bo == ">", res < 1e-6)
            return None if first is None or last is None else (first, last)
        first = last = None
        for _, t, _, _, _ in self._records():
            if t is not None:
                first = t if first is None or t < first else first
                last = t if last is None or t > last else last
        return None if first is None or last is None else (first, last)

    def not_read_findings(self) -> list:
        """One ``packets-not-read`` finding per reason: how many, and the first one's position."""
        out = []
        for reason, count in self.not_read.items():
            pos, number = self.first_not_read[reason]
            out.append(Finding(Code.PACKETS_NOT_READ, pos,
                               f"{count} packet{'s' if count != 1 else ''} not read: {reason} "
                               f"(the first is packet {number})"))
        return out

    def _unread(self, reason: str, position: int, number: int, count: int = 1) -> None:
        self.not_read[reason] += count
        self.first_not_read.setdefault(reason, (position, number))

    def _passed(self, pos: int) -> None:
        """The reader is at ``pos``: hand the mapped pages behind it back now and then."""
        if self._release is not None and pos - self._released >= RELEASE_STEP:
            self._release(pos)
            self._released = pos

    def _bad(self, pos: int, message: str) -> None:
        self.findings.append(Finding(Code.CAPTURE_MALFORMED, pos, message))

    def _packet(self, data: ByteBuffer, time: float | None, linktype: int, position: int, orig_len: int | None
                ) -> Packet | None:
        self.packets += 1
        if position - self._released >= RELEASE_STEP:
            self._passed(position)
        off = link_offset(linktype, data)
        if off is not None and _ipv4_tcp_fragment(data, off):
            self.fragments += 1
            whole = self.datagrams.add(data, off, position, self.packets)
            if whole is None:
                return None
            data, linktype, off = whole, LINK_RAW, 0
        p = packet_from_bytes(data, self.packets, time, linktype, position, orig_len, off)
        if p is None:
            self.skipped += 1
            reason = _why_not_read(data, linktype, off)
            if reason is not None:
                self._unread(reason, position, self.packets)
        return p

    def _pcap(self) -> Iterator[_PacketRecord]:
        buf = self.buf
        n = len(buf)
        if n < 24:
            self._bad(0, f"pcap global header needs 24 bytes, {n} present")
            return
        bo, res = PCAP_MAGICS[bytes(buf[:4])]
        _maj, _min, _tz, _sig, _snap, linktype = struct.unpack_from(bo + "HHiIII", buf, 4)
        linktype &= 0xFFFF
        self.linktypes.add(linktype)
        rec = struct.Struct(bo + "IIII")
        pos = 24
        while pos < n:
            record = self._pcap_record(buf, pos, n, rec, res, linktype)
            if record is None:
                return
            yield record
            pos += 16 + len(record[0])

    def _pcap_record(self, buf: ByteBuffer, pos: int, n: int, rec: struct.Struct, res: float, linktype: int
                     ) -> _PacketRecord | None:
        """The packet record at ``pos`` of a pcap file, or None when it cannot be trusted (a
        ``capture-malformed`` finding says why, and the file is read no further)."""
        if pos + 16 > n:
            self._bad(pos, f"packet record header needs 16 bytes, {n - pos} left")
            return None
        ts, tfrac, incl, orig = rec.unpack_from(buf, pos)
        if incl > MAX_SNAPLEN:
            self._bad(pos + 8, f"packet record length {incl} is not plausible")
            return None
        if pos + 16 + incl > n:
            self._bad(pos, f"packet record of {incl} bytes, {n - pos - 16} left (file cut short)")
            return None
        return buf[pos + 16:pos + 16 + incl], ts + tfrac * res, linktype, pos, orig

    def _pcapng(self) -> Iterator[_PacketRecord]:
        buf = self.buf
        n = len(buf)
        pos = 0
        bo = "<"
        ifaces: list = []   # (linktype, ts_resolution)
        while pos < n:
            if pos + 12 > n:
                self._bad(pos, f"block header needs 12 bytes, {n - pos} left")
                return
            if bytes(buf[pos:pos + 4]) == PCAPNG_MAGIC:
                bom = bytes(buf[pos + 8:pos + 12])
                if bom == b"\x4d\x3c\x2b\x1a":
                    bo = "<"
                elif bom == b"\x1a\x2b\x3c\x4d":
                    bo = ">"
                else:
                    self._bad(pos + 8, f"section header byte-order magic {bom.hex()} is invalid")
                    return
                ifaces = []
            btype, blen = struct.unpack_from(bo + "II", buf, pos)
            if blen < 12 or blen % 4 or pos + blen > n:
                self._bad(pos + 4, f"block length {blen} at {pos} is invalid ({n - pos} bytes left)")
                return
            (trailer,) = struct.unpack_from(bo + "I", buf, pos + blen - 4)
            if trailer != blen:
                self._bad(pos + blen - 4, f"block trailer length {trailer} differs from {blen}")
                return
            body = pos + 8
            bend = pos + blen - 4
            if btype == 1:  # interface description
                if bend - body < 8:
                    self._bad(pos, "interface description block too short")
                    return
                lt, _res, _snap = struct.unpack_from(bo + "HHI", buf, body)
                ifaces.append([lt, _if_tsresol(buf, body + 8, bend, bo)])
                self.linktypes.add(lt)
            elif btype in (6, 2):  # enhanced / obsolete packet block
                if bend - body < 20:
                    self._bad(pos, "packet block too short")
                    return
                if btype == 6:
                    iface, th, tl, cap, orig = struct.unpack_from(bo + "IIIII", buf, body)
                else:
                    iface, _drops, th, tl, cap, orig = struct.unpack_from(bo + "HHIIII", buf, body)
                if iface >= len(ifaces):
                    self._bad(body, f"packet on interface {iface}, only {len(ifaces)} described")
                    pos += blen
                    continue
                if body + 20 + cap > bend:
                    self._bad(body + 12, f"captured length {cap} runs past its block")
                    return
                lt, res = ifaces[iface]
                yield buf[body + 20:body + 20 + cap], ((th << 32) | tl) * res, lt, pos, orig
            elif btype == 3:  # simple packet block
                if not ifaces:
                    self._bad(pos, "simple packet block before any interface description")
                    pos += blen
                    continue
                (orig,) = struct.unpack_from(bo + "I", buf, body)
                cap = min(orig, bend - body - 4)
                lt, res = ifaces[0]
                yield buf[body + 4:body + 4 + cap], None, lt, pos, orig
            pos += blen


def _if_tsresol(buf: ByteBuffer, pos: int, end: int, bo: str) -> float:
    """The interface's timestamp resolution (option 9), default microseconds."""
    while pos + 4 <= end:
        code, length = struct.unpack_from(bo + "HH", buf, pos)
        if code == 0:
            break
        if code == 9 and length >= 1 and pos + 5 <= end:
            v = buf[pos + 4]
            return 2.0 ** -(v & 0x7F) if v & 0x80 else 10.0 ** -v
        pos += 4 + ((length + 3) & ~3)
    return 1e-6


# --- TCP reassembly ------------------------------------------------------------------------------

class HalfStream:
    """One direction of a TCP connection: delivers its bytes in order.

    ``deliver(offset, data, packet)`` and ``gap(offset, length, finding)``
    are called on the sink; ``notes`` collects retransmission findings.
    """

    __slots__ = ("next_seq", "offset", "pending", "pending_bytes", "recent", "sink", "fin", "notes", "direction",
                 "acked", "fin_end")

    def __init__(self, sink: StreamSink, direction: Endpoint):
        self.next_seq: int | None = None
        self.offset = 0
        self.pending: dict = {}
        self.pending_bytes = 0
        self.recent = bytearray()
        self.sink = sink
        self.fin = False
        self.notes: list[Finding] = []
        self.direction = direction
        self.acked: int | None = None      # highest sequence number the peer acknowledged
        self.fin_end: int | None = None    # sequence number where the FIN says the data ends

    def _rel(self, seq: int) -> int:
        """``seq`` relative to the next expected byte (known once a segment was seen)."""
        assert self.next_seq is not None
        r = (seq - self.next_seq) & 0xFFFFFFFF
        return r - 0x100000000 if r >= 0x80000000 else r

    def peer_ack(self, ack: int) -> None:
        """The other side acknowledged up to ``ack``: bytes before it were sent.

        When it acknowledges bytes the capture does not have while later
        segments wait, those bytes were lost by the capture, not delayed:
        the hole is reported at once instead of at the end.
        """
        if self.next_seq is None:
            return
        if self.acked is None or ((ack - self.acked) & 0xFFFFFFFF) < 0x80000000:
            self.acked = ack
        if self.pending and 0 < self._rel(ack):
            self.flush_gap()

    def segment(self, p: Packet) -> None:
        flags = p.flags
        if flags & 0x02:  # SYN
            if self.next_seq is None:
                self.next_seq = (p.seq + 1) & 0xFFFFFFFF
            seq = (p.seq + 1) & 0xFFFFFFFF
        else:
            seq = p.seq
        data = p.payload
        if flags & 0x01:  # FIN
            self.fin = True
            self.fin_end = (seq + len(data) + p.missing) & 0xFFFFFFFF
        if not data and not p.missing:
            if flags & 0x04:  # RST
                self.fin = True
            return
        if self.next_seq is None:
            self.next_seq = seq
        rel = (seq - self.next_seq) & 0xFFFFFFFF
        if rel >= 0x80000000:
            rel -= 0x100000000
        if rel < 0:
            dup = min(len(data), -rel)
            self._retransmitted(rel, data[:dup], p)
            data = data[dup:]
            if not data and not p.missing:
                return
            seq = self.next_seq
            rel = 0
        if rel > 0:
            if seq not in self.pending or len(self.pending[seq][0]) < len(data):
                old = self.pending.get(seq)
                self.pending_bytes += len(data) - (len(old[0]) if old else 0)
                self.pending[seq] = (data, p)
            if self.pending_bytes > MAX_PENDING or (self.acked is not None and self._rel(self.acked) > 0):
                self.flush_gap()
            return
        self._take(data, p)
        self._drain()

    def _take(self, data: bytes, p: Packet) -> None:
        assert self.next_seq is not None  # set by the segment being taken
        if data:
            self.sink.deliver(self, self.offset, data, p)
            self.offset += len(data)
            self.next_seq = (self.next_seq + len(data)) & 0xFFFFFFFF
            self.remember(data)
        if p.missing:
            f = Finding(Code.TCP_GAP, self.offset,
                        f"{p.missing} bytes of packet {p.number} were not captured (snapshot length)",
                        length=p.missing)
            self.sink.gap(self, self.offset, p.missing, f)
            self.offset += p.missing
            self.next_seq = (self.next_seq + p.missing) & 0xFFFFFFFF
            self.recent.clear()

    def _drain(self) -> None:
        while self.pending:
            progressed = False
            for seq in list(self.pending):
                rel = (seq - self.next_seq) & 0xFFFFFFFF
                if rel >= 0x80000000:
                    rel -= 0x100000000
                if rel > 0:
                    continue
                data, p = self.pending.pop(seq)
                self.pending_bytes -= len(data)
                if -rel < len(data):
                    self._take(data[-rel:], p)
                progressed = True
            if not progressed:
                return

    def remember(self, data: bytes) -> None:
        """Delivered bytes, kept for judging retransmissions (the last :data:`RECENT` of them)."""
        recent = self.recent
        recent += data
        if len(recent) > RECENT_HELD:
            del recent[:len(recent) - RECENT]

    def _retransmitted(self, rel: int, data: bytes, p: Packet) -> None:
        recent = self.recent
        kept = min(len(recent), RECENT)   # the bytes compared: the last RECENT delivered
        start = kept + rel
        if start < 0 or start + len(data) > kept:
            same = None  # beyond what is kept: cannot compare
        else:
            at = len(recent) - kept + start
            same = bytes(recent[at:at + len(data)]) == bytes(data)
        where = self.offset + rel
        if same is False:
            self.notes.append(Finding(Code.TCP_CONFLICT, where,
                                      f"packet {p.number} resends {len(data)} bytes at stream offset {where} "
                                      f"with different content (first copy kept)", length=len(data)))
        else:
            self.notes.append(Finding(Code.TCP_RETRANSMISSION, where,
                                      f"packet {p.number} resends {len(data)} bytes at stream offset {where}",
                                      length=len(data)))

    def finish(self) -> None:
        """End of the capture: report held segments' holes and bytes the FIN or the peer's
        acknowledgments prove were sent but are not in the capture."""
        self.flush_gap()
        if self.next_seq is None:
            return
        end = self.fin_end if self.fin_end is not None else self.acked
        if end is None:
            return
        hole = self._rel(end)
        if hole > 0:
            why = "the FIN shows" if self.fin_end is not None else "the peer's acknowledgments show"
            f = Finding(Code.TCP_GAP, self.offset,
                        f"{hole} bytes at the end of the stream are missing from the capture "
                        f"({why} they were sent)", length=hole)
            self.sink.gap(self, self.offset, hole, f)
            self.offset += hole
            self.next_seq = end

    def flush_gap(self) -> None:
        """Give up waiting: skip to the earliest held segment, reporting the hole."""
        while self.pending:
            first = min(self.pending, key=lambda s: (s - self.next_seq) & 0xFFFFFFFF)
            hole = (first - self.next_seq) & 0xFFFFFFFF
            f = Finding(Code.TCP_GAP, self.offset,
                        f"{hole} bytes missing from the capture at stream offset {self.offset}", length=hole)
            self.sink.gap(self, self.offset, hole, f)
            self.offset += hole
            self.next_seq = first
            self.recent.clear()
            self._drain()


class Connection:
    """A TCP connection: endpoints, roles, and its two half-streams."""

    __slots__ = ("id", "a", "b", "client", "server", "halves", "state", "first_time", "detected", "syn_from",
                 "probe")

    def __init__(self, cid: int, a: Endpoint, b: Endpoint):
        self.id = cid
        self.a = a          # (ip, port) of the first packet's sender
        self.b = b
        self.client: Endpoint | None = None  # (ip, port) once known
        self.server: Endpoint | None = None
        self.halves: dict[Endpoint, HalfStream] = {}
        # protocol-level state, kept here and read by kafkadump.decoders.protocol.stream (the layer above,
        # which this module never imports): None (nothing yet), its probe while deciding, its
        # conversation once Kafka, False when not Kafka
        self.state: object = None
        self.first_time: float | None = None
        self.detected = False
        self.syn_from: Endpoint | None = None
        self.probe: list | None = None   # bytes held while deciding whether this is Kafka

    def label(self) -> str:
        c = self.client or self.a
        s = self.server or self.b
        return f"{_ep(c)} > {_ep(s)}"


def _ep(e: Endpoint) -> str:
    ip, port = e
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def endpoint_str(e: Endpoint) -> str:
    return _ep(e)


__all__ = ["Packet", "CaptureReader", "CaptureError", "HalfStream", "Connection", "packet_from_bytes",
           "is_capture", "endpoint_str"]
