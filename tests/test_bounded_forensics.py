"""The forensic commands' memory (issue 26, class 3): ``metadata`` over many partitions, ``triage`` over
many tiny segments.  Per-partition state is compact, and the reports are written an object at a time:
memory measured by tracemalloc in process (bytes per partition, the peak while writing), peak RSS from
the kernel at a medium size, work counted (not timed) doubling with the input."""

from __future__ import annotations

import io
import json
import tracemalloc

import forensics_scaled as fs
from measured import RSS_LIMIT_MB, kd

from kafkadump.decoders.batches import Options
from kafkadump.decoders.batches.work import WORK
from kafkadump.reports.triage import Triage
from kafkadump.reports.metadata import MetadataSummary
from kafkadump.reports.metadata import metadata_report
from kafkadump.render import metadata_views
from kafkadump.base.status import Tally


def doubles(small: int, large: int) -> bool:
    return small > 0 and 1.6 <= large / small <= 2.5


class _Sink(io.TextIOBase):
    """Counts what is written and keeps nothing."""

    def __init__(self) -> None:
        self.chars = 0

    def write(self, s: str) -> int:
        self.chars += len(s)
        return len(s)


def _replay(path: str, **kw) -> list:
    return list(metadata_report(path, Options(), Tally(), **kw))


def _work(fn, *args, **kw) -> int:
    WORK.reset()
    fn(*args, **kw)
    return WORK.total()


# --- metadata -----------------------------------------------------------------------------------------

def test_metadata_work_doubles_with_the_partitions(tmp_path):
    small, large = fs.metadata_log(tmp_path / "a", 2000), fs.metadata_log(tmp_path / "b", 4000)
    assert doubles(_work(_replay, small), _work(_replay, large))
    (summary,) = [x for x in _replay(large) if isinstance(x, MetadataSummary)]
    assert (summary.partitions, summary.topics, summary.counts.unclean_elections) == (4000, 40, 0)


def test_metadata_partition_state_is_compact(tmp_path):
    """The replay keeps a partition in a slotted state, its topic id and broker id lists shared: a few
    hundred bytes, not a dict, a topic id string and four lists each."""
    from kafkadump.decoders.internal_topics.metadata_replay import MetadataReplay

    _replay(fs.metadata_log(tmp_path / "warm", 100))     # the decoder's own caches, made once
    path = fs.metadata_log(tmp_path, 5000)
    kept = []
    real_init = MetadataReplay.__init__

    def init(self):
        real_init(self)
        kept.append(self)

    MetadataReplay.__init__ = init   # type: ignore[method-assign]
    try:
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for _ in metadata_report(path, Options(), Tally()):
            pass
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        MetadataReplay.__init__ = real_init   # type: ignore[method-assign]
    (replay,) = kept
    states = list(replay.partitions.values())
    assert len(states) == 5000 and not hasattr(states[0], "__dict__")
    assert states[0].isr is states[3].isr and states[0].topic_id is states[1].topic_id
    assert held / 5000 < 300, held / 5000


def test_metadata_state_at_a_point_is_written_a_partition_at_a_time(tmp_path):
    path = fs.metadata_log(tmp_path, 5000)
    items = _replay(path, at="999999")
    state = items[-2]
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        sink = _Sink()
        metadata_views.write_metadata_json([state], sink)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert sink.chars > 750_000            # 5,000 partitions' objects were written ...
    assert peak < 300_000, peak            # ... never held together (about 6 MB before)
    out = io.StringIO()
    metadata_views.write_metadata_json([state], out)
    o = json.loads(out.getvalue())
    assert [len(t["partitions"]) for t in o["topics"]] == [100] * 50
    assert o["topics"][0]["partitions"][1] == {
        "partition": 1, "leader": 1, "isr": [0, 1, 2], "elr": [], "replicas": [0, 1, 2], "leaderEpoch": 0,
        "partitionEpoch": 0, "leaderRecoveryState": "RECOVERED", "lastKnownElr": []}
    text = io.StringIO()
    metadata_views.write_metadata_table([state], text)
    lines = text.getvalue().splitlines()
    assert len(lines) == 1 + 50 + 5000 + 3 + 1 and lines[1].endswith("100 partitions")


def test_metadata_of_20000_partitions_in_bounded_memory(tmp_path):
    path = fs.metadata_log(tmp_path, 20_000)
    rc, out, err, rss = kd("metadata", "--json", "--at", "999999", path)
    assert rc == 0, err
    lines = out.splitlines()
    assert len(lines) == 2 and json.loads(lines[-1])["partitions"] == 20_000
    assert rss < RSS_LIMIT_MB, rss


# --- triage -------------------------------------------------------------------------------------------

def _triage(root: str) -> Triage:
    return Triage(str(root), jobs=1).run()


def test_triage_work_doubles_with_the_segments(tmp_path):
    small, large = fs.tiny_segments(tmp_path / "a", 300, partitions=300), fs.tiny_segments(tmp_path / "b", 600,
                                                                                           partitions=3)
    assert doubles(_work(_triage, small), _work(_triage, large))


def test_triage_of_2000_tiny_partitions_in_bounded_memory(tmp_path):
    root = fs.tiny_segments(tmp_path, 2000, partitions=2000)
    rc, out, err, rss = kd("triage", "--json", root)
    assert rc == 0, err
    o = json.loads(out)
    assert o["verdict"] == "clean" and o["totals"]["segments"] == 2000 and len(o["files"]) == 2000
    assert rss < RSS_LIMIT_MB, rss


# --- txn ----------------------------------------------------------------------------------------------

def _txn(root: str):
    from kafkadump.reports.triage import transactions_report

    tally = Tally()
    return transactions_report([str(root)], tally, jobs=1), tally


def test_txn_work_doubles_with_the_transactions(tmp_path):
    small, large = fs.transactions(tmp_path / "a", 300), fs.transactions(tmp_path / "b", 600)
    assert doubles(_work(_txn, small), _work(_txn, large))
    report, tally = _txn(large)
    assert len(report.transactions) == 1200 and report.count("committed") == 1200 and not tally.problems
    assert {t.transactional_id for t in report.transactions} == {f"tx-{n}" for n in range(600)}


def test_txn_keeps_only_the_transactions_it_lists(tmp_path, monkeypatch):
    """Past MAX_TRANSACTIONS closed transactions, the partition folds keep none for the join (they are
    counted): what is held stays the same however many partitions and transactions there are."""
    from kafkadump.reports import transactions as txn_mod
    from kafkadump.reports import triage as triage_mod

    monkeypatch.setattr(txn_mod, "MAX_TRANSACTIONS", 500)
    monkeypatch.setattr(triage_mod, "MAX_TRANSACTIONS", 500)
    root = fs.transactions(tmp_path, 600)            # 1,200 committed transactions in 10 partitions
    run = Triage(str(root), jobs=1, records=False, keep_transactions=True).run()
    assert sum(len(f.closed_spans) for f in run.partitions.values()) == 500
    report = run.transactions
    assert report is not None and len(report.transactions) == 500 and report.not_listed == 700
    assert [f.code.value for f in report.findings] == ["tracking-limit"]
    assert "700 closed transactions are counted but not listed" in report.findings[0].message


def test_txn_of_6000_transactions_in_bounded_memory(tmp_path):
    root = fs.transactions(tmp_path, 1500, partitions=20, txns=4)
    rc, out, err, rss = kd("txn", "--json", root)
    assert rc == 0, err
    summary = json.loads(out.splitlines()[-1])
    assert summary["type"] == "transactions-summary" and summary["committed"] == 6000 and summary["hanging"] == 0
    assert rss < RSS_LIMIT_MB, rss
