"""The decoder against the fixtures' own expectations (written by the generator
from its inputs, not by any decoder)."""

import pytest
from conftest import FIXTURES, load_json

from kafkadump.decoders.batches import Batch
from kafkadump.decoders.batches import Gap
from kafkadump.decoders.batches import iter_batches

CLEAN = ["segment-v2/00000000000000000000", "segment-mixed/00000000000000000000"]


def _hex(b):
    return None if b is None else b.hex()


@pytest.mark.parametrize("name", CLEAN)
def test_clean_fixture_matches_expectation(name):
    exp = load_json(FIXTURES / f"{name}.expect.json")
    data = (FIXTURES / f"{name}.log").read_bytes()
    items = list(iter_batches(data, name))
    assert all(isinstance(i, Batch) for i in items)
    assert len(items) == len(exp["batches"])
    for b, e in zip(items, exp["batches"]):
        assert b.findings == [], (b.position, b.findings)
        assert (b.position, b.size, b.magic) == (e["position"], e["size"], e["magic"])
        assert (b.base_offset, b.last_offset, b.record_count) == (e["baseOffset"], e["lastOffset"], e["recordCount"])
        assert b.compression == e["compression"]
        assert b.timestamp_type == e["timestampType"]
        assert b.is_transactional == e["isTransactional"]
        assert b.is_control == e["isControlBatch"]
        assert b.crc == e["crc"] and b.crc_valid
        if b.magic == 2:
            assert (b.producer_id, b.producer_epoch, b.base_sequence) == (
                e["producerId"], e["producerEpoch"], e["baseSequence"])
            assert b.partition_leader_epoch == e["partitionLeaderEpoch"]
            assert b.base_timestamp == e["firstTimestamp"]
            assert b.max_timestamp == e["maxTimestamp"]
            assert b.attributes == e["attributes"]
        assert len(b.records) == len(e["records"])
        for r, er in zip(b.records, e["records"]):
            assert r.offset == er["offset"]
            assert r.timestamp == er["timestamp"]
            assert _hex(r.key) == er["key"]
            assert _hex(r.value) == er["value"]
            assert [[k, _hex(v)] for k, v in r.headers] == er["headers"]
            if er["control"] is None:
                assert r.control is None
            else:
                assert r.control["type"] == er["control"]["type"]
                assert r.control["coordinatorEpoch"] == er["control"]["coordinatorEpoch"]


def test_damaged_fixture_findings_and_recovery():
    exp = load_json(FIXTURES / "damaged/00000000000000000000.expect.json")
    data = (FIXTURES / "damaged/00000000000000000000.log").read_bytes()
    items = list(iter_batches(data, "damaged"))
    intact = [i.position for i in items if isinstance(i, Batch) and i.crc_valid]
    assert intact == exp["intactBatchPositions"]
    dmg = {d["kind"]: d for d in exp["damage"]}
    bad = [i for i in items if isinstance(i, Batch) and not i.crc_valid]
    assert [b.position for b in bad] == [dmg["crc"]["batchPosition"]]
    assert bad[0].computed_crc == dmg["crc"]["computedCrc"]
    assert [(f.code.value, f.offset) for f in bad[0].findings] == [("crc-mismatch", bad[0].position + 17)]
    gaps = [i for i in items if isinstance(i, Gap)]
    assert (gaps[0].position, gaps[0].position + gaps[0].size) == (dmg["garbage"]["start"], dmg["garbage"]["end"])
    assert "garbage" in {f.code.value for f in gaps[0].findings}
    assert gaps[1].position == dmg["truncated"]["position"]
    assert [f.code.value for f in gaps[1].findings] == ["truncated"]
    assert gaps[1].position + gaps[1].size == len(data)


def test_zero_padding_is_info_not_damage():
    data = (FIXTURES / "damaged/padded.log").read_bytes()
    items = list(iter_batches(data, "padded"))
    assert isinstance(items[-1], Gap)
    assert [(f.code.value, f.severity.value) for f in items[-1].findings] == [("zero-padding", "info")]
    assert all(i.crc_valid for i in items[:-1])
