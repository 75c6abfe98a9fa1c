"""Scaled captures for the "silence about what was not read" class: fragments, TSO super-packets,
link types kafkadump cannot read, a bogus size prefix just under 1 GiB."""

from __future__ import annotations

import struct

import builders as bld
import capture_builders as cb


def fragments(ip: bytes, size: int = 64) -> list[bytes]:
    """``ip`` (an IPv4 packet without options) cut into fragments of ``size`` payload bytes (a multiple of 8)."""
    header, payload = ip[:20], ip[20:]
    ident = struct.unpack_from(">H", header, 4)[0]
    out = []
    for start in range(0, len(payload), size):
        part = payload[start:start + size]
        more = 0x2000 if start + size < len(payload) else 0
        h = bytearray(header)
        struct.pack_into(">HHH", h, 2, 20 + len(part), ident, more | (start // 8))
        h[10:12] = b"\x00\x00"
        h[10:12] = struct.pack(">H", cb._csum(bytes(h)))
        out.append(bytes(h) + part)
    return out


def tso(ip: bytes) -> bytes:
    """``ip`` as a TSO/GSO super-packet: IP total length 0."""
    return ip[:2] + b"\x00\x00" + ip[4:]


def conversation(records: int = 3):
    """A Kafka conversation (Metadata and Fetch) whose fetched batch holds ``records`` records."""
    batch = bld.simple_batch(0, records).data
    return cb.kafka_conversation(batch, segment=1400)


def fragmented_capture(n: int, whole: int = 0) -> tuple[bytes, int]:
    """``n`` connections, each a Kafka conversation with every data packet fragmented; ``whole`` more
    connections whose last fragment of the fetch response is lost.  Returns the pcap and its frame count."""
    packets = []
    frames = 0
    for k in range(n + whole):
        c, idx, _ = cb.kafka_conversation(bld.simple_batch(0, 3).data, segment=1400)
        c.client = (f"10.0.{k // 250}.{k % 250 + 1}", 50000)
        lost = set(idx["fetch_resp"][-1:]) if k >= n else set()
        for i, (t, ip, info) in enumerate(c.packets):
            ip = _renumber(ip, k * 100 + i)
            if info["len"] == 0:
                packets.append((t, ip))
                continue
            parts = fragments(ip, 64)
            if i in lost:
                parts = parts[:-1]
            packets += [(t, p) for p in parts]
        frames += 4 if k < n else 3
    return cb.pcap(packets)[0], frames


def _renumber(ip: bytes, ident: int) -> bytes:
    h = bytearray(ip)
    struct.pack_into(">H", h, 4, ident & 0xFFFF)
    return bytes(h)


def unknown_link_capture(packets: int, linktype: int = 105) -> bytes:
    """A pcap of ``packets`` records of a link type kafkadump cannot read (802.11 by default)."""
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype))
    for i in range(packets):
        data = bytes(40) + b"kafka?" * 10
        out += struct.pack("<IIII", 1_700_000_000 + i, 0, len(data), len(data)) + data
    return bytes(out)


def bogus_prefix_capture(tail_frames: int) -> tuple[bytes, int]:
    """A client direction starting with a size prefix just under 1 GiB (and a few bytes), then
    ``tail_frames`` ApiVersions requests: they must be found again, not swallowed."""
    c = cb.Conversation()
    stream = struct.pack(">i", (1 << 30) - 8) + b"\x00" * 8
    for i in range(tail_frames):
        stream += cb.apiversions_v3_request(corr=i + 1)
    c.send("c", stream, 1400)
    c.close()
    return cb.pcap([(t, ip) for t, ip, _ in c.packets])[0], tail_frames
