"""Nothing from the input reaches the terminal raw: every command, every human format.

A record whose key, value and header hold escape sequences (clear screen,
retitle the terminal, bell), a C1 control, a bidi override and rich markup,
in a partition directory and a capture whose names hold them too: no output
may carry them raw.  With --color, kafkadump's own styling is the only
escape sequence on stdout.
"""

from __future__ import annotations

import json

import pytest
from builders import Rec, v2_batch
from capture_builders import Conversation, frame, pcap, req_header
from typer.testing import CliRunner

from kafkadump.cli import app

HOSTILE = "\x1b[2J\x1b]0;pwned\x07\u009b\u202e[bold]x"
RAW = ("\x1b[2J", "\x1b]0;", "\x07", "\u009b", "\u202e")


def _segment_dir(tmp_path):
    d = tmp_path / f"top{HOSTILE}ic-0"
    d.mkdir()
    hostile = HOSTILE.encode()
    batch = v2_batch(0, [Rec(hostile, hostile, headers=((HOSTILE, hostile),)), Rec(b"k", b"plain")]).data
    (d / "00000000000000000000.log").write_bytes(batch)
    return d, batch


def _capture(tmp_path, batch: bytes):
    topic = HOSTILE.encode()
    body = (b"\x00\x00\x00\x01" + len(topic).to_bytes(2, "big") + topic)  # Metadata v1: one topic
    conv = Conversation()
    conv.send("c", frame(req_header(3, 1, 7, client=HOSTILE, hv=1) + body))
    conv.close()
    data, _ = pcap([(t, p) for t, p, _ in conv.packets])
    p = tmp_path / f"cap{HOSTILE}.pcap"
    p.write_bytes(data)
    return p


COMMANDS = [[cmd, "-f", fmt, "{log}"] for fmt in ("table", "json", "dump-log") for cmd in ("batches", "records")]
COMMANDS += [["records", "--json", "-e", "text", "{log}"], ["verify-crc", "{log}"], ["verify-crc", "--json", "{log}"],
             ["hexdump", "--records", "{log}"], ["hexdump", "--json", "-e", "hex", "{log}"], ["carve", "{log}"],
             ["carve", "--list", "{log}"], ["carve", "--json", "{log}"], ["dump", "{log}"], ["dump", "--json", "{log}"],
             ["triage", "{dir}"], ["triage", "--json", "{dir}"], ["capture", "{cap}"], ["capture", "--json", "{cap}"],
             ["capture", "--frame", "0", "{cap}"], ["capture", "--frame", "0", "--hexdump", "{cap}"],
             ["records", "{dir}/absent.log"], ["diff", "{dir}", "{log}"], ["diff", "--json", "{log}", "{dir}"],
             ["metadata", "{log}"], ["metadata", "--json", "--brokers", "{log}"], ["metadata", "--at", "0", "{log}"],
             ["txn", "{dir}"], ["txn", "--json", "{dir}"], ["offsets", "{dir}"], ["offsets", "--json", "{dir}"]]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    seg_dir, batch = _segment_dir(tmp)
    return seg_dir, _capture(tmp, batch)


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c[:-1]) for c in COMMANDS])
def test_no_raw_escape_in_any_output(inputs, command):
    seg_dir, capture_path = inputs
    places = {"log": str(seg_dir / "00000000000000000000.log"), "dir": str(seg_dir), "cap": str(capture_path)}
    args = [a.format(**places) for a in command]
    r = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert r.exit_code in (0, 1, 2), (args, r.exception)
    assert r.exception is None or isinstance(r.exception, SystemExit), (args, repr(r.exception))
    text = r.output
    assert all(s not in text for s in RAW), (args, [s for s in RAW if s in text], text[:2000])
    assert "\x1b" not in text, args  # piped: no styling either
    if "--json" in args:
        for line in r.stdout.splitlines():
            json.loads(line)


def test_the_hostile_bytes_are_shown_escaped(inputs):
    seg_dir, _ = inputs
    log = str(seg_dir / "00000000000000000000.log")
    dump = CliRunner().invoke(app, ["records", "-f", "dump-log", log]).output
    assert "key: \\x1b[2J\\x1b]0;pwned\\x07\\u009b\\u202e[bold]x" in dump
    text = CliRunner().invoke(app, ["records", "--json", "-e", "text", log]).stdout.splitlines()[0]
    assert json.loads(text)["key"] == HOSTILE  # JSON stays lossless
    assert "\\u009b" in text  # C1 escaped inside the JSON string


def test_color_output_has_only_our_styling(inputs):
    seg_dir, capture_path = inputs
    log = str(seg_dir / "00000000000000000000.log")
    for args in (["records", "--color", log], ["batches", "--color", log], ["hexdump", "--records", "--color", log],
                 ["triage", "--color", str(seg_dir)], ["capture", "--color", str(capture_path)],
                 ["diff", "--color", str(seg_dir), log], ["metadata", "--color", log]):
        r = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
        assert all(s not in r.output for s in RAW), (args, r.output[:2000])


def test_error_messages_escape_file_names(tmp_path):
    r = CliRunner().invoke(app, ["batches", str(tmp_path / f"x{HOSTILE}.log")])
    assert r.exit_code == 2
    assert all(s not in r.output for s in RAW) and "\\x1b[2J" in r.output


def test_the_printable_shortcut_escapes_what_the_tables_escape():
    """terminal_safe and jsontext.escape_unsafe leave printable text as it is before translating (the
    translation's slow path costs ~0.3 us a character on clean text): every code point, alone and beside
    a newline, comes out as the plain translation makes it."""
    from kafkadump.render import jsontext, lines

    for c in range(0x110000):
        ch = chr(c)
        assert lines.terminal_safe(ch) == ch.translate(lines._ONE_LINE)
        assert lines.terminal_safe(ch + "\n", keep_newlines=True) == (ch + "\n").translate(lines._MULTI_LINE)
        assert jsontext.escape_unsafe(ch) == ch.translate(jsontext._ESCAPES)
    text = "plain text, \u00e9 and \u6771\u4eac\n"
    assert lines.terminal_safe(text, keep_newlines=True) is text
    assert lines.terminal_safe("a\x1b[2Jb\u202ec\n") == "a\\x1b[2Jb\\u202ec\\n"
    assert jsontext.escape_unsafe('"a\x7fb\u2028"') == '"a\\u007fb\\u2028"'
