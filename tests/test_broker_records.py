"""Every record the clients had acknowledged, read back by kafkadump from the log dir the broker wrote.

The oracle is the clients' own delivery reports (librdkafka's and kafka-python's: topic, partition,
offset, key, value, headers, timestamp) on a real Kafka (tests/broker/incident.py)."""

import json

import pytest
from broker.readback import as_bytes, kafkadump

pytestmark = pytest.mark.broker


@pytest.fixture(scope="module")
def read_back(incident):
    done = kafkadump("records", "--json", str(incident.log_dir))
    assert done.returncode in (0, 1), done.stderr
    records = {}
    for line in done.stdout.splitlines():
        obj = json.loads(line)
        if obj["type"] == "record":
            records[(obj["topic"], obj["partition"], obj["offset"])] = obj
    return records


def test_every_acknowledged_record_is_found_exactly(incident, read_back):
    assert len(incident.acked) > 3000
    missing, different = [], []
    for ack in incident.acked:
        got = read_back.get((ack.topic, ack.partition, ack.offset))
        if got is None:
            missing.append(ack)
            continue
        headers = [(h["key"], as_bytes(h["value"])) for h in got["headers"]]
        seen = (as_bytes(got["key"]), as_bytes(got["value"]), headers)
        if seen != (ack.key, ack.value, list(ack.headers)) or (ack.timestamp is not None
                                                                and got["timestamp"] != ack.timestamp):
            different.append((ack, got))
    assert not missing, missing[:5]
    assert not different, different[:3]


def test_every_codec_and_client_wrote_what_kafkadump_reads(incident):
    done = kafkadump("batches", "--json", str(incident.log_dir))
    codecs = {json.loads(line).get("compression") for line in done.stdout.splitlines()}
    assert {"none", "gzip", "snappy", "lz4", "zstd"} <= codecs, codecs


def test_aborted_records_are_in_the_log_and_marked_aborted_by_txn(incident, read_back):
    """Aborted records stay in the log (a read_committed consumer skips them by the abort markers);
    kafkadump's ``txn`` names each aborted transaction's producer and offset range."""
    assert incident.aborted
    for ack in incident.aborted:
        got = read_back[(ack.topic, ack.partition, ack.offset)]
        assert as_bytes(got["value"]) == ack.value
    done = kafkadump("txn", "--json", str(incident.log_dir))
    aborted_ranges = []
    for line in done.stdout.splitlines():
        obj = json.loads(line)
        if obj.get("state") == "aborted":
            aborted_ranges.append(obj)
    assert aborted_ranges, done.stdout[:2000]


def test_records_survive_only_what_compaction_and_retention_left(incident, read_back):
    """The compacted topic keeps the latest value of every key (a tombstone while within the delete
    horizon); retention removed whole segments from the start: every offset kafkadump reads there is
    one the producer was acknowledged at, with its bytes."""
    for topic, writes in (("profiles", incident.facts["compacted_writes"]), ("clicks", incident.facts["retained_writes"])):
        by_offset = {w.offset: w for w in writes}
        offsets = sorted(o for (t, p, o) in read_back if t == topic)
        assert offsets and len(offsets) < len(writes)
        for offset in offsets:
            got = read_back[(topic, 0, offset)]
            assert (as_bytes(got["key"]), as_bytes(got["value"])) == (by_offset[offset].key, by_offset[offset].value)
    latest = {}
    for w in incident.facts["compacted_writes"]:
        latest[w.key] = w
    kept = {as_bytes(read_back[k]["key"]): k[2] for k in read_back if k[0] == "profiles"}
    for key, w in latest.items():
        if w.value is not None:
            assert kept.get(key) == w.offset, key


def test_a_read_committed_consumer_gets_what_txn_says_is_committed(incident, read_back):
    """Kafka's read_committed consumer is the oracle: it gets every data record of ``payments`` but
    those of aborted transactions, and stops at the last stable offset of the transaction left open.
    kafkadump's records, less the ranges ``txn`` calls aborted and past its last stable offset, are
    exactly those."""
    done = kafkadump("txn", "--json", str(incident.log_dir))
    aborted, stable = set(), {}
    for line in done.stdout.splitlines():
        obj = json.loads(line)
        for part in obj.get("partitions", []) if obj["type"] == "transaction" else []:
            if part["topic"] != "payments":
                continue
            if part["state"] == "aborted":
                aborted.update((part["partition"], o) for o in range(part["firstOffset"], part["lastOffset"] + 1))
            if part["lastStableOffset"] is not None:
                stable[part["partition"]] = part["lastStableOffset"]
    committed = {(p, o) for (t, p, o), rec in read_back.items()
                 if t == "payments" and rec["control"] is None and (p, o) not in aborted and o < stable.get(p, 1 << 62)}
    assert stable == {1: incident.facts["read_committed_end"][1]}
    assert committed == incident.facts["read_committed"]
    assert len(committed) == 2 * 4 * 10


def test_a_recreated_topic_has_the_topic_ids_kafka_gave(incident):
    done = kafkadump("metadata", "--json", str(incident.log_dir / "__cluster_metadata-0"))
    changes = [json.loads(line) for line in done.stdout.splitlines()]
    phoenix = [(c["change"], c["topicId"], c["previousTopicId"]) for c in changes
               if c["type"] == "topic-change" and c["topic"] == "phoenix"]
    first, second = incident.facts["phoenix_ids"]
    assert phoenix == [("created", first, None), ("deleted", first, None), ("recreated", second, first)]
    assert done.returncode == 1  # a re-created topic is a warning
