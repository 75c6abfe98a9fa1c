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
from broker.readback import kafkadump

pytestmark = pytest.mark.broker


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
    if field == "earliest":  # how many segments retention deleted depends on when each rolled
        assert 0 < kafka[("clicks", 0)] < 200 and kafka[("profiles", 0)] == 0
    else:
        assert (kafka[("clicks", 0)], kafka[("profiles", 0)]) == (200, 240)
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
    assert len(kafka) >= 20 and kafka[("kp-orders", 0)] == 399   # kafka-python's explicit timestamps: the last is the max


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


# --- a small cluster of our own: the abort command run, offsets for several times -------------------------------

STAMP_BATCHES = [(0, 5000, 2000), (3000, 9000), (1000, 7000)]   # record timestamps - base, one batch each
STAMP_TIMES = [-1, 2500, 5000, 5001, 9001]                       # asked of the broker (+ base)


def leave_open_transaction(boot: str, topic: str) -> None:
    """A transactional producer killed by its PID after writing to ``topic``-1 (incident.py's script)."""
    import os
    import signal

    from broker.incident import HANGING_SCRIPT

    proc = subprocess.Popen([sys.executable, "-c", HANGING_SCRIPT, boot, "abandoned-tx", topic],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "flushed"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


def produce_stamped(boot: str) -> int:
    """``stamps``-0: one batch per group of explicit (CreateTime) timestamps from an hour ago (within
    retention), out of order across batches; ``ledger``-1: a record 16 minutes after the open transaction's
    data (its partition's newest timestamp).  The base of the stamps."""
    import time

    from broker.harness import quiet
    from confluent_kafka import Producer

    now = int(time.time() * 1000)
    base = now - 3_600_000
    producer = Producer(quiet({"bootstrap.servers": boot, "linger.ms": 50}))
    for n, stamps in enumerate(STAMP_BATCHES):
        for i, ts in enumerate(stamps):
            producer.produce("stamps", key=b"s%d-%d" % (n, i), value=b"v", partition=0, timestamp=base + ts)
        producer.flush(30)
    producer.produce("ledger", key=b"late", value=b"after", partition=1, timestamp=now + 16 * 60 * 1000)
    producer.flush(30)
    return base


def broker_offsets_for_times(boot: str, base: int) -> dict[int, int]:
    """ListOffsets for each of STAMP_TIMES on stamps-0, answered by the broker (-1: no such record)."""
    from broker.harness import quiet
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient(quiet({"bootstrap.servers": boot}))
    out = {}
    for ms in STAMP_TIMES:
        tp = TopicPartition("stamps", 0)
        (future,) = admin.list_offsets({tp: OffsetSpec.for_timestamp(base + ms)}).values()
        out[ms] = future.result(30).offset
    return out


def offsets_in_process(*args: str) -> list[dict]:
    """``kafkadump offsets`` run in this process (no interpreter start per call)."""
    from typer.testing import CliRunner

    from kafkadump.cli import app

    done = CliRunner().invoke(app, ["offsets", "--json", *args])
    assert done.exit_code in (0, 1), done.output
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def abort_args(command: str) -> list[str]:
    """The arguments of a printed ``kafka-transactions.sh ...`` command, as the tool class takes them."""
    import shlex

    words = shlex.split(command)
    assert words[0] == "kafka-transactions.sh", command
    return words[1:]


def read_committed(boot: str, topic: str, partition: int) -> tuple[list[bytes | None], int]:
    """What a read_committed consumer gets from ``topic``-``partition`` up to its end: keys, and its position."""
    from broker.harness import quiet
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(quiet({"bootstrap.servers": boot, "group.id": "after-abort", "enable.auto.commit": False,
                               "isolation.level": "read_committed", "enable.partition.eof": True}))
    tp = TopicPartition(topic, partition, 0)
    consumer.assign([tp])
    keys: list[bytes | None] = []
    for _ in range(120):
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            break   # the end of the partition (as far as read_committed reads)
        keys.append(msg.key())
    (pos,) = consumer.position([tp])
    consumer.close()
    return keys, pos.offset


def txn_objects(path) -> list[dict]:
    return [o for o in objects("txn", "--json", str(path)) if o["type"] == "transaction"]


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> dict:
    """Our own node: a transaction left open on ledger-1 and what kafkadump and Kafka say about it, before
    and after the abort command kafkadump printed was run against the node; get-offsets for several times."""
    import shutil

    from broker.harness import TRANSACTIONS, Cluster, missing_tools, run_tool
    from broker.incident import create_topics

    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("live")
    out: dict = {}
    with Cluster(root / "cluster", 1) as cluster:
        cluster.start()
        boot = cluster.bootstrap
        create_topics(boot, {"ledger": (2, {}), "stamps": (1, {})})
        leave_open_transaction(boot, "ledger")
        base = produce_stamped(boot)
        log_dir = cluster.nodes[0].log_dir
        shutil.copytree(log_dir, root / "copy")
        out["whole"] = txn_objects(root / "copy")
        out["alone"] = objects("txn", "--json", "--bootstrap-server", boot, str(root / "copy" / "ledger-1"))
        tool = ("--bootstrap-server", boot)
        out["find-hanging"] = run_tool(TRANSACTIONS, *tool, "find-hanging", "--broker-id", "1",
                                       "--max-transaction-timeout", "0").stdout
        out["producers-before"] = run_tool(TRANSACTIONS, *tool, "describe-producers", "--topic", "ledger",
                                           "--partition", "1").stdout
        (t,) = [o for o in out["alone"] if o["type"] == "transaction"]
        out["abort"] = [run_tool(TRANSACTIONS, *abort_args(c), check=False) for c in t["abortCommands"]]
        out["read-committed"] = read_committed(boot, "ledger", 1)
        out["describe"] = run_tool(TRANSACTIONS, *tool, "describe", "--transactional-id", "abandoned-tx").stdout
        out["broker"] = broker_offsets_for_times(boot, base)
        shutil.copytree(log_dir, root / "after")
        out["after"] = txn_objects(root / "after" / "ledger-1")
        out["offsets"] = {ms: offsets_in_process("--time", str(base + ms), str(root / "after" / "stamps-0"))[0]
                          for ms in STAMP_TIMES}
    return out


def test_txn_live_copy_agrees_with_find_hanging_while_the_coordinator_lists_it(live):
    """With __transaction_state among the inputs, the abandoned transaction is ongoing for both: the
    coordinator lists ledger-1 (its 15-minute timeout not reached on the coordinator's clock)."""
    assert tool_table(live["find-hanging"]) == []
    (t,) = [t for t in live["whole"] if t["transactionalId"] == "abandoned-tx"]
    assert (t["state"], [p["state"] for p in t["partitions"]], t["abortCommands"]) == ("ongoing", ["ongoing"], [])


def test_txn_open_data_is_what_describe_producers_says(live):
    """Kafka's producer state of ledger-1 (describe-producers, before the abort): the producer id, epoch, the
    start offset of its open transaction and its last batch's timestamp are kafkadump's open data's."""
    (row,) = tool_table(live["producers-before"])
    (t,) = [o for o in live["whole"] if o["transactionalId"] == "abandoned-tx"]
    (p,) = t["partitions"]
    assert (t["producerId"], t["producerEpoch"], p["firstOffset"], p["lastTimestamp"]) == \
        (int(row["ProducerId"]), int(row["ProducerEpoch"]), int(row["CurrentTransactionStartOffset"]),
         int(row["LastTimestamp"]))


def test_txn_abort_command_is_accepted_and_ends_the_transaction_aborted(live):
    """ledger-1 alone (no coordinator record among the inputs), its data's last write 16 minutes before the
    partition's newest timestamp: hanging by the default window; the printed command, run by Kafka's
    transactions tool against the node, writes the ABORT marker: a read_committed consumer skips the
    aborted data and reads to the end, and kafkadump finds the same data closed by an ABORT marker of the
    same producer and epoch."""
    (t,) = [o for o in live["alone"] if o["type"] == "transaction"]
    (p,) = t["partitions"]
    assert (t["state"], p["topic"], p["partition"], p["firstOffset"], t["coordinator"]) == \
        ("hanging", "ledger", 1, 0, None)
    (done,) = live["abort"]
    assert done.returncode == 0, done.stderr
    assert live["read-committed"] == ([b"late"], 7)   # the aborted data skipped, nothing held back any more
    (closed,) = [x for x in live["after"] if x["producerId"] == t["producerId"]]
    (cp,) = closed["partitions"]
    assert (closed["state"], cp["marker"], cp["firstOffset"], cp["lastOffset"], closed["producerEpoch"]) == \
        ("aborted", "ABORT", 0, p["lastOffset"], t["producerEpoch"])


def test_txn_abort_by_start_offset_leaves_the_coordinator_record(live):
    """The man page's word: the abort command writes the partition's marker only; the coordinator still
    describes the transaction as Ongoing over ledger-1 (it aborts it itself at its timeout)."""
    (row,) = tool_table(live["describe"])
    assert (row["TransactionState"], row["TopicPartitions"]) == ("Ongoing", "ledger-1")


@pytest.mark.parametrize("ms, expected", [(-1, 0), (2500, 1), (5000, 1), (5001, 4), (9001, None)])
def test_offsets_for_several_times_are_the_brokers(live, ms, expected):
    """The broker's ListOffsets for a time: the first record with timestamp >= T in the first batch whose
    max timestamp is >= T (timestamps out of order across batches); past every timestamp the broker
    answers -1 and kafkadump null."""
    assert live["broker"][ms] == (-1 if expected is None else expected)
    o = live["offsets"][ms]
    assert (o["topic"], o["offsetForTime"], o["maxTimestampOffset"], o["earliest"], o["logEnd"]) == \
        ("stamps", expected, 4, 0, 7)


def test_txn_and_offsets_place_ids_where_the_node_put_them(incident):
    """The node has 4 __transaction_state and 4 __consumer_offsets partitions (harness.py): with the default
    50 a note says the records are elsewhere and names 4; given 4, kafkadump's coordinator partition of every
    transactional id and group is the partition Kafka wrote its records to."""
    log_dir = str(incident.log_dir)
    for cmd, option in (("txn", "--txn-partitions"), ("offsets", "--offsets-partitions")):
        done = kafkadump(cmd, "--json", log_dir)
        assert f"give {option} the cluster's partition count; 4 partitions place every one where it is" \
            in done.stderr, done.stderr
    placed = [(t["coordinatorPartition"], t["coordinator"]["statePartition"])
              for t in objects("txn", "--json", "--txn-partitions", "4", log_dir)
              if t["type"] == "transaction" and t["coordinator"]]
    assert len(placed) == 7 and all(a == b for a, b in placed)
    groups = [(o["coordinatorPartition"], o["offsetsPartition"])
              for o in objects("offsets", "--json", "--offsets-partitions", "4", log_dir) if o["type"] == "group-offset"]
    assert len(groups) == 4 and all(a == b for a, b in groups)
