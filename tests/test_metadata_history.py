"""``kafkadump metadata``: KRaft metadata history replayed from logs and snapshots.

Scenarios are built by ``metadata_builders`` (records from Kafka's JSON schemas by
``internal_encoder``, batches by kafka-python): a clean election (from the ISR),
a clean election from the ELR, an unclean one (a leader outside the ISR), one
that says RECOVERING, a topic deleted and re-created, brokers registered,
fenced, unfenced and unregistered; a snapshot plus the log after it.  Expected
values come from the scenario's own bookkeeping, never from kafkadump.
"""

from __future__ import annotations

import json
import os

import internal_encoder as E
import metadata_builders as M
import pytest
from cli_inprocess import run
from metadata_builders import T0, MetaLog, uuid_text

from kafkadump.decoders.batches import Options
from kafkadump.base.findings import Code
from kafkadump.reports.metadata import metadata_report
from kafkadump.base.status import Tally

MUTATION_CODES = {"unclean-election", "topic-recreated"}


@pytest.fixture(autouse=True, scope="module")
def _schemas():
    if not E.SCHEMAS.exists():
        pytest.skip(f"Kafka's JSON schemas not present at {E.SCHEMAS} (they live beside the project)")


def scenario() -> tuple[MetaLog, dict]:
    """The history; ``at`` names the offset of each record the tests look at."""
    log = MetaLog()
    at = {}
    log.rec("FeatureLevelRecord", 0, name="metadata.version", featureLevel=20)            # 0
    for bid in (1, 2, 3):
        at[f"register{bid}"] = M.broker(log, bid, 10 + bid)                                # 1, 2, 3
        at[f"unfence{bid}"] = M.unfence(log, bid, 10 + bid)                                # 4, 5, 6
    at["topic"] = M.topic(log, "orders", 1)                                                # 7
    at["p0"] = M.partition(log, 1, 0, [1, 2, 3], [1, 2, 3], 1)                            # 8
    at["p1"] = M.partition(log, 1, 1, [1, 2], [1], 1, elr=[2])                            # 9
    at["shrink"] = M.change(log, 1, 0, isr=[1, 2])                                        # 10
    at["fence1"] = log.rec("FenceBrokerRecord", 0, id=1, epoch=11)                         # 11
    at["clean"] = M.change(log, 1, 0, leader=2, isr=[2])                                  # 12
    at["elr"] = M.change(log, 1, 1, leader=2, isr=[2], eligibleLeaderReplicas=[])         # 13
    at["offline"] = M.change(log, 1, 0, leader=-1)                                        # 14
    at["unclean"] = M.change(log, 1, 0, leader=3, isr=[3])                                # 15
    at["recovering"] = M.change(log, 1, 1, leader=3, isr=[3], leaderRecoveryState=1)     # 16
    at["recovered"] = M.change(log, 1, 0, leaderRecoveryState=0)                          # 17
    at["shutdown"] = log.rec("BrokerRegistrationChangeRecord", 2, brokerId=2, brokerEpoch=12, inControlledShutdown=1)
    at["unregister"] = log.rec("UnregisterBrokerRecord", 0, brokerId=1, brokerEpoch=11)   # 19
    at["remove"] = log.rec("RemoveTopicRecord", 0, topicId=M.uuid(1))                     # 20
    at["recreate"] = M.topic(log, "orders", 2)                                            # 21
    at["p0new"] = M.partition(log, 2, 0, [2, 3], [2, 3], 3)                               # 22
    return log, at


def write_dir(tmp_path, log: MetaLog, name: str = "00000000000000000000.log") -> str:
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir(exist_ok=True)
    (d / name).write_bytes(bytes(log.data))
    return str(d)



def objects(*args: str) -> tuple[list[dict], int]:
    r = run(*args)
    assert "Traceback" not in r.stderr, r.stderr
    return [json.loads(x) for x in r.stdout.splitlines()], r.returncode


def by_offset(objs: list[dict], kind: str) -> dict[int, dict]:
    return {o["offset"]: o for o in objs if o["type"] == kind}


# --- the history -----------------------------------------------------------------------------------

def test_every_partition_change_with_every_field(tmp_path):
    log, at = scenario()
    d = write_dir(tmp_path, log)
    objs, code = objects("metadata", "--json", d)
    assert code == 1
    changes = by_offset(objs, "partition-change")
    assert sorted(changes) == sorted(at[k] for k in ("p0", "p1", "shrink", "clean", "elr", "offline", "unclean",
                                                     "recovering", "recovered", "p0new"))
    seg = os.path.join(d, "00000000000000000000.log")
    t1, t2 = uuid_text(1), uuid_text(2)

    def expect(key, full=False, **fields):
        off = at[key]
        base = {"type": "partition-change", "offset": off, "timestamp": log.timestamps[off], "topic": "orders",
                "topicId": t1, "snapshot": False, "file": seg, "position": log.positions[off],
                "record": "PartitionChangeRecord", "lastKnownElr": [], "findings": []}
        base.update(fields)
        got = changes[off]
        assert (got if full else {k: got[k] for k in base}) == base, key
        return got

    expect("p0", full=True, partition=0, leader=1, isr=[1, 2, 3], elr=[], replicas=[1, 2, 3], leaderEpoch=0,
           partitionEpoch=0, leaderRecoveryState="RECOVERED", unclean=False, uncleanReason=None, election=False,
           record="PartitionRecord", previousLeader=None, previousIsr=None, previousElr=None,
           previousLeaderEpoch=None)
    expect("p1", partition=1, leader=1, isr=[1], elr=[2], lastKnownElr=[], replicas=[1, 2], leaderEpoch=0,
           record="PartitionRecord", unclean=False, election=False)
    # an ISR shrink: no leader field, so no leader epoch bump; the partition epoch moves
    expect("shrink", partition=0, leader=1, isr=[1, 2], elr=[], replicas=[1, 2, 3], leaderEpoch=0,
           partitionEpoch=1, leaderRecoveryState="RECOVERED", unclean=False, election=False,
           previousLeader=1, previousIsr=[1, 2, 3], previousElr=[], previousLeaderEpoch=0)
    # clean: broker 2 was in the ISR [1, 2]
    expect("clean", partition=0, leader=2, isr=[2], leaderEpoch=1, partitionEpoch=2, unclean=False,
           uncleanReason=None, election=True, previousLeader=1, previousIsr=[1, 2], previousLeaderEpoch=0)
    # clean: broker 2 was not in the ISR [1] but in the ELR [2]
    expect("elr", partition=1, leader=2, isr=[2], elr=[], leaderEpoch=1, unclean=False, election=True,
           previousLeader=1, previousIsr=[1], previousElr=[2])
    expect("offline", partition=0, leader=-1, isr=[2], leaderEpoch=2, unclean=False, election=False,
           previousLeader=2)
    un = expect("unclean", full=True, partition=0, leader=3, isr=[3], elr=[], replicas=[1, 2, 3], leaderEpoch=3,
                partitionEpoch=4,
                leaderRecoveryState="RECOVERED", unclean=True, uncleanReason="leader-not-in-isr", election=True,
                previousLeader=-1, previousIsr=[2], previousElr=[], previousLeaderEpoch=2,
                findings=[changes[at["unclean"]]["findings"][0]])
    (f,) = un["findings"]
    assert (f["code"], f["severity"], f["offset"]) == ("unclean-election", "warning", log.positions[at["unclean"]])
    assert "leader 3" in f["message"] and "[2]" in f["message"]
    rec = expect("recovering", partition=1, leader=3, isr=[3], leaderEpoch=2, leaderRecoveryState="RECOVERING",
                 unclean=True, uncleanReason="leader-recovery-state", election=True, previousLeader=2,
                 findings=[changes[at["recovering"]]["findings"][0]])
    assert rec["findings"][0]["code"] == "unclean-election"
    assert rec["findings"][0]["offset"] == log.positions[at["recovering"]]
    # back to RECOVERED: no leader change, no election
    expect("recovered", partition=0, leader=3, leaderEpoch=3, leaderRecoveryState="RECOVERED", unclean=False,
           election=False)
    expect("p0new", topicId=t2, partition=0, leader=3, isr=[2, 3], replicas=[2, 3], record="PartitionRecord",
           unclean=False, election=False, previousLeader=None)


def test_topics_created_deleted_and_recreated(tmp_path):
    log, at = scenario()
    objs, _ = objects("metadata", "--json", write_dir(tmp_path, log))
    topics = by_offset(objs, "topic-change")
    seg = os.path.join(str(tmp_path / "__cluster_metadata-0"), "00000000000000000000.log")
    common = {"type": "topic-change", "topic": "orders", "snapshot": False, "file": seg}
    assert topics[at["topic"]] == {**common, "offset": at["topic"], "timestamp": log.timestamps[at["topic"]],
                                   "topicId": uuid_text(1), "change": "created", "previousTopicId": None,
                                   "previousDeletedAt": None, "position": log.positions[at["topic"]], "findings": []}
    assert topics[at["remove"]] == {**common, "offset": at["remove"], "timestamp": log.timestamps[at["remove"]],
                                    "topicId": uuid_text(1), "change": "deleted", "previousTopicId": None,
                                    "previousDeletedAt": None, "position": log.positions[at["remove"]],
                                    "findings": []}
    again = topics[at["recreate"]]
    (f,) = again.pop("findings")
    assert again == {**common, "offset": at["recreate"], "timestamp": log.timestamps[at["recreate"]],
                     "topicId": uuid_text(2), "change": "recreated", "previousTopicId": uuid_text(1),
                     "previousDeletedAt": at["remove"], "position": log.positions[at["recreate"]]}
    assert (f["code"], f["severity"], f["offset"]) == ("topic-recreated", "warning", log.positions[at["recreate"]])


def test_brokers_appear_only_with_brokers(tmp_path):
    log, at = scenario()
    d = write_dir(tmp_path, log)
    plain, _ = objects("metadata", "--json", d)
    assert not [o for o in plain if o["type"] == "broker-change"]
    objs, _ = objects("metadata", "--json", "--brokers", d)
    got = [(o["offset"], o["broker"], o["change"], o["brokerEpoch"], o["fenced"]) for o in objs
           if o["type"] == "broker-change"]
    assert got == [(at["register1"], 1, "registered", 11, True), (at["unfence1"], 1, "unfenced", 11, False),
                   (at["register2"], 2, "registered", 12, True), (at["unfence2"], 2, "unfenced", 12, False),
                   (at["register3"], 3, "registered", 13, True), (at["unfence3"], 3, "unfenced", 13, False),
                   (at["fence1"], 1, "fenced", 11, True), (at["shutdown"], 2, "controlled-shutdown", 12, False),
                   (at["unregister"], 1, "unregistered", 11, None)]
    reg = next(o for o in objs if o["type"] == "broker-change" and o["offset"] == at["register3"])
    assert reg == {"type": "broker-change", "offset": at["register3"], "timestamp": log.timestamps[at["register3"]],
                   "broker": 3, "change": "registered", "brokerEpoch": 13, "incarnationId": uuid_text(103),
                   "endpoints": ["PLAINTEXT://b3:9092"], "rack": "r3", "fenced": True, "inControlledShutdown": False,
                   "snapshot": False, "file": os.path.join(d, "00000000000000000000.log"),
                   "position": log.positions[at["register3"]]}
    shut = next(o for o in objs if o["type"] == "broker-change" and o["change"] == "controlled-shutdown")
    assert shut["inControlledShutdown"] is True


def test_summary_counts_what_it_found(tmp_path):
    log, at = scenario()
    d = write_dir(tmp_path, log)
    objs, _ = objects("metadata", "--json", d)
    s = objs[-1]
    assert s == {"type": "metadata-summary", "path": d, "snapshot": None, "snapshotOffset": None,
                 "logFiles": [os.path.join(d, "00000000000000000000.log")], "records": log.next_offset,
                 "firstOffset": 0, "lastOffset": log.next_offset - 1, "historyFrom": 0, "partitionChanges": 10,
                 "elections": 4, "uncleanElections": 2, "topicsCreated": 2, "topicsDeleted": 1, "topicsRecreated": 1,
                 "brokerChanges": 9, "topics": 1, "partitions": 1, "brokers": 2, "untracked": 0, "at": None,
                 "uncleanAt": [f"orders-0@{at['unclean']}", f"orders-1@{at['recovering']}"],
                 "recreatedTopics": ["orders"], "problems": 3}


def test_state_at_an_offset_and_a_time(tmp_path):
    log, at = scenario()
    d = write_dir(tmp_path, log)
    objs, code = objects("metadata", "--json", "--at", str(at["clean"]), d)
    assert code == 0   # nothing unclean up to there
    assert [o["type"] for o in objs] == ["cluster-state", "metadata-summary"]
    st = objs[0]
    assert st == {
        "type": "cluster-state", "offset": at["clean"], "timestamp": log.timestamps[at["clean"]],
        "topics": [{"topic": "orders", "topicId": uuid_text(1), "partitions": [
            {"partition": 0, "leader": 2, "isr": [2], "elr": [], "replicas": [1, 2, 3], "leaderEpoch": 1,
             "partitionEpoch": 2, "leaderRecoveryState": "RECOVERED", "lastKnownElr": []},
            {"partition": 1, "leader": 1, "isr": [1], "elr": [2], "replicas": [1, 2], "leaderEpoch": 0,
             "partitionEpoch": 0, "leaderRecoveryState": "RECOVERED", "lastKnownElr": []}]}],
        "brokers": [{"broker": b, "brokerEpoch": 10 + b, "incarnationId": uuid_text(100 + b),
                     "endpoints": [f"PLAINTEXT://b{b}:9092"], "rack": f"r{b}", "fenced": b == 1,
                     "inControlledShutdown": False, "registeredAt": at[f"register{b}"]} for b in (1, 2, 3)],
        "features": {"metadata.version": 20}, "metadataVersion": "3.8-IV0", "configs": [],
        "controllers": []}
    assert objs[1]["at"] == {"offset": at["clean"]} and objs[1]["lastOffset"] == at["clean"]
    # the same point by time: the record's timestamp (ISO-8601), then one millisecond before the next record
    iso = "2023-11-14T22:13:32Z"   # T0 + 12 s
    assert T0 + 1000 * at["clean"] == 1_700_000_012_000
    by_time, _ = objects("metadata", "--json", "--at", iso, d)
    assert by_time[0] == st
    by_ms, _ = objects("metadata", "--json", "--at", str(log.timestamps[at["elr"]] - 1), d)
    assert by_ms[0] == st


def test_table_says_it_in_lines(tmp_path):
    log, at = scenario()
    r = run("metadata", write_dir(tmp_path, log))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    lines = r.stdout.splitlines()
    unclean = [x for x in lines if "UNCLEAN ELECTION" in x]
    assert len(unclean) == 2
    assert unclean[0].split()[:3] == [str(at["unclean"]), "2023-11-14T22:13:35.000Z", "orders-0"]
    assert "leader 3 (was -1) epoch 3" in unclean[0] and "not in the previous ISR [2]" in unclean[0]
    assert "RECOVERING" in unclean[1]
    assert any("topic orders RECREATED" in x and uuid_text(1) in x for x in lines)
    assert lines[-1].startswith(f"replayed {log.next_offset} records, log offsets 0..{log.next_offset - 1}")
    assert "2 unclean (orders-0@15, orders-1@16)" in lines[-1] and "1 re-created (orders)" in lines[-1]


# --- a snapshot, then the log after it ----------------------------------------------------------------

def snapshot_and_log(tmp_path) -> tuple[str, MetaLog, MetaLog, int]:
    """A snapshot of the state before offset 12 and the log from offset 0 (what precedes 12 is skipped)."""
    full, at = scenario()
    snap = MetaLog(leader_epoch=1)
    snap.control(M.SNAPSHOT_HEADER, "SnapshotHeaderRecord", version=0, lastContainedLogTimestamp=T0 + 11_000)
    M.broker(snap, 2, 12)
    M.unfence(snap, 2, 12)
    M.topic(snap, "orders", 1)
    M.partition(snap, 1, 0, [1, 2, 3], [1, 2], 1, epoch=4)   # what the log's state is before 12, epoch 4
    snap.control(M.SNAPSHOT_FOOTER, "SnapshotFooterRecord", version=0)
    d = write_dir(tmp_path, full)
    end = at["clean"]
    name = f"{end:020d}-{1:010d}.checkpoint"
    (tmp_path / "__cluster_metadata-0" / name).write_bytes(bytes(snap.data))
    # an older snapshot, ignored
    (tmp_path / "__cluster_metadata-0" / f"{5:020d}-{1:010d}.checkpoint").write_bytes(bytes(snap.data))
    return d, full, snap, end


def test_snapshot_then_log(tmp_path):
    d, full, snap, end = snapshot_and_log(tmp_path)
    objs, code = objects("metadata", "--json", d)
    assert code == 1
    changes = [o for o in objs if o["type"] == "partition-change"]
    first = changes[0]
    name = os.path.join(d, f"{end:020d}-{1:010d}.checkpoint")
    assert {k: first[k] for k in ("offset", "snapshot", "file", "position", "leader", "isr", "leaderEpoch",
                                  "record", "election", "unclean")} == {
        "offset": end - 1, "snapshot": True, "file": name, "position": snap.positions[4], "leader": 1,
        "isr": [1, 2], "leaderEpoch": 4, "record": "PartitionRecord", "election": False, "unclean": False}
    # the log's records before the snapshot's offset are not replayed again: p0 is not created twice
    assert [o["offset"] for o in changes[1:]][:2] == [end, end + 1]
    clean = changes[1]
    assert (clean["leader"], clean["previousLeader"], clean["previousIsr"], clean["leaderEpoch"],
            clean["unclean"]) == (2, 1, [1, 2], 5, False)
    s = objs[-1]
    assert (s["snapshot"], s["snapshotOffset"], s["firstOffset"], s["lastOffset"], s["historyFrom"]) == (
        name, end, end, full.next_offset - 1, 0)
    # orders-1 never was in the snapshot: its first change is not judged (state before unknown) ...
    elr = next(o for o in changes if o["partition"] == 1 and o["offset"] == end + 1)
    assert elr["previousIsr"] is None and elr["unclean"] is False
    # ... and RECOVERING is still unclean whatever came before
    assert s["uncleanAt"] == ["orders-0@15", "orders-1@16"]


def test_at_before_the_newest_snapshot_uses_an_older_one_or_the_log(tmp_path):
    d, full, snap, end = snapshot_and_log(tmp_path)
    objs, _ = objects("metadata", "--json", "--at", "8", d)
    s = objs[-1]
    assert s["snapshot"] == os.path.join(d, f"{5:020d}-{1:010d}.checkpoint") and s["snapshotOffset"] == 5
    assert s["firstOffset"] == 5 and s["lastOffset"] == 8
    objs, _ = objects("metadata", "--json", "--at", "3", d)
    assert objs[-1]["snapshot"] is None and objs[-1]["lastOffset"] == 3


def test_snapshot_alone(tmp_path):
    d, full, snap, end = snapshot_and_log(tmp_path)
    objs, code = objects("metadata", "--json", os.path.join(d, f"{end:020d}-{1:010d}.checkpoint"))
    assert code == 0
    s = objs[-1]
    assert (s["records"], s["firstOffset"], s["lastOffset"], s["partitions"], s["topics"]) == (6, None, end - 1, 1, 1)


# --- inputs and damage -----------------------------------------------------------------------------------

def test_damage_is_a_finding_and_the_replay_goes_on(tmp_path):
    log, at = scenario()
    data = bytearray(log.data)
    data[log.positions[at["p1"]] + 3] ^= 0xFF        # inside the record: the batch CRC fails
    d = write_dir(tmp_path, MetaLog(data=data, next_offset=log.next_offset))
    objs, code = objects("metadata", "--json", d)
    assert code == 1
    problems = [o for o in objs if o["type"] == "findings"]
    assert problems and problems[0]["findings"][0]["code"] == "crc-mismatch"
    assert objs[-1]["partitionChanges"] >= 9


@pytest.mark.parametrize("args", [["metadata"], ["metadata", "--at", "yesterday"]])
def test_usage_and_input_errors_are_exit_2(tmp_path, args):
    r = run(*args, str(tmp_path / "nope"))
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stdout == ""
    (tmp_path / "empty").mkdir()
    r = run("metadata", str(tmp_path / "empty"))
    assert r.returncode == 2 and "no KRaft snapshot" in r.stderr


def test_library_counts_problems_in_the_tally(tmp_path):
    log, _ = scenario()
    tally = Tally()
    items = list(metadata_report(write_dir(tmp_path, log), Options(), tally))
    assert tally.problems == 3 and tally.exit_status == 1
    codes = [f.code for i in items for f in getattr(i, "findings", [])]
    assert codes.count(Code.UNCLEAN_ELECTION) == 2 and codes.count(Code.TOPIC_RECREATED) == 1


# --- triage reports what the replay finds ------------------------------------------------------------------

def test_triage_reports_unclean_elections_and_recreated_topics(tmp_path):
    log, at = scenario()
    d = write_dir(tmp_path, log)
    r = run("triage", "--json", str(tmp_path))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    report = json.loads(r.stdout)
    (p,) = report["partitions"]
    assert (p["topic"], p["uncleanElections"], p["topicsRecreated"], p["verdict"]) == (
        "__cluster_metadata", 2, 1, "warnings")
    assert p["findingCounts"] == {"topic-recreated": 1, "unclean-election": 2}
    assert (report["totals"]["uncleanElections"], report["totals"]["topicsRecreated"]) == (2, 1)
    seg = next(f for f in report["files"] if f["file"].endswith(".log"))
    assert seg["file"] == os.path.join(d, "00000000000000000000.log")
    assert sorted((f["code"], f["offset"]) for f in seg["findings"] if f["severity"] == "warning") == sorted([
        ("unclean-election", log.positions[at["unclean"]]), ("unclean-election", log.positions[at["recovering"]]),
        ("topic-recreated", log.positions[at["recreate"]])])
    table = run("triage", str(tmp_path))
    assert table.stdout.splitlines()[-1].endswith("unclean elections: 2  re-created topics: 1")


def test_triage_of_a_clean_history_and_of_other_partitions(tmp_path):
    log = MetaLog()
    M.topic(log, "orders", 1)
    M.partition(log, 1, 0, [1, 2], [1, 2], 1)
    M.change(log, 1, 0, leader=2)
    write_dir(tmp_path, log)
    report = json.loads(run("triage", "--json", str(tmp_path)).stdout)
    (p,) = report["partitions"]
    assert (p["uncleanElections"], p["topicsRecreated"], p["verdict"]) == (0, 0, "clean")
    assert report["totals"]["uncleanElections"] == 0


# --- the real corpus: KRaft metadata logs written by real brokers ---------------------------------------------

# (directory, records, firstOffset, lastOffset, snapshotOffset, historyFrom, partitionChanges, topicsCreated,
#  partitions, brokers).  partitionChanges is the count of PartitionRecord (apiKey 3) and PartitionChangeRecord
# (apiKey 5) in the files replayed, as the corpus MANIFEST's own analyser counts them; every cluster here has one
# broker, so no election can be unclean.
REAL = [
    ("ArthurArutunyan04+Backend_labs/kafka-data", 7320, 0, 7319, None, 0, 60 + 380 + 420, 3, 60, 1),
    ("ArthurArutunyan04+Backend_labs/_history/d8748dd/kafka-data", 1943, 5151, 7093, None, 5151, 300, 0, 60, 1),
    ("PhilippDuck+rotorwind/kafka/data", 27643, 0, 27642, None, 0, 51 + 3060, 2, 51, 1),
    ("marioBarbozaA+AIBulb/kafka-data", 60 + 11372 - 7259, 7259, 11371, 7259, 0, 51, 2, 51, 1),
    ("ItumelengMogase+Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data", 171, None, 60499, 60500, 0, 139,
     9, 139, 1),
    ("MashaKosher+Internship/kafka/data", 1217, 498211, 499427, None, 498211, 66, 0, 66, 1),
    ("Jeong-Rae+KafkaDemo/kraft-combined-logs", 3072, 0, 3071, None, 0, 0, 0, 0, 1),
]


@pytest.mark.parametrize("where,records,first,last,snap,history,changes,created,partitions,brokers", REAL,
                         ids=[r[0].split("+")[0] + ("-old" if "_history" in r[0] else "") for r in REAL])
def test_real_metadata_logs(where, records, first, last, snap, history, changes, created, partitions, brokers):
    from conftest import need_corpus

    d = need_corpus(f"real/segments/{where}/__cluster_metadata-0")
    objs, code = objects("metadata", "--json", str(d))
    assert code == 0
    s = objs[-1]
    assert {k: s[k] for k in ("records", "firstOffset", "lastOffset", "snapshotOffset", "historyFrom",
                              "partitionChanges", "uncleanElections", "topicsCreated", "topicsRecreated",
                              "partitions", "brokers", "problems")} == {
        "records": records, "firstOffset": first, "lastOffset": last, "snapshotOffset": snap, "historyFrom": history,
        "partitionChanges": changes, "uncleanElections": 0, "topicsCreated": created, "topicsRecreated": 0,
        "partitions": partitions, "brokers": brokers, "problems": 0}
    assert len([o for o in objs if o["type"] == "partition-change"]) == changes


def test_real_state_at_an_offset_and_broker_timeline():
    from conftest import need_corpus

    d = str(need_corpus("real/segments/ArthurArutunyan04+Backend_labs/kafka-data/__cluster_metadata-0"))
    # offset 243: PartitionChangeRecord {partitionId 0, topicId 0CM0rYlfQiqSTCH-x54Zhw, leader -1} (broker 1 fenced)
    def leader_at(offset):
        st = objects("metadata", "--json", "--at", str(offset), d)[0][0]
        t = next(t for t in st["topics"] if t["topicId"] == "0CM0rYlfQiqSTCH-x54Zhw")
        return t["partitions"][0]["leader"], t["partitions"][0]["isr"], st["offset"]

    assert leader_at(242) == (1, [1], 242)
    assert leader_at(243) == (-1, [1], 243)
    jr = str(need_corpus("real/segments/Jeong-Rae+KafkaDemo/kraft-combined-logs/__cluster_metadata-0"))
    objs, _ = objects("metadata", "--json", "--brokers", jr)
    got = [(o["offset"], o["broker"], o["change"], o["brokerEpoch"]) for o in objs if o["type"] == "broker-change"]
    # RegisterBrokerRecord at 6 (epoch 6, fenced), BrokerRegistrationChangeRecord fenced -1 at 8 and 1 at 297,
    # a new registration (epoch 300) at 300
    assert got[:4] == [(6, 1, "registered", 6), (8, 1, "unfenced", 6), (297, 1, "fenced", 6),
                       (300, 1, "registered", 300)]


def test_real_triage_of_a_metadata_dir_finds_no_unclean_election():
    from conftest import need_corpus

    d = need_corpus("real/segments/ArthurArutunyan04+Backend_labs/kafka-data/__cluster_metadata-0")
    report = json.loads(run("triage", "--json", str(d)).stdout)
    (p,) = report["partitions"]
    assert (p["uncleanElections"], p["topicsRecreated"]) == (0, 0)


# --- robustness ------------------------------------------------------------------------------------------------

def test_a_log_starting_mid_history_does_not_judge_what_it_cannot_know(tmp_path):
    log = MetaLog(next_offset=500)
    M.change(log, 1, 0, leader=1)               # first sight of orders-0: ISR and ELR unknown
    M.change(log, 1, 0, leader=2)               # not judged: was 2 in the ISR?  nobody knows
    M.change(log, 1, 0, isr=[2])                # the ISR becomes known, the ELR still not
    M.change(log, 1, 0, leader=3)
    M.change(log, 1, 0, leader=1, leaderRecoveryState=1)    # the record itself says RECOVERING
    d = write_dir(tmp_path, log, "00000000000000000500.log")
    objs, code = objects("metadata", "--json", d)
    changes = [o for o in objs if o["type"] == "partition-change"]
    assert [(o["previousIsr"], o["elr"], o["unclean"]) for o in changes] == [
        (None, None, False), (None, None, False), (None, None, False), ([2], None, False), ([2], None, True)]
    assert objs[-1]["historyFrom"] == 500 and code == 1
    line = run("metadata", d).stdout.splitlines()[1]
    assert "leader 2 (was 1) epoch ?  isr ?  elr ?" in line


def test_names_from_the_input_are_escaped_on_a_terminal(tmp_path):
    log = MetaLog()
    M.topic(log, "evil\x1b[2J\u202e", 1)
    M.partition(log, 1, 0, [1], [1], 1)
    r = run("metadata", write_dir(tmp_path, log))
    assert "\x1b" not in r.stdout and "\u202e" not in r.stdout
    assert "evil\\x1b[2J\\u202e" in r.stdout


def test_damaged_metadata_never_raises(tmp_path):
    import random

    log, _ = scenario()
    rnd = random.Random(16)
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    seg = d / "00000000000000000000.log"
    for _ in range(40):
        data = bytearray(log.data)
        for _ in range(rnd.randint(1, 8)):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
        cut = rnd.choice([len(data), rnd.randrange(len(data))])
        seg.write_bytes(bytes(data[:cut]))
        tally = Tally()
        items = list(metadata_report(str(d), Options(), tally))
        assert items[-1].counts.records <= log.next_offset
        list(metadata_report(str(d), Options(), Tally(), at="5", brokers=True))


def test_topic_filter_keeps_one_topics_changes(tmp_path):
    log, at = scenario()
    M.topic(log, "payments", 3)
    M.partition(log, 3, 0, [1], [1], 1)
    d = write_dir(tmp_path, log)
    objs, _ = objects("metadata", "--json", "--topic", "payments", d)
    assert [(o["type"], o["topic"]) for o in objs[:-1]] == [("topic-change", "payments"),
                                                             ("partition-change", "payments")]
    assert objs[-1]["partitionChanges"] == 11   # the summary counts everything
    by_id, _ = objects("metadata", "--json", "--topic", uuid_text(1), d)
    assert {o["topicId"] for o in by_id[:-1]} == {uuid_text(1)}
    assert len([o for o in by_id if o["type"] == "partition-change"]) == 9


def test_at_a_time_picks_the_snapshot_by_its_header_time(tmp_path):
    d, full, snap, end = snapshot_and_log(tmp_path)
    # both snapshots say lastContainedLogTimestamp T0 + 11 s: at T0 + 13 s the newest is used ...
    objs, _ = objects("metadata", "--json", "--at", str(T0 + 13_000), d)
    s = objs[-1]
    assert (s["snapshotOffset"], s["firstOffset"], s["lastOffset"], s["at"]) == (end, end, 13, {"time": T0 + 13_000})
    # ... at T0 + 5 s neither: the log alone, up to offset 5
    objs, _ = objects("metadata", "--json", "--at", str(T0 + 5_000), d)
    assert (objs[-1]["snapshot"], objs[-1]["lastOffset"]) == (None, 5)


def test_a_log_dir_and_a_bootstrap_checkpoint():
    from conftest import need_corpus

    logdir = need_corpus("real/segments/ArthurArutunyan04+Backend_labs/kafka-data")
    objs, code = objects("metadata", "--json", str(logdir))
    assert code == 0 and objs[-1]["logFiles"][0].endswith("__cluster_metadata-0/00000000000000000000.log")
    # bootstrap.checkpoint: SNAPSHOT_HEADER, three FeatureLevelRecords, SNAPSHOT_FOOTER (the MANIFEST's apiKey 12: 3)
    objs, code = objects("metadata", "--json", "--at", "100", str(logdir / "bootstrap.checkpoint"))
    assert code == 0 and objs[-1]["records"] == 5 and objs[-1]["snapshotOffset"] is None
    assert len(objs[0]["features"]) == 3 and "metadata.version" in objs[0]["features"]
    line = run("metadata", str(logdir / "bootstrap.checkpoint")).stdout.splitlines()[-1]
    assert "bootstrap.checkpoint): 0 partition changes" in line


def test_state_is_bounded(tmp_path, monkeypatch):
    from kafkadump.decoders.internal_topics import metadata_replay as R

    monkeypatch.setattr(R, "MAX_PARTITIONS", 3)
    monkeypatch.setattr(R, "MAX_BROKERS", 1)
    log = MetaLog()
    for t in range(1, 6):
        M.topic(log, f"t{t}", t)
    for p in range(5):
        M.partition(log, 1, p, [1], [1], 1)
    M.broker(log, 1, 1)
    M.broker(log, 2, 2)
    tally = Tally()
    s = list(metadata_report(write_dir(tmp_path, log), Options(), tally, brokers=True))[-1]
    # 2 topics, 2 partitions and 1 broker beyond the caps are counted, not followed
    assert (s.topics, s.partitions, s.brokers, s.counts.untracked) == (3, 3, 1, 5)


def test_state_and_broker_lines(tmp_path):
    log, at = scenario()
    d = write_dir(tmp_path, log)
    lines = run("metadata", "--at", str(at["clean"]), d).stdout.splitlines()
    assert lines[:8] == [
        "cluster state at offset 12 (2023-11-14T22:13:32.000Z)",
        f"  topic orders  id {uuid_text(1)}  2 partitions",
        "    orders-0  leader 2 epoch 1  isr [2]  elr []  replicas [1,2,3]",
        "    orders-1  leader 1 epoch 0  isr [1]  elr [2]  replicas [1,2]",
        "  broker 1  epoch 11  fenced  PLAINTEXT://b1:9092",
        "  broker 2  epoch 12  unfenced  PLAINTEXT://b2:9092",
        "  broker 3  epoch 13  unfenced  PLAINTEXT://b3:9092",
        "  features: metadata.version=20 (3.8-IV0)"]
    timeline = run("metadata", "--brokers", d).stdout.splitlines()
    assert timeline[0].split() == ["1", "2023-11-14T22:13:21.000Z", "broker", "1", "registered", "epoch", "11",
                                   "PLAINTEXT://b1:9092", "rack", "r1"]
    assert timeline[at["unregister"] - 1].split()[2:5] == ["broker", "1", "unregistered"]


def test_records_of_a_compressed_batch_anchor_at_its_payload(tmp_path):
    import struct

    from kafka.record.default_records import DefaultRecordBatchBuilder

    log = MetaLog()
    M.topic(log, "orders", 1)
    M.partition(log, 1, 0, [1, 2], [1], 1)
    at_batch = len(log.data)
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=1, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    first = M.record("PartitionChangeRecord", 2, partitionId=0, topicId=M.uuid(1), leader=2, isr=[2])
    bld.append(0, timestamp=T0 + 2000, key=None, value=first, headers=[])
    bld.append(1, timestamp=T0 + 3000, key=None, value=M.record("PartitionChangeRecord", 2, partitionId=0,
                                                                 topicId=M.uuid(1), isr=[1, 2]), headers=[])
    buf = bytearray(bld.build())
    struct.pack_into(">q", buf, 0, 2)
    log.data += buf
    objs, code = objects("metadata", "--json", write_dir(tmp_path, log))
    unclean = [o for o in objs if o["type"] == "partition-change" and o["unclean"]]
    assert code == 1 and [o["offset"] for o in unclean] == [2]
    (f,) = unclean[0]["findings"]
    # the gzip payload starts 61 bytes into the batch; the first record at 0 of the decompressed bytes
    assert (f["offset"], f["decompressedOffset"], unclean[0]["position"]) == (at_batch + 61, 0, at_batch + 61)
    assert [o["isr"] for o in objs if o["type"] == "partition-change"] == [[1], [2], [1, 2]]


def test_a_log_starting_after_the_snapshot_leaves_a_hole_in_the_history(tmp_path):
    d, full, snap, end = snapshot_and_log(tmp_path)
    os.remove(os.path.join(d, "00000000000000000000.log"))
    later = MetaLog(next_offset=end + 3)
    M.change(later, 1, 0, isr=[1])
    with open(os.path.join(d, f"{end + 3:020d}.log"), "wb") as f:
        f.write(bytes(later.data))
    objs, _ = objects("metadata", "--json", d)
    assert (objs[-1]["snapshotOffset"], objs[-1]["firstOffset"], objs[-1]["historyFrom"]) == (end, end + 3, end + 3)


def test_state_of_one_topic(tmp_path):
    log, at = scenario()
    M.topic(log, "payments", 3)
    M.partition(log, 3, 0, [1], [1], 1)
    objs, _ = objects("metadata", "--json", "--at", str(log.next_offset - 1), "--topic", "payments",
                      write_dir(tmp_path, log))
    st = objs[0]
    assert [t["topic"] for t in st["topics"]] == ["payments"] and len(st["topics"][0]["partitions"]) == 1
    assert [b["broker"] for b in st["brokers"]] == [2, 3] and objs[-1]["topics"] == 2


def test_metadata_version_named_as_kafka_names_it():
    """The release name Kafka's metadata shell prints for the level (``Optional[4.1-IV1]`` for 27);
    none for a level past Kafka 4.1, whose name is not fixed yet (the broker tests check the table
    against Kafka's storage tool)."""
    from kafkadump.decoders.internal_topics.metadata_replay import ClusterState
    from kafkadump.render.metadata_views import state_lines
    from kafkadump.objects.metadata_objects import cluster_state_object

    def state(features):
        return cluster_state_object(ClusterState(5, T0, {}, {}, {}, features))

    assert state({"metadata.version": 27})["metadataVersion"] == "4.1-IV1"
    assert state({"metadata.version": 7, "group.version": 1})["metadataVersion"] == "3.3-IV3"
    assert state({"metadata.version": 28})["metadataVersion"] is None
    assert state({})["metadataVersion"] is None
    assert state_lines(state({"group.version": 1, "metadata.version": 27}))[-1] == \
        "  features: group.version=1, metadata.version=27 (4.1-IV1)"
    assert state_lines(state({"metadata.version": 28}))[-1] == "  features: metadata.version=28"


def test_configs_in_the_state(tmp_path):
    """ConfigRecords as Kafka's metadata image holds them (its shell's /image/configs): set, changed,
    removed by a null value, a topic's gone with the topic; secrets masked; --topic keeps the others'."""
    log = MetaLog()
    log.rec("FeatureLevelRecord", 0, name="metadata.version", featureLevel=27)
    M.topic(log, "orders", 1)
    M.topic(log, "audit", 2)
    M.topic(log, "gone", 3)

    def config(rtype: int, rname: str, name: str, value: str | None) -> int:
        return log.rec("ConfigRecord", 0, resourceType=rtype, resourceName=rname, name=name, value=value)

    config(2, "orders", "unclean.leader.election.enable", "false")
    config(2, "orders", "min.insync.replicas", "2")
    config(2, "orders", "unclean.leader.election.enable", "true")
    config(2, "audit", "retention.ms", "1000")
    config(2, "audit", "retention.ms", None)                 # the only config removed: the resource too
    config(2, "gone", "cleanup.policy", "compact")
    config(4, "", "log.retention.hours", "12")              # the cluster's default broker config
    config(4, "1", "listener.name.x.plain.sasl.jaas.config", "secret text")
    log.rec("RemoveTopicRecord", 0, topicId=M.uuid(3))
    d = write_dir(tmp_path, log)
    objs, _ = objects("metadata", "--json", "--at", "10000", d)
    assert objs[0]["configs"] == [
        {"resourceType": "BROKER", "resourceName": "", "configs": {"log.retention.hours": "12"}},
        {"resourceType": "BROKER", "resourceName": "1", "configs": {"listener.name.x.plain.sasl.jaas.config":
                                                                    objs[0]["configs"][1]["configs"][
                                                                        "listener.name.x.plain.sasl.jaas.config"]}},
        {"resourceType": "TOPIC", "resourceName": "orders",
         "configs": {"min.insync.replicas": "2", "unclean.leader.election.enable": "true"}}]
    assert "secret text" not in json.dumps(objs)
    only, _ = objects("metadata", "--json", "--at", "10000", "--topic", "audit", d)
    assert [(c["resourceType"], c["resourceName"]) for c in only[0]["configs"]] == [("BROKER", ""), ("BROKER", "1")]
    lines = run("metadata", "--at", "10000", d).stdout.splitlines()
    assert "  config TOPIC orders  min.insync.replicas=2  unclean.leader.election.enable=true" in lines
    assert "  config BROKER (default)  log.retention.hours=12" in lines


def test_controllers_in_the_state(tmp_path):
    """RegisterControllerRecord and UnregisterControllerRecord (Kafka 4.1): the shell's
    /image/cluster/controllers."""
    log = MetaLog()
    at = {}
    for cid in (1, 2):
        at[cid] = log.rec("RegisterControllerRecord", 0, controllerId=cid, incarnationId=M.uuid(40 + cid),
                          endPoints=[{"name": "CONTROLLER", "host": f"c{cid}", "port": 9093, "securityProtocol": 0}])
    at["again"] = log.rec("RegisterControllerRecord", 0, controllerId=1, incarnationId=M.uuid(43),
                          endPoints=[{"name": "CONTROLLER", "host": "c1b", "port": 9094, "securityProtocol": 0}])
    # UnregisterControllerRecord (api key 29, version 0, flexible): ControllerId, no tagged fields;
    # newer than the schema files the test encoder reads
    log.add(E.uvarint(1) + E.uvarint(29) + E.uvarint(0) + (2).to_bytes(4, "big") + b"\x00")
    d = write_dir(tmp_path, log)
    objs, _ = objects("metadata", "--json", "--at", "100", d)
    assert objs[0]["controllers"] == [{"controller": 1, "incarnationId": uuid_text(43),
                                       "endpoints": ["CONTROLLER://c1b:9094"], "registeredAt": at["again"]}]
    before, _ = objects("metadata", "--json", "--at", str(at[2]), d)
    assert [c["controller"] for c in before[0]["controllers"]] == [1, 2]
    assert "  controller 1  CONTROLLER://c1b:9094" in run("metadata", "--at", "100", d).stdout.splitlines()


def test_last_known_elr_in_the_state(tmp_path):
    """The last ISR member fenced with eligible leader replicas on (Kafka 4.1's default): leader -1,
    ISR [], ELR and lastKnownElr [1], as the shell's PartitionRegistration shows them."""
    log = MetaLog()
    M.topic(log, "orders", 1)
    M.partition(log, 1, 0, [1, 2], [1], 1, elr=[])
    offline = M.change(log, 1, 0, leader=-1, isr=[], eligibleLeaderReplicas=[1], lastKnownElr=[1])
    d = write_dir(tmp_path, log)
    objs, _ = objects("metadata", "--json", "--at", str(offline), d)
    (p,) = objs[0]["topics"][0]["partitions"]
    assert (p["leader"], p["isr"], p["elr"], p["lastKnownElr"], p["leaderEpoch"]) == (-1, [], [1], [1], 1)


def test_a_partition_record_without_its_recovery_state_is_recovered(tmp_path):
    """Kafka writes a PartitionRecord's leaderRecoveryState (a tagged field) only when it is not its
    default, RECOVERED: absent, the partition is RECOVERED (as Kafka's metadata shell shows it)."""
    log = MetaLog()
    M.topic(log, "orders", 1)
    created = log.rec("PartitionRecord", 2, partitionId=0, topicId=M.uuid(1), replicas=[1, 2], isr=[1, 2],
                      removingReplicas=[], addingReplicas=[], leader=1, leaderEpoch=0, partitionEpoch=0)
    moved = M.change(log, 1, 0, leader=2, isr=[2])
    d = write_dir(tmp_path, log)
    history, _ = objects("metadata", "--json", d)
    assert [(o["offset"], o["leaderRecoveryState"], o["unclean"]) for o in history
            if o["type"] == "partition-change"] == [(created, "RECOVERED", False), (moved, "RECOVERED", False)]
    state, _ = objects("metadata", "--json", "--at", str(created), d)
    assert state[0]["topics"][0]["partitions"][0]["leaderRecoveryState"] == "RECOVERED"
