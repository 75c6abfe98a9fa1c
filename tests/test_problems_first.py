"""triage, problems first: a partition a checkpoint speaks against is not clean, files that are not Kafka's
are findings saying what they seem to be, a cut list says how many more, the progress moves by bytes
and names the partition.

Segments come from kafka-python's encoder (logdir_helpers); the foreign files are built here from
their formats' published magic numbers.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys

from logdir_helpers import Seg, batch, checkpoint_text, findings, name, write

from kafkadump.reports import scan as scan_mod
from kafkadump.reports.triage import Triage
from kafkadump.objects.logdir_objects import triage

# the finding codes whose mutation tests live in this file (read by test_mutations.py)
MUTATION_CODES = {"not-kafka"}

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
PNG = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + bytes(17)
PCAP = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
ELF = b"\x7fELF\x02\x01\x01" + bytes(57)


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def _logdir(root, partitions=("orders-0", "orders-1")):
    ld = root / "kafka-logs"
    for p in partitions:
        write(ld / p / name(0, ".log"), Seg([batch(0, 3), batch(3, 2)]).data)
    return ld


def _partition(report, pname):
    return next(p for p in report["partitions"] if os.path.basename(p["path"]) == pname)


# --- a checkpoint that says something wrong about a partition -----------------------------------------------

def test_a_partition_its_checkpoint_speaks_against_is_not_clean(tmp_path):
    ld = _logdir(tmp_path)
    write(ld / "replication-offset-checkpoint", checkpoint_text([("orders", 0, 77), ("orders", 1, 5)]))
    r = _cli("triage", "--json", str(ld))
    assert r.returncode == 1, r.stderr
    rep = json.loads(r.stdout)
    p0, p1 = _partition(rep, "orders-0"), _partition(rep, "orders-1")
    assert p0["verdict"] == "warnings" and p0["findingCounts"] == {"checkpoint-mismatch": 1}
    assert p0["findings"] == {"error": 0, "warning": 1, "info": 0}
    assert p1["verdict"] == "clean" and p1["findingCounts"] == {}
    # the finding itself stays in the checkpoint file, at the line naming the partition
    (f,) = findings(rep, "checkpoint-mismatch")
    assert f["file"].endswith("replication-offset-checkpoint") and f["offset"] == len(b"0\n2\n")
    assert "orders-0: high watermark 77 is beyond the partition's log end offset 5" in f["message"]
    # totals count the finding once
    assert rep["totals"]["findings"]["warning"] == 1
    assert rep["totals"]["partitionVerdicts"] == {"warnings": 1, "clean": 1}
    table = _cli("triage", str(ld), env={"COLUMNS": "200"})
    row = next(line for line in table.stdout.splitlines() if line.startswith("orders-0"))
    assert "warnings" in row and "checkpoint-mismatch:1" in row


# --- files that are not Kafka's -----------------------------------------------------------------------------

def test_files_that_are_not_kafkas_say_what_they_seem_to_be(tmp_path):
    ld = _logdir(tmp_path)
    write(ld / "diagram.png", PNG)
    write(ld / "orders-1" / "tcpdump.out", PCAP)
    write(ld / "orders-1" / "kafka-server-start", ELF)
    write(ld / "server.log", b"[2024-01-01 00:00:00,000] INFO starting (kafka.server.KafkaServer)\n")
    write(ld / ".lock", b"")
    write(ld / "replication-offset-checkpoint.tmp", b"0\n0\n")       # Kafka's own, being written
    write(ld / "orders-0" / "copy.bin", Seg([batch(0, 2)]).data)   # batches under another name: Kafka's
    r = _cli("triage", "--json", str(ld))
    assert r.returncode == 1, r.stderr
    rep = json.loads(r.stdout)
    seen = {os.path.basename(f["file"]): (f["severity"], f["offset"], f["message"]) for f in findings(rep, "not-kafka")}
    assert seen == {
        "diagram.png": ("warning", 0, "not a file of Kafka's: seems to be a PNG image"),
        "tcpdump.out": ("warning", 0, "not a file of Kafka's: seems to be a packet capture (pcap/pcapng); "
                                      "read it with 'kafkadump capture'"),
        "kafka-server-start": ("warning", 0, "not a file of Kafka's: seems to be an ELF executable or library"),
        "server.log": ("warning", 0, "not a file of Kafka's: seems to be text"),
    }
    by_name = {os.path.basename(f["file"]): f for f in rep["files"]}
    assert by_name["server.log"]["kind"] == "unknown"   # a .log not named by an offset, holding text: no segment
    assert by_name[".lock"]["findings"] == [] and by_name["copy.bin"]["findings"] == []
    assert by_name["replication-offset-checkpoint.tmp"]["findings"] == []
    assert by_name["replication-offset-checkpoint.tmp"]["note"] == \
        "a broker's temporary file (offset-checkpoint) being written"
    assert "record batches" in by_name["copy.bin"]["note"]
    # the log dir itself is no partition for its server.log; the partition holding the ELF is not clean
    assert sorted(os.path.basename(p["path"]) for p in rep["partitions"]) == ["orders-0", "orders-1"]
    assert _partition(rep, "orders-1")["verdict"] == "warnings" and _partition(rep, "orders-0")["verdict"] == "clean"


def test_a_segment_holding_an_image_says_so_besides_its_damage(tmp_path):
    ld = tmp_path / "orders-0"
    write(ld / name(0, ".log"), PNG)
    rep = triage(str(ld))
    (f,) = findings(rep, "not-kafka")
    assert f["offset"] == 0 and f["message"] == "no record batch in it: seems to be a PNG image"
    assert rep["verdict"] == "errors"   # and its bytes are damage, as for any segment


def test_a_preallocated_empty_segment_is_no_foreign_file(tmp_path):
    ld = tmp_path / "orders-0"
    write(ld / name(0, ".log"), bytes(4096))
    assert findings(triage(str(ld)), "not-kafka") == []


# --- on a terminal: problems first, counts, a cut list says how many more ----------------------------------

def test_on_a_terminal_the_clean_are_counted_and_a_long_list_says_how_many_more(tmp_path):
    ld = _logdir(tmp_path, [f"orders-{n}" for n in range(12)])
    for n in range(55):   # each in a directory named as a partition: 55 partitions with a warning
        write(ld / f"shots-{n}" / "shot.png", PNG)
    r = _cli("triage", "--color", str(ld), env={"COLUMNS": "120"})
    assert r.returncode == 1
    lines = [ANSI.sub("", line) for line in r.stdout.splitlines()]
    assert lines[0].startswith("verdict: warnings")
    text = " ".join("\n".join(lines).split())         # the closing note folds between words
    assert "orders-3" not in text                       # clean partitions are counted, not listed
    assert text.count("not a file of Kafka's") == 50    # the first 50 findings ...
    assert "12 partitions clean" in text and "12 files without findings" in text
    assert "5 more findings" in text                    # ... and how many more
    assert "5 more files with findings" in text and "5 more partitions with findings" in text   # lists of 50
    everything = "\n".join(ANSI.sub("", x) for x in _cli("triage", "--all", "--color", str(ld),
                                                         env={"COLUMNS": "200"}).stdout.splitlines())
    assert everything.count("not a file of Kafka's") == 55 and "orders-3" in everything
    assert all(f"shots-{n}" in everything for n in range(55))


# --- the progress: bytes, inside a segment, and the partition's name -----------------------------------------

def test_progress_moves_inside_a_segment_and_names_its_partition(tmp_path, monkeypatch):
    seg = Seg([batch(i * 10, 10, value_size=200) for i in range(20)])
    d = tmp_path / "orders-7"
    log = write(d / name(0, ".log"), seg.data)
    monkeypatch.setattr(scan_mod, "PROGRESS_STEP", 1000)
    calls: list[tuple[int, int, str]] = []
    Triage(str(d), jobs=1, progress=lambda done, total, path: calls.append((done, total, path))).run()
    size = len(seg.data)
    assert all(total == size and path == log for _, total, path in calls)
    inside = [done for done, _, _ in calls if 0 < done < size]
    # told at least every 1000 bytes of the walk, at batch boundaries (each batch here is larger: every one;
    # positions from the builder's own layout)
    assert inside == [seg.at(i) for i in range(1, 20)] and seg.at(1) > 1000
    assert [done for done, _, _ in calls] == sorted(done for done, _, _ in calls) and calls[-1][0] == size

    from kafkadump.decoders.logfiles.names import partition_label
    assert partition_label(log) == "orders-7" and partition_label(str(tmp_path / "x.log")) == "x.log"


def test_progress_from_worker_processes_never_goes_back(tmp_path, monkeypatch):
    from kafkadump.reports import triage as triage_mod

    monkeypatch.setattr(triage_mod, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(scan_mod, "PROGRESS_STEP", 500)
    ld = _logdir(tmp_path, [f"orders-{n}" for n in range(6)])
    calls: list[int] = []
    t = Triage(str(ld), jobs=2, progress=lambda done, total, path: calls.append(done)).run()
    assert calls == sorted(calls) and calls[-1] == t.total_bytes


def test_sniffing_never_raises_and_names_what_it_knows():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from kafkadump.sources.filetype import describe, identify

    @settings(max_examples=300, deadline=None)
    @given(st.binary(max_size=600))
    def check(head):
        what = describe(head, len(head))
        assert isinstance(what, str) and what

    check()
    assert identify(PNG) == "a PNG image" and identify(ELF) == "an ELF executable or library"
    assert identify(b"", 0) == "an empty file" and identify(bytes(300)) is None
    assert identify(bytes(257) + b"ustar\x0000") == "a tar archive"
    assert identify(b"#!/bin/sh\necho hi\n") == "a script (/bin/sh)"
