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
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))


def make(out: Path, size_mb: float, seed: int, per_round: int) -> dict:
    from broker.harness import Cluster, missing_tools
    from broker.loopback import LoopbackCapture, missing_capture_tools
    from broker.traffic import Workload, create_topics, one_round

    reason = missing_tools() or missing_capture_tools()
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
        capture = LoopbackCapture(port, partial)
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
    capture.log.unlink(missing_ok=True)
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
