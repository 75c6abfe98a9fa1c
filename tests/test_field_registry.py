"""The field registry (kafkadump/objects/fields.py): the generated code is current, and a field added
to the registry reaches every place a record is written.

The second test is what adding a field costs: in a copy of the project it appends a made-up
per-record field to the registry, reruns tools/gen_fields.py, rebuilds the compiled writer and then
reads a fixture through the copy: the field is in every JSON line (the compiled writer's and the
pure-Python writer's, byte-identical), in the table's header and rows, and in the Spark record rows
(their schema and their fill).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

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
