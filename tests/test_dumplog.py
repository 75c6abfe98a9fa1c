"""``--format dump-log``: the line format of Kafka's kafka-dump-log.sh (DumpLogSegments).

Golden lines are written out by hand from the fixtures' expect files (CRCs,
positions, offsets, timestamps) and Kafka's format, then compared exactly.
"""

import re

import pytest
from conftest import FIXTURES, load_json
from typer.testing import CliRunner

from kafkadump.cli import app
from kafkadump.decoders.batches.model import Batch
from kafkadump.decoders.batches.model import Gap
from kafkadump.decoders.batches.model import Record
from kafkadump.base.findings import Code
from kafkadump.base.findings import Finding
from kafkadump.render import dumplog

V2 = FIXTURES / "segment-v2/00000000000000000000.log"
MIXED = FIXTURES / "segment-mixed/00000000000000000000.log"
DAMAGED = FIXTURES / "damaged/00000000000000000000.log"
PADDED = FIXTURES / "damaged/padded.log"

NO_PRODUCER = "baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1"
PLAIN = "isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty"


def dump(command, path, *extra):
    result = CliRunner().invoke(app, [command, str(path), "--format", "dump-log", *extra])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    # split on \n only: payloads may hold other characters str.splitlines() breaks on
    return result.exit_code, result.stdout.split("\n")


def v2_batch(base, last, count, lepoch, pos, ts, size, codec, crc, producer=NO_PRODUCER, flags=PLAIN,
             ts_type="CreateTime", valid="true"):
    return (f"baseOffset: {base} lastOffset: {last} count: {count} {producer} partitionLeaderEpoch: {lepoch} "
            f"{flags} position: {pos} {ts_type}: {ts} size: {size} magic: 2 compresscodec: {codec} "
            f"crc: {crc} isvalid: {valid}")


# --- segment-v2 -------------------------------------------------------------------------

V2_BATCH_LINES = [
    v2_batch(0, 4, 5, 0, 0, 1700000004000, 310, "none", 3675417465),
    v2_batch(5, 7, 3, 0, 310, 1700000011500, 390, "none", 4058160123),
    v2_batch(8, 11, 4, 1, 700, 1700000020300, 238, "gzip", 734444164),
    v2_batch(12, 15, 4, 1, 938, 1700000030300, 283, "snappy", 4208488142),
    v2_batch(16, 19, 4, 1, 1221, 1700000040300, 269, "lz4", 341993415),
    v2_batch(20, 23, 4, 2, 1490, 1700000050300, 248, "zstd", 2692233538),
    v2_batch(24, 26, 3, 2, 1738, 1700000099000, 169, "none", 2658556605, ts_type="LogAppendTime"),
    v2_batch(27, 29, 3, 2, 1907, 1700000070002, 154, "none", 3484810904,
             producer="baseSequence: 0 lastSequence: 2 producerId: 4000 producerEpoch: 0"),
    v2_batch(30, 31, 2, 2, 2061, 1700000070101, 123, "none", 2521312991,
             producer="baseSequence: 3 lastSequence: 4 producerId: 4000 producerEpoch: 0"),
    v2_batch(32, 33, 2, 3, 2184, 1700000080001, 123, "none", 1793257626,
             producer="baseSequence: 0 lastSequence: 1 producerId: 5000 producerEpoch: 2",
             flags="isTransactional: true isControl: false deleteHorizonMs: OptionalLong.empty"),
    v2_batch(34, 34, 1, 3, 2307, 1700000080500, 78, "none", 2288402581,
             producer="baseSequence: -1 lastSequence: -1 producerId: 5000 producerEpoch: 2",
             flags="isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty"),
    v2_batch(35, 36, 2, 3, 2385, 1700000090001, 119, "none", 2449396174,
             producer="baseSequence: 2 lastSequence: 3 producerId: 5000 producerEpoch: 2",
             flags="isTransactional: true isControl: false deleteHorizonMs: OptionalLong.empty"),
    v2_batch(37, 37, 1, 3, 2504, 1700000090500, 78, "none", 1681684529,
             producer="baseSequence: -1 lastSequence: -1 producerId: 5000 producerEpoch: 2",
             flags="isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty"),
    v2_batch(38, 39, 2, 4, 2582, 1700000100001, 211, "none", 3617605947),
]


def test_v2_batches_exact():
    code, lines = dump("batches", V2)
    assert code == 0
    assert lines == [f"Dumping {V2}", "Log starting offset: 0", *V2_BATCH_LINES, ""]


def test_v2_records_plain_batch():
    code, lines = dump("records", V2)
    assert code == 0
    assert lines[:8] == [
        f"Dumping {V2}",
        "Log starting offset: 0",
        V2_BATCH_LINES[0],
        "| offset: 0 CreateTime: 1700000000000 keySize: 6 valueSize: 29 sequence: -1 "
        'headerKeys: [trace-id,source] key: user-1 payload: {"name":"alice","plan":"pro"}',
        # null key: no "key:" (duplicate header keys are all listed)
        "| offset: 1 CreateTime: 1700000001000 keySize: -1 valueSize: 20 sequence: -1 "
        "headerKeys: [dup,dup,null-header] payload: record without a key",
        # tombstone: no "payload:"
        "| offset: 2 CreateTime: 1700000002000 keySize: 6 valueSize: -1 sequence: -1 headerKeys: [] key: user-2",
        # empty value: "payload: " with nothing after it
        "| offset: 3 CreateTime: 1700000003000 keySize: 6 valueSize: 0 sequence: -1 headerKeys: [] "
        "key: user-3 payload: ",
        # sizes are bytes, text is UTF-8
        "| offset: 4 CreateTime: 1700000004000 keySize: 11 valueSize: 32 sequence: -1 "
        "headerKeys: [émoji-hdr,empty-hdr] key: ключ-ü payload: héllo wörld ✓ 日本語 😀",
    ]


def test_v2_records_binary_is_utf8_with_replacement():
    # as kafka-dump-log.sh decodes it, but with control characters escaped (\\x00): never raw on a terminal
    _, lines = dump("records", V2)
    recs = {ln.split(" ")[2]: ln for ln in lines if ln.startswith("| offset: ")}
    assert recs["5"] == ("| offset: 5 CreateTime: 1700000010000 keySize: 7 valueSize: 18 sequence: -1 "
                         "headerKeys: [bin-hdr] key: \\x00\ufffd\ufffd\ufffdbin payload: \ufffd(\ufffd\ufffd invalid utf-8")
    # a timestamp before the batch's first one (negative delta) is shown as is
    assert recs["6"].startswith("| offset: 6 CreateTime: 1700000009500 keySize: 4 valueSize: 256 sequence: -1 "
                                "headerKeys: [] key: blob payload: \\x00\\x01")
    assert recs["7"] == ("| offset: 7 CreateTime: 1700000011500 keySize: 4 valueSize: 3 sequence: -1 "
                         "headerKeys: [] key: \ufffd(\ufffd( payload: \\x00\\x00\\x00")


def test_v2_records_compressed_logappendtime_idempotent_and_control():
    _, lines = dump("records", V2)

    def block(batch_line, n):
        i = lines.index(batch_line)
        return lines[i + 1:i + 1 + n]

    gz = block(V2_BATCH_LINES[2], 4)
    assert gz[0] == ("| offset: 8 CreateTime: 1700000020000 keySize: 10 valueSize: 136 sequence: -1 "
                     'headerKeys: [codec] key: gzip-key-0 payload: {"id": 0, "event": "gzip", "status": "shipped", '
                     '"warehouse": "eu-central-1", "note": "lorem ipsum lorem ipsum lorem ipsum lorem ipsum "}')
    zstd = block(V2_BATCH_LINES[5], 4)
    assert zstd[2].startswith("| offset: 22 CreateTime: 1700000050200 keySize: -1 valueSize: 145 sequence: -1 "
                              'headerKeys: [] payload: {"id": 2, "event": "zstd-null-key"')
    # LogAppendTime: every record shows the batch's maxTimestamp
    assert block(V2_BATCH_LINES[6], 3) == [
        f"| offset: {24 + i} LogAppendTime: 1700000099000 keySize: 5 valueSize: 24 sequence: -1 headerKeys: [] "
        f"key: lat-{i} payload: log append time record {i}" for i in range(3)]
    # idempotent producer: sequence = baseSequence + offsetDelta
    assert block(V2_BATCH_LINES[8], 2) == [
        f"| offset: {30 + i} CreateTime: {1700000070100 + i} keySize: 6 valueSize: 18 sequence: {3 + i} "
        f"headerKeys: [] key: idem-{3 + i} payload: idempotent value {3 + i}" for i in range(2)]
    assert block(V2_BATCH_LINES[9], 2)[1] == (
        "| offset: 33 CreateTime: 1700000080001 keySize: 7 valueSize: 17 sequence: 1 headerKeys: [] "
        "key: txn-a-1 payload: committed value 1")
    # control records: the marker, no key/payload
    assert block(V2_BATCH_LINES[10], 1) == [
        "| offset: 34 CreateTime: 1700000080500 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 7"]
    assert block(V2_BATCH_LINES[12], 1) == [
        "| offset: 37 CreateTime: 1700000090500 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: ABORT coordinatorEpoch: 7"]
    assert lines[-4:] == [
        V2_BATCH_LINES[13],
        "| offset: 38 CreateTime: 1700000100000 keySize: 6 valueSize: 59 sequence: -1 headerKeys: [h] "
        "key: tail-0 payload: last batch value 0 " + "." * 40,
        "| offset: 39 CreateTime: 1700000100001 keySize: 6 valueSize: 59 sequence: -1 headerKeys: [] "
        "key: tail-1 payload: last batch value 1 " + "." * 40,
        "",
    ]


_REC = re.compile(r"^\| offset: (-?\d+) (\w+): (-?\d+) keySize: (-?\d+) valueSize: (-?\d+) ")


@pytest.mark.parametrize("path", [V2, MIXED])
def test_every_record_line_matches_expect_file(path):
    exp = load_json(path.with_suffix(".expect.json"))
    _, lines = dump("records", path)
    got = [_REC.match(ln).groups() for ln in lines if ln.startswith("| offset: ")]
    want = []
    for b in exp["batches"]:
        tst = b["timestampType"] or "NoTimestampType"
        for r in b["records"]:
            ts = -1 if r["timestamp"] is None else r["timestamp"]
            size = (lambda h: -1 if h is None else len(h) // 2)
            want.append((str(r["offset"]), tst, str(ts), str(size(r["key"])), str(size(r["value"]))))
    assert got == want
    batch_lines = [ln for ln in lines if ln.startswith(("baseOffset: ", "offset: "))]
    assert len(batch_lines) == len(exp["batches"])
    for ln, b in zip(batch_lines, exp["batches"]):
        assert f" position: {b['position']} " in ln and f" size: {b['size']} " in ln
        assert ln.endswith(f" compresscodec: {b['compression']} crc: {b['crc']} isvalid: true")


# --- segment-mixed (legacy magic 0/1) ------------------------------------------------------

def test_mixed_batches_exact():
    code, lines = dump("batches", MIXED)
    assert code == 0
    assert lines == [
        f"Dumping {MIXED}",
        "Log starting offset: 0",
        "offset: 0 position: 0 NoTimestampType: -1 size: 54 magic: 0 compresscodec: none crc: 4086481076 isvalid: true",
        "offset: 1 position: 54 NoTimestampType: -1 size: 48 magic: 0 compresscodec: none crc: 1995281688 isvalid: true",
        "offset: 4 position: 102 NoTimestampType: -1 size: 125 magic: 0 compresscodec: gzip crc: 1490617921 isvalid: true",
        "offset: 5 position: 227 CreateTime: 1700000200000 size: 59 magic: 1 compresscodec: none crc: 3933915904 isvalid: true",
        "offset: 6 position: 286 CreateTime: 1700000201000 size: 42 magic: 1 compresscodec: none crc: 348273862 isvalid: true",
        "offset: 9 position: 328 CreateTime: 1700000210020 size: 151 magic: 1 compresscodec: gzip crc: 4035398009 isvalid: true",
        "offset: 12 position: 479 CreateTime: 1700000220020 size: 177 magic: 1 compresscodec: snappy crc: 223146262 isvalid: true",
        "offset: 15 position: 656 CreateTime: 1700000230020 size: 175 magic: 1 compresscodec: lz4 crc: 1808064578 isvalid: true",
        "offset: 16 position: 831 LogAppendTime: 1700000099000 size: 65 magic: 1 compresscodec: none crc: 2125912325 isvalid: true",
        "offset: 18 position: 896 LogAppendTime: 1700000099500 size: 130 magic: 1 compresscodec: gzip crc: 4138485773 isvalid: true",
        v2_batch(19, 20, 2, 0, 1026, 1700000300001, 137, "none", 1044294742),
        v2_batch(21, 23, 3, 1, 1163, 1700000300102, 203, "zstd", 1500728575),
        "",
    ]


def test_mixed_legacy_records():
    _, lines = dump("records", MIXED)
    assert lines[2:10] == [
        "offset: 0 position: 0 NoTimestampType: -1 size: 54 magic: 0 compresscodec: none crc: 4086481076 isvalid: true",
        "| offset: 0 NoTimestampType: -1 keySize: 8 valueSize: 20 isValid: true crc: 4086481076 "
        "key: v0-key-0 payload: magic zero message 0",
        "offset: 1 position: 54 NoTimestampType: -1 size: 48 magic: 0 compresscodec: none crc: 1995281688 isvalid: true",
        "| offset: 1 NoTimestampType: -1 keySize: -1 valueSize: 22 isValid: true crc: 1995281688 "
        "payload: v0 ünïcödé, no key",
        # magic 0 wrapper: inner offsets are absolute, each inner message has its own crc
        "offset: 4 position: 102 NoTimestampType: -1 size: 125 magic: 0 compresscodec: gzip crc: 1490617921 isvalid: true",
        "| offset: 2 NoTimestampType: -1 keySize: 7 valueSize: 23 isValid: true crc: 846350286 "
        "key: v0-gz-0 payload: magic zero gzip inner 0",
        "| offset: 3 NoTimestampType: -1 keySize: 7 valueSize: 23 isValid: true crc: 1153468997 "
        "key: v0-gz-1 payload: magic zero gzip inner 1",
        "| offset: 4 NoTimestampType: -1 keySize: 7 valueSize: 23 isValid: true crc: 3742883032 "
        "key: v0-gz-2 payload: magic zero gzip inner 2",
    ]
    i = lines.index("offset: 6 position: 286 CreateTime: 1700000201000 size: 42 magic: 1 compresscodec: none "
                    "crc: 348273862 isvalid: true")
    # magic 1 tombstone; then a gzip wrapper with relative inner offsets made absolute
    assert lines[i + 1:i + 4] == [
        "| offset: 6 CreateTime: 1700000201000 keySize: 8 valueSize: -1 isValid: true crc: 348273862 key: v1-key-1",
        "offset: 9 position: 328 CreateTime: 1700000210020 size: 151 magic: 1 compresscodec: gzip "
        "crc: 4035398009 isvalid: true",
        "| offset: 7 CreateTime: 1700000210000 keySize: 9 valueSize: 26 isValid: true crc: 3578085998 "
        "key: v1-gzip-0 payload: magic one gzip inner 0 ☃",
    ]
    i = lines.index("offset: 15 position: 656 CreateTime: 1700000230020 size: 175 magic: 1 compresscodec: lz4 "
                    "crc: 1808064578 isvalid: true")
    assert lines[i + 3] == ("| offset: 15 CreateTime: 1700000230020 keySize: 8 valueSize: 25 isValid: true "
                            "crc: 826641726 key: v1-lz4-2 payload: magic one lz4 inner 2 ☃")
    # LogAppendTime wrapper: inner messages take the wrapper's timestamp
    i = lines.index("offset: 18 position: 896 LogAppendTime: 1700000099500 size: 130 magic: 1 compresscodec: gzip "
                    "crc: 4138485773 isvalid: true")
    assert lines[i + 1:i + 3] == [
        "| offset: 17 LogAppendTime: 1700000099500 keySize: 11 valueSize: 25 isValid: true crc: 1299230132 "
        "key: v1-lat-gz-0 payload: wrapped log append time 0",
        "| offset: 18 LogAppendTime: 1700000099500 keySize: 11 valueSize: 25 isValid: true crc: 2776716902 "
        "key: v1-lat-gz-1 payload: wrapped log append time 1",
    ]
    assert lines[i + 3:i + 6] == [
        v2_batch(19, 20, 2, 0, 1026, 1700000300001, 137, "none", 1044294742),
        "| offset: 19 CreateTime: 1700000300000 keySize: 8 valueSize: 23 sequence: -1 headerKeys: [upgraded] "
        "key: v2-key-0 payload: magic two after upgrade",
        "| offset: 20 CreateTime: 1700000300001 keySize: -1 valueSize: 18 sequence: -1 headerKeys: [] "
        "payload: magic two null key",
    ]


# --- damage -------------------------------------------------------------------------------

def test_damaged_batches_exact():
    code, lines = dump("batches", DAMAGED)
    assert code == 1
    shifted = []  # batches after the 37 garbage bytes sit 37 bytes later
    for ln in V2_BATCH_LINES[4:13]:
        pos = int(re.search(r" position: (\d+) ", ln).group(1))
        shifted.append(ln.replace(f" position: {pos} ", f" position: {pos + 37} "))
    assert lines == [
        f"Dumping {DAMAGED}",
        "Log starting offset: 0",
        V2_BATCH_LINES[0],
        V2_BATCH_LINES[1].replace("isvalid: true", "isvalid: false"),
        "# kafkadump: crc-mismatch severity: error position: 327 "
        "message: stored crc 4058160123 != computed 4293031650",
        V2_BATCH_LINES[2],
        V2_BATCH_LINES[3],
        "# kafkadump: not-a-batch position: 1221 size: 37",
        "# kafkadump: unknown-magic severity: error position: 1237 message: magic byte 190 is not 0, 1 or 2",
        "# kafkadump: garbage severity: error position: 1221 length: 37 "
        "message: skipped 37 bytes to the next intact batch at 1258",
        *shifted,
        "# kafkadump: not-a-batch position: 2619 size: 105",
        "# kafkadump: truncated severity: error position: 2619 length: 105 "
        "message: batch of 211 bytes declared, 105 bytes left",
        "Found 105 invalid bytes at the end of 00000000000000000000.log",
        "",
    ]


def test_damaged_records_show_the_flipped_byte_after_the_finding():
    _, lines = dump("records", DAMAGED)
    i = lines.index(V2_BATCH_LINES[1].replace("isvalid: true", "isvalid: false"))
    assert lines[i + 1].startswith("# kafkadump: crc-mismatch ")
    assert lines[i + 2].startswith("| offset: 5 ")
    blob = next(ln for ln in lines if ln.startswith("| offset: 6 "))
    assert blob.startswith("| offset: 6 CreateTime: 1700000009500 keySize: 4 valueSize: 256 ")
    # byte 0x64 'd' flipped to 0x9b: invalid UTF-8, replaced
    assert "`abc\ufffdefg" in "\n".join(lines)


def test_padded_tail_is_a_note_not_kafkas_trailing_bytes_line():
    code, lines = dump("batches", PADDED)
    assert code == 0  # zero padding is an info finding
    assert lines[1:15] == V2_BATCH_LINES
    assert lines[15:] == [
        "# kafkadump: not-a-batch position: 2793 size: 4096",
        "# kafkadump: zero-padding severity: info position: 2793 length: 4096 "
        "message: 4096 zero bytes to the end (preallocated space)",
        "",
    ]
    # not a 20-digit segment name: no "Log starting offset"
    assert lines[:2] == [f"Dumping {PADDED}", V2_BATCH_LINES[0]]


# --- filters ------------------------------------------------------------------------------

def test_records_key_filter_keeps_matching_records_and_their_batches():
    code, lines = dump("records", V2, "--key", "idem-1")
    assert code == 0
    assert lines == [
        f"Dumping {V2}",
        "Log starting offset: 0",
        V2_BATCH_LINES[7],
        "| offset: 28 CreateTime: 1700000070001 keySize: 6 valueSize: 18 sequence: 1 headerKeys: [] "
        "key: idem-1 payload: idempotent value 1",
        "",
    ]


def test_records_time_filter():
    _, lines = dump("records", MIXED, "--to-time", "1700000000999")
    # magic 0 messages have no timestamp and never match a time filter
    assert [ln for ln in lines if ln.startswith("| ")] == []
    _, lines = dump("records", MIXED, "--to-time", "1700000099000")
    assert [ln for ln in lines if ln.startswith("| ")] == [
        "| offset: 16 LogAppendTime: 1700000099000 keySize: 6 valueSize: 25 isValid: true crc: 2125912325 "
        "key: v1-lat payload: magic one log append time"]


# --- file header --------------------------------------------------------------------------

@pytest.mark.parametrize("path, second", [
    ("/data/t-0/00000000000000001234.log", "Log starting offset: 1234"),
    ("00000000000000000042.log.deleted", "Log starting offset: 42"),
    ("/m/__cluster_metadata-0/00000000000000000100-0000000003.checkpoint", "Snapshot end offset: 100, epoch: 3"),
    ("/m/bootstrap.checkpoint", "KRaft bootstrap snapshot"),
    ("padded.log", None),
    ("1234.log", None),
    ("00000000000000001234.index", None),
])
def test_file_header(path, second):
    want = f"Dumping {path}\n" + (f"{second}\n" if second else "")
    assert dumplog.file_header(path) == want


# --- synthetic cases the fixtures do not hold ----------------------------------------------

def _v2(**kw):
    b = Batch("f.log", 100, 80, 2)
    vals = dict(base_offset=10, batch_length=68, partition_leader_epoch=5, crc=1, computed_crc=1,
                attributes=0, last_offset_delta=1, base_timestamp=1000, max_timestamp=2000,
                producer_id=7, producer_epoch=1, base_sequence=0x7FFFFFFF, record_count=2)
    vals.update(kw)
    for k, v in vals.items():
        setattr(b, k, v)
    return b


def _rec(offset, delta, key, value, headers=(), control=None):
    return Record(offset, 1000 + delta, "CreateTime", key, value, list(headers), delta, delta, 0,
                  0, 10, "file", control=control)


def test_delete_horizon_and_sequence_wrap():
    b = _v2(attributes=0x40)
    b.records = [_rec(10, 0, b"a", b"x"), _rec(11, 1, b"b", b"y")]
    out = dumplog.render(b, records=True).split("\n")
    assert out[0] == ("baseOffset: 10 lastOffset: 11 count: 2 baseSequence: 2147483647 lastSequence: 0 "
                      "producerId: 7 producerEpoch: 1 partitionLeaderEpoch: 5 isTransactional: false "
                      "isControl: false deleteHorizonMs: OptionalLong[1000] position: 100 CreateTime: 2000 "
                      "size: 80 magic: 2 compresscodec: none crc: 1 isvalid: true")
    assert out[1].endswith(" sequence: 2147483647 headerKeys: [] key: a payload: x")
    assert out[2].endswith(" sequence: 0 headerKeys: [] key: b payload: y")
    assert out[3] == ""
    # records=False: the batch line only
    assert dumplog.render(b, records=False) == out[0] + "\n"


def test_keep_predicate_filters_record_lines():
    b = _v2()
    b.records = [_rec(10, 0, b"a", b"x"), _rec(11, 1, b"b", b"y")]
    out = dumplog.render(b, records=True, keep=lambda r: r.key == b"b").split("\n")
    assert len(out) == 3 and out[1].startswith("| offset: 11 ")


def test_other_control_records():
    b = _v2(attributes=0x30, base_sequence=-1, record_count=4, last_offset_delta=3)
    b.records = [
        _rec(10, 0, b"\x00\x00\x00\x02", b"\x00\x00\x00\x01", control={"type": "LEADER_CHANGE", "version": 0}),
        _rec(11, 1, b"\x00\x00\x00\x03", b"\x00\x01", control={"type": "SNAPSHOT_HEADER", "version": 0}),
        _rec(12, 2, b"\x00\x00\x00\x63", None, control={"type": "UNKNOWN(99)", "version": 0}),
        _rec(13, 3, b"\x00\x00\x00\x01", b"\x00", control={"type": "COMMIT", "version": 0}),
    ]
    b.findings = [Finding(Code.CONTROL_MALFORMED, 170, "COMMIT marker value is 1 bytes")]
    out = dumplog.render(b, records=True).split("\n")
    assert out[1] == "# kafkadump: control-malformed severity: error position: 170 message: COMMIT marker value is 1 bytes"
    assert out[2] == ("| offset: 10 CreateTime: 1000 keySize: 4 valueSize: 4 sequence: -1 headerKeys: [] "
                      "LeaderChange: 0x00000001")
    assert out[3].endswith(" headerKeys: [] SnapshotHeader 0x0001")
    assert out[4].endswith(" valueSize: -1 sequence: -1 headerKeys: [] controlType: UNKNOWN(99)")
    assert out[5].endswith(" headerKeys: [] endTxnMarker: COMMIT")


def test_legacy_invalid_inner_crc_and_magic0():
    b = Batch("f.log", 0, 60, 0)
    b.offset, b.crc, b.computed_crc, b.attributes = 3, 5, 6, 0
    b.base_offset, b.record_count = 3, 1
    b.records = [Record(3, None, None, None, b"v\nw", [], None, None, 0, 0, 60, "file",
                        magic=0, crc=5, computed_crc=6, stored_offset=3)]
    b.findings = [Finding(Code.CRC_MISMATCH, 12, "stored crc 5 != computed crc32 6")]
    assert dumplog.render(b, records=True) == (
        "offset: 3 position: 0 NoTimestampType: -1 size: 60 magic: 0 compresscodec: none crc: 5 isvalid: false\n"
        "# kafkadump: crc-mismatch severity: error position: 12 message: stored crc 5 != computed crc32 6\n"
        # payloads are printed raw, as Kafka does
        "| offset: 3 NoTimestampType: -1 keySize: -1 valueSize: 3 isValid: false crc: 5 payload: v\nw\n")


def test_gap_findings_with_decompressed_position():
    g = Gap("dir/x.log", 50, 20, [Finding(Code.RECORD_MALFORMED, 111, "record 2: bad\nlength", source_offset=7)])
    assert dumplog.render(g) == (
        "# kafkadump: not-a-batch position: 50 size: 20\n"
        "# kafkadump: record-malformed severity: error position: 111 decompressedPosition: 7 "
        "message: record 2: bad\\nlength\n")


def test_odd_negative_base_sequence_follows_kafka_arithmetic():
    # Kafka: lastSequence = incrementSequence(baseSequence, lastOffsetDelta) unless baseSequence is -1;
    # a record's sequence is -1 whenever baseSequence < 0.
    b = _v2(base_sequence=-5)
    b.records = [_rec(10, 0, None, None)]
    out = dumplog.render(b, records=True).split("\n")
    assert " baseSequence: -5 lastSequence: -4 " in out[0]
    assert out[1] == "| offset: 10 CreateTime: 1000 keySize: -1 valueSize: -1 sequence: -1 headerKeys: []"
