"""``kafkadump dump --format dump-log`` without a broker: Kafka's DumpLogSegments lines for index, time
index, transaction index and producer snapshot files, and its stderr sections, on small files made here.

The expected lines are what Kafka 4.1.1's tool prints for the same bytes (its rules checked against
the real tool by tests/test_broker_dumplog.py): an index stops at the first zero slot after the first,
offset index mismatches are listed latest first, a producer without a last batch ends its line with a
space, a first sequence below zero wraps past INT32_MAX.
"""

from __future__ import annotations

import struct
import subprocess
import sys

import crc32c
from logdir_helpers import T0, Seg, batch, index_bytes, name, snapshot_bytes, timeindex_bytes, txnindex_bytes, write


def dump_log(*paths: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkadump", "dump", "--format", "dump-log", *paths],
                          capture_output=True, text=True, timeout=120)


def test_indexes_their_mismatches_and_stop_at_a_zero_slot(tmp_path):
    seg = Seg([batch(100), batch(103), batch(106)])       # offsets 100-108, timestamps T0..T0+2 each
    d = tmp_path / "t-0"
    log = write(d / name(100, ".log"), seg.data)
    index = write(d / name(100, ".index"),
                  index_bytes([(102, seg.at(0)), (105, seg.at(2)), (107, seg.at(2))], base=100)
                  + b"\0" * 8 + index_bytes([(108, seg.at(2))], base=100))
    times = write(d / name(100, ".timeindex"),
                  timeindex_bytes([(T0 + 2, 102), (T0 + 9, 108), (T0 + 1, 108), (T0 + 20, 104)], base=100))
    done = dump_log(index, times, log)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[:5] == [f"Dumping {index}", "offset: 102 position: 0", f"offset: 105 position: {seg.at(2)}",
                       f"offset: 107 position: {seg.at(2)}", f"Dumping {times}"]
    assert out[5:9] == [f"timestamp: {T0 + 2} offset: 102", f"timestamp: {T0 + 9} offset: 108",
                        f"timestamp: {T0 + 1} offset: 108", f"timestamp: {T0 + 20} offset: 104"]
    assert out[9:11] == [f"Dumping {log}", "Log starting offset: 100"]
    assert done.stderr.splitlines() == [
        f"Mismatches in :{index}",
        "  Index offset: 107, log offset: 108",
        "  Index offset: 105, log offset: 108",
        f"Found timestamp mismatch in :{times}",
        f"  Index timestamp: {T0 + 9}, log timestamp: {T0 + 2}",
        f"  Index timestamp: {T0 + 1}, log timestamp: {T0 + 2}",
        f"Found out of order timestamp in :{times}",
        f"  Index timestamp: {T0 + 1}, Previously indexed timestamp: {T0 + 9}",
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 104, found log offset: 105",
    ]


def test_empty_index_txn_index_snapshot_and_offset_jumps(tmp_path):
    d = tmp_path / "p-0"
    empty = write(d / name(0, ".index"), b"")
    txn = write(d / name(0, ".txnindex"), txnindex_bytes([(4, 11, 21, 22), (3, 44, 54, 55)]))
    snap = write(d / name(71, ".snapshot"), snapshot_bytes([
        (3, 2, 9, 53, 9, T0, 0, -1),          # its last batch: sequences 0-9
        (5, 0, 2, 70, 5, T0 + 1, -1, 66),     # an open transaction; first sequence wraps
        (6, 1, -1, -1, 0, T0 + 2, 4, -1),     # markers only: no last batch
    ]))
    jumps = write(d / name(0, ".log"), Seg([batch(0), batch(10, 2)]).data)
    unknown = write(d / "partition.metadata", b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
    done = dump_log(empty, txn, snap, jumps, unknown)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[:9] == [
        f"Dumping {empty}", f"{empty} is empty.",
        f"Dumping {txn}",
        "version: 0 producerId: 4 firstOffset: 11 lastOffset: 21 lastStableOffset: 22",
        "version: 0 producerId: 3 firstOffset: 44 lastOffset: 54 lastStableOffset: 55",
        f"Dumping {snap}",
        f"producerId: 3 producerEpoch: 2 coordinatorEpoch: 0 currentTxnFirstOffset: OptionalLong.empty "
        f"lastTimestamp: {T0} firstSequence: 0 lastSequence: 9 lastOffset: 53 offsetDelta: 9 timestamp: {T0}",
        f"producerId: 5 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong[66] "
        f"lastTimestamp: {T0 + 1} firstSequence: 2147483645 lastSequence: 2 lastOffset: 70 offsetDelta: 5 "
        f"timestamp: {T0 + 1}",
        f"producerId: 6 producerEpoch: 1 coordinatorEpoch: 4 currentTxnFirstOffset: OptionalLong.empty "
        f"lastTimestamp: {T0 + 2} ",
    ]
    assert out[9:11] == [f"Dumping {jumps}", "Log starting offset: 0"]
    assert out[-1] == f"Dumping {unknown}"
    assert sum(line.startswith("| offset: ") for line in out) == 5
    assert done.stderr.splitlines() == [f"Ignoring unknown file {unknown}", f"Non-consecutive offsets in {jumps}",
                                        "  2 is followed by 10"]


def test_an_index_without_its_log(tmp_path):
    """Where Kafka throws (no .log), kafkadump prints the entries, each a mismatch
    (man/parts/oracle_dumplog.man)."""
    index = write(tmp_path / "q-0" / name(0, ".index"), index_bytes([(4, 0)]))
    done = dump_log(index)
    assert done.stdout.splitlines() == [f"Dumping {index}", "offset: 4 position: 0"]
    assert done.stderr.splitlines() == [f"Mismatches in :{index}", "  Index offset: 4, log offset: -1"]


def test_damaged_snapshots_are_refused_as_kafka_refuses_them(tmp_path):
    """Kafka's readSnapshot messages (checked against the real tool by the broker tests), no producer
    line for a refused snapshot, exit 1 for the damage."""
    good = snapshot_bytes([(3, 2, 9, 53, 9, T0, 0, -1), (4, 2, 9, 64, 9, T0, 0, -1)])
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 1
    version = bytearray(good)
    version[1] = 9
    variants = {1: bytes(bad_crc), 2: bytes(version), 3: good[:30], 4: good[:3], 5: good + b"xyz",
                6: good[:6] + struct.pack(">i", 1000) + good[10:], 7: good[:6] + struct.pack(">i", -1) + good[10:]}
    paths = [write(tmp_path / "s-0" / name(n, ".snapshot"), data) for n, data in variants.items()]
    done = dump_log(*paths)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [f"Dumping {p}" for p in paths]
    computed = [crc32c.crc32c(bytes(v[6:])) for v in (bad_crc, good + b"xyz")]
    (stored,) = struct.unpack_from(">I", good, 2)
    assert done.stderr.splitlines() == [
        f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. Computed crc: {computed[0]}",
        "Snapshot failed schema validation: Snapshot contained an unknown file version 9",
        "Snapshot failed schema validation: null",
        "Snapshot failed schema validation: null",
        f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. Computed crc: {computed[1]}",
        "Snapshot failed schema validation: Tried to allocate a collection of size 1000, but there are only "
        f"{len(good) - 10} bytes remaining.",
        "Snapshot failed schema validation: non-nullable field producerEntries was serialized as null",
    ]


def test_a_secret_is_masked_on_its_own_record_line(tmp_path):
    """A SCRAM credential and a NoOp in one batch of a metadata segment: the credential's line is
    masked, the NoOp's is not (records read once: a record's mask never lands on its neighbour)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from metadata_builders import record

    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    frames = [record("UserScramCredentialRecord", 0, name="alice", mechanism=1, salt=b"salt-bytes",
                     storedKey=b"s" * 32, serverKey=b"k" * 32, iterations=4096),
              record("NoOpRecord", 0), record("NoOpRecord", 0)]
    for i, frame in enumerate(frames):
        bld.append(i, timestamp=T0, key=None, value=frame, headers=[])
    log = write(tmp_path / "__cluster_metadata-0" / name(0, ".log"), bytes(bld.build()))
    done = dump_log(log)
    records = [line for line in done.stdout.splitlines() if line.startswith("| offset: ")]
    assert len(records) == 3
    assert records[0].endswith(f" payload: [redacted secret] ({len(frames[0])} bytes)")
    assert "salt-bytes" not in done.stdout
    assert [r.endswith("redacted secret] (4 bytes)") for r in records[1:]] == [False, False]


# what Java's new String(bytes, UTF_8) makes of these bytes (run against a JDK 17), Python's "replace" in
# the comments where it differs
JAVA_STRINGS = {
    b"\xed\xa0\x80": "\ufffd",                  # an encoded surrogate: Python, three U+FFFD
    b"\xed\xb7\x14": "\ufffd\x14",              # Python, two
    b"ok\xed\xa0": "ok\ufffd",                  # cut short at the end: Python, two
    b"\xf0\x90\x80": "\ufffd",
    b"\xe0\x80\x80": "\ufffd\ufffd\ufffd",
    b"\xf4\x90\x80\x80": "\ufffd\ufffd\ufffd\ufffd",
    b"\xc0A": "\ufffdA",
    "caf\u00e9 \U0001f600".encode(): "caf\u00e9 \U0001f600",
}


def test_invalid_utf8_is_replaced_as_java_replaces_it(tmp_path):
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from kafkadump.render.java_utf8 import java_string

    assert {b: java_string(b) for b in JAVA_STRINGS} == JAVA_STRINGS
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, value in enumerate(JAVA_STRINGS):
        bld.append(i, timestamp=T0, key=b"k", value=value, headers=[])
    log = write(tmp_path / "u-0" / name(0, ".log"), bytes(bld.build()))
    for command in (["dump", "--format", "dump-log"], ["records", "--format", "dump-log"]):
        out = subprocess.run([sys.executable, "-m", "kafkadump", *command, log], capture_output=True,
                             timeout=120).stdout.decode()
        payloads = [line.split(" payload: ", 1)[1] for line in out.splitlines() if " payload: " in line]
        assert payloads == [t.replace("\x14", "\\x14") for t in JAVA_STRINGS.values()]   # \x14 escaped


def test_decoded_strings_are_escaped_as_jackson_escapes_them():
    """Jackson's ObjectNode.toString (Kafka 4.1.1's jackson-databind) for these strings: control
    characters as \\u00XX with uppercase hex, \\b \\t \\n \\f \\r short, DEL and U+2028 as they are."""
    from kafkadump.render.dumplog import kafka_json

    data = {"s": "a\x01b\x1fc\nd\te\x7ff\u2028g/h\"i\\j\u00e9\b\f\r\x00", "t": "\\u001f", "u": "\\\x1f\x1e\x1a"}
    assert kafka_json(data) == ('{"s":"a\\u0001b\\u001Fc\\nd\\te\x7ff\u2028g/h\\"i\\\\j\u00e9\\b\\f\\r\\u0000",'
                                '"t":"\\\\u001f","u":"\\\\\\u001F\\u001E\\u001A"}')


def test_doubles_are_written_as_java_writes_them():
    """Jackson's DoubleNode (Double.toString) for these values, as Kafka 4.1.1's tool prints a client
    quota's value."""
    from kafkadump.render.dumplog import kafka_json

    values = [10485760.0, 1024.0, 0.001, 1e-4, 123456789.123, 1e21, -0.0, 0.0, 9999999.0, 1e7, 0.00099, 2e-3,
              1.7976931348623157e308, 100.5, 3.14159, 1e16]
    assert kafka_json({"v": values, "n": 3}) == (
        '{"v":[1.048576E7,1024.0,0.001,1.0E-4,1.23456789123E8,1.0E21,-0.0,0.0,9999999.0,1.0E7,9.9E-4,0.002,'
        '1.7976931348623157E308,100.5,3.14159,1.0E16],"n":3}')
