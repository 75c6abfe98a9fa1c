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

from kafkadump.decoders.payloads.model import DecodedPayload, PayloadLimits, Schema, SchemaProblem
from kafkadump.decoders.payloads.store import SchemaStore

WRAPPER = "kafkadump_payload_wrapper"  # the one-field record the schema is read through (same encoding)
DECIMAL = "kafkadump-decimal"          # the decimal logical type, read by kafkadump's own reader (_read_decimal)
MAX_DECIMAL_TEXT = 1000                # characters a decimal's plain notation may take (digits, or the scale)
MAX_REFERENCES = 1000                  # schemas pulled in by references, for one schema
PRIMITIVE_SIZE = {"null": 0, "boolean": 1, "int": 1, "long": 1, "float": 4, "double": 8, "bytes": 1, "string": 1}


def require() -> None:
    """Raise ImportError when fastavro is not installed."""
    import fastavro  # noqa: F401


def compile_schema(schema: Schema, store: SchemaStore, limits: PayloadLimits, validate: bool = False) -> AvroCodec:
    """``schema`` parsed with its named types, ready to read payloads.  Raises SchemaProblem."""
    from fastavro import parse_schema
    from fastavro.schema import UnknownType

    _register_decimal_reader()
    documents = [_json(s) for s in _referenced(schema, store)]
    main = _json(schema)
    named: dict[str, Any] = {}
    for document in documents:
        parse_schema(document, named_schemas=named)
    tried: set[str] = set()
    while True:
        try:
            parsed = _parse_wrapped(main, named)
            break
        except UnknownType as e:
            definer = _definer(store, e.name, schema) if e.name not in tried else None
            if definer is None:
                raise SchemaProblem(f"the named type {e.name!r} is in no referenced or loaded schema") from None
            tried.add(e.name)
            documents.append(_json(definer))
            parse_schema(documents[-1], named_schemas=named)
    guarded = _needs_guard(parsed["fields"][0]["type"], named)
    return AvroCodec(parsed, named, limits, guarded, _record_name(main), documents + [main])


def _parse_wrapped(main: Any, named: dict[str, Any]) -> dict[str, Any]:
    """``main`` parsed as the one field of a record (the same encoding: a record is its fields in order), so
    that fastavro reads any top-level type with the named types of ``named``."""
    from fastavro import parse_schema

    wrapper = {"type": "record", "name": WRAPPER, "fields": [{"name": "v", "type": main}]}
    parsed: dict[str, Any] = parse_schema(wrapper, named_schemas=named)  # type: ignore[assignment]
    return parsed


def _without_logical_types(node: Any) -> Any:
    """An Avro schema (JSON) with its logical types removed: the values read as their underlying types."""
    if isinstance(node, list):
        return [_without_logical_types(n) for n in node]
    if isinstance(node, dict):
        return {k: _without_logical_types(v) for k, v in node.items() if k != "logicalType"}
    return node


def _json(schema: Schema) -> Any:
    """The schema's JSON, its decimals renamed to :data:`DECIMAL` (read by :func:`_read_decimal`)."""
    try:
        return _own_decimals(json.loads(schema.text))
    except (ValueError, RecursionError):
        raise SchemaProblem("the Avro schema text is not JSON") from None


class DecimalPastLimit(SchemaProblem):
    """A decimal whose plain notation would take more than MAX_DECIMAL_TEXT characters (``size``: its bytes)."""

    def __init__(self, message: str, size: int):
        super().__init__(message)
        self.size = size


def _own_decimals(node: Any, depth: int = 0) -> Any:
    """``node`` (Avro schema JSON) with every bytes or fixed decimal's logical type renamed to DECIMAL, its
    precision and scale checked as fastavro checks them (SchemaProblem)."""
    if depth > 512:
        raise RecursionError("schema nested too deep")
    if isinstance(node, list):
        return [_own_decimals(n, depth + 1) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _own_decimals(v, depth + 1) for k, v in node.items()}
    if out.get("logicalType") == "decimal" and out.get("type") in ("bytes", "fixed"):
        precision, scale = out.get("precision"), out.get("scale", 0)
        if not isinstance(precision, int) or isinstance(precision, bool) or precision < 1:
            raise SchemaProblem("decimal precision must be a positive integer")
        if not _is_int(scale) or not 0 <= scale <= precision:
            raise SchemaProblem("decimal scale must be an integer from 0 to the precision")
        out["logicalType"] = DECIMAL
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _register_decimal_reader() -> None:
    """fastavro's extension point for logical types: DECIMAL read by :func:`_read_decimal` (fastavro's own
    decimal reader converts the unscaled integer in quadratic time, and rounds it to the precision)."""
    from fastavro.read import LOGICAL_READERS

    LOGICAL_READERS["bytes-" + DECIMAL] = LOGICAL_READERS["fixed-" + DECIMAL] = _read_decimal


def _read_decimal(data: bytes, writer_schema: Any = None, reader_schema: Any = None) -> decimal.Decimal:
    """The decimal of unscaled big-endian two's complement ``data`` and the schema's scale, exactly; a
    value whose plain notation would pass MAX_DECIMAL_TEXT characters raises DecimalPastLimit (unconverted:
    the conversion is bounded, whatever the length of the bytes or the scale)."""
    scale = writer_schema.get("scale", 0) if isinstance(writer_schema, dict) else 0
    digits = len(data) * 617 // 256 + 1  # 2.41 decimal digits a byte, rounded up
    if max(digits, scale) + 2 > MAX_DECIMAL_TEXT:
        raise DecimalPastLimit(f"a decimal of {len(data)} bytes and scale {scale} would take more than "
                               f"{MAX_DECIMAL_TEXT} characters: not converted", len(data))
    sign, digit_tuple, _ = decimal.Decimal(int.from_bytes(data, "big", signed=True)).as_tuple()
    return decimal.Decimal((sign, digit_tuple, -scale))


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
    """True when the schema is recursive or has an array whose items may take no bytes.

    One walk with each named type visited once (a schema that names one type many times costs its size, not
    the number of paths through it).
    """
    state: dict[str, int] = {}  # 1: being walked, 2: done
    sizes: dict[str, int] = {}

    def named_type(name: str) -> bool:
        if state.get(name) == 1:
            return True  # reached from inside itself: recursive
        if state.get(name) == 2 or name not in named:
            return False
        state[name] = 1
        found = walk(named[name], inline=True)
        state[name] = 2
        return found

    def walk(n: Any, inline: bool = False) -> bool:
        if isinstance(n, str):
            return named_type(n)
        if isinstance(n, list):
            return any(walk(x) for x in n)
        if not isinstance(n, dict):
            return False
        t = n.get("type")
        name = n.get("name")
        if t in ("record", "error", "enum", "fixed") and isinstance(name, str) and not inline:
            return named_type(name) if name in named else any(walk(f["type"]) for f in n.get("fields", ()))
        if t in ("record", "error"):
            return any(walk(f["type"]) for f in n["fields"])
        if t == "array":
            return _min_size(n["items"], named, sizes, set()) == 0 or walk(n["items"])
        if t == "map":
            return walk(n["values"])
        return walk(t) if isinstance(t, (dict, list)) else False

    return walk(node)


def _min_size(node: Any, named: dict[str, Any], sizes: dict[str, int], stack: set[str]) -> int:
    """The fewest bytes a value of this type takes (a type reached from inside itself counts 0)."""
    if isinstance(node, str):
        if node in PRIMITIVE_SIZE:
            return PRIMITIVE_SIZE[node]
        if node in sizes:
            return sizes[node]
        if node in stack or node not in named:
            return 0
        size = _min_size(named[node], named, sizes, stack | {node})
        sizes[node] = size
        return size
    if isinstance(node, list):
        return 1  # the branch index
    if isinstance(node, dict):
        t = node.get("type")
        inner = stack | {node["name"]} if isinstance(node.get("name"), str) else stack
        if t in ("record", "error"):
            return sum(_min_size(f["type"], named, sizes, inner) for f in node["fields"])
        if t == "fixed":
            return int(node.get("size", 0))
        if t in ("enum", "array", "map"):
            return 1
        return _min_size(t, named, sizes, stack)
    return 0


class AvroCodec:
    """One parsed Avro schema: reads payloads (guarded when the schema needs it)."""

    def __init__(self, parsed: Any, named: dict[str, Any], limits: PayloadLimits, guarded: bool,
                 record_name: str | None, documents: list[Any]):
        self.parsed = parsed
        self.named = named
        self.limits = limits
        self.guarded = guarded
        self.record_name = record_name
        self.documents = documents  # the referenced schemas and the schema (JSON), main last
        self._plain: Any = None

    def plain(self) -> Any:
        """The schema parsed without logical types (for values a logical type cannot show)."""
        if self._plain is None:
            from fastavro import parse_schema

            named: dict[str, Any] = {}
            *refs, main = [_without_logical_types(d) for d in self.documents]
            for document in refs:
                parse_schema(document, named_schemas=named)
            self._plain = _parse_wrapped(main, named)
        return self._plain

    def decode(self, data: bytes, message_indexes: tuple[int, ...] | None = None) -> DecodedPayload:
        from fastavro import schemaless_reader

        # a schema fastavro cannot bound, or a payload with room for more items than the limit (every
        # item of other schemas takes a byte at least): walked with the limits first
        if self.guarded or len(data) > self.limits.max_items:
            try:
                check_encoding(self.parsed["fields"][0]["type"], self.named, data, self.limits)
            except SchemaProblem as e:
                return DecodedPayload(error=str(e), error_offset=e.offset, message=self.record_name)
        stream = io.BytesIO(data)
        try:
            record: Any = schemaless_reader(stream, self.parsed, None)
            value = record["v"]
        except DecimalPastLimit as e:
            return DecodedPayload(error=str(e), error_offset=stream.tell() - e.size, message=self.record_name,
                                  limit=True)
        except EOFError:
            return DecodedPayload(error=f"the payload ends inside the Avro value ({len(data)} bytes)",
                                  error_offset=len(data), message=self.record_name)
        except UnicodeDecodeError as e:
            return DecodedPayload(error=f"a string is not UTF-8 ({e.reason})", message=self.record_name)
        except (ValueError, OverflowError) as e:
            return self._without_logical_types(data, e)
        except (IndexError, KeyError, TypeError) as e:
            return DecodedPayload(error=f"not the Avro encoding of this schema: {type(e).__name__}: "
                                        f"{str(e)[:160]}", message=self.record_name)
        return self._finish(value, stream.tell(), data)

    def _without_logical_types(self, data: bytes, why: Exception) -> DecodedPayload:
        """Read again without logical types: a timestamp beyond year 9999, a uuid that is no uuid, ... keep
        their raw values (the bytes are a valid encoding); anything else is not this schema's encoding."""
        from fastavro import schemaless_reader

        stream = io.BytesIO(data)
        try:
            record: Any = schemaless_reader(stream, self.plain(), None)
        except Exception:  # noqa: BLE001 - any failure here means the first error was about the bytes
            return DecodedPayload(error=f"not the Avro encoding of this schema: {type(why).__name__}: "
                                        f"{str(why)[:160]}", message=self.record_name)
        got = self._finish(record["v"], stream.tell(), data)
        reason = f"a logical type cannot show its value ({type(why).__name__}: {str(why)[:120]}): shown without " \
                 f"logical types"
        return DecodedPayload(value=got.value, error=reason if got.error is None else f"{reason}; {got.error}",
                              error_offset=got.error_offset, message=self.record_name)

    def _finish(self, value: Any, end: int, data: bytes) -> DecodedPayload:
        value = jsonable(value)
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
    __slots__ = ("data", "pos", "items", "limits", "named", "sizes")

    def __init__(self, data: bytes, limits: PayloadLimits, named: dict[str, Any]):
        self.data = data
        self.pos = 0
        self.items = 0
        self.limits = limits
        self.named = named
        self.sizes: dict[str, int] = {}

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
            item_min = _min_size(inner, self.named, self.sizes, set()) + (1 if t == "map" else 0)
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
