"""Small independent writers for wire-protocol tests: frames, TCP/IP packets, pcap and pcapng files.

Frames are assembled by hand from the protocol's primitive encoders (or by
kafka-python's encoders, an independent implementation); packets and
capture files by ``struct`` from the formats' own layouts, never with the
code under test.  Every builder returns the offsets a test needs to state
where a finding must be.
"""

from __future__ import annotations

import struct

from primitive_encoders import (
    encode_compact_string,
    encode_int16,
    encode_int32,
    encode_int64,
    encode_nullable_string,
    encode_string,
    encode_unsigned_varint,
)

I16, I32, I64 = encode_int16, encode_int32, encode_int64
UV = encode_unsigned_varint


def frame(body: bytes) -> bytes:
    """Size prefix + bytes."""
    return I32(len(body)) + body


def req_header(key: int, version: int, corr: int, client: str | None = "t", hv: int = 1, tags: bytes = b"\x00"):
    """Request header v0/v1/v2 (v2: client id stays a non-compact nullable string, then tagged fields)."""
    h = I16(key) + I16(version) + I32(corr)
    if hv >= 1:
        h += encode_nullable_string(client)
    if hv >= 2:
        h += tags
    return h


def tagged(fields: list) -> bytes:
    """A tagged-field section from ``[(tag, data), ...]`` in the given order (no sorting: tests break the rules)."""
    out = UV(len(fields))
    for tag, data in fields:
        out += UV(tag) + UV(len(data)) + data
    return out


def apiversions_v3_request(corr=1, client="kd", name="kafkadump", version="1.0", header_tags=b"\x00"):
    body = encode_compact_string(name) + encode_compact_string(version) + b"\x00"
    return frame(req_header(18, 3, corr, client, hv=2, tags=header_tags) + body)


def apiversions_v0_response(corr=1, apis=((0, 0, 9), (1, 0, 13), (18, 0, 3)), error=0):
    body = I16(error) + I32(len(apis)) + b"".join(I16(k) + I16(lo) + I16(hi) for k, lo, hi in apis)
    return frame(I32(corr) + body)


def metadata_v1_request(corr=1, topics=("orders",), client="t"):
    body = I32(len(topics)) + b"".join(encode_string(t) for t in topics)
    return frame(req_header(3, 1, corr, client) + body)


def fetch_v12_response(corr, partitions, header_tags=b"\x00"):
    """FetchResponse v12 (flexible): one topic "t"; ``partitions`` = [(index, records_bytes, tags_section)]."""
    parts = b""
    for idx, records, tags in partitions:
        parts += (I32(idx) + I16(0) + I64(10) + I64(10) + I64(0)      # index, error, hw, lso, log start
                  + UV(1)                                               # aborted transactions: empty compact array
                  + I32(-1)                                             # preferred read replica
                  + (b"\x00" if records is None else UV(len(records) + 1) + records)
                  + tags)
    body = (I32(0) + I16(0) + I32(0)                                     # throttle, error, session
            + UV(2) + encode_compact_string("t") + UV(len(partitions) + 1) + parts + b"\x00"  # topic + its tags
            + b"\x00")                                                   # top-level tags
    return frame(I32(corr) + header_tags + body)


def fetch_v12_request(corr, client="t"):
    body = (I32(-1) + I32(500) + I32(1) + I32(1 << 20) + b"\x00" + I32(0) + I32(-1)  # replica..sessionEpoch
            + UV(2) + encode_compact_string("t") + UV(2)                     # topics: t, one partition
            + I32(0) + I32(-1) + I64(0) + I32(-1) + I64(-1) + I32(1 << 20) + b"\x00"  # partition fields + tags
            + b"\x00"                                                        # topic tags
            + UV(1)                                                          # forgotten topics: empty
            + encode_compact_string("")                                      # rack id
            + b"\x00")
    return frame(req_header(1, 12, corr, client, hv=2) + body)


def produce_v3_request(corr, batch: bytes, topic: str = "t", partition: int = 0, client="t"):
    """ProduceRequest v3: transactional id (null), acks, timeout, one topic with one partition's records."""
    body = (encode_nullable_string(None) + I16(-1) + I32(1000)
            + I32(1) + encode_string(topic) + I32(1) + I32(partition) + I32(len(batch)) + batch)
    return frame(req_header(0, 3, corr, client) + body)


# --- packets -----------------------------------------------------------------------------------

def _csum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    s = sum(struct.unpack(f">{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4_tcp(src: str, dst: str, sport: int, dport: int, seq: int, ack: int, flags: int, payload: bytes = b"") -> bytes:
    """An IPv4 packet carrying one TCP segment (TCP checksum left 0, as offloading leaves it)."""
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
    total = 20 + len(tcp) + len(payload)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, total, 1, 0x4000, 64, 6, 0,
                     bytes(int(x) for x in src.split(".")), bytes(int(x) for x in dst.split(".")))
    ip = ip[:10] + struct.pack(">H", _csum(ip)) + ip[12:]
    return ip + tcp + payload


def ethernet(ip_packet: bytes) -> bytes:
    return b"\x00" * 12 + b"\x08\x00" + ip_packet


SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01


class Conversation:
    """A TCP connection written packet by packet; remembers each data packet's stream offset."""

    def __init__(self, client=("10.0.0.1", 50000), server=("10.0.0.2", 9092), isn_c=1000, isn_s=5000, t0=1_700_000_000.0):
        self.client = client
        self.server = server
        self.seq = {"c": isn_c + 1, "s": isn_s + 1}
        self.start = dict(self.seq)
        self.packets: list = []        # (time, ip packet bytes, info dict)
        self.t = t0
        self._add("c", isn_c, 0, SYN, b"")
        self._add("s", isn_s, isn_c + 1, SYN | ACK, b"")
        self._add("c", isn_c + 1, isn_s + 1, ACK, b"")

    def _add(self, side, seq, ack, flags, payload):
        a, b = (self.client, self.server) if side == "c" else (self.server, self.client)
        self.t += 0.001
        pkt = ipv4_tcp(a[0], b[0], a[1], b[1], seq, ack, flags, payload)
        offset = (seq - self.start[side]) & 0xFFFFFFFF
        self.packets.append((self.t, pkt, {"side": side, "offset": offset, "len": len(payload), "seq": seq}))
        return len(self.packets) - 1

    def send(self, side: str, data: bytes, segment: int = 1400) -> list:
        """Data from ``side`` ("c" or "s"), cut into segments; returns the packets' indexes."""
        out = []
        other = "s" if side == "c" else "c"
        for i in range(0, len(data), segment):
            chunk = data[i:i + segment]
            out.append(self._add(side, self.seq[side], self.seq[other], ACK | PSH, chunk))
            self.seq[side] += len(chunk)
        return out

    def close(self):
        self._add("c", self.seq["c"], self.seq["s"], FIN | ACK, b"")
        self._add("s", self.seq["s"], self.seq["c"] + 1, FIN | ACK, b"")
        self._add("c", self.seq["c"] + 1, self.seq["s"] + 1, ACK, b"")


def pcap(packets, link: str = "ethernet") -> tuple[bytes, list]:
    """A classic pcap (microseconds, little-endian); ``packets`` = [(time, ip_packet)].

    Returns the file and each record's file offset.
    """
    linktype = {"ethernet": 1, "raw": 101}[link]
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype))
    offsets = []
    for t, ip in packets:
        data = ethernet(ip) if link == "ethernet" else ip
        offsets.append(len(out))
        sec = int(t)
        out += struct.pack("<IIII", sec, int(round((t - sec) * 1e6)), len(data), len(data)) + data
    return bytes(out), offsets


def pcapng(packets, big_endian: bool = False) -> tuple[bytes, list]:
    """A pcapng file: section header, one Ethernet interface (microseconds), enhanced packet blocks."""
    bo = ">" if big_endian else "<"

    def block(btype, body):
        pad = (-len(body)) % 4
        total = 12 + len(body) + pad
        return struct.pack(bo + "II", btype, total) + body + b"\x00" * pad + struct.pack(bo + "I", total)

    out = bytearray(block(0x0A0D0D0A, struct.pack(bo + "IHHq", 0x1A2B3C4D, 1, 0, -1)))
    out += block(1, struct.pack(bo + "HHI", 1, 0, 262144))
    offsets = []
    for t, ip in packets:
        data = ethernet(ip)
        us = int(round(t * 1e6))
        offsets.append(len(out))
        out += block(6, struct.pack(bo + "IIIII", 0, us >> 32, us & 0xFFFFFFFF, len(data), len(data)) + data)
    return bytes(out), offsets


def metadata_v1_response(corr=1, topic="orders", partitions=1):
    """MetadataResponse v1: one broker, one topic."""
    from primitive_encoders import encode_boolean

    brokers = I32(1) + I32(1) + encode_string("localhost") + I32(9092) + encode_nullable_string(None)
    parts = I32(partitions) + b"".join(I16(0) + I32(i) + I32(1) + I32(1) + I32(1) + I32(1) + I32(1)
                                       for i in range(partitions))
    topics = I32(1) + I16(0) + encode_string(topic) + encode_boolean(False) + parts
    return frame(I32(corr) + brokers + I32(1) + topics)


def kafka_conversation(batch: bytes, segment: int = 100):
    """A small Kafka exchange over one TCP connection: Metadata v1 and Fetch v12, request then response.

    Returns ``(Conversation, {name: [packet indexes]}, {name: frame bytes})``.
    """
    c = Conversation()
    frames = {
        "metadata_req": metadata_v1_request(corr=1),
        "metadata_resp": metadata_v1_response(corr=1),
        "fetch_req": fetch_v12_request(corr=2),
        "fetch_resp": fetch_v12_response(2, [(0, batch, b"\x00")]),
    }
    idx = {}
    idx["metadata_req"] = c.send("c", frames["metadata_req"], segment)
    idx["metadata_resp"] = c.send("s", frames["metadata_resp"], segment)
    idx["fetch_req"] = c.send("c", frames["fetch_req"], segment)
    idx["fetch_resp"] = c.send("s", frames["fetch_resp"], segment)
    c.close()
    return c, idx, frames


def records_conversation(rounds: int, batch_of, *, corr_step: int, mss: int, partitions: int = 1,
                         api_versions: bool = False) -> bytes:
    """A pcap's bytes: Metadata v1, Produce v3 and Fetch v12 carrying ``batch_of(i)`` over TCP,
    ``rounds`` times (each round opened by ApiVersions v3 with ``api_versions``)."""
    c = Conversation()
    for i in range(rounds):
        batch = batch_of(i)
        corr = corr_step * i
        if api_versions:
            c.send("c", apiversions_v3_request(corr=corr), mss)
        c.send("c", metadata_v1_request(corr=corr + 1), mss)
        c.send("s", metadata_v1_response(corr=corr + 1, partitions=partitions), mss)
        c.send("c", produce_v3_request(corr + 2, batch), mss)
        c.send("c", fetch_v12_request(corr + 3), mss)
        c.send("s", fetch_v12_response(corr + 3, [(0, batch, b"\x00"), (1, batch, b"\x00")]), mss)
    c.close()
    return pcap([(t, ip) for t, ip, _ in c.packets])[0]
