"""Issue 27: legible at 80 columns, complete when piped.

Each command runs on a real pseudo-terminal of 80, 120 and 200 columns and pyte shows what a
person would see (:mod:`terminal_screen`): no row wraps, and what a person came for is whole on the
screen (folded between words is whole): every finding's message, the summary lines, the command
that ends a hanging transaction, every partition's whole name.  Piped, a table cuts no value: grep
finds in it what it finds in ``--json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import capture_builders as cb
import pytest
from builders import Rec, simple_batch, v2_batch
from conftest import FIXTURES
from forensics_builders import make_offsets_logdir, make_txn_logdir
from logdir_helpers import name, write
from terminal_screen import finding_messages, on_screen

WIDTHS = (80, 120, 200)
CLEAN = str(FIXTURES / "segment-v2" / "00000000000000000000.log")
DAMAGED = str(FIXTURES / "damaged" / "00000000000000000000.log")
# partition names that differ only in the middle, as Confluent's internal topics do
LONG_NAMES = [f"_confluent-controlcenter-5-1-2-1-{kind}-changelog-0"
              for kind in ("Group-ONE_MINUTE", "Group-THREE_HOURS", "MonitoringStream-ONE_MINUTE",
                           "KSTREAM-OUTERTHIS-0000000095-store")]
LONG_VALUE = ("order " + "x" * 150 + " shipped from the warehouse in Rotterdam at dawn," * 3 + " end").encode()


def kd(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}
    return subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, text=True, env=env)


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def dirs(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("legible")
    make_txn_logdir(str(root / "txn"))
    make_offsets_logdir(str(root / "off"))
    for i, n in enumerate(LONG_NAMES):
        write(str(root / "names" / n / name(0, ".log")), simple_batch(0, i + 1).data)
    long_value = root / "long" / "t-0" / name(0, ".log")
    write(str(long_value), v2_batch(0, [Rec(b"k", LONG_VALUE), Rec(None, b"short")]).data)
    conversation, _, _ = cb.kafka_conversation(simple_batch(0, 2).data)
    pcap = root / "c.pcap"
    pcap.write_bytes(cb.pcap([(t, p) for t, p, _ in conversation.packets])[0])
    from logdir_helpers import index_bytes

    write(str(root / "ix" / "t-0" / name(0, ".log")), Path(CLEAN).read_bytes())
    write(str(root / "ix" / "t-0" / name(0, ".index")), index_bytes([(7, 310)]))
    return {"txn": str(root / "txn"), "off": str(root / "off"), "names": str(root / "names"),
            "long": str(long_value), "pcap": str(pcap), "index_file": str(root / "ix" / "t-0" / name(0, ".index"))}



@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("command", ["batches", "records", "verify-crc"])
def test_findings_whole_on_screen(command, cols):
    screen = on_screen([command, DAMAGED], cols)
    assert screen.rc == 1 and not screen.wrapped, screen.rows
    messages = finding_messages(json_lines(kd(command, "--json", DAMAGED).stdout)) if command != "verify-crc" \
        else []
    assert command == "verify-crc" or messages
    for m in messages:
        assert screen.holds(m), (m, screen.rows)


@pytest.mark.parametrize("cols", WIDTHS)
def test_the_abort_command_can_be_copied(dirs, cols):
    screen = on_screen(["txn", dirs["txn"]], cols)
    assert screen.rc == 1 and not screen.wrapped, screen.rows
    # the command as a shell reads it pasted: a backslash ends a line that goes on
    pasted = " ".join(" ".join(row[:-1] if row.endswith("\\") else row for row in screen.rows).split())
    commands = [c for t in json_lines(kd("txn", "--json", dirs["txn"]).stdout) for c in t.get("abortCommands", [])]
    assert len(commands) == 2
    for c in commands:
        assert c in pasted, (c, screen.rows)
    for row in screen.rows:   # a folded command's lines hold nothing but the command
        if row.endswith("\\"):
            assert row.lstrip().startswith(("kafka-transactions.sh", "--", "abort", "orders")), row
    assert screen.holds("transactions: 5 (1 committed, 1 aborted, 1 ongoing, 2 hanging) in 6 partitions")


@pytest.mark.parametrize("cols", WIDTHS)
def test_the_offsets_summary_and_findings_whole(dirs, cols):
    screen = on_screen(["offsets", dirs["off"]], cols)
    assert screen.rc == 1 and not screen.wrapped, screen.rows
    assert screen.holds("1 beyond the log end")
    for m in finding_messages(json_lines(kd("offsets", "--json", dirs["off"]).stdout)):
        assert screen.holds(m), m


@pytest.mark.parametrize("cols", WIDTHS)
def test_partition_names_told_apart(dirs, cols):
    screen = on_screen(["offsets", dirs["names"]], cols)
    assert screen.rc == 0 and not screen.wrapped, screen.rows
    words = screen.text().split()
    for n in LONG_NAMES:
        assert n in words, (n, screen.rows)
    # a cut name keeps the partition number
    cut = [w for row in screen.rows for w in row.split() if "…" in w]
    assert all(w.endswith("-0") for w in cut), cut


@pytest.mark.parametrize("cols", WIDTHS)
def test_blocks_show_every_value_whole(dirs, cols):
    screen = on_screen(["records", "--format", "blocks", dirs["long"]], cols)
    assert screen.rc == 0 and not screen.wrapped, screen.rows
    assert screen.holds("value: " + LONG_VALUE.decode())
    table = on_screen(["records", dirs["long"]], cols)
    assert not table.wrapped and not table.holds(LONG_VALUE.decode())   # the table cuts it on a terminal


@pytest.mark.parametrize("cols", WIDTHS)
def test_a_decoded_internal_record_folds_under_its_column(cols):
    corpus = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "real" / "segments"
    seg = corpus / "mscaldas2012+kafka-connect-spooldir" / "kafka-data" / "__consumer_offsets-29" / name(0, ".log")
    if not seg.exists():
        pytest.skip("the shared corpus (../shared) is not beside the project")
    screen = on_screen(["records", str(seg)], cols)
    assert screen.rc == 0 and not screen.wrapped
    assert screen.holds("leader=sr-1-8fd246d3-9dcc-4bce-8a7b-76737d846089 members=1: sr-1@/172.21.0.6")


@pytest.mark.parametrize("cols", WIDTHS)
def test_capture_frames_fit(dirs, cols):
    screen = on_screen(["capture", dirs["pcap"]], cols)
    assert screen.rc in (0, 1) and not screen.wrapped, screen.rows
    assert any("Fetch" in row for row in screen.rows)


def test_piped_tables_hold_every_value(dirs):
    """grep finds in a piped table what it finds in --json."""
    for path in (dirs["long"], CLEAN):
        table = kd("records", path).stdout
        values = [d["value"] for d in json_lines(kd("records", "--json", path).stdout)
                  if d.get("type") == "record" and isinstance(d.get("value"), str)]
        assert values
        for v in values:
            assert v in table, v
    assert "warehouse in Rotterdam at dawn" in kd("records", dirs["long"]).stdout
    frames = kd("capture", "--records", dirs["pcap"]).stdout
    assert frames.count("\n") >= 3


def test_piped_names_are_whole(dirs):
    out = kd("offsets", dirs["names"]).stdout
    for n in LONG_NAMES:
        assert n in out
    assert "…" not in out


def test_blocks_is_only_for_batches_and_records():
    r = kd("dump", "--format", "blocks", CLEAN)
    assert r.returncode == 2 and "blocks" in r.stderr and "Traceback" not in r.stderr
    batches = kd("batches", "--format", "blocks", CLEAN)
    assert batches.returncode == 0
    assert "batch at position 0" in batches.stdout and "  crc: ok" in batches.stdout


# --- summaries computed from the items the rows show ------------------------------------------------

def test_diff_verdict_counts_what_the_runs_list(tmp_path):
    """The verdict line's "A has offsets X..Y (N records" is the runs' span and the JSON's count,
    for a copy cut at every 37th byte of its second segment and an empty copy."""
    import re
    import shutil

    a = tmp_path / "A" / "t-0"
    first = b"".join(simple_batch(o, 4).data for o in range(0, 16, 4))
    second = b"".join(simple_batch(o, 4, codec=1).data for o in range(16, 40, 4))
    write(str(a / name(0, ".log")), first)
    write(str(a / name(16, ".log")), second)
    cuts = [*range(0, len(second), 37), None]
    for cut in cuts:
        b = tmp_path / "B" / "t-0"
        shutil.rmtree(b.parent, ignore_errors=True)
        if cut is None:
            write(str(b / name(0, ".log")), b"")
        else:
            write(str(b / name(0, ".log")), first)
            write(str(b / name(16, ".log")), second[:cut])
        text = kd("diff", str(a), str(b)).stdout
        docs = json_lines(kd("diff", "--json", str(a), str(b)).stdout)
        summary = docs[-1]
        tails = [d for d in docs if d["type"] == "divergence" and d["pattern"] == "tail" and d["kind"] == "only-in-a"]
        m = re.search(r"A has offsets (\d+)\.\.(\d+) \((\d+) records?", text)
        assert (m is None) == (not tails), (cut, text)
        if m:
            assert int(m.group(3)) == summary["onlyInAByPattern"]["tail"] == sum(t["records"] for t in tails)
            assert (int(m.group(1)), int(m.group(2))) == (tails[0]["fromOffset"], tails[-1]["toOffset"])
        assert summary["onlyInA"] == sum(d["records"] for d in docs
                                         if d["type"] == "divergence" and d["kind"] == "only-in-a")


def test_txn_state_filter_shows_only_rows_in_that_state(dirs):
    rows = [line.split()[0] for line in kd("txn", "--state", "hanging", dirs["txn"]).stdout.splitlines()
            if line and not line.startswith(" ") and line.split()[0] in ("hanging", "committed", "aborted", "ongoing")]
    assert rows == ["hanging", "hanging"]
    everything = kd("txn", dirs["txn"]).stdout
    assert "committed  tx-hang" in everything   # the transaction's other partition, shown without the filter


# --- --fields: tab-separated columns for scripts (tshark -T fields) -----------------------------------

def test_fields_are_tab_separated_and_whole(dirs):
    for path in (DAMAGED, dirs["long"]):
        r = kd("records", "--fields", "offset,key,value", path)
        assert r.returncode in (0, 1)
        rows = [line.split("\t") for line in r.stdout.splitlines()]
        docs = [d for d in json_lines(kd("records", "--json", path).stdout) if d.get("type") == "record"]
        assert [int(row[0]) for row in rows] == [d["offset"] for d in docs]
        assert all(len(row) == 3 for row in rows)
        for row, d in zip(rows, docs):
            if isinstance(d["value"], str) and d["value"].isprintable():
                assert row[2] == d["value"]
        if path == DAMAGED:
            assert "crc-mismatch" in r.stderr and "crc-mismatch" not in r.stdout   # notes are diagnostics
    txn = kd("txn", "--fields", "state,partition", dirs["txn"])
    assert txn.stdout.splitlines()[0] == "hanging\torders-0"
    assert "kafka-transactions.sh" in txn.stderr and "kafka-transactions.sh" not in txn.stdout
    assert kd("batches", "--fields", "position,crc", DAMAGED).stdout.splitlines()[:2] == ["0\tok", "310\tBAD"]
    index = kd("dump", "--fields", "offset,logPosition", dirs["index_file"])
    assert index.returncode == 0 and index.stdout == "7\t310\n" and "checked against" in index.stderr


@pytest.mark.parametrize("extra", [["--json"], ["--columns", "offset"], ["--wide"], ["--format", "blocks"]])
def test_fields_refuse_other_layouts(extra):
    r = kd("records", "--fields", "offset", *extra, CLEAN)
    assert r.returncode == 2 and "--fields" in r.stderr and not r.stdout


# --- every other command on the screen -------------------------------------------------------------

def _other_commands(dirs: dict[str, str]) -> dict[str, list[str]]:
    return {
        "dump": ["dump", dirs["index"]],
        "carve": ["carve", DAMAGED],
        "diff": ["diff", dirs["diffA"], dirs["diffB"]],
        "metadata": ["metadata", dirs["metadata"]],
        "schemas": ["schemas", dirs["schemas"]],
        "capture-records": ["capture", "--records", dirs["pcap"]],
        "capture-frame": ["capture", "--frame", "3", dirs["pcap"]],
        "records-internal": ["records", dirs["offsets_segment"]],
    }


@pytest.fixture(scope="module")
def more_dirs(dirs, tmp_path_factory) -> dict[str, str]:
    from logdir_helpers import index_bytes
    from metadata_builders import MetaLog, broker, change, partition, topic
    from schemas_topic_builder import write_schemas_partition

    root = tmp_path_factory.mktemp("legible-more")
    index = root / "t-0" / name(0, ".index")
    write(str(index), index_bytes([(3, 0), (5, 310)]))   # the second entry is inside a batch: a finding
    write(str(root / "t-0" / name(0, ".log")), Path(CLEAN).read_bytes())
    data = Path(CLEAN).read_bytes()
    write(str(root / "A" / "t-0" / name(0, ".log")), data)
    write(str(root / "B" / "t-0" / name(0, ".log")), data[:1203])
    log = MetaLog()
    broker(log, 1, 10)
    topic(log, "orders-with-a-name-long-enough-to-need-folding-at-eighty-columns", 1)
    partition(log, 1, 0, [1, 2], [1, 2], 1)
    change(log, 1, 0, isr=[1], leader=2)
    write(str(root / "__cluster_metadata-0" / name(0, ".log")), bytes(log.data))
    schemas = write_schemas_partition(root / "schemas")
    offsets = next(Path(dirs["off"]).glob("__consumer_offsets-*/" + name(0, ".log")))
    return {**dirs, "index": str(index), "diffA": str(root / "A" / "t-0"), "diffB": str(root / "B" / "t-0"),
            "metadata": str(root / "__cluster_metadata-0"), "schemas": str(schemas), "offsets_segment": str(offsets)}


@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("which", ["dump", "carve", "diff", "metadata", "schemas", "capture-records",
                                   "capture-frame", "records-internal"])
def test_every_command_fits_and_keeps_its_findings(more_dirs, which, cols):
    args = _other_commands(more_dirs)[which]
    screen = on_screen(args, cols)
    assert screen.rc in (0, 1) and not screen.wrapped, (screen.rc, screen.stderr, screen.rows)
    assert screen.rows, screen.stderr
    if which.startswith("capture") or which == "carve":
        return   # their JSON words findings the same, but carve's and capture's tables list them differently
    as_json = kd(*args[:1], "--json", *args[1:])
    for m in finding_messages(json_lines(as_json.stdout)):
        assert screen.holds(m), (m, screen.rows)


# --- wrong input says so and exits 2; small things -----------------------------------------------

def test_inputs_with_nothing_to_read_exit_2(tmp_path, dirs):
    empty = tmp_path / "empty"
    empty.mkdir()
    text = tmp_path / "notes.txt"
    text.write_text("An English sentence, not a capture — nor a hex dump.\nA second line.\n")
    (tmp_path / "nothing.pcap").write_bytes(b"")
    cases = [("triage", str(empty)), ("txn", CLEAN), ("offsets", CLEAN), ("txn", str(text)), ("offsets", str(text)),
             ("capture", str(tmp_path / "nothing.pcap")), ("capture", str(text)), ("dump", "/dev/null")]
    for command, path in cases:
        r = kd(command, path)
        assert r.returncode == 2, (command, path, r.stdout, r.stderr)
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert "character device" in kd("dump", "/dev/null").stderr
    # what they can read still works: a segment inside its partition directory
    assert kd("txn", str(next(Path(dirs["txn"]).glob("orders-0/*.log")))).returncode == 0


def test_standard_input_is_dash():
    data = Path(CLEAN).read_bytes()
    for command in ("batches", "records", "verify-crc"):
        r = subprocess.run([sys.executable, "-m", "kafkadump", command, "--json", "-"], input=data,
                           capture_output=True)
        assert r.returncode == 0, r.stderr
        docs = json_lines(r.stdout.decode())
        assert docs and all(d.get("file", "-") == "-" for d in docs)


def test_every_column_has_an_ascii_name():
    r = kd("records", "--columns", "offset,offsetDelta,timestampDelta", CLEAN)
    assert r.returncode == 0 and r.stdout.splitlines()[0].split()[0] == "offset"
    assert kd("records", "--fields", "offsetdelta", CLEAN).stdout.splitlines()[:2] == ["0", "1"]
    bad = kd("records", "--columns", "nope", CLEAN)
    assert bad.returncode == 2 and "offsetDelta" in bad.stderr and "Δ" not in bad.stderr


def test_json_is_one_style_everywhere(dirs):
    for args in (["batches", CLEAN], ["verify-crc", DAMAGED], ["records", CLEAN], ["txn", dirs["txn"]],
                 ["offsets", dirs["off"]], ["capture", dirs["pcap"]], ["dump", dirs["long"]], ["triage", dirs["txn"]]):
        import re

        out = kd(args[0], "--json", *args[1:]).stdout
        bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', out)   # the JSON without the strings' contents
        assert out and ": " not in bare and ", " not in bare, (args, bare[:300])
    assert '"crcValid":false' in kd("batches", "--json", DAMAGED).stdout
    line = json.loads(kd("batches", "--json", dirs["long"]).stdout.splitlines()[0])
    assert (line["topic"], line["partition"]) == ("t", 0)


# --- help that fits ----------------------------------------------------------------------------------

HELP_COMMANDS = ["batches", "records", "verify-crc", "hexdump", "dump", "triage", "carve", "capture", "txn", "offsets",
                 "metadata", "diff", "schemas", "man", "spark"]


def _help(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR",)}
    env["COLUMNS"] = "80"
    return subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, text=True, env=env)


@pytest.mark.parametrize("command", HELP_COMMANDS)
def test_help_fits_80_columns(command):
    import re

    r = _help(command, "--help")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert len(lines) <= 130, len(lines)
    for line in lines:   # an option's name or a choice list never cut: long choice lists are named by a metavar
        assert not re.search(r"│ +-[-\w]*…", line), line
        assert not re.search(r"<[a-z-]+\|[a-z-|]*$", line.rstrip("│ ")), line


def test_kafkadump_alone_shows_the_help_once():
    r = _help()
    assert r.stdout.count("Usage:") + r.stderr.count("Usage:") == 1
    assert r.returncode == 2


# --- hexdump at the terminal's width -------------------------------------------------------------------

@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("which", ["segment", "damaged", "capture"])
def test_hexdump_annotations_whole_at_any_width(dirs, which, cols):
    args = {"segment": ["hexdump", "--batch", "1", CLEAN], "damaged": ["hexdump", "--batch", "1", DAMAGED],
            "capture": ["capture", "--frame", "3", "--hexdump", dirs["pcap"]]}[which]
    screen = on_screen(args, cols)
    assert screen.rc in (0, 1) and not screen.wrapped, screen.rows
    for sentence in ("baseOffset =", "partitionLeaderEpoch = 0", "computed crc32c"):
        assert screen.holds(sentence), (sentence, screen.rows)
    if which == "damaged":
        assert screen.holds("stored crc 4058160123 != computed 4293031650") or screen.holds("crc-mismatch")
    # an annotation is beside its row or on lines of its own, never cut by the terminal
    for row in screen.rows:
        assert len(row) <= cols


# --- triage ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def triage_dir(tmp_path_factory) -> str:
    from logdir_helpers import make_logdir

    root = tmp_path_factory.mktemp("legible-triage")
    make_logdir(root)
    return str(root)


@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("all_", [False, True], ids=["problems", "all"])
def test_triage_fits_and_keeps_findings_and_names(triage_dir, cols, all_):
    screen = on_screen(["triage", *(["--all"] if all_ else []), triage_dir], cols)
    assert screen.rc == 1 and not screen.wrapped, screen.rows
    report = json.loads(kd("triage", "--json", triage_dir).stdout)
    for f in report["findings"]:
        if f["severity"] != "info" or all_:
            assert screen.holds(f["message"]), (f["message"], screen.rows)
    assert screen.holds("verdict: errors")
    for p in report["partitions"]:
        if p["verdict"] != "clean" or all_:
            assert screen.holds(f"{p['topic']}-{p['partition']}"), p["path"]


def test_triage_totals_are_the_rows_sums(tmp_path):
    """Loose segments (one named by no base offset): the totals add up the files the table lists."""
    for name_ in ("a.log", "00000000000000000000.log"):
        (tmp_path / name_).write_bytes(Path(DAMAGED if name_ == "a.log" else CLEAN).read_bytes())
    report = json.loads(kd("triage", "--json", str(tmp_path / "a.log"), str(tmp_path / name(0, ".log"))).stdout)
    segments = [f for f in report["files"] if f["kind"] == "segment"]
    assert report["totals"]["batches"] == sum(f["batches"] for f in segments) == 26
    assert report["totals"]["records"] == sum(f["records"] for f in segments)
    assert len(report["findings"]) == sum(len(f["findings"]) for f in report["files"])
    assert all("file" in x and "code" in x for x in report["findings"])
    line = kd("triage", str(tmp_path / "a.log"), str(tmp_path / name(0, ".log"))).stdout.splitlines()[-1]
    assert "batches: 26" in line and f"records: {report['totals']['records']}" in line


def test_metadata_reports_the_replayed_leader_recovery_state(tmp_path):
    """A PartitionChangeRecord without leaderRecoveryState (a tagged field left out at its default)
    leaves the replayed state: RECOVERED, not null."""
    from metadata_builders import MetaLog, broker, change, partition, topic

    log = MetaLog()
    broker(log, 1, 10)
    topic(log, "o", 1)
    partition(log, 1, 0, [1, 2], [1, 2], 1)
    change(log, 1, 0, isr=[1])
    change(log, 1, 0, leader=2)
    write(str(tmp_path / "__cluster_metadata-0" / name(0, ".log")), bytes(log.data))
    docs = json_lines(kd("metadata", "--json", str(tmp_path / "__cluster_metadata-0")).stdout)
    changes = [d for d in docs if d["type"] == "partition-change"]
    assert [d["leaderRecoveryState"] for d in changes] == ["RECOVERED"] * 3


def test_diff_verdict_names_every_leader_epoch_of_the_tail(tmp_path):
    """The fixture's partition (leader epochs 0..4) against a copy cut at byte 1221 and an empty copy:
    the verdict's tail spans the runs listed, their records and their first and last leader epochs."""
    import re

    data = Path(CLEAN).read_bytes()
    write(str(tmp_path / "A" / "o-3" / name(0, ".log")), data)
    write(str(tmp_path / "cut" / "o-3" / name(0, ".log")), data[:1221])
    write(str(tmp_path / "empty" / "o-3" / name(0, ".log")), b"")
    a = str(tmp_path / "A" / "o-3")
    for other, wanted in (("cut", "A has offsets 16..39 (24 records, leader epochs 1..4) that B lacks"),
                          ("empty", "A has offsets 0..39 (40 records, leader epochs 0..4) that B lacks")):
        b = str(tmp_path / other / "o-3")
        docs = json_lines(kd("diff", "--json", a, b).stdout)
        runs = [d for d in docs if d["type"] == "divergence"]
        summary = docs[-1]
        assert summary["onlyInA"] == sum(r["records"] for r in runs) == int(re.search(r"\((\d+) records", wanted)[1])
        first, last = runs[0]["leaderEpochA"], runs[-1]["leaderEpochA"]
        assert f"offsets {runs[0]['fromOffset']}..{runs[-1]['toOffset']}" in wanted
        assert f"leader epochs {first}..{last}" in wanted
        assert wanted in kd("diff", a, b).stdout.splitlines()[-1]


def test_piped_triage_holds_every_file_value_whole(tmp_path):
    """grep finds a file's whole SHA-256 and mtime in the piped triage table, as in --json."""
    write(str(tmp_path / "t-0" / name(0, ".log")), Path(DAMAGED).read_bytes())
    write(str(tmp_path / "t-0" / "leader-epoch-checkpoint"), b"0\n1\n0 0\n")
    table = kd("triage", "--all", str(tmp_path)).stdout
    report = json.loads(kd("triage", "--json", str(tmp_path)).stdout)
    assert len(report["files"]) == 2
    for f in report["files"]:
        for value in (f["sha256"], f["mtime"], str(f["size"])):
            assert value in table, (value, table)
    for p in report["partitions"]:
        for value in (f"{p['topic']}-{p['partition']}", str(p["records"]), str(p["batches"])):
            assert value in table


NON_ASCII = "ordérs-0"


@pytest.mark.parametrize("command", ["records", "batches", "verify-crc", "dump", "triage", "carve", "txn",
                                     "offsets"])
def test_json_keeps_non_ascii_names_as_they_are(tmp_path, command):
    """One JSON style: a file, topic or header name is written as it is in every command's JSON
    (grep 'ordérs' finds it), never as \\u escapes in some and as text in others."""
    write(str(tmp_path / NON_ASCII / name(0, ".log")), Path(DAMAGED).read_bytes())
    path = str(tmp_path / NON_ASCII)
    if command in ("dump", "carve"):
        path += "/" + name(0, ".log")
    out = kd(command, "--json", path).stdout
    assert out and NON_ASCII in out and "\\u00e9" not in out, out[:400]
    if command == "records":
        headers = [h["key"] for d in json_lines(out) if d["type"] == "record" for h in d["headers"]]
        assert "émoji-hdr" in headers and '"key":"émoji-hdr"' in out


def test_fields_of_a_command_with_two_tables(tmp_path):
    """--fields naming one table's columns writes that table's rows and leaves the other table's
    out with a note on stderr, instead of stopping half way with a usage error."""
    from schemas_topic_builder import write_schemas_partition

    schemas = str(write_schemas_partition(tmp_path))
    docs = json_lines(kd("schemas", "--json", schemas).stdout)
    r = kd("schemas", "--fields", "subject,version", schemas)
    assert r.returncode == 1   # the builder's malformed record: a finding, not a usage error
    assert r.stdout.splitlines() == [f"{d['subject']}\t{d['version']}" for d in docs if d["type"] == "schema"]
    assert "left out" in r.stderr and "--json has them" in r.stderr
    settings = kd("schemas", "--fields", "setting,value", schemas).stdout.splitlines()
    assert settings == [f"{d['setting']}\t{'(removed)' if d['value'] is None else d['value']}"
                        for d in docs if d["type"] == "schema-setting"]
    assert kd("schemas", "--fields", "subject,nope", schemas).returncode == 2   # a name no table has


def test_triage_fields_and_columns(tmp_path):
    """triage has tables, so --fields (tab-separated, values whole, the rest on stderr) and --columns:
    the partitions' or the files' columns named."""
    write(str(tmp_path / "t-0" / name(0, ".log")), Path(DAMAGED).read_bytes())
    write(str(tmp_path / "u-1" / name(0, ".log")), Path(CLEAN).read_bytes())
    report = json.loads(kd("triage", "--json", str(tmp_path)).stdout)
    r = kd("triage", "--fields", "partition,verdict,records", str(tmp_path))
    assert r.returncode == 1
    assert r.stdout.splitlines() == [f"{p['topic']}-{p['partition']}\t{p['verdict']}\t{p['records']}"
                                     for p in report["partitions"]]
    assert "verdict: errors" in r.stderr and "crc-mismatch" in r.stderr
    files = kd("triage", "--fields", "kind,sha256,size", str(tmp_path)).stdout.splitlines()
    assert files == [f"{f['kind']}\t{f['sha256']}\t{f['size']}" for f in report["files"]]
    columns = kd("triage", "--columns", "partition,verdict", str(tmp_path)).stdout.splitlines()
    assert columns[0].split() == ["partition", "verdict"] and columns[1].split() == ["t-0", "errors"]
    assert columns[-1].startswith("verdict: errors")


def test_carve_with_nothing_recovered_says_no_offsets(tmp_path):
    """Issue 27 item 8: carve printed ``offsets None..None`` when it recovered nothing."""
    junk = tmp_path / "00000000000000000000.log"
    junk.write_bytes(bytes(range(256)) * 12 + b"x" * 200)
    run = kd("carve", str(junk))
    assert run.returncode == 1
    assert "None" not in run.stdout
    assert "recovered: 0 batches (0 bytes, no offsets)" in run.stdout
    assert "lost offsets 0..? (to the end)" in run.stdout   # from the file name: its base offset
