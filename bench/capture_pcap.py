"""A generated pcap of Kafka traffic for the capture benchmark: Produce and Fetch with records.

Frames are written with ``struct`` from the protocol's layouts and record batches by kafka-python's
``DefaultRecordBatchBuilder`` (an independent encoder), never by kafkadump.  Each connection is a
client on 10.0.0.N talking to a broker on 10.0.0.254:9092: per round a Produce v3 request (one batch)
and its response, a Fetch v12 request and its response (one batch), and every tenth round a
Metadata v1 request and response.  TCP segments carry at most ``mss`` bytes.

    write_pcap(path, size_bytes, records_per_batch=20, value_bytes=100, connections=4)
"""

from __future__ import annotations

import json
import os
import random
import struct

from kafka.record.default_records import DefaultRecordBatchBuilder

I16 = struct.Struct(">h").pack
I32 = struct.Struct(">i").pack
I64 = struct.Struct(">q").pack


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def string(s: str) -> bytes:
    b = s.encode()
    return I16(len(b)) + b


def compact_string(s: str) -> bytes:
    b = s.encode()
    return uvarint(len(b) + 1) + b


def frame(body: bytes) -> bytes:
    return I32(len(body)) + body


def req_header(key: int, version: int, corr: int, client: str, flexible: bool = False) -> bytes:
    return I16(key) + I16(version) + I32(corr) + string(client) + (b"\x00" if flexible else b"")


def batch(base_offset: int, records: int, value_bytes: int, rng: random.Random) -> bytes:
    """One uncompressed v2 batch of ``records`` records, each a 10-byte key, a value and one header."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for i in range(records):
        value = bytes(rng.getrandbits(8) for _ in range(value_bytes))
        b.append(i, timestamp=1_700_000_000_000 + base_offset + i, key=b"key-%06d" % ((base_offset + i) % 10 ** 6),
                 value=value, headers=[("h", b"v1")])
    data = bytearray(b.build())
    data[0:8] = I64(base_offset)  # outside the CRC
    return bytes(data)


def produce_request(corr: int, records: bytes, topic: str, partition: int) -> bytes:
    body = (I16(-1) + I16(-1) + I32(1000)            # transactional id null, acks, timeout
            + I32(1) + string(topic) + I32(1) + I32(partition) + I32(len(records)) + records)
    return frame(req_header(0, 3, corr, "bench-producer") + body)


def produce_response(corr: int, topic: str, partition: int, offset: int) -> bytes:
    body = I32(1) + string(topic) + I32(1) + I32(partition) + I16(0) + I64(offset) + I64(-1) + I32(0)
    return frame(I32(corr) + body)


def fetch_request(corr: int, topic: str, partition: int, offset: int) -> bytes:
    body = (I32(-1) + I32(500) + I32(1) + I32(1 << 20) + b"\x00" + I32(0) + I32(-1)
            + uvarint(2) + compact_string(topic) + uvarint(2)
            + I32(partition) + I32(-1) + I64(offset) + I32(-1) + I64(-1) + I32(1 << 20) + b"\x00"
            + b"\x00" + uvarint(1) + compact_string("") + b"\x00")
    return frame(req_header(1, 12, corr, "bench-consumer", flexible=True) + body)


def fetch_response(corr: int, topic: str, partition: int, records: bytes, hw: int) -> bytes:
    part = (I32(partition) + I16(0) + I64(hw) + I64(hw) + I64(0) + uvarint(1) + I32(-1)
            + uvarint(len(records) + 1) + records + b"\x00")
    body = (I32(0) + I16(0) + I32(0) + uvarint(2) + compact_string(topic) + uvarint(2) + part + b"\x00" + b"\x00")
    return frame(I32(corr) + b"\x00" + body)


def metadata_request(corr: int, topic: str) -> bytes:
    return frame(req_header(3, 1, corr, "bench-producer") + I32(1) + string(topic))


def metadata_response(corr: int, topic: str, partitions: int = 3) -> bytes:
    brokers = I32(1) + I32(1) + string("broker-1") + I32(9092) + I16(-1)
    parts = I32(partitions) + b"".join(I16(0) + I32(i) + I32(1) + I32(1) + I32(1) + I32(1) + I32(1)
                                       for i in range(partitions))
    return frame(I32(corr) + brokers + I32(1) + I32(1) + I16(0) + string(topic) + b"\x00" + parts)


def _csum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    s = sum(struct.unpack(f">{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _packet(src: tuple[bytes, int], dst: tuple[bytes, int], seq: int, ack: int, flags: int, payload: bytes) -> bytes:
    tcp = struct.pack(">HHIIBBHHH", src[1], dst[1], seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 1, 0x4000, 64, 6, 0, src[0], dst[0])
    ip = ip[:10] + struct.pack(">H", _csum(ip)) + ip[12:]
    return b"\x00" * 12 + b"\x08\x00" + ip + tcp + payload


class _Writer:
    def __init__(self, f) -> None:
        self.f = f
        self.t = 1_700_000_000.0
        self.size = 24
        self.packets = 0
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))

    def write(self, data: bytes) -> None:
        self.t += 0.0001
        sec = int(self.t)
        self.f.write(struct.pack("<IIII", sec, int((self.t - sec) * 1e6), len(data), len(data)) + data)
        self.size += 16 + len(data)
        self.packets += 1


class _Connection:
    SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01

    def __init__(self, w: _Writer, n: int, mss: int) -> None:
        self.w = w
        self.mss = mss
        self.ends = {"c": (bytes([10, 0, 0, n + 1]), 40000 + n), "s": (bytes([10, 0, 0, 254]), 9092)}
        self.seq = {"c": 1000, "s": 5000}
        self._send("c", self.SYN, b"")
        self.seq["c"] += 1
        self._send("s", self.SYN | self.ACK, b"")
        self.seq["s"] += 1
        self._send("c", self.ACK, b"")

    def _send(self, side: str, flags: int, payload: bytes) -> None:
        other = "s" if side == "c" else "c"
        ack = self.seq[other] if flags & self.ACK else 0
        self.w.write(_packet(self.ends[side], self.ends[other], self.seq[side], ack, flags, payload))

    def send(self, side: str, data: bytes) -> None:
        for i in range(0, len(data), self.mss):
            chunk = data[i:i + self.mss]
            self._send(side, self.ACK | self.PSH, chunk)
            self.seq[side] += len(chunk)

    def close(self) -> None:
        self._send("c", self.FIN | self.ACK, b"")
        self.seq["c"] += 1
        self._send("s", self.FIN | self.ACK, b"")
        self.seq["s"] += 1
        self._send("c", self.ACK, b"")


def write_pcap(path: str, size: int, records_per_batch: int = 20, value_bytes: int = 100, connections: int = 4,
               mss: int = 1448, seed: int = 13) -> dict:
    """Write the pcap (at least ``size`` bytes); returns its parameters and counts (also written to PATH.json)."""
    rng = random.Random(seed)
    batches = [batch(0, records_per_batch, value_bytes, rng) for _ in range(8)]
    frames = records = 0
    with open(path, "wb") as f:
        w = _Writer(f)
        conns = [_Connection(w, n, mss) for n in range(connections)]
        rnd = 0
        while w.size < size:
            for n, c in enumerate(conns):
                topic, part = f"topic-{n}", rnd % 3
                corr = rnd * 3
                off = rnd * records_per_batch
                b = bytearray(batches[rnd % len(batches)])
                b[0:8] = I64(off)
                b = bytes(b)
                if rnd % 10 == 0:
                    c.send("c", metadata_request(corr + 2, topic))
                    c.send("s", metadata_response(corr + 2, topic))
                    frames += 2
                c.send("c", produce_request(corr, b, topic, part))
                c.send("s", produce_response(corr, topic, part, off))
                c.send("c", fetch_request(corr + 1, topic, part, off))
                c.send("s", fetch_response(corr + 1, topic, part, b, off + records_per_batch))
                frames += 4
                records += 2 * records_per_batch
            rnd += 1
        for c in conns:
            c.close()
    info = {"size": os.path.getsize(path), "packets": w.packets, "frames": frames, "records": records,
            "records_per_batch": records_per_batch, "value_bytes": value_bytes, "connections": connections,
            "mss": mss, "seed": seed, "requested": size}
    with open(path + ".json", "w") as f:
        json.dump(info, f)
    return info
