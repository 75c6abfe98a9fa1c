"""Decoding that must not stop: a segment whose head is erased flash or text, and a segment
truncated while it is read (log retention, recovery): a ``file-changed`` finding, never SIGBUS."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import builders as bld
import pytest
from measured import RSS_LIMIT_MB, findings_of, json_lines, kd

MUTATION_CODES = {"file-changed"}

HEAD = 65536
SEG_NAME = "00000000000000000000.log"


def head_then_batches(head: bytes, batches: int = 100) -> tuple[bytes, list[int]]:
    """``head`` bytes, then ``batches`` intact batches; their positions."""
    out = bytearray(head)
    positions = []
    for i in range(batches):
        positions.append(len(out))
        out += bld.simple_batch(i * 3, 3).data
    return bytes(out), positions


HEADS = {
    "erased-flash": b"\xff" * HEAD,
    "log-line": (b"2026-11-25 12:00:00 INFO [Log partition=orders-0] a log line written over the head\n"
                 * (HEAD // 80 + 1))[:HEAD],
}


@pytest.mark.parametrize("head", sorted(HEADS))
@pytest.mark.parametrize("command", ["batches", "records", "verify-crc"])
def test_a_damaged_head_is_garbage_then_the_batches(tmp_path, head, command):
    data, positions = head_then_batches(HEADS[head])
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(data)
    rc, out, err, rss = kd(command, "--json", str(p))
    assert rc == 1, err
    docs = json_lines(out)
    gaps = [d for d in docs if d["type"] == "gap"]
    assert gaps[0]["position"] == 0 and gaps[0]["size"] == HEAD
    assert "garbage" in {f["code"] for f in gaps[0]["findings"]}
    if command == "batches":
        assert [d["position"] for d in docs if d["type"] == "batch"] == positions
    elif command == "records":
        assert sorted({d["batchPosition"] for d in docs if d["type"] == "record"}) == positions
    else:
        assert docs[-1]["batches"] == len(positions)
    assert rss < RSS_LIMIT_MB


def test_hexdump_of_a_damaged_head_shows_it(tmp_path):
    data, positions = head_then_batches(HEADS["erased-flash"], 3)
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(data)
    rc, out, err, _ = kd("hexdump", "--batch", "1", str(p))
    assert rc == 0 and f"record batch at position {positions[1]}:" in out, err


def test_a_text_file_not_named_as_a_segment_is_still_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("not a segment\n" * 10)
    rc, _, err, _ = kd("records", str(tmp_path / "notes.txt"))
    assert rc == 2 and "is text" in err


# --- truncated while read -----------------------------------------------------------------------

def big_segment(path, batches: int = 6000, value_size: int = 4000) -> int:
    with open(path, "wb") as f:
        for i in range(batches):
            f.write(bld.simple_batch(i * 3, 3, value_size=value_size).data)
    return os.path.getsize(path)


def bad_crc_segment(path, batches: int = 6000, value_size: int = 4000) -> int:
    """Every batch's CRC wrong: verify-crc writes a line per batch, so it can be held by its pipe."""
    with open(path, "wb") as f:
        for i in range(batches):
            d = bytearray(bld.simple_batch(i * 3, 3, value_size=value_size).data)
            d[-1] ^= 1
            f.write(d)
    return os.path.getsize(path)


def run_and_truncate(path, size: int, command: str) -> tuple[int, list[dict], str]:
    """Start ``command --json path``, let it block on its full pipe, cut the file to a third, read the rest."""
    p = subprocess.Popen([sys.executable, "-m", "kafkadump", command, "--json", str(path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.readline()
    time.sleep(0.3)  # the writer fills the pipe and blocks at an item boundary (no assertion on time)
    os.truncate(path, size // 3)
    out = p.stdout.read()  # (not communicate(): it would miss what readline buffered)
    err = p.stderr.read()
    p.wait()
    return p.returncode, json_lines((first + out).decode()), err.decode()


@pytest.mark.parametrize("command", ["batches", "records", "verify-crc", "carve"])
def test_truncated_while_read_is_file_changed(tmp_path, command):
    path = tmp_path / "00000000000000000000.log"
    size = (bad_crc_segment if command == "verify-crc" else big_segment)(path)
    rc, docs, err = run_and_truncate(path, size, command)
    assert rc == 1, err  # not -SIGBUS
    assert "Traceback" not in err
    changed = [f for f in findings_of(docs) if f["code"] == "file-changed"]
    assert len(changed) == 1 and changed[0]["offset"] == size // 3 and changed[0]["severity"] == "error"
    # the bytes still there were decoded, up to the new end
    ends = [d["position"] + d["size"] for d in docs if d["type"] in ("batch", "gap", "recovered") and d.get("size")]
    ends += [d["batchPosition"] for d in docs if d["type"] == "record"]
    assert max(ends) >= size // 3 - 100_000


def test_a_file_shrunk_before_the_walk_is_walked_to_its_new_end(tmp_path):
    """The guard itself: a mapping longer than the file (cut between open and walk)."""
    from kafkadump.decoders.batches import iter_batches
    from kafkadump.decoders.batches.guard import guarded_walk
    from kafkadump.sources.segment import open_segment

    path = tmp_path / "00000000000000000000.log"
    data, positions = head_then_batches(b"", 10)
    path.write_bytes(data)
    with open_segment(str(path)) as seg:
        os.truncate(path, positions[5])
        items = list(guarded_walk(seg, str(path), lambda s, e: iter_batches(seg.buf, str(path), start=s, end=e)))
    assert items[0].findings[0].code.value == "file-changed" and items[0].findings[0].offset == positions[5]
    assert [i.position for i in items[1:]] == positions[:5]


@pytest.mark.parametrize("batches", [60, 6])  # 60 MiB: the threaded scan; 6 MiB: the serial one
def test_verify_crc_of_a_clean_file_truncated_mid_scan(tmp_path, monkeypatch, batches):
    """The CRC scan yields nothing on a clean file: its page-release points check the size.  The file
    is cut at the first of them (as a broker would, while the scan runs)."""
    from kafkadump.decoders.batches import Batch
    from kafkadump.decoders.batches import Gap
    from kafkadump.decoders.batches import Options
    from kafkadump.decoders.batches import walk as W
    from kafkadump.base.status import Tally
    from kafkadump.reports.segments import crc_report

    path = tmp_path / SEG_NAME
    one = bld.simple_batch(0, 1, value_size=(1 << 20) - 100).data
    with open(path, "wb") as f:
        for _ in range(batches):
            f.write(one)  # the same batch again and again: the scan judges each on its own
    size = path.stat().st_size
    # the threaded scan reads up to 32 MiB ahead of its release points: the cut is beyond that
    cut = size * 3 // 4 // len(one) * len(one)
    real = W.page_releaser

    def cutting_releaser(buf):
        release = real(buf)

        def cut_then_release(upto):
            if os.path.getsize(path) == size:
                os.truncate(path, cut)
            if release is not None:
                release(upto)
        return cut_then_release

    monkeypatch.setattr(W, "page_releaser", cutting_releaser)
    monkeypatch.setattr(W, "RELEASE_STEP", 1 << 20)
    tally = Tally()
    items = list(crc_report([str(path)], Options(), tally))
    changed = [f for it in items if isinstance(it, (Batch, Gap)) for f in it.findings
               if f.code.value == "file-changed"]
    assert len(changed) == 1 and changed[0].offset == cut, [(i.position, [f.message for f in i.findings]) for i in items[1:-1]]
    totals = items[-1]
    assert totals.batches == cut // len(one) and totals.bytes == cut and tally.problems == 1, \
        [(i.position, [f.message for f in i.findings]) for i in items[1:-1]]
