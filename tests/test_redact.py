"""--redact and --redact-fields: no redacted byte sequence appears anywhere in any output format.

The segment's values are framed by confluent-kafka's AvroSerializer (mock registry, no network), the
schemas given as a registry export; keys, values and header values carry the marker QZXJ (bytes
51 5a 58 4a) so that any form of them (text, hex, base64, hexdump rows) can be looked for.
"""

from __future__ import annotations

import hashlib
import json
import struct

import pytest
from cli_inprocess import run
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


def _batch(values: list[bytes], keys: list[bytes], compression: int, base_offset: int) -> bytes:
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=compression, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, (k, v) in enumerate(zip(keys, values)):
        bld.append(i, timestamp=1_700_000_000_000 + i, key=k, value=v, headers=[("trace", b"HDR" + MARK)])
    buf = bytearray(bld.build())
    struct.pack_into(">q", buf, 0, base_offset)  # outside the CRC
    return bytes(buf)


@pytest.fixture(scope="module")
def evidence(tmp_path_factory):
    root = tmp_path_factory.mktemp("redact")
    registry = MockSchemaRegistryClient({"url": "mock://test"})
    ser = AvroSerializer(registry, SCHEMA)
    values = [ser({"id": str(i), "password": (MARK + b"-%d" % i).decode(), "age": 30 + i},
                  SerializationContext("users", MessageField.VALUE)) for i in range(3)]
    keys = [b"KEY" + MARK + b"%d" % i for i in range(3)]
    part = root / "users-0"
    part.mkdir()
    seg = part / "00000000000000000000.log"
    gz = _batch(values * 10, keys * 10, 1, 3)
    assert gz[21:23] == b"\x00\x01"  # gzip (kafka-python keeps a batch plain when that is smaller)
    seg.write_bytes(_batch(values, keys, 0, 0) + gz)
    export = root / "schemas.json"
    export.write_text(json.dumps([{"subject": "users-value", "version": 1, "id": 1, "schema": SCHEMA}]))
    return seg, export, values, keys


FORMATS = [["records", "--json"], ["records", "--json", "--encoding", "hex"], ["records", "--json", "--encoding", "text"],
           ["records", "--json", "--encoding", "base64"], ["records", "--wide"], ["records", "-f", "dump-log"],
           ["hexdump"], ["hexdump", "--records"], ["hexdump", "--records", "--batch", "1"], ["hexdump", "--json"],
           ["hexdump", "--records", "--batch", "1", "--context", "64"], ["hexdump", "--json", "--batch", "1"]]


@pytest.mark.parametrize("args", FORMATS, ids=" ".join)
def test_redact_all_parts_leaves_nothing(evidence, args):
    seg, export, values, keys = evidence
    r = run(*args, "--redact", "keys,values,headers", "--schemas", str(export), str(seg))
    assert r.returncode == 0, r.stderr
    assert leaks(r.stdout, values + keys) == []


@pytest.mark.parametrize("args", [a for a in FORMATS if a[0] == "records" or "--records" in a], ids=" ".join)
def test_redact_fields_masks_decoded_and_hides_the_bytes(evidence, args):
    seg, export, values, keys = evidence
    r = run(*args, "--redact", "keys,headers", "--redact-fields", "password", "--schemas", str(export), str(seg))
    assert r.returncode == 0, r.stderr
    assert leaks(r.stdout, values + keys) == []
    if "--json" in args or args[0] == "records":
        assert "[redacted]" in r.stdout


def test_digest_and_length_in_json(evidence):
    seg, export, values, keys = evidence
    lines = [json.loads(x) for x in run("records", "--json", "--redact", "keys,values,headers", str(seg)).stdout.splitlines()]
    recs = [x for x in lines if x["type"] == "record"]
    assert len(recs) == 33
    assert recs[0]["key"] == {"redacted": "sha256:" + hashlib.sha256(keys[0]).hexdigest(), "length": len(keys[0])}
    assert recs[4]["value"] == {"redacted": "sha256:" + hashlib.sha256(values[1]).hexdigest(), "length": len(values[1])}
    assert recs[0]["headers"] == [{"key": "trace", "value": {"redacted": "sha256:" + hashlib.sha256(b"HDR" + MARK).hexdigest(),
                                                             "length": 15}}]
    # redaction alone adds nothing to the payload fields: the cheap default of every record
    assert (recs[0]["keyPayload"], recs[0]["valuePayload"]) == (_default(keys[0]), _default(values[0]))


def _default(b: bytes | None) -> dict | None:
    """keyPayload / valuePayload without the payload options, for bytes framed with a positive id or not."""
    if b is None:
        return None
    if b[:1] != b"\x00":
        return {"framing": None}
    return {"framing": "confluent", "certain": True, "schemaId": int.from_bytes(b[1:5], "big"), "guid": None}


def test_without_redaction_the_marker_is_there(evidence):
    """The oracle of the tests above: each format shows the marker when nothing is redacted."""
    seg, export, values, keys = evidence
    for args in (["records", "--json"], ["records", "--wide"], ["hexdump", "--records"]):
        assert leaks(run(*args, "--schemas", str(export), str(seg)).stdout, values + keys), args


def test_unknown_redact_part_is_a_usage_error(evidence):
    r = run("records", "--redact", "keys,passwords", str(evidence[0]))
    assert r.returncode == 2 and "passwords" in r.stderr


@pytest.mark.parametrize("window", [["--last", "4"], ["--count", "4"], ["--last", "1"]])
@pytest.mark.parametrize("fmt", [["--json"], ["--wide"], ["-f", "dump-log"]], ids=" ".join)
def test_redaction_holds_under_count_and_last(evidence, window, fmt):
    seg, export, values, keys = evidence
    r = run("records", *fmt, *window, "--redact", "keys,values,headers", str(seg))
    assert r.returncode == 0, r.stderr
    assert "sha256:" in r.stdout
    assert leaks(r.stdout, values + keys) == []
