"""kafkadump txn and kafkadump offsets against Kafka's own live tools (tests/broker/incident.py).

The oracle is what the transactions, get-offsets and consumer-groups tools printed while the broker
ran (``incident.oracle``); kafkadump reads the stopped log dir.  Where the two are not meant to agree,
the man page says why (man/parts/oracle_forensics.man); these tests pin both sides of each such case.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.broker


def kafkadump(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, text=True, timeout=300)


def objects(*args: str) -> list[dict]:
    done = kafkadump(*args)
    assert done.returncode in (0, 1), done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def tool_table(text: str) -> list[dict[str, str]]:
    """The rows of one of Kafka's tab-separated tables (``ToolsUtils.prettyPrintTable``)."""
    lines = [line for line in text.splitlines() if line.strip()]
    head = [h.strip() for h in lines[0].split("\t")]
    return [dict(zip(head, (c.strip() for c in line.split("\t")))) for line in lines[1:]]


def get_offsets(text: str) -> dict[tuple[str, int], int]:
    """GetOffsetShell's ``topic:partition:offset`` lines."""
    out = {}
    for line in text.splitlines():
        topic, part, off = line.rsplit(":", 2)
        out[(topic, int(part))] = int(off)
    return out


def oracle(incident, name: str) -> str:
    assert incident.oracle[name + ".rc"] == "0", incident.oracle[name + ".stderr"]
    return incident.oracle[name]


# --- kafkadump txn against kafka-transactions.sh ---------------------------------------------------------------

@pytest.fixture(scope="module")
def txns(incident) -> list[dict]:
    return objects("txn", "--json", str(incident.log_dir))


def coordinator_view(txns: list[dict]) -> dict[str, dict]:
    """Transactional id -> the coordinator's latest record, as kafkadump read it from __transaction_state."""
    return {t["transactionalId"]: t["coordinator"] for t in txns if t["type"] == "transaction" and t["coordinator"]}


def test_txn_list_has_kafkas_transactional_ids_producer_ids_and_states(incident, txns):
    kafka = {r["TransactionalId"]: (int(r["ProducerId"]), r["TransactionState"])
             for r in tool_table(oracle(incident, "txn-list"))}
    assert set(kafka) == {"tx-0", "tx-1", "hanging-tx"}
    mine = {tid: (c["producerId"], c["state"]) for tid, c in coordinator_view(txns).items()}
    assert mine == kafka


@pytest.mark.parametrize("tid, key", [("hanging-tx", "txn-describe-hanging"), ("tx-0", "txn-describe-tx-0"),
                                      ("tx-1", "txn-describe-tx-1")])
def test_txn_coordinator_record_is_what_kafka_describes(incident, txns, tid, key):
    (row,) = tool_table(oracle(incident, key))
    c = coordinator_view(txns)[tid]
    parts = ",".join(f"{p['topic']}-{p['partition']}" for p in c["partitions"])
    assert (c["producerId"], c["producerEpoch"], c["state"], c["timeoutMs"], c["startTimestamp"], parts) == \
        (int(row["ProducerId"]), int(row["ProducerEpoch"]), row["TransactionState"], int(row["TransactionTimeoutMs"]),
         int(row["CurrentTransactionStartTimeMs"]), row.get("TopicPartitions", ""))


def test_txn_the_killed_producers_transaction_is_open_where_kafka_says(incident, txns):
    """The producer killed mid-transaction: kafkadump finds its data open in the partition Kafka's
    describe lists, under the producer id and epoch Kafka names, from the offset where read_committed
    consumers stopped."""
    (row,) = tool_table(oracle(incident, "txn-describe-hanging"))
    (t,) = [t for t in txns if t["type"] == "transaction" and t["transactionalId"] == "hanging-tx"]
    assert (t["producerId"], t["producerEpoch"]) == (int(row["ProducerId"]), int(row["ProducerEpoch"]))
    assert [f"{p['topic']}-{p['partition']}" for p in t["partitions"]] == row["TopicPartitions"].split(",")
    (p,) = t["partitions"]
    assert p["marker"] is None and p["lastStableOffset"] == p["firstOffset"]
    assert p["firstOffset"] == incident.facts["read_committed_end"][1]


def kafka_says_hanging(incident, txn: dict, part: dict) -> bool:
    """Kafka's find-hanging rule (TransactionsCommand, 4.1) for one open partition: hanging when no
    transactional id uses the producer id, or the coordinator's description does not list the partition."""
    describes = {"hanging-tx": "txn-describe-hanging", "tx-0": "txn-describe-tx-0", "tx-1": "txn-describe-tx-1"}
    listed = {int(r["ProducerId"]): r["TransactionalId"] for r in tool_table(oracle(incident, "txn-list"))}
    tid = listed.get(txn["producerId"])
    if tid is None:
        return True
    (row,) = tool_table(oracle(incident, describes[tid]))
    return f"{part['topic']}-{part['partition']}" not in row.get("TopicPartitions", "").split(",")


def test_txn_hanging_verdict_is_kafkas_find_hanging(incident, txns):
    """find-hanging ran with --max-transaction-timeout 0 (every open transaction a candidate): it found
    none, as the coordinator lists the killed producer's partition; kafkadump calls it ongoing, and
    every open partition's verdict is the one Kafka's rule gives from Kafka's own describe output."""
    assert tool_table(oracle(incident, "txn-find-hanging")) == []
    summary = txns[-1]
    assert (summary["type"], summary["hanging"], summary["ongoing"], summary["stuckPartitions"]) == \
        ("transactions-summary", 0, 1, [])
    open_parts = [(t, p) for t in txns if t["type"] == "transaction" for p in t["partitions"] if p["marker"] is None]
    assert len(open_parts) == 1
    for t, p in open_parts:
        assert (p["state"] == "hanging") == kafka_says_hanging(incident, t, p)
        assert t["abortCommands"] == []


# --- kafkadump offsets against kafka-get-offsets.sh and kafka-consumer-groups.sh -------------------------------

@pytest.fixture(scope="module")
def at_time(incident) -> int:
    return int(incident.facts["kp_base_ms"]) + 150 * 1000   # the time incident.py asked get-offsets about


@pytest.fixture(scope="module")
def offsets(incident, at_time) -> list[dict]:
    return objects("offsets", "--json", "--time", str(at_time), str(incident.log_dir))


def partitions(offsets: list[dict]) -> dict[tuple[str, int], dict]:
    """kafkadump's partition-offsets objects, without the metadata log (no tool lists it)."""
    return {(o["topic"], o["partition"]): o for o in offsets
            if o["type"] == "partition-offsets" and o["topic"] != "__cluster_metadata"}


@pytest.mark.parametrize("key, field", [("offsets-latest", "logEnd"), ("offsets-earliest", "earliest")])
def test_offsets_earliest_and_latest_are_get_offsets(incident, offsets, key, field):
    kafka = get_offsets(oracle(incident, key))
    assert len(kafka) == 26
    assert (kafka[("clicks", 0)], kafka[("profiles", 0)]) == ((140, 0) if field == "earliest" else (200, 240))
    assert {k: o[field] for k, o in partitions(offsets).items()} == kafka


def test_offsets_high_watermark_is_get_offsets_latest(incident, offsets):
    """Kafka's latest (read_uncommitted) is the high watermark: after a clean stop, the checkpoint's, and
    the log end on disk too (the man page: they may differ on a follower's copy or a crashed broker)."""
    kafka = get_offsets(oracle(incident, "offsets-latest"))
    assert {k: o["highWatermark"] for k, o in partitions(offsets).items()} == kafka


def test_offsets_max_timestamp_offset_is_get_offsets(incident, offsets):
    """Kafka answers max-timestamp only for partitions holding a batch; kafkadump's is null for the others."""
    kafka = get_offsets(oracle(incident, "offsets-max-timestamp"))
    mine = {k: o["maxTimestampOffset"] for k, o in partitions(offsets).items()}
    assert {k: v for k, v in mine.items() if v is not None} == kafka
    assert kafka[("codec-none", 1)] != 199   # the max timestamp is not simply the last record's


def test_offsets_for_a_time_is_get_offsets(incident, offsets):
    kafka = get_offsets(oracle(incident, "offsets-at-time"))
    assert kafka == {("kp-orders", 0): 150}
    assert {k: o["offsetForTime"] for k, o in partitions(offsets).items() if k in kafka} == kafka


def test_offsets_group_commits_and_lag_are_consumer_groups_describe(incident, offsets):
    rows = [line.split() for line in oracle(incident, "groups-describe").splitlines()
            if line.strip() and not line.startswith("GROUP")]
    kafka = {(g, t, int(p)): (int(cur), int(end), int(lag)) for g, t, p, cur, end, lag, *_ in rows}
    assert len(kafka) == 4
    mine = {(o["group"], o["topic"], o["partition"]): (o["committed"], o["logEnd"], o["lag"])
            for o in offsets if o["type"] == "group-offset"}
    assert mine == kafka
    listed = set(oracle(incident, "groups-list").split())
    assert listed == set(incident.facts["groups"]) == {g for g, _, _ in mine}
