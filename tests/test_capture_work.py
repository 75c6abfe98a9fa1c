"""Capture's work per frame, counted (never timed): a frame's body is walked for its RECORDS
fields once, whatever the renderers ask, and that walk (guided by the body's plan) finds exactly
what a walk of the whole body finds."""

from __future__ import annotations

import io

import builders as bld
import capture_builders as cb
import pytest
from conftest import need_corpus

from kafkadump.reports.capture import CaptureRequest
from kafkadump.reports.capture import capture_report
from kafkadump.decoders.protocol import frames
from kafkadump.decoders.protocol.decoder import RecordsValue
from kafkadump.decoders.protocol.frames import Frame
from kafkadump.render import frame_views
from kafkadump.base.status import Tally


def _conversation_pcap(tmp_path, rounds: int):
    """Produce v3 requests and Fetch v12 responses carrying records, plus Metadata, ``rounds`` times."""
    p = tmp_path / "conv.pcap"
    p.write_bytes(cb.records_conversation(rounds, lambda i: bld.simple_batch(i * 3, 3).data, corr_step=4, mss=1400))
    return p


def _count_walks(monkeypatch) -> dict[str, int]:
    """Count the walks of whole bodies (the top call of each walk, not its recursion)."""
    counts = {"planned": 0, "generic": 0}
    planned, generic = frames._walk_planned, frames._walk_records

    def count_planned(v, plan, path, ctx):
        if path == "body":
            counts["planned"] += 1
        return planned(v, plan, path, ctx)

    def count_generic(v, path, ctx):
        if path == "body":
            counts["generic"] += 1
        return generic(v, path, ctx)

    monkeypatch.setattr(frames, "_walk_planned", count_planned)
    monkeypatch.setattr(frames, "_walk_records", count_generic)
    return counts


@pytest.mark.parametrize("render", ["json", "table", "records"])
def test_each_body_is_walked_once(tmp_path, monkeypatch, render):
    p = _conversation_pcap(tmp_path, 6)
    counts = _count_walks(monkeypatch)
    kept: list[Frame] = []

    def items():
        for item in capture_report(str(p), CaptureRequest(), Tally(), time_span=render == "table"):
            if isinstance(item, Frame):
                kept.append(item)
            yield item

    out = io.StringIO()
    if render == "json":
        frame_views.write_frames_json(items(), out)
    elif render == "table":
        frame_views.write_frames_table(items(), out)
    else:
        frame_views.write_records_json(items(), out)
    with_body = [f for f in kept if f.body is not None]
    assert len(kept) == 30 and len(with_body) == 30
    # one walk per frame, by its plan (the records are found, not skipped)
    assert counts == {"planned": 30, "generic": 0}
    assert sum(f.record_count() for f in kept) == 6 * (3 + 2 * 3)
    # asking again walks nothing
    for f in kept:
        list(f.records_fields())
        f.all_findings()
    assert counts == {"planned": 30, "generic": 0}


def test_replacing_a_body_forgets_its_records(tmp_path):
    p = _conversation_pcap(tmp_path, 1)
    fetch = [f for f in capture_report(str(p), CaptureRequest(), Tally())
             if isinstance(f, Frame) and f.api_key == 1 and f.kind == "response"][0]
    assert fetch.record_count() == 6
    fetch.body = {"responses": []}
    assert fetch.body_plan is None and fetch.record_count() == 0


def _planned_equals_generic(path: str) -> int:
    """Every frame of ``path``: the plan-guided walk finds what the whole-body walk finds, in order."""
    seen = 0
    for f in capture_report(path, CaptureRequest(), Tally()):
        if not isinstance(f, Frame) or f.body is None or f.body_plan is None:
            continue
        generic = list(frames._walk_records(f.body, "body", {}))
        planned = list(frames._walk_planned(f.body, f.body_plan, "body", {}))
        assert [(p, c) for p, c, _ in planned] == [(p, c) for p, c, _ in generic]
        assert all(a[2] is b[2] and isinstance(a[2], RecordsValue) for a, b in zip(planned, generic))
        seen += len(generic)
    return seen


def test_the_planned_walk_finds_what_the_whole_walk_finds(tmp_path):
    assert _planned_equals_generic(str(_conversation_pcap(tmp_path, 2))) == 2 * 3


def test_the_planned_walk_on_real_captures():
    wire = need_corpus("clients/wire")
    found = 0
    for name in ("ck216_transactional.pcap", "kafkapython_codecs.pcap", "aiokafka_codecs.pcap",
                 "ck216_legacy_magic0.pcap", "kcat.pcap"):
        found += _planned_equals_generic(str(wire / name))
    assert found > 20


def test_addresses_read_as_ipaddress_writes_them():
    import ipaddress
    import random

    from kafkadump.sources.pcap import parse_ip

    rng = random.Random(13)
    for _ in range(500):
        a, b = rng.randbytes(4), rng.randbytes(4)
        ip4 = bytes([0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0]) + a + b + bytes(20)
        src, dst = parse_ip(ip4, 0)[:2]
        assert (src, dst) == (str(ipaddress.IPv4Address(a)), str(ipaddress.IPv4Address(b)))
        a, b = rng.randbytes(16), rng.randbytes(16)
        ip6 = bytes([0x60, 0, 0, 0, 0, 20, 6, 64]) + a + b + bytes(20)
        src, dst = parse_ip(ip6, 0)[:2]
        assert (src, dst) == (str(ipaddress.IPv6Address(a)), str(ipaddress.IPv6Address(b)))


def test_numbers_read_inline_equal_their_readers(tmp_path):
    """Without spans, fixed-width numbers are read inline; with spans, by their readers: the same body."""
    from kafkadump.decoders.protocol.decoder import decode_message

    frames_ = [cb.fetch_v12_response(7, [(0, bld.simple_batch(0, 3).data, b"\x00"), (2, None, b"\x00")]),
               cb.metadata_v1_response(corr=3, partitions=4), cb.produce_v3_request(5, bld.simple_batch(9, 2).data)]
    for data, name, version, start in ((frames_[0], "FetchResponse", 12, 9), (frames_[1], "MetadataResponse", 1, 8),
                                       (frames_[2], "ProduceRequest", 3, 4 + 8 + 3)):
        plain, p1 = decode_message(name, version, data, start, findings=[])
        spans: list = []
        spanned, p2 = decode_message(name, version, data, start, spans=spans, findings=[])
        assert p1 == p2 == len(data) and spans
        assert _comparable(plain) == _comparable(spanned)


def _comparable(v):
    if isinstance(v, dict):
        return {k: _comparable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_comparable(x) for x in v]
    if isinstance(v, RecordsValue):
        return [(b.position, b.size, [(r.offset, r.key, r.value) for r in (getattr(b, "records", None) or [])])
                for b in v.items]
    return v


def test_frame_json_of_nan_and_infinite_floats():
    """The tree is written as it is unless it holds a NaN or an infinity: then those are written
    as text, as they always were, and the rest of the frame is the same."""
    import json
    import struct

    from kafkadump.decoders.protocol.frames import decode_request
    from kafkadump.render.frame_views import FrameJson

    def op(key: str, value: float) -> bytes:
        return struct.pack(">h", len(key)) + key.encode() + struct.pack(">d", value) + b"\x00"

    def request(*values: float) -> bytes:
        entity = struct.pack(">i", 1) + struct.pack(">h", 4) + b"user" + struct.pack(">h", 2) + b"u1"
        ops = struct.pack(">i", len(values)) + b"".join(op(f"k{i}", v) for i, v in enumerate(values))
        body = struct.pack(">i", 1) + entity + ops + b"\x00"
        header = struct.pack(">hhi", 49, 0, 9) + struct.pack(">h", 1) + b"c"
        return struct.pack(">i", len(header) + len(body)) + header + body

    def ops_of(data: bytes) -> list:
        f = decode_request(data, 0, len(data))
        f.index = 0
        text = "".join(FrameJson().frame_pieces(f))
        return json.loads(text)["body"]["entries"][0]["ops"]

    assert [o["value"] for o in ops_of(request(1.5, 2.0))] == [1.5, 2.0]
    assert [o["value"] for o in ops_of(request(1.5, float("nan"), float("-inf")))] == [1.5, "nan", "-inf"]
    assert ops_of(request(float("inf")))[0] == {"key": "k0", "value": "inf", "remove": False}


def _errors_planned_equals_generic(path: str) -> list[int]:
    """Every frame of ``path``: the error codes found by the plan-guided walk are those of the
    whole-body walk; returns them all."""
    found: list[int] = []
    for f in capture_report(path, CaptureRequest(), Tally()):
        if not isinstance(f, Frame) or f.body is None or f.body_plan is None:
            continue
        generic: list[int] = []
        frames._errors({k: v for k, v in f.body.items() if k != "errorCode"}, generic)
        planned = f.nested_errors()
        assert sorted(planned) == sorted(generic)
        found += planned
    return found


def test_the_planned_error_walk_on_real_captures():
    wire = need_corpus("clients/wire")
    found: list[int] = []
    for name in ("ck216_legacy_magic0.pcap", "ck216_many_small_3brokers.pcap", "kafkapython_legacy.pcap",
                 "ck216_transactional.pcap", "aiokafka_codecs.pcap"):
        found += _errors_planned_equals_generic(str(wire / name))
    assert 35 in found   # the mock's UNSUPPORTED_VERSION per partition, for legacy produce


def test_a_body_without_a_plan_is_walked_whole(tmp_path):
    p = _conversation_pcap(tmp_path, 1)
    fetch = [f for f in capture_report(str(p), CaptureRequest(), Tally())
             if isinstance(f, Frame) and f.api_key == 1 and f.kind == "response"][0]
    fetch.body = {"errorCode": 7, "responses": [{"partitions": [{"errorCode": 3}, {"errorCode": 0}]}]}
    assert fetch.body_plan is None and fetch.nested_errors() == [3]
