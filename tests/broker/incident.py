"""The single-broker incident: one KRaft node, real clients (librdkafka through confluent-kafka, and
kafka-python) writing what operators meet, Kafka's live tools asked while it runs, then a clean stop.

What the clients had acknowledged is kept (``Incident.acked``) and so is what Kafka's live tools
answered (``Incident.oracle``), so the tests compare kafkadump's offline answers on the stopped log
dir with both.  Reproducible from ``SEED`` (keys, values, headers, sizes; the broker's own timing
decides only segment boundaries and timestamps).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

from .harness import CONSUMER_GROUPS, GET_OFFSETS, TOPICS, TRANSACTIONS, Cluster, quiet, run_tool

SEED = 2511
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
TXN_TOPIC = "payments"
HANGING_ID = "hanging-tx"


@dataclass
class Acked:
    """One record a client had acknowledged: where the broker put it and what it held."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    timestamp: int | None = None


@dataclass
class Incident:
    root: Path
    cluster: Cluster
    acked: list[Acked] = field(default_factory=list)
    aborted: list[Acked] = field(default_factory=list)
    oracle: dict[str, str] = field(default_factory=dict)
    facts: dict[str, object] = field(default_factory=dict)

    @property
    def log_dir(self) -> Path:
        return self.cluster.nodes[0].log_dir

    def partition_dir(self, topic: str, partition: int = 0) -> Path:
        return self.log_dir / f"{topic}-{partition}"


def _payload(rng: random.Random, size: int) -> bytes:
    alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789 -_:{}"
    return bytes(rng.choice(alphabet) for _ in range(size))


def create_topics(bootstrap: str, specs: dict[str, tuple[int, dict[str, str]]]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(quiet({"bootstrap.servers": bootstrap}))
    futures = admin.create_topics([NewTopic(name, parts, 1, config=conf) for name, (parts, conf) in specs.items()])
    for future in futures.values():
        future.result(30)


def delete_topics(bootstrap: str, names: list[str]) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(quiet({"bootstrap.servers": bootstrap}))
    for future in admin.delete_topics(names).values():
        future.result(30)


class Recorder:
    """Delivery reports of a confluent-kafka producer, kept as ``Acked`` records."""

    def __init__(self, sink: list[Acked]):
        self.sink = sink
        self.errors: list[str] = []

    def __call__(self, err, msg) -> None:  # noqa: ANN001 - librdkafka's callback
        self.sent(None)(err, msg)

    def sent(self, headers: list[tuple[str, bytes | None]] | None):  # noqa: ANN201
        """The callback of one message sent with ``headers`` (a delivery report does not carry them)."""

        def delivered(err, msg) -> None:  # noqa: ANN001
            if err is not None:
                self.errors.append(str(err))
                return
            kind, ts = msg.timestamp()
            self.sink.append(Acked(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(),
                                   list(headers or []), ts if kind else None))

        return delivered


def produce_codecs(inc: Incident, rng: random.Random) -> None:
    """One topic per codec, written by librdkafka: keys, null keys, null values, headers, batches."""
    from confluent_kafka import Producer

    create_topics(inc.cluster.bootstrap, {f"codec-{c}": (2, {}) for c in CODECS})
    for codec in CODECS:
        rec = Recorder(inc.acked)
        producer = Producer(quiet({"bootstrap.servers": inc.cluster.bootstrap, "compression.type": codec,
                                   "linger.ms": 5, "batch.num.messages": 50, "enable.idempotence": False,
                                   "acks": "all"}))
        for i in range(400):
            key = None if i % 17 == 0 else f"user-{rng.randrange(60)}".encode()
            value = None if i % 41 == 5 else _payload(rng, rng.randrange(0, 300))
            headers = [("trace", f"t{i}".encode()), ("empty", None)] if i % 3 == 0 else None
            producer.produce(f"codec-{codec}", key=key, value=value, headers=headers, partition=i % 2,
                             on_delivery=rec.sent(headers))
            if i % 100 == 99:
                producer.poll(0)
        producer.flush(30)
        assert not rec.errors, rec.errors


def produce_kafka_python(inc: Incident, rng: random.Random) -> None:
    """kafka-python's own encoder (gzip and none) into one topic, with explicit timestamps."""
    from kafka import KafkaProducer

    create_topics(inc.cluster.bootstrap, {"kp-orders": (1, {})})
    for codec in (None, "gzip"):
        producer = KafkaProducer(bootstrap_servers=inc.cluster.bootstrap, compression_type=codec, linger_ms=5,
                                 acks="all")
        futures = []
        base_ms = inc.facts.setdefault("kp_base_ms", int(time.time() * 1000) - 3_600_000)
        for i in range(200):
            key = f"order-{i}".encode()
            value = _payload(rng, rng.randrange(1, 120))
            headers = [("src", b"kp")] if i % 2 else []
            ts = int(base_ms) + i * 1000 + (0 if codec is None else 500)  # type: ignore[call-overload]
            futures.append((producer.send("kp-orders", key=key, value=value, headers=headers, timestamp_ms=ts),
                            key, value, headers))
        producer.flush(30)
        for future, key, value, headers in futures:
            meta = future.get(30)
            inc.acked.append(Acked("kp-orders", meta.partition, meta.offset, key, value, headers, meta.timestamp))
        producer.close(5)


def produce_idempotent(inc: Incident, rng: random.Random) -> None:
    from confluent_kafka import Producer

    create_topics(inc.cluster.bootstrap, {"idem": (1, {})})
    rec = Recorder(inc.acked)
    producer = Producer(quiet({"bootstrap.servers": inc.cluster.bootstrap, "enable.idempotence": True,
                               "linger.ms": 2, "compression.type": "lz4"}))
    for i in range(300):
        producer.produce("idem", key=f"k{i % 25}".encode(), value=_payload(rng, 40), on_delivery=rec)
    producer.flush(30)
    assert not rec.errors, rec.errors


def produce_transactions(inc: Incident, rng: random.Random) -> None:
    """Committed and aborted transactions over two partitions of ``payments``."""
    from confluent_kafka import Producer

    create_topics(inc.cluster.bootstrap, {TXN_TOPIC: (2, {})})
    for txn_no in range(6):
        committed = txn_no % 3 != 1
        sink: list[Acked] = []
        rec = Recorder(sink)
        producer = Producer(quiet({"bootstrap.servers": inc.cluster.bootstrap,
                                   "transactional.id": f"tx-{txn_no % 2}", "linger.ms": 2}))
        producer.init_transactions(30)
        producer.begin_transaction()
        for i in range(20):
            producer.produce(TXN_TOPIC, key=f"acct-{i % 7}".encode(), value=_payload(rng, 30), partition=i % 2,
                             on_delivery=rec)
        producer.flush(30)
        if committed:
            producer.commit_transaction(30)
            inc.acked.extend(sink)
        else:
            producer.abort_transaction(30)
            inc.aborted.extend(sink)
        assert not rec.errors, rec.errors


HANGING_SCRIPT = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": sys.argv[2],
                  "transaction.timeout.ms": 900000, "log_level": 0})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(5):
        p.produce(sys.argv[3], key=b"hang-%d" % i, value=b"never-ended", partition=1)
    p.flush(30)
    print("flushed", flush=True)
    time.sleep(600)
""")


def produce_hanging(inc: Incident) -> None:
    """A transactional producer killed (SIGKILL, by its PID) after writing, before it ends the
    transaction: the transaction stays open on ``payments-1`` (its timeout is 15 minutes)."""
    proc = subprocess.Popen([sys.executable, "-c", HANGING_SCRIPT, inc.cluster.bootstrap, HANGING_ID, TXN_TOPIC],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.strip() == "flushed", line
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    inc.facts["hanging_pid"] = proc.pid


def produce_compacted(inc: Incident, rng: random.Random) -> None:
    """A compacted topic with tombstones: many small segments, a low dirty ratio, a short delete
    horizon, so the cleaner runs (twice) while the test waits."""
    from confluent_kafka import Producer

    conf = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "100", "min.compaction.lag.ms": "0", "segment.bytes": "1048576"}
    create_topics(inc.cluster.bootstrap, {"profiles": (1, conf)})
    rec = Recorder(inc.facts.setdefault("compacted_writes", []))  # type: ignore[arg-type]
    producer = Producer(quiet({"bootstrap.servers": inc.cluster.bootstrap, "linger.ms": 0}))
    for round_no in range(8):
        for i in range(30):
            key = f"profile-{i % 12}".encode()
            value = None if (round_no in (3, 6) and i % 4 == 0) else _payload(rng, 24)
            producer.produce("profiles", key=key, value=value, on_delivery=rec)
        producer.flush(30)
        time.sleep(0.15)
    assert not rec.errors, rec.errors


def produce_retained(inc: Incident, rng: random.Random) -> None:
    """Retention by bytes deletes old segments: the log start offset moves past 0."""
    from confluent_kafka import Producer

    conf = {"segment.ms": "100", "retention.bytes": "3000", "index.interval.bytes": "128"}
    create_topics(inc.cluster.bootstrap, {"clicks": (1, conf)})
    rec = Recorder(inc.facts.setdefault("retained_writes", []))  # type: ignore[arg-type]
    producer = Producer(quiet({"bootstrap.servers": inc.cluster.bootstrap, "linger.ms": 0}))
    for _round in range(10):
        for i in range(20):
            producer.produce("clicks", key=f"c{i}".encode(), value=_payload(rng, 50), on_delivery=rec)
        producer.flush(30)
        time.sleep(0.15)
    assert not rec.errors, rec.errors


def produce_rolled(inc: Incident, rng: random.Random) -> None:
    """Several segments with dense offset and time indexes (a small index interval)."""
    from confluent_kafka import Producer

    conf = {"segment.ms": "150", "index.interval.bytes": "100"}
    create_topics(inc.cluster.bootstrap, {"rolled": (1, conf)})
    rec = Recorder(inc.acked)
    producer = Producer(quiet({"bootstrap.servers": inc.cluster.bootstrap, "linger.ms": 1}))
    for _round in range(5):
        for i in range(150):
            producer.produce("rolled", key=f"r{i}".encode(), value=_payload(rng, rng.randrange(10, 90)),
                             on_delivery=rec)
        producer.flush(30)
        time.sleep(0.2)
    assert not rec.errors, rec.errors


def consume_groups(inc: Incident) -> None:
    """Two groups commit offsets: one of the classic protocol, one of the consumer protocol (KIP-848)."""
    from confluent_kafka import Consumer, TopicPartition

    plans = {"classic-readers": ("classic", "codec-gzip", 150), "kip848-readers": ("consumer", "codec-zstd", 90)}
    for group, (protocol, topic, upto) in plans.items():
        conf = {"bootstrap.servers": inc.cluster.bootstrap, "group.id": group, "group.protocol": protocol,
                "enable.auto.commit": False, "auto.offset.reset": "earliest"}
        consumer = Consumer(quiet(conf))
        consumer.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
        consumer.commit(offsets=[TopicPartition(topic, 0, upto), TopicPartition(topic, 1, upto // 3)],
                        asynchronous=False)
        consumer.close()
    inc.facts["groups"] = plans


def recreate_topic(inc: Incident, rng: random.Random) -> None:
    """A topic deleted and re-created under the same name (a new topic id), written both times."""
    from confluent_kafka import Producer

    for life in range(2):
        create_topics(inc.cluster.bootstrap, {"phoenix": (1, {})})
        sink: list[Acked] = []
        rec = Recorder(sink)
        producer = Producer(quiet({"bootstrap.servers": inc.cluster.bootstrap}))
        for i in range(10 + life * 5):
            producer.produce("phoenix", key=f"life{life}-{i}".encode(), value=_payload(rng, 12), on_delivery=rec)
        producer.flush(30)
        assert not rec.errors, rec.errors
        inc.facts.setdefault("phoenix_ids", []).append(topic_id(inc.cluster.bootstrap, "phoenix"))  # type: ignore[attr-defined]
        if life == 0:
            delete_topics(inc.cluster.bootstrap, ["phoenix"])
            _wait_gone(inc.log_dir, "phoenix-0")
        else:
            inc.acked.extend(sink)


def topic_id(bootstrap: str, name: str) -> str:
    """The topic id Kafka's own topics tool prints (``TopicId: ...``: URL-safe base64, as Kafka's
    ``Uuid`` writes it; librdkafka prints the same 16 bytes in standard base64)."""
    done = run_tool(TOPICS, "--bootstrap-server", bootstrap, "--describe", "--topic", name)
    return done.stdout.split("TopicId:", 1)[1].split()[0]


def read_committed(inc: Incident) -> None:
    """What a read_committed consumer gets from ``payments``: (partition, offset) of each record, and
    where it stops (the last stable offset, held by the open transaction)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(quiet({"bootstrap.servers": inc.cluster.bootstrap, "group.id": "oracle-read-committed",
                               "isolation.level": "read_committed", "enable.auto.commit": False,
                               "enable.partition.eof": True}))
    parts = [TopicPartition(TXN_TOPIC, p, 0) for p in (0, 1)]
    consumer.assign(parts)
    seen: set[tuple[int, int]] = set()
    at_end: set[int] = set()
    deadline = time.monotonic() + 30
    while len(at_end) < 2 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == msg.error()._PARTITION_EOF:
                at_end.add(msg.partition())
            continue
        seen.add((msg.partition(), msg.offset()))
    inc.facts["read_committed"] = seen
    inc.facts["read_committed_end"] = {tp.partition: tp.offset for tp in consumer.position(parts)}
    consumer.close()


def _wait_gone(log_dir: Path, name: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while (log_dir / name).exists() and time.monotonic() < deadline:
        time.sleep(0.2)


def wait_for_cleaner(inc: Incident, timeout: float = 40) -> None:
    """Until the cleaner has cleaned ``profiles-0`` (its offset in cleaner-offset-checkpoint)."""
    path = inc.log_dir / "cleaner-offset-checkpoint"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if any(line.startswith("profiles 0 ") and int(line.split()[2]) > 0 for line in text.splitlines()):
            return
        time.sleep(0.3)
    raise AssertionError(f"the cleaner did not run on profiles-0 in {timeout} s")


def wait_for_retention(inc: Incident, timeout: float = 40) -> None:
    """Until retention has deleted the first segment of ``clicks-0`` and then deletes no more for
    2 s (it goes on while the partition holds more than retention.bytes; the live tools must see
    the log start offset the stopped log dir keeps)."""
    deadline = time.monotonic() + timeout
    seen, since = None, time.monotonic()
    while time.monotonic() < deadline:
        logs = sorted(p.name for p in inc.partition_dir("clicks").glob("*.log"))
        if logs != seen:
            seen, since = logs, time.monotonic()
        elif "00000000000000000000.log" not in logs and time.monotonic() - since >= 2:
            return
        time.sleep(0.3)
    raise AssertionError(f"retention did not delete clicks-0's first segment in {timeout} s")


def ask_live_tools(inc: Incident) -> None:
    """What Kafka's own tools say while the broker runs, kept for the offline comparisons."""
    boot = inc.cluster.bootstrap
    asks = {
        "txn-list": (TRANSACTIONS, "--bootstrap-server", boot, "list"),
        "txn-describe-hanging": (TRANSACTIONS, "--bootstrap-server", boot, "describe", "--transactional-id",
                                 HANGING_ID),
        "txn-describe-tx-0": (TRANSACTIONS, "--bootstrap-server", boot, "describe", "--transactional-id", "tx-0"),
        "txn-describe-tx-1": (TRANSACTIONS, "--bootstrap-server", boot, "describe", "--transactional-id", "tx-1"),
        "txn-find-hanging": (TRANSACTIONS, "--bootstrap-server", boot, "find-hanging", "--broker-id", "1",
                             "--max-transaction-timeout", "0"),
        "offsets-latest": (GET_OFFSETS, "--bootstrap-server", boot, "--time", "latest"),
        "offsets-earliest": (GET_OFFSETS, "--bootstrap-server", boot, "--time", "earliest"),
        "offsets-max-timestamp": (GET_OFFSETS, "--bootstrap-server", boot, "--time", "max-timestamp"),
        "offsets-at-time": (GET_OFFSETS, "--bootstrap-server", boot, "--topic", "kp-orders",
                            "--time", str(int(inc.facts["kp_base_ms"]) + 150 * 1000)),  # type: ignore[call-overload]
        "groups-describe": (CONSUMER_GROUPS, "--bootstrap-server", boot, "--describe", "--all-groups"),
        "groups-list": (CONSUMER_GROUPS, "--bootstrap-server", boot, "--list"),
    }
    for name, (main_class, *args) in asks.items():
        done = run_tool(main_class, *args, check=False)
        inc.oracle[name] = done.stdout
        inc.oracle[name + ".stderr"] = done.stderr
        inc.oracle[name + ".rc"] = str(done.returncode)


def build(root: Path) -> Incident:
    """Run the whole incident on a fresh node under ``root``; return with the node stopped cleanly."""
    rng = random.Random(SEED)
    cluster = Cluster(root, 1, {"log.cleaner.min.cleanable.ratio": "0.01"})
    inc = Incident(Path(root), cluster)
    try:
        cluster.start()
        steps = (produce_codecs, produce_kafka_python, produce_idempotent, produce_transactions,
                 produce_compacted, produce_retained, produce_rolled, recreate_topic)
        for step in steps:
            step(inc, rng)
        produce_hanging(inc)
        consume_groups(inc)
        read_committed(inc)
        wait_for_cleaner(inc)
        wait_for_retention(inc)
        ask_live_tools(inc)
        inc.facts["stopped_at_ms"] = int(time.time() * 1000)
    finally:
        cluster.stop()
    return inc
