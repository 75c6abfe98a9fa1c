"""Tiered storage: remote segment files, the remote index cache, and __remote_log_metadata in triage.

Remote segment files are named as Kafka's tiered storage names them
(``<startOffset>-<segment id>.log`` / ``.index`` / ``.timeindex`` / ``.txnindex`` / ``.snapshot`` /
``.leader_epoch_checkpoint``; the broker's ``remote-log-index-cache/`` holds
``<startOffset>_<segment id>_.index`` ...).  Their contents are the local formats, written here by
kafka-python (logdir_helpers).  ``__remote_log_metadata`` records are encoded by ``internal_encoder``
from Kafka's JSON schemas; expected offsets come from the builders' layouts.
"""

from __future__ import annotations

import json
import subprocess
import sys

import builders as bld
import internal_encoder as E
import pytest
from logdir_helpers import Seg, batch, checkpoint_text, file_of, findings, index_bytes, snapshot_bytes, write

from kafkadump.decoders.logfiles import names
from kafkadump.objects.logdir_objects import triage

MUTATION_CODES = {"remote-copy-unfinished", "remote-segment-overlap", "remote-segment-gap",
                  "remote-segment-mismatch"}

SEG_ID = "oAtiIQ95REujbuzNd_lkLQ"
TOPIC_ID = bytes(range(16))
STARTED, FINISHED, DELETE_STARTED, DELETE_FINISHED = 0, 1, 2, 3


def run(*args):
    r = subprocess.run([sys.executable, "-m", "kafkadump", *map(str, args)], capture_output=True, text=True)
    return r


# --- names -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kind,offset,tier", [
    (f"100-{SEG_ID}.log", names.SEGMENT, 100, names.REMOTE),
    (f"100-{SEG_ID}.index", names.OFFSET_INDEX, 100, names.REMOTE),
    (f"100-{SEG_ID}.timeindex", names.TIME_INDEX, 100, names.REMOTE),
    (f"100-{SEG_ID}.txnindex", names.TXN_INDEX, 100, names.REMOTE),
    (f"100-{SEG_ID}.snapshot", names.PRODUCER_SNAPSHOT, 100, names.REMOTE),
    (f"0-{SEG_ID}.leader_epoch_checkpoint", names.LEADER_EPOCH_CHECKPOINT, 0, names.REMOTE),
    (f"7_{SEG_ID}_.index", names.OFFSET_INDEX, 7, names.INDEX_CACHE),
    (f"7_{SEG_ID}_.timeindex", names.TIME_INDEX, 7, names.INDEX_CACHE),
    (f"7_{SEG_ID}_.txnindex", names.TXN_INDEX, 7, names.INDEX_CACHE),
    (f"7_{SEG_ID}_.log", names.SEGMENT, None, None),            # the cache holds indexes only
    (f"100-{SEG_ID[:-1]}.log", names.SEGMENT, None, None),      # an id is 22 characters
    ("00000000000000000100.log", names.SEGMENT, 100, None),
])
def test_tiered_storage_names(name, kind, offset, tier):
    fn = names.classify(name)
    assert (fn.kind, fn.offset, fn.tier) == (kind, offset, tier)
    if tier is not None:
        assert fn.remote_id == SEG_ID


# --- files: dump and triage ------------------------------------------------------------------------------

def remote_fileset(d, start=100):
    s = Seg([batch(start, 3, leader_epoch=4), batch(start + 3, 2, leader_epoch=4)])
    stem = d / f"{start}-{SEG_ID}"
    write(f"{stem}.log", s.data)
    write(f"{stem}.index", index_bytes([(4, s.at(1))]))
    write(f"{stem}.timeindex", b"")
    write(f"{stem}.leader_epoch_checkpoint", checkpoint_text([(4, start)]))
    write(f"{stem}.snapshot", snapshot_bytes([]))
    return s


def test_dump_decodes_remote_files_as_the_local_formats(tmp_path):
    d = tmp_path / "orders-0"
    s = remote_fileset(d)
    r = run("dump", "--json", d / f"100-{SEG_ID}.index")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    entries = [x for x in lines if x.get("type") == "index-entry"]
    assert [(e["offset"], e["logPosition"]) for e in entries] == [(104, s.at(1))]
    r = run("dump", d / f"100-{SEG_ID}.leader_epoch_checkpoint")
    assert r.returncode == 0 and "4" in r.stdout and "100" in r.stdout
    r = run("dump", "--json", d / f"100-{SEG_ID}.log")
    batches = [json.loads(x) for x in r.stdout.splitlines() if json.loads(x).get("type") == "batch"]
    assert [(b["baseOffset"], b["lastOffset"]) for b in batches] == [(100, 102), (103, 104)]


def test_dump_index_cache_file_says_its_log_is_remote(tmp_path):
    c = tmp_path / "remote-log-index-cache"
    write(c / f"100_{SEG_ID}_.index", index_bytes([(4, 999)]))
    r = run("dump", c / f"100_{SEG_ID}_.index")
    assert r.returncode == 0, r.stderr
    assert f"remote segment {SEG_ID}" in r.stdout and "104" in r.stdout


def test_triage_remote_fileset_and_index_cache(tmp_path):
    remote_fileset(tmp_path / "remote" / "orders-0")
    write(tmp_path / "logdir" / "remote-log-index-cache" / f"100_{SEG_ID}_.index", index_bytes([(4, 118)]))
    r = triage([str(tmp_path / "remote"), str(tmp_path / "logdir")])
    assert r["verdict"] == "clean" and findings(r) == []   # no orphan-file for the cache, no epoch mismatch
    f = file_of(r, tmp_path / "remote" / "orders-0" / f"100-{SEG_ID}.log")
    assert (f["tier"], f["remoteSegmentId"], f["firstOffset"], f["lastOffset"]) == ("remote", SEG_ID, 100, 104)
    c = file_of(r, tmp_path / "logdir" / "remote-log-index-cache" / f"100_{SEG_ID}_.index")
    assert (c["tier"], c["remoteSegmentId"]) == ("index-cache", SEG_ID)
    assert [p["path"] for p in r["partitions"]] == [str(tmp_path / "remote" / "orders-0")]


# --- __remote_log_metadata ---------------------------------------------------------------------------------

def seg_id(n):
    return bytes([n]) * 16


def tip():
    return {"name": "orders", "id": TOPIC_ID, "partition": 0}


def metadata_record(n, start, end):
    doc = E.load("RemoteLogSegmentMetadataRecord")
    value = {"remoteLogSegmentId": {"topicIdPartition": tip(), "id": seg_id(n)}, "startOffset": start,
             "endOffset": end, "brokerId": 1, "maxTimestampMs": bld.T0, "eventTimestampMs": bld.T0,
             "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": start}], "segmentSizeInBytes": 1000,
             "customMetadata": None, "remoteLogSegmentState": STARTED}
    return E.uvarint(1) + E.uvarint(0) + E.uvarint(0) + E.encode(doc, 0, value)


def update_record(n, state):
    doc = E.load("RemoteLogSegmentMetadataUpdateRecord")
    value = {"remoteLogSegmentId": {"topicIdPartition": tip(), "id": seg_id(n)}, "brokerId": 1,
             "eventTimestampMs": bld.T0, "customMetadata": None, "remoteLogSegmentState": state}
    return E.uvarint(1) + E.uvarint(1) + E.uvarint(0) + E.encode(doc, 0, value)


def metadata_log(events):
    """One batch per record: ``(data, positions)``."""
    data, positions = b"", []
    for i, value in enumerate(events):
        positions.append(len(data))
        data += bld.v2_batch(i, [bld.Rec(None, value)]).data
    return data, positions


def healthy_events(b_start=100, e_state=FINISHED):
    return [metadata_record(1, 0, 99), update_record(1, FINISHED),
            metadata_record(2, b_start, 199), update_record(2, FINISHED),
            metadata_record(3, 200, 299), update_record(3, e_state)]


def triage_metadata(tmp_path, events):
    d = tmp_path / "__remote_log_metadata-3"
    data, positions = metadata_log(events)
    log = write(d / "00000000000000000000.log", data)
    return triage(str(d)), log, positions


def codes_at(r, log):
    return [(f["code"], f["offset"]) for f in findings(r) if f["file"] == str(log)]


def test_healthy_remote_log_metadata_is_clean(tmp_path):
    r, log, _ = triage_metadata(tmp_path, healthy_events())
    assert codes_at(r, log) == [] and r["verdict"] == "clean"
    segs = file_of(r, log)["internal"]["segments"]
    assert {s["state"] for s in segs.values()} == {"COPY_SEGMENT_FINISHED"}


def test_deleted_segments_before_the_first_are_no_gap(tmp_path):
    events = healthy_events() + [update_record(1, DELETE_STARTED), update_record(1, DELETE_FINISHED)]
    r, log, _ = triage_metadata(tmp_path, events)
    assert codes_at(r, log) == []


def test_mutation_copy_unfinished(tmp_path):
    """The last update's state byte COPY_SEGMENT_FINISHED -> COPY_SEGMENT_STARTED."""
    r, log, pos = triage_metadata(tmp_path, healthy_events(e_state=STARTED))
    assert codes_at(r, log) == [("remote-copy-unfinished", pos[5])]
    [f] = findings(r, "remote-copy-unfinished")
    assert f["severity"] == "warning" and "200..299" in f["message"]
    # a segment whose copy started and has no update at all
    r, log, pos = triage_metadata(tmp_path, healthy_events()[:4] + [metadata_record(3, 200, 299)])
    assert codes_at(r, log) == [("remote-copy-unfinished", pos[4])]


def test_mutation_segment_gap(tmp_path):
    """Segment 2's start offset 100 -> 120: offsets 100..119 are in no remote segment."""
    r, log, pos = triage_metadata(tmp_path, healthy_events(b_start=120))
    assert codes_at(r, log) == [("remote-segment-gap", pos[3])]
    assert "100..119" in findings(r, "remote-segment-gap")[0]["message"]


def test_mutation_segment_overlap(tmp_path):
    """Segment 2's start offset 100 -> 90: offsets 90..99 are in two remote segments."""
    r, log, pos = triage_metadata(tmp_path, healthy_events(b_start=90))
    assert codes_at(r, log) == [("remote-segment-overlap", pos[3])]
    assert "90..99" in findings(r, "remote-segment-overlap")[0]["message"]


def test_metadata_across_segment_files(tmp_path):
    """A segment's metadata record in one file and its update in the next: still one history."""
    d = tmp_path / "__remote_log_metadata-3"
    first, _ = metadata_log(healthy_events()[:5])
    write(d / "00000000000000000000.log", first)
    second = bld.v2_batch(5, [bld.Rec(None, update_record(3, FINISHED))]).data
    write(d / "00000000000000000005.log", second)
    r = triage(str(d))
    assert findings(r) == [] and r["verdict"] == "clean"


def test_cli_triage_exit_code_and_json(tmp_path):
    d = tmp_path / "__remote_log_metadata-0"
    data, pos = metadata_log(healthy_events(e_state=STARTED))
    write(d / "00000000000000000000.log", data)
    r = run("triage", "--json", d)
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    got = [(f["code"], f["offset"]) for o in report["files"] for f in o["findings"]]
    assert got == [("remote-copy-unfinished", pos[5])]
    seg = report["files"][0]["internal"]["segments"][E.kafka_uuid(seg_id(3))]
    assert (seg["state"], seg["recordOffset"], seg["recordPosition"]) == ("COPY_SEGMENT_STARTED", 5, pos[5])
    r = run("triage", d)
    assert r.returncode == 1 and "remote-copy-unfinished" in r.stdout


# --- remote segment files against the metadata ---------------------------------------------------------------

def files_and_metadata(tmp_path, events):
    """A metadata partition (``events``) and remote storage holding segment 2's files (offsets 100..104)."""
    md = tmp_path / "logdir" / "__remote_log_metadata-0"
    data, _ = metadata_log(events)
    write(md / "00000000000000000000.log", data)
    rd = tmp_path / "remote" / "orders-0"
    s = Seg([batch(100, 3), batch(103, 2)])
    log = write(rd / f"100-{E.kafka_uuid(seg_id(2))}.log", s.data)
    return triage([str(tmp_path / "logdir"), str(tmp_path / "remote")]), log


def two_segments(end=104, extra=()):
    return [metadata_record(1, 0, 99), update_record(1, FINISHED),
            metadata_record(2, 100, end), update_record(2, FINISHED), *extra]


def test_remote_file_agreeing_with_its_metadata_is_clean(tmp_path):
    r, log = files_and_metadata(tmp_path, two_segments())
    assert findings(r) == [] and file_of(r, log)["remoteSegmentId"] == E.kafka_uuid(seg_id(2))


def test_mutation_remote_file_offsets_disagree(tmp_path):
    """The metadata's endOffset 104 -> 105: the file (100..104) is not the segment it describes."""
    r, log = files_and_metadata(tmp_path, two_segments(end=105))
    [f] = findings(r)
    assert (f["code"], f["file"], f["offset"], f["severity"]) == ("remote-segment-mismatch", str(log), 0, "warning")
    assert "100..105" in f["message"] and "100..104" in f["message"]


def test_remote_file_of_a_deleted_segment(tmp_path):
    r, log = files_and_metadata(tmp_path, two_segments(extra=[update_record(2, DELETE_STARTED),
                                                               update_record(2, DELETE_FINISHED)]))
    [f] = findings(r)
    assert (f["code"], f["file"]) == ("remote-segment-mismatch", str(log)) and "DELETE_SEGMENT_FINISHED" in f["message"]


def test_remote_file_without_metadata_is_not_judged(tmp_path):
    r, log = files_and_metadata(tmp_path, two_segments()[:2])
    assert findings(r) == []
