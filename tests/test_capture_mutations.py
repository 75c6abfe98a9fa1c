"""Mutation tests for the wire-protocol finding codes.

Each test damages valid input in one way and asserts the finding's code
and its exact offset, worked out from the layouts (frames built by hand in
tests/capture_builders.py, packets and capture files written by it), and
that what the damage did not touch still decodes.  Offsets: for frames
pasted as bytes, positions in those bytes; for TCP streams, the byte's
position in its direction's stream (0 = the byte after the SYN); for
capture-file structure, file offsets.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import capture_builders as B  # noqa: E402
from test_protocol import first_batch  # noqa: E402

from kafkadump.objects.generated_fields import finding_fields
from kafkadump.base.findings import DESCRIPTION  # noqa: E402
from kafkadump.base.findings import SEVERITY  # noqa: E402
from kafkadump.base.findings import Code  # noqa: E402
from kafkadump.base.findings import Severity  # noqa: E402
from kafkadump.decoders.protocol.stream import CaptureDecoder  # noqa: E402
from kafkadump.decoders.protocol.stream import Hints  # noqa: E402
from kafkadump.decoders.protocol.stream import StreamNote  # noqa: E402
from kafkadump.sources.pcap import CaptureReader  # noqa: E402

# codes whose mutation tests live here (tests/test_mutations.py checks coverage)
MUTATION_CODES = {"frame-size-invalid", "frame-trailing-bytes", "field-malformed", "tagged-field-order",
                  "tagged-field-unknown", "version-unknown", "api-key-unknown", "response-unpaired",
                  "response-guessed", "partial-batch", "tcp-gap", "tcp-retransmission", "tcp-overlap-conflict",
                  "capture-malformed", "client-quirk"}

NEW_CODES = {
    Code.FRAME_SIZE_INVALID: Severity.ERROR, Code.FRAME_TRAILING: Severity.WARNING,
    Code.FIELD_MALFORMED: Severity.ERROR, Code.TAGGED_FIELD_ORDER: Severity.ERROR,
    Code.TAGGED_FIELD_UNKNOWN: Severity.INFO, Code.VERSION_UNKNOWN: Severity.WARNING,
    Code.API_KEY_UNKNOWN: Severity.WARNING, Code.RESPONSE_UNPAIRED: Severity.WARNING,
    Code.RESPONSE_GUESSED: Severity.INFO, Code.PARTIAL_BATCH: Severity.INFO, Code.TCP_GAP: Severity.ERROR,
    Code.TCP_RETRANSMISSION: Severity.INFO, Code.TCP_CONFLICT: Severity.WARNING,
    Code.CAPTURE_MALFORMED: Severity.ERROR, Code.CLIENT_QUIRK: Severity.INFO,
}


def test_new_codes_are_registered_with_their_severity():
    for code, sev in NEW_CODES.items():
        assert SEVERITY[code] is sev and DESCRIPTION[code]


def block(data: bytes, **hints):
    return CaptureDecoder(hints=Hints(**hints)).block(data)


def found(items):
    """``[(code, offset)]`` over frames (all findings) and stream notes, in order."""
    out = []
    for it in items:
        fs = it.findings if isinstance(it, StreamNote) else it.all_findings()
        out.extend((f.code, f.offset) for f in fs)
    return out


def frames_of(items):
    return [it for it in items if not isinstance(it, StreamNote)]


def run_pcap(data: bytes):
    reader = CaptureReader(data, "t.pcap")
    items = list(CaptureDecoder("t.pcap").packets(reader))
    return items, reader


def conversation():
    batch, exp = first_batch()
    c, idx, frames = B.kafka_conversation(batch)
    return c, idx, frames, exp


def packets(c, drop=(), extra=()):
    """The conversation's packets minus ``drop`` indexes, plus ``extra`` (index to insert after, packet)."""
    out = []
    for i, (t, p, _) in enumerate(c.packets):
        if i not in drop:
            out.append((t, p))
        for after, pkt in extra:
            if after == i:
                out.append((t + 0.0001, pkt))
    return out


def assert_untouched(items, names_expected):
    got = [(f.kind, f.api_name, f.correlation_id) for f in frames_of(items)]
    for e in names_expected:
        assert e in got, (e, got)


# --- frames -------------------------------------------------------------------------------------------

def test_frame_size_invalid_lone_frame():
    b = struct.pack(">i", -7) + B.metadata_v1_request()[4:]
    items = block(b)
    assert found(items)[0] == (Code.FRAME_SIZE_INVALID, 0)


def test_frame_size_invalid_in_a_stream_then_recovery():
    c = B.Conversation()
    a = B.metadata_v1_request(corr=1)
    bad = struct.pack(">i", -1) + B.metadata_v1_request(corr=2)[4:]
    good = B.metadata_v1_request(corr=3, topics=("payments",))
    c.send("c", a + bad + good)
    c.close()
    data, _ = B.pcap([(t, p) for t, p, _ in c.packets])
    items, _ = run_pcap(data)
    f = found(items)
    assert (Code.FRAME_SIZE_INVALID, len(a)) in f
    assert (Code.GARBAGE, len(a)) in f                      # the bad frame's bytes, skipped
    assert_untouched(items, [("request", "Metadata", 1), ("request", "Metadata", 3)])


def test_frame_trailing_bytes():
    a = B.metadata_v1_request(corr=1)
    inflated = struct.pack(">i", len(a) - 4 + 3) + a[4:] + b"\x00\x00\x00"
    items = block(inflated + B.metadata_v1_request(corr=2))
    assert found(items) == [(Code.FRAME_TRAILING, len(a))]
    assert_untouched(items, [("request", "Metadata", 1), ("request", "Metadata", 2)])


def test_client_quirk_apiversions_v0_request_with_trailing_bytes():
    """Zero bytes after an ApiVersions v0 request's empty body (old librdkafka sends four) are a named
    quirk (info); other bytes there, or the same bytes after any other request, are frame-trailing-bytes."""
    def padded(frame_: bytes, tail: bytes) -> bytes:
        return struct.pack(">i", len(frame_) - 4 + len(tail)) + frame_[4:] + tail

    a = B.frame(B.req_header(18, 0, 1, "rdkafka"))
    items = block(padded(a, bytes(4)) + B.metadata_v1_request(corr=2))
    assert found(items) == [(Code.CLIENT_QUIRK, len(a))]
    quirk = frames_of(items)[0].findings[0]
    assert quirk.length == 4 and "librdkafka" in quirk.message
    assert_untouched(items, [("request", "ApiVersions", 1), ("request", "Metadata", 2)])
    # followed by another request, as in a stream (a lone frame with other bytes there may also read
    # exactly as a response: frame-ambiguous, tested in test_pasted_readings)
    for frame_, tail in ((a, b"\x00\x01\x02"), (a, bytes(9)), (B.frame(B.req_header(18, 1, 1, "rdkafka")), bytes(4))):
        items = block(padded(frame_, tail) + B.metadata_v1_request(corr=2))
        assert found(items) == [(Code.FRAME_TRAILING, len(frame_))], (frame_, tail)


def _mock_apiversions(count_byte: int) -> bytes:
    return B.frame(B.I32(1) + B.I16(35) + bytes([count_byte]) + B.I16(18) + B.I16(0) + B.I16(2) + B.I32(0))


def test_client_quirk_apiversions_answer_in_the_mock_layout():
    req = B.apiversions_v3_request(corr=1)
    items = block(req + _mock_apiversions(1))
    assert found(items) == [(Code.CLIENT_QUIRK, len(req))]
    resp = frames_of(items)[1]
    assert resp.body["apiKeys"] == [{"apiKey": 18, "minVersion": 0, "maxVersion": 2}]
    # a count that does not account for the bytes: not the mock's layout, read as v3 and flagged
    items = block(req + _mock_apiversions(2))
    codes = [c for c, _ in found(items)]
    assert Code.CLIENT_QUIRK not in codes and codes, codes
    # the v0 layout answer (KIP-511) is named too, at the response's position
    v0 = B.apiversions_v0_response(corr=1, error=35, apis=((18, 0, 2),))
    items = block(req + v0)
    assert found(items) == [(Code.CLIENT_QUIRK, len(req))] and frames_of(items)[1].body_version == 0


def test_client_quirk_metadata_v13_response_zero_byte():
    from kafkadump.decoders.protocol.frames import decode_response

    body = B.I32(0) + b"\x01" + b"\x01" + B.I32(0) + b"\x01" + B.I16(0) + b"\x00"   # no brokers, no topics
    good = B.frame(B.I32(5) + b"\x00" + body)
    assert decode_response(good, 0, len(good), 3, 13).findings == []
    quirk = B.frame(B.I32(5) + b"\x00" + body + b"\x00")
    f = decode_response(quirk, 0, len(quirk), 3, 13)
    assert [(x.code, x.offset) for x in f.findings] == [(Code.CLIENT_QUIRK, len(quirk) - 1)]
    # another byte, or the same byte after v12: damage as before
    for frame_, v in ((B.frame(B.I32(5) + b"\x00" + body + b"\x07"), 13),
                      (B.frame(B.I32(5) + b"\x00" + body[:-3] + b"\x00" + b"\x00"), 12)):
        g = decode_response(frame_, 0, len(frame_), 3, v)
        assert [x.code for x in g.findings] == [Code.FRAME_TRAILING], (v, g.findings)


def test_client_quirk_control_batch_with_crc_zero_in_a_response():
    """librdkafka's mock broker writes its COMMIT/ABORT markers with CRC 0: in a response that is a
    named quirk (info); any other wrong CRC, or a data batch with CRC 0, stays crc-mismatch."""
    import builders

    from kafkadump.decoders.protocol.frames import decode_response

    control = bytearray(builders.control_batch(7, 1).data)

    def fetch(batch: bytes, crc: int):
        b = bytearray(batch)
        b[17:21] = struct.pack(">I", crc)
        resp = B.fetch_v12_response(5, [(0, bytes(b), b"\x00")])
        f = decode_response(resp, 0, len(resp), 1, 12)
        (_, _, rv), = f.records_fields()
        return f, rv.batches[0]

    f, b = fetch(control, 0)
    assert [(x.code, x.offset) for x in f.all_findings()] == [(Code.CLIENT_QUIRK, b.position + 17)]
    assert "mock broker" in f.all_findings()[0].message and b.is_control
    f, b = fetch(control, 0x12345678)
    assert [(x.code, x.offset) for x in f.all_findings()] == [(Code.CRC_MISMATCH, b.position + 17)]
    batch, _ = first_batch()
    f, b = fetch(batch, 0)
    assert [(x.code, x.offset) for x in f.all_findings()] == [(Code.CRC_MISMATCH, b.position + 17)]


def test_field_malformed_invalid_utf8_in_client_id():
    a = bytearray(B.metadata_v1_request(client="abc"))
    a[14 + 1] = 0xFF                                      # second byte of the client id
    items = block(bytes(a))
    assert found(items) == [(Code.FIELD_MALFORMED, 15)]
    assert frames_of(items)[0].body == {"topics": [{"name": "orders"}]}


def test_field_malformed_string_past_the_frame():
    a = bytearray(B.metadata_v1_request(topics=("orders",)))
    at = a.index(b"\x00\x06orders")
    a[at:at + 2] = struct.pack(">h", 60)                  # the topic name claims 60 bytes
    items = block(bytes(a), as_="request")
    assert found(items) == [(Code.FIELD_MALFORMED, at)]


def _tag_frame(tags):
    return B.fetch_v12_response(5, [(0, None, tags)])


def test_tagged_field_order():
    lead = B.I32(1) + B.I32(2) + b"\x00"
    div = B.I32(3) + B.I64(7) + b"\x00"
    sec = B.tagged([(1, lead), (0, div)])
    b = _tag_frame(sec)
    items = block(b, api_key=1, api_version=12)
    assert found(items) == [(Code.TAGGED_FIELD_ORDER, b.index(sec) + 1 + 2 + len(lead))]


def test_tagged_field_unknown():
    sec = B.tagged([(9, b"abc")])
    b = _tag_frame(sec)
    items = block(b, api_key=1, api_version=12)
    assert found(items) == [(Code.TAGGED_FIELD_UNKNOWN, b.index(sec) + 1)]
    assert items[0].body["responses"][0]["partitions"][0]["_rawTaggedFields"] == [{"tag": 9, "data": b"abc"}]


def test_version_unknown():
    a = bytearray(B.metadata_v1_request())
    a[6:8] = struct.pack(">h", 99)                       # requestApiVersion
    items = block(bytes(a), as_="request")
    assert found(items)[0] == (Code.VERSION_UNKNOWN, 6)


def test_api_key_unknown():
    a = bytearray(B.metadata_v1_request())
    a[4:6] = struct.pack(">h", 4242)
    items = block(bytes(a), as_="request")
    assert found(items) == [(Code.API_KEY_UNKNOWN, 4)]
    assert items[0].body is None and items[0].correlation_id == 1


def test_response_guessed():
    b = B.apiversions_v0_response(corr=8)
    items = block(b)
    assert found(items) == [(Code.RESPONSE_GUESSED, 0)]
    assert (items[0].api_key, items[0].api_version) == (18, 0)


def test_partial_batch():
    batch, exp = first_batch()
    b = B.fetch_v12_response(5, [(0, batch + batch[:25], b"\x00")])
    items = block(b, api_key=1, api_version=12)
    assert found(items) == [(Code.PARTIAL_BATCH, b.index(batch) + len(batch))]
    assert items[0].record_count() == exp["recordCount"]


# --- TCP and capture files ---------------------------------------------------------------------------------

def test_clean_conversation_has_no_findings():
    c, idx, frames, exp = conversation()
    for writer in (B.pcap, B.pcapng):
        data, _ = writer([(t, p) for t, p, _ in c.packets])
        items, reader = run_pcap(data)
        assert found(items) == []
        fs = frames_of(items)
        assert [(f.kind, f.api_name, f.api_version, f.correlation_id) for f in fs] == [
            ("request", "Metadata", 1, 1), ("response", "Metadata", 1, 1),
            ("request", "Fetch", 12, 2), ("response", "Fetch", 12, 2)]
        assert fs[3].record_count() == exp["recordCount"] and fs[3].request_index == 2
        assert fs[3].packets == [i + 1 for i in idx["fetch_resp"]]  # 1-based packet numbers
        assert fs[2].position == len(frames["metadata_req"])        # stream offset in its direction


def test_reordered_segments_are_reassembled_in_order():
    c, idx, frames, exp = conversation()
    pk = [(t, p) for t, p, _ in c.packets]
    a, b = idx["fetch_resp"][1], idx["fetch_resp"][2]
    pk[a], pk[b] = pk[b], pk[a]
    items, _ = run_pcap(B.pcap(pk)[0])
    assert found(items) == []
    assert frames_of(items)[3].record_count() == exp["recordCount"]


def test_tcp_gap():
    c, idx, frames, exp = conversation()
    lost = idx["fetch_resp"][1]
    info = c.packets[lost][2]
    items, _ = run_pcap(B.pcap(packets(c, drop={lost}))[0])
    f = found(items)
    assert (Code.TCP_GAP, info["offset"]) in f
    gap = next(x for it in items if isinstance(it, StreamNote) for x in it.findings if x.code is Code.TCP_GAP)
    assert gap.length == info["len"]
    # the frame the hole is in is cut; the frames before it are whole
    assert_untouched(items, [("request", "Metadata", 1), ("response", "Metadata", 1), ("request", "Fetch", 2)])
    cut = next(fr for fr in frames_of(items) if fr.kind == "response" and fr.correlation_id == 2)
    assert (Code.TRUNCATED, cut.position) in [(x.code, x.offset) for x in cut.findings]


def test_tcp_gap_at_the_end_seen_through_the_fin():
    c, idx, frames, exp = conversation()
    last = idx["fetch_resp"][-1]
    info = c.packets[last][2]
    items, _ = run_pcap(B.pcap(packets(c, drop={last}))[0])
    assert (Code.TCP_GAP, info["offset"]) in found(items)


def test_tcp_retransmission():
    c, idx, frames, exp = conversation()
    again = idx["fetch_resp"][1]
    t, p, info = c.packets[again]
    items, _ = run_pcap(B.pcap(packets(c, extra=[(idx["fetch_resp"][2], p)]))[0])
    assert found(items) == [(Code.TCP_RETRANSMISSION, info["offset"])]
    assert frames_of(items)[3].record_count() == exp["recordCount"]


def test_tcp_overlap_conflict():
    c, idx, frames, exp = conversation()
    again = idx["fetch_resp"][1]
    t, p, info = c.packets[again]
    side = c.server if info["side"] == "s" else c.client
    other = c.client if info["side"] == "s" else c.server
    changed = bytes(x ^ 0xFF for x in p[40:])  # same segment, different bytes
    forged = B.ipv4_tcp(side[0], other[0], side[1], other[1], info["seq"], 0, B.ACK | B.PSH, changed)
    items, _ = run_pcap(B.pcap(packets(c, extra=[(idx["fetch_resp"][2], forged)]))[0])
    assert found(items) == [(Code.TCP_CONFLICT, info["offset"])]
    assert frames_of(items)[3].record_count() == exp["recordCount"]  # the first copy was kept


def test_capture_malformed_cut_pcap():
    c, idx, frames, exp = conversation()
    data, offsets = B.pcap([(t, p) for t, p, _ in c.packets])
    cut_at = offsets[idx["fetch_resp"][2]]
    items, reader = run_pcap(data[:cut_at + 30])
    assert [(f.code, f.offset) for f in reader.findings] == [(Code.CAPTURE_MALFORMED, cut_at)]
    assert_untouched(items, [("request", "Metadata", 1), ("response", "Metadata", 1)])


def test_capture_malformed_pcapng_block_length():
    c, idx, frames, exp = conversation()
    data, offsets = B.pcapng([(t, p) for t, p, _ in c.packets])
    bad = bytearray(data)
    at = offsets[idx["fetch_req"][0]]
    bad[at + 4:at + 8] = struct.pack("<I", 13)            # not a multiple of 4
    items, reader = run_pcap(bytes(bad))
    assert [(f.code, f.offset) for f in reader.findings] == [(Code.CAPTURE_MALFORMED, at + 4)]
    assert_untouched(items, [("request", "Metadata", 1), ("response", "Metadata", 1)])


def test_response_unpaired():
    c, idx, frames, exp = conversation()
    # the Metadata response's correlation id no longer matches any request
    i = idx["metadata_resp"][0]
    t, p, info = c.packets[i]
    payload = bytearray(p[40:])
    payload[4:8] = struct.pack(">i", 999)
    forged = B.ipv4_tcp(c.server[0], c.client[0], c.server[1], c.client[1], info["seq"], 0, B.ACK | B.PSH,
                        bytes(payload))
    pk = [(t2, forged if k == i else p2) for k, (t2, p2, _) in enumerate(c.packets)]
    items, _ = run_pcap(B.pcap(pk)[0])
    f = found(items)
    assert (Code.RESPONSE_UNPAIRED, info["offset"]) in f
    assert_untouched(items, [("response", "Fetch", 2)])


@pytest.mark.parametrize("code", sorted(NEW_CODES, key=lambda c: c.value))
def test_every_new_code_has_a_mutation_here(code):
    names = [n for n in globals() if n.startswith("test_")]
    stem = code.value.replace("-", "_")
    aliases = {"frame_trailing_bytes": "frame_trailing", "tcp_overlap_conflict": "tcp_overlap_conflict"}
    assert any(stem in n or aliases.get(stem, stem) in n for n in names), code


def test_damaged_captures_never_raise():
    """Random byte changes and cuts of pcap and pcapng files: findings, never an exception or a hang."""
    import random

    from kafkadump.sources.pcap import CaptureError

    c, idx, frames, exp = conversation()
    rng = random.Random(11)
    for writer in (B.pcap, B.pcapng):
        data, _ = writer([(t, p) for t, p, _ in c.packets])
        for _ in range(150):
            m = bytearray(data)
            for _ in range(rng.randrange(1, 4)):
                i = rng.randrange(len(m))
                m[i] = rng.randrange(256)
            if rng.random() < 0.3:
                m = m[:rng.randrange(len(m))]
            try:
                items, reader = run_pcap(bytes(m))
            except CaptureError:
                assert bytes(m[:4]) != bytes(data[:4])  # only a broken magic is not a capture
                continue
            for it in items:
                fs = it.findings if isinstance(it, StreamNote) else it.all_findings()
                for f in fs:
                    finding_fields(f)


def test_hex_text_junk_is_a_named_error_or_bytes():
    import random

    from kafkadump.sources import hextext

    rng = random.Random(5)
    alphabet = "0123456789abcdefx:|. \t\n-Frame()bytes"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 200)))
        try:
            blocks = hextext.parse(text)
        except hextext.HexError as e:
            assert "line " in str(e)
            continue
        for b in blocks:
            CaptureDecoder().block(bytes(b.data))
