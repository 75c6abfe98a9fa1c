"""A broker killed (SIGKILL) while several producers write, its log dir damaged as a power loss leaves
it, and Kafka's own log recovery run on copies as the oracle of where the valid data ends.

``build(root)`` returns a ``Crash``:

- ``killed``: the log dir the broker left (SIGKILL keeps the page cache, so every acknowledged record
  is on disk: ``acked`` holds the producers' delivery reports);
- ``copies``: named damaged copies of it, each kept twice: ``before`` (never touched again, what
  kafkadump reads) and a twin that a broker (same node id and cluster id, so it runs its log recovery
  on an unclean shutdown) recovered and stopped cleanly (``after``):

  * ``killed``: the log dir as the crash left it;
  * ``torn``: partition 0's last segment cut inside a batch, partition 1's tail zeroed and padded with
    zeros (a preallocated block the data never reached), partition 2's with random bytes appended (the
    last segment holding three batches or more: Kafka deletes the short ones a roll left after it),
    partition 3's middle segment with one byte flipped inside a batch (Kafka truncates there and
    deletes every later segment);
  * ``live``: a copy taken with ``shutil.copytree`` while the broker wrote (files copied at different
    moments: a segment torn, indexes ahead or behind).

Reproducible from ``SEED`` (payloads, the cut points, the garbage); the broker's timing decides only
the segment boundaries.
"""

from __future__ import annotations

import random
import re
import shutil
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .harness import Cluster, quiet

SEED = 2624
TOPIC = "crash"
PARTITIONS = 4
CODECS = ("none", "lz4", "zstd", "gzip")
TOPIC_CONFIG = {"segment.bytes": str(1 << 20), "segment.ms": "700", "index.interval.bytes": "2048"}
ACKED_BEFORE_COPY = 4000
ACKED_BEFORE_KILL = 10000
BATCH_HEADER = 61
DAMAGE = ("cut", "zeroed", "garbage", "flipped")  # what the torn copy's partitions 0..3 suffer


@dataclass
class Acked:
    partition: int
    offset: int
    key: bytes | None
    value: bytes


@dataclass
class Damage:
    """What was done to one partition's last segment of a copy."""

    partition: int
    segment: str
    kind: str            # one of DAMAGE
    size_before: int     # the segment's size as the crash left it
    valid_end: int       # where its last whole batch ends (the byte Kafka keeps up to)
    size_after: int      # the damaged file's size


@dataclass
class Copy:
    name: str
    before: Path                     # a log dir, never touched after the damage
    after: Path                      # the same, recovered by Kafka and stopped cleanly
    sizes_before: dict[str, int]     # "topic-p/segment.log" -> size
    sizes_after: dict[str, int]
    server_log: str                  # the recovering broker's log
    damage: list[Damage] = field(default_factory=list)


@dataclass
class Crash:
    root: Path
    killed: Path
    acked: list[Acked]
    copies: dict[str, Copy]
    errors: list[str]


# ---- writing ---------------------------------------------------------------------------------------


class Writer(threading.Thread):
    """One producer (its own codec) writing every partition until told to stop."""

    def __init__(self, bootstrap: str, index: int, stop: threading.Event):
        super().__init__(daemon=True)
        self.index, self.stop_event = index, stop
        self.rng = random.Random(SEED * 31 + index)
        self.acked: list[Acked] = []
        self.errors: list[str] = []
        self.config = quiet({"bootstrap.servers": bootstrap, "compression.type": CODECS[index % len(CODECS)],
                             "acks": "1", "linger.ms": 5, "enable.idempotence": False,
                             "batch.num.messages": 200, "message.timeout.ms": 4000,
                             "queue.buffering.max.messages": 2000})

    def delivered(self, err, msg) -> None:  # noqa: ANN001 - librdkafka's callback
        if err is None:
            self.acked.append(Acked(msg.partition(), msg.offset(), msg.key(), msg.value()))
        else:
            self.errors.append(str(err))

    def message(self, seq: int) -> tuple[bytes | None, bytes]:
        key = None if seq % 13 == 0 else f"k{self.index}-{self.rng.randrange(500)}".encode()
        body = bytes(self.rng.choice(b"abcdefghij0123456789 ") for _ in range(self.rng.randrange(20, 400)))
        return key, f"p{self.index}-{seq}:".encode() + body

    def run(self) -> None:
        from confluent_kafka import Producer

        producer = Producer(self.config)
        seq = 0
        while not self.stop_event.is_set():
            key, value = self.message(seq)
            try:
                producer.produce(TOPIC, key=key, value=value, partition=seq % PARTITIONS, on_delivery=self.delivered)
                seq += 1
            except BufferError:
                producer.poll(0.05)
            producer.poll(0)
        producer.poll(0.5)
        producer.purge()
        producer.flush(1)


def acked_count(writers: list[Writer]) -> int:
    return sum(len(w.acked) for w in writers)


def wait_acked(writers: list[Writer], count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while acked_count(writers) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {acked_count(writers)} of {count} records acknowledged; "
                               f"errors {[e for w in writers for e in w.errors][:3]}")
        time.sleep(0.05)


def wait_segments(log_dir: Path, count: int, timeout: float = 60) -> None:
    """Until every partition of the topic has ``count`` segments (they roll by time, ``segment.ms``:
    how many a number of acks makes depends on the machine's speed, so the test waits for the rolls)."""
    deadline = time.monotonic() + timeout
    while min(len(list((log_dir / f"{TOPIC}-{p}").glob("*.log"))) for p in range(PARTITIONS)) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the partitions of {TOPIC} did not reach {count} segments in {timeout} s")
        time.sleep(0.05)


def create_topic(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(quiet({"bootstrap.servers": bootstrap}))
    for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1, config=TOPIC_CONFIG)]).values():
        future.result(30)


def copy_live(src: Path, dst: Path) -> None:
    """``copytree`` of a log dir a broker is writing: a file that vanishes meanwhile is left out."""
    try:
        shutil.copytree(src, dst)
    except shutil.Error as exc:  # a segment or index deleted or renamed during the copy
        if not all("No such file" in str(e) for e in exc.args[0]):
            raise


def crash(cluster: Cluster, root: Path) -> tuple[list[Acked], list[str]]:
    """Several producers write; a live copy of the log dir is taken; the broker is SIGKILLed while the
    writes go on; then the producers stop. Returns every delivery report that said "written"."""
    node = cluster.nodes[0]
    create_topic(cluster.bootstrap)
    stop = threading.Event()
    writers = [Writer(cluster.bootstrap, i, stop) for i in range(len(CODECS))]
    for w in writers:
        w.start()
    try:
        wait_acked(writers, ACKED_BEFORE_COPY)
        wait_segments(node.log_dir, 3)
        copy_live(node.log_dir, root / "live-copy" / "data")
        wait_acked(writers, ACKED_BEFORE_KILL)
        wait_segments(node.log_dir, 5)
        cluster.stop_node(node, kill=True)
    finally:
        stop.set()
        for w in writers:
            w.join(30)
    acked = sorted((a for w in writers for a in w.acked), key=lambda a: (a.partition, a.offset))
    return acked, [e for w in writers for e in w.errors]


# ---- damage ----------------------------------------------------------------------------------------


def batch_ends(data: bytes) -> list[int]:
    """The end of every whole batch from the start of a segment (its length fields walked)."""
    ends, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        if length < BATCH_HEADER - 12 or pos + 12 + length > len(data):
            break
        pos += 12 + length
        ends.append(pos)
    return ends


def last_segment(partition_dir: Path) -> Path:
    """The last segment holding a few batches (the active one may be empty, just rolled: Kafka's
    recovery then deletes it with the rest after the damage)."""
    logs = sorted(partition_dir.glob("*.log"), key=lambda p: int(p.stem))
    return next(p for p in reversed(logs) if len(batch_ends(p.read_bytes())) >= 3)


def middle_segment(partition_dir: Path) -> Path:
    logs = sorted(partition_dir.glob("*.log"), key=lambda p: int(p.stem))
    return logs[len(logs) // 2]


def damage(log_dir: Path, partition: int, kind: str, rng: random.Random) -> Damage:
    """Damage one partition of ``log_dir`` (a copy) as a power loss would: its last segment cut, zeroed
    or followed by garbage; or a byte flipped inside a batch of a segment in the middle ("flipped")."""
    pick = middle_segment if kind == "flipped" else last_segment
    seg = pick(log_dir / f"{TOPIC}-{partition}")
    data = seg.read_bytes()
    ends = [0, *batch_ends(data)]
    if len(ends) < 4:
        raise RuntimeError(f"{seg} holds {len(ends) - 1} batches: nothing to damage")
    if kind == "cut":
        i = rng.randrange(max(1, len(ends) - 6), len(ends) - 1)
        start, stop = ends[i], ends[i + 1]
        new = data[:rng.randrange(start + 12, stop)]  # past the length field (the offset's first bytes are zeros)
        valid = start
    elif kind == "zeroed":
        i = rng.randrange(max(1, len(ends) - 6), len(ends) - 1)
        start, stop = ends[i], ends[i + 1]
        zero_from = rng.randrange(start + BATCH_HEADER, stop)  # the header whole: the records zeroed
        padded = (len(data) // 4096 + 1) * 4096
        new = data[:zero_from] + bytes(padded - zero_from)
        valid = start
    elif kind == "flipped":  # a batch with whole ones after it
        i = rng.randrange(1, len(ends) - 2)
        start, stop = ends[i], ends[i + 1]
        at = rng.randrange(start + BATCH_HEADER, stop)
        new = data[:at] + bytes([data[at] ^ 0x5A]) + data[at + 1:]
        valid = start
    else:  # the same garbage whatever the layout: a length field past the end (750520598), magic 137
        garbage = random.Random(SEED + 1)
        new = data + garbage.randbytes(garbage.randrange(100, 3000))
        valid = len(data)
    seg.write_bytes(new)
    return Damage(partition, f"{TOPIC}-{partition}/{seg.name}", kind, len(data), valid, len(new))


# ---- recovery --------------------------------------------------------------------------------------


def segment_sizes(log_dir: Path) -> dict[str, int]:
    return {f"{p.parent.name}/{p.name}": p.stat().st_size for p in log_dir.glob(f"{TOPIC}-*/*.log")}


def recover(home: Path, cluster_id: str) -> Cluster:
    """Start a broker on a copied node home (its meta.properties names the node and cluster): the
    shutdown was unclean, so it runs log recovery."""
    cluster = Cluster(home.parent, 1)
    cluster.cluster_id = cluster_id
    cluster.start_node(cluster.nodes[0])
    return cluster


def wait_loaded(cluster: Cluster, timeout: float = 90) -> None:
    """Until the broker serves and its server log says the logs are loaded."""
    cluster.wait_ready(timeout=timeout)
    node, deadline = cluster.nodes[0], time.monotonic() + timeout
    while not re.search(r"Loaded \d+ logs", node.server_log.read_text(errors="replace")):
        if time.monotonic() > deadline or not node.running():
            raise RuntimeError(f"logs not loaded: {cluster.tail(node)}")
        time.sleep(0.2)


def prepare(root: Path, name: str, source_home: Path, log_dir: Path | None = None) -> Path:
    """``root/name/node1``: a copy of the crashed node's home (its log dir from ``log_dir`` if given)."""
    home = root / name / "node1"
    shutil.copytree(source_home, home, ignore=shutil.ignore_patterns("data", "*.log", "pid"))
    shutil.copytree(log_dir or source_home / "data", home / "data")
    return home


def recover_all(root: Path, homes: dict[str, Path], cluster_id: str) -> dict[str, Copy]:
    """Keep each home's log dir as ``before``; recover the home with a broker, stopped cleanly."""
    copies: dict[str, Copy] = {}
    clusters: dict[str, Cluster] = {}
    try:
        for name, home in homes.items():
            before = root / name / "before"
            shutil.copytree(home / "data", before)
            copies[name] = Copy(name, before, home / "data", segment_sizes(before), {}, "")
            clusters[name] = recover(home, cluster_id)
        for name, cluster in clusters.items():
            wait_loaded(cluster)
            cluster.stop()
            copies[name].sizes_after = segment_sizes(copies[name].after)
            copies[name].server_log = cluster.nodes[0].server_log.read_text(errors="replace")
    finally:
        for cluster in clusters.values():
            cluster.stop(kill=True)
    return copies


def build(root: Path) -> Crash:
    root = Path(root)
    cluster = Cluster(root / "origin", 1)
    with cluster:
        cluster.start()
        acked, errors = crash(cluster, root)
    node = cluster.nodes[0]
    rng = random.Random(SEED)
    homes = {"killed": prepare(root, "killed", node.home),
             "torn": prepare(root, "torn", node.home),
             "live": prepare(root, "live", node.home, root / "live-copy" / "data")}
    harm = [damage(homes["torn"] / "data", p, kind, rng) for p, kind in enumerate(DAMAGE)]
    copies = recover_all(root, homes, cluster.cluster_id)
    copies["torn"].damage = harm
    return Crash(root, node.log_dir, acked, copies, errors)


if __name__ == "__main__":
    import sys

    t0 = time.monotonic()
    result = build(Path(sys.argv[1]))
    print(f"{len(result.acked)} acked, {len(result.errors)} errors, {time.monotonic() - t0:.1f} s")
    for c in result.copies.values():
        changed = {k: (v, c.sizes_after.get(k)) for k, v in c.sizes_before.items() if c.sizes_after.get(k) != v}
        print(c.name, changed, c.damage)
