"""Request and response layouts Kafka's own JSON here does not cover, taken from the ``kio`` package.

Used by ``tools/gen_schemas.py``.  ``kio`` is generated from Kafka's message
definitions (as of 2026-10) into one Python data class per API, version and
direction; a class's fields, in wire order, carry the facts kafkadump's tables
need: the field's Kafka type (``metadata["kafka_type"]``), whether it may be
null (``X | None``), its tag (``metadata["tag"]``), its default, and the
nested classes of struct fields.  Only these facts are carried over.

Kafka's JSON schemas stay the source for every version they define as
released: kio adds the versions beyond them (and the APIs they lack), one
version at a time, onto the JSON's field lists:

* a kio field that matches a field of the previous version (same name, kind,
  type and taggedness) extends that field's version range;
* a field of the previous version that kio no longer lists ends there;
* a new kio field is added from that version on, after its predecessor.

A version the JSON marks unstable (``latestVersionUnstable``: not released
when the JSON was taken) is replaced by kio's released layout.  After the
merge every version kio defines is checked against the merged table, field
by field (names, types, nullability, tags); a disagreement stops the
generator, and where the JSON and kio disagree on a version both define, the
JSON's layout is kept and the difference is printed.

Names: kio writes Kafka's field names in snake case, drops the ``Ms`` of
durations and timestamps (``timedelta_i32``, ``datetime_i64``) and adds a
trailing ``_`` to Python builtins (``id_``, ``type_``); a new field's Kafka
name is rebuilt by the reverse rules (``enable2_pc`` -> ``Enable2Pc``,
``max_wait`` -> ``MaxWaitMs``).
"""

from __future__ import annotations

import dataclasses
import datetime
import re
import types
from typing import Any, Union, get_args, get_origin

OPEN = 32767
# kio's semantic integer types and the wire types they are
KIO_TYPES = {"error_code": "int16", "timedelta_i32": "int32", "timedelta_i64": "int64", "datetime_i64": "int64"}
TIMES = ("timedelta_i32", "timedelta_i64", "datetime_i64")


class KField:
    """One field of a kio class at one version, in the tables' terms."""

    __slots__ = ("kio_name", "name", "type", "nullable", "tag", "default", "fields")

    def __init__(self, kio_name: str, name: str, type_: str, nullable: bool, tag: int | None,
                 default: tuple, fields: list[KField] | None):
        self.kio_name = kio_name
        self.name = name
        self.type = type_
        self.nullable = nullable
        self.tag = tag
        self.default = default
        self.fields = fields


def kafka_name(kio_name: str, kio_type: str | None) -> str:
    """The Kafka name of a kio field: snake to CamelCase, plus ``Ms`` for durations and timestamps."""
    parts = kio_name.rstrip("_").split("_")
    name = "".join(p[:1].upper() + p[1:] for p in parts)
    return name + "Ms" if kio_type in TIMES else name


def norm(name: str) -> str:
    """A field name as both sources can be compared: lower case, no ``_``, no trailing ``ms``."""
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower().rstrip("_")
    if s.endswith("_ms"):
        s = s[:-3]
    return s.replace("_", "")


def _outer_optional(t: Any) -> tuple[Any, bool]:
    if get_origin(t) in (types.UnionType, Union):
        args = [a for a in get_args(t) if a is not type(None)]
        if len(args) == 1 and len(get_args(t)) == 2:
            return args[0], True
    return t, False


def _default(f: dataclasses.Field) -> tuple:
    if f.default is dataclasses.MISSING:
        return ()
    v = f.default
    if isinstance(v, datetime.timedelta):
        return (int(v / datetime.timedelta(milliseconds=1)),)
    if isinstance(v, datetime.datetime):
        return (int(v.timestamp() * 1000),)
    if v is None or isinstance(v, bool):
        return (v,)
    for plain in (int, float, str):  # kio's phantom subtypes (i16, f64, ...) to plain values
        if isinstance(v, plain):
            return (plain(v),)
    return ()  # uuids and anything else: no explicit default


def kio_fields(cls: type) -> list[KField]:
    """The fields of kio class ``cls`` in wire order."""
    out = []
    for f in dataclasses.fields(cls):
        kt = f.metadata.get("kafka_type")
        inner, nullable = _outer_optional(f.type)
        array = get_origin(inner) is tuple
        elem = get_args(inner)[0] if array else inner
        elem, _ = _outer_optional(elem)
        sub = None
        if dataclasses.is_dataclass(elem):
            sub = kio_fields(elem)  # type: ignore[arg-type]
            base = elem.__name__
        else:
            if kt is None:
                raise SystemExit(f"kio: {cls.__name__}.{f.name} has no kafka_type")
            base = KIO_TYPES.get(kt, kt)
        if base == "uuid" or kt == "datetime_i64":
            nullable = False  # kio's None for a zero uuid or a -1 timestamp: not a null on the wire
        tag = f.metadata.get("tag")
        out.append(KField(f.name, kafka_name(f.name, kt), ("[]" if array else "") + base, nullable,
                          None if tag is None else int(tag), _default(f), sub))
    return out


def kio_versions() -> dict[int, dict[str, dict[int, type]]]:
    """``{api key: {"request"|"response": {version: class}}}`` for every API kio knows."""
    from pkgutil import resolve_name

    from kio.schema.index import api_key_map, schema_name_map
    from kio.static.constants import EntityType

    out: dict[int, dict[str, dict[int, type]]] = {}
    for key, api in api_key_map.items():
        for v, entities in schema_name_map[api].items():
            for et, kind in ((EntityType.request, "request"), (EntityType.response, "response")):
                if et in entities:
                    out.setdefault(key, {}).setdefault(kind, {})[v] = resolve_name(entities[et])
    return out


# --- the tables' field lists, mutable while merging -------------------------------------------
# a field: [name, type, versions, nullableVersions, tag, taggedVersions, default, fields, flexibleVersions]

def thaw(x: Any) -> Any:
    """Tuples to lists, recursively, with no sharing (common structs are copied per use)."""
    if isinstance(x, dict):
        return {k: thaw(e) for k, e in x.items()}
    if isinstance(x, (list, tuple)):
        return [thaw(e) for e in x]
    return x


def inr(r: list | None, v: int) -> bool:
    return r is not None and r[0] <= v <= r[1]


def _struct(t: str) -> tuple[bool, str]:
    array = t.startswith("[]")
    return array, t[2:] if array else t


def _tagged_at(f: list, v: int) -> bool:
    return f[4] is not None and inr(f[5], v)


def _compatible(f: list, k: KField, prev: int) -> bool:
    return _same_kind(f, k, prev) and norm(f[0]) == norm(k.name)


def _same_kind(f: list, k: KField, prev: int) -> bool:
    """``f`` (at version ``prev``) and kio's ``k`` are the same kind of field, whatever their names."""
    fa, fb = _struct(f[1])
    ka, kb = _struct(k.type)
    if fa != ka or (f[7] is None) != (k.fields is None):
        return False
    if f[7] is None and fb != kb:
        return False
    tagged = _tagged_at(f, prev)
    return tagged == (k.tag is not None) and (not tagged or f[4] == k.tag)


def adopt_names(fields: list, kl: list[KField], v: int) -> list[tuple[str, str]]:
    """Kafka's current names (kio's) for the fields of version ``v`` that Kafka renamed since the
    JSON was taken: a field in the same place, of the same kind, under another name (VoteRequest
    v0-1's ``CandidateEpoch`` is ``ReplicaEpoch``).  Structs alike.  Returns the renames."""
    active = [f for f in fields if inr(f[2], v)]
    if len(active) != len(kl) or not all(_same_kind(f, k, v) for f, k in zip(active, kl)):
        return []
    done: list[tuple[str, str]] = []
    for f, k in zip(active, kl):
        if norm(f[0]) != norm(k.name):
            done.append((f[0], k.name))
            f[0] = k.name
        if f[7] is not None and k.fields is not None:
            done += adopt_names(f[7], k.fields, v)
    return done


def _extend(r: list, v: int) -> None:
    """Make range ``r`` (which holds ``v - 1``) hold ``v``."""
    if r[1] < v:
        r[1] = v


def _set_nullable(f: list, k: KField, v: int) -> bool:
    """Carry kio's nullability at ``v`` into the field; False when a range cannot say it."""
    if f[1] == "uuid":
        return True
    was = inr(f[3], v - 1)
    if k.nullable == was:
        if was:
            _extend(f[3], v)
        return True
    if k.nullable:
        if f[3] is None:
            f[3] = [v, OPEN]
            return True
        return False
    f[3][1] = v - 1
    return True


def new_field(k: KField, v: int) -> list:
    versions = [v, OPEN]
    sub = None
    if k.fields is not None:
        sub = []
        merge_fields(sub, k.fields, v)
    return [k.name, k.type, versions, [v, OPEN] if k.nullable else None, k.tag,
            [v, OPEN] if k.tag is not None else None, list(k.default), sub, False]


def _end(f: list, v: int) -> None:
    """The field exists up to ``v - 1``."""
    f[2][1] = v - 1
    if f[5] is not None and f[5][1] >= v:
        f[5][1] = v - 1


def merge_fields(fields: list, kl: list[KField], v: int) -> None:
    """Add version ``v`` (kio's fields ``kl``) onto ``fields``, which hold the versions before it."""
    prev = v - 1
    active = [f for f in fields if inr(f[2], prev)]
    used: set[int] = set()
    after = -1  # index in ``fields`` after which a new field goes
    for k in kl:
        match = next((f for f in active if id(f) not in used and _compatible(f, k, prev)), None)
        if match is not None and _set_nullable(match, k, v):
            used.add(id(match))
            _extend(match[2], v)
            if match[4] is not None and k.tag is not None:
                _extend(match[5], v)
            if k.fields is not None:
                merge_fields(match[7], k.fields, v)
            after = _index(fields, match)
            continue
        if match is not None:
            used.add(id(match))
            _end(match, v)
        f = new_field(k, v)
        fields.insert(after + 1, f)
        after += 1
    for f in active:
        if id(f) not in used:
            _end(f, v)


def _index(fields: list, f: list) -> int:
    return next(i for i, x in enumerate(fields) if x is f)


def drop_version(entry: dict, v: int) -> bool:
    """Remove version ``v`` (the entry's newest) from an entry; False when nothing is left."""
    lo, hi = entry["valid"]
    assert v == hi
    if lo == hi:
        return False
    entry["valid"] = [lo, hi - 1]
    _drop(entry["fields"], v)
    return True


def _drop(fields: list, v: int) -> None:
    fields[:] = [f for f in fields if f[2][0] < v]
    for f in fields:
        for i in (3, 5):
            if f[i] is not None and f[i][0] >= v:
                f[i] = None
        if f[7] is not None:
            _drop(f[7], v)


# --- checking a table against kio at one version -----------------------------------------------

def table_at(fields: list, v: int) -> list[tuple]:
    """The comparable facts of a field list at version ``v``."""
    out = []
    for f in fields:
        if not inr(f[2], v):
            continue
        array, _ = _struct(f[1])
        t = f[1] if f[7] is None else ("[]" if array else "") + "struct"
        tag = f[4] if _tagged_at(f, v) else None
        nullable = inr(f[3], v) and f[1] != "uuid"
        sub = None if f[7] is None else table_at(f[7], v)
        out.append((norm(f[0]), t, nullable, tag, sub))
    return out


def kio_at(kl: list[KField]) -> list[tuple]:
    out = []
    for k in kl:
        array, _ = _struct(k.type)
        t = k.type if k.fields is None else ("[]" if array else "") + "struct"
        sub = None if k.fields is None else kio_at(k.fields)
        out.append((norm(k.name), t, k.nullable, k.tag, sub))
    return out


def differences(a: list[tuple], b: list[tuple], path: str = "") -> list[str]:
    """Where two comparable field lists differ (names, types, nullability, tags)."""
    out = []
    if [x[0] for x in a] != [x[0] for x in b]:
        return [f"{path or '.'}: fields {[x[0] for x in a]} vs {[x[0] for x in b]}"]
    for x, y in zip(a, b):
        if x[1:4] != y[1:4]:
            out.append(f"{path}.{x[0]}: {x[1:4]} vs {y[1:4]}")
        if x[4] is not None and y[4] is not None:
            out.extend(differences(x[4], y[4], f"{path}.{x[0]}"))
    return out


# --- the merge of a whole table --------------------------------------------------------------

def _flexible(entry: dict, v: int, flexible: bool) -> None:
    r = entry["flexible"]
    if flexible and r is None:
        entry["flexible"] = [v, OPEN]
    elif flexible != inr(r, v):
        raise SystemExit(f"{entry.get('apiKey')}: flexibility at v{v} cannot be expressed as a range")


def merge_api(messages: dict, key: int, kind: str, versions: dict[int, type], log: list[str]) -> None:
    """Add kio's versions of one API direction to ``messages`` (JSON-derived, thawed entries)."""
    names = [n for n, m in messages.items() if m.get("apiKey") == key and m["type"] == kind]
    kio_name = versions[max(versions)].__name__
    entry = messages.pop(names[0]) if names else None
    if entry is not None and names[0] != kio_name:
        log.append(f"API key {key}: {names[0]} is {kio_name} in kio (renamed); the tables use the new name")
    if entry is None:
        first = min(versions)
        entry = {"type": kind, "valid": [first, first - 1], "flexible": None, "fields": [], "apiKey": key}
    messages[kio_name] = entry
    lo, hi = entry["valid"]
    for v in sorted(versions):
        kl = kio_fields(versions[v])
        if v <= hi:
            for old, new in adopt_names(entry["fields"], kl, v):
                log.append(f"{kio_name} v{v}: {old} is {new} in Kafka now; the tables use the new name")
            diff = differences(table_at(entry["fields"], v), kio_at(kl))
            if inr(entry["flexible"], v) != bool(versions[v].__flexible__):
                diff.append(f"flexible: {inr(entry['flexible'], v)} vs {bool(versions[v].__flexible__)}")
            if diff:
                log.append(f"{kio_name} v{v}: Kafka's JSON and kio differ (the JSON's layout is kept): "
                           + "; ".join(diff))
            continue
        if v != entry["valid"][1] + 1:
            raise SystemExit(f"{kio_name}: kio skips from v{entry['valid'][1]} to v{v}")
        merge_fields(entry["fields"], kl, v)
        _flexible(entry, v, bool(versions[v].__flexible__))
        entry["valid"][1] = v
        diff = differences(table_at(entry["fields"], v), kio_at(kl))
        if diff:
            raise SystemExit(f"{kio_name} v{v}: the merged table does not say what kio says: " + "; ".join(diff))
    if entry["valid"][1] > hi:
        log.append(f"{kio_name}: versions {hi + 1}-{entry['valid'][1]} from kio"
                   if hi >= lo else f"{kio_name}: new API, versions {entry['valid'][0]}-{entry['valid'][1]} from kio")


def merge_kio(messages: dict) -> list[str]:
    """Merge kio's layouts into ``messages`` (the JSON's entries) in place; returns what was done."""
    log: list[str] = []
    for name in list(messages):
        messages[name] = thaw(messages[name])
    kio = kio_versions()
    unstable_keys = {m["apiKey"]: m["valid"][1] for m in messages.values()
                     if m.get("unstable") and m["type"] == "request"}
    for key, top in sorted(unstable_keys.items()):
        for name in [n for n, m in messages.items() if m.get("apiKey") == key]:
            m = messages[name]
            m.pop("unstable", None)
            has_kio = top in kio.get(key, {}).get(m["type"], {})
            if m["valid"][1] != top:
                continue
            log.append(f"{name} v{top}: unreleased in Kafka's JSON, "
                       + ("kio's released layout used" if has_kio else "dropped (kio has no released layout)"))
            if not drop_version(m, top):
                del messages[name]
    for key in sorted(kio):
        for kind in ("request", "response"):
            if kind in kio[key]:
                merge_api(messages, key, kind, kio[key][kind], log)
    return log


def kio_version() -> str:
    import kio

    return str(kio.__version__)


__all__ = ["merge_kio", "kio_version", "kafka_name", "norm"]
