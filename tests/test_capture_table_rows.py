"""The frame table's shortcuts against the general code they stand for.

``RowClock`` (a row's time, the second's text worked out once) must say what
``capture_report.time_text`` says, rounding included; ``TableStream.usual_line``
(a usual row in one format call) what ``TableStream.fitted_line`` says, or
nothing.
"""

from __future__ import annotations

import io
import random

import pytest

from kafkadump.reports.capture import time_text
from kafkadump.render.frame_views import FRAME_COLUMNS, RECORD_COLUMNS, RowClock, frame_columns
from kafkadump.render.table import BATCH_COLUMNS, Column, TableLayout, TableStream

NOV_2023 = 1_700_000_000.0


def _times() -> list[float | None]:
    rng = random.Random(13)
    out: list[float | None] = [None, 0.0, 1.5, 86399.9999996, 86400 * 2 - 1e-7, 86400 * 2.0, -5.25, 1e20,
                               float("inf"), float("-inf"), float("nan"), 253402300798.9999996, 253402300799.0,
                               NOV_2023, NOV_2023 + 0.9999995, NOV_2023 + 0.9999994, NOV_2023 + 0.0000005,
                               NOV_2023 + 59.9999999, NOV_2023 - 0.0000001]
    for _ in range(3000):
        whole = rng.choice([NOV_2023, 0.0, 86400 * 3.0, 946684799.0, 4102444800.0]) + rng.randrange(0, 100000)
        out.append(whole + rng.choice([rng.random(), rng.randrange(1_000_000) / 1e6,
                                       (rng.randrange(1_000_000) + 0.5) / 1e6, 1 - 1e-7 * rng.random()]))
    return out


@pytest.mark.parametrize("dated", [False, True])
def test_the_row_clock_says_what_time_text_says(dated):
    clock = RowClock(dated)
    times = _times()
    rng = random.Random(5)
    # in order (as a table's rows mostly come), then shuffled (the second changes at every row)
    for t in times + rng.sample(times, len(times)) + sorted(t for t in times if t is not None and t == t):
        assert clock.text(t) == time_text(t, dated), t


PLAIN: list[object] = [0, 7, -1, 12345, "", "-", "req", "Produce", "a" * 3, "a" * 4, "topic-0[3] 20 rec",
                       "trailing  ", " lead", 3.5, None, True]
ODD: list[object] = [10**7, 10**12, "a" * 14, "a" * 15, "a" * 21, "x" * 80, "é", "tab\there", "bell\x07",
                     "\u202e", "line\nbreak", "…", "\x7f"]


def _cells(rng: random.Random, n: int) -> list[object]:
    return [rng.choice(ODD if rng.random() < 0.04 else PLAIN) for _ in range(n)]


@pytest.mark.parametrize("columns", [FRAME_COLUMNS, frame_columns(True), RECORD_COLUMNS, BATCH_COLUMNS,
                                     (Column("a", 3), Column("b", 0), Column("c", 4, True))])
@pytest.mark.parametrize("width", [None, 40, 80, 200])
def test_the_usual_line_is_the_fitted_line(columns, width):
    layout = None if width is None else TableLayout(width=width)
    table = TableStream(io.StringIO(), columns, None, layout)
    rng = random.Random(width or 0)
    usual = 0
    for _ in range(2000):
        cells = _cells(rng, len(columns) - rng.choice([0, 0, 0, 1]))
        line = table.usual_line(cells)
        if line is not None:
            usual += 1
            assert line == table.fitted_line(cells), cells
    plain = [1] * len(columns)
    assert table.usual_line(plain) == table.fitted_line(plain)
    assert usual > 0


def test_a_row_writes_the_fitted_line_either_way():
    out = io.StringIO()
    table = TableStream(out, FRAME_COLUMNS)
    rows = [[1, "22:13:20.001298", "c0", "req", "Produce", 9, 2, "bench-producer", 41, "-", "topic-0[0] 20 rec"],
            [2, "22:13:20.001298", "c0", "resp", "Produce\x1b[31m", 9, 2, "é" * 20, 41, "0.412ms", "x" * 90]]
    for cells in rows:
        table.row(cells)
    lines = out.getvalue().splitlines()
    assert lines[1:] == [table.fitted_line(cells) for cells in rows]
    assert table.usual_line(rows[0]) is not None and table.usual_line(rows[1]) is None
    assert "\\x1b[31m" in lines[2] and "\x1b" not in lines[2]



class _CountingOut(io.StringIO):
    """A text stream that counts its writes."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, s: str) -> int:
        self.writes += 1
        return super().write(s)


def _items_then_failure(items, after: int):
    """``items``, raising RuntimeError once ``after`` of them have gone by."""
    for i, item in enumerate(items):
        if i == after:
            raise RuntimeError("the input went away")
        yield item


def test_the_frame_table_writes_lines_in_batches_and_keeps_what_it_had_when_it_fails(tmp_path, monkeypatch):
    """Without a console the rows go out a few hundred lines per write, every line whole; when the items
    fail part way, the rows printed before are out."""
    import builders as bld
    import capture_builders as cb

    from kafkadump.reports.capture import CaptureRequest
    from kafkadump.reports.capture import capture_report
    from kafkadump.render import frame_views
    from kafkadump.base.status import Tally

    p = tmp_path / "c.pcap"
    p.write_bytes(cb.records_conversation(150, lambda i: bld.simple_batch(i * 3, 3).data, corr_step=10, mss=700))

    def table(items, out):
        frame_views.write_frames_table(items, out)
        return out.getvalue()

    whole = _CountingOut()
    text = table(capture_report(str(p), CaptureRequest(), Tally(), time_span=True), whole)
    lines = text.splitlines()
    assert len(lines) > 600 and text.endswith("\n")
    assert whole.writes <= len(lines) // 256 + 2   # batched: not a write per line
    monkeypatch.setattr(frame_views, "TIME_ORDER_WINDOW", 0)   # a row prints as it comes
    cut = _CountingOut()
    with pytest.raises(RuntimeError):
        table(_items_then_failure(capture_report(str(p), CaptureRequest(), Tally(), time_span=True), 301), cut)
    assert cut.getvalue() == "\n".join(lines[:302]) + "\n"   # the connection line, the header, 300 rows
