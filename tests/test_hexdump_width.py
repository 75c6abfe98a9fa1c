"""hexdump and capture --hexdump fit the terminal: run in pseudo-terminals 80, 120 and 200 columns wide.

Each run's stdout is a real terminal (a pty of that size: rich sees it, colours and all), read by pyte,
a VT100 emulator.  A line wider than the terminal wraps onto a second screen row, so the cursor ends
below the line count.  The same command piped (no terminal) is the reference: its layout is today's,
16 bytes a row with the annotations beside them; on the terminal every byte it shows is shown at the
same absolute offset, masked where it is masked, and every word of its annotations appears whole.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import capture_builders as B
import pyte
import pytest
from conftest import CORPUS, FIXTURES
from kafka.record.default_records import DefaultRecordBatchBuilder
from rich.cells import cell_len
from terminal_screen import run_in_terminal

WIDTHS = (80, 120, 200)
ROWS = 24
V2 = str(FIXTURES / "segment-v2" / "00000000000000000000.log")
DAMAGED = str(FIXTURES / "damaged" / "00000000000000000000.log")
SGR = re.compile(r"\x1b\[[0-9;]*m")
ROW = re.compile(r"^([0-9a-f]{8}) ")


def _env(no_color: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR")}
    env["TERM"] = "xterm-256color"
    if no_color:
        env["NO_COLOR"] = "1"
    return env


def _in_terminal(args: list[str], cols: int, no_color: bool = False) -> tuple[bytes, int]:
    """kafkadump's stdout on a ``cols`` x 24 pty: ``(what reached the terminal, exit status)``."""
    shown, err, rc = run_in_terminal(args, cols, ROWS, timeout=60, no_color=no_color)
    assert not err, err
    return shown, rc


def _piped(args: list[str]) -> tuple[str, int]:
    p = subprocess.run([sys.executable, "-m", "kafkadump", *args, "--no-color"], capture_output=True, env=_env(),
                       timeout=120)
    return p.stdout.decode(), p.returncode


def _screen_rows(raw: bytes, cols: int) -> list[str]:
    """The rows a ``cols``-wide terminal shows, after checking that no line was wider than it."""
    lines = raw.count(b"\n")
    assert lines > 3, raw[:400]
    for line in SGR.sub("", raw.decode()).split("\r\n"):
        assert cell_len(line) <= cols, f"a line of {cell_len(line)} columns on a {cols}-column terminal:\n{line}"
    screen = pyte.Screen(cols, lines * 3 + 10)
    pyte.ByteStream(screen).feed(raw)
    rows = [row.rstrip() for row in screen.display[:lines]]
    # one screen row per line: a wrapped line pushes the cursor one row further down
    assert screen.cursor.y == lines, "a row wrapped:\n" + "\n".join(rows)
    return rows


def _annotation_words(piped: str) -> Counter:
    """The words of the annotations (and titles, findings) of a piped hexdump (today's layout:
    annotations from column 78 of a row, 76 of a line under it)."""
    words: Counter = Counter()
    for line in piped.splitlines():
        if ROW.match(line):
            words.update(line[78:].split())
        elif line.startswith(" " * 76):
            words.update(line.split())
        elif not line.startswith("   ("):   # a title or a finding (not the context's label)
            words.update(line.split())
    return words


def _plain_bytes(piped: str) -> list[dict[int, str]]:
    """offset -> byte (two hex digits, or ** masked) of the rows of a piped (plain, 16 a row) hexdump;
    the rows of each pane on their own (a compressed batch's second pane starts again from 0)."""
    panes: list[dict[int, str]] = []
    for line in piped.splitlines():
        if line.startswith("──"):
            panes.append({})
            continue
        m = ROW.match(line)
        if m and panes and len(line) >= 57 and line[57:60] == "  |":
            at = int(m.group(1), 16)
            for k in range(16):
                cell = line[9 + 3 * k + 1: 9 + 3 * k + 3]
                if cell.strip():
                    panes[-1][at + k] = cell
    return panes


def _screen_bytes(rows: list[str]) -> tuple[list[dict[int, str]], set[int]]:
    """The same read from the terminal's rows (coloured: no markers between the bytes), and the
    numbers of bytes a row holds."""
    panes: list[dict[int, str]] = []
    widths: set[int] = set()
    for row in rows:
        if row.startswith("──"):
            panes.append({})
            continue
        m = ROW.match(row)
        bar = row.find(" |", 10)
        if m and panes and bar > 10 and row[8:10] == "  " and (bar - 10) % 3 == 0:
            at = int(m.group(1), 16)
            n = (bar - 10) // 3
            widths.add(n)
            for k in range(n):
                cell = row[10 + 3 * k: 12 + 3 * k]
                if cell.strip():
                    panes[-1][at + k] = cell
    return panes, widths


def _check(args: list[str], cols: int, known: str, no_color: bool = False, on_terminal: tuple[str, ...] = ()) -> list[str]:
    """Run ``args`` piped and (with ``on_terminal`` options added) in a ``cols``-wide terminal; compare."""
    piped, status = _piped(args)
    raw, rc = _in_terminal([*args, *on_terminal], cols, no_color)
    assert rc == status
    rows = _screen_rows(raw, cols)
    on_screen = Counter(word for row in rows for word in row.split())
    words = _annotation_words(piped)
    cut = {w: n for w, n in words.items() if on_screen[w] < n}
    assert not cut, f"annotation words cut or missing at {cols} columns: {sorted(cut)[:10]}\n" + "\n".join(rows)
    assert all(on_screen[w] for w in known.split()), known
    if not no_color:
        # every byte at its absolute offset, masked as it is masked piped
        shown, widths = _screen_bytes(rows)
        assert shown == _plain_bytes(piped) and widths, "\n".join(rows)
    return rows


@pytest.mark.parametrize("cols", WIDTHS)
def test_hexdump_of_a_compressed_batch_fits(cols):
    # issue 27: at 80 columns every annotation wrapped mid-word
    rows = _check(["hexdump", "--batch", "3", V2], cols, "crc 4208488142 (computed crc32c 4208488142: ok)")
    assert any(row.startswith("── decompressed") for row in rows)


@pytest.mark.parametrize("cols", WIDTHS)
def test_hexdump_of_every_record_field_fits(cols):
    _check(["hexdump", "--records", "--batch", "0", V2], cols,
           "records[0].length = 78  [varint 9c 01 = zig-zag 156] baseTimestamp = 1700000000000 "
           "(2023-11-14T22:13:20.000Z)")


@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize(("where", "known"), [
    (["--context", "16", "--position", "1230"], "! garbage: skipped 37 bytes to the next intact batch at 1258"),
    (["--offset", "6"], "crc 4058160123 (computed crc32c 4293031650: MISMATCH) "
                        "! crc-mismatch: stored crc 4058160123 != computed 4293031650"),
], ids=["garbage-with-context", "crc-mismatch"])
def test_hexdump_of_damage_fits(cols, where, known):
    _check(["hexdump", *where, DAMAGED], cols, known)


@pytest.mark.parametrize("cols", WIDTHS)
def test_hexdump_masks_every_redacted_byte_at_any_width(cols):
    args = ["hexdump", "--records", "--redact", "keys,values", "--batch", "0", V2]
    rows = _check(args, cols, "records[0].value")
    text = "\n".join(rows)
    assert "**" in text and "alice" not in text and "user-1" not in text


def test_hexdump_fits_without_colour_too():
    # NO_COLOR on a terminal: the plain form, fitted the same way
    rows = _check(["hexdump", "--batch", "3", V2], 80, "crc 4208488142 (computed crc32c 4208488142: ok)",
                  no_color=True)
    assert any(row.startswith("000003b0 ") for row in rows)


def _produce_pcap(tmp_path: Path) -> str:
    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(4):
        bld.append(i, timestamp=1_700_000_000_000 + i, key=b"customer-%d" % i,
                   value=b'{"order":%d,"note":"a rather long value to preview"}' % i,
                   headers=[("trace-id", b"4bf92f3577b34da6a3ce929d0e0e4736")])
    c = B.Conversation()
    c.send("c", B.produce_v3_request(7, bytes(bld.build()), topic="orders-eu-central-1", client="checkout"))
    c.close()
    data, _ = B.pcap([(t, p) for t, p, _ in c.packets])
    path = tmp_path / "produce.pcap"
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("cols", WIDTHS)
def test_capture_frame_hexdump_fits(tmp_path, cols):
    pcap = _produce_pcap(tmp_path)
    _check(["capture", "--frame", "0", "--hexdump", "--records", pcap], cols,
           "topicData[0].name = orders-eu-central-1")
    rows = _check(["capture", "--frame", "0", "--hexdump", "--records", "--redact", "values", pcap], cols,
                  "clientId = checkout")
    assert "rather" not in "\n".join(rows)


@pytest.mark.parametrize("cols", WIDTHS)
def test_capture_frame_14_of_a_client_capture_fits(cols):
    pcap = CORPUS / "clients" / "wire" / "ck216_produce_none.pcap"
    if not pcap.exists():
        pytest.skip(f"shared corpus not present at {pcap}")
    _check(["capture", "--frame", "14", "--hexdump", str(pcap)], cols,
           "topicData[0].partitionData[0].records.batch[0].crc = 3470844386 (computed crc32c 3470844386: ok)")


def test_cols_sets_the_bytes_a_row_holds_on_a_terminal_and_piped():
    rows = _check(["hexdump", "--batch", "3", V2], 80, "partitionLeaderEpoch = 1", on_terminal=("-c", "4"))
    assert _screen_bytes(rows)[1] == {4}
    piped, rc = _piped(["hexdump", "--cols", "8", "--batch", "0", V2])
    assert rc == 0
    rows = [line for line in piped.splitlines() if ROW.match(line)]
    assert [int(r[:8], 16) for r in rows[:3]] == [0, 8, 16]
    assert rows[0].startswith("00000000 |00 00 00 00 00 00 00 00  |........| baseOffset = 0")


@pytest.mark.parametrize("args", [["hexdump", "--cols", "0", V2], ["hexdump", "-c", "257", V2],
                                  ["hexdump", "--cols", "many", V2], ["capture", "--cols", "8", V2]])
def test_cols_refuses_what_makes_no_row(args):
    p = subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, env=_env(), timeout=60)
    assert p.returncode == 2 and p.stderr, p
