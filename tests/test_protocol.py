"""The schema machinery: generated tables, header rules, the generic decoder, frames and pairing.

References are independent of the decoder under test: facts read from the
Kafka JSON schemas and the protocol spec, frames assembled by hand from the
primitive encoders (tests/capture_builders.py), batches written by
kafka-python (the shipped fixtures), and records written by real KRaft
brokers (the shared corpus).
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import capture_builders as B  # noqa: E402
from conftest import FIXTURES, ROOT, SHARED, load_json, need_corpus  # noqa: E402
from primitive_encoders import encode_compact_string  # noqa: E402

from kafkadump.objects.generated_fields import finding_fields
from kafkadump.base.findings import Code  # noqa: E402
from kafkadump.base.findings import DecodeError  # noqa: E402
from kafkadump.decoders.protocol import schema as S  # noqa: E402
from kafkadump.decoders.protocol.decoder import RecordsValue  # noqa: E402
from kafkadump.decoders.protocol.decoder import decode_message  # noqa: E402
from kafkadump.decoders.protocol.decoder import kafka_uuid  # noqa: E402
from kafkadump.decoders.protocol.frames import decode_apiversions_mock  # noqa: E402
from kafkadump.decoders.protocol.frames import decode_request  # noqa: E402
from kafkadump.decoders.protocol.frames import decode_response  # noqa: E402
from kafkadump.decoders.protocol.stream import CaptureDecoder  # noqa: E402
from kafkadump.decoders.protocol.stream import Hints  # noqa: E402
from kafkadump.render.hexdump import tiling_errors  # noqa: E402

I16, I32, I64, UV = B.I16, B.I32, B.I64, B.UV

V2_SEGMENT = FIXTURES / "segment-v2" / "00000000000000000000.log"
V2_EXPECT = FIXTURES / "segment-v2" / "00000000000000000000.expect.json"


def first_batch() -> tuple[bytes, dict]:
    exp = load_json(V2_EXPECT)["batches"][0]
    data = V2_SEGMENT.read_bytes()
    return data[exp["position"]:exp["position"] + exp["size"]], exp


def codes(findings):
    return [(f.code, f.offset) for f in findings]


# --- generated tables ---------------------------------------------------------------------------

def test_committed_tables_are_what_the_generator_writes(tmp_path, monkeypatch):
    schemas = SHARED / "kafka-schemas"
    if not (schemas / "message").is_dir():
        pytest.skip(f"Kafka schemas not present at {schemas}")
    pytest.importorskip("kio")  # the layouts beyond Kafka's JSON (a test dependency, Python 3.11+)
    sys.path.insert(0, str(ROOT / "tools"))
    import gen_schemas

    monkeypatch.setattr(gen_schemas, "OUT", tmp_path)
    written = gen_schemas.generate(schemas)
    for p in written:
        committed = ROOT / "kafkadump" / "decoders" / "protocol" / "tables" / p.name
        assert p.read_text() == committed.read_text(), f"{p.name} is stale: rerun tools/gen_schemas.py"


def test_tables_hold_the_schema_facts():
    # facts read from message/FetchResponse.json, RequestHeader.json, ApiVersionsRequest.json
    # (Fetch v18 comes from kio's definitions, the versions before it from Kafka's JSON)
    fr = S.message("FetchResponse")
    assert (fr["apiKey"], fr["type"], list(fr["valid"]), list(fr["flexible"])) == (1, "response", [0, 18], [12, 32767])
    part = next(f for f in fr["fields"] if f[0] == "Responses")[7]
    part = next(f for f in part if f[0] == "Partitions")[7]
    tags = {f[0]: (f[4], list(f[5])) for f in part if f[4] is not None}
    assert tags == {"DivergingEpoch": (0, [12, 32767]), "CurrentLeader": (1, [12, 32767]),
                    "SnapshotId": (2, [12, 32767])}
    records = next(f for f in part if f[0] == "Records")
    assert records[1] == "records" and list(records[3]) == [0, 32767]
    client_id = next(f for f in S.message("RequestHeader")["fields"] if f[0] == "ClientId")
    assert client_id[8] is None and list(client_id[2]) == [1, 32767] and list(client_id[3]) == [1, 32767]
    assert list(S.message("ApiVersionsRequest")["flexible"]) == [3, 32767]
    lso = next(f for f in part if f[0] == "LastStableOffset")
    assert lso[6] == (-1,)  # "default": "-1"
    # records/: every schema of the folder, with its group; tagged fields without "versions"
    assert {"OffsetCommitKey", "OffsetCommitValue", "PartitionRecord", "TransactionLogValue"} <= set(S.record_schemas())
    assert S.message("OffsetCommitValue")["group"] == "group-coordinator"
    tlv = {f[0]: f for f in S.message("TransactionLogValue")["fields"]}
    assert (tlv["PreviousProducerId"][4], list(tlv["PreviousProducerId"][2]), tlv["PreviousProducerId"][6]) == \
        (0, [1, 32767], (-1,))
    assert S.api_name(0) == "Produce" and S.api_name(18) == "ApiVersions" and S.api_names(12345) is None


def test_tables_merge_the_newer_versions_onto_the_old_ones():
    # Kafka 4.x definitions (through kio): Produce v13 names topics by id, InitProducerId v6 adds two
    # booleans, API keys 88-92 exist; the versions Kafka 4.0 dropped from its files are still there
    produce = S.message("ProduceRequest")
    assert list(produce["valid"]) == [0, 13]
    topic = {f[0]: (list(f[2]), f[1]) for f in next(f for f in produce["fields"] if f[0] == "TopicData")[7]}
    assert topic["Name"] == ([0, 12], "string") and topic["TopicId"] == ([13, 32767], "uuid")
    init = {f[0]: (list(f[2]), f[1], f[6]) for f in S.message("InitProducerIdRequest")["fields"]}
    assert init["Enable2Pc"] == ([6, 32767], "bool", (False,)) and init["KeepPreparedTxn"][0] == [6, 32767]
    assert [S.api_name(k) for k in range(88, 93)] == [
        "StreamsGroupHeartbeat", "StreamsGroupDescribe", "DescribeShareGroupOffsets", "AlterShareGroupOffsets",
        "DeleteShareGroupOffsets"]
    assert {n: S.max_version(n) for n in ("FetchRequest", "ListOffsetsRequest", "MetadataRequest",
                                          "OffsetCommitRequest", "OffsetFetchRequest", "WriteTxnMarkersRequest",
                                          "TxnOffsetCommitRequest", "DescribeLogDirsRequest")} == {
        "FetchRequest": 18, "ListOffsetsRequest": 11, "MetadataRequest": 13, "OffsetCommitRequest": 10,
        "OffsetFetchRequest": 10, "WriteTxnMarkersRequest": 2, "TxnOffsetCommitRequest": 5,
        "DescribeLogDirsRequest": 5}
    assert S.valid_versions("ProduceRequest")[0] == 0 and S.valid_versions("FetchRequest")[0] == 0
    assert S.api_name(7) == "ControlledShutdown"  # a ZooKeeper-era API Kafka 4.0 removed
    assert S.api_name(74) == "ListConfigResources" and S.max_version("ListConfigResourcesRequest") == 1
    # share-group APIs at their released versions only (v0 was early access, never released)
    assert list(S.valid_versions("ShareFetchRequest")) == [1, 2]
    assert "unstable" not in S.message("EndTxnRequest")


def test_kio_merge_adds_a_version_field_by_field():
    """tools/kio_layouts.py: a field kio keeps extends its range, one it drops ends, a new one starts
    after its predecessor; nullability and tags carry over; a disagreement is never merged silently."""
    sys.path.insert(0, str(ROOT / "tools"))
    import kio_layouts as K

    OPEN = 32767
    fields = [["Acks", "int16", [0, OPEN], None, None, None, [], None, False],
              ["Topics", "[]Topic", [0, OPEN], None, None, None, [],
               [["Name", "string", [0, OPEN], [2, OPEN], None, None, [], None, False],
                ["Index", "int32", [0, OPEN], None, None, None, [], None, False]], False],
              ["Hint", "int32", [3, OPEN], None, 0, [3, OPEN], [7], None, False]]
    topic = [K.KField("topic_id", "TopicId", "uuid", False, None, (), None),
             K.KField("index", "Index", "int32", False, None, (), None)]
    v5 = [K.KField("acks", "Acks", "int16", False, None, (), None),
          K.KField("topics", "Topics", "[]Topic", True, None, (), topic),
          K.KField("hint", "Hint", "int32", False, 0, (7,), None),
          K.KField("timeout", "TimeoutMs", "int32", False, None, (), None)]
    K.merge_fields(fields, v5, 5)
    by = {f[0]: f for f in fields}
    assert [f[0] for f in fields] == ["Acks", "Topics", "Hint", "TimeoutMs"]
    assert by["Topics"][3] == [5, OPEN]           # nullable from v5 on
    sub = {f[0]: f[2] for f in by["Topics"][7]}
    assert sub == {"TopicId": [5, OPEN], "Name": [0, 4], "Index": [0, OPEN]}
    assert [f[0] for f in by["Topics"][7]] == ["TopicId", "Name", "Index"]
    assert by["Hint"][2] == [3, OPEN] and by["TimeoutMs"][2] == [5, OPEN]
    assert K.differences(K.table_at(fields, 5), K.kio_at(v5)) == []
    assert K.differences(K.table_at(fields, 4), K.kio_at(v5)) != []
    # names: kio's snake case back to Kafka's, "Ms" restored for durations and timestamps
    assert (K.kafka_name("enable2_pc", "bool"), K.kafka_name("max_wait", "timedelta_i32"),
            K.kafka_name("id_", "uuid"), K.kafka_name("k_raft_version", "int16")) == (
        "Enable2Pc", "MaxWaitMs", "Id", "KRaftVersion")


# --- header rules -----------------------------------------------------------------------------------

@pytest.mark.parametrize("key,version,expected", [
    (7, 0, 0), (7, 1, 1),           # ControlledShutdown v0: the only header v0
    (18, 2, 1), (18, 3, 2),         # ApiVersions flexible from v3
    (0, 8, 1), (0, 9, 2),           # Produce flexible from v9
    (1, 11, 1), (1, 12, 2),         # Fetch flexible from v12
    (3, 8, 1), (3, 9, 2),           # Metadata flexible from v9
])
def test_request_header_version(key, version, expected):
    assert S.request_header_version(key, version) == expected


@pytest.mark.parametrize("key,version,expected", [
    (18, 0, 0), (18, 3, 0), (18, 4, 0),   # ApiVersions responses always use header v0
    (0, 8, 0), (0, 9, 1), (1, 11, 0), (1, 12, 1), (3, 9, 1),
])
def test_response_header_version(key, version, expected):
    assert S.response_header_version(key, version) == expected


def test_request_header_v2_keeps_client_id_a_non_compact_string():
    b = B.apiversions_v3_request(corr=7, client="my-client")
    # the client id is int16 length + bytes even though the request is flexible
    assert b[12:14] == struct.pack(">h", 9) and b[14:23] == b"my-client"
    f = decode_request(b, 0, len(b))
    assert (f.api_key, f.api_version, f.correlation_id, f.client_id) == (18, 3, 7, "my-client")
    assert f.body == {"clientSoftwareName": "kafkadump", "clientSoftwareVersion": "1.0"}
    assert f.findings == []


@pytest.mark.parametrize("hv,key,version", [(1, 3, 1), (2, 18, 3)])
def test_request_header_null_client_id(hv, key, version):
    body = B.I32(1) + b"\x00\x01t" if hv == 1 else encode_compact_string("n") + encode_compact_string("v") + b"\x00"
    b = B.frame(B.req_header(key, version, 3, None, hv=hv) + body)
    f = decode_request(b, 0, len(b))
    assert f.client_id is None and f.header["clientId"] is None and f.findings == []


def test_request_header_v0_has_no_client_id():
    b = B.frame(B.I16(7) + B.I16(0) + B.I32(11) + B.I32(42))  # ControlledShutdown v0: brokerId
    f = decode_request(b, 0, len(b))
    assert f.header == {"requestApiKey": 7, "requestApiVersion": 0, "correlationId": 11}
    assert f.body == {"brokerId": 42} and f.findings == []


def test_request_header_v2_tagged_fields_are_read():
    b = B.apiversions_v3_request(header_tags=B.tagged([(5, b"\x01\x02")]))
    f = decode_request(b, 0, len(b))
    assert f.header["_rawTaggedFields"] == [{"tag": 5, "data": b"\x01\x02"}]
    assert codes(f.findings) == [(Code.TAGGED_FIELD_UNKNOWN, 4 + 8 + 2 + len("kd") + 1)]  # after the tag count
    assert f.body["clientSoftwareName"] == "kafkadump"


def test_response_header_v1_has_tagged_fields_but_apiversions_never():
    # Fetch v12 response: header v1, a tag byte after the correlation id
    b = B.fetch_v12_response(9, [(0, None, b"\x00")])
    f = decode_response(b, 0, len(b), 1, 12)
    assert f.correlation_id == 9 and f.findings == [] and f.body["sessionId"] == 0
    # the same body without the header's tag byte is misaligned: the decoder must notice
    g_sizefix = struct.pack(">i", len(b) - 5) + b[4:8] + b[9:]
    g = decode_response(g_sizefix, 0, len(g_sizefix), 1, 12)
    assert g.findings, "a missing response-header tag byte went unnoticed"
    # ApiVersions v3 response: header v0 (no tag byte) although the body is flexible
    body = B.I16(0) + UV(2) + B.I16(18) + B.I16(0) + B.I16(4) + b"\x00" + B.I32(0) + b"\x00"
    a = B.frame(B.I32(4) + body)
    fa = decode_response(a, 0, len(a), 18, 3)
    assert fa.findings == [] and fa.body["apiKeys"] == [{"apiKey": 18, "minVersion": 0, "maxVersion": 4}]


def test_apiversions_response_falls_back_to_v0():
    # a broker that does not support the requested version answers in the v0 layout (KIP-511)
    req = B.apiversions_v3_request(corr=4)
    resp = B.apiversions_v0_response(corr=4, error=35, apis=((18, 0, 2),))
    dec = CaptureDecoder()
    frames = dec.block(req + resp)
    r = frames[1]
    assert (r.api_key, r.api_version, r.body_version) == (18, 3, 0)
    assert r.body == {"errorCode": 35, "apiKeys": [{"apiKey": 18, "minVersion": 0, "maxVersion": 2}]}
    assert [(x.code, x.offset) for x in r.findings] == [(Code.CLIENT_QUIRK, len(req))]
    assert "v0 layout" in r.findings[0].message and "KIP-511" in r.findings[0].message


def test_apiversions_response_in_the_librdkafka_mock_layout():
    # librdkafka's mock broker answers a flexible ApiVersions request by hand: a one-byte count (the
    # count itself, not compact), entries without tagged fields, ThrottleTimeMs, no tag section
    req = B.apiversions_v3_request(corr=1)
    resp = B.frame(B.I32(1) + B.I16(35) + b"\x01" + B.I16(18) + B.I16(0) + B.I16(2) + B.I32(0))
    assert resp.hex() == "000000110000000100230100120000000200000000"  # the corpus's mock answer
    r = CaptureDecoder().block(req + resp)[1]
    assert (r.api_key, r.api_version, r.correlation_id) == (18, 3, 1)
    assert r.body == {"errorCode": 35, "apiKeys": [{"apiKey": 18, "minVersion": 0, "maxVersion": 2}],
                      "throttleTimeMs": 0}
    assert [(x.code, x.offset) for x in r.findings] == [(Code.CLIENT_QUIRK, len(req))]
    assert "mock broker" in r.findings[0].message


# --- tagged fields -----------------------------------------------------------------------------------

def _diverging(epoch=3, end=700):
    return B.I32(epoch) + B.I64(end) + b"\x00"


def _leader(leader=1, epoch=2):
    return B.I32(leader) + B.I32(epoch) + b"\x00"


def _fetch_with_tags(tags_section):
    b = B.fetch_v12_response(5, [(0, None, tags_section)])
    return b, decode_response(b, 0, len(b), 1, 12)


def tag_offset(b: bytes, tags_section: bytes) -> int:
    return b.index(tags_section)


def test_tagged_fields_decoded_by_name():
    sec = B.tagged([(0, _diverging()), (1, _leader())])
    b, f = _fetch_with_tags(sec)
    p = f.body["responses"][0]["partitions"][0]
    assert p["divergingEpoch"] == {"epoch": 3, "endOffset": 700}
    assert p["currentLeader"] == {"leaderId": 1, "leaderEpoch": 2}
    assert f.findings == []


def test_tagged_fields_out_of_order():
    sec = B.tagged([(1, _leader()), (0, _diverging())])
    b, f = _fetch_with_tags(sec)
    start = tag_offset(b, sec)
    second = start + 1 + 2 + len(_leader())      # count byte, tag+size of the first, its data
    assert codes(f.findings) == [(Code.TAGGED_FIELD_ORDER, second)]
    p = f.body["responses"][0]["partitions"][0]
    assert p["divergingEpoch"] == {"epoch": 3, "endOffset": 700}  # still decoded: sizes are known
    assert f.body["throttleTimeMs"] == 0 and "_rawTaggedFields" not in p


def test_tagged_fields_duplicate():
    sec = B.tagged([(0, _diverging(3, 700)), (0, _diverging(9, 900))])
    b, f = _fetch_with_tags(sec)
    second = tag_offset(b, sec) + 1 + 2 + len(_diverging())
    assert codes(f.findings) == [(Code.TAGGED_FIELD_ORDER, second)]
    p = f.body["responses"][0]["partitions"][0]
    assert p["divergingEpoch"] == {"epoch": 3, "endOffset": 700}           # the first one counts
    assert p["_rawTaggedFields"] == [{"tag": 0, "data": _diverging(9, 900)}]  # the repeat is kept raw


def test_tagged_fields_unknown_kept_raw():
    sec = B.tagged([(1, _leader()), (7, b"\xde\xad\xbe\xef")])
    b, f = _fetch_with_tags(sec)
    unknown_at = tag_offset(b, sec) + 1 + 2 + len(_leader())
    assert codes(f.findings) == [(Code.TAGGED_FIELD_UNKNOWN, unknown_at)]
    assert f.findings[0].severity.value == "info"
    p = f.body["responses"][0]["partitions"][0]
    assert p["_rawTaggedFields"] == [{"tag": 7, "data": b"\xde\xad\xbe\xef"}]
    assert p["currentLeader"] == {"leaderId": 1, "leaderEpoch": 2}


def test_tagged_field_with_wrong_size_is_kept_raw():
    sec = B.tagged([(0, _diverging() + b"\x00")])  # one byte more than the struct takes
    b, f = _fetch_with_tags(sec)
    assert [c for c, _ in codes(f.findings)] == [Code.FIELD_MALFORMED]
    data_at = tag_offset(b, sec) + 3
    assert f.findings[0].offset == data_at + len(_diverging())
    p = f.body["responses"][0]["partitions"][0]
    assert "divergingEpoch" not in p and p["_rawTaggedFields"][0]["data"] == _diverging() + b"\x00"


def test_tagged_field_count_beyond_the_bytes():
    b, f = _fetch_with_tags(UV(200))
    assert [c for c, _ in codes(f.findings)] == [Code.FIELD_MALFORMED]
    assert f.findings[0].offset == b.index(UV(200) + b"\x00\x00")  # the count itself


# --- records inside messages, pairing -------------------------------------------------------------------

def test_fetch_response_records_and_partial_last_batch():
    batch, exp = first_batch()
    cut = batch[:40]
    b = B.fetch_v12_response(5, [(0, batch + cut, b"\x00")])
    f = decode_response(b, 0, len(b), 1, 12)
    rv = f.body["responses"][0]["partitions"][0]["records"]
    assert isinstance(rv, RecordsValue) and rv.size == len(batch) + 40
    recs = list(rv.records())
    assert [r.offset for r, _ in recs] == [r["offset"] for r in exp["records"]]
    assert [None if r.key is None else r.key.hex() for r, _ in recs] == [r["key"] for r in exp["records"]]
    partial_at = b.index(batch) + len(batch)
    assert codes(f.all_findings()) == [(Code.PARTIAL_BATCH, partial_at)]
    assert f.all_findings()[0].severity.value == "info"
    # the same cut inside a Produce *request* is damage, not a size limit
    body = (B.I16(1) + B.I32(1000) + B.I32(1) + B.encode_string("t") + B.I32(1) + B.I32(0)
            + B.I32(len(batch) + 40) + batch + cut)
    rq = B.frame(B.req_header(0, 3, 1, "t") + B.encode_nullable_string(None)[:0] + B.I16(-1) + body)
    fr = decode_request(rq, 0, len(rq))
    assert [c for c, _ in codes(fr.all_findings())] == [Code.TRUNCATED]


def test_response_decoded_via_its_paired_request():
    batch, exp = first_batch()
    req = B.fetch_v12_request(77)
    resp = B.fetch_v12_response(77, [(0, batch, b"\x00")])
    other = B.metadata_v1_request(78)
    dec = CaptureDecoder()
    frames = dec.block(req + other + resp)
    assert [f.kind for f in frames] == ["request", "request", "response"]
    r = frames[2]
    assert (r.api_key, r.api_version, r.correlation_id, r.request_index) == (1, 12, 77, 0)
    assert r.guessed is None and r.findings == []
    assert r.record_count() == exp["recordCount"]
    # without the request the same bytes are only decodable by trial (and say so)
    alone = CaptureDecoder().block(resp)[0]
    assert alone.guessed is not None and alone.api_key == 1
    assert Code.RESPONSE_GUESSED in [x.code for x in alone.findings]
    # a hint decodes it as told
    hinted = CaptureDecoder(hints=Hints(api_key=1, api_version=12)).block(resp)[0]
    assert (hinted.api_version, hinted.guessed, hinted.findings) == (12, None, [])


def test_lone_response_that_nothing_fits_is_kept_raw():
    b = B.frame(B.I32(3) + b"\xff\xfe\xfd")
    f = CaptureDecoder().block(b)[0]
    assert f.kind == "response" and f.body is None and f.correlation_id == 3
    assert codes(f.findings) == [(Code.RESPONSE_UNPAIRED, 0)]


# --- damaged frames ----------------------------------------------------------------------------------------

def test_truncated_frame():
    b = B.metadata_v1_request(corr=4)
    cut = b[:-3]
    f = decode_request(cut, 0, len(cut))
    assert codes(f.findings) == [(Code.TRUNCATED, 0)]
    assert f.findings[0].length == len(cut) and f.size == len(cut)
    assert f.correlation_id == 4 and f.client_id == "t"


def test_size_prefix_too_large_for_a_complete_body():
    b = B.metadata_v1_request()
    wrong = struct.pack(">i", len(b) - 4 + 10) + b[4:]
    f = decode_request(wrong, 0, len(wrong))
    assert codes(f.findings) == [(Code.FRAME_SIZE_INVALID, 0)]
    assert f.body == {"topics": [{"name": "orders"}]}


def test_size_prefix_too_large_swallows_the_next_frame():
    a = B.metadata_v1_request(corr=1)
    nxt = B.metadata_v1_request(corr=2, topics=("payments",))
    wrong = struct.pack(">i", len(a) - 4 + 6) + a[4:]
    frames = CaptureDecoder().block(wrong + nxt)
    first = frames[0]
    assert codes(first.findings) == [(Code.FRAME_TRAILING, len(a))]
    assert first.findings[0].length == 6


def test_size_prefix_impossible():
    b = struct.pack(">i", -5) + B.metadata_v1_request()[4:]
    f = decode_request(b, 0, len(b))
    assert codes(f.findings) == [(Code.FRAME_SIZE_INVALID, 0)]


def test_size_prefix_too_small():
    b = B.metadata_v1_request()
    wrong = struct.pack(">i", len(b) - 4 - 3) + b[4:]
    f = decode_request(wrong, 0, len(wrong))
    # the body's last string runs past the declared end: the field that crosses it is named
    assert [c for c, _ in codes(f.findings)] == [Code.FIELD_MALFORMED]
    assert f.findings[0].offset == len(b) - 8  # the topic string's length prefix
    assert "body.topics[0].name" in f.findings[0].message


def test_version_beyond_the_tables():
    top = S.max_version("MetadataRequest")
    body = UV(2) + bytes(16) + encode_compact_string("t") + b"\x00" + b"\x01" + b"\x00" + b"\x00"
    b = B.frame(B.req_header(3, top + 1, 9, "c", hv=2) + body)
    f = decode_request(b, 0, len(b))
    # the header's layout is known (flexible from v9 on, Kafka's "9+"); the body's is not: kept raw,
    # no field named from the v{top} layout, and the finding says where the tables stop
    assert codes(f.findings) == [(Code.VERSION_UNKNOWN, 6)]
    assert f"stop at version {top}" in f.findings[0].message and f"body ({len(body)} bytes) is kept raw" in \
        f.findings[0].message
    assert (f.correlation_id, f.client_id, f.header["requestApiVersion"]) == (9, "c", top + 1)
    assert f.body == {"_undecodedBody": body}
    # the same for a response, and under decode_message
    r = B.frame(B.I32(9) + b"\x00" + b"\x01\x02\x03")
    g = decode_response(r, 0, len(r), 3, top + 1)
    assert codes(g.findings) == [(Code.VERSION_UNKNOWN, 0)] and g.body == {"_undecodedBody": b"\x01\x02\x03"}
    found: list = []
    assert decode_message("MetadataRequest", top + 1, body, findings=found) == ({"_undecodedBody": body}, len(body))
    assert [x.code for x in found] == [Code.VERSION_UNKNOWN]
    with pytest.raises(DecodeError):
        decode_message("MetadataRequest", top + 1, body)


def test_api_key_unknown_keeps_the_body_raw():
    b = B.frame(B.req_header(999, 0, 1, "c") + b"\x01\x02\x03")
    f = decode_request(b, 0, len(b), ctx=None)
    assert codes(f.findings) == [(Code.API_KEY_UNKNOWN, 4)] and f.body is None


def test_spans_tile_every_frame_byte():
    from kafkadump.decoders.protocol.frames import Ctx

    batch, _ = first_batch()
    for b, dec in [
        (B.apiversions_v3_request(header_tags=B.tagged([(5, b"\x01")])), lambda b, c: decode_request(b, 0, len(b), ctx=c)),
        (B.fetch_v12_response(5, [(0, batch + batch[:30], B.tagged([(7, b"zz")]))]),
         lambda b, c: decode_response(b, 0, len(b), 1, 12, ctx=c)),
        (B.metadata_v1_request()[:-2], lambda b, c: decode_request(b, 0, len(b), ctx=c)),
        # a version beyond the tables (the body one raw span), the mock broker's ApiVersions layout
        (B.frame(B.req_header(0, S.max_version("ProduceRequest") + 1, 3, "c", hv=2) + b"\x05" * 9),
         lambda b, c: decode_request(b, 0, len(b), ctx=c)),
        (B.frame(B.I32(1) + B.I16(35) + b"\x02" + (B.I16(18) + B.I16(0) + B.I16(2)) * 2 + B.I32(0)),
         lambda b, c: decode_apiversions_mock(b, 0, len(b), 3, ctx=c)),
    ]:
        f = dec(b, Ctx(spans=True))
        assert tiling_errors(f.spans, 0, len(b)) == []


# --- the generic decoder on its own -------------------------------------------------------------------------

def test_decode_message_strict_mode_raises():
    with pytest.raises(DecodeError) as e:
        decode_message("MetadataRequest", 1, B.I32(5) + b"\x00", 0, 5)
    assert e.value.offset == 0 and e.value.code is Code.FIELD_MALFORMED


def test_array_count_checked_before_allocating():
    f = []
    v, p = decode_message("MetadataRequest", 1, B.I32(0x7FFFFFFF), 0, 4, findings=f)
    assert codes(f) == [(Code.FIELD_MALFORMED, 0)] and v == {}


def test_uuid_in_kafka_text_form():
    raw = bytes.fromhex("ed48197606424 9f287ac439f1b48d65d".replace(" ", ""))
    assert kafka_uuid(raw) == "7UgZdgZCSfKHrEOfG0jWXQ"  # as tshark/Kafka print the topic id


def test_records_schema_with_tagged_defaults():
    # TransactionLogValue v1: flexible, three tagged fields defaulting to -1, -1, 0
    from primitive_encoders import encode_int8

    body = (B.I64(1234) + B.I16(5) + B.I32(60000) + encode_int8(4) + UV(1)  # pid, epoch, timeout, state, no partitions
            + B.I64(1) + B.I64(2) + B.tagged([(1, B.I64(99))]))
    f = []
    v, p = decode_message("TransactionLogValue", 1, body, findings=f)
    assert f == [] and p == len(body)
    assert v["producerId"] == 1234 and v["nextProducerId"] == 99 and "previousProducerId" not in v
    v2, _ = decode_message("TransactionLogValue", 1, body, findings=[], fill_defaults=True)
    assert v2["previousProducerId"] == -1 and v2["nextProducerId"] == 99 and v2["clientTransactionVersion"] == 0


def test_records_schemas_on_real_kraft_metadata():
    """Every metadata record a real KRaft broker wrote decodes exactly, by apiKey and version."""
    seg = need_corpus("real/segments/Niloufar1171+LDI-POC/__cluster_metadata-0/00000000000000000000.log")
    from kafkadump.decoders.batches import iter_batches
    from kafkadump.decoders.batches.model import Batch

    by_key = {S.message(n)["apiKey"]: n for n in S.record_schemas("metadata")}
    buf = seg.read_bytes()
    seen = {}
    for b in iter_batches(buf, str(seg)):
        if not isinstance(b, Batch) or b.is_control or not b.records:
            continue
        for r in b.records:
            v = r.value
            frame_version, p = _uv(v, 0)
            key, p = _uv(v, p)
            version, p = _uv(v, p)
            f = []
            value, q = decode_message(by_key[key], version, v, p, len(v), findings=f)
            assert q == len(v), (by_key[key], version, f)
            assert all(x.severity.value == "info" for x in f), [finding_fields(x) for x in f]
            seen[by_key[key]] = value
    assert seen["TopicRecord"]["name"] and len(seen["TopicRecord"]["topicId"]) == 22
    assert isinstance(seen["PartitionRecord"]["replicas"], list)
    assert {"FeatureLevelRecord", "RegisterBrokerRecord", "PartitionChangeRecord", "NoOpRecord"} <= set(seen)


def _uv(b, p):
    v = s = 0
    while True:
        x = b[p]
        p += 1
        v |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return v, p


def test_decoding_damaged_frames_never_raises():
    """Every single-byte change and every cut of a few frames: findings, never an exception."""
    import random

    batch, _ = first_batch()
    rng = random.Random(7)
    samples = [B.apiversions_v3_request(), B.fetch_v12_response(5, [(0, batch, B.tagged([(0, _diverging())]))]),
               B.fetch_v12_request(3)]
    for b in samples:
        for _ in range(120):
            m = bytearray(b)
            i = rng.randrange(len(m))
            m[i] = rng.randrange(256)
            cut = bytes(m[:rng.randrange(len(m) + 1)]) if rng.random() < 0.3 else bytes(m)
            for frames in (CaptureDecoder().block(cut), CaptureDecoder(hints=Hints(api_key=1, api_version=12)).block(cut)):
                for f in frames:
                    json.dumps([finding_fields(x) for x in f.all_findings()])


def test_fields_kafka_renamed_carry_their_current_name_in_every_version():
    """Issue 27: Vote v0/v1's Candidate* fields are Replica* in Kafka now, ListConfigResources v0's
    ClientMetricsResources (of Name) is ConfigResources (of ResourceName): one name in every version."""
    parts = next(f for f in S.message("VoteRequest")["fields"] if f[0] == "Topics")[7]
    parts = next(f for f in parts if f[0] == "Partitions")[7]
    names = {f[0]: list(f[2]) for f in parts}
    assert names["ReplicaEpoch"] == [0, 32767] and names["ReplicaId"] == [0, 32767]
    assert names["ReplicaDirectoryId"] == [1, 32767]
    assert not [n for n in names if n.startswith("Candidate")]
    resp = {f[0]: f for f in S.message("ListConfigResourcesResponse")["fields"]}
    assert "ClientMetricsResources" not in resp and list(resp["ConfigResources"][2]) == [0, 32767]
    assert [f[0] for f in resp["ConfigResources"][7]] == ["ResourceName", "ResourceType"]
