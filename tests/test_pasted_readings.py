"""Pasted hex that reads two ways: the reading that fits exactly wins, in every hex form.

Real frames come from the shared corpus's pcaps (read here by a minimal pcap/IPv4/TCP reader written
from the formats' layouts, not by kafkadump):

* a Produce v7 *response* of kafka-python's session (61 bytes, correlation id 2), which also reads as
  a Produce v2 *request* with bytes left after its body: the response must win;
* a Metadata v0 *request* of kafka-python (44 bytes), which also reads exactly as an
  OffsetForLeaderEpoch v0 response: kept as the request, and the output says both fit;
* a Fetch v11 request (696 bytes) whose topic list holds, 39 bytes in, a "Produce v1
  request" that fits with warnings: pasted as tcpdump -X/-XX text of several packets with no SYN, it
  must stay one frame.

The hex forms are rendered here from their documented layouts (plain, spaced, xxd, hexdump -C,
tcpdump -X/-XX).
"""

from __future__ import annotations

import json
import struct

import capture_builders as B
import pytest
from conftest import need_corpus
from typer.testing import CliRunner

from kafkadump.cli import app

MUTATION_CODES = {"frame-ambiguous"}


# --- a minimal pcap reader (the formats' layouts) ---------------------------------------------------

def _tcp_payloads(path):
    """{(src port, dst port): {seq: payload}} of a classic pcap's IPv4 TCP segments."""
    b = path.read_bytes()
    e = "<" if struct.unpack("<I", b[:4])[0] in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    link = struct.unpack(e + "I", b[20:24])[0]
    skip = {1: 14, 113: 16, 276: 20}.get(link, 0)
    p, out = 24, {}
    while p + 16 <= len(b):
        incl = struct.unpack(e + "I", b[p + 8:p + 12])[0]
        ip = b[p + 16 + skip:p + 16 + incl]
        p += 16 + incl
        if not ip or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        tcp = ip[(ip[0] & 15) * 4:struct.unpack(">H", ip[2:4])[0]]
        sport, dport, seq = struct.unpack(">HHI", tcp[:8])
        payload = tcp[(tcp[12] >> 4) * 4:]
        if payload:
            out.setdefault((sport, dport), {})[seq] = payload
    return out


def _stream(path, sport, dport):
    segs = _tcp_payloads(path)[(sport, dport)]
    first = min(segs)
    buf = bytearray()
    for seq in sorted(segs):
        d, o = segs[seq], seq - first
        if o + len(d) > len(buf):
            buf[o:] = d[len(buf) - o:] if o < len(buf) else d
    return bytes(buf)


def real_frame(pcap, sport, dport, position):
    s = _stream(need_corpus("clients/wire") / pcap, sport, dport)
    size = struct.unpack(">i", s[position:position + 4])[0]
    return s[position:position + 4 + size]


def produce_v7_response():
    f = real_frame("kafkapython_codecs.pcap", 37327, 55802, 162)
    assert len(f) == 61 and struct.unpack(">i", f[4:8])[0] == 2
    return f


def metadata_v0_request():
    f = real_frame("kafkapython_legacy.pcap", 36018, 36717, 0)
    assert struct.unpack(">hhi", f[4:12]) == (3, 0, 1)
    return f


def fetch_v11_request():
    f = real_frame("kafkapython_codecs.pcap", 55866, 37327, 465)
    assert len(f) == 696 and struct.unpack(">hh", f[4:8]) == (1, 11)
    return f


# --- hex forms ----------------------------------------------------------------------------------------

def _ascii(chunk):
    return "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)


def plain(data):
    return data.hex() + "\n"


def spaced(data):
    return "".join(data[i:i + 16].hex(" ") + "\n" for i in range(0, len(data), 16))


def xxd(data):
    rows = []
    for off in range(0, len(data), 16):
        c = data[off:off + 16]
        groups = " ".join(c[i:i + 2].hex() for i in range(0, len(c), 2))
        rows.append(f"{off:08x}: {groups:<39}  {_ascii(c)}\n")
    return "".join(rows)


def hexdump_c(data):
    rows = []
    for off in range(0, len(data), 16):
        c = data[off:off + 16]
        left, right = c[:8].hex(" "), c[8:].hex(" ")
        rows.append(f"{off:08x}  {left:<23}  {right:<23}  |{_ascii(c)}|\n")
    return "".join(rows) + f"{len(data):08x}\n"


RAW_FORMS = {"hex": plain, "spaced": spaced, "xxd": xxd, "hexdump-C": hexdump_c}


def tcpdump(packets, link=False, ports=(55866, 9092)):
    """tcpdump -X (IP first) or -XX (Ethernet first) text of IPv4 packets, as tcpdump prints them."""
    out = []
    for k, ip in enumerate(packets):
        data = B.ethernet(ip) if link else ip
        seq = struct.unpack(">I", ip[24:28])[0]
        n = len(ip) - 40
        out.append(f"04:42:16.{749284 + k:06d} IP 127.0.0.1.{ports[0]} > 127.0.0.1.{ports[1]}: Flags [P.], "
                   f"seq {seq}:{seq + n}, ack 1151633635, win 64, length {n}")
        for off in range(0, len(data), 16):
            c = data[off:off + 16]
            groups = " ".join(c[i:i + 2].hex() for i in range(0, len(c), 2))
            out.append(f"\t0x{off:04x}:  {groups:<39}  {_ascii(c)}")
    return "\n".join(out) + "\n"


def packets_of(pdu, segment, ports=(55866, 9092), seq0=3262225624):
    return [B.ipv4_tcp("127.0.0.1", "127.0.0.1", ports[0], ports[1], seq0 + i, 1151633635, B.ACK | B.PSH,
                       pdu[i:i + segment]) for i in range(0, len(pdu), segment)]


def capture(tmp_path, text, *extra):
    p = tmp_path / "pasted.txt"
    p.write_text(text)
    r = CliRunner().invoke(app, ["capture", "--json", str(p), *extra])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    return r, [x for x in lines if x["type"] == "frame"], [x for x in lines if x["type"] == "stream"]


# --- a lone response that also reads as a request with warnings -----------------------------------------

@pytest.mark.parametrize("form", sorted(RAW_FORMS))
def test_lone_response_wins_over_a_request_reading_with_warnings(tmp_path, form):
    r, frames, notes = capture(tmp_path, RAW_FORMS[form](produce_v7_response()))
    assert r.exit_code == 0, r.stdout
    [f] = frames
    assert (f["kind"], f["apiName"], f["apiVersion"], f["correlationId"], f["size"]) == (
        "response", "Produce", 7, 2, 61)
    assert f["body"]["responses"][0]["name"] == "kp-snappy"
    assert [(x["code"], x["offset"], x["severity"]) for x in f["findings"]] == [
        ("response-guessed", 0, "info"), ("frame-ambiguous", 0, "info")]
    amb = f["findings"][1]["message"]
    assert "Produce v7" in amb and "Produce v2" in amb and "frame-trailing-bytes" in amb
    # told how to read it, it is the request (with its warning)
    r, [f], _ = capture(tmp_path, RAW_FORMS[form](produce_v7_response()), "--as", "request")
    assert r.exit_code == 1 and (f["kind"], f["apiVersion"]) == ("request", 2)


@pytest.mark.parametrize("form", sorted(RAW_FORMS))
def test_both_readings_exact_keep_the_request_and_say_so(tmp_path, form):
    r, frames, _ = capture(tmp_path, RAW_FORMS[form](metadata_v0_request()))
    assert r.exit_code == 0
    [f] = frames
    assert (f["kind"], f["apiName"], f["apiVersion"], f["correlationId"]) == ("request", "Metadata", 0, 1)
    assert f["body"] == {"topics": [{"name": "kp-m0-snappy"}]}
    assert [(x["code"], x["offset"]) for x in f["findings"]] == [("frame-ambiguous", 0)]
    assert "OffsetForLeaderEpoch v0" in f["findings"][0]["message"]


def test_mutation_frame_ambiguous_from_the_correlation_id(tmp_path):
    """The correlation id decides whether the response also reads as a request (its first two bytes
    are the request's api key): an id no request can start with gives no frame-ambiguous; the real id
    (one INT32 changed back) gives exactly one, at the frame's first byte."""
    real = produce_v7_response()
    unambiguous = real[:4] + struct.pack(">i", 0x7FFF0002) + real[8:]
    _, [f], _ = capture(tmp_path, xxd(unambiguous))
    assert f["kind"] == "response" and [x["code"] for x in f["findings"]] == ["response-guessed"]
    _, [f], _ = capture(tmp_path, xxd(real))
    assert [(x["code"], x["offset"]) for x in f["findings"] if x["code"] == "frame-ambiguous"] == [
        ("frame-ambiguous", 0)]


def test_several_frames_in_one_dump_are_not_second_guessed(tmp_path):
    """Only a dump that is one frame is a lone frame: a request followed by more is read in sequence."""
    data = metadata_v0_request() + metadata_v0_request()
    r, frames, _ = capture(tmp_path, xxd(data))
    assert [(f["kind"], f["apiName"], [x["code"] for x in f["findings"]]) for f in frames] == [
        ("request", "Metadata", []), ("request", "Metadata", [])]


# --- one request over several packets, no SYN ---------------------------------------------------------------

@pytest.mark.parametrize("link", [False, True], ids=["tcpdump-X", "tcpdump-XX"])
@pytest.mark.parametrize("segment", [100, 600])
def test_request_over_packets_is_not_split_at_a_frame_inside_it(tmp_path, link, segment):
    pdu = fetch_v11_request()
    text = tcpdump(packets_of(pdu, segment), link=link)
    r, frames, notes = capture(tmp_path, text)
    assert r.exit_code == 0, r.stdout
    assert [(f["kind"], f["apiName"], f["apiVersion"], f["correlationId"], f["size"], f["findings"])
            for f in frames] == [("request", "Fetch", 11, 3, 696, [])]
    assert frames[0]["packets"] == list(range(1, len(packets_of(pdu, segment)) + 1))
    assert notes == []


def test_a_start_that_never_completes_gives_way_to_the_frame_that_fits_with_warnings(tmp_path):
    """The text begins with a request header whose frame the text never completes; the whole frame
    after it that fits only with warnings is then read (nothing is lost), the header skipped."""
    head = struct.pack(">ihhi", 5000, 18, 0, 77) + struct.pack(">h", 2) + b"kd"
    inner = produce_v7_response()  # as a request: Produce v2 with trailing bytes
    text = tcpdump(packets_of(head + inner, 40), ports=(55866, 9092))
    r, frames, notes = capture(tmp_path, text)
    assert [(f["kind"], f["apiName"], f["apiVersion"], f["position"], [x["code"] for x in f["findings"]])
            for f in frames] == [("request", "Produce", 2, len(head), ["frame-trailing-bytes"])]
    assert [(x["code"], x["offset"], x["length"]) for n in notes for x in n["findings"]] == [
        ("garbage", 0, len(head))]


def test_large_lone_response_over_packets_is_a_response(tmp_path):
    """A Fetch response of 438,058 bytes (librdkafka's session) pasted as packets with no SYN and
    no request: too large to wait for before deciding who the client is, and no request, so its
    sender is the server (it was "not Kafka")."""
    pdu = real_frame("ck216_large.pcap", 38255, 52464, 1232)
    assert len(pdu) == 438058 and struct.unpack(">i", pdu[4:8])[0] == 16
    r, frames, notes = capture(tmp_path, tcpdump(packets_of(pdu, 16384, ports=(38255, 52464))))
    assert r.exit_code == 0, r.stdout[-2000:]
    assert [(f["kind"], f["apiName"], f["correlationId"], f["size"], f["recordCount"]) for f in frames] == [
        ("response", "Fetch", 16, 438058, 2)]
    assert notes == []


def test_tcpdump_ascii_column_that_begins_and_ends_with_a_bar():
    """tcpdump prints 0x7c as '|': a 16-byte line whose first and last bytes are 0x7c has an ASCII
    column framed like hexdump -C's, but it is not a frame (it was 'not hex')."""
    from kafkadump.sources import hextext

    data = b"|" + bytes(range(0x41, 0x4F)) + b"|"
    groups = " ".join(data[i:i + 2].hex() for i in range(0, 16, 2))
    text = f"\t0x0000:  {groups}  {_ascii(data)}\n"
    [block] = hextext.parse(text)
    assert bytes(block.data) == data
