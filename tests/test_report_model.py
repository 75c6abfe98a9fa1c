"""The report model: one definition of each object, and the fast writers held equal to it."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

from kafkadump.decode import Batch, Gap, Options, iter_batches
from kafkadump.errors import UsageError
from kafkadump.findings import Code, Finding, Severity
from kafkadump.query import RecordQuery, parse_key, parse_time
from kafkadump.render.jsonl import RecordLines
from kafkadump.report.records import ENCODERS, item_object, record_object
from kafkadump.report.status import Tally, exit_status

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
