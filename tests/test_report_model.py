"""The report model: one definition of each object, and the fast writers held equal to it."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

from kafkadump.decoders.batches import Batch
from kafkadump.decoders.batches import Gap
from kafkadump.decoders.batches import Options
from kafkadump.decoders.batches import iter_batches
from kafkadump.base.errors import UsageError
from kafkadump.base.findings import Code
from kafkadump.base.findings import Finding
from kafkadump.base.findings import Severity
from kafkadump.reports.query import RecordQuery
from kafkadump.reports.query import parse_key
from kafkadump.reports.query import parse_time
from kafkadump.render.jsonl import RecordLines
from kafkadump.objects.records import ENCODERS
from kafkadump.objects.records import Place
from kafkadump.objects.records import Sighting
from kafkadump.reports.places import ConnectionSeen
from kafkadump.objects.records import encode_auto
from kafkadump.objects.records import item_object
from kafkadump.objects.records import record_object
from kafkadump.base.status import Tally
from kafkadump.base.status import exit_status

SEGMENTS = sorted(FIXTURES.glob("*/*.log"))


def _items(path):
    return list(iter_batches(path.read_bytes(), str(path), options=Options(records=True)))


@pytest.mark.parametrize("encoding", sorted(ENCODERS))
@pytest.mark.parametrize("path", SEGMENTS, ids=[p.parent.name + "/" + p.name for p in SEGMENTS])
def test_record_lines_write_exactly_record_object(path, encoding):
    lines = RecordLines(encoding)
    seen = 0
    for b in _items(path):
        if isinstance(b, Gap) or not b.records:
            continue
        fast = lines.batch_lines(b, b.records).splitlines()
        assert len(fast) == len(b.records)
        for r, line in zip(b.records, fast):
            assert json.loads(line) == record_object(r, b, ENCODERS[encoding])
            assert json.loads(lines.line(r, b)) == record_object(r, b, ENCODERS[encoding])
            seen += 1
    assert seen > 0


SIGHTED = Place("orders\u00fc", 3, Sighting(7, "Produce", "request",
                                           ConnectionSeen(2, "127.0.0.1:5000", "127.0.0.1:9092", False),
                                           1700000000.25, "2023-11-14T22:13:20.250000Z", None, True))


@pytest.mark.parametrize("encoding", sorted(ENCODERS))
@pytest.mark.parametrize("place", [None, Place(), SIGHTED], ids=["from-file", "nowhere", "sighted"])
def test_record_lines_equal_record_object_at_any_place(encoding, place):
    lines = RecordLines(encoding)
    for b in _items(FIXTURES / "segment-mixed" / "00000000000000000000.log") + \
            _items(FIXTURES / "segment-v2" / "00000000000000000000.log"):
        if isinstance(b, Gap) or not b.records:
            continue
        want = [record_object(r, b, ENCODERS[encoding], place) for r in b.records]
        assert [json.loads(x) for x in lines.batch_lines(b, b.records, place).splitlines()] == want
        assert [json.loads(lines.line(r, b, place)) for r in b.records] == want
    if place is SIGHTED:
        o = want[0]
        assert (o["topic"], o["partition"], o["frame"], o["api"], o["direction"], o["offsetRelative"]) == \
            ("orders\u00fc", 3, 7, "Produce", "request", True)


def test_place_from_a_partition_directory(tmp_path):
    d = tmp_path / "orders-3"
    d.mkdir()
    path = d / "00000000000000000000.log"
    path.write_bytes((FIXTURES / "segment-v2" / "00000000000000000000.log").read_bytes())
    b = next(x for x in _items(path) if isinstance(x, Batch))
    o = record_object(b.records[0], b, ENCODERS["auto"])
    assert (o["topic"], o["partition"]) == ("orders", 3)
    o = record_object(b.records[0], b, ENCODERS["auto"], Place())
    assert (o["topic"], o["partition"]) == (None, None)
    loose = next(x for x in _items(FIXTURES / "segment-v2" / "00000000000000000000.log") if isinstance(x, Batch))
    assert record_object(loose.records[0], loose, ENCODERS["auto"])["topic"] is None


@pytest.mark.parametrize("raw, want", [
    (b"user-1", "user-1"), (b"", ""), ("z\u00fcrich \u2603".encode(), "z\u00fcrich \u2603"),
    (b"line one\nline two\ttab\r", "line one\nline two\ttab\r"),
    (b"\x00\x01", {"base64": "AAE="}),              # NUL: binary
    (b"esc\x1b[2J", {"base64": "ZXNjG1sySg=="}),     # C0 control
    (b"del\x7f", {"base64": "ZGVsfw=="}),            # DEL
    ("c1\u009b".encode(), {"base64": "YzHCmw=="}),   # C1 control, valid UTF-8
    (b"\xff\xfe", {"base64": "//4="}),              # not UTF-8
    (b"\xed\xa0\x80", {"base64": "7aCA"}),          # an encoded surrogate is not UTF-8
])
def test_auto_encoding_is_text_or_base64_object(raw, want):
    assert encode_auto(raw) == want
    assert encode_auto(None) is None
    back = want.encode("utf-8") if isinstance(want, str) else __import__("base64").b64decode(want["base64"])
    assert back == raw


def test_item_object_of_the_first_fixture_batch():
    first = _items(FIXTURES / "segment-v2" / "00000000000000000000.log")[0]
    o = item_object(first)
    assert (o["type"], o["position"], o["baseOffset"], o["lastOffset"], o["magic"], o["recordCount"]) == \
        ("batch", 0, 0, 4, 2, 5)
    assert o["crcValid"] is True and o["findings"] == []


def test_query_prunes_by_header_and_keeps_by_record():
    items = [b for b in _items(FIXTURES / "segment-v2" / "00000000000000000000.log") if isinstance(b, Batch)]
    q = RecordQuery(from_offset=5, to_offset=9)
    assert [b.base_offset for b in items if q.batch_may_match(b)] == [5, 8]
    kept = [r.offset for b in items for r in q.select(b.records)]
    assert kept == [5, 6, 7, 8, 9]
    assert not RecordQuery().active and RecordQuery().batch_selector() is None
    assert RecordQuery(keys=(b"k",)).active and RecordQuery(keys=(b"k", None)).batch_selector() is None


def test_parse_time_and_key():
    assert parse_time("2023-11-14T22:13:24Z", "--from-time") == 1700000004000
    assert parse_time("2023-11-14T22:13:24", "--from-time") == 1700000004000  # naive is UTC
    assert parse_time("1700000004000", "--from-time") == 1700000004000
    with pytest.raises(UsageError, match="--to-time"):
        parse_time("yesterday", "--to-time")
    assert parse_key("hex:00ff") == b"\x00\xff"
    assert parse_key("base64:AP8=") == b"\x00\xff"
    assert parse_key("user-1") == b"user-1"
    with pytest.raises(UsageError):
        parse_key("hex:zz")


def test_one_exit_rule():
    t = Tally()
    assert t.exit_status == 0
    infos = [f for f in (Finding(c, 0, "x") for c in Code) if f.severity is Severity.INFO]
    problems = [f for f in (Finding(c, 0, "x") for c in Code) if f.severity is not Severity.INFO]
    t.see(infos)
    assert t.exit_status == 0 and infos
    t.see(problems[:1])
    assert t.exit_status == 1 and t.problems == 1
    assert (exit_status(0), exit_status(3)) == (0, 1)


def test_legacy_batch_objects_carry_the_v2_fields_as_kafka_reports_them():
    items = _items(FIXTURES / "segment-mixed" / "00000000000000000000.log")
    legacy = [item_object(b) for b in items if isinstance(b, Batch) and b.magic < 2]
    assert legacy
    for o in legacy:
        assert (o["partitionLeaderEpoch"], o["producerId"], o["producerEpoch"], o["baseSequence"]) == (-1, -1, -1, -1)
