"""Issue 27's acceptance: every command and format on a real pseudo-terminal at 80, 120 and 200 columns,
on a clean, a damaged and an internal-topic log dir and a capture (:mod:`terminal_screen`: a pty read
back by pyte, the screen a person sees).

A human format (a table, blocks, a command's lines) fits the screen: no row wraps, every finding's
message (as ``--json`` words it) is whole on the screen, and so are the command's summary and verdict
lines (as piped output writes them).  A format for machines (JSON Lines, dump-log, ``--fields``) is the
same on a terminal as piped, at every width: nothing cut to the screen, nothing added.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import capture_builders as cb
import pytest
from builders import simple_batch
from conftest import FIXTURES
from forensics_builders import make_offsets_logdir, make_txn_logdir
from logdir_helpers import index_bytes, name, write
from metadata_builders import MetaLog, broker, change, partition, topic
from schemas_topic_builder import write_schemas_partition
from terminal_screen import ANSI, Screen, finding_messages, run_in_terminal

WIDTHS = (80, 120, 200)
SEGMENT = name(0, ".log")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("matrix")
    clean = root / "clean" / "orders-with-a-rather-long-topic-name-3"
    write(str(clean / SEGMENT), (FIXTURES / "segment-v2" / SEGMENT).read_bytes())
    write(str(clean / name(0, ".index")), index_bytes([(5, 310)]))
    damaged = root / "damaged" / "orders-with-a-rather-long-topic-name-7"
    write(str(damaged / SEGMENT), (FIXTURES / "damaged" / SEGMENT).read_bytes())
    internal = root / "internal"
    make_txn_logdir(str(internal))
    make_offsets_logdir(str(internal))
    log = MetaLog()
    broker(log, 1, 10)
    topic(log, "orders", 2)
    partition(log, 1, 0, [1, 2], [1, 2], 1)
    change(log, 1, 0, isr=[1], leader=2)
    write(str(internal / "__cluster_metadata-0" / SEGMENT), bytes(log.data))
    write_schemas_partition(internal)
    conversation, _, _ = cb.kafka_conversation(simple_batch(0, 3).data)
    pcap = root / "broker.pcap"
    pcap.write_bytes(cb.pcap([(t, p) for t, p, _ in conversation.packets])[0])
    (root / "cut.pcap").write_bytes(pcap.read_bytes()[:-30])   # its last packet cut short: a finding
    offsets = next(internal.glob("__consumer_offsets-*"))
    return {"clean": str(clean), "damaged": str(damaged), "internal": str(internal),
            "clean-log": str(clean / SEGMENT), "damaged-log": str(damaged / SEGMENT),
            "index": str(clean / name(0, ".index")), "offsets": str(offsets),
            "txn-state": str(next(internal.glob("__transaction_state-*"))),
            "metadata": str(internal / "__cluster_metadata-0"), "schemas": str(internal / "_schemas-0"),
            "pcap": str(pcap), "pcap-cut": str(root / "cut.pcap"), "clean-root": str(root / "clean"), "damaged-root": str(root / "damaged")}


# id -> the command line (inputs by name), and whether its piped output ends in a summary line that
# must be whole on the screen
HUMAN: dict[str, tuple[list[str], bool]] = {
    "batches-clean": (["batches", "clean"], False),
    "batches-damaged": (["batches", "damaged"], False),
    "batches-blocks": (["batches", "--format", "blocks", "damaged"], False),
    "records-damaged": (["records", "damaged"], False),
    "records-internal": (["records", "offsets"], False),
    "records-txn-state": (["records", "txn-state"], False),
    "records-metadata": (["records", "metadata"], False),
    "records-blocks": (["records", "--format", "blocks", "damaged"], False),
    "verify-crc": (["verify-crc", "damaged", "clean"], True),
    "hexdump": (["hexdump", "--batch", "1", "damaged-log"], False),
    "dump-index": (["dump", "index"], False),
    "dump-segment": (["dump", "damaged-log"], False),
    "triage-clean": (["triage", "clean-root"], True),
    "triage-damaged": (["triage", "damaged-root"], False),
    "triage-internal-all": (["triage", "--all", "internal"], True),
    "carve": (["carve", "damaged-log"], True),
    "capture": (["capture", "pcap"], False),
    "capture-cut": (["capture", "pcap-cut"], False),
    "capture-records": (["capture", "--records", "pcap"], False),
    "capture-frame": (["capture", "--frame", "3", "pcap"], False),
    "capture-hexdump": (["capture", "--frame", "3", "--hexdump", "pcap"], False),
    "txn": (["txn", "internal"], False),
    "offsets": (["offsets", "internal"], False),
    "metadata": (["metadata", "metadata"], True),
    "diff": (["diff", "clean", "damaged"], True),
    "schemas": (["schemas", "schemas"], True),
}

# formats for machines: the same bytes on a terminal as piped
MACHINE: dict[str, list[str]] = {
    "batches-json": ["batches", "--json", "damaged"],
    "batches-dump-log": ["batches", "--format", "dump-log", "damaged"],
    "batches-fields": ["batches", "--fields", "position,baseOffset,crc", "damaged"],
    "records-json": ["records", "--json", "offsets"],
    "records-dump-log": ["records", "--format", "dump-log", "damaged"],
    "records-fields": ["records", "--fields", "offset,key,value,headers", "damaged"],
    "verify-crc-json": ["verify-crc", "--json", "damaged"],
    "hexdump-json": ["hexdump", "--json", "--batch", "1", "damaged-log"],
    "dump-json": ["dump", "--json", "index"],
    "dump-dump-log": ["dump", "--format", "dump-log", "index"],
    "dump-fields": ["dump", "--fields", "offset,logPosition", "index"],
    "triage-json": ["triage", "--json", "internal"],
    "triage-fields": ["triage", "--fields", "partition,verdict,records", "internal"],
    "carve-json": ["carve", "--json", "damaged-log"],
    "capture-json": ["capture", "--json", "pcap"],
    "capture-fields": ["capture", "--records", "--fields", "frame,offset,key,value", "pcap"],
    "txn-json": ["txn", "--json", "internal"],
    "txn-fields": ["txn", "--fields", "state,partition,transactionalId", "internal"],
    "offsets-json": ["offsets", "--json", "internal"],
    "offsets-fields": ["offsets", "--fields", "partition,logEnd", "internal"],
    "metadata-json": ["metadata", "--json", "metadata"],
    "diff-json": ["diff", "--json", "clean", "damaged"],
    "schemas-json": ["schemas", "--json", "schemas"],
    "schemas-fields": ["schemas", "--fields", "subject,version,id", "schemas"],
}


def _args(template: list[str], inputs: dict[str, str]) -> list[str]:
    return [template[0], *(inputs.get(a, a) for a in template[1:])]


@functools.cache
def piped(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}
    return subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def _json_of(args: list[str]) -> list[dict]:
    """The same command's --json objects (a single report object or JSON Lines)."""
    command = args[0]
    out = piped(command, "--json", *[a for a in args[1:] if a not in ("--format", "blocks", "--all")]).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]



# commands whose lines word a finding in their own way (carve: a damaged range's line names its codes;
# verify-crc: kafka-dump-log's words, storedCrc and computedCrc)
_OWN_WORDING = ("carve", "verify-crc")


@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("case", sorted(HUMAN))
def test_every_human_view_fits_and_keeps_what_a_person_came_for(inputs, case, cols):
    template, summary = HUMAN[case]
    args = _args(template, inputs)
    raw, err, rc = run_in_terminal(args, cols)
    screen = Screen(raw, cols, rc, err.decode(errors="replace"))
    reference = piped(*args)
    assert "Traceback" not in screen.stderr and rc == reference.returncode and rc in (0, 1), \
        (rc, reference.returncode, screen.stderr)
    assert screen.rows and not screen.wrapped, screen.rows
    assert all(len(row) <= cols for row in screen.rows)
    if args[0] not in _OWN_WORDING:
        problems_view = args[0] == "triage" and "--all" not in args
        docs = _json_of(args)
        infos = {f["message"] for d in docs for f in d.get("findings", []) if f.get("severity") == "info"} \
            if problems_view else set()
        for m in finding_messages(docs):
            assert m in infos or screen.holds(m), (m, screen.rows)
    if summary:
        last = [line for line in reference.stdout.splitlines() if line.strip()][-1]
        assert screen.holds(last), (last, screen.rows)
    if args[0] == "triage":
        report = _json_of(args)[0]
        assert screen.holds(f"verdict: {report['verdict']}")
        for p in report["partitions"]:   # every partition told apart, by its whole name
            if p["verdict"] != "clean" or "--all" in args:
                assert screen.holds(f"{p['topic']}-{p['partition']}"), (p["path"], screen.rows)
    if args[0] == "txn":
        pasted = " ".join(" ".join(row[:-1] if row.endswith("\\") else row for row in screen.rows).split())
        commands = [c for d in _json_of(args) for c in d.get("abortCommands", [])]
        assert commands and all(c in pasted for c in commands), screen.rows


def _as_piped(raw: bytes) -> str:
    """What a program wrote to the terminal, as it wrote it: the terminal's CR LF made LF again."""
    return ANSI.sub("", raw.decode("utf-8", errors="replace")).replace("\r\n", "\n")


# a format for machines never reads the terminal's width: the same bytes at every width
@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("case", sorted(MACHINE))
def test_formats_for_machines_are_the_same_on_a_terminal(inputs, case, cols):
    args = _args(MACHINE[case], inputs)
    raw, err, rc = run_in_terminal(args, cols)
    reference = piped(*args)
    assert rc == reference.returncode and rc in (0, 1), (rc, err.decode(errors="replace"))
    assert reference.stdout.strip()
    if args[0] == "triage" and "--json" in args:   # one report object: when it was made and how long it took differ
        assert _timeless(_as_piped(raw)) == _timeless(reference.stdout)
    else:
        assert _as_piped(raw) == reference.stdout


def _timeless(text: str) -> dict:
    report = json.loads(text)
    del report["startedAt"], report["elapsedSeconds"]
    return report


def test_every_command_and_format_is_driven():
    """The two tables above name every data command, and every format each one has (its --format
    choices, --fields when it has a table)."""
    import inspect

    from kafkadump.cli import HELP_PANELS, app, load_all_commands

    load_all_commands()
    commands = set(HELP_PANELS) - {"spark", "man", "report"}   # spark runs on a cluster, man is the manual
    assert {t[0] for t, _ in HUMAN.values()} == commands and {t[0] for t in MACHINE.values()} == commands
    driven = {(t[0], f) for t in MACHINE.values() for f in ("--json", "dump-log", "--fields") if f in t}
    driven |= {(t[0], "blocks") for t, _ in HUMAN.values() if "blocks" in t}
    for info in app.registered_commands:
        command = info.name or info.callback.__name__.replace("_", "-")
        if command not in commands:
            continue
        params = inspect.signature(info.callback).parameters
        wanted = {"--json"} | ({"--fields"} if "fields" in params else set())
        if "fmt" in params:
            wanted |= {"dump-log", "blocks"} if command in ("batches", "records") else {"dump-log"}
        assert {(command, f) for f in wanted} <= driven, (command, wanted)


# --- piped, a table holds every value whole: grep finds in it what it finds in --json ---------------

# case -> (the command line, the --json fields (a dotted path into an object) the table shows)
PIPED_TABLES: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "batches": (["batches", "damaged"], ("position", "baseOffset", "lastOffset", "size", "producerId",
                                         "recordCount", "partitionLeaderEpoch")),
    "records": (["records", "damaged"], ("offset", "key", "value")),
    "records-internal": (["records", "offsets"], ("offset", "key.data.group", "key.data.topic",
                                                  "value.data.offset", "value.data.metadata")),
    "dump": (["dump", "index"], ("position", "entry", "relativeOffset", "offset", "logPosition")),
    "capture": (["capture", "pcap"], ("index", "apiName", "correlationId", "clientId", "size")),
    "capture-records": (["capture", "--records", "pcap"], ("offset", "key", "value", "topic")),
    "txn": (["txn", "internal"], ("state", "transactionalId", "producerId")),
    "offsets": (["offsets", "internal"], ("earliest", "logEnd", "highWatermark", "group", "committed", "lag")),
    "schemas": (["schemas", "schemas"], ("subject", "version", "id", "setting")),
    "triage": (["triage", "--all", "internal"], ("batches", "records", "sha256", "mtime", "size", "kind")),
}


def _at(d: dict, path: str) -> object:
    for part in path.split("."):
        d = d.get(part) if isinstance(d, dict) else None
    return d


@pytest.mark.parametrize("case", sorted(PIPED_TABLES))
def test_piped_tables_hold_every_value_whole(inputs, case):
    template, fields = PIPED_TABLES[case]
    args = _args(template, inputs)
    text = piped(*args).stdout
    docs = _json_of(args)
    if args[0] == "triage":
        docs = docs[0]["partitions"] + docs[0]["files"]
    checked = 0
    for d in docs:
        for field in fields:
            value = _at(d, field)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and value != "":
                assert str(value) in text, (field, value)
                checked += 1
    assert checked >= 5, checked
    assert "…" not in text
