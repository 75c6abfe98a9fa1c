"""Silence about what was not read: IPv4 fragments are reassembled, TSO super-packets read, every
packet not read is counted by reason (``packets-not-read``), a huge size prefix does not swallow
the rest of its direction, and the mapped pages of a large capture are handed back."""

from __future__ import annotations

import struct

import capture_builders as cb
import capture_scaled as cs
import pytest
from measured import RSS_LIMIT_MB, findings_of, json_lines, kd

from kafkadump.sources import pcap as P

MUTATION_CODES = {"packets-not-read"}


def frames(docs) -> list[dict]:
    return [d for d in docs if d["type"] == "frame"]


def test_fragments_are_reassembled(tmp_path):
    c, _, _ = cs.conversation()
    (tmp_path / "whole").mkdir()
    (tmp_path / "cut").mkdir()
    (tmp_path / "whole" / "x.pcap").write_bytes(cb.pcap([(t, ip) for t, ip, _ in c.packets])[0])
    (tmp_path / "cut" / "x.pcap").write_bytes(
        cb.pcap([(t, f) for t, ip, _ in c.packets for f in cs.fragments(ip, 64)])[0])
    rc_w, out_w, _, _ = kd("capture", "--json", "x.pcap", cwd=tmp_path / "whole")
    rc_c, out_c, err, _ = kd("capture", "--json", "x.pcap", cwd=tmp_path / "cut")
    assert rc_c == rc_w == 0, err
    view = [{k: v for k, v in f.items() if k not in ("packets", "position")} for f in frames(json_lines(out_c))]
    assert view == [{k: v for k, v in f.items() if k not in ("packets", "position")}
                    for f in frames(json_lines(out_w))]
    assert len(view) == 4


def test_a_lost_fragment_is_counted_not_silent(tmp_path):
    data, expected = cs.fragmented_capture(2, whole=1)
    p = tmp_path / "f.pcap"
    p.write_bytes(data)
    rc, out, err, _ = kd("capture", "--json", str(p))
    docs = json_lines(out)
    assert rc == 1, err
    assert len(frames(docs)) == expected
    nr = [f for f in findings_of(docs) if f["code"] == "packets-not-read"]
    assert len(nr) == 1 and nr[0]["severity"] == "warning"
    held = len(cs.fragments(b"\x45" + bytes(19) + bytes(171), 64)) - 1  # the fetch response's last packet
    assert nr[0]["message"].startswith(f"{held} packets not read: IPv4 fragments of a datagram never completed")


def test_unreadable_link_type_is_counted(tmp_path):
    p = tmp_path / "wifi.pcap"
    p.write_bytes(cs.unknown_link_capture(7, linktype=105))
    rc, out, err, _ = kd("capture", "--json", str(p))
    nr = [f for f in findings_of(json_lines(out)) if f["code"] == "packets-not-read"]
    assert rc == 1, err
    assert len(nr) == 1 and nr[0]["offset"] == 24
    assert nr[0]["message"] == "7 packets not read: link type 105, which kafkadump cannot read (the first is packet 1)"


def test_non_tcp_packets_are_not_reported(tmp_path):
    c, _, _ = cs.conversation()
    udp = bytearray(cb.ipv4_tcp("10.0.0.9", "10.0.0.8", 53, 53, 0, 0, 0))
    udp[9] = 17
    arp = b"\x00" * 12 + b"\x08\x06" + bytes(28)
    pk = [(t, ip) for t, ip, _ in c.packets] + [(2e9, bytes(udp))]
    data = bytearray(cb.pcap(pk)[0])
    data += struct.pack("<IIII", 2_000_000_001, 0, len(arp), len(arp)) + arp
    p = tmp_path / "mixed.pcap"
    p.write_bytes(bytes(data))
    rc, out, err, _ = kd("capture", "--json", str(p))
    assert rc == 0, err
    assert not [f for f in findings_of(json_lines(out)) if f["code"] == "packets-not-read"]


def test_tso_super_packets_are_read(tmp_path):
    c, _, _ = cs.conversation()
    p = tmp_path / "tso.pcap"
    p.write_bytes(cb.pcap([(t, cs.tso(ip)) for t, ip, _ in c.packets])[0])
    rc, out, err, _ = kd("capture", "--json", str(p))
    assert rc == 0, err
    assert [f["apiName"] for f in frames(json_lines(out))] == ["Metadata", "Metadata", "Fetch", "Fetch"]


def test_parse_ip_reads_total_length_zero():
    ip = cb.ipv4_tcp("10.0.0.1", "10.0.0.2", 1, 2, 0, 0, 0x18, b"x" * 100)
    src, dst, tcp, end, frag = P.parse_ip(cs.tso(ip), 0)
    assert (src, dst, tcp, end, frag) == ("10.0.0.1", "10.0.0.2", 20, len(ip), False)


def test_a_huge_size_prefix_does_not_swallow_the_direction(tmp_path):
    data, n = cs.bogus_prefix_capture(20)
    p = tmp_path / "bogus.pcap"
    p.write_bytes(data)
    rc, out, err, rss = kd("capture", "--json", str(p))
    docs = json_lines(out)
    assert rc == 1, err
    assert [f["apiName"] for f in frames(docs)] == ["ApiVersions"] * n
    fs = [f for f in findings_of(docs) if f["code"] == "frame-size-invalid"]
    assert fs and fs[0]["offset"] == 0 and "size prefix 1073741816" in fs[0]["message"]


def test_fragment_state_is_bounded():
    """Many datagrams whose last fragment never comes: bounded bytes held, all counted."""
    unread = []
    d = P._Datagrams(lambda reason, pos, number, count=1: unread.append((reason, count)))
    ip = cb.ipv4_tcp("10.0.0.1", "10.0.0.2", 1, 2, 0, 0, 0x18, b"y" * 1000)
    n = P.MAX_DATAGRAMS * 2
    for k in range(n):
        first = cs.fragments(cs._renumber(ip, k), 512)[0]
        assert d.add(first, 0, k, k + 1) is None
        assert len(d.open) <= P.MAX_DATAGRAMS and d.held <= P.MAX_FRAGMENT_BYTES
    d.finish()
    assert sum(c for _, c in unread) == n


@pytest.mark.parametrize("scale", [1, 2])
def test_fragmented_capture_scales(tmp_path, scale, monkeypatch):
    """Work (packets read, frames out) doubles with the input; memory stays bounded."""
    data, expected = cs.fragmented_capture(150 * scale, whole=10 * scale)
    p = tmp_path / "many.pcap"
    p.write_bytes(data)
    rc, out, err, rss = kd("capture", "--json", str(p))
    docs = json_lines(out)
    assert len(frames(docs)) == expected
    summary = docs[-1]
    assert summary["type"] == "summary"
    assert rss < RSS_LIMIT_MB


def test_a_large_capture_hands_its_pages_back(tmp_path):
    """A 300 MB pcap of TSO super-packets on a port that is not Kafka: peak RSS far below the file size."""
    payload = b"z" * 60000
    head = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 101)
    p = tmp_path / "big.pcap"
    n = 5000
    with open(p, "wb") as f:
        f.write(head)
        for i in range(n):
            ip = cs.tso(cb.ipv4_tcp("10.0.0.1", "10.0.0.2", 40000, 80, 1 + i * len(payload), 0, 0x18, payload))
            f.write(struct.pack("<IIII", 1_700_000_000, i, len(ip), len(ip)) + ip)
    assert p.stat().st_size > 300_000_000
    rc, out, err, rss = kd("capture", "--json", str(p))
    assert rc == 0, err
    assert json_lines(out)[-1]["packets"] == n
    assert rss < RSS_LIMIT_MB
