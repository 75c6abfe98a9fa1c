"""Issue 26, defect classes 1-3 for payloads and the schema store: no payload stops the records around
it, work linear in the input, memory bounded whatever the schemas hold.

Each class has a generator in ``fuzz/hostile_payloads.py``.  Work is counted (``WORK.payload_bytes``,
``WORK.schemas``, never a clock); memory is the peak RSS of the real CLI from the kernel
(``measured.kd``), under 200 MB.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest
from cli_inprocess import run
from measured import RSS_LIMIT_MB, findings_of, json_lines, kd

from kafkadump.decoders.batches.work import WORK
from kafkadump.decoders.payloads.framing import MAX_JSON_DEPTH
from kafkadump.decoders.payloads.framing import detect_framing
from kafkadump.decoders.payloads.framing import json_too_deep

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import hostile_payloads as hp  # noqa: E402

pytest.importorskip("fastavro")

MUTATION_CODES = {"payload-limit"}
GOOD_VALUES = [hp.GOOD[0].decode(), hp.GOOD[1].decode()]


def doubles(small: int, large: int) -> bool:
    return small > 0 and 1.6 <= large / small <= 2.5


def value_position(segment: Path, index: int) -> int:
    """The file offset where record ``index``'s value starts (walked from the v2 format by hand)."""
    data = segment.read_bytes()
    pos = 61
    for i in range(index + 1):
        length, pos = _varint(data, pos)
        start = pos
        pos += 1  # attributes
        for _ in range(2):  # timestamp and offset deltas
            _, pos = _varint(data, pos)
        klen, pos = _varint(data, pos)
        pos += max(klen, 0)
        vlen, pos = _varint(data, pos)
        if i == index:
            return pos
        pos = start + length
    raise AssertionError


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


# --- class 1: a value nested past the parser's stack is a finding on its record --------------------------

def test_json_nesting_is_measured_outside_strings_and_linearly():
    assert json_too_deep(b"[" * 2000) == MAX_JSON_DEPTH
    assert json_too_deep(b'{"a":' * 65 + b"1" + b"}" * 65) == 5 * MAX_JSON_DEPTH
    assert json_too_deep(b'["' + b"[" * 500 + b'"]') is None       # brackets inside a string
    assert json_too_deep(b'["\\"' + b"[" * 500 + b'"]') is None   # after an escaped quote: still inside
    assert json_too_deep(b"[" * 64 + b"]" * 64) is None
    assert detect_framing(b"[" * 2000).kind == "utf8" and detect_framing(b"[[1]]").kind == "json"
    WORK.reset()
    json_too_deep(b"[" * 100_000)
    small = WORK.payload_bytes
    WORK.reset()
    json_too_deep(b"[" * 200_000)
    assert small == 100_000 and WORK.payload_bytes == 200_000


@pytest.mark.parametrize("cmd", [["records", "--json", "--detect"], ["records", "--json", "--redact-fields", "pw"]])
def test_deep_json_value_is_a_finding_and_the_records_around_it_stay(tmp_path, cmd):
    seg = hp.deep_json(tmp_path, 2000)
    r = run(*cmd, str(seg))
    assert r.returncode == 1, r.stderr
    docs = json_lines(r.stdout)
    recs = [d for d in docs if d["type"] == "record"]
    assert [x["offset"] for x in recs] == [0, 1, 2]
    if "--redact-fields" in cmd:  # no value shown as its bytes; the JSON one decoded, the others masked whole
        assert [x["value"]["length"] for x in recs] == [8, 2000, 10]
        assert recs[0]["valuePayload"]["format"] == "json"
        limit = [f for f in findings_of(docs) if f["code"] != "payload-masked"]
    else:
        assert recs[0]["value"] == GOOD_VALUES[0] and recs[2]["value"] == GOOD_VALUES[1]
        limit = findings_of(docs)
    assert recs[1]["valuePayload"]["format"] == "utf8"
    (f,) = limit
    assert f["code"] == "payload-limit" and f["severity"] == "warning"
    assert f["offset"] == value_position(seg, 1) + MAX_JSON_DEPTH
    assert f["length"] == 2000 - MAX_JSON_DEPTH


@pytest.mark.parametrize("cmd", [["records", "--detect"], ["hexdump", "--detect"]])
def test_deep_json_in_the_human_formats(tmp_path, cmd):
    seg = hp.deep_json(tmp_path, 2000)
    r = run(*cmd, str(seg))
    assert r.returncode == 1 and "payload-limit" in r.stdout and "internal error" not in r.stderr
    assert "plain text" in r.stdout or cmd[0] == "hexdump"


def test_deep_json_in_a_capture(tmp_path):
    from capture_builders import Conversation, pcap, produce_v3_request

    c = Conversation()
    c.send("c", produce_v3_request(1, hp.batch(0, [(None, hp.GOOD[0]), (None, b"[" * 2000),
                                                   (None, hp.GOOD[1])])), 700)
    c.close()
    data, _ = pcap([(t, p) for t, p, _ in c.packets])
    path = tmp_path / "deep.pcap"
    path.write_bytes(data)
    r = run("capture", "--records", "--json", "--detect", str(path))
    recs = [d for d in json_lines(r.stdout) if d.get("type") == "record"]
    assert [x["value"] for x in recs] == [GOOD_VALUES[0], "[" * 2000, GOOD_VALUES[1]]
    for cmd in (["capture", "--json", "--detect"], ["capture", "--json", "--redact-fields", "pw"]):
        r = run(*cmd, str(path))
        assert r.returncode == 1, r.stderr
        assert "payload-limit" in {f["code"] for f in findings_of(json_lines(r.stdout))}


def test_deep_json_cli_bounded(tmp_path):
    seg = hp.deep_json(tmp_path, 1_000_000)
    rc, out, err, rss = kd("records", "--json", "--detect", str(seg))
    assert rc == 1 and rss < RSS_LIMIT_MB, (rc, err, rss)
    assert [d["offset"] for d in json_lines(out) if d["type"] == "record"] == [0, 1, 2]


def test_deep_framed_json_is_malformed_not_a_crash(tmp_path):
    seg = hp.deep_framed_json(tmp_path, 5000)
    r = run("records", "--json", "--detect", str(seg))
    docs = json_lines(r.stdout)
    recs = [d for d in docs if d["type"] == "record"]
    assert [x["valuePayload"].get("decoded") for x in recs] == [[1], None, [2]]
    assert [f["code"] for f in findings_of(docs)] == ["payload-malformed"]


# --- classes 2 and 3: decimals converted in bounded time and memory ---------------------------------------

def _decoded(seg: Path) -> tuple[int, list, list]:
    r = run("records", "--json", "--detect", str(seg))
    docs = json_lines(r.stdout)
    recs = [d["valuePayload"].get("decoded") for d in docs if d["type"] == "record"]
    return r.returncode, recs, findings_of(docs)


def test_a_long_decimal_is_refused_at_its_first_byte(tmp_path):
    seg = hp.long_decimal(tmp_path, 200_000)
    rc, recs, found = _decoded(seg)
    assert rc == 1 and recs == [{"amount": "12.34"}, None, {"amount": "12.34"}]
    (f,) = found
    # the value: magic, id (5 bytes), the length varint (3 bytes), then the unscaled bytes
    assert f["code"] == "payload-limit" and f["offset"] == value_position(seg, 1) + 5 + 3
    assert f["length"] == 200_000 and "200000 bytes" in f["message"]


def test_long_decimal_work_is_linear(tmp_path):
    counts = []
    for n in (100_000, 200_000):
        seg = hp.long_decimal(tmp_path / str(n), n)
        WORK.reset()
        _decoded(seg)
        counts.append(WORK.payload_bytes)
    assert doubles(*counts), counts


def test_huge_scale_is_a_finding_not_a_megabyte_string(tmp_path):
    seg = hp.huge_scale(tmp_path, 999_999, count=3)
    rc, recs, found = _decoded(seg)
    assert rc == 1 and recs == [None, None, None]
    assert [f["code"] for f in found] == ["payload-limit"] * 3
    assert found[0]["offset"] == value_position(seg, 0) + 5 + 1 and "scale 999999" in found[0]["message"]


def test_decimals_within_the_limit_are_exact(tmp_path):
    from kafkadump.decoders.payloads.decode import PayloadDecoder
    from kafkadump.decoders.payloads.model import Schema
    from kafkadump.decoders.payloads.store import SchemaStore

    dec = PayloadDecoder(SchemaStore())
    schema = Schema(1, "AVRO", hp.decimal_schema(60, 30))
    unscaled = -(10 ** 45 + 7)
    raw = unscaled.to_bytes(20, "big", signed=True)
    got = dec.decode(schema, hp.varint(len(raw)) + raw)
    assert got.ok and got.value == {"amount": "-1000000000000000.000000000000000000000000000007"}
    # past the precision: shown exactly, not rounded to it
    small = Schema(2, "AVRO", hp.decimal_schema(3, 1))
    assert dec.decode(small, hp.varint(2) + (12345).to_bytes(2, "big")).value == {"amount": "1234.5"}
    bad = Schema(3, "AVRO", hp.decimal_schema(3, 5))
    assert "scale" in dec.decode(bad, b"\x00").error


def test_huge_scale_cli_bounded(tmp_path):
    seg = hp.huge_scale(tmp_path, 999_999, count=2000)
    rc, out, err, rss = kd("records", "--json", "--detect", str(seg))
    assert rc == 1 and rss < RSS_LIMIT_MB, (rc, err, rss)
    assert [f["code"] for f in findings_of(json_lines(out))] == ["payload-limit"] * 2000


def test_payload_limit_mutation(tmp_path):
    """The mutation test of ``payload-limit``: one good JSON value made 100 levels deep; the finding is at
    the 65th bracket, absolute, and the exit status 1 (a warning)."""
    seg = hp.write_logdir(tmp_path, [b'{"a":[1]}', b'{"b":[2]}'])
    ok = run("records", "--json", "--detect", str(seg))
    assert ok.returncode == 0 and findings_of(json_lines(ok.stdout)) == []
    mutated = hp.write_logdir(tmp_path / "m", [b'{"a":[1]}', b"[" * 100 + b"]" * 100])
    at = value_position(mutated, 1)
    assert at == value_position(seg, 1) + 2  # the record's length varint grew by a byte, the value's too
    r = run("records", "--json", "--detect", str(mutated))
    (f,) = findings_of(json_lines(r.stdout))
    assert r.returncode == 1 and (f["code"], f["offset"], f["length"]) == ("payload-limit", at + 64, 136)
    assert struct.unpack(">q", mutated.read_bytes()[:8]) == (0,)
    assert json.loads(json.dumps(f))["severity"] == "warning"


# --- class 2: Protobuf schemas compiled in this process, work linear in the schemas used -----------------

def test_protobuf_schemas_compile_in_process_one_each(tmp_path, monkeypatch):
    pytest.importorskip("grpc_tools")
    import subprocess

    def no_child(*args, **kwargs):
        raise AssertionError("a child process was started")

    monkeypatch.setattr(subprocess, "Popen", no_child)
    counts = []
    for n in (20, 40):
        seg = hp.many_protobuf(tmp_path / str(n), n)
        WORK.reset()
        r = run("records", "--json", "--detect", str(seg))
        assert r.returncode == 0, r.stdout[-500:]
        recs = [d["valuePayload"] for d in json_lines(r.stdout) if d["type"] == "record"]
        assert [v["decoded"] for v in recs] == [{"n": i % 100, "s": "hi", "xs": []} for i in range(1, n + 1)]
        assert [v["subject"] for v in recs[:2]] == ["p1-value", "p2-value"]
        counts.append(WORK.schemas)
    assert counts == [20, 40]


def test_protobuf_schema_errors_are_reasons(tmp_path):
    pytest.importorskip("grpc_tools")
    from kafkadump.decoders.payloads.decode import PayloadDecoder
    from kafkadump.decoders.payloads.model import Schema
    from kafkadump.decoders.payloads.store import SchemaStore

    dec = PayloadDecoder(SchemaStore())
    got = dec.decode(Schema(9, "PROTOBUF", 'syntax = "proto3";\nmessage Bad { int32 n = 1 \n'), b"")
    assert got.error.startswith("schema id 9 does not compile: kafkadump_schema.proto:2:0: Expected")
    unused = 'syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\nmessage W { int32 n = 1; }\n'
    assert dec.decode(Schema(10, "PROTOBUF", unused), b"\x08\x05").value == {"n": 5}


def test_many_protobuf_schemas_cli_bounded(tmp_path):
    pytest.importorskip("grpc_tools")
    seg = hp.many_protobuf(tmp_path, 300)
    rc, out, err, rss = kd("records", "--json", "--detect", str(seg))
    assert rc == 0 and rss < RSS_LIMIT_MB, (rc, err[-300:], rss)
    assert sum('"decoded"' in line for line in out.splitlines()) == 300


# --- class 3: the schema store grows with its texts, not with versions; schemas made when looked up ----------

def test_many_versions_fold_compactly_and_answer_lookups(tmp_path):
    from kafkadump.decoders.payloads.store import SchemaStore

    seg = hp.many_versions(tmp_path, 3000, per_batch=500)
    store = SchemaStore.load([tmp_path / "_schemas-0"])
    (topic,) = store.topics
    assert sum(len(v) for v in topic.versions.values()) == 3000 and len(topic.ids) == 3000
    s = store.lookup(schema_id=2999)
    assert (s.id, s.subject, s.version, s.text, s.deleted) == (2999, "s-value", 2999, '"string"', False)
    assert s.source.endswith("_schemas-0/00000000000000000000.log offset 2998")
    assert store.lookup(schema_id=3001) is None and len(store) == 3000
    r = run("records", "--json", "--detect", str(seg))
    (rec,) = [d for d in json_lines(r.stdout) if d["type"] == "record"]
    assert rec["valuePayload"]["decoded"] == "hi" and rec["valuePayload"]["version"] == 1


def test_store_work_is_linear_in_versions(tmp_path):
    from kafkadump.decoders.payloads.store import SchemaStore

    counts = []
    for n in (4000, 8000):
        hp.many_versions(tmp_path / str(n), n, per_batch=500)
        WORK.reset()
        store = SchemaStore.load([tmp_path / str(n) / "_schemas-0"])
        store.lookup(schema_id=1)
        counts.append(WORK.total())
    assert doubles(*counts), counts


def test_300000_versions_in_bounded_memory(tmp_path):
    seg = hp.many_versions(tmp_path, 300_000)
    rc, out, err, rss = kd("records", "--json", "--detect", str(seg))
    assert rc == 0 and rss < RSS_LIMIT_MB, (rc, err[-300:], rss)
    (rec,) = [d for d in json_lines(out) if d["type"] == "record"]
    assert rec["valuePayload"]["decoded"] == "hi" and rec["valuePayload"]["subject"] == "s-value"


def test_a_3_million_symbol_enum_is_a_limit_not_500_mb(tmp_path):
    seg = hp.big_enum(tmp_path, 3_000_000)
    rc, out, err, rss = kd("records", "--json", "--detect", str(seg))
    assert rc == 1 and rss < RSS_LIMIT_MB, (rc, err[-300:], rss)
    docs = json_lines(out)
    values = [d["value"] for d in docs if d["type"] == "record"]
    assert len(values) == 3 and values[0] == values[2] == "plain text"
    (f,) = findings_of(docs)
    assert f["code"] == "payload-limit" and "over the limit of 200000: not compiled" in f["message"]
    assert f["offset"] == value_position(seg, 1) + 5


def test_enum_symbols_within_the_limit_decode(tmp_path):
    seg = hp.big_enum(tmp_path, 50_000)
    r = run("records", "--json", "--detect", str(seg))
    recs = [d for d in json_lines(r.stdout) if d["type"] == "record"]
    assert r.returncode == 0 and recs[1]["valuePayload"]["decoded"] == {"e": "S49999"}


# --- class 3: what one decoded value may expand to ----------------------------------------------------------

def test_a_long_enum_symbol_repeated_is_a_limit_not_a_terabyte_line(tmp_path):
    from kafkadump.decoders.payloads.decode import PayloadDecoder
    from kafkadump.decoders.payloads.model import Schema
    from kafkadump.decoders.payloads.store import SchemaStore

    symbol = "S" * 100_000
    schema = Schema(1, "AVRO", json.dumps({"type": "array", "items": {"type": "enum", "name": "E",
                                                                      "symbols": [symbol, "B"]}}))
    dec = PayloadDecoder(SchemaStore())
    few = hp.varint(3) + b"\x00\x00\x00" + b"\x00"
    assert dec.decode(schema, few).value == [symbol] * 3
    many = hp.varint(5000) + b"\x00" * 5000 + b"\x00"  # 5 KB of payload, 500 MB of JSON
    got = dec.decode(schema, many)
    assert got.limit and got.value is None and "more than 16777216 bytes as JSON" in got.error


def test_empty_messages_printing_every_field_are_bounded():
    pytest.importorskip("grpc_tools")
    from kafkadump.decoders.payloads.decode import PayloadDecoder
    from kafkadump.decoders.payloads.model import PayloadLimits
    from kafkadump.decoders.payloads.model import Schema
    from kafkadump.decoders.payloads.store import SchemaStore

    fields = " ".join(f"int32 f{i} = {i};" for i in range(1, 501))
    text = f'syntax = "proto3";\nmessage Wide {{ {fields} }}\nmessage Top {{ repeated Wide w = 1; }}\n'
    dec = PayloadDecoder(SchemaStore(), PayloadLimits(max_items=10_000))
    ok = dec.decode(Schema(1, "PROTOBUF", text), b"\x0a\x00" * 10, (1,))
    assert len(ok.value["w"]) == 10 and len(ok.value["w"][0]) == 500
    got = dec.decode(Schema(1, "PROTOBUF", text), b"\x0a\x00" * 30, (1,))   # 60 bytes, 15,000 fields shown
    assert got.value is None and got.error == "more than 10000 fields shown"
