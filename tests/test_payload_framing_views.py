"""RecordLines.view_line writes exactly record_object with a payload view, for every encoding,
place and payload option (a fake store and decoder stand for the schema store here)."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

from kafkadump.decoders.batches import Gap
from kafkadump.decoders.batches import Options
from kafkadump.decoders.batches import iter_batches
from kafkadump.decoders.payloads.model import DecodedPayload
from kafkadump.decoders.payloads.model import Schema
from kafkadump.decoders.payloads.view import PayloadInspector
from kafkadump.decoders.payloads.view import Redaction
from kafkadump.render.jsonl import RecordLines
from kafkadump.objects.records import ENCODERS
from kafkadump.objects.records import Place
from kafkadump.objects.records import record_object

SEGMENTS = sorted(FIXTURES.glob("*/*.log"))


def _framed_batch() -> bytes:
    """Framed keys and values (magic 0, ids 1..), one that fails to decode, non-ASCII text, a header id."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    rows = [(b"\x00\x00\x00\x00\x01k" + "\u00e9".encode(), b"\x00\x00\x00\x00\x02v\xe2\x80\xa8", []),
            (None, b"\x00\x00\x00\x00\x03\xff", [("h", b"x")]),
            (b"plain", b"{\"a\": 1}", [("__value_schema_id", b"\x00\x00\x00\x00\x07")]),
            (b"\x00\x01", b"", [])]
    for i, (k, v, h) in enumerate(rows):
        bld.append(i, timestamp=1_700_000_000_000 + i, key=k, value=v, headers=h)
    return bytes(bld.build())


def _batches():
    for path in SEGMENTS:
        yield from iter_batches(path.read_bytes(), str(path), options=Options(records=True))
    yield from iter_batches(_framed_batch(), "/x/t-0/00000000000000000000.log", options=Options(records=True))


class FakeStore:
    """Every id is a JSON schema, "sub-ID" version 1."""

    def lookup(self, schema_id=None, guid=None):
        return Schema(schema_id, "JSON", "{}")


class FakeDecoder:
    """Decodes a payload as its length and text (non-ASCII kept), or fails when it starts with 0xff."""

    def decode(self, schema, payload, message_indexes):
        if payload[:1] == b"\xff":
            return DecodedPayload(error="bad", error_offset=0)
        return DecodedPayload({"n": len(payload), "text": payload.decode("utf-8", "replace"), "password": "p"})


INSPECTORS = {
    "detect": lambda: PayloadInspector(None, None, Redaction(), True),
    "decode": lambda: PayloadInspector(FakeStore(), FakeDecoder(), Redaction(), True),
    "fields": lambda: PayloadInspector(FakeStore(), FakeDecoder(), Redaction(fields=frozenset({"password"})), True),
    "redact": lambda: PayloadInspector(None, None, Redaction(True, True, True), False),
    "redact-detect": lambda: PayloadInspector(FakeStore(), FakeDecoder(), Redaction(False, True, False), True),
}


@pytest.mark.parametrize("inspector", sorted(INSPECTORS))
@pytest.mark.parametrize("encoding", sorted(ENCODERS))
def test_view_lines_write_exactly_record_object(inspector, encoding):
    lines = RecordLines(encoding)
    ins = INSPECTORS[inspector]()
    seen = 0
    for b in _batches():
        if isinstance(b, Gap) or not b.records:
            continue
        for r in b.records:
            view, _ = ins.view(r, b)
            for place in (None, Place("t\u00fc", 1)):
                want = record_object(r, b, ENCODERS[encoding], place, view)
                assert json.loads(lines.view_line(r, b, view, place)) == want
            seen += 1
        views = [ins.view(r, b)[0] for r in b.records]
        many = lines.view_lines(b, b.records, views).splitlines()
        assert [json.loads(x) for x in many] == [record_object(r, b, ENCODERS[encoding], None, v)
                                                 for r, v in zip(b.records, views)]
    assert seen > 100


def test_framed_values_in_the_fixtures_are_seen():
    """The oracle of the test above: some fixture values are framed or fail, so both paths run."""
    ins = INSPECTORS["decode"]()
    kinds, decoded = set(), []
    for b in _batches():
        if isinstance(b, Gap) or not b.records:
            continue
        for r in b.records:
            view, _ = ins.view(r, b)
            for side in (view.key, view.value):
                if side is not None:
                    kinds.add(side.framing.kind)
                    if side.decoded is not None:
                        decoded.append(side.decoded.ok)
    assert {"utf8", "binary", "confluent", "header-id", "json", "empty"} <= kinds
    assert True in decoded and False in decoded
