"""A schema-driven ENCODER for Kafka's JSON message schemas (tests only).

Reads ``../shared/kafka-schemas/{message,records}/**.json`` itself (its own
comment stripper and version-range parser) and encodes a value dict the way
Kafka's generated ``write()`` methods do; nothing of kafkadump's schema
tables or schema decoder is used, so a round trip through kafkadump checks
the generator and the decoder against the schema files.

    schema = load("OffsetCommitValue")
    value = sample(schema, version, variant)    # every field present at that version
    data = encode(schema, version, value)       # the struct's bytes
    expected = expected_decoded(schema, version, value)   # what decode_message should return

Encoding rules (Kafka protocol guide, "flexible versions" KIP-482):
non-flexible: STRING int16 length (-1 null), BYTES int32 length, ARRAY int32
count (-1 null); flexible: COMPACT_* with unsigned varint length+1 (0
null), and every struct ends with a tagged-field section (count, then tag,
size, data for each present tagged field, ascending).  A nullable struct
field is preceded by an INT8 presence marker (-1 null, 1 present).
"""

from __future__ import annotations

import base64
import json
import random
import struct
from functools import lru_cache
from pathlib import Path

from conftest import SHARED

SCHEMAS = SHARED / "kafka-schemas"
OPEN = 1 << 30


# --- reading the schema files ------------------------------------------------------------------------

def _strip_comments(text: str) -> str:
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 2
                continue
            in_str = c != '"'
            i += 1
        elif c == '"':
            in_str = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


@lru_cache(maxsize=None)
def _index() -> dict:
    idx = {}
    for p in list((SCHEMAS / "message").glob("*.json")) + list((SCHEMAS / "records").glob("*/*.json")):
        doc = json.loads(_strip_comments(p.read_text(encoding="utf-8")))
        idx.setdefault(doc["name"], (p, doc))
    return idx


def load(name: str) -> dict:
    """The schema document named ``name`` (its ``name`` field, not its file name); without Kafka's
    schemas beside the project, the test (or the module being collected) is skipped."""
    if not SCHEMAS.is_dir():
        import pytest

        pytest.skip(f"Kafka's schemas not present at {SCHEMAS} (they live beside the project, not in a clone)",
                    allow_module_level=True)
    return _index()[name][1]


def names_in(folder: str) -> list[str]:
    """Schema names in ``records/<folder>``."""
    return sorted(doc["name"] for p, doc in _index().values() if p.parent.name == folder
                  and p.parent.parent.name == "records")


def vrange(spec):
    if spec is None or spec == "none":
        return None
    s = str(spec)
    if s.endswith("+"):
        return int(s[:-1]), OPEN
    if "-" in s:
        a, b = s.split("-")
        return int(a), int(b)
    return int(s), int(s)


def has(spec, v: int) -> bool:
    r = vrange(spec)
    return r is not None and r[0] <= v <= r[1]


def valid_versions(doc: dict) -> range:
    lo, hi = vrange(doc["validVersions"])
    return range(lo, hi + 1)


def _structs(doc: dict) -> dict:
    return {s["name"]: s for s in doc.get("commonStructs", [])}


def _sub_fields(doc: dict, f: dict):
    """A struct field's own fields (inline, or a common struct), else None."""
    if "fields" in f:
        return f["fields"]
    t = f["type"][2:] if f["type"].startswith("[]") else f["type"]
    cs = _structs(doc).get(t)
    return cs["fields"] if cs else None


def _present(f: dict, v: int) -> bool:
    return has(f.get("versions", f.get("taggedVersions")), v)


def _tagged(f: dict, v: int) -> bool:
    return "tag" in f and has(f.get("taggedVersions"), v)


def camel(name: str) -> str:
    return name[:1].lower() + name[1:]


# --- primitives -----------------------------------------------------------------------------------------

def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


_FIXED = {"int8": ">b", "int16": ">h", "uint16": ">H", "int32": ">i", "uint32": ">I", "int64": ">q",
          "float64": ">d"}


def _prim(t: str, value, flexible: bool, nullable: bool) -> bytes:
    if t in _FIXED:
        return struct.pack(_FIXED[t], value)
    if t == "bool":
        return b"\x01" if value else b"\x00"
    if t == "uuid":
        assert len(value) == 16
        return value
    if t in ("string", "bytes", "records"):
        if value is None:
            assert nullable
            return b"\x00" if flexible else (b"\xff\xff" if t == "string" else b"\xff\xff\xff\xff")
        raw = value.encode("utf-8") if t == "string" else value
        if flexible:
            return uvarint(len(raw) + 1) + raw
        return (struct.pack(">h", len(raw)) if t == "string" else struct.pack(">i", len(raw))) + raw
    raise ValueError(t)


# --- encoding -----------------------------------------------------------------------------------------

def encode(doc: dict, version: int, value: dict) -> bytes:
    """The bytes of ``value`` (keys: the schema's field names in camelCase) at ``version``."""
    flexible = has(doc.get("flexibleVersions", "none"), version)
    return _struct(doc, doc["fields"], version, value, flexible)


def _struct(doc, fields, v, value, flexible) -> bytes:
    out = bytearray()
    tagged = []
    for f in fields:
        if not _present(f, v):
            continue
        key = camel(f["name"])
        if flexible and _tagged(f, v):
            if key in value:
                tagged.append((int(f["tag"]), _field(doc, f, v, value[key], flexible)))
            continue
        out += _field(doc, f, v, value[key], flexible)
    if flexible:
        out += uvarint(len(tagged))
        for tag, data in sorted(tagged):
            out += uvarint(tag) + uvarint(len(data)) + data
    return bytes(out)


def _field(doc, f, v, x, flexible) -> bytes:
    t = f["type"]
    nullable = has(f.get("nullableVersions"), v)
    sub = _sub_fields(doc, f)
    if t.startswith("[]"):
        if x is None:
            assert nullable
            return b"\x00" if flexible else b"\xff\xff\xff\xff"
        head = uvarint(len(x) + 1) if flexible else struct.pack(">i", len(x))
        if sub is not None:
            return head + b"".join(_struct(doc, sub, v, e, flexible) for e in x)
        return head + b"".join(_prim(t[2:], e, flexible, False) for e in x)
    if sub is not None:
        if nullable:
            return b"\xff" if x is None else b"\x01" + _struct(doc, sub, v, x, flexible)
        return _struct(doc, sub, v, x, flexible)
    return _prim(t, x, flexible, nullable)


# --- sample values ---------------------------------------------------------------------------------------

def sample(doc: dict, version: int, variant: int = 0, overrides: dict | None = None) -> dict:
    """A value with every field of ``version``, varied by ``variant`` (0: tagged fields present,
    arrays of two, nullables set; 1: tagged fields absent, nullables null, arrays empty; 2: mixed)."""
    rnd = random.Random(f"{doc['name']}/{version}/{variant}")
    return _sample_struct(doc, doc["fields"], version, variant, rnd, overrides or {})


def _sample_struct(doc, fields, v, variant, rnd, overrides) -> dict:
    out = {}
    for f in fields:
        if not _present(f, v):
            continue
        key = camel(f["name"])
        if key in overrides:
            out[key] = overrides[key]
            continue
        if _tagged(f, v) and variant == 1:
            continue
        out[key] = _sample_field(doc, f, v, variant, rnd)
    return out


def _sample_field(doc, f, v, variant, rnd):
    t = f["type"]
    nullable = has(f.get("nullableVersions"), v)
    if nullable and (variant == 1 or (variant == 2 and rnd.random() < 0.5)):
        return None
    sub = _sub_fields(doc, f)
    if t.startswith("[]"):
        n = 0 if variant == 1 else 2 if variant == 0 else rnd.randint(1, 3)
        if sub is not None:
            return [_sample_struct(doc, sub, v, variant, rnd, {}) for _ in range(n)]
        return [_sample_prim(t[2:], f["name"], rnd) for _ in range(n)]
    if sub is not None:
        return _sample_struct(doc, sub, v, variant, rnd, {})
    return _sample_prim(t, f["name"], rnd)


_RANGES = {"int8": (-128, 127), "int16": (-32768, 32767), "uint16": (0, 65535), "int32": (-2**31, 2**31 - 1),
           "uint32": (0, 2**32 - 1), "int64": (-2**63, 2**63 - 1)}


def _sample_prim(t, name, rnd):
    if t in _RANGES:
        lo, hi = _RANGES[t]
        return rnd.choice([lo, hi, 0, -1 if lo < 0 else 1, rnd.randint(lo, hi)])
    if t == "float64":
        return rnd.choice([0.0, 1.5, -2.25e10])
    if t == "bool":
        return rnd.random() < 0.5
    if t == "uuid":
        return bytes(rnd.getrandbits(8) for _ in range(16))
    if t == "string":
        return rnd.choice(["", f"{name}-{rnd.randint(0, 999)}", "grüße/ü"])
    if t == "bytes":
        return bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 12)))
    raise ValueError(t)


# --- what the decoder should return ------------------------------------------------------------------

def kafka_uuid(raw: bytes) -> str:
    """Kafka's text form of a UUID (URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def expected_decoded(doc: dict, version: int, value: dict) -> dict:
    """``value`` as kafkadump's schema decoder returns it: UUIDs as Kafka's text form."""
    return _expect_struct(doc, doc["fields"], version, value)


def _expect_struct(doc, fields, v, value):
    out = {}
    for f in fields:
        if not _present(f, v):
            continue
        key = camel(f["name"])
        if key not in value:
            continue
        x = value[key]
        sub = _sub_fields(doc, f)
        t = f["type"]
        if x is None:
            out[key] = None
        elif t.startswith("[]"):
            if sub is not None:
                out[key] = [_expect_struct(doc, sub, v, e) for e in x]
            else:
                out[key] = [kafka_uuid(e) if t == "[]uuid" else e for e in x]
        elif sub is not None:
            out[key] = _expect_struct(doc, sub, v, x)
        elif t == "uuid":
            out[key] = kafka_uuid(x)
        else:
            out[key] = x
    return out
