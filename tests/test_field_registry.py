"""The field registry (kafkadump/objects/fields.py): the generated code is current, and a field added
to the registry reaches every place a record is written.

The second test is what adding a field costs: in a copy of the project it appends a made-up
per-record field to the registry, reruns tools/gen_fields.py, rebuilds the compiled writer and then
reads a fixture through the copy: the field is in every JSON line (the compiled writer's and the
pure-Python writer's, byte-identical), in the table's header and rows, and in the Spark record rows
(their schema and their fill).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEGMENT = ROOT / "fixtures" / "segment-v2" / "00000000000000000000.log"
LEGACY = ROOT / "fixtures" / "segment-mixed"

sys.path.insert(0, str(ROOT / "tools"))
import gen_fields  # noqa: E402

MADE_UP = ('    Field("recordSize", "r.size", "int", c=("R_SIZE", "size"), legacy=False, spark="int",\n'
           '          column=ColumnSpec(7, "rsize", 6, True, 8, 0, "r.size")),\n')


def test_the_generated_code_is_what_the_registry_writes():
    stale = [str(p.relative_to(ROOT)) for p, text in gen_fields.outputs().items() if p.read_text() != text]
    assert stale == [], f"rerun tools/gen_fields.py: {stale}"


def test_the_registry_is_the_order_of_the_record_object():
    from kafkadump.decoders.batches import Options, iter_batches
    from kafkadump.objects.fields import RECORD_FIELDS
    from kafkadump.objects.records import ENCODERS, record_object

    seen = set()
    for path in [SEGMENT, *sorted(LEGACY.glob("*.log"))]:
        for b in iter_batches(path.read_bytes(), str(path), options=Options(records=True)):
            for r in getattr(b, "records", None) or ():
                keys = list(record_object(r, b, ENCODERS["auto"]))
                own = [k for k in keys if k not in ("keyPayload", "valuePayload")]
                assert own == [f.name for f in RECORD_FIELDS if not f.legacy or r.magic < 2]
                seen.add(r.magic >= 2)
    assert seen == {True, False}


def _copy(tmp: Path) -> Path:
    copy = tmp / "kd"
    shutil.copytree(ROOT / "kafkadump", copy / "kafkadump",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    shutil.copytree(ROOT / "tools", copy / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, copy / name)
    registry = copy / "kafkadump" / "objects" / "fields.py"
    text = registry.read_text()
    anchor = '    Field("magic", "r.magic", "int", legacy=True'
    assert anchor in text
    registry.write_text(text.replace(anchor, MADE_UP + anchor, 1))
    return copy


def _run(copy: Path, *args: str, pure: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    env.pop("KAFKADUMP_PURE_PYTHON", None)
    if pure:
        env["KAFKADUMP_PURE_PYTHON"] = "1"
    return subprocess.run([sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not sysconfig.get_config_var("CC"), reason="no C compiler: the compiled writer cannot be built")
def test_a_new_field_reaches_the_line_the_table_the_compiled_writer_and_a_spark_row(tmp_path):
    copy = _copy(tmp_path)
    gen = _run(copy, "tools/gen_fields.py")
    assert gen.returncode == 0, gen.stderr
    assert "R_SIZE, size" in (copy / "kafkadump/accel/generated_fields.h").read_text()
    build = _run(copy, "setup.py", "-q", "build_ext", "--inplace")
    assert build.returncode == 0 and list((copy / "kafkadump" / "accel").glob("*.so")), build.stderr
    version = _run(copy, "-m", "kafkadump", "--version")
    assert "compiled" in version.stdout, version.stdout + version.stderr

    # JSON lines: the compiled writer and the pure-Python one write the field, byte for byte alike
    compiled = _run(copy, "-m", "kafkadump", "records", str(SEGMENT), "--json")
    pure = _run(copy, "-m", "kafkadump", "records", str(SEGMENT), "--json", pure=True)
    assert compiled.returncode == 0, compiled.stderr
    assert compiled.stdout == pure.stdout
    records = [json.loads(line) for line in compiled.stdout.splitlines()]
    records = [o for o in records if o["type"] == "record"]
    assert records and all(isinstance(o["recordSize"], int) and o["recordSize"] > 0 for o in records)
    keys = list(records[0])
    assert keys.index("recordSize") == keys.index("timestampDelta") + 2   # after control, before the payloads

    # ... and the compiled writer wrote them itself (it hands back anything it cannot write)
    writer = _run(copy, "-c", (
        "from kafkadump.decoders.batches import Options, iter_batches\n"
        "from kafkadump.render import generated_lines, jsonl\n"
        "from kafkadump.render.jsonl import RecordLines\n"
        "lines = RecordLines()\n"
        f"data = open({str(SEGMENT)!r}, 'rb').read()\n"
        f"b = next(iter_batches(data, {str(SEGMENT)!r}, options=Options(records=True)))\n"
        "lines._place(b, None)\n"
        "segs = generated_lines.plain_segments(lines._head, b, b.timestamp_type, '')\n"
        "print(jsonl._HOT.format_lines(list(b.records), segs, 0, jsonl.VALUE_JSON['auto'], jsonl._dumps), end='')\n"))
    assert writer.returncode == 0, writer.stderr
    assert writer.stdout.splitlines() == compiled.stdout.splitlines()[:len(writer.stdout.splitlines())]
    assert '"recordSize":' in writer.stdout and "None" not in writer.stdout

    # the value is the record's size as the decoder saw it
    probe = _run(copy, "-c", (
        "import json,sys\n"
        "from kafkadump.decoders.batches import Options, iter_batches\n"
        "from kafkadump.objects.records import ENCODERS, record_object\n"
        f"data = open({str(SEGMENT)!r}, 'rb').read()\n"
        "print(json.dumps([[r.size, record_object(r, b, ENCODERS['auto'])['recordSize']] "
        f"for b in iter_batches(data, {str(SEGMENT)!r}, options=Options(records=True)) "
        "for r in (getattr(b, 'records', None) or ())]))\n"))
    pairs = json.loads(probe.stdout)
    assert pairs and all(a == b for a, b in pairs)
    assert [o["recordSize"] for o in records] == [a for a, _ in pairs][:len(records)]

    # the table: the registry's column, whole in plain output
    table = _run(copy, "-m", "kafkadump", "records", str(SEGMENT), "--wide")
    assert table.returncode == 0, table.stderr
    assert "rsize" in table.stdout.splitlines()[0]
    assert str(records[0]["recordSize"]) in table.stdout

    # a Spark row: the records level's schema has the column and the rows are filled from the registry
    spark = _run(copy, "-c", (
        "import json\n"
        "from kafkadump.decoders.batches import Options, iter_batches\n"
        "from kafkadump.spark.row_schema import column_names\n"
        "from kafkadump.spark.rows import RecordColumns\n"
        "names = column_names('records')\n"
        "c = RecordColumns(None, None, names=names, fast=True)\n"
        f"data = open({str(SEGMENT)!r}, 'rb').read()\n"
        f"for b in iter_batches(data, {str(SEGMENT)!r}, options=Options(records=True)):\n"
        "    c.add(b)\n"
        "cols, n = c.take()\n"
        "i = names.index('recordSize')\n"
        "t = names.index('type')\n"
        "print(json.dumps([cols[i][k] for k in range(n) if cols[t][k] == 'record']))\n"))
    assert spark.returncode == 0, spark.stderr
    assert json.loads(spark.stdout) == [o["recordSize"] for o in records]
