"""Record types Kafka 4.x writes into its internal topics beyond the generated tables.

Records are encoded by ``internal_encoder`` (independent of kafkadump's schema
decoder) from schema documents written here in Kafka's JSON form: the layouts
of Kafka's ConsumerGroupRegularExpressionKey/Value, ClearElrRecord and
UnregisterControllerRecord, and the streams group keys.  Their values' layouts
are not trusted (Kafka marks them unstable), so they must stay raw with an
``internal-layout-unknown`` info finding, and never be decoded.
"""

from __future__ import annotations

import json
import struct

import builders as bld
import internal_encoder as E
import pytest
from typer.testing import CliRunner

from kafkadump.cli import app
from kafkadump.decoders.batches import Batch
from kafkadump.decoders.batches import iter_batches
from kafkadump.base.findings import Code
from kafkadump.base.findings import Severity
from kafkadump.decoders.internal_topics.record_decoder import decoder_for

MUTATION_CODES = {"internal-layout-unknown"}

runner = CliRunner()

REGEX_KEY = {"name": "ConsumerGroupRegularExpressionKey", "validVersions": "16", "flexibleVersions": "none",
             "fields": [{"name": "GroupId", "type": "string", "versions": "16"},
                        {"name": "RegularExpression", "type": "string", "versions": "16"}]}
REGEX_VALUE = {"name": "ConsumerGroupRegularExpressionValue", "validVersions": "0", "flexibleVersions": "0+",
               "fields": [{"name": "Topics", "versions": "0+", "type": "[]string"},
                          {"name": "Version", "versions": "0+", "type": "int64"},
                          {"name": "Timestamp", "versions": "0+", "type": "int64"}]}
CLEAR_ELR = {"name": "ClearElrRecord", "validVersions": "0", "flexibleVersions": "0+",
             "fields": [{"name": "TopicName", "type": "string", "versions": "0+"}]}
UNREGISTER_CONTROLLER = {"name": "UnregisterControllerRecord", "validVersions": "0", "flexibleVersions": "0+",
                         "fields": [{"name": "ControllerId", "type": "int32", "versions": "0+"}]}

# streams group key version -> (record name, key has a MemberId)
STREAMS = {17: ("StreamsGroupMetadata", False), 18: ("StreamsGroupPartitionMetadata", False),
           19: ("StreamsGroupMemberMetadata", True), 20: ("StreamsGroupTargetAssignmentMetadata", False),
           21: ("StreamsGroupTargetAssignmentMember", True), 22: ("StreamsGroupCurrentMemberAssignment", True),
           23: ("StreamsGroupTopology", False), 24: ("StreamsGroupTargetAssignmentResolvedTopicIds", False)}


def i16(v):
    return struct.pack(">h", v)


def frame(api_key, body):
    return E.uvarint(1) + E.uvarint(api_key) + E.uvarint(0) + body


def streams_key(version, group="app", member="m-1"):
    name, has_member = STREAMS[version]
    doc = {"name": name + "Key", "validVersions": str(version), "flexibleVersions": "none",
           "fields": [{"name": "GroupId", "type": "string", "versions": str(version)}]
           + ([{"name": "MemberId", "type": "string", "versions": str(version)}] if has_member else [])}
    return i16(version) + E.encode(doc, version, {"groupId": group, "memberId": member})


def segment(pairs):
    return bld.v2_batch(0, [bld.Rec(k, v) for k, v in pairs]).data


def records_of(data, kind):
    dec = decoder_for(kind)
    return [dec.decode_record(r, b) for b in iter_batches(data, "t") if isinstance(b, Batch) for r in b.records]


def test_consumer_group_regular_expression_decodes():
    key = i16(16) + E.encode(REGEX_KEY, 16, {"groupId": "g1", "regularExpression": "orders-.*"})
    value = i16(0) + E.encode(REGEX_VALUE, 0, {"topics": ["orders-a", "orders-b"], "version": 7,
                                               "timestamp": bld.T0})
    [d] = records_of(segment([(key, value)]), "offsets")
    assert d.findings == []
    assert (d.key.schema, d.key.version, d.key.data) == (
        "ConsumerGroupRegularExpressionKey", 16, {"groupId": "g1", "regularExpression": "orders-.*"})
    assert (d.value.schema, d.value.version) == ("ConsumerGroupRegularExpressionValue", 0)
    assert d.value.data == {"topics": ["orders-a", "orders-b"], "version": 7, "timestamp": bld.T0}


@pytest.mark.parametrize("version", sorted(STREAMS))
def test_streams_group_records_are_named_and_kept_raw(version):
    name, has_member = STREAMS[version]
    value = i16(0) + b"\x05opaque bytes whose layout is not trusted\x00"
    data = segment([(streams_key(version), value), (streams_key(version), None)])
    live, tomb = records_of(data, "offsets")
    assert live.key.schema == name + "Key" and live.key.version == version
    assert live.key.data == {"groupId": "app", **({"memberId": "m-1"} if has_member else {})}
    assert (live.value.schema, live.value.version, live.value.data, live.value.raw) == (
        name + "Value", 0, None, value)
    [f] = live.findings
    assert (f.code, f.severity) == (Code.INTERNAL_LAYOUT_UNKNOWN, Severity.INFO)
    # the finding sits where the value starts in the file
    lay = bld.v2_batch(0, [bld.Rec(streams_key(version), value)])
    assert f.offset == bld.record_fields(lay.data, lay.record_positions[0])["value"]
    assert tomb.findings == [] and tomb.tombstone and tomb.key.data["groupId"] == "app"


def test_mutation_layout_unknown_only_where_the_type_has_no_layout():
    """The same value bytes under a key whose type has a layout decode (no finding); moving the key
    to a streams type (one INT16 changed) gives exactly one internal-layout-unknown, at the value."""
    key = i16(16) + E.encode(REGEX_KEY, 16, {"groupId": "g", "regularExpression": "x"})
    value = i16(0) + E.encode(REGEX_VALUE, 0, {"topics": [], "version": 1, "timestamp": 2})
    good = segment([(key, value)])
    assert records_of(good, "offsets")[0].findings == []
    lay = bld.v2_batch(0, [bld.Rec(key, value)])
    key_at = bld.record_fields(lay.data, lay.record_positions[0])["key"]
    value_at = bld.record_fields(lay.data, lay.record_positions[0])["value"]
    bad = bld.patch(good, key_at, ">h", 19, crc_at=0)  # also two strings: the key still fits
    [d] = records_of(bad, "offsets")
    assert [(f.code, f.offset) for f in d.findings] == [(Code.INTERNAL_LAYOUT_UNKNOWN, value_at)]
    assert d.key.schema == "StreamsGroupMemberMetadataKey" and d.value.data is None and d.value.raw == value


def test_new_metadata_records_decode():
    elr = frame(28, E.encode(CLEAR_ELR, 0, {"topicName": "orders"}))
    unreg = frame(29, E.encode(UNREGISTER_CONTROLLER, 0, {"controllerId": 3001}))
    a, b = records_of(segment([(None, elr), (None, unreg)]), "metadata")
    assert (a.value.schema, a.value.api_key, a.value.data, a.findings) == (
        "ClearElrRecord", 28, {"topicName": "orders"}, [])
    assert (b.value.schema, b.value.api_key, b.value.data, b.findings) == (
        "UnregisterControllerRecord", 29, {"controllerId": 3001}, [])


def test_cli_streams_records_exit_0_and_show_raw(tmp_path):
    d = tmp_path / "__consumer_offsets-7"
    d.mkdir()
    p = d / "00000000000000000000.log"
    value = i16(0) + b"\x01\x02\x03"
    p.write_bytes(segment([(streams_key(19), value)]))
    r = runner.invoke(app, ["records", "--json", "-e", "hex", str(p)])
    assert r.exit_code == 0, r.output
    [line] = [json.loads(x) for x in r.stdout.splitlines()]
    assert line["key"]["schema"] == "StreamsGroupMemberMetadataKey"
    assert line["key"]["data"] == {"groupId": "app", "memberId": "m-1"}
    assert line["value"] == {**line["value"], "schema": "StreamsGroupMemberMetadataValue", "data": None,
                             "raw": value.hex()}
    assert [(f["code"], f["severity"]) for f in line["findings"]] == [("internal-layout-unknown", "info")]
    r = runner.invoke(app, ["records", str(p)])
    assert r.exit_code == 0
    assert "StreamsGroupMemberMetadata" in r.stdout and "internal-layout-unknown" in r.stdout


def test_cli_metadata_summary_follows_new_records(tmp_path):
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    p = d / "00000000000000000000.log"
    reg = E.load("RegisterControllerRecord")
    register = frame(27, E.encode(reg, 0, E.sample(reg, 0, 1, {"controllerId": 3001})))
    unreg = frame(29, E.encode(UNREGISTER_CONTROLLER, 0, {"controllerId": 3001}))
    p.write_bytes(segment([(None, register), (None, unreg)]))
    r = runner.invoke(app, ["records", "--json", str(p)])
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert lines[1]["value"]["schema"] == "UnregisterControllerRecord"
    assert lines[1]["value"]["data"] == {"controllerId": 3001}
