"""JSON for jq (issue 14, item 5): text keys and values as strings, other bytes as {"base64": ...},
records placed in their topic and partition, and capture records saying where they were seen.

Every check goes through the CLI as a user runs it; the jq queries run the real ``jq`` when it is
installed, else the same selection in Python.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

import builders as bld
import capture_builders as cb
import pytest
from conftest import FIXTURES

V2 = FIXTURES / "segment-v2" / "00000000000000000000.log"
JQ = shutil.which("jq")

# one record of each kind of bytes, by an encoder independent of kafkadump's decoder
KINDS = [
    bld.Rec(b"user-1", b'{"name":"alice"}', headers=(("trace", b"abc"), ("bin", b"\xff\x00"))),
    bld.Rec(b"\x00\x01binary", "z\u00fcrich\nline two".encode()),   # Avro-like key: NUL
    bld.Rec("cl\u00e9".encode(), b"esc\x1b[2J"),                      # C0 control in the value
    bld.Rec(None, b"\xc3\x28"),                                       # null key; invalid UTF-8
    bld.Rec(b"", "c1\u009b".encode()),                                # empty key; a C1 control
]


def kd(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, text=True, timeout=120)


def jq(query: str, text: str, python_equivalent) -> list:
    """``jq -c QUERY`` over JSON lines, as objects; without jq, ``python_equivalent`` over the lines."""
    lines = [json.loads(x) for x in text.splitlines()]
    if JQ is None:
        return [o for o in lines if python_equivalent(o)]
    r = subprocess.run([JQ, "-c", query], input=text, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert out == [o for o in lines if python_equivalent(o)]  # the Python form says the same
    return out


def partition_dir(tmp_path: Path, name: str, data: bytes) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(data)
    return d


def test_the_obvious_jq_query_finds_a_text_key_with_no_option():
    r = kd("records", "--json", str(V2))
    assert r.returncode == 0, r.stderr
    found = jq('select(.key == "user-1")', r.stdout, lambda o: o.get("key") == "user-1")
    assert [o["offset"] for o in found] == [0]
    assert found[0]["value"] == '{"name":"alice","plan":"pro"}'
    assert found[0]["headers"][0] == {"key": "trace-id", "value": "4bf92f3577b34da6"}


def test_every_byte_field_is_null_text_or_a_base64_object_and_lossless(tmp_path):
    d = partition_dir(tmp_path, "events-0", bld.v2_batch(0, KINDS).data)
    r = kd("records", "--json", str(d))
    assert r.returncode == 0, r.stderr
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    assert [o["key"] for o in recs] == ["user-1", {"base64": base64.b64encode(b"\x00\x01binary").decode()},
                                        "cl\u00e9", None, ""]
    assert [o["value"] for o in recs] == [
        '{"name":"alice"}', "z\u00fcrich\nline two", {"base64": base64.b64encode(b"esc\x1b[2J").decode()},
        {"base64": "wyg="}, {"base64": base64.b64encode("c1\u009b".encode()).decode()}]
    assert recs[0]["headers"] == [{"key": "trace", "value": "abc"}, {"key": "bin", "value": {"base64": "/wA="}}]

    def back(v):
        return None if v is None else v.encode() if isinstance(v, str) else base64.b64decode(v["base64"])

    assert [(back(o["key"]), back(o["value"])) for o in recs] == [(k.key, k.value) for k in KINDS]
    # type-stable: each byte field is one of three types, whatever the record
    for o in recs:
        for v in (o["key"], o["value"], *(h["value"] for h in o["headers"])):
            assert v is None or isinstance(v, str) or (isinstance(v, dict) and list(v) == ["base64"])


def test_jq_idioms_of_the_man_page(tmp_path):
    d = partition_dir(tmp_path, "events-0", bld.v2_batch(0, KINDS).data)
    r = kd("records", "--json", str(d))
    binary = jq("select(.key | objects)", r.stdout, lambda o: isinstance(o["key"], dict))
    assert [o["offset"] for o in binary] == [1]
    if JQ is None:
        pytest.skip("jq is not installed: the @base64 idiom needs it")
    q = subprocess.run([JQ, "-r", '.value | if type == "object" then .base64 else @base64 end'],
                       input=r.stdout, capture_output=True, text=True, timeout=60)
    assert [base64.b64decode(x) for x in q.stdout.split()] == [k.value for k in KINDS]


@pytest.mark.parametrize("enc, key", [("base64", base64.b64encode(b"user-1").decode()),
                                      ("hex", b"user-1".hex()), ("text", "user-1")])
def test_the_other_encodings_keep_their_meaning(enc, key):
    recs = [json.loads(x) for x in kd("records", "--json", "--encoding", enc, str(V2)).stdout.splitlines()]
    assert recs[0]["key"] == key
    binary = next(o for o in recs if o["offset"] == 5)   # key 00 ff fe 80 'bin'
    assert isinstance(binary["key"], str)
    if enc == "base64":
        assert base64.b64decode(binary["key"]) == b"\x00\xff\xfe\x80bin"
    elif enc == "hex":
        assert binary["key"] == b"\x00\xff\xfe\x80bin".hex()
    else:
        assert binary["key"] == "\x00\ufffd\ufffd\ufffdbin"


def test_records_carry_topic_and_partition_from_the_directory(tmp_path):
    data = bld.v2_batch(0, KINDS[:2]).data
    for name, want in (("orders-3", ("orders", 3)), ("my-topic-12", ("my-topic", 12)),
                       ("orders-3.0123456789abcdef0123456789abcdef-delete", ("orders", 3)),
                       ("not_a_partition", (None, None))):
        d = partition_dir(tmp_path, name, data)
        for arg in (d, d / "00000000000000000000.log"):
            r = kd("records", "--json", str(arg))
            assert r.returncode == 0, r.stderr
            assert {(o["topic"], o["partition"]) for o in map(json.loads, r.stdout.splitlines())} == {want}
    r = kd("records", "--json", str(V2))   # fixtures/segment-v2 is no partition's name
    assert {(o.get("topic"), o.get("partition")) for o in map(json.loads, r.stdout.splitlines())
            if o["type"] == "record"} == {(None, None)}
    # jq by topic and partition across two partitions of a log dir
    log_dir = tmp_path / "logdir"
    log_dir.mkdir()
    partition_dir(log_dir, "orders-0", data)
    partition_dir(log_dir, "payments-1", data)
    r = kd("records", "--json", str(log_dir))
    assert r.returncode == 0, r.stderr
    found = jq('select(.topic == "payments" and .partition == 1)', r.stdout,
               lambda o: o.get("topic") == "payments" and o.get("partition") == 1)
    assert [o["key"] for o in found] == ["user-1", {"base64": base64.b64encode(b"\x00\x01binary").decode()}]


def test_decoded_internal_lines_carry_topic_and_partition(tmp_path):
    d = partition_dir(tmp_path, "__consumer_offsets-7", bld.v2_batch(0, [bld.Rec(None, None)]).data)
    o = json.loads(kd("records", "--json", str(d)).stdout.splitlines()[0])
    assert (o["topic"], o["partition"], o["decoded"]) == ("__consumer_offsets", 7, "offsets")


# --- capture --records --json ------------------------------------------------------------------

def conversation_pcap(tmp_path: Path) -> tuple[Path, cb.Conversation, dict]:
    """A Produce v3 request (topic "orders", partition 2) and a Fetch v12 response (topic "t", 0)."""
    produced = bld.v2_batch(0, KINDS[:2]).data
    fetched = bld.v2_batch(40, KINDS[2:4]).data
    c = cb.Conversation(client=("127.0.0.1", 50000), server=("127.0.0.1", 9092))
    idx = {"produce": c.send("c", cb.produce_v3_request(1, produced, topic="orders", partition=2)),
           "fetch_req": c.send("c", cb.fetch_v12_request(2)),
           "fetch_resp": c.send("s", cb.fetch_v12_response(2, [(0, fetched, b"\x00")]))}
    c.close()
    p = tmp_path / "c.pcap"
    p.write_bytes(cb.pcap([(t, pkt) for t, pkt, _ in c.packets])[0])
    return p, c, idx


def test_capture_records_say_where_they_were_seen(tmp_path):
    p, c, idx = conversation_pcap(tmp_path)
    r = kd("capture", "--records", "--json", str(p))
    assert r.returncode == 0, r.stderr
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(recs) == 4
    produced, fetched = recs[:2], recs[2:]
    conn = {"id": 0, "client": "127.0.0.1:50000", "server": "127.0.0.1:9092", "detected": False}
    for o in produced:
        assert (o["frame"], o["api"], o["direction"], o["topic"], o["partition"], o["offsetRelative"]) == \
            (0, "Produce", "request", "orders", 2, True)
        assert o["connection"] == conn
        assert o["time"] == pytest.approx(c.packets[idx["produce"][-1]][0], abs=1e-6)
        assert o["timeText"].startswith("2023-11-14T22:13:20.")
    assert [o["offset"] for o in produced] == [0, 1]
    for o in fetched:
        assert (o["frame"], o["api"], o["direction"], o["topic"], o["partition"], o["offsetRelative"]) == \
            (2, "Fetch", "response", "t", 0, False)
        assert o["connection"] == conn
        assert o["time"] == pytest.approx(c.packets[idx["fetch_resp"][-1]][0], abs=1e-6)
    assert [o["offset"] for o in fetched] == [40, 41]
    # the record fields are those of records --json, text keys as strings
    assert [o["key"] for o in recs] == ["user-1", {"base64": base64.b64encode(b"\x00\x01binary").decode()},
                                        "cl\u00e9", None]
    found = jq('select(.api == "Produce" and .key == "user-1")', r.stdout,
               lambda o: o["api"] == "Produce" and o["key"] == "user-1")
    assert [o["frame"] for o in found] == [0]


def test_capture_frame_json_places_its_records(tmp_path):
    p, _, _ = conversation_pcap(tmp_path)
    frames = [json.loads(x) for x in kd("capture", "--json", str(p)).stdout.splitlines()]
    produce = frames[0]
    recs = produce["body"]["topicData"][0]["partitionData"][0]["records"]["batches"][0]["records"]
    assert [(o["topic"], o["partition"], o["key"]) for o in recs] == \
        [("orders", 2, "user-1"), ("orders", 2, {"base64": base64.b64encode(b"\x00\x01binary").decode()})]


def test_bare_record_data_has_no_api_nor_direction(tmp_path):
    p = tmp_path / "batch.bin"
    p.write_bytes(bld.v2_batch(5, KINDS[:1]).data)
    o = json.loads(kd("capture", "--records", "--json", str(p)).stdout)
    assert (o["api"], o["direction"], o["connection"], o["offsetRelative"], o["offset"], o["key"]) == \
        (None, None, None, False, 5, "user-1")
