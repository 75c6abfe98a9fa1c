"""Screenshots: batches, records, triage and capture run in an 80x24 pseudo-terminal, read by a terminal emulator.

Each command's stdout is a real terminal (a pty sized 80 columns by 24 rows: rich sees a terminal,
colours and all), and what it writes is fed to pyte, a VT100 emulator, as a terminal would show it.
A row that wraps takes two screen rows, so the cursor ends below the line count; an escape sequence
smuggled in the data (a key, a client id holding ``ESC ] 0 ; title BEL`` and ``ESC [ 2 J``) would retitle
or clear the emulated screen.  Nothing here is timed.
"""

from __future__ import annotations

import re
import shutil

import capture_builders as B
import pyte
import pytest
from builders import simple_batch
from conftest import FIXTURES
from kafka.record.default_records import DefaultRecordBatchBuilder
from logdir_helpers import name, write
from terminal_screen import run_in_terminal

COLS, ROWS = 80, 24
EVIL = b"\x1b]0;pwned\x07\x1b[2Jx\xc2\x9b1m"   # retitle, clear the screen, a C1 CSI
SGR = re.compile(rb"\x1b\[[0-9;]*m")


def _run_in_terminal(args: list[str], *, stderr_tty: bool = False) -> tuple[bytes, bytes, int]:
    """Run kafkadump with stdout (and stderr when asked) on a COLSxROWS pty: ``(tty bytes, other, rc)``."""
    return run_in_terminal(args, COLS, ROWS, stderr_tty=stderr_tty, timeout=60)


def _screen(raw: bytes) -> pyte.Screen:
    """``raw`` as an 80-column terminal shows it (tall enough to keep every row)."""
    screen = pyte.Screen(COLS, max(ROWS, raw.count(b"\n") * 3 + 10))
    pyte.ByteStream(screen).feed(raw)
    return screen


def _assert_a_clean_screenshot(raw: bytes) -> list[str]:
    lines = raw.count(b"\n")
    assert lines > 3, raw[:400]
    screen = _screen(raw)
    # one screen row per line: no row wrapped (a wrapped row pushes the cursor one row further down)
    assert screen.cursor.y == lines, "a row wrapped:\n" + "\n".join(
        row.rstrip() for row in screen.display[:screen.cursor.y])
    # kafkadump's own styling only: no escape, BEL or C1 control from the data reached the terminal
    rest = SGR.sub(b"", raw)
    assert b"\x1b" not in rest and b"\x07" not in rest and not re.search(rb"\xc2[\x80-\x9f]", rest)
    assert screen.title == ""
    return [row.rstrip() for row in screen.display[:lines]]


def _evil_segment(tmp_path) -> str:
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(30):
        bld.append(i, timestamp=1_700_000_000_000 + i, key=b"user-%d" % i if i % 3 else EVIL,
                   value=b'{"n":%d,"pad":"%s"}' % (i, b"x" * (i * 7)), headers=[("h" + "\x1b[31m", EVIL)])
    return write(tmp_path / "orders-0" / name(0, ".log"), bytes(bld.build()) + simple_batch(30, 5).data)


@pytest.mark.parametrize("fixture,status", [("segment-v2", 0), ("damaged", 1)])
def test_batches_at_80_by_24(fixture, status):
    raw, _, rc = _run_in_terminal(["batches", str(FIXTURES / fixture / "00000000000000000000.log")])
    assert rc == status
    rows = _assert_a_clean_screenshot(raw)   # the damaged one's long finding notes fold between words
    assert rows[0].split()[:3] == ["position", "baseOffset", "lastOffset"]


def test_records_with_escapes_in_keys_and_headers_at_80_by_24(tmp_path):
    raw, _, rc = _run_in_terminal(["records", _evil_segment(tmp_path)])
    assert rc == 0
    rows = _assert_a_clean_screenshot(raw)
    assert any("0x1b5d303b" in row for row in rows)   # a key holding escapes: binary, shown as hex
    assert any(row.split()[:3] == ["1", "2023-11-14T22:13:20.001Z", "user-1"] for row in rows)


def test_records_dump_log_in_a_terminal_lets_no_escape_through(tmp_path):
    # dump-log lines are kafka-dump-log's (longer than 80 columns by design): the terminal wraps them,
    # but nothing from the data escapes
    raw, _, rc = _run_in_terminal(["records", "-f", "dump-log", _evil_segment(tmp_path)])
    assert rc == 0
    rest = SGR.sub(b"", raw)
    assert b"\x1b" not in rest and b"\x07" not in rest and _screen(raw).title == ""


def test_triage_at_80_by_24(tmp_path):
    for n in range(3):
        write(tmp_path / "logs" / f"clean-{n}" / name(0, ".log"), simple_batch(0, 3).data + simple_batch(3, 2).data)
    d = tmp_path / "logs" / "orders-7"
    d.mkdir()
    shutil.copy(FIXTURES / "damaged" / "00000000000000000000.log", d / name(0, ".log"))
    write(tmp_path / "logs" / "notes" / ("evil" + EVIL.decode("latin-1") + ".png"), b"\x89PNG\r\n\x1a\n" + bytes(8))
    raw, _, rc = _run_in_terminal(["triage", str(tmp_path / "logs")])
    assert rc == 1
    rows = _assert_a_clean_screenshot(raw)
    assert rows[0].startswith("verdict: errors")
    text = "\n".join(rows)
    assert "orders-7" in text and "3 partitions clean" in text and "not-kafka" in text


def test_capture_at_80_by_24(tmp_path):
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(10):
        bld.append(i, timestamp=1_700_000_000_000 + i, key=EVIL if i % 2 else b"user-%d" % i,
                   value=b"value %d " % i + b"y" * 90, headers=[("h", EVIL)])
    client = EVIL.decode("latin-1")
    c = B.Conversation()
    for corr in range(1, 6):
        c.send("c", B.metadata_v1_request(corr=corr, client=client))
        c.send("s", B.metadata_v1_response(corr=corr, topic="orders" + "\x1b[2J"))
    c.send("c", B.fetch_v12_request(corr=9, client=client))
    c.send("s", B.fetch_v12_response(9, [(0, bytes(bld.build()), b"\x00")]))
    c.close()
    data, _ = B.pcap([(t, p) for t, p, _ in c.packets])
    pcap = tmp_path / "evil.pcap"
    pcap.write_bytes(data)
    raw, _, rc = _run_in_terminal(["capture", str(pcap)])
    assert rc in (0, 1)
    rows = _assert_a_clean_screenshot(raw)
    assert any("\\x1b" in row for row in rows)
    raw, _, rc = _run_in_terminal(["capture", "--records", str(pcap)])
    rows = _assert_a_clean_screenshot(raw)
    assert rows[0].split() == ["frame", "topic", "part", "offset", "key", "value"]
    assert len(rows) == 11 and rows[1].split()[4] == "user-0"


@pytest.mark.parametrize("jobs", ["1"])
def test_triage_progress_on_a_terminal_names_the_partition(tmp_path, jobs):
    d = tmp_path / "orders-7"
    write(d / name(0, ".log"), b"".join(simple_batch(i * 3, 3).data for i in range(50)))
    tty, out, rc = _run_in_terminal(["triage", "--json", "-j", jobs, str(d)], stderr_tty=True)
    assert rc == 0 and out.startswith(b'{"type":"triage"')
    assert b"orders-7" in tty and b"triage" in tty   # the bar, its label and the partition being read
