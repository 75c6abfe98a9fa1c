#!/usr/bin/env python3
"""Generate kafkadump's compact schema tables from Kafka's JSON message schemas.

Run by hand when the schemas change, then commit the output:

    python3 tools/gen_schemas.py [SCHEMA_DIR]     # default: ../shared/kafka-schemas

Reads ``SCHEMA_DIR/message/*.json`` (requests, responses, headers and the
protocol's embedded data structures) and ``SCHEMA_DIR/records/*/*.json``
(records Kafka writes into its own logs) and writes

    kafkadump/decoders/protocol/tables/messages.py
    kafkadump/decoders/protocol/tables/records.py

Requests and responses are then completed from the ``kio`` package (a test
dependency: Kafka's definitions as of 2026-10, one data class per API and
version): the versions and APIs the JSON lacks, and the released layout of a
version the JSON marks unstable (``tools/kio_layouts.py`` says how and checks
every version both know).  Kafka 4.0 dropped old versions from its files; the
JSON here still has them, so the tables keep every version from Kafka 0.8 on.

Only facts are carried over: names, types, version ranges (valid, flexible,
nullable, tagged), tags, explicit defaults, API keys.  Comments and ``about``
texts are not.  The table format is described in
``kafkadump/decoders/protocol/tables/__init__.py``.  Common structs are expanded
where they are used, so every struct field carries its own field list.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kio_layouts import kio_version, merge_kio

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "kafkadump" / "decoders" / "protocol" / "tables"
OPEN = 32767  # the upper end of an open-ended range ("3+")

PRIMITIVES = {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
              "string", "uuid", "bytes", "records"}


def strip_comments(text: str) -> str:
    """Remove // comments that are not inside a JSON string."""
    out = []
    i = 0
    n = len(text)
    in_str = False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_str = False
            i += 1
            continue
        if c == '"':
            in_str = True
            out.append(c)
            i += 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def load(path: Path) -> dict:
    return json.loads(strip_comments(path.read_text(encoding="utf-8")))


def vrange(spec):
    """'3+' -> (3, OPEN); '0-2' -> (0, 2); '5' -> (5, 5); 'none' -> None."""
    if spec is None:
        return None
    s = str(spec).strip()
    if s == "none":
        return None
    if s.endswith("+"):
        return (int(s[:-1]), OPEN)
    if "-" in s:
        lo, hi = s.split("-", 1)
        return (int(lo), int(hi))
    return (int(s), int(s))


def base_type(t: str) -> str:
    return t[2:] if t.startswith("[]") else t


def default_value(ftype: str, raw):
    """The explicit default as a Python value of the field's type."""
    t = base_type(ftype)
    if raw is None or raw == "null":
        return None
    if ftype.startswith("[]"):
        return raw
    if t == "bool":
        return raw if isinstance(raw, bool) else str(raw).strip().lower() == "true"
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        if isinstance(raw, int):
            return raw
        s = str(raw).strip()
        neg = s.startswith("-")
        body = s[1:] if neg else s
        if body.lower().startswith("0x"):
            v = int(body, 16)
        elif len(body) > 1 and body.startswith("0"):
            v = int(body, 8)
        else:
            v = int(body)
        return -v if neg else v
    if t == "float64":
        return float(raw)
    return str(raw)


class Gen:
    def __init__(self, path: Path, doc: dict):
        self.path = path
        self.common = {s["name"]: s for s in doc.get("commonStructs", [])}
        self.inline: dict[str, tuple] = {}

    def struct_fields(self, f: dict) -> tuple:
        name = base_type(f["type"])
        if "fields" in f:
            fields = self.fields(f["fields"])
            self.inline.setdefault(name, fields)
            return fields
        if name in self.common:
            return self.fields(self.common[name]["fields"])
        if name in self.inline:
            return self.inline[name]
        raise SystemExit(f"{self.path}: struct type {name} has no definition")

    def field(self, f: dict) -> tuple:
        t = f["type"]
        bt = base_type(t)
        versions = vrange(f.get("versions", f.get("taggedVersions")))
        nullable = vrange(f.get("nullableVersions"))
        tag = f.get("tag")
        if tag is not None:
            tag = int(tag)  # a few schemas write it as a string ("tag": "0")
        tagged = vrange(f.get("taggedVersions")) if tag is not None else None
        default = (default_value(t, f["default"]),) if "default" in f else ()
        fields = None if bt in PRIMITIVES else self.struct_fields(f)
        flex = vrange(f["flexibleVersions"]) if "flexibleVersions" in f else False
        return (f["name"], t, versions, nullable, tag, tagged, default, fields, flex)

    def fields(self, fields: list) -> tuple:
        return tuple(self.field(f) for f in fields)


def entry(path: Path, doc: dict, group: str | None) -> dict:
    g = Gen(path, doc)
    e = {
        "type": doc["type"],
        "valid": vrange(doc["validVersions"]),
        "flexible": vrange(doc.get("flexibleVersions", "none")),
        "fields": g.fields(doc.get("fields", [])),
    }
    if "apiKey" in doc:
        e["apiKey"] = doc["apiKey"]
    if doc.get("latestVersionUnstable"):
        e["unstable"] = True
    if "deprecatedVersions" in doc:
        e["deprecated"] = vrange(doc["deprecatedVersions"])
    if group:
        e["group"] = group
    return e


HEADER = '''"""Generated by tools/gen_schemas.py from Kafka's JSON schemas ({what}).

Do not edit: rerun the generator.  Facts only (names, types, versions, tags,
defaults); the format is described in kafkadump/decoders/protocol/tables/__init__.py.
"""

# flake8: noqa
'''

# the keys of a MESSAGES entry, in the order of its tuple (a key whose value is None is absent)
MESSAGE_KEYS = ("type", "valid", "flexible", "fields", "apiKey", "unstable", "deprecated")


def literal(value: object) -> str:
    """``value`` as Python source whose compiled form is one constant: lists become tuples (a
    module of constants loads from its .pyc by unmarshalling, with no parsing at import)."""
    if isinstance(value, (list, tuple)):
        items = [literal(v) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    raise SystemExit(f"no literal for {value!r}")


def message_row(name: str, e: dict) -> str:
    """A MESSAGES entry as a tuple in the order of MESSAGE_KEYS (checked: it turns back into ``e``)."""
    row = tuple(e.get(k) for k in MESSAGE_KEYS)
    if {k: v for k, v in zip(MESSAGE_KEYS, row) if v is not None or k in ("valid", "flexible")} != e:
        raise SystemExit(f"{name}: its entry does not fit a MESSAGES tuple")
    return literal(row)


def write(name: str, what: str, var: str, table: dict) -> Path:
    """One schema per line, as Python literals: MESSAGES' entries are tuples (in the order of its
    ``KEYS``; ``schema.message`` makes the dict of those it is asked for), RECORDS' entries dicts
    (the internal-topic decoder reads them all).  Ranges and fields are tuples, so each entry is
    one constant of the compiled module."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.py"
    if var == "MESSAGES":
        lines = [f"{literal(k)}: {message_row(k, table[k])}" for k in sorted(table)]
        keys, kind = f"\nKEYS = {literal(MESSAGE_KEYS)}\n", "tuple"
    else:
        lines = [f"{literal(k)}: {literal(table[k])}" for k in sorted(table)]
        keys, kind = "", "dict"
    body = "{\n" + ",\n".join(lines) + ",\n}"
    path.write_text(HEADER.format(what=what) + keys + f"\n{var}: dict[str, {kind}] = {body}\n", encoding="utf-8")
    return path


def generate(schema_dir: Path) -> list[Path]:
    messages = {}
    for p in sorted((schema_dir / "message").glob("*.json")):
        doc = load(p)
        messages[doc["name"]] = entry(p, doc, None)
    records = {}
    for p in sorted((schema_dir / "records").glob("*/*.json")):
        doc = load(p)
        records[doc["name"]] = entry(p, doc, p.parent.name)
    if not messages:
        raise SystemExit(f"{schema_dir}/message: no schemas found")
    for line in merge_kio(messages):
        print(line)
    return [
        write("messages", f"message/*.json, completed from kio {kio_version()}", "MESSAGES", messages),
        write("records", "records/*/*.json", "RECORDS", records),
    ]


def main(argv: list[str]) -> int:
    schema_dir = Path(argv[1]) if len(argv) > 1 else ROOT.parent / "shared" / "kafka-schemas"
    for p in generate(schema_dir):
        print(f"wrote {p.relative_to(ROOT)} ({p.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
