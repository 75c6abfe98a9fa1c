"""The schema store: a _schemas partition (kafka-python's encoder, the registry's JSON), registry exports,
schema files, references, and the input errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import need_corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemas_topic_builder import (
    BAD_KEY,
    BAD_OFFSET,
    ENTRIES,
    EXPECTED_REGISTRATIONS,
    EXPECTED_SETTINGS,
    PROTO,
    segment_bytes,
    write_schemas_partition,
)

from kafkadump.base.errors import InputError
from kafkadump.base.findings import Code
from kafkadump.decoders.payloads.model import Registration
from kafkadump.decoders.payloads.model import SchemaReference
from kafkadump.decoders.payloads.store import SchemaStore
from kafkadump.decoders.payloads.store import find_schemas_dir
from kafkadump.objects.schema_objects import deletion
from kafkadump.objects.schema_objects import registrations
from kafkadump.objects.schema_objects import setting_object
from kafkadump.objects.schema_objects import store_objects
from kafkadump.objects.schema_objects import settings as store_settings

PATIENT_LOGDIR = "real/segments/ItumelengMogase+Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data"


def _registrations(store: SchemaStore) -> dict:
    return {(r.subject, r.version): (s.id, s.schema_type, deletion(r)) for s, r in registrations(store) if r}


def test_schemas_partition_every_registration_deletion_and_setting(tmp_path):
    store = SchemaStore.load([write_schemas_partition(tmp_path)])
    assert _registrations(store) == EXPECTED_REGISTRATIONS
    got = [(o["setting"], o["subject"], o["value"], o["offset"]) for o in map(setting_object, store_settings(store))]
    assert sorted(got, key=str) == sorted(EXPECTED_SETTINGS, key=str)
    assert store.records == len(ENTRIES) and store.noops == 2
    assert sorted(store.by_id) == [1, 2, 3, 4, 5, 6, 7]
    # one id under two versions of a subject: one schema with both registrations
    assert store.lookup(5).registrations == (Registration("pings-value", 1), Registration("pings-value", 2, True))
    assert store.lookup(5).text == PROTO
    # a hard-deleted schema stays readable (its text is still in the log), flagged
    assert store.lookup(7).hard_deleted and store.lookup(7).text == '"string"'
    assert store.lookup(4).references == (SchemaReference("shop.Addr", "addr", 1),)
    assert store.lookup(99) is None and store.lookup(guid="nope") is None
    assert store.schema_types() == ("AVRO", "JSON", "PROTOBUF")


def test_malformed_record_is_a_finding_at_its_key(tmp_path):
    part = write_schemas_partition(tmp_path)
    data = (part / "00000000000000000000.log").read_bytes()
    store = SchemaStore.load([part])
    [located] = store.findings
    assert located.finding.code is Code.INTERNAL_MALFORMED
    assert located.finding.offset == data.index(BAD_KEY)
    assert f"offset {BAD_OFFSET}" in located.finding.message and "not JSON" in located.finding.message
    assert located.file.endswith("00000000000000000000.log")


def test_a_log_dir_a_partition_and_a_segment_give_the_same_store(tmp_path):
    part = write_schemas_partition(tmp_path)
    (tmp_path / "orders-0").mkdir()
    assert find_schemas_dir(tmp_path) == part and find_schemas_dir(part) == part
    assert find_schemas_dir(tmp_path / "orders-0") == part  # an input inside the log dir: its _schemas beside it
    (tmp_path / "orders-0" / "00000000000000000000.log").write_bytes(b"")
    assert find_schemas_dir(tmp_path / "orders-0" / "00000000000000000000.log") == part
    assert find_schemas_dir(part / "00000000000000000000.log") == part
    assert find_schemas_dir(tmp_path / "orders-0" / "nothing") is None
    (tmp_path / "elsewhere").mkdir()
    assert find_schemas_dir(tmp_path / "elsewhere") is None
    want = _registrations(SchemaStore.load([part]))
    assert _registrations(SchemaStore.load([tmp_path])) == want
    assert _registrations(SchemaStore.load([part / "00000000000000000000.log"])) == want


def test_a_later_value_replaces_an_earlier_one_and_a_tombstone_before_any_value_is_nothing(tmp_path):
    k = b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}'
    v1 = json.dumps({"subject": "s", "version": 1, "id": 10, "schema": '"int"'}).encode()
    v2 = json.dumps({"subject": "s", "version": 1, "id": 11, "schema": '"long"'}).encode()
    k2 = b'{"keytype":"SCHEMA","subject":"t","version":1,"magic":1}'
    store = SchemaStore.load([write_schemas_partition(tmp_path, [(k2, None), (k, v1), (k, v2)])])
    assert _registrations(store) == {("s", 1): (11, "AVRO", None)}
    assert store.lookup(11).text == '"long"'


def test_clear_subject_hard_deletes_its_versions(tmp_path):
    k = b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}'
    v = json.dumps({"subject": "s", "version": 1, "id": 10, "schema": '"int"'}).encode()
    clear = (b'{"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}', b'{"subject":"s"}')
    store = SchemaStore.load([write_schemas_partition(tmp_path, [(k, v), clear])])
    assert _registrations(store) == {("s", 1): (10, "AVRO", "hard")}


def test_registry_export(tmp_path):
    export = [
        {"subject": "addr", "version": 1, "id": 3, "schema": json.dumps({"type": "fixed", "name": "F", "size": 2})},
        {"subject": "p-value", "version": 2, "id": 8, "schemaType": "PROTOBUF", "schema": PROTO,
         "references": [], "guid": "0b5e0000-0000-4000-8000-00000000000a"},
        {"subject": "q-value", "version": 1, "id": 8, "schemaType": "PROTOBUF", "schema": PROTO},
    ]
    p = tmp_path / "schemas.json"
    p.write_text(json.dumps(export))
    store = SchemaStore.load([p])
    assert _registrations(store) == {("addr", 1): (3, "AVRO", None), ("p-value", 2): (8, "PROTOBUF", None),
                                     ("q-value", 1): (8, "PROTOBUF", None)}
    assert store.lookup(guid="0B5E0000-0000-4000-8000-00000000000A") is store.lookup(8)
    assert store.resolve(SchemaReference("x", "p-value", -1)) is store.lookup(8)


def test_schema_files_named_by_id_or_subject(tmp_path):
    (tmp_path / "12.avsc").write_text('"string"')
    (tmp_path / "orders-value.proto").write_text(PROTO)
    (tmp_path / "13.json").write_text('{"type":"object"}')
    (tmp_path / "notes.txt").write_text("ignored")
    store = SchemaStore.load([tmp_path])
    assert (store.lookup(12).schema_type, store.lookup(13).schema_type) == ("AVRO", "JSON")
    [proto] = store.unnumbered
    assert proto.schema_type == "PROTOBUF" and proto.id is None and store.by_name["orders-value.proto"] is proto
    assert store.resolve(SchemaReference("orders-value.proto", "orders-value", 1)) is proto
    assert len(store) == 3


@pytest.mark.parametrize("make, says", [
    (lambda d: d / "missing", "no such file or directory"),
    (lambda d: d, "no _schemas partition and no .avsc, .proto or .json files"),
    (lambda d: (d / "x.bin").write_bytes(b"\xff\xfe") and d / "x.bin", "not UTF-8"),
    (lambda d: (d / "x.txt").write_text("[1, 2]") and d / "x.txt", "neither a registry export"),
])
def test_unreadable_input_is_a_one_line_input_error(tmp_path, make, says):
    with pytest.raises(InputError) as e:
        SchemaStore.load([make(tmp_path)])
    assert says in str(e.value) and "\n" not in str(e.value)


def test_damaged_segment_still_yields_the_records_before_the_damage(tmp_path):
    data = bytearray(segment_bytes())
    data[-30] ^= 0xFF  # inside the last batch: its CRC fails
    d = tmp_path / "_schemas-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(bytes(data))
    store = SchemaStore.load([d])
    assert {f.finding.code for f in store.findings} >= {Code.CRC_MISMATCH}
    assert ("orders-value", 2) in _registrations(store)


def test_real_patient_admissions_schemas_partition_holds_only_noops():
    logdir = need_corpus(PATIENT_LOGDIR)
    assert find_schemas_dir(logdir) == logdir / "_schemas-0"
    store = SchemaStore.load([logdir])
    assert (store.records, store.noops, len(store), store.settings, store.findings) == (42, 42, 0, [], [])


def test_real_schemas_partitions_of_other_versions():
    for sub, n in [("real/segments/ItumelengMogase+Real-Time-Data-Pipeline-for-Patient-Admissions/_history/8195b94/"
                    "kafka-data/_schemas-0", 38),
                   ("real/segments/mscaldas2012+kafka-connect-spooldir/kafka-data/_schemas-0", 63)]:
        store = SchemaStore.load([need_corpus(sub)])
        assert (store.records, store.noops, len(store), store.findings) == (n, n, 0, [])


def test_store_files_are_opened_read_only(tmp_path):
    part = write_schemas_partition(tmp_path)
    seg = part / "00000000000000000000.log"
    seg.chmod(0o444)
    before = seg.read_bytes()
    SchemaStore.load([Path(part)])
    assert seg.read_bytes() == before


_json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                        max_size=3), max_leaves=8)
_keys = st.fixed_dictionaries({"keytype": st.sampled_from(["SCHEMA", "CONFIG", "MODE", "DELETE_SUBJECT",
                                                           "CLEAR_SUBJECT", "NOOP", "CONTEXT", "OTHER"])},
                              optional={"subject": _json_values, "version": _json_values, "magic": _json_values})
_values = st.none() | st.fixed_dictionaries({}, optional={
    "subject": _json_values, "version": _json_values, "id": _json_values, "schema": _json_values,
    "schemaType": _json_values, "references": _json_values, "deleted": _json_values,
    "compatibilityLevel": _json_values, "mode": _json_values, "guid": _json_values})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(_keys.map(lambda k: json.dumps(k).encode()) | st.binary(max_size=12),
                          _values.map(lambda v: None if v is None else json.dumps(v).encode()) | st.binary(max_size=12)),
                min_size=1, max_size=12))
def test_any_schemas_records_fold_without_raising(tmp_path_factory, entries):
    store = SchemaStore.load([write_schemas_partition(tmp_path_factory.mktemp("s"), entries)])
    assert store.records == len(entries)
    list(store_objects(store))  # every object can be made
    json.dumps(list(store_objects(store)))


def test_compressed_schemas_batches_and_a_finding_inside_one(tmp_path):
    d = tmp_path / "_schemas-0"
    d.mkdir()
    data = segment_bytes(codec=1, per_batch=len(ENTRIES))  # one gzip batch holding every record
    (d / "00000000000000000000.log").write_bytes(data)
    store = SchemaStore.load([d])
    assert _registrations(store) == EXPECTED_REGISTRATIONS
    [located] = store.findings
    # inside compressed data: anchored at the batch, with the offset inside the decompressed records
    records = gzip.decompress(data[61:])  # the records after the 61-byte batch header
    assert located.finding.offset == 0 and located.finding.source_offset == records.index(BAD_KEY)
    assert located.finding.code is Code.INTERNAL_MALFORMED
