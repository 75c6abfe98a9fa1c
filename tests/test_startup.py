"""Start-up: a data command imports only what it needs (counted modules, no timing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _uncompressed_segment(path: Path) -> str:
    """One uncompressed v2 batch of two records, built by kafka-python (the fixtures hold compressed batches)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(2):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=b"k", value=b"v", headers=[])
    path.write_bytes(bytes(builder.build()))
    return str(path)

# runs the console entry point, then prints the modules it imported as JSON on stderr's last line
PROBE = """
import json, sys
{pre}
sys.argv = ["kafkadump"] + {args!r}
from kafkadump.cli import main
try:
    main()
except SystemExit as e:
    code = e.code
sys.stderr.write("\\n" + json.dumps({{"code": code, "modules": sorted(sys.modules)}}) + "\\n")
"""

NOT_FOR_DATA = ("rich", "typer", "click", "zstandard", "lz4", "snappy", "cramjam", "pyspark", "pyarrow",
                "importlib.metadata", "email")


def _imported(args: list[str], pre: str = "") -> tuple[int, list[str], str]:
    run = subprocess.run([sys.executable, "-c", PROBE.format(args=args, pre=pre)], capture_output=True, text=True,
                         timeout=120)
    probe = json.loads(run.stderr.strip().splitlines()[-1])
    return probe["code"], probe["modules"], run.stdout


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in NOT_FOR_DATA or m in NOT_FOR_DATA]


def test_batches_json_imports_no_rich_no_codecs_no_metadata_lookup(tmp_path):
    code, modules, out = _imported(["batches", "--json", _uncompressed_segment(tmp_path / "0.log")])
    assert code == 0
    assert json.loads(out.splitlines()[0])["type"] == "batch"
    assert _heavy(modules) == []


@pytest.mark.parametrize("args", [["batches"], ["batches", "--json"], ["records"], ["records", "--json"],
                                  ["verify-crc"], ["verify-crc", "--json"]])
def test_the_fast_path_imports_no_typer_no_command_module_no_capture_reader(tmp_path, args):
    code, modules, out = _imported([*args, _uncompressed_segment(tmp_path / "0.log")])
    assert code == 0 and out
    assert _heavy(modules) == []
    assert [m for m in modules if m.startswith(("typer", "click"))] == []
    assert not any(m.startswith("kafkadump.cli.") and m.endswith(("_commands", "_command")) for m in modules)
    assert not any(m.startswith(("kafkadump.decoders.protocol", "kafkadump.spark", "kafkadump.sources.pcap"))
                   for m in modules)


@pytest.mark.parametrize("args", [["capture"], ["capture", "--json"], ["capture", "--records", "--json"]])
def test_capture_on_the_fast_path_imports_no_typer_no_command_module_no_rich(tmp_path, args):
    sys.path.insert(0, str(ROOT / "tests"))
    import capture_builders as B

    batch = Path(_uncompressed_segment(tmp_path / "0.log")).read_bytes()
    conversation, _, _ = B.kafka_conversation(batch)
    pcap = tmp_path / "small.pcap"
    pcap.write_bytes(B.pcap([(t, p) for t, p, _ in conversation.packets])[0])
    code, modules, out = _imported([*args, str(pcap)])
    assert code == 0 and len(out.splitlines()) >= 2  # the two records, or the four frames and more
    assert _heavy(modules) == []
    assert not any(m.startswith("kafkadump.cli.") and m.endswith(("_commands", "_command")) for m in modules)
    assert "kafkadump.cli.capture_body" in modules and "kafkadump.reports.segments" not in modules


# every other data command's usual command line (inputs by name: see _small_inputs) and its body module
OTHER_COMMANDS = [(["carve", "DAMAGED"], "logdir_bodies"), (["carve", "--json", "DAMAGED"], "logdir_bodies"),
                  (["dump", "SEGMENT"], "logdir_bodies"), (["dump", "--json", "SEGMENT"], "logdir_bodies"),
                  (["triage", "LOGDIR"], "logdir_bodies"), (["triage", "--json", "LOGDIR"], "logdir_bodies"),
                  (["txn", "LOGDIR"], "forensics_bodies"), (["txn", "--json", "LOGDIR"], "forensics_bodies"),
                  (["offsets", "LOGDIR"], "forensics_bodies"), (["offsets", "--json", "LOGDIR"], "forensics_bodies"),
                  (["metadata", "SEGMENT"], "replica_bodies"), (["metadata", "--json", "SEGMENT"], "replica_bodies"),
                  (["diff", "PARTITION", "SEGMENT"], "replica_bodies"),
                  (["diff", "--json", "PARTITION", "SEGMENT"], "replica_bodies"),
                  (["schemas", "SCHEMAS"], "payload_bodies"), (["schemas", "--json", "SCHEMAS"], "payload_bodies")]


def _small_inputs(tmp_path: Path) -> dict[str, str]:
    """A log dir of one partition (one uncompressed batch), a damaged segment, a directory of one schema."""
    partition = tmp_path / "logdir" / "t-0"
    partition.mkdir(parents=True)
    segment = _uncompressed_segment(partition / "00000000000000000000.log")
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "1.avsc").write_text('"string"\n')
    return {"LOGDIR": str(tmp_path / "logdir"), "PARTITION": str(partition), "SEGMENT": segment,
            "DAMAGED": str(ROOT / "fixtures/damaged/00000000000000000000.log"), "SCHEMAS": str(tmp_path / "schemas")}


@pytest.mark.parametrize(("args", "bodies"), OTHER_COMMANDS, ids=[" ".join(a) for a, _ in OTHER_COMMANDS])
def test_every_data_command_runs_on_the_fast_path_without_typer(tmp_path, args, bodies):
    files = _small_inputs(tmp_path)
    code, modules, out = _imported([files.get(a, a) for a in args])
    assert code in (0, 1) and out
    assert [m for m in modules if m.startswith(("typer", "click"))] == []
    assert _heavy(modules) == []
    assert not any(m.startswith("kafkadump.cli.") and m.endswith(("_commands", "_command")) for m in modules)
    assert f"kafkadump.cli.{bodies}" in modules
    assert not any(m.startswith(("kafkadump.spark", "kafkadump.sources.pcap")) for m in modules)
    # their reports' values are base.values classes: no dataclasses, and so no inspect (issue 29)
    assert [m for m in ("dataclasses", "inspect") if m in modules] == []


def test_a_command_line_left_to_typer_imports_only_its_own_command_module(tmp_path):
    # "+4" is an integer to typer, not plain digits to the fast path: typer parses this one
    code, modules, _ = _imported(["verify-crc", "--max-depth", "+4", _uncompressed_segment(tmp_path / "0.log")])
    assert code == 0
    assert "typer" in modules
    commands = sorted(m for m in modules if m.startswith("kafkadump.cli.") and m.endswith(("_commands", "_command")))
    assert commands == ["kafkadump.cli.segment_commands"]
    assert not any(m.startswith(("kafkadump.decoders.protocol", "kafkadump.spark", "kafkadump.sources.pcap_"))
                   for m in modules)
    assert "crc32c._crc32c" in modules and "crc32c" not in modules


def test_help_still_lists_every_command():
    code, modules, out = _imported(["--help"])
    assert code == 0
    for name in ("batches", "records", "verify-crc", "hexdump", "capture", "txn", "offsets", "dump", "triage",
                 "carve", "metadata", "diff", "man", "spark"):
        assert f" {name} " in out
    assert "kafkadump.cli.spark_commands" in modules


def test_help_lists_the_commands_in_one_order_whichever_module_was_imported_first():
    _, _, plain = _imported(["--help"])
    _, _, after = _imported(["--help"], pre="import kafkadump.cli.segment_commands, kafkadump.cli.logdir_commands")
    assert after == plain
    listed = [line.split()[1] for line in plain.splitlines() if line.startswith("│ ") and line[2:3].isalpha()]
    # the everyday commands first (issue 27), under headings
    assert listed == ["batches", "records", "verify-crc", "hexdump", "dump", "triage", "carve", "capture", "txn",
                      "offsets", "metadata", "diff", "schemas", "report", "man", "spark"]
    assert "─ Segments ─" in plain and "─ Incidents ─" in plain


def test_crc32c_loaded_without_its_package_init_is_the_same_function():
    import crc32c as package

    from kafkadump.decoders.batches.crc import crc32c

    assert crc32c(b"123456789") == 0xE3069283  # the check value of CRC-32C
    assert package.crc32c(b"123456789", 0) == crc32c(b"123456789", 0)
    assert package.__version__


def test_every_command_is_in_the_entry_points_table_with_its_module():
    import typer.main

    import kafkadump.cli as cli

    group = typer.main.get_command(cli.app)
    table = {name: load.__name__.lstrip("_") for load, names in cli._COMMAND_MODULES for name in names}
    defined = {name: command.callback.__module__.rsplit(".", 1)[-1] if command.callback else "spark_commands"
               for name, command in group.commands.items()}  # type: ignore[attr-defined]
    assert table == defined


def test_batches_imports_only_the_renderer_of_its_format(tmp_path):
    segment = _uncompressed_segment(tmp_path / "0.log")
    for args, renderer, others in ((["--json"], "kafkadump.render.jsonl", ("kafkadump.render.table", "kafkadump.render.describe")),
                                   (["--format", "table"], "kafkadump.render.table",
                                    ("kafkadump.render.jsonl", "kafkadump.objects.records"))):
        code, modules, _ = _imported(["batches", *args, segment])
        assert code == 0
        assert renderer in modules
        unneeded = (*others, "kafkadump.render.dumplog", "kafkadump.reports.query", "kafkadump.decoders.internal_topics.kinds")
        assert [m for m in unneeded if m in modules] == []


def test_the_decoder_and_renderers_of_a_data_command_import_no_uuid():
    """uuid imports platform (a few ms); only schemas with a UUID field need it (typer still imports it)."""
    probe = ("import sys, kafkadump.reports.segments, kafkadump.render.jsonl, kafkadump.render.table; "
             "print(sorted(m for m in ('uuid', 'platform') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert run.stdout.strip() == "[]", run.stderr


# a probe's json.loads, which names a module when it is handed a text of a schema table's size (no
# data command's own JSON is that large on these inputs)
COUNT_LARGE_JSON = """
import json, types
_loads = json.loads
def _counting_loads(s, *a, **k):
    if len(s) > 10_000:
        sys.modules["large_json_parsed"] = types.ModuleType("large_json_parsed")
    return _loads(s, *a, **k)
json.loads = _counting_loads
"""


@pytest.mark.parametrize("kind", ["pcap", "hex"])
def test_capture_loads_the_protocol_tables_without_parsing_json(tmp_path, kind):
    sys.path.insert(0, str(ROOT / "bench"))
    import startup_bench

    path = tmp_path / f"request.{kind}"
    if kind == "pcap":
        startup_bench.tiny_pcap(str(path))
    else:
        path.write_text(startup_bench.REQUEST_HEX)
    code, modules, out = _imported(["capture", "--json", str(path)], pre=COUNT_LARGE_JSON)
    assert code == 0
    assert json.loads(out.splitlines()[0])["apiName"] == "ApiVersions"
    assert "kafkadump.decoders.protocol.tables.messages" in modules  # the tables were read
    assert "large_json_parsed" not in modules
    assert "kafkadump.decoders.protocol.tables.records" not in modules  # the internal topics' table: not needed
    assert [m for m in ("dataclasses", "inspect", "_hashlib") if m in modules] == []


def test_a_pasted_request_is_tried_as_a_response_only_where_its_bytes_suffice(monkeypatch):
    """A lone frame is tried as every API's response: a version whose fewest bytes exceed the frame
    gets no plan (plans are made for the few that could fit), and the reading is the same."""
    sys.path.insert(0, str(ROOT / "bench"))
    import startup_bench

    from kafkadump.decoders.protocol import decoder, frames
    from kafkadump.decoders.protocol import schema as S

    monkeypatch.setattr(decoder, "_PLANS", {})  # plans made afresh: count those this frame needs
    data = bytes.fromhex(startup_bench.REQUEST_HEX.replace(" ", "").strip())
    assert frames.guess_response(data, 0, len(data)) is None  # no API's response fits it exactly
    tried = sum(len(range(S.valid_versions(S.api_names(k)["response"])[0],  # type: ignore[index]
                          S.valid_versions(S.api_names(k)["response"])[1] + 1))  # type: ignore[index]
                for k in S.api_keys() if "response" in (S.api_names(k) or {}))
    assert tried > 300  # every version of every API's response is considered...
    assert len(decoder.plan_cache()) < 200  # ...but only those its 10 bytes could hold are planned (993 before)
    # FetchResponse (Kafka's protocol guide): v4 throttle_time_ms int32, responses array (count int32);
    # v7 adds error_code int16 and session_id int32; v12 is flexible (compact count, tagged fields)
    fetch = S.message("FetchResponse")["fields"]
    assert [decoder.fewest_bytes(fetch, v, v >= 12) for v in (4, 7, 12)] == [4 + 4, 4 + 2 + 4 + 4, 4 + 2 + 4 + 1 + 1]


def test_triage_of_small_files_hashes_without_openssl(tmp_path):
    files = _small_inputs(tmp_path)
    code, modules, out = _imported(["triage", "--json", files["LOGDIR"]])
    assert code == 0
    import hashlib

    digest = hashlib.sha256(Path(files["SEGMENT"]).read_bytes()).hexdigest()
    assert f'"sha256":"{digest}"' in out  # the same digest as OpenSSL's
    assert "_hashlib" not in modules


def test_a_large_file_is_hashed_by_openssl_with_the_same_digest():
    import hashlib

    from kafkadump.reports.scan import SMALL_HASH, sha256_hasher

    data = bytes(range(256)) * (SMALL_HASH // 256 + 7)
    small, large = sha256_hasher(100), sha256_hasher(len(data))
    assert type(large) is type(hashlib.sha256()) and type(small) is not type(large)
    for h in (small, large):
        h.update(data)
    assert small.hexdigest() == large.hexdigest() == hashlib.sha256(data).hexdigest()


def test_dump_log_creates_no_dataclass(tmp_path):
    files = _small_inputs(tmp_path)
    code, modules, out = _imported(["dump", "--format", "dump-log", files["SEGMENT"]])
    assert code == 0 and "Dumping" in out
    assert [m for m in ("dataclasses", "inspect") if m in modules] == []


@pytest.mark.parametrize(("args", "unused"), [(["records", "--json"], {"crchop", "batchlines", "arrowcols", "pcapread"}),
                                              (["records"], {"crchop", "batchlines", "recordlines", "arrowcols"}),
                                              (["batches", "--json"], {"crchop", "recordlines", "arrowcols"})])
def test_a_data_command_loads_only_the_compiled_modules_it_uses(tmp_path, args, unused):
    """Each compiled module is loaded when first called (issue 29): records does not load verify-crc's hop
    nor the batch line writer, batches --json not the record line writer."""
    from kafkadump import accel

    code, modules, out = _imported([*args, _uncompressed_segment(tmp_path / "0.log")])
    assert code == 0 and out
    loaded = {m.rsplit(".", 1)[1] for m in modules if m.startswith("kafkadump.accel.")}
    assert loaded & unused == set()
    if accel.compiled("batchstep") is not None:
        assert "batchstep" in loaded   # (the step and the windows of plain batches)


@pytest.mark.parametrize("option", [["--redact", "keys"], ["--detect"], ["--redact-fields", "password"],
                                    ["--where", "offset >= 0"]], ids=lambda o: o[0])
def test_payload_options_create_no_dataclass(tmp_path, option):
    """The payload options' values (RecordView among them) are base.values classes: no dataclasses/inspect."""
    code, modules, out = _imported(["records", *option, _uncompressed_segment(tmp_path / "0.log")])
    assert code == 0 and out
    assert [m for m in ("dataclasses", "inspect") if m in modules] == []
