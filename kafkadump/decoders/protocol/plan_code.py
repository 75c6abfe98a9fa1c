"""Plans compiled to straight-line Python: the fast path of the schema decoder.

:func:`~kafkadump.decoders.protocol.decoder.plan_for` says what to read for one struct at one version as a
list of steps, and :func:`~kafkadump.decoders.protocol.decoder.read_struct` interprets them field by field
(a loop, a dispatch on the field's kind, a path string and a reader call per field).  Here a plan
becomes the source of one Python function per struct, generated once per (schema, version) and
run without the interpretation:

    def struct_12(buf, pos, end, st):
        out = {}
        if pos + 6 > end: raise BAIL
        out['acks'], out['timeoutMs'] = unpack_12_0(buf, pos)   # neighbouring numbers: one unpack
        pos += 6
        ...
        return out, pos

The compiled function handles only the plain case: every length and count fits, no null where
the schema forbids one, UTF-8 that decodes, no tagged field it cannot read without a finding.
Anything else raises (``BAIL``, or the primitive's own :class:`~kafkadump.base.findings.DecodeError`)
and the caller decodes the struct again with the reference interpreter, which words the findings
and says where the bytes went wrong.  So the compiled path never makes a finding of its own: the
interpreter stays the one place that judges bytes, and a compiled decode is the interpreter's
value whenever the interpreter would have found nothing (``tests/test_capture_compiled.py``
compares the two on every fixture and corpus capture).  Spans (the hexdump) are the
interpreter's alone.

The generated code reads the same primitives the interpreter reads: big-endian numbers through
``struct`` (neighbouring fixed-width fields in one unpack), length prefixes (int16/int32 or
unsigned varint), strings as UTF-8, byte strings copied, RECORDS through the interpreter's
``decode_records`` (the shared batch decoder), tagged-field sections through its
``read_tagged`` when not empty.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

PRIM, STRUCT, STRUCT_ARRAY, PRIM_ARRAY = 0, 1, 2, 3   # the kinds of a plan's steps

# the struct format of each fixed-width type (bool: "?", any non-zero byte is true, as BOOLEAN reads)
FIXED_FORMATS = {"int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q",
                 "float64": "d", "bool": "?"}


class Bail(Exception):
    """The bytes are not the plain case the compiled code handles: decode them with the interpreter."""


BAIL = Bail()


class _Writer:
    """The source of the functions of one plan and the plans under it."""

    def __init__(self, namespace: dict[str, Any], names: dict[int, str]) -> None:
        self.ns = namespace       # globals of the generated code: helpers, unpackers, plans
        self.names = names        # id(plan) -> name of its compiled function (plans compiled already)
        self.chunks: list[str] = []
        self.count = len(names)

    def function(self, plan: Any) -> str:
        """The name of ``plan``'s function, its source written (and those of the plans under it)."""
        name = self.names.get(id(plan))
        if name is not None:
            return name
        self.count += 1
        name = f"struct_{self.count}"
        self.names[id(plan)] = name
        self.ns[f"{name}_plan"] = plan   # for read_tagged
        lines = [f"def {name}(buf, pos, end, st):", "    out = {}"]
        steps = list(zip(plan.steps, plan.types, plan.fast))
        i = 0
        while i < len(steps):
            (key, kind, _r, _nullable, _emin), (ftype, _compact), _ = steps[i]
            if kind == PRIM and ftype in FIXED_FORMATS:
                j = i
                while j < len(steps) and steps[j][0][1] == PRIM and steps[j][1][0] in FIXED_FORMATS:
                    j += 1
                lines += self._fixed(name, i, [s[0][0] for s in steps[i:j]], [s[1][0] for s in steps[i:j]])
                i = j
                continue
            lines += self._step(name, i, steps[i][0], steps[i][1])
            i += 1
        if plan.flexible:
            lines += ["    if pos < end and buf[pos] == 0:", "        pos += 1", "    else:",
                      f"        pos = read_tagged({name}_plan, buf, pos, end, st, '', out)"]
        lines.append("    return out, pos")
        self.chunks.append("\n".join(lines))
        return name

    def _fixed(self, name: str, i: int, keys: list[str], types: list[str]) -> list[str]:
        unpacker = struct.Struct(">" + "".join(FIXED_FORMATS[t] for t in types))
        fn = f"unpack_{name}_{i}"
        self.ns[fn] = unpacker.unpack_from
        targets = ", ".join(f"out[{k!r}]" for k in keys) + ("," if len(keys) == 1 else "")
        return [f"    if pos + {unpacker.size} > end: raise BAIL",
                f"    {targets} = {fn}(buf, pos)",
                f"    pos += {unpacker.size}"]

    def _step(self, name: str, i: int, step: tuple, info: tuple[str, bool]) -> list[str]:
        key, kind, sub, nullable, emin = step
        ftype, compact = info
        target = f"out[{key!r}]"
        if kind == PRIM:
            return _indent(_prim(ftype, compact, nullable, target, key), 1)
        if kind == STRUCT:
            fn = self.function(sub)
            if not nullable:
                return [f"    {target}, pos = {fn}(buf, pos, end, st)"]
            return ["    if pos >= end: raise BAIL",
                    "    if buf[pos] >= 128:",
                    f"        {target} = None",
                    "        pos += 1",
                    "    else:",
                    f"        {target}, pos = {fn}(buf, pos + 1, end, st)"]
        array_nullable, array_compact = nullable
        n, lst = f"n{i}", f"lst{i}"
        lines = _length(n, array_compact, True)
        lines += [f"if {n} < 0:",
                  f"    if {n} != -1: raise BAIL" if array_nullable else "    raise BAIL",
                  f"    {target} = None",
                  "else:"]
        body = [f"if {n} * {emin} > end - pos: raise BAIL" if emin > 0
                else f"if {n} > MAX_EMPTY_ELEMENTS: raise BAIL",
                f"{lst} = []"]
        if kind == STRUCT_ARRAY:
            fn = self.function(sub)
            body += [f"for _ in range({n}):",
                     f"    v, pos = {fn}(buf, pos, end, st)",
                     f"    {lst}.append(v)"]
        else:
            body += [f"for _ in range({n}):"]
            body += _indent(_prim(ftype[2:], array_compact, False, "v", key), 1)
            body += [f"    {lst}.append(v)"]
        body.append(f"{target} = {lst}")
        lines += _indent(body, 1)
        return _indent(lines, 1)


def _indent(lines: list[str], levels: int) -> list[str]:
    pad = "    " * levels
    return [pad + line for line in lines]


def _length(n: str, compact: bool, wide: bool) -> list[str]:
    """Read a length prefix into ``n`` (-1: null): an unsigned varint less one, or an int16/int32."""
    if compact:
        return ["if pos >= end: raise BAIL",
                f"{n} = buf[pos]",
                f"if {n} < 128:",
                "    pos += 1",
                "else:",
                f"    {n}, pos = uvarint(buf, pos, end)",
                f"{n} -= 1"]
    size, unpack = (4, "int32_from") if wide else (2, "int16_from")
    return [f"if pos + {size} > end: raise BAIL",
            f"{n} = {unpack}(buf, pos)[0]",
            f"pos += {size}"]


def _prim(ftype: str, compact: bool, nullable: bool, target: str, key: str) -> list[str]:
    """Read one primitive value of type ``ftype`` into ``target``."""
    if ftype in FIXED_FORMATS:
        size = struct.calcsize(">" + FIXED_FORMATS[ftype])
        return [f"if pos + {size} > end: raise BAIL",
                f"{target} = fixed_{ftype}(buf, pos)[0]",
                f"pos += {size}"]
    if ftype == "uuid":
        return ["if pos + 16 > end: raise BAIL",
                f"{target} = kafka_uuid(bytes(buf[pos:pos + 16]))",
                "pos += 16"]
    if ftype not in ("string", "bytes", "records"):
        raise ValueError(f"unknown primitive type {ftype}")  # pragma: no cover - tables are generated
    lines = _length("n", compact, ftype != "string")
    lines += ["if n < 0:",
              "    if n != -1: raise BAIL" if nullable else "    raise BAIL",
              f"    {target} = None",
              "else:",
              "    q = pos + n",
              "    if q > end: raise BAIL"]
    if ftype == "string":
        lines.append(f"    {target} = str(buf[pos:q], 'utf-8')")
    elif ftype == "bytes":
        lines.append(f"    {target} = bytes(buf[pos:q])")
    else:
        lines.append(f"    {target} = decode_records(buf, pos, q, st, {key!r})")
    lines.append("    pos = q")
    return lines


def compile_plan(plan: Any, helpers: dict[str, Any]) -> Callable[..., tuple[dict, int]]:
    """The compiled function of ``plan`` (a :class:`~kafkadump.decoders.protocol.decoder.Plan`):
    ``fn(buf, pos, end, state) -> (value, next_pos)``, raising on anything but the plain case.

    ``helpers``: the interpreter's ``decode_records``, ``read_tagged``, ``kafka_uuid``, ``uvarint``
    (``decode_unsigned_varint``) and ``MAX_EMPTY_ELEMENTS``; the generated code's globals."""
    ns: dict[str, Any] = dict(helpers)
    ns["BAIL"] = BAIL
    ns["int16_from"] = struct.Struct(">h").unpack_from
    ns["int32_from"] = struct.Struct(">i").unpack_from
    for t, c in FIXED_FORMATS.items():
        ns[f"fixed_{t}"] = struct.Struct(">" + c).unpack_from
    writer = _Writer(ns, {})
    top = writer.function(plan)
    exec(compile("\n\n".join(writer.chunks), f"<plan {top}>", "exec"), ns)  # noqa: S102 - our own generated source
    fn: Callable[..., tuple[dict, int]] = ns[top]
    return fn


__all__ = ["Bail", "BAIL", "compile_plan", "PRIM", "STRUCT", "STRUCT_ARRAY", "PRIM_ARRAY", "FIXED_FORMATS"]
