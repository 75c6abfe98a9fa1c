"""Avro payloads: fastavro's schemaless reader, behind a guard for what fastavro does not bound.

The Avro binary encoding (Avro 1.11 specification, "Binary Encoding")::

    null            nothing            boolean   one byte 0/1
    int, long       zig-zag varint     float/double  4 / 8 bytes little-endian
    bytes, string   long length, then the bytes (string: UTF-8)
    fixed           the declared size  enum      int index into the symbols
    union           long branch index, then the branch's value
    record          the fields in schema order
    array, map      blocks: long count (negative: -count, then a long byte size), the items
                    (map: string key, then value), ...; a count of 0 ends them

fastavro reads at most the bytes it is given for strings and bytes, and
raises on invalid UTF-8, but two shapes of schema let a few hostile bytes
make it loop and allocate without end: an array or map whose items take no
bytes (``null``, an empty record), where a count of 2^62 costs one varint;
and a recursive named type, nested as deep as the payload says (the
reader's C recursion).  For those schemas :func:`check_encoding` walks the
payload first with the limits (items, depth, counts against bytes left) and
refuses it with the byte offset.

A schema's named types come from its references (Avro named types in other
subjects, resolved through the store), else from any Avro schema of the
store that defines the missing name.  The value is made JSON-ready by
:func:`jsonable`: decimals as plain-notation strings, timestamps, dates and
times as ISO-8601 strings, uuids as strings, bytes and fixed as base64.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import io
import json
import math
import uuid
from typing import Any

from .model import DecodedPayload, PayloadLimits, Schema, SchemaProblem
from .store import SchemaStore

WRAPPER = "kafkadump_payload_wrapper"  # the one-field record the schema is read through (same encoding)
MAX_REFERENCES = 1000                  # schemas pulled in by references, for one schema
PRIMITIVE_SIZE = {"null": 0, "boolean": 1, "int": 1, "long": 1, "float": 4, "double": 8, "bytes": 1, "string": 1}


def require() -> None:
    """Raise ImportError when fastavro is not installed."""
    import fastavro  # noqa: F401


def compile_schema(schema: Schema, store: SchemaStore, limits: PayloadLimits, validate: bool = False) -> AvroCodec:
    """``schema`` parsed with its named types, ready to read payloads.  Raises SchemaProblem."""
    from fastavro import parse_schema
    from fastavro.schema import UnknownType

    named: dict[str, Any] = {}
    for ref_schema in _referenced(schema, store):
        parse_schema(_json(ref_schema), named_schemas=named)
    main = _json(schema)
    wrapper = {"type": "record", "name": WRAPPER, "fields": [{"name": "v", "type": main}]}
    tried: set[str] = set()
    while True:
        try:
            parsed: dict[str, Any] = parse_schema(wrapper, named_schemas=named)  # type: ignore[assignment]
            break
        except UnknownType as e:
            definer = _definer(store, e.name, schema) if e.name not in tried else None
            if definer is None:
                raise SchemaProblem(f"the named type {e.name!r} is in no referenced or loaded schema") from None
            tried.add(e.name)
            parse_schema(_json(definer), named_schemas=named)
    guarded = _needs_guard(parsed["fields"][0]["type"], named)
    return AvroCodec(parsed, named, limits, guarded, _record_name(main))


def _json(schema: Schema) -> Any:
    try:
        return json.loads(schema.text)
    except (ValueError, RecursionError):
        raise SchemaProblem("the Avro schema text is not JSON") from None


def _referenced(schema: Schema, store: SchemaStore) -> list[Schema]:
    """The schemas ``schema`` references, depth first (a reference's own references before it)."""
    out: list[Schema] = []
    seen: set[tuple[str, int]] = set()

    def visit(s: Schema, depth: int) -> None:
        for ref in s.references:
            if (ref.subject, ref.version) in seen or len(seen) >= MAX_REFERENCES:
                continue
            seen.add((ref.subject, ref.version))
            found = store.resolve(ref)
            if found is None:
                raise SchemaProblem(f"the reference {ref.name!r} (subject {ref.subject!r} version {ref.version}) "
                                    f"is not in the schema store")
            if depth < 64:
                visit(found, depth + 1)
            out.append(found)

    visit(schema, 0)
    return out


def _definer(store: SchemaStore, fullname: str, besides: Schema) -> Schema | None:
    """A loaded Avro schema that defines the named type ``fullname`` (searched only when a name is missing)."""
    short = fullname.rsplit(".", 1)[-1]
    for s in store.all_of_type("AVRO"):
        if s is not besides and f'"{short}"' in s.text:
            try:
                if fullname in _defined_names(json.loads(s.text), None):
                    return s
            except (ValueError, RecursionError):
                continue
    return None


def _defined_names(node: Any, namespace: str | None, depth: int = 0) -> set[str]:
    """The full names of the named types an Avro schema (JSON) defines."""
    found: set[str] = set()
    if depth > 200:
        return found
    if isinstance(node, list):
        for n in node:
            found |= _defined_names(n, namespace, depth + 1)
    elif isinstance(node, dict):
        kind, name = node.get("type"), node.get("name")
        if kind in ("record", "error", "enum", "fixed") and isinstance(name, str):
            ns = node.get("namespace", namespace) if "." not in name else name.rsplit(".", 1)[0]
            full = name if "." in name else (f"{ns}.{name}" if ns else name)
            found.add(full)
            namespace = ns
        for f in node.get("fields", []) if isinstance(node.get("fields"), list) else []:
            if isinstance(f, dict):
                found |= _defined_names(f.get("type"), namespace, depth + 1)
        for k in ("items", "values"):
            if k in node:
                found |= _defined_names(node[k], namespace, depth + 1)
        if isinstance(kind, (dict, list)):
            found |= _defined_names(kind, namespace, depth + 1)
    return found


def _record_name(main: Any) -> str | None:
    if isinstance(main, dict) and isinstance(main.get("name"), str):
        ns = main.get("namespace")
        return f"{ns}.{main['name']}" if ns and "." not in main["name"] else main["name"]
    return None


def _needs_guard(node: Any, named: dict[str, Any]) -> bool:
    """True when the schema is recursive or has an array/map whose items may take no bytes."""
    return _recursive(node, named, ()) or _zero_size_items(node, named, set())


def _recursive(node: Any, named: dict[str, Any], path: tuple[str, ...]) -> bool:
    if isinstance(node, str):
        if node in path:
            return True
        return node in named and _recursive(named[node], named, path + (node,))
    if isinstance(node, list):
        return any(_recursive(n, named, path) for n in node)
    if isinstance(node, dict):
        t = node.get("type")
        if t in ("record", "error"):
            name = node.get("name", "")
            inner = path + (name,) if name not in path else path
            return any(_recursive(f["type"], named, inner) for f in node["fields"])
        if t == "array":
            return _recursive(node["items"], named, path)
        if t == "map":
            return _recursive(node["values"], named, path)
        if isinstance(t, (dict, list)):
            return _recursive(t, named, path)
    return False


def _min_size(node: Any, named: dict[str, Any], seen: set[str]) -> int:
    """The fewest bytes a value of this type takes (a recursive name counts as 0)."""
    if isinstance(node, str):
        if node in PRIMITIVE_SIZE:
            return PRIMITIVE_SIZE[node]
        if node in seen or node not in named:
            return 0
        return _min_size(named[node], named, seen | {node})
    if isinstance(node, list):
        return 1  # the branch index
    if isinstance(node, dict):
        t = node.get("type")
        if t in ("record", "error"):
            return sum(_min_size(f["type"], named, seen | {node.get("name", "")}) for f in node["fields"])
        if t == "fixed":
            return int(node.get("size", 0))
        if t in ("enum", "array", "map"):
            return 1
        return _min_size(t, named, seen)
    return 0


def _zero_size_items(node: Any, named: dict[str, Any], seen: set[str]) -> bool:
    if isinstance(node, str):
        if node in seen or node not in named:
            return False
        return _zero_size_items(named[node], named, seen | {node})
    if isinstance(node, list):
        return any(_zero_size_items(n, named, seen) for n in node)
    if isinstance(node, dict):
        t = node.get("type")
        if t in ("record", "error"):
            return any(_zero_size_items(f["type"], named, seen | {node.get("name", "")}) for f in node["fields"])
        if t == "array":
            return _min_size(node["items"], named, set()) == 0 or _zero_size_items(node["items"], named, seen)
        if t == "map":
            return _zero_size_items(node["values"], named, seen)
        if isinstance(t, (dict, list)):
            return _zero_size_items(t, named, seen)
    return False


class AvroCodec:
    """One parsed Avro schema: reads payloads (guarded when the schema needs it)."""

    def __init__(self, parsed: Any, named: dict[str, Any], limits: PayloadLimits, guarded: bool,
                 record_name: str | None):
        self.parsed = parsed
        self.named = named
        self.limits = limits
        self.guarded = guarded
        self.record_name = record_name

    def decode(self, data: bytes, message_indexes: tuple[int, ...] | None = None) -> DecodedPayload:
        from fastavro import schemaless_reader

        if self.guarded:
            try:
                check_encoding(self.parsed["fields"][0]["type"], self.named, data, self.limits)
            except SchemaProblem as e:
                return DecodedPayload(error=str(e), error_offset=e.offset, message=self.record_name)
        stream = io.BytesIO(data)
        try:
            record: Any = schemaless_reader(stream, self.parsed, None)
            value = record["v"]
        except EOFError:
            return DecodedPayload(error=f"the payload ends inside the Avro value ({len(data)} bytes)",
                                  error_offset=len(data), message=self.record_name)
        except UnicodeDecodeError as e:
            return DecodedPayload(error=f"a string is not UTF-8 ({e.reason})", message=self.record_name)
        except (ValueError, OverflowError, IndexError, KeyError, TypeError) as e:
            return DecodedPayload(error=f"not the Avro encoding of this schema: {type(e).__name__}: "
                                        f"{str(e)[:160]}", message=self.record_name)
        value = jsonable(value)
        end = stream.tell()
        if end != len(data):
            return DecodedPayload(value=value, error=f"{len(data) - end} bytes after the Avro value",
                                  error_offset=end, message=self.record_name)
        return DecodedPayload(value=value, message=self.record_name)


def jsonable(v: Any) -> Any:
    """A decoded value as JSON-ready Python, losslessly as people read it."""
    if isinstance(v, (str, int)) or v is None:  # bool is an int
        return v
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, float):
        return v if math.isfinite(v) else ("NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity"))
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, uuid.UUID):
        return str(v)
    return str(v)


# ---- the guard: the encoding walked with limits, for the schemas fastavro cannot bound -------------------

class _Walk:
    __slots__ = ("data", "pos", "items", "limits", "named")

    def __init__(self, data: bytes, limits: PayloadLimits, named: dict[str, Any]):
        self.data = data
        self.pos = 0
        self.items = 0
        self.limits = limits
        self.named = named

    def fail(self, why: str, at: int | None = None) -> SchemaProblem:
        return SchemaProblem(why, self.pos if at is None else at)

    def long(self) -> int:
        result = shift = 0
        start = self.pos
        while True:
            if self.pos >= len(self.data):
                raise self.fail("the payload ends inside a varint", start)
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return (result >> 1) ^ -(result & 1)
            shift += 7
            if shift > 63:
                raise self.fail("a varint longer than 10 bytes", start)

    def skip(self, n: int) -> None:
        if n < 0 or n > len(self.data) - self.pos:
            raise self.fail(f"a length of {n} with {len(self.data) - self.pos} bytes left")
        self.pos += n

    def count(self, item_min: int) -> int:
        start = self.pos
        n = self.long()
        if n < 0:
            n = -n
            self.long()  # the block's byte size
        self.items += n
        if self.items > self.limits.max_items:
            raise self.fail(f"more than {self.limits.max_items} array/map items", start)
        if n * item_min > len(self.data) - self.pos:
            raise self.fail(f"a block of {n} items with {len(self.data) - self.pos} bytes left", start)
        return n

    def value(self, node: Any, depth: int) -> None:
        if depth > self.limits.max_depth:
            raise self.fail(f"nested deeper than {self.limits.max_depth}")
        if isinstance(node, str):
            self.primitive(node, depth)
        elif isinstance(node, list):
            start = self.pos
            branch = self.long()
            if not 0 <= branch < len(node):
                raise self.fail(f"union branch {branch} of {len(node)}", start)
            self.value(node[branch], depth + 1)
        else:
            self.complex(node, depth)

    def primitive(self, name: str, depth: int) -> None:
        if name in ("int", "long", "boolean"):
            self.long() if name != "boolean" else self.skip(1)
        elif name in ("float", "double"):
            self.skip(4 if name == "float" else 8)
        elif name in ("bytes", "string"):
            n = self.long()
            start = self.pos
            self.skip(n)
            if name == "string":
                try:
                    self.data[start:self.pos].decode("utf-8")
                except UnicodeDecodeError as e:
                    raise self.fail(f"a string is not UTF-8 ({e.reason})", start + e.start) from None
        elif name != "null":
            if name not in self.named:
                raise self.fail(f"unknown type {name!r}")
            self.value(self.named[name], depth)

    def complex(self, node: dict[str, Any], depth: int) -> None:
        t = node.get("type")
        if t in ("record", "error"):
            for f in node["fields"]:
                self.value(f["type"], depth + 1)
        elif t == "enum":
            self.long()
        elif t == "fixed":
            self.skip(int(node["size"]))
        elif t in ("array", "map"):
            inner = node["items"] if t == "array" else node["values"]
            item_min = _min_size(inner, self.named, set()) + (1 if t == "map" else 0)
            while True:
                n = self.count(item_min)
                if n == 0:
                    return
                for _ in range(n):
                    if t == "map":
                        self.primitive("string", depth)
                    self.value(inner, depth + 1)
        else:
            self.value(t, depth)


def check_encoding(node: Any, named: dict[str, Any], data: bytes, limits: PayloadLimits) -> None:
    """Walk ``data`` as the Avro encoding of ``node`` within ``limits``; raise SchemaProblem (with the offset)."""
    _Walk(data, limits, named).value(node, 0)


__all__ = ["require", "compile_schema", "AvroCodec", "jsonable", "check_encoding"]
