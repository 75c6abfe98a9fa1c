#!/usr/bin/env python3
"""A pcap of real Kafka traffic: real clients against a real broker, captured on loopback.

Run:  .venv/bin/python bench/make_real_pcap.py [--size-mb 120] [--out bench/out/real.pcap] [--seed 7]

Starts one KRaft node of the pinned Apache Kafka (tests/broker/harness.py: Java and Maven needed),
starts ``dumpcap`` on the loopback interface with a capture filter on the broker's port *before* the
broker (so every connection is captured from its SYN), then runs rounds of real clients until the
capture holds ``--size-mb`` MB:

* librdkafka (confluent-kafka) producers, one per codec (none, gzip, snappy, lz4, zstd), their
  linger, batch size, acks and idempotence drawn per round; keys, null keys, null values, headers,
  values from a few bytes to 64 KB;
* kafka-python producers, one per codec, their batch size and linger drawn per round;
* a librdkafka transactional producer: two transactions a round, every third one aborted;
* consumer groups: librdkafka of the classic protocol (the librdkafka topics), librdkafka of the
  consumer protocol (KIP-848; the kafka-python topics), kafka-python of the classic protocol (the
  librdkafka topics again) and a read_committed librdkafka reader of the transactional topic; each
  a new consumer every round (joins, syncs, heartbeats, commits, leaves), reading what was written.

Then every client is closed, the broker stopped (SIGTERM, by its PID: it closes its connections)
and dumpcap stopped (SIGINT, by its PID).  The workload is drawn from ``--seed``; the packets'
timing is the machine's.  Written: the pcap (classic pcap, loopback's link type) and ``OUT.json``
beside it: the broker port (``kafka_ports``, read by ``capture_bench.py``), what each client sent
and read, and dumpcap's own count of captured and dropped packets.  Never commit the pcap.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

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


class Capture:
    """dumpcap on loopback, filtered on one TCP port; stopped by its PID."""

    def __init__(self, port: int, out: Path):
        exe = shutil.which("dumpcap")
        if exe is None:
            raise SystemExit("dumpcap is not on PATH (Debian: apt-get install tshark)")
        self.err_path = out.with_suffix(out.suffix + ".dumpcap.log")
        err = open(self.err_path, "wb")
        self.proc = subprocess.Popen([exe, "-i", "lo", "-f", f"tcp port {port}", "-P", "-B", "64", "-w", str(out)],
                                     stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        err.close()
        deadline = time.monotonic() + 30
        while b"Capturing on" not in self.err_path.read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"dumpcap did not start: {self.err_path.read_text(errors='replace')}")
            time.sleep(0.1)

    def stop(self) -> dict:
        """SIGINT by PID, then dumpcap's counts of captured and dropped packets."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        text = self.err_path.read_text(errors="replace")
        stats: dict = {"log": text.strip().splitlines()[-3:]}
        m = re.search(r"Packets captured: (\d+)", text)
        if m:
            stats["captured"] = int(m.group(1))
        m = re.search(r"received/dropped on interface '[^']*': (\d+)/(\d+)", text)
        if m:
            stats["received"], stats["dropped"] = int(m.group(1)), int(m.group(2))
        return stats


def _quiet(config: dict) -> dict:
    from broker.harness import quiet

    return quiet(config)


def create_topics(bootstrap: str) -> dict[str, int]:
    """The topics: one per client and codec, three partitions each (the transactional one two)."""
    from broker.incident import create_topics as create

    topics = {f"rk-{c}": 3 for c in CODECS} | {f"kp-{c}": 3 for c in CODECS} | {TXN_TOPIC: 2}
    create(bootstrap, {name: (parts, {}) for name, parts in topics.items()})
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
        producer = Producer(_quiet(conf))
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

    producer = Producer(_quiet({"bootstrap.servers": bootstrap, "transactional.id": f"txn-{round_no % 3}",
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
    consumer = Consumer(_quiet(conf))
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


def make(out: Path, size_mb: float, seed: int, per_round: int) -> dict:
    from broker.harness import Cluster, missing_tools

    reason = missing_tools()
    if reason:
        raise SystemExit(reason)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    w = Workload(seed)
    produced: dict[str, int] = {}
    read: dict[str, int] = {}
    rounds = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kd-real-pcap-") as root:
        cluster = Cluster(Path(root), 1)
        port = cluster.nodes[0].port
        capture = Capture(port, partial)
        try:
            try:
                cluster.start()
                create_topics(cluster.bootstrap)
                while partial.stat().st_size < size_mb * 1e6:
                    one_round(cluster.bootstrap, w, rounds, produced, read, per_round)
                    rounds += 1
                    print(f"round {rounds}: {partial.stat().st_size / 1e6:.1f} MB", file=sys.stderr, flush=True)
                gc.collect()  # every client's handle gone before the broker stops
                time.sleep(1)
            finally:
                cluster.stop()
            time.sleep(1)
        finally:
            stats = capture.stop()
    partial.replace(out)
    capture.err_path.unlink(missing_ok=True)
    info = {"kafka_ports": [port], "seed": seed, "size_mb": size_mb, "per_round": per_round, "rounds": rounds,
            "bytes": out.stat().st_size, "produced": produced, "read": read, "dumpcap": stats,
            "seconds": round(time.monotonic() - started, 1)}
    Path(str(out) + ".json").write_text(json.dumps(info, indent=1) + "\n")
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mb", type=float, default=120, help="stop after the round that passes this size (MB)")
    ap.add_argument("--out", default=str(HERE / "out" / "real.pcap"))
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--per-round", type=int, default=600, help="records per librdkafka producer per round")
    args = ap.parse_args(argv)
    info = make(Path(args.out).resolve(), args.size_mb, args.seed, args.per_round)
    print(json.dumps(info, indent=1))
    dropped = info["dumpcap"].get("dropped")
    if dropped:
        print(f"warning: dumpcap dropped {dropped} packets: the capture has holes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
