"""capture with the payload options: --detect / --schemas, --where, --redact and --redact-fields on the
records that Produce requests carry in a pcap.

The values are framed by confluent-kafka's AvroSerializer (mock registry, no network), the schema
given as a registry export; keys, values and header values carry the marker QZXJ so that any form
of them (text, hex, base64, hexdump rows) can be looked for, as in test_redact.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct

import pytest
from capture_builders import Conversation, pcap, produce_v3_request
from cli_inprocess import run
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from redaction_evidence import (
    MARK,
    SCHEMA,
    AvroSerializer,
    MessageField,
    MockSchemaRegistryClient,
    SerializationContext,
    leaks,
)


def _batch(values: list[bytes], keys: list[bytes], compression: int = 0, header: bytes = b"HDR" + MARK) -> bytes:
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=compression, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, (k, v) in enumerate(zip(keys, values)):
        bld.append(i, timestamp=1_700_000_000_000 + i, key=k, value=v, headers=[("trace", header)])
    return bytes(bld.build())


@pytest.fixture(scope="module")
def evidence(tmp_path_factory):
    """A pcap of three Produce requests to ``users``: a plain batch of 3 records, a gzip batch
    of 30, and a batch whose values are framed but do not decode (id 1: truncated; id 99: unknown)."""
    root = tmp_path_factory.mktemp("capture-payloads")
    registry = MockSchemaRegistryClient({"url": "mock://test"})
    ser = AvroSerializer(registry, SCHEMA)
    values = [ser({"id": str(i), "password": (MARK + b"-%d" % i).decode(), "age": 30 + i},
                  SerializationContext("users", MessageField.VALUE)) for i in range(3)]
    assert values[0][:5] == b"\x00\x00\x00\x00\x01"   # magic 0, schema id 1
    keys = [b"KEY" + MARK + b"%d" % i for i in range(3)]
    gz = _batch(values * 10, keys * 10, 1)
    assert gz[21:23] == b"\x00\x01"  # gzip
    bad = _batch([values[0][:8], b"\x00\x00\x00\x00\x63" + b"\x02x"], [b"k1", b"k2"])
    c = Conversation()
    frames = [produce_v3_request(1, _batch(values, keys), topic="users"),
              produce_v3_request(2, gz, topic="users"), produce_v3_request(3, bad, topic="users")]
    for f in frames:
        c.send("c", f, 700)
    c.close()
    data, _ = pcap([(t, p) for t, p, _ in c.packets])
    path = root / "users.pcap"
    path.write_bytes(data)
    export = root / "schemas.json"
    export.write_text(json.dumps([{"subject": "users-value", "version": 1, "id": 1, "schema": SCHEMA}]))
    return path, export, values, keys, frames


def _lines(out: str) -> list[dict]:
    return [json.loads(x) for x in out.splitlines()]


def test_records_decoded_with_schemas(evidence):
    path, export, values, keys, _ = evidence
    r = run("capture", "--records", "--json", "--schemas", str(export), str(path))
    recs = _lines(r.stdout)
    assert len(recs) == 35
    first = recs[0]
    assert (first["frame"], first["api"], first["topic"], first["partition"]) == (0, "Produce", "users", 0)
    assert first["valuePayload"]["format"] == "avro"
    assert first["valuePayload"]["schemaId"] == 1 and first["valuePayload"]["subject"] == "users-value"
    assert first["valuePayload"]["decoded"] == {"id": "0", "password": (MARK + b"-0").decode(), "age": 30}
    assert first["keyPayload"]["format"] == "utf8" and first["keyPayload"]["schemaId"] is None
    # the gzip batch's records decode alike
    assert [x["valuePayload"]["decoded"]["age"] for x in recs[3:33]] == [30, 31, 32] * 10
    assert all(x["frame"] == 1 for x in recs[3:33])


def test_detect_alone_names_the_framing(evidence):
    path = evidence[0]
    recs = _lines(run("capture", "--records", "--json", "--detect", str(path)).stdout)
    v = recs[0]["valuePayload"]
    assert (v["framing"], v["schemaId"], v["format"], v["certain"]) == ("confluent", 1, None, True)
    assert "decoded" not in v


def test_findings_at_capture_offsets(evidence):
    path, export, values, keys, frames = evidence
    r = run("capture", "--json", "--schemas", str(export), str(path))
    assert r.returncode == 1   # payload-malformed is a problem
    out = _lines(r.stdout)
    third = [x for x in out if x.get("type") == "frame" and x["index"] == 2][0]
    codes = {f["code"]: f for f in third["findings"]}
    assert set(codes) == {"payload-malformed", "schema-unknown"}
    # the offset is where the bad value's payload starts in the client's stream: the frame's
    # position plus the value's place in the frame (found by its bytes, an independent oracle)
    base = sum(len(f) for f in frames[:2])
    bad_value = values[0][:8]
    at = frames[2].index(bad_value)
    assert codes["payload-malformed"]["offset"] == base + at + 5
    assert codes["schema-unknown"]["offset"] == base + frames[2].index(b"\x00\x00\x00\x00\x63\x02x")
    # the records of the frame carry their views in the frame's JSON too
    recs = third["body"]["topicData"][0]["partitionData"][0]["records"]["batches"][0]["records"]
    assert recs[0]["valuePayload"]["error"] and recs[1]["valuePayload"]["format"] is None


def test_where_filters_records_and_frames(evidence):
    path, export = evidence[0], evidence[1]
    r = run("capture", "--records", "--json", "--schemas", str(export), "--where", "value.age == 31", str(path))
    recs = _lines(r.stdout)
    assert len(recs) == 11 and {x["valuePayload"]["decoded"]["id"] for x in recs} == {"1"}
    r = run("capture", "--records", "--json", "--where", 'frame == 1 and direction == "request"', str(path))
    assert len(_lines(r.stdout)) == 30
    r = run("capture", "--records", "--json", "--where", 'api == "Fetch"', str(path))
    assert r.stdout == ""
    r = run("capture", "--records", "--json", "--where", 'topic == "users" and offset == 1', str(path))
    assert len(_lines(r.stdout)) == 3   # the producer's relative offsets: one per batch
    frames = [x for x in _lines(run("capture", "--json", "--schemas", str(export), "--where", "value.age == 31",
                                    str(path)).stdout) if x.get("type") == "frame"]
    assert [f["index"] for f in frames] == [0, 1]
    table = run("capture", "--records", "--wide", "--schemas", str(export), "--where", "value.age == 32", str(path))
    assert table.stdout.count("users") == 11


FORMATS = [["--records", "--json"], ["--records", "--json", "--encoding", "hex"],
           ["--records", "--json", "--encoding", "base64"], ["--records", "--json", "--encoding", "text"],
           ["--records", "--wide"], ["--json"], ["--json", "--encoding", "hex"], ["--wide"],
           ["--frame", "0"], ["--frame", "0", "--hexdump", "--records"], ["--frame", "1", "--hexdump", "--records"],
           ["--frame", "0", "--hexdump", "--json"], ["--frame", "1", "--hexdump", "--json"]]


@pytest.mark.parametrize("args", FORMATS, ids=" ".join)
def test_redact_all_parts_leaves_nothing(evidence, args):
    path, export, values, keys, _ = evidence
    r = run("capture", *args, "--redact", "keys,values,headers", "--schemas", str(export), str(path))
    assert r.returncode in (0, 1), r.stderr
    assert leaks(r.stdout, values + keys) == []


@pytest.mark.parametrize("args", [a for a in FORMATS if "--records" in a or a[0] == "--json"], ids=" ".join)
def test_redact_fields_masks_decoded_and_hides_the_bytes(evidence, args):
    path, export, values, keys, _ = evidence
    r = run("capture", *args, "--redact", "keys,headers", "--redact-fields", "password", "--schemas", str(export),
            str(path))
    assert r.returncode in (0, 1), r.stderr
    # the framing bytes are no secret (the truncated value of frame 2, shown as it did not decode,
    # begins as the others do): the payloads after them are
    assert leaks(r.stdout, [v[5:] for v in values] + keys) == []
    if "--json" in args and "--hexdump" not in args:
        assert "[redacted]" in r.stdout


@pytest.mark.parametrize("args", [["--records", "--json"], ["--records", "--wide"], ["--json"],
                                  ["--frame", "0", "--hexdump", "--records"]], ids=" ".join)
def test_without_redaction_the_marker_is_there(evidence, args):
    """The oracle of the tests above: each format shows the marker when nothing is redacted."""
    path, export, values, keys, _ = evidence
    assert leaks(run("capture", *args, "--schemas", str(export), str(path)).stdout, values + keys)


def test_digest_and_length(evidence):
    path, export, values, keys, _ = evidence
    recs = _lines(run("capture", "--records", "--json", "--redact", "keys,values,headers", str(path)).stdout)
    assert recs[0]["key"] == {"redacted": "sha256:" + hashlib.sha256(keys[0]).hexdigest(), "length": len(keys[0])}
    assert recs[1]["value"] == {"redacted": "sha256:" + hashlib.sha256(values[1]).hexdigest(),
                                "length": len(values[1])}
    assert recs[0]["headers"][0]["value"]["length"] == 15
    # the cheap framing every record object carries stays: it names the schema, not the bytes
    assert recs[0]["frame"] == 0 and recs[0]["keyPayload"] == {"framing": None}
    assert recs[0]["valuePayload"] == {"framing": "confluent", "certain": True, "schemaId": 1, "guid": None}


def test_no_payload_options_output_unchanged(evidence):
    """Without payload options the records lines are the fast path's, with only the cheap framing
    fields (no schema looked up, nothing decoded)."""
    path = evidence[0]
    recs = _lines(run("capture", "--records", "--json", str(path)).stdout)
    assert len(recs) == 35 and recs[0]["keyPayload"] == {"framing": None}
    assert recs[0]["valuePayload"] == {"framing": "confluent", "certain": True, "schemaId": 1, "guid": None}
    assert struct.unpack(">i", base64.b64decode(recs[0]["value"]["base64"])[1:5])[0] == 1


# --- the secrets of KRaft's metadata log, as controllers and brokers fetch it ------------------------

SALT = b"\x13salt-is-secret\x99"
STORED = b"\x07stored-key-bytes\xfe"
KEYPASS = "hunter3-keypass"


@pytest.fixture(scope="module")
def metadata_capture(tmp_path_factory):
    from metadata_builders import MetaLog

    log = MetaLog()
    log.rec("UserScramCredentialRecord", 0, name="alice", mechanism=1, salt=SALT, storedKey=STORED,
            serverKey=b"\x05server", iterations=4096)
    log.rec("ConfigRecord", 0, resourceType=4, resourceName="1", name="ssl.key.password", value=KEYPASS)
    log.rec("ConfigRecord", 0, resourceType=2, resourceName="orders", name="retention.ms", value="604800000")
    c = Conversation()
    c.send("c", produce_v3_request(1, bytes(log.data), topic="__cluster_metadata"), 700)
    c.send("c", produce_v3_request(2, bytes(log.data), topic="not-metadata"), 700)
    c.close()
    path = tmp_path_factory.mktemp("capture-secrets") / "kraft.pcap"
    path.write_bytes(pcap([(t, p) for t, p, _ in c.packets])[0])
    return path


def _secret_forms() -> list[str]:
    return [f for b in (SALT, STORED, KEYPASS.encode()) for f in (base64.b64encode(b).decode()[:12], b.hex(),
            b[1:-1].decode("latin-1"), " ".join(f"{x:02x}" for x in b[1:9]))]


SECRET_OUTPUTS = [["--records", "--json"], ["--records", "--json", "--encoding", "hex"], ["--records", "--wide"],
                  ["--json"], ["--json", "--encoding", "hex"], ["--frame", "0", "--hexdump", "--records"],
                  ["--frame", "0", "--hexdump", "--json"], ["--records", "--json", "--detect"]]


@pytest.mark.parametrize("args", SECRET_OUTPUTS, ids=" ".join)
def test_metadata_log_secrets_hidden_by_default(metadata_capture, args):
    only = [] if "--frame" in args else ["--topic", "__cluster_metadata"]
    r = run("capture", *args, *only, str(metadata_capture))
    assert r.returncode == 0, r.stderr
    assert [f for f in _secret_forms() if f in r.stdout] == []
    shown = run("capture", *args, *only, "--no-redact-secrets", str(metadata_capture))
    if "--wide" in args:   # the table's preview stops before the secret bytes: the mask is the oracle
        assert r.stdout.count("[redacted secret]") == 2 and "[redacted secret]" not in shown.stdout
    else:
        assert [f for f in _secret_forms() if f in shown.stdout]   # the oracle: the same output shows them


def test_metadata_log_secret_objects(metadata_capture):
    recs = _lines(run("capture", "--records", "--json", str(metadata_capture)).stdout)
    assert len(recs) == 6
    meta = [x for x in recs if x["topic"] == "__cluster_metadata"]
    hidden = [x["value"] for x in meta if isinstance(x["value"], dict) and x["value"].get("redacted") == "secret"]
    assert len(hidden) == 2 and all(h["length"] > 0 for h in hidden)
    assert "redacted" not in json.dumps(meta[2])                # retention.ms is no secret
    other = [x for x in recs if x["topic"] == "not-metadata"]
    assert "redacted" not in json.dumps(other)                  # another topic's bytes are its own


def test_where_with_one_frame_lists_its_matching_records(evidence):
    path, export = evidence[0], evidence[1]
    r = run("capture", "--frame", "1", "--records", "--json", "--schemas", str(export), "--where", "value.age == 30",
            str(path))
    recs = _lines(r.stdout)
    assert len(recs) == 10 and {x["frame"] for x in recs} == {1}


def test_where_sees_the_connection_and_the_time(evidence):
    path = evidence[0]
    everything = _lines(run("capture", "--records", "--json", str(path)).stdout)
    conn = everything[0]["connection"]["id"]
    assert len(_lines(run("capture", "--records", "--json", "--where", f"connection.id == {conn}",
                          str(path)).stdout)) == 35
    assert run("capture", "--records", "--json", "--where", f"connection.id == {conn + 1}", str(path)).stdout == ""
    t = everything[3]["time"]
    later = _lines(run("capture", "--records", "--json", "--where", f"time >= {t}", str(path)).stdout)
    assert len(later) == 32 and later[0]["frame"] == 1


def test_pasted_hex_frame_findings_at_dump_offsets(evidence, tmp_path):
    """A frame pasted as hex: the offsets are positions in the dump's bytes."""
    path, export, values, _, frames = evidence
    dump = tmp_path / "frame.txt"
    dump.write_text(frames[2].hex())
    r = run("capture", "--json", "--schemas", str(export), str(dump))
    assert r.returncode == 1, r.stderr
    frame = [x for x in _lines(r.stdout) if x.get("type") == "frame"][0]
    malformed = [f for f in frame["findings"] if f["code"] == "payload-malformed"]
    assert [f["offset"] for f in malformed] == [frames[2].index(values[0][:8]) + 5]
    assert "schema id 1" in malformed[0]["message"]


def test_table_and_hexdump_show_the_schema_and_the_decoded_payload(evidence):
    path, export = evidence[0], evidence[1]
    rows = run("capture", "--records", "--wide", "--schemas", str(export), str(path)).stdout.splitlines()
    assert '[1] {"id":"0","password":' in rows[1]
    dump = run("capture", "--frame", "1", "--hexdump", "--records", "--schemas", str(export), str(path)).stdout
    assert dump.count(".value.schemaId = 1") == 30
    assert '.records[29].value.payload = {"id":"2","password":"QZXJQZXJQZXJ-2","age":32}' in dump
    spans = _lines(run("capture", "--frame", "0", "--hexdump", "--json", "--schemas", str(export), str(path)).stdout)
    magic = [s for s in spans if s.get("path", "").endswith("records[0].value.magic")]
    assert len(magic) == 1 and magic[0]["value"] == 0


def test_redact_fields_masks_a_snappy_batch_whole_in_the_hexdump(evidence, tmp_path):
    """snappy keeps literal runs of the plain bytes: a masked field can be read in the compressed ones."""
    path, export, values, keys, _ = evidence
    snappy = _batch(values * 5, [b"k"] * 15, 2, b"h")
    assert snappy[21:23] == b"\x00\x02" and b"QZXJ" in snappy   # the literal is there to hide
    c = Conversation()
    c.send("c", produce_v3_request(1, snappy, topic="users"), 700)
    c.close()
    pc = tmp_path / "snappy.pcap"
    pc.write_bytes(pcap([(t, p) for t, p, _ in c.packets])[0])
    args = ["capture", "--frame", "0", "--hexdump", "--records", "--schemas", str(export), str(pc)]
    assert "password" in run(*args).stdout and leaks(run(*args).stdout, [v[5:] for v in values])
    r = run(*args, "--redact-fields", "password")
    assert r.returncode == 0, r.stderr
    assert leaks(r.stdout, [v[5:] for v in values]) == []
    assert '"password":"[redacted]"' in r.stdout


@settings(max_examples=25, deadline=None)
@given(st.binary(max_size=48), st.sampled_from([b"\x00\x00\x00\x00\x01", b"\x00\x00\x00\x00\x63", b""]))
def test_hostile_payloads_in_a_capture_never_raise(evidence, tmp_path_factory, tail, head):
    """Any bytes after a Schema Registry header (a known id, an unknown one, none): every finding at
    a place inside the frame, exit 0 or 1, never a traceback (run in this process: it would raise)."""
    export = evidence[1]
    produce = produce_v3_request(1, _batch([head + tail], [b"k"]), topic="users")
    path = tmp_path_factory.mktemp("hostile") / "f.bin"
    path.write_bytes(produce)
    r = run("capture", "--json", "--schemas", str(export), "--redact-fields", "password", str(path))
    assert r.returncode in (0, 1), r.stderr
    frame = [x for x in _lines(r.stdout) if x.get("type") == "frame"][0]
    assert all(0 <= f["offset"] < len(produce) for f in frame["findings"])


def test_where_chooses_the_rows_of_the_frame_table(evidence):
    path, export = evidence[0], evidence[1]
    out = run("capture", "--wide", "--schemas", str(export), "--where", "value.age == 31 and frame == 1", str(path))
    rows = [line for line in out.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [row.split()[0] for row in rows] == ["1"]
    assert "frames: 3 (1 shown)" in out.stdout
