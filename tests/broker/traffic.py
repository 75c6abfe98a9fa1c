"""Real clients' traffic against a broker: the rounds ``bench/make_real_pcap.py`` and
``tests/test_broker_capture.py`` capture on loopback.

Each round (``one_round``): librdkafka producers, one per codec (none, gzip, snappy, lz4, zstd), their
linger, batch size, acks and idempotence drawn from the seed; kafka-python producers, one per codec;
a librdkafka transactional producer (two transactions, every third one aborted); then four consumer
groups, each a new member reading what the rounds wrote: librdkafka of the classic protocol (the
librdkafka topics), librdkafka of the consumer protocol (KIP-848; the kafka-python topics),
kafka-python (the librdkafka topics again) and a read_committed librdkafka reader of the
transactional topic.  Keys, null keys, null values, headers, values from a few bytes to 64 KB.
"""

from __future__ import annotations

import random
import time

from .harness import quiet
from .incident import create_topics as _create

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
TXN_TOPIC = "rk-txn"
ALPHABET = b"abcdefghijklmnopqrstuvwxyz0123456789 -_:{}\"'"


class Workload:
    """The seeded draws: payload text, sizes and client settings."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.pool = bytes(self.rng.choices(ALPHABET, k=1 << 21))

    def value(self) -> bytes | None:
        r = self.rng.random()
        if r < 0.02:
            return None
        size = (self.rng.randrange(0, 100) if r < 0.5 else self.rng.randrange(100, 2000) if r < 0.97
                else self.rng.randrange(2000, 65536))
        at = self.rng.randrange(0, len(self.pool) - size)
        return self.pool[at:at + size]

    def key(self, i: int) -> bytes | None:
        return None if i % 13 == 0 else f"user-{self.rng.randrange(500)}".encode()

    def headers(self, i: int) -> list[tuple[str, bytes | None]] | None:
        return [("trace", f"t{i}".encode()), ("empty", None)] if i % 4 == 0 else None


def create_topics(bootstrap: str) -> dict[str, int]:
    """The topics: one per client and codec, three partitions each (the transactional one two)."""
    topics = {f"rk-{c}": 3 for c in CODECS} | {f"kp-{c}": 3 for c in CODECS} | {TXN_TOPIC: 2}
    _create(bootstrap, {name: (parts, {}) for name, parts in topics.items()})
    return topics


def produce_librdkafka(bootstrap: str, w: Workload, counts: dict[str, int], per_round: int) -> None:
    from confluent_kafka import Producer

    for codec in CODECS:
        conf = {"bootstrap.servers": bootstrap, "compression.type": codec,
                "linger.ms": w.rng.choice((0, 5, 20)), "batch.num.messages": w.rng.choice((10, 200, 10000)),
                "batch.size": w.rng.choice((16384, 1 << 20)), "acks": w.rng.choice(("1", "all")),
                "enable.idempotence": w.rng.random() < 0.5}
        if conf["enable.idempotence"]:
            conf["acks"] = "all"
        producer = Producer(quiet(conf))
        failed: list[str] = []
        topic = f"rk-{codec}"

        def delivered(err, msg, failed=failed) -> None:  # noqa: ANN001 - librdkafka's callback
            if err is not None:
                failed.append(str(err))

        for i in range(per_round):
            while True:
                try:
                    producer.produce(topic, key=w.key(i), value=w.value(), headers=w.headers(i),
                                     on_delivery=delivered)
                    break
                except BufferError:
                    producer.poll(0.05)
            if i % 200 == 199:
                producer.poll(0)
        if producer.flush(60) or failed:
            raise SystemExit(f"librdkafka producer ({codec}): {failed[:3]}")
        counts[topic] = counts.get(topic, 0) + per_round


def produce_kafka_python(bootstrap: str, w: Workload, counts: dict[str, int], per_round: int) -> None:
    from kafka import KafkaProducer

    for codec in CODECS:
        producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec,
                                 linger_ms=w.rng.choice((0, 5, 20)), batch_size=w.rng.choice((16384, 262144)),
                                 acks=w.rng.choice((1, "all")), max_request_size=4 << 20)
        topic = f"kp-{codec}"
        futures = [producer.send(topic, key=w.key(i) or b"k", value=w.value(),
                                 headers=[(k, v or b"") for k, v in w.headers(i) or ()]) for i in range(per_round)]
        producer.flush(60)
        for f in futures:
            f.get(60)
        producer.close(10)
        counts[topic] = counts.get(topic, 0) + per_round


def produce_transactions(bootstrap: str, w: Workload, counts: dict[str, int], round_no: int) -> None:
    from confluent_kafka import Producer

    producer = Producer(quiet({"bootstrap.servers": bootstrap, "transactional.id": f"txn-{round_no % 3}",
                                "linger.ms": 5, "compression.type": w.rng.choice(CODECS)}))
    producer.init_transactions(30)
    for t in range(2):
        producer.begin_transaction()
        n = w.rng.randrange(50, 400)
        for i in range(n):
            producer.produce(TXN_TOPIC, key=w.key(i), value=w.value(), partition=i % 2)
        producer.flush(30)
        if (2 * round_no + t) % 3 == 1:
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)
            counts[TXN_TOPIC] = counts.get(TXN_TOPIC, 0) + n


def consume_librdkafka(bootstrap: str, group: str, protocol: str, topics: list[str], want: int,
                       isolation: str = "read_uncommitted", timeout: float = 120) -> int:
    """A new member of ``group`` reads until it has ``want`` records (its group's earlier rounds
    committed the rest), commits and leaves; returns what it read."""
    from confluent_kafka import Consumer

    conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
            "auto.offset.reset": "earliest", "isolation.level": isolation, "enable.auto.commit": True,
            "auto.commit.interval.ms": 500}
    if protocol == "classic":
        conf["session.timeout.ms"] = 10000
    consumer = Consumer(quiet(conf))
    consumer.subscribe(topics)
    got = 0
    deadline = time.monotonic() + timeout
    try:
        while got < want and time.monotonic() < deadline:
            for msg in consumer.consume(500, 0.5):
                if msg.error() is None:
                    got += 1
        consumer.commit(asynchronous=False) if got else None
    finally:
        consumer.close()
    return got


def consume_kafka_python(bootstrap: str, group: str, topics: list[str], want: int, timeout: float = 120) -> int:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(*topics, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=True, fetch_max_bytes=8 << 20, max_partition_fetch_bytes=4 << 20)
    got = 0
    deadline = time.monotonic() + timeout
    try:
        while got < want and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got += len(records)
        consumer.commit()
    finally:
        consumer.close()
    return got


def one_round(bootstrap: str, w: Workload, round_no: int, produced: dict[str, int], read: dict[str, int],
              per_round: int) -> None:
    produce_librdkafka(bootstrap, w, produced, per_round)
    produce_kafka_python(bootstrap, w, produced, per_round // 4)
    produce_transactions(bootstrap, w, produced, round_no)
    rk = [f"rk-{c}" for c in CODECS]
    kp = [f"kp-{c}" for c in CODECS]
    readers = [
        ("rk-classic", lambda want: consume_librdkafka(bootstrap, "rk-classic", "classic", rk, want), rk),
        ("rk-kip848", lambda want: consume_librdkafka(bootstrap, "rk-kip848", "consumer", kp, want), kp),
        ("kp-classic", lambda want: consume_kafka_python(bootstrap, "kp-classic", rk, want), rk),
        ("rk-committed", lambda want: consume_librdkafka(bootstrap, "rk-committed", "classic", [TXN_TOPIC], want,
                                                           "read_committed"), [TXN_TOPIC]),
    ]
    for group, run, topics in readers:
        want = sum(produced.get(t, 0) for t in topics) - read.get(group, 0)
        read[group] = read.get(group, 0) + run(want)
