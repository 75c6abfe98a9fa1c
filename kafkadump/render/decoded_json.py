"""Decoded internal-topic keys and values as JSON text, by writers made once per record type.

:func:`part_text` writes what ``jsontext.dumps(internal_records.part_json(part, encoder))`` writes
(the reference, :mod:`kafkadump.render.internal_records`), without building the object and
without the generic encoder: for each (schema, version) the decoder's plan of the struct
(:func:`kafkadump.decoders.internal_topics.plain_records.struct_plan`) becomes, on first use,
one Python function writing its fixed fields in order as one f-string, each by its declared
type (numbers as ``str``, strings through the JSON string encoder and the unsafe-character
escapes, byte strings per ``--encoding``, structs and arrays by their own writers).  What the
plan does not foresee goes to the reference: a partial struct (fewer keys than the plan), a
value not of the declared type (a masked secret, an embedded payload's Part: their own writers),
tagged and unknown fields after the fixed ones, floats, RECORDS.  Writing only reads the decoded
values: nothing here decodes.  ``tests/test_internal_plain.py`` holds the text equal to the
reference on every record of the corpus and on generated records of every type and version.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any

from kafkadump.decoders.internal_topics import constants as K
from kafkadump.decoders.internal_topics.decoded import Part
from kafkadump.decoders.internal_topics.plain_records import struct_plan, within_tables
from kafkadump.decoders.protocol.plan_code import FIXED_FORMATS, PRIM, PRIM_ARRAY, STRUCT, STRUCT_ARRAY
from kafkadump.render.internal_records import jsonable, part_json
from kafkadump.render.jsontext import dumps as dumps_text
from kafkadump.render.jsontext import escape_unsafe

if TYPE_CHECKING:
    from kafkadump.decoders.protocol.decoder import Plan
    from kafkadump.objects.records import Encoder

# bytes -> their JSON text per --encoding (render.jsonl.VALUE_JSON)
ByteText = Callable[[bytes], str]
# a struct writer: (dict, encoder, byte text) -> JSON text
StructWriter = Callable[[dict, Any, ByteText], str]

# the integer types (a plan reads them as int, whose str() is json's text; float64 goes to the reference)
_NUMBERS = frozenset(t for t in FIXED_FORMATS if t not in ("bool", "float64"))


def text_of(s: str) -> str:
    """A string as ``jsontext.dumps`` writes it."""
    t = encode_basestring(s)
    return t if t.isascii() else escape_unsafe(t)


def value_text(v: object, enc: Encoder, ej: ByteText) -> str:
    """Any decoded value as the reference writes it (the cases the writers do not foresee)."""
    if type(v) is Part:
        return part_text(v, enc, ej)
    return dumps_text(jsonable(v, enc))


def _string(v: object, enc: Encoder, ej: ByteText) -> str:
    if type(v) is str:
        t = encode_basestring(v)
        return t if t.isascii() else escape_unsafe(t)
    return "null" if v is None else value_text(v, enc, ej)


def _bytes(v: object, enc: Encoder, ej: ByteText) -> str:
    if type(v) is bytes:
        return ej(v)
    return "null" if v is None else value_text(v, enc, ej)


def _struct(v: object, w: StructWriter, enc: Encoder, ej: ByteText) -> str:
    if type(v) is dict:
        return w(v, enc, ej)
    return "null" if v is None else value_text(v, enc, ej)


def _structs(v: object, w: StructWriter, enc: Encoder, ej: ByteText) -> str:
    if type(v) is list:
        return "[" + ",".join([_struct(x, w, enc, ej) for x in v]) + "]"
    return "null" if v is None else value_text(v, enc, ej)


def _numbers(v: object, enc: Encoder, ej: ByteText) -> str:
    if type(v) is list:  # an array of integers is read as ints
        return "[" + ",".join(map(str, v)) + "]"
    return "null" if v is None else value_text(v, enc, ej)


def _items(v: object, one: Callable[[object, Encoder, ByteText], str], enc: Encoder, ej: ByteText) -> str:
    if type(v) is list:
        return "[" + ",".join([one(x, enc, ej) for x in v]) + "]"
    return "null" if v is None else value_text(v, enc, ej)


def _number(v: object, enc: Encoder, ej: ByteText) -> str:
    return str(v) if type(v) is int else value_text(v, enc, ej)


def _boolean(v: object, enc: Encoder, ej: ByteText) -> str:
    return "true" if v is True else "false" if v is False else value_text(v, enc, ej)


def _extra(d: dict, n: int, enc: Encoder, ej: ByteText) -> str:
    """The fields after the plan's ``n`` fixed ones (tagged fields, unknown tags), as the reference writes them."""
    text = ",".join([text_of(k) + ":" + value_text(v, enc, ej) for k, v in islice(d.items(), n, None)])
    return "," + text if n else text


_HELPERS: dict[str, Any] = {"S": _string, "B": _bytes, "T": _struct, "TA": _structs, "NA": _numbers, "IA": _items,
                            "N": _number, "Z": _boolean, "V": value_text, "X": _extra}
_ONE = {"string": "S", "uuid": "S", "bytes": "B", "bool": "Z", **{t: "N" for t in _NUMBERS}}


class _Writer:
    """The source of one plan's writer and of those of the plans under it."""

    def __init__(self) -> None:
        self.ns: dict[str, Any] = dict(_HELPERS)
        self.names: dict[int, str] = {}
        self.chunks: list[str] = []

    def function(self, plan: Plan) -> str:
        name = self.names.get(id(plan))
        if name is not None:
            return name
        name = self.names[id(plan)] = f"w{len(self.names)}"
        fields = [self._field(step, ftype) for step, (ftype, _) in zip(plan.steps, plan.types)]
        n = len(fields)
        body = ",".join(fields)
        self.chunks.append("\n".join([
            f"def {name}(d, enc, ej):",
            "    n = len(d)",
            f"    if n < {n}: return V(d, enc, ej)",
            f"    text = f'{{{{{body}'",
            f"    return text + '}}' if n == {n} else text + X(d, {n}, enc, ej) + '}}'"]))
        return name

    def _field(self, step: tuple, ftype: str) -> str:
        """One field as f-string text: its JSON name, then its value's writer."""
        key, kind, sub, _nullable, _emin = step
        if not key.isidentifier():
            raise ValueError(f"field name {key!r}")  # pragma: no cover - the tables' names are identifiers
        get = f'd["{key}"]'
        if kind == PRIM:
            helper = _ONE.get(ftype)
            if helper == "N":
                # a fixed-width number is always an int (the plan's reader); str() is json's text of it
                value = f"{{{get}}}"
            elif helper is not None:
                value = f"{{{helper}({get}, enc, ej)}}"
            else:  # float64 (non-finite values), records
                value = f"{{V({get}, enc, ej)}}"
        elif kind == STRUCT:
            value = f"{{T({get}, {self.function(sub)}, enc, ej)}}"
        elif kind == STRUCT_ARRAY:
            value = f"{{TA({get}, {self.function(sub)}, enc, ej)}}"
        else:
            assert kind == PRIM_ARRAY
            et = ftype[2:]
            if et in _NUMBERS:
                value = f"{{NA({get}, enc, ej)}}"
            elif et in _ONE:
                value = f"{{IA({get}, {_ONE[et]}, enc, ej)}}"
            else:
                value = f"{{V({get}, enc, ej)}}"
        return f'"{key}":{value}'


def compile_writer(plan: Plan) -> StructWriter:
    """The writer of a struct decoded by ``plan``: ``fn(data, encoder, byte_text) -> JSON text``."""
    w = _Writer()
    top = w.function(plan)
    exec(compile("\n\n".join(w.chunks), f"<writer {top}>", "exec"), w.ns)  # noqa: S102 - our own generated source
    fn: StructWriter = w.ns[top]
    return fn


class _PartType:
    """The writer of one (schema, version) and the per-schema parts of its text."""

    __slots__ = ("writer", "schema", "enums")

    def __init__(self, schema: str, version: int) -> None:
        self.writer = compile_writer(struct_plan(schema, version))
        self.schema = text_of(schema)
        self.enums = [(field, table) for (s, field), table in K.ENUMS.items() if s == schema]


_TYPES: dict[tuple[str, int], _PartType | None] = {}
# a (schema, version) is written by the reference until it has been written this many times (making a
# writer costs about as much as writing a hundred small parts by the reference)
COMPILE_AFTER = 8
_SEEN: dict[tuple[str, int], int] = {}


def _part_type(schema: str, version: int) -> _PartType | None:
    k = (schema, version)
    t = _TYPES.get(k)
    if t is not None or k in _TYPES:
        return t
    if not within_tables(schema, version):
        if len(_TYPES) < 4096:
            _TYPES[k] = None
        return None
    seen = _SEEN.get(k, 0)
    if seen < COMPILE_AFTER:
        _SEEN[k] = seen + 1
        return None
    t = _TYPES[k] = _PartType(schema, version)
    return t


def part_text(p: Part, enc: Encoder, ej: ByteText) -> str:
    """``jsontext.dumps(part_json(p, enc))``; ``ej``: a byte string's JSON text by the same encoding."""
    t = _TYPES.get((p.schema, p.version))
    if t is None and not (p.partial or type(p.data) is not dict or p.schema is None or type(p.version) is not int):
        t = _part_type(p.schema, p.version)
    if t is None or p.partial or type(p.data) is not dict:
        return dumps_text(part_json(p, enc))
    head = "{"
    if p.frame_version is not None:
        head = f'{{"frameVersion":{p.frame_version},'
    if p.api_key is not None:
        head += f'"apiKey":{p.api_key},'
    data = p.data
    text = f'{head}"schema":{t.schema},"version":{p.version},"data":{t.writer(data, enc, ej)}'
    if t.enums:
        names = [(f, K.enum_name(table, data[f])) for f, table in t.enums if f in data]
        if names:
            text += ',"names":{' + ",".join(text_of(f) + ":" + text_of(n) for f, n in names) + "}"
    raw = p.raw
    return text + ',"raw":' + ("null" if raw is None else ej(raw)) + "}"


__all__ = ["part_text", "compile_writer", "value_text", "text_of", "COMPILE_AFTER"]
