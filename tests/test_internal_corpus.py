"""The real internal-topic logs of the shared corpus, read in place, decode completely.

Every ``__consumer_offsets-*``, ``__transaction_state-*`` and
``__cluster_metadata-0`` log and every KRaft snapshot / bootstrap
checkpoint of ``corpus/real/segments`` (history versions included):
no finding, every key and value decoded to its schema.  The record types
are checked against the corpus MANIFEST's own analyzer (an independent
parser: its per-file counts of metadata apiKeys and offsets key versions),
and values read from the data are asserted by name.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter

import pytest
from conftest import need_corpus
from typer.testing import CliRunner

from kafkadump.cli import app
from kafkadump.decoders.batches import Batch
from kafkadump.decoders.batches import iter_batches
from kafkadump.decoders.batches.walk import decode_spanned
from kafkadump.decoders.internal_topics.kinds import kind_from_path
from kafkadump.decoders.internal_topics.record_decoder import decoder_for
from kafkadump.decoders.internal_topics.record_decoder import expand_spans
from kafkadump.decoders.internal_topics.summary import summarize
from kafkadump.render.hexdump import leaf_spans, tiling_errors

runner = CliRunner()


def _files(root):
    return sorted(p for p in root.rglob("*") if p.is_file() and kind_from_path(str(p))
                  and (p.suffix == ".log" or p.name.endswith(".checkpoint")) and p.stat().st_size)


@pytest.fixture(scope="module")
def corpus():
    """{relative path: (kind, [(record, batch, decoded)], [batch-level findings])}, decoded once."""
    root = need_corpus("real/segments")
    out = {}
    for p in _files(root):
        kind = kind_from_path(str(p))
        dec = decoder_for(kind)
        data = p.read_bytes()
        recs, batch_findings = [], []
        for b in iter_batches(data, str(p)):
            batch_findings += b.findings
            if isinstance(b, Batch):
                recs += [(r, b, dec.decode_record(r, b)) for r in b.records or ()]
        out[str(p.relative_to(root))] = (kind, recs, batch_findings)
    return out


def _one(corpus, suffix):
    hits = [k for k in corpus if k.endswith(suffix)]
    assert len(hits) == 1, (suffix, hits)
    return corpus[hits[0]]


# tester-generated logs (MANIFEST caveat 3): their batch framing is the tester's, not a broker's
GENERATED = ("matyama+codecrafters-kafka-rust/",)


def test_every_internal_log_in_the_corpus_decodes_completely(corpus):
    kinds = Counter(kind for kind, _, _ in corpus.values())
    assert kinds["offsets"] >= 50 and kinds["metadata"] >= 25 and kinds["transactions"] >= 1
    total = 0
    for name, (kind, recs, batch_findings) in corpus.items():
        assert recs, name
        if not name.startswith(GENERATED):
            assert [f for f in batch_findings if f.severity.value != "info"] == [], name
        for r, b, d in recs:
            assert d.findings == [], (name, r.offset, d.findings)
            for part in (d.key, d.value):
                if part is not None:
                    assert part.data is not None and not part.partial and part.schema, (name, r.offset, part)
            if kind != "metadata":
                assert d.key is not None and (d.value is not None or d.tombstone)
        total += len(recs)
    assert total > 100_000


def _manifest(root):
    """{relative path: {"apiKeys": Counter, "keyVersions": Counter}} from the MANIFEST's analyzer column."""
    text = (root.parent / "MANIFEST.md").read_text(encoding="utf-8")
    out = {}
    for m in re.finditer(r"^\| corpus/segments/(\S+) \|.*?\| (segment: [^|]*) \|$", text, re.M):
        path, desc = m.group(1), m.group(2)
        e = {}
        a = re.search(r"metadata record apiKeys=(\{[^}]*\})", desc)
        if a:
            e["apiKeys"] = Counter(ast.literal_eval(a.group(1)))
        k = re.search(r"offsets-topic key versions=(\{[^}]*\})", desc)
        if k:
            e["keyVersions"] = Counter(ast.literal_eval(k.group(1)))
        n = re.search(r"records=(\d+)", desc)
        if n:
            e["records"] = int(n.group(1))
        out[path] = e
    return out


def test_record_types_agree_with_the_manifest_analyzer(corpus):
    root = need_corpus("real/segments")
    manifest = _manifest(root)
    checked = 0
    for name, (kind, recs, _) in corpus.items():
        m = manifest.get(name)
        if not m:
            continue
        if "records" in m:
            assert len(recs) == m["records"], name
        if kind == "metadata" and "apiKeys" in m:
            got = Counter(d.value.api_key for _, _, d in recs if d.control is None)
            assert got == m["apiKeys"], name
            checked += 1
        if kind == "offsets" and "keyVersions" in m:
            got = Counter(d.key.version for _, _, d in recs if d.control is None)
            assert got == m["keyVersions"], name
            checked += 1
    assert checked >= 60


def test_kafka_0_10_consumer_offsets_in_magic_1(corpus):
    kind, recs, _ = _one(corpus, "xpxwo100+bullShit/tmp/kafka-logs/__consumer_offsets-40/00000000000000000000.log")
    assert {b.magic for _, b, _ in recs} == {1}
    first = recs[0][2]
    assert (first.key.schema, first.key.data, first.value.schema, first.value.version) == \
        ("GroupMetadataKey", {"group": "GroupA"}, "GroupMetadataValue", 1)
    member = first.value.data["members"][0]
    assert (member["clientId"], member["clientHost"]) == ("consumer-1", "/192.168.2.20")
    assert member["subscription"].data["topics"] == ["foo"]
    assert member["assignment"].data["assignedPartitions"] == [{"topic": "foo", "partitions": [0]}]
    s = summarize(kind, (d for _, _, d in recs))
    assert s["records"] == 860 and s["recordTypes"] == {"GroupMetadataValue": 5, "OffsetCommitValue": 855}
    g = s["groups"]["GroupA"]
    assert (g["type"], g["protocol"], g["generation"]) == ("classic", "range", 5)
    assert g["offsets"]["foo"]["0"]["offset"] == 204
    assert g["offsets"]["foo"]["0"]["expireTimestamp"] - g["offsets"]["foo"]["0"]["commitTimestamp"] == 86_400_000


def test_consumer_offsets_tombstone_and_commit(corpus):
    kind, recs, _ = _one(corpus, "DonaldY+kafka-2.7.1/kafka-logs/__consumer_offsets-39/00000000000000000000.log")
    by_offset = {r.offset: d for r, _, d in recs}
    t = by_offset[4]
    assert t.tombstone and t.key.data == {"group": "console-consumer-52588"}
    c = by_offset[16]
    assert c.key.data == {"group": "console-consumer-65070", "topic": "test_topic_0603", "partition": 0}
    assert (c.value.version, c.value.data["offset"], c.value.data["leaderEpoch"]) == (3, 9, -1)
    s = summarize(kind, (d for _, _, d in recs))
    assert s["groups"]["console-consumer-52588"]["deleted"] is True
    assert s["groups"]["console-consumer-65070"]["generation"] == 6


def test_transaction_state_walks_through_a_commit(corpus):
    kind, recs, _ = _one(corpus, "__transaction_state-44/00000000000000000000.log")
    assert kind == "transactions"
    states = [(d.key.data["transactionalId"], d.value.data["transactionStatus"]) for _, _, d in recs]
    assert states == [("default_", 0), ("default_", 1), ("default_", 2), ("default_", 4)]
    assert recs[1][2].value.data["transactionPartitions"] == [
        {"topic": "_confluent-ksql-default__command_topic", "partitionIds": [0]}]
    s = summarize(kind, (d for _, _, d in recs))
    assert s["open"] == [] and s["transactionalIds"]["default_"]["state"] == "CompleteCommit"
    assert s["transactionalIds"]["default_"]["timeoutMs"] == 60000


def test_cluster_metadata_log_topics_brokers_features(corpus):
    kind, recs, _ = _one(corpus, "Niloufar1171+LDI-POC/__cluster_metadata-0/00000000000000000000.log")
    s = summarize(kind, (d for _, _, d in recs))
    assert s["topicsCreated"] == ["__consumer_offsets", "batch2.work.notification.SHR_PROD.persistence",
                                  "subscription.matching.SHR_PROD.persistence", "TestTopicPatient",
                                  "Retry.TestTopicPatient"]
    offsets_topic = next(t for t in s["topics"].values() if t["name"] == "__consumer_offsets")
    assert len(offsets_topic["partitions"]) == 50
    assert s["brokers"]["1"]["endpoints"] == ["PLAINTEXT://kafka:9092"]
    assert s["features"] == {"metadata.version": 19}
    assert s["leaderChanges"] == [{"recordOffset": 0, "leaderId": 1, "voters": [1]}]
    assert s["configs"]["TOPIC:__consumer_offsets"]["cleanup.policy"] == "compact"


def test_kraft_snapshot_and_bootstrap_checkpoints(corpus):
    kind, recs, _ = _one(corpus, "kafka-data/__cluster_metadata-0/00000000000000007364-0000000001.checkpoint")
    assert (recs[0][2].control, recs[-1][2].control) == ("SNAPSHOT_HEADER", "SNAPSHOT_FOOTER")
    s = summarize(kind, (d for _, _, d in recs))
    assert s["snapshot"]["header"]["lastContainedLogTimestamp"] == 1728565330138
    assert sorted(t["name"] for t in s["topics"].values()) == [
        "__consumer_offsets", "__transaction_state", "_confluent-ksql-default__command_topic", "_schemas",
        "default_ksql_processing_log", "docker-connect-configs", "docker-connect-offsets",
        "docker-connect-status"]
    assert sum(len(t["partitions"]) for t in s["topics"].values()) == 134
    kind, recs, _ = _one(corpus, "MashaKosher+Internship/kafka/data/bootstrap.checkpoint")
    assert summarize(kind, (d for _, _, d in recs))["features"] == {
        "metadata.version": 25, "group.version": 1, "transaction.version": 2}


def test_hexdump_spans_tile_on_corpus_batches(corpus):
    root = need_corpus("real/segments")
    n = 0
    for name, (kind, recs, _) in corpus.items():
        if "/_history/" in name or (root / name).stat().st_size > 200_000:
            continue
        data = (root / name).read_bytes()
        for b in iter_batches(data, name):
            decoded, spans = decode_spanned(data, b)
            new, findings = expand_spans(kind, decoded, spans)
            assert findings == []
            leaves = leaf_spans(new, expand_records=True)
            assert not tiling_errors(leaves, b.position, b.position + b.size), (name, b.position)
            n += 1
    assert n > 500


def test_cli_records_json_on_a_corpus_log():
    p = need_corpus("real/segments/ItumelengMogase+Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data/"
                    "__transaction_state-44/00000000000000000000.log")
    r = runner.invoke(app, ["records", "--json", str(p)])
    assert r.exit_code == 0
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["value"]["names"]["transactionStatus"] for x in lines] == [
        "Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]
    r = runner.invoke(app, ["records", str(p)])
    assert "transaction id=default_ state=Ongoing producerId=0 epoch=0 timeout=60000ms " \
           "partitions=_confluent-ksql-default__command_topic:0" in r.stdout


def test_triage_reports_internal_topic_contents():
    """triage's per-segment summary carries the decoded internal-topic state."""
    from kafkadump.reports.scan import scan_file

    root = need_corpus("real/segments/ArthurArutunyan04+Backend_labs/kafka-data/__consumer_offsets-19")
    scan = scan_file(str(root / "00000000000000000000.log"))
    internal = scan.summary["internal"]
    assert internal["kind"] == "offsets" and internal["records"] == 7
    assert internal["recordTypes"] == {"GroupMetadataValue": 1, "OffsetCommitValue": 6}
    group = internal["groups"]["universe-labs-oms-consumer"]
    assert group["protocol"] == "range" and group["generation"] == 9
    assert group["members"][0]["subscribedTopics"] == ["oms_order_status_changed"]
