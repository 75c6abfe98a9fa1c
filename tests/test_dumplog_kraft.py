"""dump-log as Kafka 4.x prints it: KRaft control records decoded, and --decode as kafka-dump-log's decoders.

The expected lines are Kafka 4.x's forms (DumpLogSegments: ``LeaderChange: {json}``, ``SnapshotHeader
{json}``, coordinator records as ``key: {"type":"N","data":...} payload: {"version":"V","data":...}``,
metadata as ``payload: {"type":"TOPIC_RECORD","version":V,"data":...}``).  Batches come from kafka-python's
builder; the control and internal-topic values are packed here by hand from Kafka's JSON schemas
(flexible versions: compact arrays and strings, tagged-field sections), never by kafkadump.
"""

from __future__ import annotations

import base64
import os
import struct
import subprocess
import sys

import pytest
from conftest import need_corpus
from kafka.record.default_records import DefaultRecordBatchBuilder
from logdir_helpers import T0, fix_crc, name, write

DIR_ID = bytes(range(16))
DIR_ID_TEXT = base64.urlsafe_b64encode(DIR_ID).rstrip(b"=").decode()   # Kafka's Uuid.toString
TOPIC_ID = bytes(range(100, 116))
TOPIC_ID_TEXT = base64.urlsafe_b64encode(TOPIC_ID).rstrip(b"=").decode()


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def cstr(s: str) -> bytes:            # COMPACT_STRING
    b = s.encode()
    return uvarint(len(b) + 1) + b


def carray(items: list[bytes]) -> bytes:   # COMPACT_ARRAY of structs
    return uvarint(len(items) + 1) + b"".join(items)


NO_TAGS = b"\x00"


def control_batch(base: int, records: list[tuple[int, bytes]]) -> bytes:
    """A control batch (attributes bit 5) holding ``(type, value)`` control records."""
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, (ctype, value) in enumerate(records):
        bld.append(i, timestamp=T0, key=struct.pack(">hh", 0, ctype), value=value, headers=[])
    buf = bytearray(bld.build())
    struct.pack_into(">q", buf, 0, base)
    (attrs,) = struct.unpack_from(">h", buf, 21)
    struct.pack_into(">h", buf, 21, attrs | 0x20)
    fix_crc(buf, 0)
    return bytes(buf)


def data_batch(base: int, records: list[tuple[bytes | None, bytes | None]]) -> bytes:
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, (k, v) in enumerate(records):
        bld.append(i, timestamp=T0, key=k, value=v, headers=[])
    buf = bytearray(bld.build())
    struct.pack_into(">q", buf, 0, base)
    return bytes(buf)


# the KRaft control values, by their schemas (records/LeaderChangeMessage.json, ...), version 0
LEADER_CHANGE = (struct.pack(">hi", 0, 3) + carray([struct.pack(">i", 1) + NO_TAGS, struct.pack(">i", 3) + NO_TAGS])
                 + carray([struct.pack(">i", 3) + NO_TAGS]) + NO_TAGS)
SNAPSHOT_HEADER = struct.pack(">hq", 0, T0) + NO_TAGS
SNAPSHOT_FOOTER = struct.pack(">h", 0) + NO_TAGS
KRAFT_VERSION = struct.pack(">hh", 0, 1) + NO_TAGS
VOTER = (struct.pack(">i", 1) + DIR_ID + carray([cstr("CONTROLLER") + cstr("localhost") + struct.pack(">H", 9093)
                                                 + NO_TAGS])
         + struct.pack(">hh", 0, 1) + NO_TAGS + NO_TAGS)
KRAFT_VOTERS = struct.pack(">h", 0) + carray([VOTER]) + NO_TAGS

EXPECTED = [
    'LeaderChange: {"version":0,"leaderId":3,"voters":[{"voterId":1},{"voterId":3}],'
    '"grantingVoters":[{"voterId":3}]}',
    f'SnapshotHeader {{"version":0,"lastContainedLogTimestamp":{T0}}}',
    'SnapshotFooter {"version":0}',
    'KRaftVersion {"version":0,"kRaftVersion":1}',
    f'KRaftVoters {{"version":0,"voters":[{{"voterId":1,"voterDirectoryId":"{DIR_ID_TEXT}","endpoints":'
    '[{"name":"CONTROLLER","host":"localhost","port":9093}],'
    '"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}',
]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"})


def _record_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("| ")]


@pytest.mark.parametrize("topic", ["orders-0", "__cluster_metadata-0"])
def test_kraft_control_records_are_printed_decoded_in_any_topic(tmp_path, topic):
    seg = control_batch(0, [(2, LEADER_CHANGE), (3, SNAPSHOT_HEADER), (4, SNAPSHOT_FOOTER), (5, KRAFT_VERSION),
                            (6, KRAFT_VOTERS)])
    log = write(tmp_path / topic / name(0, ".log"), seg)
    r = _cli("records", "-f", "dump-log", log)
    assert r.returncode == 0, r.stderr
    lines = _record_lines(r.stdout)
    sizes = [len(v) for v in (LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS)]
    assert lines == [f"| offset: {i} CreateTime: {T0} keySize: 4 valueSize: {sizes[i]} sequence: -1 headerKeys: [] "
                     f"{EXPECTED[i]}" for i in range(5)]


def test_a_control_body_that_does_not_decode_stays_hex_with_its_finding(tmp_path):
    cut = LEADER_CHANGE[:7]
    log = write(tmp_path / "orders-0" / name(0, ".log"), control_batch(0, [(2, cut)]))
    r = _cli("records", "-f", "dump-log", log)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("| offset: 0 "))
    assert lines[i].endswith(" LeaderChange: 0x" + cut.hex())
    assert lines[i + 1].startswith("# kafkadump: internal-malformed severity: error position: ")


def test_control_records_of_a_real_kraft_log_and_snapshot():
    root = need_corpus("real/segments/ArthurArutunyan04+Backend_labs/kafka-data")
    r = _cli("records", "-f", "dump-log", str(root / "bootstrap.checkpoint"))
    lines = _record_lines(r.stdout)
    # SnapshotHeader (version 0, lastContainedLogTimestamp 0) and SnapshotFooter of a bootstrap snapshot;
    # the MANIFEST lists control types SNAPSHOT_HEADER and SNAPSHOT_FOOTER at offsets 0 and 4
    assert lines[0].endswith(' SnapshotHeader {"version":0,"lastContainedLogTimestamp":0}')
    assert lines[4].endswith(' SnapshotFooter {"version":0}')
    r = _cli("records", "-f", "dump-log", str(root / "__cluster_metadata-0" / "00000000000000000000.log"))
    leader = [line for line in _record_lines(r.stdout) if "LeaderChange" in line]
    assert len(leader) == 5   # the MANIFEST: 5 LEADER_CHANGE control batches, one voter (node 1, quorum-state)
    assert all(line.endswith(' LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],'
                             '"grantingVoters":[{"voterId":1}]}') for line in leader)


# --- --decode: kafka-dump-log's decoders ------------------------------------------------------------------

def _offsets_segment() -> bytes:
    key = struct.pack(">h", 1) + struct.pack(">h", 1) + b"g" + struct.pack(">h", 6) + b"orders" + struct.pack(">i", 3)
    value = struct.pack(">hqih", 3, 42, 5, 2) + b"md" + struct.pack(">q", T0)
    tomb = struct.pack(">h", 2) + struct.pack(">h", 1) + b"g"
    unknown = struct.pack(">h", 99) + b"\x00\x00"
    return data_batch(0, [(key, value), (tomb, None), (unknown, b"\x00\x00")])


def test_decode_offsets_prints_kafkas_json_key_and_payload(tmp_path):
    log = write(tmp_path / "__consumer_offsets-7" / name(0, ".log"), _offsets_segment())
    r = _cli("records", "-f", "dump-log", "--decode", "offsets", log)
    lines = _record_lines(r.stdout)
    assert lines[0].endswith(' key: {"type":"1","data":{"group":"g","topic":"orders","partition":3}} '
                             'payload: {"version":"3","data":{"offset":42,"leaderEpoch":5,"metadata":"md",'
                             f'"commitTimestamp":{T0}}}}}')
    assert lines[1].endswith(' key: {"type":"2","data":{"group":"g"}} payload: <DELETE>')
    assert lines[2].endswith(" key: Unknown record type 99 at offset 2, skipping.")
    assert r.returncode == 1   # the unknown type is a finding (internal-type-unknown)
    # without --decode, as kafka-dump-log without a decoder: the bytes as text
    plain = _record_lines(_cli("records", "-f", "dump-log", log).stdout)
    assert "key: {" not in plain[0] and "orders" in plain[0]


def test_decode_metadata_prints_the_record_type_and_an_error_for_a_broken_one(tmp_path):
    topic = uvarint(1) + uvarint(2) + uvarint(0) + cstr("orders") + TOPIC_ID + NO_TAGS   # frame + TopicRecord v0
    broken = uvarint(1) + uvarint(2) + uvarint(0) + cstr("orders")[:4]
    log = write(tmp_path / "__cluster_metadata-0" / name(0, ".log"), data_batch(0, [(None, topic), (None, broken)]))
    r = _cli("records", "-f", "dump-log", "--decode", "metadata", log)
    assert r.returncode == 1
    lines = _record_lines(r.stdout)
    assert lines[0].endswith(f' headerKeys: [] payload: {{"type":"TOPIC_RECORD","version":0,"data":'
                             f'{{"name":"orders","topicId":"{TOPIC_ID_TEXT}"}}}}')
    assert " payload: Error at 1, skipping. " in lines[1]
    assert "# kafkadump: internal-malformed severity: error" in r.stdout


def test_the_readme_example_runs_as_written(tmp_path):
    import shlex
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    (example,) = [line.strip() for line in readme.splitlines()
                  if line.strip().startswith("kafkadump records --format dump-log --decode metadata")]
    args = shlex.split(example)
    write(tmp_path / args[-1], control_batch(0, [(2, LEADER_CHANGE)])
          + data_batch(1, [(None, uvarint(1) + uvarint(2) + uvarint(0) + cstr("orders") + TOPIC_ID + NO_TAGS)]))
    r = subprocess.run([sys.executable, "-m", "kafkadump", *args[1:]], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = _record_lines(r.stdout)
    assert lines[0].endswith(EXPECTED[0]) and '"type":"TOPIC_RECORD"' in lines[1]
