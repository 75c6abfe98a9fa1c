"""hexdump of an item of hundreds of MiB (issue 26, class 5: the second pass's inputs at ten times their
size): the item is decoded in place and read from the mapping a row at a time, never copied, and a run
of rows like the last one shown is one ``*`` line (as ``hexdump -C``), counted exactly.

Before: a sparse file declaring one 2 GiB batch took 4.1 GB and was stopped after 18 minutes of rows.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from test_hardening import RSS_LIMIT_MB, kd

from kafkadump.sources.segment import MappedRange, open_segment

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import hostile  # noqa: E402

MiB = 1 << 20
ROW = re.compile(r"^([0-9a-f]{8}) ")
STAR = re.compile(r"^\*\s+\(([\d,]+) more rows? like the one above: ([\d,]+) bytes\)")
V2 = str(Path(__file__).resolve().parent.parent / "fixtures" / "segment-v2" / "00000000000000000000.log")


def _coverage(text: str, cols: int = 16) -> tuple[int, int, int]:
    """(address after the last byte shown or skipped, rows printed, rows skipped by ``*`` lines)."""
    at, printed, skipped = 0, 0, 0
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            assert int(m.group(1), 16) == at, line   # rows follow each other, skipped ones included
            at += cols
            printed += 1
            continue
        m = STAR.match(line)
        if m:
            rows, size = (int(g.replace(",", "")) for g in m.groups())
            assert size == rows * cols
            at += size
            skipped += rows
    return at, printed, skipped


@pytest.mark.parametrize("size", [64 * MiB, 512 * MiB])
def test_a_sparse_batch_of_hundreds_of_mib_is_shown_in_bounded_memory(tmp_path, size):
    path = str(tmp_path / "00000000000000000000.log")
    hostile.sparse_declared_batch(path, size)
    rc, out, err, rss = kd("hexdump", path)
    assert rc == 1, err
    assert "crc" in out and "MISMATCH" in out
    end, printed, skipped = _coverage(out)
    assert end == size and printed < 10 and skipped == size // 16 - printed
    assert rss < RSS_LIMIT_MB, rss
    rc, out, err, rss = kd("hexdump", "--json", path)
    assert rc == 1 and rss < RSS_LIMIT_MB, (err, rss)


def test_a_zero_run_read_as_a_gap_is_one_line(tmp_path):
    path = str(tmp_path / "00000000000000000000.log")
    hostile.zero_run_between(path, 64 * MiB)
    rc, out, err, rss = kd("hexdump", "--position", "1000", path)
    assert rc == 1, err
    assert out.startswith("── unparsed bytes at position 73")
    assert len(out.splitlines()) < 12
    assert sum(1 for line in out.splitlines() if STAR.match(line)) == 1
    assert rss < RSS_LIMIT_MB, rss


def test_short_runs_of_like_rows_are_shown_whole():
    """Under 1 KiB of repeated rows (a value's bytes) every row is printed: at 4 bytes a row the
    snappy batch's header has two like rows, printed both."""
    rc, out, err, _ = kd("hexdump", "--cols", "4", "--batch", "3", V2)
    assert rc == 0, err
    assert not any(STAR.match(line) for line in out.splitlines())
    assert "000003f0  00 00 01 00" in out and "000003f4  00 00 01 00" in out


def test_a_mapped_range_reads_as_the_bytes_it_stands_for(tmp_path):
    data = bytes(range(256)) * 40
    p = tmp_path / "x.log"
    p.write_bytes(data)
    seg = open_segment(str(p))
    view = MappedRange(seg, 100, 9000)
    try:
        assert len(view) == 8900
        assert view[0] == data[100] and view[-1] == data[8999] and view[5:21] == data[105:121]
        assert view[8890:9999] == data[8990:9000] and view[20:10] == b""
        with pytest.raises(IndexError):
            view[8900]
    finally:
        view.close()
