"""Hex text input: every form in the corpus's hexcaps decodes to the same frame as the raw bytes.

``corpus/clients/hexcaps/NAME.bin`` is one PDU (size prefix included);
the other files are the same PDU as plain hex, spaced hex, ``xxd``,
``hexdump -C``, real ``tcpdump -X`` / ``-XX`` output (IP/TCP/Ethernet
headers included) and ``tshark -x``.  ``index.json`` says what each PDU is.
"""

from __future__ import annotations

import json

import pytest
from conftest import need_corpus
from typer.testing import CliRunner

from kafkadump.cli import app
from kafkadump.sources import hextext

FORMS = ("hex", "hex-spaced.txt", "xxd.txt", "hexdump-C.txt", "tcpdump-X.txt", "tcpdump-XX.txt", "tshark-x.txt")


def _index():
    d = need_corpus("clients/hexcaps")
    return d, json.loads((d / "index.json").read_text())


def run(*args, input=None):
    r = CliRunner().invoke(app, ["capture", *map(str, args)], input=input)
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r


def _frames(path, *extra):
    r = run(path, "--json", "--encoding", "hex", *extra)
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    return r, [x for x in lines if x["type"] == "frame"]


def _comparable(f):
    keep = ("kind", "size", "sizePrefix", "apiKey", "apiName", "apiVersion", "correlationId", "header", "body",
            "recordCount")
    d = {k: f[k] for k in keep}
    d["findings"] = [(x["code"], x["offset"]) for x in f["findings"]]
    return d


def _strip_files(v):
    """Record and batch dicts name their file: not part of the comparison."""
    if isinstance(v, dict):
        return {k: _strip_files(x) for k, x in v.items() if k != "file"}
    if isinstance(v, list):
        return [_strip_files(x) for x in v]
    return v


def test_every_hex_form_decodes_to_the_same_frame():
    d, index = _index()
    checked = 0
    for e in index:
        name = e["name"]
        hints = [] if e["direction"] == "request" else ["--api-key", e["api_key"], "--api-version", e["api_version"]]
        _, ref = _frames(d / f"{name}.bin", *hints)
        assert len(ref) == 1, name
        want = _strip_files(_comparable(ref[0]))
        assert (want["apiKey"], want["apiVersion"], want["correlationId"], want["size"]) == \
            (e["api_key"], e["api_version"], e["correlation_id"], e["length_with_prefix"])
        for form in FORMS:
            p = d / f"{name}.{form}"
            if not p.exists():
                continue
            r, got = _frames(p, *hints)
            assert r.exit_code in (0, 1), (p.name, r.stderr)
            mine = [g for g in got if g["correlationId"] == e["correlation_id"] and g["kind"] == e["direction"]]
            assert len(mine) == 1, (p.name, [(g["kind"], g["correlationId"]) for g in got])
            assert _strip_files(_comparable(mine[0])) == want, p.name
            checked += 1
    assert checked >= 7 * len(index) - 3


def test_packet_forms_carry_the_tcp_endpoints():
    d, index = _index()
    e = next(x for x in index if x["name"] == "produce_v7_request_xerial_snappy_kafkapython")
    for form in ("tcpdump-X.txt", "tcpdump-XX.txt", "tshark-x.txt"):
        _, got = _frames(d / f"{e['name']}.{form}")
        c = got[0]["connection"]
        assert c["client"].endswith(f":{e['tcp']['sport']}") and c["server"].endswith(f":{e['tcp']['dport']}")


def test_lone_responses_are_decoded_without_hints_when_only_one_api_fits():
    d, index = _index()
    for e in index:
        if e["direction"] != "response" or e["name"].startswith("apiversions_v3"):
            continue
        _, got = _frames(d / f"{e['name']}.xxd.txt")
        assert got[0]["apiKey"] == e["api_key"], e["name"]
        assert e["api_version"] in got[0]["guessed"]["versions"]


def test_tshark_derived_blocks_are_not_frames():
    d, _ = _index()
    p = d / "fetch_v11_response_kafkapython_all_codecs.tshark-x.txt"
    assert "Decompressed Records" in p.read_text()
    blocks = hextext.parse(p.read_text())
    assert [b.kind for b in blocks] == ["packet", "derived", "derived", "derived", "derived"]
    _, got = _frames(p)
    assert len(got) == 1


# --- the parser on its own ---------------------------------------------------------------------------

PDU = bytes.fromhex("0000000a00120000000000070001")  # not a real frame: the parser does not care


@pytest.mark.parametrize("text", [
    PDU.hex(),
    PDU.hex(" "),
    PDU.hex(":"),
    ", ".join(f"0x{b:02x}" for b in PDU),
    "".join(f"\\x{b:02x}" for b in PDU),
    PDU.hex().upper(),
    "\n".join(PDU[i:i + 4].hex(" ") for i in range(0, len(PDU), 4)),
    "00000000: 0000 000a 0012 0000 0000 0007 0001       ..............\n",
    "00000000  00 00 00 0a 00 12 00 00  00 00 00 07 00 01        |..............|\n0000000e\n",
    "0000  00 00 00 0a 00 12 00 00 00 00 00 07 00 01         ..............\n",
    "\t0x0000:  0000 000a 0012 0000 0000 0007 0001\n",
])
def test_hex_forms(text):
    blocks = hextext.parse(text)
    assert [bytes(b.data) for b in blocks] == [PDU]


def test_ascii_column_that_looks_like_hex_is_not_data():
    data = b"cafe" + bytes(12)
    line = "00000000: " + " ".join(data[i:i + 2].hex() for i in range(0, 16, 2)) + "  cafe............\n"
    assert [bytes(b.data) for b in hextext.parse(line)] == [data]


def test_ascii_column_starting_with_spaces():
    data = b"  ab" + bytes(2)
    line = "00000000: 2020 6162 0000                           ab..\n"
    assert [bytes(b.data) for b in hextext.parse(line)] == [data]


def test_several_dumps_are_separate():
    text = "xxd of one:\n" if False else ""
    text += "00000000: 0000 0001 00                                .....\n\n"
    text += "00000000: 0000 0002 0000                             ......\n"
    blocks = hextext.parse(text)
    assert [bytes(b.data) for b in blocks] == [bytes.fromhex("0000000100"), bytes.fromhex("000000020000")]


def test_offset_restart_starts_a_new_dump():
    text = "0000  00 01 02 03\n0000  04 05\n"
    assert [bytes(b.data) for b in hextext.parse(text)] == [b"\x00\x01\x02\x03", b"\x04\x05"]


def test_a_line_that_is_not_hex_is_named(tmp_path):
    p = tmp_path / "paste.txt"
    p.write_text("00 00 00 0a\n00 12 zz 00\n")
    with pytest.raises(hextext.HexError) as e:
        hextext.parse(p.read_text(), str(p))
    assert "line 2" in str(e.value) and "00 12 zz 00" in str(e.value)
    r = run(p)
    assert r.exit_code == 2 and "line 2" in r.stderr and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1


def test_missing_lines_are_an_error():
    text = "00000000: 0000 0001 0000 0000 0000 0000 0000 0000  ................\n" \
           "00000020: 0000 0001 0000 0000 0000 0000 0000 0000  ................\n"
    with pytest.raises(hextext.HexError) as e:
        hextext.parse(text)
    assert "line 2" in str(e.value) and "expected 10" in str(e.value)


def test_stdin_and_request_response_pairing():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    import capture_builders as B

    req = B.metadata_v1_request(corr=21)
    resp = B.metadata_v1_response(corr=21)
    text = req.hex(" ") + "\n\n" + resp.hex() + "\n"
    r = run("-", "--json", input=text)
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    fs = [x for x in lines if x["type"] == "frame"]
    assert [(f["kind"], f["apiName"], f["apiVersion"], f["correlationId"]) for f in fs] == [
        ("request", "Metadata", 1, 21), ("response", "Metadata", 1, 21)]
    assert fs[1]["requestIndex"] == 0 and fs[1]["guessed"] is None
    assert fs[1]["body"]["topics"][0]["name"] == "orders"
    assert r.exit_code == 0 and lines[-1]["type"] == "summary" and lines[-1]["valid"] is True


# --- packets in text, across segments ------------------------------------------------------------------

def _tcpdump_text(packets, ascii_col=True):
    """tcpdump -X style text for IP packets (our own rendering of the documented layout)."""
    out = []
    for k, (t, ip) in enumerate(packets):
        out.append(f"12:00:{k:02d}.000001 IP 10.0.0.1.50000 > 10.0.0.2.9092: Flags [P.], seq 1:2, ack 1, "
                   f"win 512, length {len(ip) - 40}")
        for off in range(0, len(ip), 16):
            chunk = ip[off:off + 16]
            groups = " ".join(chunk[i:i + 2].hex() for i in range(0, len(chunk), 2))
            asc = "".join(chr(b) if 32 < b < 127 else "." for b in chunk)
            out.append(f"\t0x{off:04x}:  {groups:<39}" + (f"  {asc}" if ascii_col else ""))
    return "\n".join(out) + "\n"


def _multi_segment_pdu():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    import capture_builders as B
    from test_protocol import first_batch

    batch, exp = first_batch()
    body = (B.I16(-1) + B.I16(1) + B.I32(1000) + B.I32(1) + B.encode_string("t") + B.I32(1) + B.I32(0)
            + B.I32(len(batch)) + batch)
    pdu = B.frame(B.req_header(0, 3, 9, "t") + body)
    c = B.Conversation()
    c.send("c", pdu, segment=120)
    return B, c, pdu, exp


@pytest.mark.parametrize("ascii_col", [True, False])
def test_tcpdump_text_of_a_pdu_spanning_packets(tmp_path, ascii_col):
    B, c, pdu, exp = _multi_segment_pdu()
    data_packets = [(t, p) for t, p, info in c.packets if info["len"]]
    assert len(data_packets) >= 3
    p = tmp_path / "tcpdump.txt"
    p.write_text(_tcpdump_text(data_packets, ascii_col))
    r, got = _frames(p)
    assert r.exit_code == 0, r.stdout
    assert [(g["apiName"], g["correlationId"], g["size"], g["recordCount"]) for g in got] == [
        ("Produce", 9, len(pdu), exp["recordCount"])]
    assert got[0]["packets"] == list(range(1, len(data_packets) + 1))


def test_tshark_reassembled_block_is_the_frame(tmp_path):
    B, c, pdu, exp = _multi_segment_pdu()
    last = [p for t, p, info in c.packets if info["len"]][-1]
    eth = B.ethernet(last)

    def dump(data):
        rows = []
        for off in range(0, len(data), 16):
            chunk = data[off:off + 16]
            asc = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
            rows.append(f"{off:04x}  {chunk.hex(' '):<47}   {asc}")
        return "\n".join(rows)

    text = (f"Frame ({len(eth)} bytes):\n{dump(eth)}\nReassembled TCP ({len(pdu)} bytes):\n{dump(pdu)}\n")
    p = tmp_path / "tshark-x.txt"
    p.write_text(text)
    r, got = _frames(p)
    assert [(g["apiName"], g["correlationId"], g["size"], g["recordCount"]) for g in got] == [
        ("Produce", 9, len(pdu), exp["recordCount"])]
    assert r.exit_code == 0


def test_tcpdump_text_starting_inside_another_pdu(tmp_path):
    """The first packet begins with the tail of an earlier PDU: skipped as garbage, the PDU found."""
    B, c, pdu, exp = _multi_segment_pdu()
    c2 = B.Conversation()
    c2.send("c", b"\x07" * 30 + pdu, segment=120)
    data_packets = [(t, p) for t, p, info in c2.packets if info["len"]]
    p = tmp_path / "tcpdump.txt"
    p.write_text(_tcpdump_text(data_packets))
    r, got = _frames(p)
    assert [(g["apiName"], g["correlationId"], g["size"], g["recordCount"]) for g in got] == [
        ("Produce", 9, len(pdu), exp["recordCount"])]
    notes = [json.loads(x) for x in r.stdout.splitlines() if json.loads(x)["type"] == "stream"]
    assert [(f["code"], f["offset"], f["length"]) for n in notes for f in n["findings"]] == [("garbage", 0, 30)]
