"""Real clients against a real Kafka, captured on loopback (tests/broker/loopback.py, traffic.py):
kafkadump's ``capture`` cuts the frames tshark's Kafka dissector cuts, sees the records the producers
sent, and finds nothing wrong but what is wrong in the bytes.

One round of the bench's real traffic (``bench/make_real_pcap.py``), small: librdkafka and
kafka-python producers over every codec, a transactional producer, four consumer groups (classic,
KIP-848, kafka-python, read_committed).  Needs Java and Maven (the broker) and Debian's ``tshark``
package (``dumpcap`` to capture, ``tshark`` to count); skips with the reason otherwise.
"""

from __future__ import annotations

import gc
from collections import Counter

import pytest

from kafkadump.base.findings import Severity
from kafkadump.base.status import Tally
from kafkadump.decoders.protocol.frames import Frame
from kafkadump.reports.capture import CaptureRequest, CaptureTotals, capture_report

pytestmark = pytest.mark.broker

PRODUCE = 0
METADATA = 3


@pytest.fixture(scope="module")
def traffic(tmp_path_factory):
    from broker.harness import Cluster, missing_tools
    from broker.loopback import LoopbackCapture, missing_capture_tools

    reason = missing_tools() or missing_capture_tools()
    if reason:
        pytest.skip(reason)
    from broker.traffic import Workload, create_topics, one_round

    root = tmp_path_factory.mktemp("loopback")
    pcap = root / "traffic.pcap"
    cluster = Cluster(root / "cluster", 1)
    port = cluster.nodes[0].port
    capture = LoopbackCapture(port, pcap)   # before the broker: every connection from its SYN
    produced: dict[str, int] = {}
    read: dict[str, int] = {}
    try:
        try:
            cluster.start()
            create_topics(cluster.bootstrap)
            one_round(cluster.bootstrap, Workload(11), 0, produced, read, 60)
            gc.collect()   # every client closed before the broker stops
        finally:
            cluster.stop()
    finally:
        counts = capture.stop()
    frames: list[Frame] = []
    totals = None
    for item in capture_report(str(pcap), CaptureRequest(ports=[port]), Tally()):
        if isinstance(item, CaptureTotals):
            totals = item
        elif isinstance(item, Frame):
            frames.append(item)
    return {"pcap": str(pcap), "port": port, "produced": produced, "read": read, "dumpcap": counts,
            "frames": frames, "totals": totals}


def test_no_packet_was_dropped(traffic):
    assert traffic["dumpcap"].get("dropped") == 0, traffic["dumpcap"]


def test_frames_are_tsharks_kafka_pdus(traffic):
    from broker.loopback import tshark_pdus

    pdus = tshark_pdus(traffic["pcap"], [traffic["port"]])
    totals = traffic["totals"]
    assert pdus["frames"] > 100
    assert (totals.frames, totals.requests, totals.responses) == (pdus["frames"], pdus["requests"], pdus["responses"])


def test_produce_requests_carry_what_the_producers_sent(traffic):
    sent: Counter[str] = Counter()
    for f in traffic["frames"]:
        if f.api_key == PRODUCE and f.kind == "request":
            for _, ctx, rv in f.records_fields():
                sent[ctx.get("topic", "?")] += rv.record_count
    plain = {t: n for t, n in traffic["produced"].items() if t.startswith(("rk-", "kp-")) and t != "rk-txn"}
    assert plain and {t: sent[t] for t in plain} == plain
    # the transactional topic: the committed records, and those of the aborted transactions too
    assert sent["rk-txn"] >= traffic["produced"].get("rk-txn", 0)


def test_consumers_read_what_was_written(traffic):
    produced, read = traffic["produced"], traffic["read"]
    assert read["rk-classic"] == read["kp-classic"] == sum(n for t, n in produced.items() if t.startswith("rk-")
                                                            and t != "rk-txn")
    assert read["rk-committed"] == produced.get("rk-txn", 0)


def test_the_only_problems_are_librdkafkas_metadata_quirk(traffic):
    """librdkafka writes the null topic array of its all-topics Metadata request (v9+, flexible) as
    a four-byte count whose first byte is the varint: three zero bytes the broker ignores, which
    kafkadump reports as ``frame-trailing-bytes``.  Any other warning or error is a decoder bug or a
    capture loss."""
    problems = [(f, x) for f in traffic["frames"] for x in f.all_findings() if x.severity is not Severity.INFO]
    for f, x in problems:
        assert (x.code.value, f.api_key, f.kind, f.client_id) == ("frame-trailing-bytes", METADATA, "request",
                                                                 "rdkafka"), x
        assert f.body is not None and f.body["topics"] is None and "3 bytes" in x.message
        assert f.api_version is not None and f.api_version >= 9
