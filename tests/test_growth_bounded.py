"""Growth with the number of findings or entities: carve summarises the repeated findings of a
damaged range, triage follows a bounded number of producers, dump reads a checkpoint line by line.
Each at scale: peak RSS from the kernel, work counted (not timed) doubling with the input."""

from __future__ import annotations

import growth_scaled as g
import pytest
from measured import RSS_LIMIT_MB, findings_of, json_lines, kd

from kafkadump.base.findings import BoundedFindings
from kafkadump.base.findings import Code
from kafkadump.base.findings import Finding
from kafkadump.decoders.logfiles import textfiles
from kafkadump.decoders.logfiles import trackers as T

MUTATION_CODES = {"findings-summarised", "tracking-limit"}

SEG = "00000000000000000000.log"


# --- carve ------------------------------------------------------------------------------------------

def test_bounded_findings_keep_the_first_and_summarise_the_rest():
    log = BoundedFindings(keep=3)
    for i in range(10):
        log.add(Finding(Code.CRC_MISMATCH, 100 + 7 * i, "bad"))
    log.add(Finding(Code.GARBAGE, 5, "skipped"))
    fs = log.findings()
    assert [(f.code, f.offset) for f in fs[:4]] == [(Code.CRC_MISMATCH, 100), (Code.CRC_MISMATCH, 107),
                                                    (Code.CRC_MISMATCH, 114), (Code.GARBAGE, 5)]
    s = fs[4]
    assert (s.code, s.offset, s.length, s.severity.value) == (Code.FINDINGS_SUMMARISED, 121, 43, "info")
    assert s.message == "7 more crc-mismatch findings, not listed: the first at offset 121, the last at 163"
    assert len(fs) == 5


def _damaged(out: str) -> dict:
    (d,) = [d for d in json_lines(out) if d["type"] == "damaged"]
    return d


@pytest.mark.parametrize("n", [3000, 6000])
def test_carve_of_many_bad_crc_headers_is_summarised(tmp_path, n):
    size = g.bad_crc_range(tmp_path / SEG, n)
    rc, out, err, rss = kd("carve", "--json", str(tmp_path / SEG))
    assert rc == 1, err
    d = _damaged(out)
    assert d["size"] == size and d["claimedOffsets"]["first"] == 1 and d["damagedBatchHeaders"] >= n
    codes = [f["code"] for f in d["findings"]]
    assert codes.count("crc-mismatch") == BoundedFindings.KEEP
    summary = [f for f in d["findings"] if f["code"] == "findings-summarised" and "crc-mismatch" in f["message"]]
    more = int(summary[0]["message"].split()[0])
    assert more >= n - BoundedFindings.KEEP  # every bad header counted (past the scan budget, fake ones too)
    assert len(d["findings"]) < 100  # bounded: the same whatever n
    assert rss < RSS_LIMIT_MB


def test_carve_at_scale_stays_small(tmp_path):
    g.bad_crc_range(tmp_path / SEG, 40_000)
    rc, out, err, rss = kd("carve", "--json", str(tmp_path / SEG))
    assert rc == 1 and len(out) < 20_000, err
    assert rss < RSS_LIMIT_MB


# --- triage -----------------------------------------------------------------------------------------

def _triage(tmp_path, n: int):
    part = tmp_path / "orders-0"
    part.mkdir()
    g.producers_segment(part / SEG, n)
    rc, out, err, rss = kd("triage", "--json", str(part))
    return rc, findings_of(json_lines(out)), err, rss


def test_triage_follows_a_bounded_number_of_producers(tmp_path, monkeypatch):
    n = T.MAX_PRODUCERS + 5000
    rc, fs, err, rss = _triage(tmp_path, n)
    assert rc == 1, err
    limit = [f for f in fs if f["code"] == "tracking-limit"]
    assert len(limit) == 1 and limit[0]["severity"] == "warning"
    assert limit[0]["offset"] == T.MAX_PRODUCERS * 70  # the first batch of the first producer not followed
    assert f"from producer {1000 + T.MAX_PRODUCERS} on" in limit[0]["message"]
    assert rss < RSS_LIMIT_MB


def test_producer_state_is_bounded_in_process(tmp_path):
    """The trackers' state stops growing at the bound (a count of entries, not of bytes)."""
    from kafkadump.reports.scan import scan_segment

    for n in (T.MAX_PRODUCERS + 1000, 2 * T.MAX_PRODUCERS + 2000):
        g.producers_segment(tmp_path / SEG, n)
        (log,) = scan_segment(str(tmp_path / SEG))
        assert len(log.digest.producers) == T.MAX_PRODUCERS
        assert len(log.digest.transactions) == T.MAX_PRODUCERS


def test_triage_of_600000_producers(tmp_path):
    rc, fs, err, rss = _triage(tmp_path, 600_000)
    assert rc == 1, err
    assert rss < RSS_LIMIT_MB


# --- dump -------------------------------------------------------------------------------------------

def test_checkpoint_lines_are_read_one_at_a_time(tmp_path, monkeypatch):
    """Work: lines parsed double with the file; the reader holds one line."""
    counts = []
    real = textfiles._buffer_lines
    for n in (20_000, 40_000):
        g.leader_epoch_checkpoint(tmp_path / "leader-epoch-checkpoint", n)
        data = (tmp_path / "leader-epoch-checkpoint").read_bytes()
        seen = 0

        def counting(buf):
            nonlocal seen
            for line in real(buf):
                seen += 1
                yield line

        monkeypatch.setattr(textfiles, "_buffer_lines", counting)
        text = textfiles.CheckpointText(data, "leader-epoch-checkpoint")
        entries = text.entries()
        first = next(entries)
        assert seen == 3 and first == {"epoch": 0, "startOffset": 0, "position": len(f"0\n{n}\n")}
        assert sum(1 for _ in entries) == n - 1 and not text.findings
        counts.append(seen)
    assert counts[1] - 2 == 2 * (counts[0] - 2)


def test_dump_of_a_large_leader_epoch_checkpoint(tmp_path):
    n = 500_000
    p = tmp_path / "leader-epoch-checkpoint"
    g.leader_epoch_checkpoint(p, n)
    rc, out, err, rss = kd("dump", "--json", str(p))
    assert rc == 0, err
    (d,) = json_lines(out)
    assert d["count"] == n and len(d["entries"]) == n and d["findings"] == []
    assert d["entries"][-1] == {"epoch": n - 1, "startOffset": 10 * (n - 1),
                                "position": p.stat().st_size - len(f"{n - 1} {10 * (n - 1)}\n")}
    assert rss < RSS_LIMIT_MB


def test_dump_of_a_checkpoint_with_findings_exits_1(tmp_path):
    p = tmp_path / "leader-epoch-checkpoint"
    p.write_text("0\n4\n0 0\n4 10\n2 20\n")
    rc, out, err, _ = kd("dump", "--json", str(p))
    (d,) = json_lines(out)
    assert rc == 1
    assert [(f["code"], f["offset"]) for f in d["findings"]] == [("leader-epoch-mismatch", 13),
                                                                   ("file-malformed", 2)]
