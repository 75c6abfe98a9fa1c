"""The compiled packet loop of the pcap reader (kafkadump/accel/pcapread.c) against the Python reader.

The Python reader is the reference: the compiled loop takes apart only intact records carrying an
unfragmented TCP segment over IPv4 and hands every other record back.  With the compiled loop on and
off, the reader must give the same packets (every field), the same counts (packets, skipped,
fragments, not read and why), the same findings and the same time span, and ``capture`` the same
table and JSON, on: the shared corpus, every link type and both byte orders and time units of a
classic pcap, packets that are not TCP over IPv4 (UDP, IPv6, fragments, cut headers), TCP out of
order, resent and lost, and files cut or damaged anywhere.  Counted, not timed: on plain traffic
no packet goes through the Python packet parser.
"""

from __future__ import annotations

import io
import platform
import random
import shutil
import struct
import subprocess
import sys
import sysconfig
from pathlib import Path

import capture_builders as cb
import pytest
from conftest import CORPUS

from kafkadump.accel import capture_loops
from kafkadump.reports.capture import CaptureRequest
from kafkadump.reports.capture import capture_report
from kafkadump.render import frame_views
from kafkadump.base.status import Tally
from kafkadump.sources import pcap

LOOP = capture_loops()
pytestmark = pytest.mark.skipif(LOOP is None, reason="the compiled capture loop is not built "
                                                     "(or KAFKADUMP_PURE_PYTHON is set): nothing to compare")

MAGICS = {("<", False): 0xA1B2C3D4, (">", False): 0xA1B2C3D4, ("<", True): 0xA1B23C4D, (">", True): 0xA1B23C4D}


def _reading(data: bytes, compiled: bool, monkeypatch: pytest.MonkeyPatch) -> tuple:
    """Everything the reader says about ``data``, with the compiled loop on or off."""
    monkeypatch.setattr(pcap, "_compiled_reader", (lambda: LOOP) if compiled else (lambda: None))
    try:
        span = pcap.CaptureReader(data, "x").time_span()
        r = pcap.CaptureReader(data, "x")
    except pcap.CaptureError as e:
        return ("not a capture", str(e))
    packets = [tuple(getattr(p, s) for s in pcap.Packet.__slots__) for p in r]
    return (span, packets, r.packets, r.skipped, r.fragments, sorted(r.linktypes), dict(r.not_read),
            r.first_not_read, [(f.code, f.offset, f.message, f.length) for f in r.findings])


def _outputs(path: Path, compiled: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """``capture`` (the table) and ``capture --json`` of ``path``, the compiled loop on or off."""
    monkeypatch.setattr(pcap, "_compiled_reader", (lambda: LOOP) if compiled else (lambda: None))
    table, js = io.StringIO(), io.StringIO()
    frame_views.write_frames_table(capture_report(str(path), CaptureRequest(), Tally(), time_span=True), table)
    frame_views.write_frames_json(capture_report(str(path), CaptureRequest(), Tally()), js)
    return table.getvalue(), js.getvalue()


def _same(data: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _reading(data, True, monkeypatch) == _reading(data, False, monkeypatch)


def classic(frames: list[tuple[float, bytes]], linktype: int = 1, bo: str = "<", nanos: bool = False) -> bytes:
    """A classic pcap of link-layer ``frames`` in either byte order and time unit."""
    out = bytearray(struct.pack(bo + "IHHiIII", MAGICS[bo, nanos], 2, 4, 0, 0, 262144, linktype))
    unit = 1e9 if nanos else 1e6
    for t, data in frames:
        sec = int(t)
        out += struct.pack(bo + "IIII", sec, int(round((t - sec) * unit)), len(data), len(data)) + data
    return bytes(out)


def _link(ip: bytes, linktype: int) -> bytes:
    """``ip`` behind the link header of ``linktype``."""
    if linktype == 1:
        return cb.ethernet(ip)
    if linktype == 0:   # BSD loopback: the address family, host order
        return struct.pack("<I", 2) + ip
    if linktype == 113:   # Linux cooked v1: the protocol last
        return b"\x00" * 14 + b"\x08\x00" + ip
    if linktype == 276:   # Linux cooked v2: the protocol first
        return b"\x08\x00" + b"\x00" * 18 + ip
    return ip   # raw IP (101, 228)


def _conversation_frames() -> list[tuple[float, bytes]]:
    """A Kafka conversation's IP packets (Metadata, Fetch with records), in order."""
    conv, _, _ = cb.kafka_conversation(cb.fetch_v12_request(9), segment=60)
    return [(t, ip) for t, ip, _ in conv.packets]


def _odd_packets() -> list[tuple[float, bytes]]:
    """Packets the compiled loop hands back: UDP, a fragment, IPv6, cut headers, a VLAN tag (read)."""
    tcp = cb.ipv4_tcp("10.0.0.1", "10.0.0.2", 50000, 9092, 77, 0, cb.ACK | cb.PSH, b"abc")
    udp = tcp[:9] + b"\x11" + tcp[10:]
    fragment = tcp[:6] + b"\x20\x00" + tcp[8:]
    v6 = (b"\x60\x00\x00\x00" + struct.pack(">HBB", 23, 6, 64) + b"\x00" * 15 + b"\x01" + b"\x00" * 15 + b"\x02"
          + tcp[20:])
    return [(1_700_000_000.5, udp), (1_700_000_000.6, fragment), (1_700_000_000.7, v6),
            (1_700_000_000.8, tcp[:30]), (1_700_000_000.9, tcp[:1]), (1_700_000_001.0, b""),
            (1_700_000_001.1, tcp[:5] + b"\x00" + tcp[6:]), (1_700_000_001.2, b"\x4f" + tcp[1:])]


@pytest.mark.parametrize("linktype", [0, 1, 101, 113, 228, 276, 147])
@pytest.mark.parametrize("bo, nanos", [("<", False), (">", False), ("<", True), (">", True)])
def test_every_link_type_byte_order_and_time_unit_is_read_the_same(linktype, bo, nanos, monkeypatch):
    frames = [(t, _link(ip, linktype)) for t, ip in _conversation_frames() + _odd_packets()]
    data = classic(frames, linktype, bo, nanos)
    _same(data, monkeypatch)
    got = _reading(data, True, monkeypatch)
    if linktype != 147:   # (a link type kafkadump cannot read: no packet)
        # the conversation, the TCP packet with another identification, and the one over IPv6 (read by Python)
        assert len(got[1]) == len(_conversation_frames()) + 2
        assert got[4] == 1 and len(got[6]) >= 3   # the fragment; packets not read, by reason


def test_vlan_tags_and_ethernet_oddities_are_read_the_same(monkeypatch):
    ip = cb.ipv4_tcp("10.0.0.1", "10.0.0.2", 50000, 9092, 5, 0, cb.ACK, b"xyz")
    frames = [(1.0e9, b"\x00" * 12 + b"\x81\x00\x00\x05\x08\x00" + ip),          # one VLAN tag
              (1.0e9, b"\x00" * 12 + b"\x88\xa8\x00\x05\x81\x00\x00\x06\x08\x00" + ip),  # two
              (1.0e9, b"\x00" * 12 + b"\x08\x06" + ip),                          # ARP: not IP
              (1.0e9, b"\x00" * 12 + b"\x81\x00"),                                # cut in the tag
              (1.0e9, b"\x00" * 12 + b"\x86\xdd" + ip)]                           # IPv6 type, IPv4 bytes
    _same(classic(frames), monkeypatch)


def test_tcp_out_of_order_resent_and_lost_is_the_same_table_and_json(tmp_path, monkeypatch):
    frames = _conversation_frames()
    rng = random.Random(5)
    for trial in range(6):
        shuffled = list(frames)
        i = rng.randrange(3, len(shuffled) - 2)
        if trial % 3 == 0:
            shuffled[i], shuffled[i + 1] = shuffled[i + 1], shuffled[i]    # out of order
        elif trial % 3 == 1:
            shuffled.insert(i, shuffled[i + 1])                           # resent
        else:
            del shuffled[i]                                               # lost
        p = tmp_path / f"tcp-{trial}.pcap"
        p.write_bytes(classic([(t, cb.ethernet(ip)) for t, ip in shuffled]))
        assert _outputs(p, True, monkeypatch) == _outputs(p, False, monkeypatch)


@pytest.mark.parametrize("seed", range(4))
def test_cut_and_damaged_files_are_read_the_same(seed, monkeypatch):
    data = classic([(t, cb.ethernet(ip)) for t, ip in _conversation_frames() + _odd_packets()])
    rng = random.Random(seed)
    for _ in range(40):
        b = bytearray(data[:rng.randrange(20, len(data) + 1)])
        for _ in range(rng.randrange(0, 4)):   # bytes of record headers, link, IP and TCP headers
            j = rng.randrange(24, len(b)) if len(b) > 24 else 0
            if j < len(b):
                b[j] = rng.choice((0, 0xFF, 0x45, 0x06, rng.randrange(256)))
        _same(bytes(b), monkeypatch)


def test_a_record_too_long_or_past_the_end_stops_both_alike(monkeypatch):
    data = bytearray(classic([(t, cb.ethernet(ip)) for t, ip in _conversation_frames()]))
    second = 24 + 16 + struct.unpack_from("<I", data, 24 + 8)[0]
    for incl in (1 << 29, len(data)):
        damaged = bytearray(data)
        struct.pack_into("<I", damaged, second + 8, incl)
        _same(bytes(damaged), monkeypatch)
        assert [f[0].value for f in _reading(bytes(damaged), True, monkeypatch)[-1]] == ["capture-malformed"]


def test_mapped_pages_go_back_at_the_same_points(tmp_path, monkeypatch):
    monkeypatch.setattr(pcap, "RELEASE_STEP", 300)
    data = classic([(t, cb.ethernet(ip)) for t, ip in _conversation_frames() + _odd_packets()])
    released = {}
    for compiled in (True, False):
        monkeypatch.setattr(pcap, "_compiled_reader", (lambda: LOOP) if compiled else (lambda: None))
        calls: list[int] = []
        monkeypatch.setattr(pcap, "page_releaser", lambda buf, calls=calls: calls.append)
        packets = [p.number for p in pcap.CaptureReader(data, "x")]
        released[compiled] = (calls, packets)
    assert released[True] == released[False] and len(released[True][0]) > 3


def test_plain_packets_never_reach_the_python_parser(tmp_path, monkeypatch):
    parsed = []
    real = pcap.packet_from_bytes
    monkeypatch.setattr(pcap, "packet_from_bytes", lambda *a, **k: parsed.append(1) or real(*a, **k))
    frames = _conversation_frames()
    packets = list(pcap.CaptureReader(classic([(t, cb.ethernet(ip)) for t, ip in frames]), "x"))
    assert len(packets) == len(frames) and parsed == []


def _corpus_captures() -> list[Path]:
    return sorted(p for p in CORPUS.rglob("*.pcap*")) if CORPUS.exists() else []


@pytest.mark.parametrize("path", _corpus_captures(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_is_read_the_same(path, monkeypatch):
    _same(path.read_bytes(), monkeypatch)


def test_packet_times_round_as_python_does(monkeypatch):
    """seconds + fraction * unit rounded twice, as Python does (a fused multiply-add rounds once:
    1 s + 369140570 ns then reads 1.3691405700000001 where Python says 1.36914057)."""
    frame = _link(_conversation_frames()[0][1], 1)
    data = bytearray(classic([(1.0, frame)], 1, "<", True))
    struct.pack_into("<I", data, 24 + 4, 369140570)
    got = _reading(bytes(data), True, monkeypatch)
    assert got[0][0] == got[1][0][list(pcap.Packet.__slots__).index("time")] == 1 + 369140570 * 1e-9
    _same(bytes(data), monkeypatch)


_FUSED_TIMES = r"""
import sys
sys.path.insert(0, sys.argv[1])
import pcapread
print(repr(pcapread.pcap_times(bytes.fromhex(sys.argv[2]), False, True)[0]))
"""


def test_packet_times_round_as_python_does_when_the_compiler_fuses(tmp_path):
    """pcapread.c built with fused multiply-add allowed (-mfma: what aarch64 builds do by default) still
    rounds a packet's time as Python does."""
    cc = shutil.which("cc") or shutil.which("gcc")
    cpu = Path("/proc/cpuinfo")
    if cc is None or platform.machine() != "x86_64" or not cpu.exists() or " fma " not in cpu.read_text():
        pytest.skip("needs a C compiler and an x86-64 CPU with FMA")
    source = Path(pcap.__file__).resolve().parent.parent / "accel" / "pcapread.c"
    built = tmp_path / ("pcapread" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run([cc, "-O2", "-mfma", "-fPIC", "-shared", "-I", sysconfig.get_paths()["include"], str(source),
                    "-o", str(built)], check=True, capture_output=True)
    data = bytearray(classic([(1.0, b"")], 1, "<", True))
    struct.pack_into("<I", data, 24 + 4, 369140570)
    out = subprocess.run([sys.executable, "-c", _FUSED_TIMES, str(tmp_path), bytes(data).hex()],
                         check=True, capture_output=True, text=True).stdout
    assert float(out) == 1 + 369140570 * 1e-9 == 1.36914057
