"""The fast path (cli/fast_path.py) against typer: the same command lines give the same output.

Every command line below runs twice in this process, once through the fast
path and once through typer (the path every command line the fast path does
not fully understand takes): stdout, stderr and the exit status must be equal.
Each case also says whether the fast path should take it, so a fast path that
quietly leaves everything to typer fails too.
"""

from __future__ import annotations

import inspect
import signal
import sys
from pathlib import Path

import pytest

from kafkadump.cli import (
    capture_body,
    fast_path,
    forensics_bodies,
    logdir_bodies,
    payload_bodies,
    replica_bodies,
    segment_bodies,
)
from kafkadump.cli.fast_path import parse

ROOT = Path(__file__).resolve().parent.parent
V2 = str(ROOT / "fixtures/segment-v2/00000000000000000000.log")
MIXED = str(ROOT / "fixtures/segment-mixed/00000000000000000000.log")
DAMAGED = str(ROOT / "fixtures/damaged/00000000000000000000.log")
PADDED = str(ROOT / "fixtures/damaged/padded.log")
MISSING = str(ROOT / "fixtures/no-such-segment.log")

FAST, TYPER = True, False

CASES: list[tuple[bool, list[str]]] = [
    # batches: formats, option forms, repeated options, --, arguments among options
    (FAST, ["batches", V2]),
    (FAST, ["batches", "--json", MIXED]),
    (FAST, ["batches", "-f", "json", V2]),
    (FAST, ["batches", "-fjson", V2]),
    (FAST, ["batches", "--format=json", DAMAGED]),
    (FAST, ["batches", "--format", "dump-log", MIXED]),
    (FAST, ["batches", "--format", "table", "--format", "json", V2]),
    (FAST, ["batches", "--shallow", "--json", DAMAGED, PADDED]),
    (FAST, ["batches", "--json", "--format", "table", V2]),
    (FAST, ["batches", "--wide", "--columns", "position,crc", MIXED]),
    (FAST, ["batches", "--columns=position", "--columns", "crc,count", V2]),
    (FAST, ["batches", "--max-depth", "1", "--max-decompressed=100", MIXED]),
    (FAST, ["batches", "--max-scan", "0", "--max-ratio", "0", DAMAGED]),
    (FAST, ["batches", "--no-color", "--color", V2]),
    (FAST, ["batches", "--color", "--no-color", V2]),
    (FAST, ["batches", V2, "--json", MIXED]),
    (FAST, ["batches", "--json", "--", V2, MIXED]),
    (FAST, ["batches", "--", "--json"]),
    (FAST, ["batches", "--json", "--", "-f"]),
    (FAST, ["batches", "-"]),
    (FAST, ["batches", MISSING]),
    (FAST, ["batches", "--json", MISSING]),
    (FAST, ["batches", "-fjson", V2, MISSING]),
    (FAST, ["batches", "--max-depth", "064", V2]),
    (TYPER, ["batches"]),
    (TYPER, ["batches", "--json"]),
    (TYPER, ["batches", "--bogus", V2]),
    (TYPER, ["batches", "--jsn", V2]),
    (TYPER, ["batches", "-x", V2]),
    (TYPER, ["batches", "-h"]),
    (TYPER, ["batches", "--help"]),
    (TYPER, ["batches", "--json=yes", V2]),
    (TYPER, ["batches", "--json=", V2]),
    (TYPER, ["batches", "--max-depth", "65", V2]),
    (TYPER, ["batches", "--max-depth=0", V2]),
    (TYPER, ["batches", "--max-depth", "+4", V2]),
    (TYPER, ["batches", "--max-depth", " 4", V2]),
    (TYPER, ["batches", "--max-depth", "four", V2]),
    (TYPER, ["batches", "--max-depth", "4.0", V2]),
    (TYPER, ["batches", "--max-depth"]),
    (TYPER, ["batches", V2, "--format"]),
    (TYPER, ["batches", "--format", "JSON", V2]),
    (TYPER, ["batches", "-f=json", V2]),
    (TYPER, ["batches", "--format", "csv", V2]),
    (TYPER, ["batches", "--encoding", "hex", V2]),
    (TYPER, ["batches", "--version"]),
    (TYPER, ["batches", "-" + "\N{LATIN SMALL LETTER E WITH ACUTE}", V2]),
    # records: filters, repeatable options, values that look like options
    (FAST, ["records", V2]),
    (FAST, ["records", "--json", MIXED]),
    (FAST, ["records", "--json", "-e", "hex", V2]),
    (FAST, ["records", "-ebase64", "--json", V2]),
    (FAST, ["records", "--encoding=text", "--json", DAMAGED]),
    (FAST, ["records", "--key", "key-0-kk", "--key", "hex:6b", "--json", V2]),
    (FAST, ["records", "--key=-x", V2]),
    (FAST, ["records", "--key", "-x", V2]),
    (FAST, ["records", "--key", "--", V2]),
    (FAST, ["records", "--key", "--json", V2]),
    (FAST, ["records", "--key", "null", "--key", "base64:!!", V2]),
    (FAST, ["records", "--from-offset", "1", "--to-offset", "3", V2]),
    (FAST, ["records", "--from-offset", "-1", "--json", V2]),
    (FAST, ["records", "--count", "2", "--json", MIXED]),
    (FAST, ["records", "--count", "1", "--last", "1", V2]),
    (FAST, ["records", "--last", "2", "--json", MIXED]),
    (FAST, ["records", "--from-time", "2023-11-14", "--to-time", "1999999999999", V2]),
    (FAST, ["records", "--from-time", "nonsense", "--json", V2]),
    (FAST, ["records", "--decode", "none", "--json", V2]),
    (FAST, ["records", "--decode", "offsets", V2]),
    (FAST, ["records", "-f", "dump-log", MIXED]),
    (FAST, ["records", "--format", "dump-log", "--decode", "auto", DAMAGED]),
    (FAST, ["records", "--where", "offset > 1", "--json", V2]),
    (FAST, ["records", "--where", "offset >", V2]),
    (FAST, ["records", "--where=--json", V2]),
    (FAST, ["records", "--redact", "values", "--json", V2]),
    (FAST, ["records", "--redact", "nothing", V2]),
    (FAST, ["records", "--redact-fields", "a,b", "--no-redact-secrets", "--json", V2]),
    (FAST, ["records", "--detect", "--json", V2]),
    (FAST, ["records", "--wide", MIXED, DAMAGED]),
    (TYPER, ["records", "--count", "0", V2]),
    (TYPER, ["records", "--count", "-1", V2]),
    (TYPER, ["records", "--decode", "bogus", V2]),
    (TYPER, ["records", "--from-offset", "1e3", V2]),
    (TYPER, ["records", "--key"]),
    (TYPER, ["records", "--shallow", V2]),
    (TYPER, ["records", "-e", V2]),
    # verify-crc
    (FAST, ["verify-crc", V2]),
    (FAST, ["verify-crc", "--json", DAMAGED]),
    (FAST, ["verify-crc", DAMAGED, PADDED, MIXED]),
    (FAST, ["verify-crc", "--max-scan", "0", DAMAGED]),
    (FAST, ["verify-crc", "--json", MISSING, V2]),
    (TYPER, ["verify-crc", "--format", "json", V2]),
    (TYPER, ["verify-crc", "--color", V2]),
    (TYPER, ["verify-crc"]),
    # hexdump
    (FAST, ["hexdump", V2]),
    (FAST, ["hexdump", "--json", "--batch", "1", MIXED]),
    (FAST, ["hexdump", "--position", "0", "--records", V2]),
    (FAST, ["hexdump", "--context", "16", "--offset", "0", DAMAGED]),
    (FAST, ["hexdump", "-e", "base64", "--json", V2]),
    (FAST, ["hexdump", "--batch", "99", V2]),
    (FAST, ["hexdump", "-c", "8", "--records", V2]),
    (FAST, ["hexdump", "--cols=4", "--json", V2]),
    (FAST, ["hexdump", "--cols", "0", V2]),
    (FAST, ["hexdump", "-c", "257", V2]),
    (TYPER, ["hexdump", "--cols", "many", V2]),
    (TYPER, ["hexdump", V2, MIXED]),
    (TYPER, ["hexdump", "--batch", "-1", V2]),
    (TYPER, ["hexdump"]),
    # capture (its inputs, written by the captures fixture: PCAP, HEX, a response's hex; NOPE: missing)
    (FAST, ["capture", "PCAP"]),
    (FAST, ["capture", "--json", "PCAP"]),
    (FAST, ["capture", "--records", "PCAP"]),
    (FAST, ["capture", "--records", "--json", "-e", "hex", "PCAP"]),
    (FAST, ["capture", "--frame", "3", "PCAP"]),
    (FAST, ["capture", "--frame=1", "--hexdump", "PCAP"]),
    (FAST, ["capture", "--frame", "1", "--hexdump", "--json", "PCAP"]),
    (FAST, ["capture", "--hexdump", "PCAP"]),
    (FAST, ["capture", "--frame", "1", "--hexdump", "--cols", "12", "PCAP"]),
    (FAST, ["capture", "--cols", "12", "PCAP"]),
    (FAST, ["capture", "--frame", "99", "PCAP"]),
    (FAST, ["capture", "-p", "9093", "PCAP"]),
    (FAST, ["capture", "-p9092", "--port", "9093", "--no-detect", "PCAP"]),
    (FAST, ["capture", "--api", "Fetch", "--api", "3", "PCAP"]),
    (FAST, ["capture", "--topic", "t", "--client", "t", "--json", "PCAP"]),
    (FAST, ["capture", "--topic", "nothing", "PCAP"]),
    (FAST, ["capture", "--wide", "--columns", "api,summary", "PCAP"]),
    (FAST, ["capture", "--max-depth", "1", "--max-decompressed=100", "--max-ratio", "0", "PCAP"]),
    (FAST, ["capture", "--where", "offset > 1", "--records", "--json", "PCAP"]),
    (FAST, ["capture", "--redact", "values", "--json", "PCAP"]),
    (FAST, ["capture", "--detect", "--records", "PCAP"]),
    (FAST, ["capture", "--as", "response", "--api-key", "999", "--json", "RESPONSE"]),
    (FAST, ["capture", "--as", "response", "--api-key", "18", "--api-version", "0", "RESPONSE"]),
    (FAST, ["capture", "--as=records", "RESPONSE"]),
    (FAST, ["capture", "HEX"]),
    (FAST, ["capture", "--json", "HEX"]),
    (FAST, ["capture", "NOPE"]),
    (FAST, ["capture", "--json", "NOPE"]),
    (FAST, ["capture", "-"]),
    (TYPER, ["capture"]),
    (TYPER, ["capture", "PCAP", "HEX"]),
    (TYPER, ["capture", "--as", "Request", "HEX"]),
    (TYPER, ["capture", "--as", "frames", "HEX"]),
    (TYPER, ["capture", "-p", "0", "PCAP"]),
    (TYPER, ["capture", "--port", "65536", "PCAP"]),
    (TYPER, ["capture", "--frame", "-1", "PCAP"]),
    (TYPER, ["capture", "--api-key", "32768", "PCAP"]),
    (TYPER, ["capture", "--format", "json", "PCAP"]),
    (TYPER, ["capture", "--max-scan", "0", "PCAP"]),
    (TYPER, ["capture", "--records=1", "PCAP"]),
    (TYPER, ["capture", "-p"]),
    (TYPER, ["capture", "--help"]),
    # dump (PARTITION: a partition directory holding the v2 segment, LOGDIR: the log dir holding it)
    (FAST, ["dump", V2]),
    (FAST, ["dump", "--json", MIXED]),
    (FAST, ["dump", "-t", "segment", "--no-verify", V2]),
    (FAST, ["dump", "--type=segment", "-fjson", DAMAGED]),
    (FAST, ["dump", "--format", "dump-log", V2]),
    (FAST, ["dump", "--format", "blocks", V2]),
    (FAST, ["dump", "--fields", "kind", V2]),
    (FAST, ["dump", MISSING]),
    (FAST, ["dump", "--json", MISSING]),
    (TYPER, ["dump"]),
    (TYPER, ["dump", "--type", "index", V2]),
    (TYPER, ["dump", "--help"]),
    (TYPER, ["dump", "--max-depth", "1", V2]),
    # triage
    (FAST, ["triage", "LOGDIR"]),
    (FAST, ["triage", "--json", "PARTITION"]),
    (FAST, ["triage", "-j", "1", "--shallow", "--max-findings", "1", DAMAGED]),
    (FAST, ["triage", "--no-files", "--all", "--jobs=1", DAMAGED, PADDED]),
    (FAST, ["triage", MISSING]),
    (TYPER, ["triage", "--jobs", "0", "LOGDIR"]),
    (TYPER, ["triage", "-j", "65", "LOGDIR"]),
    (TYPER, ["triage", "--max-findings", "0", "LOGDIR"]),
    (TYPER, ["triage", "--format", "json", "LOGDIR"]),
    # carve (CARVED: a new file, written by both runs: --force)
    (FAST, ["carve", DAMAGED]),
    (FAST, ["carve", "--json", PADDED]),
    (FAST, ["carve", "--list", DAMAGED]),
    (FAST, ["carve", "-o", "CARVED", "--force", "--json", DAMAGED]),
    (FAST, ["carve", "--output=CARVED", "--force", DAMAGED]),
    (FAST, ["carve", MISSING]),
    (TYPER, ["carve"]),
    (TYPER, ["carve", DAMAGED, PADDED]),
    (TYPER, ["carve", "--wide", DAMAGED]),
    # txn
    (FAST, ["txn", "LOGDIR"]),
    (FAST, ["txn", "--json", "PARTITION"]),
    (FAST, ["txn", "-s", "hanging", "--state", "aborted", "--json", "LOGDIR"]),
    (FAST, ["txn", "--transactional-id", "x", "--txn-partitions", "3", "--bootstrap-server", "h:1", "LOGDIR"]),
    (FAST, ["txn", "-j", "1", "--wide", "LOGDIR"]),
    (FAST, ["txn", MISSING]),
    (FAST, ["txn", "--json", "SCHEMAS"]),
    (TYPER, ["txn", "--state", "Hanging", "LOGDIR"]),
    (TYPER, ["txn", "--txn-partitions", "0", "LOGDIR"]),
    (TYPER, ["txn"]),
    # offsets
    (FAST, ["offsets", "LOGDIR"]),
    (FAST, ["offsets", "--json", "--history", "-g", "g", "--group", "h", "LOGDIR"]),
    (FAST, ["offsets", "-t", "2023-11-14", "PARTITION"]),
    (FAST, ["offsets", "--time", "nonsense", "LOGDIR"]),
    (FAST, ["offsets", "--offsets-partitions", "3", "--columns", "partition", "LOGDIR"]),
    (FAST, ["offsets", MISSING]),
    (TYPER, ["offsets", "--offsets-partitions", "0", "LOGDIR"]),
    (TYPER, ["offsets", "--history=1", "LOGDIR"]),
    # metadata
    (FAST, ["metadata", V2]),
    (FAST, ["metadata", "--json", MIXED]),
    (FAST, ["metadata", "--brokers", "--topic", "t", "--topic", "u", V2]),
    (FAST, ["metadata", "--at", "0", V2]),
    (FAST, ["metadata", "--at", "2023-11-14", "--json", V2]),
    (FAST, ["metadata", "--max-depth", "1", "--max-scan", "0", DAMAGED]),
    (FAST, ["metadata", MISSING]),
    (TYPER, ["metadata", V2, MIXED]),
    (TYPER, ["metadata", "--at"]),
    # diff
    (FAST, ["diff", V2, MIXED]),
    (FAST, ["diff", "--json", "PARTITION", V2]),
    (FAST, ["diff", "--max-ratio", "0", DAMAGED, PADDED]),
    (FAST, ["diff", V2, MISSING]),
    (TYPER, ["diff", V2]),
    (TYPER, ["diff", V2, MIXED, DAMAGED]),
    # schemas (SCHEMAS: a directory of one schema file)
    (FAST, ["schemas", "SCHEMAS"]),
    (FAST, ["schemas", "--json", "SCHEMAS"]),
    (FAST, ["schemas", "--wide", "SCHEMAS", "PARTITION"]),
    (FAST, ["schemas", MISSING]),
    (TYPER, ["schemas"]),
    (TYPER, ["schemas", "--format", "json", "SCHEMAS"]),
    # not the fast path's commands, or no command
    (TYPER, []),
    (TYPER, ["--version"]),
    (TYPER, ["--json", "batches", V2]),
    (TYPER, ["batch", V2]),
    (TYPER, ["man"]),
]


# every body the fast path runs, by module
BODIES = [(segment_bodies, n) for n in ("batches", "records", "verify_crc", "hexdump")] + [
    (capture_body, "capture"), (logdir_bodies, "dump"), (logdir_bodies, "triage"), (logdir_bodies, "carve"),
    (forensics_bodies, "txn"), (forensics_bodies, "offsets"), (replica_bodies, "metadata"),
    (replica_bodies, "diff"), (payload_bodies, "schemas")]


def _ids() -> list[str]:
    return [" ".join(Path(a).name if "/" in a else a for a in argv) or "(none)" for _, argv in CASES]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    """The cases' generated inputs: a small pcap (a produce and a fetch), a frame's hex, a response's hex;
    a log dir of one partition (the v2 segment), a directory of one schema, a new file's name."""
    sys.path.insert(0, str(ROOT / "tests"))
    import capture_builders as B
    from test_protocol import first_batch

    where = tmp_path_factory.mktemp("captures")
    conversation, _, _ = B.kafka_conversation(first_batch()[0])
    (where / "small.pcap").write_bytes(B.pcap([(t, p) for t, p, _ in conversation.packets])[0])
    (where / "request.hex").write_text(B.frame(B.apiversions_v3_request()).hex() + "\n")
    (where / "response.hex").write_text("0000000800000007000000000000\n")
    partition = where / "logdir" / "t-0"
    partition.mkdir(parents=True)
    (partition / "00000000000000000000.log").write_bytes(Path(V2).read_bytes())
    (where / "schemas").mkdir()
    (where / "schemas" / "1.avsc").write_text('"string"\n')
    return {"PCAP": str(where / "small.pcap"), "HEX": str(where / "request.hex"),
            "RESPONSE": str(where / "response.hex"), "NOPE": str(where / "no-such.pcap"),
            "LOGDIR": str(where / "logdir"), "PARTITION": str(partition), "SCHEMAS": str(where / "schemas"),
            "CARVED": str(where / "carved.log")}


def _real(argv: list[str], files: dict[str, str]) -> list[str]:
    """The command line with the inputs' names replaced by their paths (``--option=NAME`` too)."""
    def real(arg: str) -> str:
        option, eq, value = arg.partition("=")
        return f"{option}={files.get(value, value)}" if eq and option.startswith("--") else files.get(arg, arg)

    return [real(a) for a in argv]


@pytest.fixture
def isolated(monkeypatch):
    """A run that leaves the interpreter as it found it (the runner wraps stdout and handles SIGINT)."""
    handler = signal.getsignal(signal.SIGINT)
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "stdin", open("/dev/null"))  # batches - reads no terminal
    yield
    signal.signal(signal.SIGINT, handler)
    sys.stdin.close()


def _run(capsys, monkeypatch, argv: list[str], fast: bool) -> tuple[object, str, str]:
    import kafkadump.cli as cli
    from kafkadump.cli.typer_main import main as typer_main

    cli.load_all_commands()
    monkeypatch.setattr(sys, "argv", ["kafkadump", *argv])
    stdout = sys.stdout
    try:
        if fast:
            fast_path.run_fast(argv)
            raise AssertionError("the fast path returned: it did not take the command line")
        typer_main()
    except SystemExit as e:
        code = e.code
    finally:
        sys.stdout = stdout
    out, err = capsys.readouterr()
    return code, out, err


def _steady(said: tuple[object, str, str]) -> tuple[object, str, str]:
    """A run's output without the clock: triage's JSON says when it started and how long it took."""
    import re

    code, out, err = said
    out = re.sub(r'"startedAt":"[^"]*","elapsedSeconds":[0-9.e-]+', '"startedAt":"","elapsedSeconds":0', out)
    return code, out, err


@pytest.mark.parametrize(("fast", "argv"), CASES, ids=_ids())
def test_the_fast_path_and_typer_say_the_same(capsys, monkeypatch, isolated, inputs, fast, argv):
    argv = _real(argv, inputs)
    assert (parse(argv) is not None) is fast
    typer_said = _run(capsys, monkeypatch, argv, fast=False)
    if fast:
        assert _steady(_run(capsys, monkeypatch, argv, fast=True)) == _steady(typer_said)
    assert typer_said[0] in (0, 1, 2)


@pytest.mark.parametrize("argv", [argv for fast, argv in CASES if fast],
                         ids=[i for i, (fast, _) in zip(_ids(), CASES) if fast])
def test_the_fast_path_calls_the_body_with_what_typer_gives_it(monkeypatch, inputs, argv):
    """Both paths call the same body function with equal values (types included: a list is not a tuple)."""
    import typer.main

    import kafkadump.cli as cli

    argv = _real(argv, inputs)
    calls: list[tuple[str, dict[str, object]]] = []
    for module, name in BODIES:
        body = getattr(module, name)

        def record(*args, _name=name, _body=body, **kwargs):
            bound = inspect.signature(_body).bind(*args, **kwargs).arguments
            calls.append((_name, {k: (type(v), v) for k, v in bound.items()}))
            return 0

        monkeypatch.setattr(module, name, record)
    cli.load_all_commands()
    typer.main.get_command(cli.app).main(argv, prog_name="kafkadump", standalone_mode=False)
    command, params = parse(argv)  # type: ignore[misc]
    fast_path.call_body(command, params)
    assert len(calls) == 2 and calls[0] == calls[1]


def test_the_option_table_is_what_the_generator_writes():
    sys.path.insert(0, str(ROOT / "tools"))
    import gen_fast_options

    committed = (ROOT / "kafkadump/cli/fast_options.py").read_text()
    assert gen_fast_options.render() == committed, "kafkadump/cli/fast_options.py is stale: rerun " \
                                                   "tools/gen_fast_options.py"


def test_the_option_table_covers_the_data_commands():
    from kafkadump.cli.fast_options import COMMANDS

    assert sorted(COMMANDS) == ["batches", "capture", "carve", "diff", "dump", "hexdump", "metadata", "offsets",
                                "records", "report", "schemas", "triage", "txn", "verify-crc"]
    # every option of the typer command is in the table (none left for typer alone)
    import typer.main

    import kafkadump.cli as cli

    cli.load_all_commands()
    group = typer.main.get_command(cli.app)
    for name, spec in COMMANDS.items():
        declared = {opt for p in group.commands[name].params for opt in (*p.opts, *p.secondary_opts)  # type: ignore[attr-defined]
                    if p.param_type_name == "option"}
        assert declared == set(spec["options"]), name


def test_a_completion_request_is_left_to_typer(monkeypatch):
    assert parse(["batches", V2]) is not None
    monkeypatch.setenv(fast_path.COMPLETION_VARIABLE, "bash_complete")
    assert parse(["batches", V2]) is None


def test_the_generator_leaves_to_typer_what_the_fast_path_cannot_parse():
    import typer
    import typer.main

    sys.path.insert(0, str(ROOT / "tools"))
    import gen_fast_options

    def declared(**params):
        app = typer.Typer()

        def command(path: str = typer.Argument(...), **_: object) -> None: ...

        command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter("path", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=typer.Argument(...),
                               annotation=str)]
            + [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=a)
               for n, (a, d) in params.items()])
        app.command()(command)
        app.command("other")(lambda: None)
        group = typer.main.get_command(app)
        return group.commands["command"], command  # type: ignore[attr-defined]

    ok = gen_fast_options.command_table(*declared(depth=(int, typer.Option(4, "--depth", min=1, max=9))))
    assert ok["options"] == {"--depth": ("depth", "int", False, (1, 9))} and ok["defaults"] == {"depth": 4}
    for unsupported in ((float, typer.Option(0.5, "--ratio")),                          # a float
                        (int, typer.Option(0, "--verbose", "-v", count=True)),           # a counter
                        (str, typer.Option("x", "--name", envvar="NAME")),               # from the environment
                        (int, typer.Option(1, "--level", min=0, clamp=True)),            # clamped, not refused
                        (str, typer.Option("x", "--abc", "-ab"))):                       # a two-letter short option
        with pytest.raises(gen_fast_options.Unsupported):
            gen_fast_options.command_table(*declared(value=unsupported))
