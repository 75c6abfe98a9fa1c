"""Every file a log dir holds: decoders, `kafkadump dump`, and the real broker-written corpus.

Generated files are packed from the Kafka layouts in tests/logdir_helpers.py;
corpus expectations come from corpus/real/MANIFEST.md (written by the
corpus' own analyzer) and from counting files by name here.
"""

import json
import os
import re
from collections import Counter

import pytest
from conftest import need_corpus
from logdir_helpers import (
    T0,
    Seg,
    batch,
    checkpoint_text,
    flip,
    index_bytes,
    name,
    snapshot_bytes,
    timeindex_bytes,
    txnindex_bytes,
    write,
)
from typer.testing import CliRunner

from kafkadump.cli import app
from kafkadump.decoders.logfiles import names
from kafkadump.decoders.logfiles.indexes import OffsetIndex
from kafkadump.decoders.logfiles.indexes import TimeIndex
from kafkadump.decoders.logfiles.indexes import TxnIndex
from kafkadump.decoders.logfiles.snapshot import ProducerSnapshot
from kafkadump.decoders.logfiles.textfiles import (
    decode_leader_epoch_checkpoint,
    decode_meta_properties,
    decode_offset_checkpoint,
    decode_partition_metadata,
    decode_quorum_state,
)
from kafkadump.reports.triage import Triage
from kafkadump.objects.logdir_objects import triage_report

runner = CliRunner()
SEG = "real/segments"


# --- names ----------------------------------------------------------------------------------

@pytest.mark.parametrize("fname,kind,offset,suffix", [
    ("00000000000000000042.log", "segment", 42, None),
    ("00000000000000000042.index", "offset-index", 42, None),
    ("00000000000000000042.timeindex.deleted", "time-index", 42, ".deleted"),
    ("00000000000000000042.txnindex.swap", "txn-index", 42, ".swap"),
    ("00000000000000000042.log.cleaned", "segment", 42, ".cleaned"),
    ("00000000000000000042.snapshot", "producer-snapshot", 42, None),
    ("00000000000000007364-0000000001.checkpoint", "kraft-snapshot", 7364, None),
    ("00000000000000007364-0000000001.checkpoint.part", "kraft-snapshot", 7364, ".part"),
    ("bootstrap.checkpoint", "kraft-snapshot", None, None),
    ("leader-epoch-checkpoint", "leader-epoch-checkpoint", None, None),
    ("replication-offset-checkpoint", "offset-checkpoint", None, None),
    ("partition.metadata", "partition-metadata", None, None),
    ("meta.properties", "meta-properties", None, None),
    ("quorum-state", "quorum-state", None, None),
    ("_extracted.jsonl", "unknown", None, None),
])
def test_classify(fname, kind, offset, suffix):
    fn = names.classify("/x/orders-0/" + fname)
    assert (fn.kind, fn.offset, fn.suffix) == (kind, offset, suffix)


@pytest.mark.parametrize("d,expect", [
    ("orders-3", ("orders", 3, None)),
    ("my-topic-with-dashes-12", ("my-topic-with-dashes", 12, None)),
    ("orders-3.0123456789abcdef0123456789abcdef-delete", ("orders", 3, "delete")),
    ("orders-3.0123456789abcdef0123456789abcdef-future", ("orders", 3, "future")),
    ("kafka-logs", None),
])
def test_partition_dir(d, expect):
    p = names.parse_partition_dir("/data/" + d)
    assert (None if p is None else (p.topic, p.partition, p.state)) == expect


# --- fixed-size indexes --------------------------------------------------------------------------

def test_offset_index_entries_and_zero_tail():
    buf = index_bytes([(100, 0), (105, 4100), (111, 8300)], base=100) + bytes(64)
    r = OffsetIndex(buf, "x", 100)
    es = list(r)
    assert [(e.position, e.relative_offset, e.offset, e.log_position) for e in es] == \
        [(0, 0, 100, 0), (8, 5, 105, 4100), (16, 11, 111, 8300)]
    assert (r.count, r.zero_tail) == (3, 8)
    assert [(f.code.value, f.offset, f.length) for f in r.findings] == [("zero-padding", 24, 64)]


def test_all_zero_index_has_no_entries():
    r = OffsetIndex(bytes(8 * 1000), "x", 0)
    assert list(r) == [] and r.zero_tail == 1000


def test_time_index_entries():
    buf = timeindex_bytes([(T0, 3), (T0 + 5, 9)], base=0)
    es = list(TimeIndex(buf, "x", 0))
    assert [(e.position, e.timestamp, e.offset) for e in es] == [(0, T0, 3), (12, T0 + 5, 9)]
    assert all(not e.findings for e in es)


def test_equal_timestamps_are_not_monotonic():
    es = list(TimeIndex(timeindex_bytes([(T0, 3), (T0, 9)]), "x", 0))
    assert [(f.code.value, f.offset) for f in es[1].findings] == [("timeindex-not-monotonic", 12)]


def test_txn_index_entries():
    es = list(TxnIndex(txnindex_bytes([(7, 10, 20, 9), (8, 15, 30, 10)]), "x"))
    assert [(e.position, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset) for e in es] == \
        [(0, 7, 10, 20, 9), (34, 8, 15, 30, 10)]


# --- producer snapshot ------------------------------------------------------------------------------

def test_producer_snapshot_decodes_every_field():
    entries = [(1000, 3, 41, 812, 4, T0, 7, -1), (1001, 0, 9, 820, 0, T0 + 1, -1, 815)]
    s = ProducerSnapshot(snapshot_bytes(entries), "x")
    assert (s.version, s.crc_valid, s.count, s.findings) == (1, True, 2, [])
    assert [e.values() for e in s.entries] == entries
    assert [e.position for e in s.entries] == [10, 56]


def test_empty_producer_snapshot_is_ten_bytes():
    s = ProducerSnapshot(snapshot_bytes([]), "x")
    assert (s.size, s.count, s.crc_valid, s.findings) == (10, 0, True, [])


def test_short_producer_snapshot():
    s = ProducerSnapshot(b"\x00\x01\x00", "x")
    assert [(f.code.value, f.offset) for f in s.findings] == [("truncated", 0)]


def test_producer_snapshot_trailing_bytes():
    s = ProducerSnapshot(snapshot_bytes([(1, 0, 0, 0, 0, T0, -1, -1)]) + b"\x01\x02", "x")
    codes = [(f.code.value, f.offset) for f in s.findings]
    assert ("trailing-bytes", 56) in codes and ("crc-mismatch", 2) in codes


# --- text files -------------------------------------------------------------------------------

def test_offset_checkpoint():
    c, f = decode_offset_checkpoint(b"0\n2\norders 0 17\n__consumer_offsets 49 3\n")
    assert f == [] and [(e["topic"], e["partition"], e["offset"], e["position"]) for e in c["entries"]] == \
        [("orders", 0, 17, 4), ("__consumer_offsets", 49, 3, 16)]


def test_offset_checkpoint_version_and_count():
    _, f = decode_offset_checkpoint(b"1\n0\n")
    assert [(x.code.value, x.offset) for x in f] == [("file-version-unknown", 0)]
    _, f = decode_offset_checkpoint(b"0\n3\norders 0 1\n")
    assert [(x.code.value, x.offset) for x in f] == [("file-malformed", 2)]


def test_an_empty_checkpoint_is_no_entries_as_kafka_reads_it():
    # Kafka creates every checkpoint file empty (cleaner-offset-checkpoint stays so while nothing is
    # compacted) and reads an empty one as no entries: not malformed
    for decode in (decode_offset_checkpoint, decode_leader_epoch_checkpoint):
        c, f = decode(b"")
        assert f == [] and c["entries"] == [] and c["count"] == 0


def test_leader_epoch_checkpoint_order():
    c, f = decode_leader_epoch_checkpoint(b"0\n3\n0 0\n4 10\n2 20\n")
    assert [(e["epoch"], e["startOffset"]) for e in c["entries"]] == [(0, 0), (4, 10), (2, 20)]
    assert [(x.code.value, x.offset) for x in f] == [("leader-epoch-mismatch", 13)]


def test_partition_metadata():
    c, f = decode_partition_metadata(b"version: 0\ntopic_id: 1qqJytXMSWeR5tv_Z0us9g")
    assert f == [] and c["topicId"] == "1qqJytXMSWeR5tv_Z0us9g"
    assert c["topicUuid"] == "d6aa89ca-d5cc-4967-91e6-dbff674bacf6"
    _, f = decode_partition_metadata(b"version: 0\ntopic_id: not-base64!\n")
    assert [(x.code.value, x.offset) for x in f] == [("file-malformed", 11)]


def test_meta_properties():
    c, f = decode_meta_properties(b"#\n#Sat Jul 19\nnode.id=1\ndirectory.id=39XZ\nversion=1\ncluster.id=MkU3\n")
    assert f == [] and (c["version"], c["nodeId"], c["clusterId"], c["directoryId"]) == (1, "1", "MkU3", "39XZ")
    _, f = decode_meta_properties(b"version=1\nnode.id=1\n")
    assert [(x.code.value, x.message) for x in f] == [("file-malformed", "version 1 requires cluster.id")]


def test_quorum_state():
    c, f = decode_quorum_state(b'{"clusterId":"","leaderId":1,"leaderEpoch":7,"votedId":-1,"appliedOffset":0,'
                               b'"currentVoters":[{"voterId":1}],"data_version":0}')
    assert f == [] and (c["leaderId"], c["leaderEpoch"], c["dataVersion"]) == (1, 7, 0)


# --- dump ------------------------------------------------------------------------------------------

def test_dump_index_checked_against_its_log(tmp_path):
    s = Seg([batch(0, 3), batch(3, 2), batch(5, 4)])
    d = tmp_path / "orders-0"
    write(d / name(0, ".log"), s.data)
    ix = write(d / name(0, ".index"), index_bytes([(4, s.at(1)), (8, s.at(2) + 3)]) + bytes(16))
    r = runner.invoke(app, ["dump", "--json", ix])
    lines = [json.loads(x) for x in r.output.splitlines()]
    assert r.exit_code == 1
    assert [(x["type"], x["position"], x["offset"], x["logPosition"]) for x in lines[:2]] == \
        [("index-entry", 0, 4, s.at(1)), ("index-entry", 8, 8, s.at(2) + 3)]
    assert lines[0]["findings"] == [] and [f["code"] for f in lines[1]["findings"]] == ["index-entry-mismatch"]
    assert lines[2]["type"] == "findings" and lines[2]["findings"][0]["code"] == "zero-padding"
    # index-only: no log, no mismatch
    r = runner.invoke(app, ["dump", "--no-verify", "--json", ix])
    assert r.exit_code == 0 and "index-entry-mismatch" not in r.output


def test_dump_every_kind_in_table_and_json(tmp_path):
    d = tmp_path / "orders-0"
    files = {
        name(0, ".timeindex"): timeindex_bytes([(T0, 2)]),
        name(0, ".txnindex"): txnindex_bytes([(7, 0, 3, 0)]),
        name(4, ".snapshot"): snapshot_bytes([(5, 0, 2, 2, 2, T0, -1, -1)]),
        "leader-epoch-checkpoint": checkpoint_text([(0, 0)]),
        "partition.metadata": b"version: 0\ntopic_id: 1qqJytXMSWeR5tv_Z0us9g\n",
        "quorum-state": b'{"leaderId":1,"leaderEpoch":2,"votedId":-1,"data_version":0}',
        "meta.properties": b"version=0\nbroker.id=3\n",
        "replication-offset-checkpoint": checkpoint_text([("orders", 0, 3)]),
        name(0, ".log"): Seg([batch(0, 3)]).data,
    }
    types = {name(0, ".timeindex"): "timeindex-entry", name(0, ".txnindex"): "txnindex-entry",
             name(4, ".snapshot"): "producer-snapshot", "leader-epoch-checkpoint": "leader-epoch-checkpoint",
             "partition.metadata": "partition-metadata", "quorum-state": "quorum-state",
             "meta.properties": "meta-properties", "replication-offset-checkpoint": "offset-checkpoint",
             name(0, ".log"): "batch"}
    for fname, data in files.items():
        p = write(d / fname, data)
        t = runner.invoke(app, ["dump", p])
        assert t.exit_code == 0, (fname, t.output)
        j = runner.invoke(app, ["dump", "--json", p])
        assert j.exit_code == 0
        first = json.loads(j.output.splitlines()[0])
        assert first["type"] == types[fname] and first["file"] == p
    snap = [json.loads(x) for x in runner.invoke(app, ["dump", "--json", str(d / name(4, ".snapshot"))]).output.splitlines()]
    assert snap[1] == {"type": "producer-entry", "file": str(d / name(4, ".snapshot")), "position": 10, "entry": 0,
                       "producerId": 5, "epoch": 0, "lastSequence": 2, "lastOffset": 2, "offsetDelta": 2,
                       "timestamp": T0, "coordinatorEpoch": -1, "currentTxnFirstOffset": -1}


def test_dump_unknown_name_needs_type(tmp_path):
    p = write(tmp_path / "mystery.bin", index_bytes([(1, 10)]))
    r = runner.invoke(app, ["dump", p])
    assert r.exit_code == 2
    r = runner.invoke(app, ["dump", "--type", "offset-index", "--json", p])
    assert r.exit_code == 0 and json.loads(r.output.splitlines()[0])["logPosition"] == 10


def test_dump_bad_snapshot_exit_1(tmp_path):
    p = write(tmp_path / name(3, ".snapshot"), flip(snapshot_bytes([(5, 0, 2, 2, 2, T0, -1, -1)]), 20))
    r = runner.invoke(app, ["dump", p])
    assert r.exit_code == 1 and "crc-mismatch" in r.output


# --- the real corpus ---------------------------------------------------------------------------------

_KIND_BY_NAME = [
    (re.compile(r"^\d{20}\.log$"), "segment"), (re.compile(r"^\d{20}\.index$"), "offset-index"),
    (re.compile(r"^\d{20}\.timeindex$"), "time-index"), (re.compile(r"^\d{20}\.snapshot$"), "producer-snapshot"),
    (re.compile(r"^(\d{20}-\d{10}|bootstrap)\.checkpoint$"), "kraft-snapshot"),
    (re.compile(r"^leader-epoch-checkpoint$"), "leader-epoch-checkpoint"),
    (re.compile(r"^partition\.metadata$"), "partition-metadata"),
    (re.compile(r"^(recovery-point|replication|log-start|cleaner)-offset-checkpoint$"), "offset-checkpoint"),
    (re.compile(r"^meta\.properties$"), "meta-properties"), (re.compile(r"^quorum-state$"), "quorum-state"),
]


@pytest.fixture(scope="module")
def corpus_report():
    root = need_corpus(SEG)
    return triage_report(Triage(str(root), jobs=2).run())


def test_corpus_has_no_error_level_findings(corpus_report):
    errors = [(f["file"], x["code"], x["offset"]) for f in corpus_report["files"] for x in f["findings"]
              if x["severity"] == "error"]
    assert errors == [] and corpus_report["totals"]["findings"]["error"] == 0
    assert corpus_report["totals"]["unreadableFiles"] == 0
    assert corpus_report["verdict"] in ("clean", "warnings")


def test_corpus_every_file_is_scanned_and_classified(corpus_report):
    root = need_corpus(SEG)
    expect = Counter()
    n = 0
    for dirpath, _, filenames in os.walk(root):
        for fn in filenames:
            n += 1
            expect[next((k for rx, k in _KIND_BY_NAME if rx.match(fn)), "unknown")] += 1
    got = Counter(f["kind"] for f in corpus_report["files"])
    assert corpus_report["totals"]["files"] == n and got == expect
    assert got["offset-index"] > 40 and got["leader-epoch-checkpoint"] > 900


def test_corpus_every_index_and_checkpoint_decodes(corpus_report):
    undecodable = {"file-malformed", "file-version-unknown", "truncated", "entry-invalid", "crc-mismatch",
                   "index-not-monotonic", "timeindex-not-monotonic", "snapshot-incomplete"}
    bad = [(f["file"], c) for f in corpus_report["files"] if f["kind"] != "segment"
           for c in f["findingCounts"] if c in undecodable]
    assert bad == []
    snaps = [f for f in corpus_report["files"] if f["kind"] == "producer-snapshot"]
    assert snaps and all(f["crcValid"] is True and f["version"] == 1 for f in snaps)
    lecs = [f for f in corpus_report["files"] if f["kind"] == "leader-epoch-checkpoint"]
    assert all(f["version"] == 0 for f in lecs)


def test_corpus_consistent_index_pair_is_fully_verified(corpus_report):
    # MANIFEST.md: 544 entries, first (relOff,pos)=(28, 4566), last=(11790, 2885345), consistent with .log;
    # timeindex 545 entries, first (ts,relOff)=(1766799077235, 28)
    base = str(need_corpus(SEG + "/ArthurArutunyan04+Backend_labs/_history/d8748dd/kafka-data/oms_order_created-0"))
    ix = next(f for f in corpus_report["files"] if f["file"] == base + "/00000000000000000000.index")
    assert (ix["entries"], ix["verifiedEntries"], ix["findings"]) == (544, 544, [])
    assert ix["firstEntry"] == {"offset": 28, "position": 4566} and ix["lastEntry"] == {"offset": 11790,
                                                                                        "position": 2885345}
    tx = next(f for f in corpus_report["files"] if f["file"] == base + "/00000000000000000000.timeindex")
    assert tx["entries"] == 545 and tx["verifiedEntries"] == 545 and tx["findings"] == []
    assert tx["firstEntry"] == {"timestamp": 1766799077235, "offset": 28}


def test_corpus_kraft_metadata_index_relative_offsets(corpus_report):
    # MANIFEST.md: 5151.index: 30 entries, first (relOff,pos)=(84, 4098), last=(1864, 126614), consistent
    p = str(need_corpus(SEG + "/ArthurArutunyan04+Backend_labs/_history/d8748dd/kafka-data/__cluster_metadata-0"
                              "/00000000000000005151.index"))
    ix = next(f for f in corpus_report["files"] if f["file"] == p)
    assert ix["entries"] == 30 and ix["verifiedEntries"] == 30
    assert ix["firstEntry"] == {"offset": 5151 + 84, "position": 4098}
    assert ix["lastEntry"] == {"offset": 5151 + 1864, "position": 126614}


def test_corpus_version_skew_is_a_warning_not_an_error(corpus_report):
    # MANIFEST.md: "MISMATCH: 3854/3856 positions beyond the .log here (10422 B); version skew"
    p = str(need_corpus(SEG + "/berkayakcay+toy-node-log-collector/kafka-data/topic-logx-001-0"
                              "/00000000000000000000.index"))
    ix = next(f for f in corpus_report["files"] if f["file"] == p)
    assert [(x["code"], x["severity"]) for x in ix["findings"]] == [("index-out-of-step", "warning")]
    assert "3854 of 3856 entries" in ix["findings"][0]["message"]


def test_corpus_producer_snapshot_at_log_end_matches_the_log(corpus_report):
    p = str(need_corpus(SEG + "/LestFeeD+online-shop-user/kafka/data/cart-product-request-0"))
    part = next(x for x in corpus_report["partitions"] if x["path"] == p)
    snap = next(f for f in corpus_report["files"] if f["file"] == p + "/00000000000000000026.snapshot")
    assert part["logEndOffset"] == 26 and part["snapshotsChecked"] == 1 and snap["producers"] == 13
    assert "producer-snapshot-mismatch" not in part["findingCounts"] and part["verdict"] == "clean"


def test_corpus_transactional_topic_is_closed(corpus_report):
    p = str(need_corpus(SEG + "/ItumelengMogase+Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data/"
                              "_confluent-ksql-default__command_topic-0"))
    part = next(x for x in corpus_report["partitions"] if x["path"] == p)
    log = next(f for f in corpus_report["files"] if f["file"] == p + "/00000000000000000000.log")
    # MANIFEST.md: transactional batches + COMMIT control batch
    assert log["controlBatches"] == {"COMMIT": 1} and log["transactionalBatches"] == 2
    assert part["openTransactions"] == 0 and part["producers"] == 1


def test_corpus_kraft_snapshots_are_complete(corpus_report):
    ks = [f for f in corpus_report["files"] if f["kind"] == "kraft-snapshot"]
    assert len(ks) >= 10 and all(not f["findings"] and f["batches"] >= 3 for f in ks)


def test_corpus_quorum_state_and_meta_properties(corpus_report):
    p = str(need_corpus(SEG + "/ArthurArutunyan04+Backend_labs/_history/d8748dd/kafka-data/__cluster_metadata-0"
                              "/quorum-state"))
    q = next(f for f in corpus_report["files"] if f["file"] == p)
    assert (q["leaderId"], q["leaderEpoch"], q["dataVersion"]) == (1, 7, 0)
    m = next(f for f in corpus_report["files"]
             if f["file"] == str(need_corpus(SEG + "/LestFeeD+online-shop-user/kafka/data/meta.properties")))
    assert (m["version"], m["nodeId"], m["clusterId"], m["directoryId"]) == \
        (1, "1", "MkU3OEVBNTcwNTJENDM2Qk", "39XZSH4zKUEfvXQh8SiTyQ")


def test_corpus_dump_every_index_and_checkpoint_kind():
    root = need_corpus(SEG)
    seen = set()
    for dirpath, _, filenames in sorted(os.walk(root)):
        for fn in sorted(filenames):
            kind = names.classify(fn).kind
            if kind in seen or kind in ("unknown", "segment"):
                continue
            seen.add(kind)
            p = os.path.join(dirpath, fn)
            r = runner.invoke(app, ["dump", "--json", "--no-verify", p])
            assert r.exit_code == 0, (p, r.output[-500:])
            assert all(json.loads(x)["file"] == p for x in r.output.splitlines())
    assert seen >= {"offset-index", "time-index", "producer-snapshot", "leader-epoch-checkpoint",
                    "partition-metadata", "offset-checkpoint", "meta-properties", "quorum-state", "kraft-snapshot"}


# --- bad input: findings, never an exception -------------------------------------------------------

@pytest.mark.parametrize("fname", [name(7, ".index"), name(7, ".timeindex"), name(7, ".txnindex"),
                                   name(7, ".snapshot"), "leader-epoch-checkpoint", "partition.metadata",
                                   "recovery-point-offset-checkpoint", "meta.properties", "quorum-state",
                                   "00000000000000000007-0000000001.checkpoint", name(7, ".log")])
def test_garbage_under_every_name_never_raises(tmp_path, fname):
    import random

    from kafkadump.reports.scan import scan_file
    from kafkadump.objects.logdir_objects import file_object

    rnd = random.Random(fname)
    for i, data in enumerate([b"", b"\x00", bytes(37), b"\xff" * 100, bytes(rnd.randrange(256) for _ in range(3000)),
                              b"[" * 5000, "0\n1\nπ ∞ x\n".encode() + b"\xff\xfe"]):
        p = write(tmp_path / str(i) / "orders-0" / fname, data)
        s = scan_file(p)
        assert s.error is None and s.sha256 and s.size == len(data)
        json.dumps(file_object(s))
        r = runner.invoke(app, ["dump", "--json", p])
        assert r.exit_code in (0, 1), (fname, i, r.output[-300:])
        for line in r.output.splitlines():
            json.loads(line)
    r = triage_report(Triage(str(tmp_path)).run())
    assert r["totals"]["files"] == 7 and json.loads(json.dumps(r)) == r


def test_a_fifo_in_a_log_dir_is_listed_not_read(tmp_path):
    d = tmp_path / "orders-0"
    write(d / name(0, ".log"), Seg([batch(0, 3)]).data)
    os.mkfifo(d / name(3, ".log"))
    r = triage_report(Triage(str(d)).run())
    bad = [f for f in r["files"] if f.get("error")]
    assert len(bad) == 1 and "not a regular file" in bad[0]["error"] and r["verdict"] == "errors"
