"""Three brokers, leader changes and one unclean election caused on a real Kafka
(tests/broker/replica_scenario.py); kafkadump's offline answers against what Kafka itself said:

* ``diff`` of the killed leader's copy and the new leader's against the truncation the broker
  logged and the ``leader-epoch-checkpoint`` files;
* ``metadata`` history against the elections the test caused (leader, ISR, leader epoch, which one
  was unclean);
* ``metadata --at`` against Kafka's metadata shell on the same log (at the end, and cut right after
  the unclean election);
* ``records`` on the surviving leader's copy against every acknowledgement the producer had.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from broker.readback import as_bytes, kafkadump

from kafkadump.decoders.internal_topics.constants import METADATA_VERSIONS

pytestmark = pytest.mark.broker


def json_lines(*args: str, codes: tuple[int, ...] = (0, 1)) -> list[dict]:
    done = kafkadump(*args, "--json")
    assert done.returncode in codes, (done.returncode, done.stderr)
    return [json.loads(line) for line in done.stdout.splitlines()]


def of_type(objs: list[dict], kind: str) -> list[dict]:
    return [o for o in objs if o["type"] == kind]


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    from broker.harness import missing_tools

    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    from broker.replica_scenario import build

    return build(tmp_path_factory.mktemp("replicas"), elr=os.environ.get("KAFKADUMP_REPLICA_ELR", "1") != "0")


def elr_of(scenario) -> bool:
    from broker.replica_scenario import elr_on

    return elr_on(scenario.cluster)


@pytest.fixture(scope="module")
def checkpoints(scenario):
    from broker.replica_scenario import read_epoch_checkpoint

    return {name: read_epoch_checkpoint(scenario.copies[name] / "leader-epoch-checkpoint")
            for name in ("lost", "node1", "node2")}


@pytest.fixture(scope="module")
def truncation(scenario, checkpoints):
    """The one offset node 1's broker logged truncating ``ledger-0`` to."""
    from broker.replica_scenario import truncated_to

    offsets = set(truncated_to(scenario.truncation_lines))
    assert len(offsets) == 1, scenario.truncation_lines
    return offsets.pop()


def acked_offsets(scenario, phase: str) -> list[int]:
    return sorted(a.offset for a in scenario.acked if a.phase == phase)


# ---- the oracle agrees with itself ---------------------------------------------------------------


def test_the_broker_truncated_where_the_new_leader_epoch_starts(scenario, checkpoints, truncation):
    from broker.replica_scenario import FOURTH, LOST

    new_epoch, new_start = checkpoints["node2"][-1]
    assert truncation == new_start == acked_offsets(scenario, "lost")[0] == acked_offsets(scenario, "fourth")[0]
    assert checkpoints["node1"] == checkpoints["node2"]            # the follower took the leader's epochs
    assert checkpoints["lost"] == checkpoints["node2"][:-1]        # the lost side never saw the last epoch
    assert len(acked_offsets(scenario, "lost")) == LOST and len(acked_offsets(scenario, "fourth")) == FOURTH
    # +2: the controller took the leader offline first, an epoch in which no records were written
    assert new_epoch == checkpoints["lost"][-1][0] + 2


def test_dump_reads_the_checkpoints_as_kafka_wrote_them(scenario, checkpoints):
    names = ("lost", "node1", "node2")
    objs = json_lines("dump", *[str(scenario.copies[n] / "leader-epoch-checkpoint") for n in names], codes=(0,))
    assert [o["type"] for o in objs] == ["leader-epoch-checkpoint"] * 3
    for name, o in zip(names, objs):
        assert (o["version"], o["count"]) == (0, len(checkpoints[name])) and not o["findings"]
        assert [(e["epoch"], e["startOffset"]) for e in o["entries"]] == checkpoints[name]


# ---- diff -------------------------------------------------------------------------------------------


def test_diff_of_the_lost_copy_and_the_new_leader(scenario, checkpoints, truncation):
    objs = json_lines("diff", str(scenario.copies["lost"]), str(scenario.copies["node2"]))
    summary = of_type(objs, "diff")[0]
    lost, fourth = acked_offsets(scenario, "lost"), acked_offsets(scenario, "fourth")
    assert summary["verdict"] == "diverged"
    assert summary["firstDivergentOffset"] == truncation
    assert summary["identicalThrough"] == truncation - 1
    assert summary["same"] == truncation
    assert summary["different"] == len(fourth) and summary["onlyInA"] == len(lost) - len(fourth)
    assert summary["onlyInB"] == 0
    assert [(e["epoch"], e["startOffset"]) for e in summary["a"]["leaderEpochs"]] == checkpoints["lost"]
    assert [(e["epoch"], e["startOffset"]) for e in summary["b"]["leaderEpochs"]] == checkpoints["node2"]
    assert summary["a"]["lastOffset"] == lost[-1] and summary["b"]["lastOffset"] == fourth[-1]
    runs = [(d["kind"], d["fromOffset"], d["toOffset"], d["leaderEpochA"], d["leaderEpochB"], d["pattern"])
            for d in of_type(objs, "divergence")]
    old_epoch, new_epoch = checkpoints["lost"][-1][0], checkpoints["node2"][-1][0]
    assert runs == [("different", fourth[0], fourth[-1], old_epoch, new_epoch, None),
                    ("only-in-a", fourth[-1] + 1, lost[-1], old_epoch, None, "tail")]


def test_diff_of_the_two_replicas_after_the_truncation(scenario):
    objs = json_lines("diff", str(scenario.copies["node1"]), str(scenario.copies["node2"]), codes=(0,))
    summary = of_type(objs, "diff")[0]
    assert summary["verdict"] == "identical"
    assert summary["identicalThrough"] == acked_offsets(scenario, "fourth")[-1]
    assert not of_type(objs, "divergence")


# ---- metadata history -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def history(scenario):
    objs = json_lines("metadata", "--topic", "ledger", str(scenario.copies["metadata"]), codes=(1,))
    return of_type(objs, "partition-change"), of_type(objs, "metadata-summary")[0]


def test_every_leader_change_caused_is_in_the_history(scenario, checkpoints, history):
    changes, _summary = history
    leaders = [c for c in changes if c["record"] == "PartitionRecord" or c["election"]]
    seen = [(c["leader"], sorted(c["isr"]), c["leaderEpoch"], c["unclean"]) for c in leaders]
    caused = [(e.leader, e.isr, e.unclean) for e in scenario.elections]
    assert [(leader, isr, unclean) for leader, isr, _, unclean in seen] == caused
    # one epoch per leader, each with records written: the epochs the new leader's checkpoint lists
    assert [epoch for _, _, epoch, _ in seen] == [epoch for epoch, _ in checkpoints["node2"]]


def test_only_the_unclean_election_is_flagged(scenario, history):
    changes, summary = history
    unclean = [c for c in changes if c["unclean"]]
    assert len(unclean) == 1
    (u,) = unclean
    # node 1 killed while alone in the ISR, fenced: the leader offline, node 1 moved to the ELR
    # (eligible leader replicas on) or kept in the ISR (off); then node 2, in neither, elected
    before = ([], [1], [1]) if elr_of(scenario) else ([1], [], [])
    assert (u["leader"], u["isr"], u["elr"], u["previousLeader"]) == (2, [2], [], -1)
    assert (u["previousIsr"], u["previousElr"]) == before[:2]
    offline = [(c["previousLeader"], c["isr"], c["elr"], c["lastKnownElr"], c["offset"] < u["offset"])
               for c in changes if c["leader"] == -1]
    assert offline == [(1, *before, True)]
    (epoch,) = [c["leaderEpoch"] for c in changes if c["leader"] == -1]
    assert epoch == u["leaderEpoch"] - 1 == u["previousLeaderEpoch"]
    assert u["leaderRecoveryState"] == "RECOVERING" and u["uncleanReason"] == "leader-recovery-state"
    assert [f["code"] for f in u["findings"]] == ["unclean-election"]
    assert summary["uncleanAt"] == [f"ledger-0@{u['offset']}"] and summary["uncleanElections"] == 1


def test_isr_changes_caused_appear_in_order(history):
    """Every ISR the test caused, in order (a follower out of step may add more in between)."""
    changes, _ = history
    seen = [(c["leader"], sorted(c["isr"])) for c in changes]
    caused = [(1, [1, 2]), (2, [2]), (2, [1, 2]), (1, [1, 2]), (1, [1]), (2, [2]), (2, [1, 2])]
    it = iter(seen)
    assert all(step in it for step in caused), seen
    assert seen[-1] == (2, [1, 2]) and changes[-1]["leaderRecoveryState"] == "RECOVERED"


# ---- metadata --at against Kafka's metadata shell ---------------------------------------------------


def kafkadump_state(segment, offset: int) -> dict:
    objs = json_lines("metadata", "--at", str(offset), str(segment))
    (state,) = of_type(objs, "cluster-state")
    return state


def compare_with_shell(segment) -> tuple[dict, dict]:
    """kafkadump's state after the last record the shell applied, and the shell's tree."""
    from broker.replica_scenario import shell_provenance, shell_tree

    tree = shell_tree(segment)
    state = kafkadump_state(segment, shell_provenance(tree))
    assert state["offset"] == shell_provenance(tree)
    return state, tree


def assert_same_state(state: dict, tree: dict) -> None:
    from broker.replica_scenario import (
        shell_brokers,
        shell_configs,
        shell_controllers,
        shell_features,
        shell_partitions,
    )

    fields = ("leader", "isr", "elr", "lastKnownElr", "replicas", "leaderEpoch", "partitionEpoch",
              "leaderRecoveryState")
    ours = {(t["topic"], p["partition"]): {**{f: p[f] for f in fields}, "topicId": t["topicId"]}
            for t in state["topics"] for p in t["partitions"]}
    assert ours == shell_partitions(tree)
    keys = ("brokerEpoch", "incarnationId", "fenced", "inControlledShutdown", "endpoints", "rack")
    assert {b["broker"]: {k: b[k] for k in keys} for b in state["brokers"]} == shell_brokers(tree)
    features = shell_features(tree)
    finalized = {k.removeprefix("finalized_"): int(v) for k, v in features.items() if k.startswith("finalized_")}
    release = re.fullmatch(r"Optional\[(.+)\]", features["metadataVersion"]).group(1)  # type: ignore[union-attr]
    # the level's name from kafkadump's table, itself checked against Kafka's storage tool below
    assert state["metadataVersion"] == release == METADATA_VERSIONS[state["features"]["metadata.version"]]
    assert state["features"] == {**finalized, "metadata.version": state["features"]["metadata.version"]}
    controllers = {c["controller"]: {"incarnationId": c["incarnationId"], "endpoints": c["endpoints"]}
                   for c in state["controllers"]}
    assert controllers == shell_controllers(tree) and len(controllers) == 3
    # the shell names a resource TYPE:name, the cluster's default (name "") just TYPE
    configs = {c["resourceType"] + (f":{c['resourceName']}" if c["resourceName"] else ""): c["configs"]
               for c in state["configs"]}
    assert configs == shell_configs(tree)


def test_metadata_version_names_are_kafkas():
    """kafkadump's table of metadata.version levels against Kafka's storage tool, level by level
    (Kafka 4.1 knows the levels from 7, 3.3-IV3, on; its levels past 4.1-IV1 are unstable)."""
    from broker.harness import STORAGE_TOOL, run_tool

    levels = [level for level in METADATA_VERSIONS if level >= 7]
    done = run_tool(STORAGE_TOOL, "feature-dependencies",
                    *[arg for level in levels for arg in ("--feature", f"metadata.version={level}")])
    kafka = {int(m.group(1)): m.group(2) for m in re.finditer(r"metadata\.version=(\d+) \(([^)]+)\)", done.stdout)}
    assert kafka == {level: METADATA_VERSIONS[level] for level in levels}
    assert max(METADATA_VERSIONS) == 27 and len(levels) == 21


def test_state_at_the_end_matches_the_metadata_shell(scenario):
    segment = scenario.copies["metadata"] / "00000000000000000000.log"
    state, tree = compare_with_shell(segment)
    assert_same_state(state, tree)
    assert [b["fenced"] for b in state["brokers"]] == [False, False, False]
    assert topic_configs(state) == {"min.insync.replicas": "1", "unclean.leader.election.enable": "true"}


def cut_state(scenario, offset: int, tmp_path) -> dict:
    """kafkadump's state and the shell's on the metadata log cut after the batch holding ``offset``,
    compared; kafkadump's."""
    from broker.replica_scenario import cut_log_after

    segment = cut_log_after(scenario.copies["metadata"] / "00000000000000000000.log", offset,
                            tmp_path / "__cluster_metadata-0" / "00000000000000000000.log")
    state, tree = compare_with_shell(segment)
    assert_same_state(state, tree)
    assert {b["broker"]: b["fenced"] for b in state["brokers"]}[1] is True   # the killed node, fenced
    return state


def ledger_of(state: dict) -> dict:
    (ledger,) = [p for t in state["topics"] if t["topic"] == "ledger" for p in t["partitions"]]
    return ledger


def topic_configs(state: dict) -> dict[str, str]:
    (configs,) = [c["configs"] for c in state["configs"] if (c["resourceType"], c["resourceName"]) == ("TOPIC", "ledger")]
    return configs


def test_state_right_after_the_unclean_election_matches_the_metadata_shell(scenario, history, tmp_path):
    changes, _ = history
    (u,) = [c for c in changes if c["unclean"]]
    state = cut_state(scenario, u["offset"], tmp_path)
    ledger = ledger_of(state)
    assert (ledger["leader"], ledger["isr"], ledger["leaderRecoveryState"]) == (2, [2], "RECOVERING")


def test_state_with_the_leader_offline_matches_the_metadata_shell(scenario, history, tmp_path):
    """Node 1 fenced, the leader offline: with eligible leader replicas on (Kafka's default) node 1
    is the ELR and lastKnownElr, the ISR empty; off, the ISR keeps node 1.  Unclean elections are
    off for the topic then (the configs compared with the shell's)."""
    changes, _ = history
    (offline,) = [c for c in changes if c["leader"] == -1]
    state = cut_state(scenario, offline["offset"], tmp_path)
    ledger = ledger_of(state)
    want = ([], [1], [1]) if elr_of(scenario) else ([1], [], [])
    assert (ledger["leader"], ledger["isr"], ledger["elr"], ledger["lastKnownElr"]) == (-1, *want)
    assert topic_configs(state) == {"min.insync.replicas": "1", "unclean.leader.election.enable": "false"}


# ---- records --------------------------------------------------------------------------------------------


def read_records(path) -> dict[int, tuple[bytes | None, bytes | None]]:
    return {o["offset"]: (as_bytes(o["key"]), as_bytes(o["value"]))
            for o in of_type(json_lines("records", str(path), codes=(0,)), "record")}


def test_every_surviving_acknowledged_record_is_on_the_leader(scenario):
    got = read_records(scenario.copies["node2"])
    want = {a.offset: (a.key, a.value) for a in scenario.surviving()}
    assert len(want) == len(scenario.surviving())   # no offset acknowledged twice
    assert got == want


def test_the_lost_records_are_on_the_lost_copy_only(scenario):
    lost = {a.offset: (a.key, a.value) for a in scenario.acked if a.phase == "lost"}
    on_lost_copy = read_records(scenario.copies["lost"])
    assert {o: on_lost_copy[o] for o in lost} == lost
    survivors = read_records(scenario.copies["node2"]).values()
    assert not {kv for kv in survivors if kv in lost.values()}
