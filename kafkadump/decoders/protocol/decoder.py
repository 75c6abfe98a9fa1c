"""The generic schema-driven decoder: any message or record schema, any version.

    value, next_pos = decode_message(name, version, buf, pos, end, spans=None,
                                     findings=None, base=0, path="body")

``name`` is a schema name from the generated tables (``"FetchResponse"``,
``"RequestHeader"``, ``"OffsetCommitValue"``, ``"PartitionRecord"`` ...);
``buf[pos:end]`` holds the encoded structure.  ``value`` is a dict keyed by
the schema's field names in camelCase (``partitionIndex``), in wire order:

    int8..int64, uint16, uint32   int
    float64                       float
    bool                          bool
    string                        str (None when null)
    bytes                         bytes (None when null)
    uuid                          str, Kafka's form (base64url, 22 characters)
    records                       :class:`RecordsValue` (batches decoded by the shared decoder)
    struct / array                dict / list (None when null)

Tagged fields the tables know appear under their names; tags they do not
know (or whose content does not decode) are kept as raw bytes in
``value["_rawTaggedFields"] = [{"tag": n, "data": bytes}, ...]``.  Absent
tagged fields are absent (``fill_defaults=True`` fills in the schema's
defaults, as Kafka's own reader does).

Problems become :class:`~kafkadump.base.findings.Finding` objects with absolute
offsets (``base`` + position in ``buf``).  With a ``findings`` list they are
appended to it and decoding continues where it can (a non-nullable field
holding null, invalid UTF-8, tagged-field order, unknown tags); a problem
after which no later byte can be placed (a length or count that does not
fit) stops the decode: ``value`` holds everything decoded so far and
``next_pos`` is where decoding stopped.  With ``findings=None`` the first
problem raises :class:`~kafkadump.base.findings.DecodeError` instead (so does a
version outside the tables, which is otherwise a ``version-unknown``
warning: no field is named from another version's layout, the bytes are
returned raw as ``{"_undecodedBody": bytes}``).

``spans`` (a list) receives one :class:`~kafkadump.decoders.batches.model.Span` per
encoded field with its dotted ``path`` (``body.topics[0].name``), absolute
offset and length: together the spans tile the decoded bytes (length and
count prefixes are spans of their own: ``path#count``, ``path#size``,
``path#tags``, ``path#tag3``, ``path#present``), as the hexdump renderer
needs.  Record batches inside RECORDS fields get the shared decoder's
spans under ``path.batch[i]``; bytes decompressed from batch ``i`` are in
source ``decompressed@<batch position>``.

Bounded: every length and count is checked against the bytes that remain
before anything is allocated or looped over, and nesting is bounded by the
schema (never by the input).  Plans (the per-version field lists) are
compiled once per schema and version and cached.  A plan that decodes many
structs is compiled further, to straight-line Python (:mod:`.plan_code`),
which decodes plain bytes (no spans) and hands anything else back to the
interpreter here: the values are the same, the findings always the
interpreter's.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable, Iterator
from typing import Any

from kafkadump.base.findings import Code, DecodeError, Finding, Truncated
from kafkadump.decoders.batches import primitives as P
from kafkadump.decoders.batches.model import Batch, Gap, Record, Span
from kafkadump.decoders.batches.options import Options
from kafkadump.decoders.batches.primitives import ByteBuffer
from kafkadump.decoders.batches.walk import decode_spanned, iter_batches
from kafkadump.decoders.protocol import schema as S
from kafkadump.decoders.protocol.plan_code import BAIL, PRIM, PRIM_ARRAY, STRUCT, STRUCT_ARRAY, Bail, compile_plan

MAX_EMPTY_ELEMENTS = 1 << 16   # elements of an array whose elements take no bytes
# decode plain structs by their plans compiled to Python (:mod:`.plan_code`); False: the interpreter
# alone (the parity tests compare the two)
COMPILED_PLANS = True
# a plan is compiled once it has decoded this many structs (compiling costs about a millisecond, as
# much as a hundred interpreted decodes of a small struct: guessing a lone response tries hundreds of
# plans once each, which stay interpreted)
COMPILE_AFTER = 64


class Overrun(DecodeError):
    """A field needs bytes beyond ``end`` (the frame layer decides: truncated or malformed).

    ``partial`` holds what could be decoded of the field (RECORDS: the
    batches in the bytes that are there), or None.
    """

    def __init__(self, offset: int, message: str, partial: RecordsValue | None = None):
        super().__init__(Code.FIELD_MALFORMED, offset, message)
        self.partial = partial


class RecordsValue:
    """A RECORDS field: the batches (and gaps) in it, decoded by the shared decoder."""

    __slots__ = ("position", "size", "items")

    def __init__(self, position: int, size: int, items: list[Batch | Gap]):
        self.position = position
        self.size = size
        self.items = items

    @property
    def batches(self) -> list[Batch]:
        return [b for b in self.items if isinstance(b, Batch)]

    def records(self) -> Iterator[tuple[Record, Batch]]:
        for b in self.items:
            if isinstance(b, Batch) and b.records:
                yield from ((r, b) for r in b.records)

    @property
    def record_count(self) -> int:
        n = 0   # (a loop, not sum() of a generator: a frame table asks this of every frame)
        for b in self.items:
            if isinstance(b, Batch):
                records = b.records
                if records:
                    n += len(records)
        return n

    def findings(self) -> list[Finding]:
        return [f for b in self.items for f in b.findings]

    def __repr__(self) -> str:  # pragma: no cover
        return f"RecordsValue({self.position}+{self.size}, {len(self.items)} items)"


class State:
    """Per-decode context handed down the readers."""

    __slots__ = ("findings", "spans", "base", "options", "file", "response", "fill_defaults", "strict")

    def __init__(self, findings: list[Finding] | None, spans: list[Span] | None, base: int, options: Options | None,
                 file: str, response: bool, fill_defaults: bool):
        self.strict = findings is None
        self.findings = [] if findings is None else findings
        self.spans = spans
        self.base = base
        self.options = options
        self.file = file
        self.response = response
        self.fill_defaults = fill_defaults

    def note(self, code: Code, pos: int, message: str, length: int | None = None) -> None:
        """A problem that does not stop the decode."""
        if self.strict:
            raise DecodeError(code, self.base + pos, message)
        self.findings.append(Finding(code, self.base + pos, message, length=length))

    def span(self, path: str, pos: int, n: int, value: Any, raw: Any = None) -> None:
        """Record a span (called only when spans are being recorded)."""
        assert self.spans is not None
        self.spans.append(Span(path, self.base + pos, n, value, "file", raw))


# a field reader: (buf, pos, end, state, path) -> (value, next)
Reader = Callable[[ByteBuffer, int, int, State, str], tuple[Any, int]]


def camel(name: str) -> str:
    return name[:1].lower() + name[1:]


def kafka_uuid(raw: bytes) -> str:
    """Kafka's text form of a UUID: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


# --- field readers: (buf, pos, end, st, path) -> (value, next) ---------------------------
#
# Built on the one layer of primitive readers (kafkadump.decoders.batches.primitives); this
# layer adds the field's path to messages, its span, and the schema decoder's
# error codes (a field that runs past ``end`` is an Overrun: the frame layer
# decides whether that is truncation).

def _overrun(st: State, pos: int, end: int, path: str, what: str, size: int) -> Overrun:
    unit = "byte" if size == 1 else "bytes"
    return Overrun(st.base + pos, f"{path}: {what} needs {size} {unit} at {st.base + pos}, {max(end - pos, 0)} left")


def _reader(decode: Callable[[ByteBuffer, int, int], tuple[Any, int]], what: str,
            convert: Callable[[Any], Any] | None = None) -> tuple[Reader, int]:
    """A field reader around a fixed-size primitive decoder (``convert`` maps its value), and its size."""
    size = P.FIXED_SIZES[decode]

    def read(buf: ByteBuffer, pos: int, end: int, st: State, path: str) -> tuple[Any, int]:
        try:
            v, p = decode(buf, pos, end)
        except Truncated:
            raise _overrun(st, pos, end, path, what, size) from None
        if convert is not None:
            v = convert(v)
        if st.spans is not None:
            st.span(path, pos, size, v)
        return v, p

    return read, size


_FIXED = {
    "int8": _reader(P.decode_int8, "int8"), "int16": _reader(P.decode_int16, "int16"),
    "uint16": _reader(P.decode_uint16, "uint16"), "int32": _reader(P.decode_int32, "int32"),
    "uint32": _reader(P.decode_uint32, "uint32"), "int64": _reader(P.decode_int64, "int64"),
    "float64": _reader(P.decode_float64, "float64"),
}
_read_bool = _reader(P.decode_boolean, "bool")
# the fixed-width numbers, as read inline by read_struct (the same values as their readers')
_NUMBERS = {"int8": struct.Struct(">b"), "int16": struct.Struct(">h"), "uint16": struct.Struct(">H"),
            "int32": struct.Struct(">i"), "uint32": struct.Struct(">I"), "int64": struct.Struct(">q"),
            "float64": struct.Struct(">d")}
_read_uuid = _reader(P.decode_uuid, "uuid", lambda u: kafka_uuid(u.bytes))


def uvarint(buf: ByteBuffer, pos: int, end: int, st: State, path: str, what: str = "length") -> tuple[int, int]:
    """UNSIGNED_VARINT (at most 5 bytes, 32 bits)."""
    try:
        return P.decode_unsigned_varint(buf, pos, end)
    except Truncated:
        raise Overrun(st.base + pos, f"{path}: {what} varint at {st.base + pos} runs past the end") from None
    except P.MalformedVarint as e:
        raise DecodeError(Code.FIELD_MALFORMED, st.base + pos,
                          f"{path}: {what} varint at {st.base + pos} {e.reason}") from None


def _length(buf: ByteBuffer, pos: int, end: int, st: State, path: str, compact: bool, wide: bool,
            what: str) -> tuple[int, int]:
    """Read a length prefix: ``(n, next)`` with n = -1 for null."""
    if compact:
        n, p = uvarint(buf, pos, end, st, path, what)
        return n - 1, p
    try:
        return P.decode_length(buf, pos, end, False, wide)
    except Truncated:
        raise _overrun(st, pos, end, path, f"{what} length", 4 if wide else 2) from None


def _null(n: int, pos: int, p: int, st: State, path: str, nullable: bool, what: str) -> tuple[None, int]:
    """A negative length read at ``pos``: -1 is null (a finding where null is not allowed), less is malformed."""
    if n < -1:
        raise DecodeError(Code.FIELD_MALFORMED, st.base + pos, f"{path}: {what} length {n} at {st.base + pos}")
    if not nullable:
        st.note(Code.FIELD_MALFORMED, pos, f"{path}: null {what} in a non-nullable field")
    if st.spans is not None:
        st.span(path, pos, p - pos, None)
    return None, p


def _string_reader(compact: bool, nullable: bool) -> tuple[Reader, int]:
    def read(buf: ByteBuffer, pos: int, end: int, st: State, path: str) -> tuple[str | None, int]:
        n, p = _length(buf, pos, end, st, path, compact, False, "string")
        if n < 0:
            return _null(n, pos, p, st, path, nullable, "string")
        if p + n > end:
            raise Overrun(st.base + pos, f"{path}: string of {n} bytes at {st.base + pos} runs past the end "
                                         f"({end - p} bytes left)")
        raw = bytes(buf[p:p + n])
        try:
            v = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            st.note(Code.FIELD_MALFORMED, p + e.start, f"{path}: invalid UTF-8 in string at {st.base + pos}")
            v = raw.decode("utf-8", "replace")
        if st.spans is not None:
            st.span(path, pos, p + n - pos, v)
        return v, p + n

    return read, 1 if compact else 2


def _bytes_reader(compact: bool, nullable: bool) -> tuple[Reader, int]:
    def read(buf: ByteBuffer, pos: int, end: int, st: State, path: str) -> tuple[bytes | None, int]:
        n, p = _length(buf, pos, end, st, path, compact, True, "bytes")
        if n < 0:
            return _null(n, pos, p, st, path, nullable, "bytes")
        if p + n > end:
            raise Overrun(st.base + pos, f"{path}: {n} bytes at {st.base + pos} run past the end "
                                         f"({end - p} bytes left)")
        v = bytes(buf[p:p + n])
        if st.spans is not None:
            st.span(path, pos, p + n - pos, v)
        return v, p + n

    return read, 1 if compact else 4


def _records_reader(compact: bool, nullable: bool) -> tuple[Reader, int]:
    def read(buf: ByteBuffer, pos: int, end: int, st: State, path: str) -> tuple[RecordsValue | None, int]:
        n, p = _length(buf, pos, end, st, path, compact, True, "records")
        if n < 0:
            return _null(n, pos, p, st, path, nullable, "records")
        if st.spans is not None:
            st.span(path + "#size", pos, p - pos, n)
        if p + n > end:
            # decode the batches that are there (a cut capture), then report the overrun
            partial = decode_records(buf, p, end, st, path, complete=False) if end > p else None
            raise Overrun(st.base + pos, f"{path}: records of {n} bytes at {st.base + pos} run past the end "
                                         f"({end - p} bytes left)", partial)
        return decode_records(buf, p, p + n, st, path), p + n

    return read, 1 if compact else 4


def decode_records(buf: ByteBuffer, pos: int, end: int, st: State, path: str, complete: bool = True) -> RecordsValue:
    """The record batches in ``buf[pos:end]``, through the one shared decoder.

    ``complete``: the field's declared bytes are all there (only then can a
    cut last batch be the fetch size limit's doing).
    """
    opt = st.options or Options()
    items = list(iter_batches(buf, st.file, start=pos, end=end, options=opt, base=st.base))
    if st.response and complete and items and isinstance(items[-1], Gap):
        g = items[-1]
        if g.findings and all(f.code is Code.TRUNCATED for f in g.findings) \
                and g.position + g.size == st.base + end:
            # a fetch response stops at the size limit, mid-batch: normal, not damage
            g.findings = [Finding(Code.PARTIAL_BATCH, g.position,
                                  f"last {g.size} bytes are the start of a batch cut by the fetch size limit",
                                  length=g.size)]
    if st.spans is not None:
        _batch_spans(buf, pos, items, st, path, opt, st.spans)
    return RecordsValue(st.base + pos, end - pos, items)


def _batch_spans(buf: ByteBuffer, pos: int, items: list[Batch | Gap], st: State, path: str, opt: Options,
                 out: list[Span]) -> None:
    """Spans of ``items`` into ``out`` (``st.spans``)."""
    for i, item in enumerate(items):
        if isinstance(item, Gap):
            out.append(Span(f"{path}.gap[{i}]", item.position, item.size, None, "file", "unparsed"))
            continue
        try:
            b, spans = decode_spanned(buf, item, opt, base=st.base)
        except DecodeError:  # pragma: no cover - the walk already decoded it once
            spans = [Span("batch", item.position, item.size, None, "file", "unparsed")]
            b = item
        if b.decompressed is not None:
            item.decompressed = b.decompressed
        src = f"decompressed@{item.position}"
        for s in spans:
            head, _, rest = s.path.partition(".")
            s.path = f"{path}.{'batch' if item.magic == 2 else 'message'}[{i}]" + (("." + rest) if rest else "")
            if s.source == "decompressed":
                s.source = src
            out.append(s)


# --- plans ----------------------------------------------------------------------------------

# a schema field from the generated tables:
# [name, type, versions, nullableVersions, tag, taggedVersions, default, fields, flexibleVersions]
Field = list
# one step of a plan: (key, kind, reader (PRIM, PRIM_ARRAY) or Plan (STRUCT, STRUCT_ARRAY),
# nullable (PRIM, STRUCT) or (nullable, compact) (arrays), fewest bytes per element (arrays));
# the kind says which, which a tuple type cannot
Step = tuple[str, int, Any, Any, int]


class Plan:
    """The fields of one struct at one version: what to read, in order."""

    __slots__ = ("steps", "tagged", "flexible", "min_size", "defaults", "records_keys", "fast", "types", "code",
                 "error_keys", "uses")

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.tagged: dict[int, Step] = {}   # tag -> step
        self.flexible = False
        self.min_size = 0
        self.defaults: dict[str, Any] = {}  # key -> default, for absent tagged fields
        # the keys whose values can hold a RECORDS field: None for the field itself, else the plan
        # of the struct (or of the array's elements) it lies in (a walk to the records goes only here)
        self.records_keys: dict[str, Plan | None] = {}
        # the same for ``errorCode`` fields: None for an errorCode itself, else the plan it lies in
        self.error_keys: dict[str, Plan | None] = {}
        # per step: (unpack_from, size) of a fixed-width number, read inline when no spans are
        # recorded and its bytes are there (else None: the step's reader, which says what is wrong)
        self.fast: list[tuple[Callable[[ByteBuffer, int], tuple[Any, ...]], int] | None] = []
        # per step: the field's type ("int32", "string", "[]int32", "[]Topic"...) and whether it is compact
        self.types: list[tuple[str, bool]] = []
        # the plan compiled to straight-line Python (kafkadump.decoders.protocol.plan_code), made on first use
        self.code: Callable[..., tuple[dict, int]] | None = None
        self.uses = 0   # structs decoded by the interpreter before ``code`` is made (COMPILE_AFTER)


_PLANS: dict = {}


def plan_cache() -> dict:
    """The cache of plans made so far (its identity changes when the plans are made afresh)."""
    return _PLANS


def _field_flexible(f: Field, version: int, flexible: bool) -> bool:
    override = f[8]
    if override is False:
        return flexible
    return S.in_range(override, version)


def _prim_reader(t: str, compact: bool, nullable: bool) -> tuple[Reader, int]:
    """The field reader of primitive type ``t`` and the fewest bytes it reads."""
    if t in _FIXED:
        return _FIXED[t]
    if t == "bool":
        return _read_bool
    if t == "uuid":
        return _read_uuid
    if t == "string":
        return _string_reader(compact, nullable)
    if t == "bytes":
        return _bytes_reader(compact, nullable)
    if t == "records":
        return _records_reader(compact, nullable)
    raise ValueError(f"unknown primitive type {t}")  # pragma: no cover - tables are generated


def _step(f: Field, version: int, flexible: bool) -> Step:
    name, t, _versions, nullable_r, _tag, _tagged, _default, fields, _flex = f
    key = camel(name)
    nullable = S.in_range(nullable_r, version)
    compact = _field_flexible(f, version, flexible)
    if t.startswith("[]"):
        et = t[2:]
        if fields is not None:
            sub = plan_for(fields, version, compact)
            return (key, STRUCT_ARRAY, sub, (nullable, compact), max(sub.min_size, 0))
        r, rmin = _prim_reader(et, compact, False)
        return (key, PRIM_ARRAY, r, (nullable, compact), rmin)
    if fields is not None:
        return (key, STRUCT, plan_for(fields, version, compact), nullable, 0)
    return (key, PRIM, _prim_reader(t, compact, nullable)[0], nullable, 0)


# (id of a field tuple, version, flexible) -> (the field tuple, kept alive, and its fewest bytes)
_FEWEST: dict[tuple[int, int, bool], tuple[tuple, int]] = {}


def fewest_bytes(fields: tuple, version: int, flexible: bool) -> int:
    """The fewest bytes a struct of ``fields`` takes at ``version``: its plan's ``min_size``, known
    without making the plan (cached).  Bytes fewer than this cannot be the struct."""
    k = (id(fields), version, flexible)
    known = _FEWEST.get(k)
    if known is not None:
        return known[1]
    size = 1 if flexible else 0  # the tagged-field section
    for f in fields:
        if not S.in_range(f[2], version) or (f[4] is not None and S.in_range(f[5], version)):
            continue  # not in this version, or tagged (none is needed)
        size += _field_fewest(f, version, flexible)
    _FEWEST[k] = (fields, size)
    return size


def _field_fewest(f: Field, version: int, flexible: bool) -> int:
    """The fewest bytes field ``f`` takes at ``version`` (an array: its count; a nullable struct: its marker)."""
    t, fields = f[1], f[7]
    compact = _field_flexible(f, version, flexible)
    if t.startswith("[]"):
        return 1 if compact else 4
    if fields is not None:
        return 1 if S.in_range(f[3], version) else fewest_bytes(fields, version, compact)
    return _prim_reader(t, compact, S.in_range(f[3], version))[1]


def plan_for(fields: tuple, version: int, flexible: bool) -> Plan:
    """The compiled plan of a field tuple at ``version`` (cached)."""
    k = (id(fields), version, flexible)
    p = _PLANS.get(k)
    if p is not None:
        return p
    p = Plan()
    p.flexible = flexible
    for f in fields:
        versions, tag, tagged = f[2], f[4], f[5]
        if not S.in_range(versions, version):
            continue
        if tag is not None and S.in_range(tagged, version):
            if flexible:
                step = _step(f, version, flexible)
                p.tagged[tag] = step
                _note_records(p, f, step)
                if f[6]:
                    p.defaults[step[0]] = f[6][0]
            continue
        step = _step(f, version, flexible)
        p.steps.append(step)
        p.types.append((f[1], _field_flexible(f, version, flexible)))
        number = _NUMBERS.get(f[1])
        p.fast.append(None if number is None else (number.unpack_from, number.size))
        _note_records(p, f, step)
    p.min_size = fewest_bytes(fields, version, flexible)
    _PLANS[k] = p
    return p


def _note_records(p: Plan, f: Field, step: Step) -> None:
    """Add ``step`` to ``p.records_keys`` when its value can hold a RECORDS field, and to
    ``p.error_keys`` when it can hold an ``errorCode``."""
    key, kind, sub = step[0], step[1], step[2]
    if kind in (PRIM, PRIM_ARRAY):
        if f[1] == "records":
            p.records_keys[key] = None
        if kind == PRIM and key == "errorCode":
            p.error_keys[key] = None
        return
    if sub.records_keys:
        p.records_keys[key] = sub
    if sub.error_keys:
        p.error_keys[key] = sub


# --- reading -------------------------------------------------------------------------------

def read_struct(plan: Plan, buf: ByteBuffer, pos: int, end: int, st: State, path: str, out: dict) -> int:
    spans = st.spans
    for (key, kind, r, nullable, emin), fast in zip(plan.steps, plan.fast):
        if fast is not None and spans is None and pos + fast[1] <= end:
            out[key] = fast[0](buf, pos)[0]
            pos += fast[1]
            continue
        fpath = f"{path}.{key}"
        if kind == PRIM:
            try:
                out[key], pos = r(buf, pos, end, st, fpath)
            except Overrun as e:
                if e.partial is not None:
                    out[key] = e.partial
                raise
        elif kind == STRUCT:
            if nullable:
                if pos >= end:
                    raise Overrun(st.base + pos, f"{fpath}: presence byte runs past the end")
                marker = buf[pos]
                if spans is not None:
                    st.span(fpath + "#present", pos, 1, marker < 128)
                pos += 1
                if marker >= 128:  # int8 -1: null
                    out[key] = None
                    continue
            d: dict[str, Any] = {}
            out[key] = d
            pos = read_struct(r, buf, pos, end, st, fpath, d)
        else:
            pos = _read_array(kind, r, nullable, emin, buf, pos, end, st, fpath, out, key)
    if plan.flexible:
        pos = read_tagged(plan, buf, pos, end, st, path, out)
    return pos


def _read_array(kind: int, r: Any, flags: tuple[bool, bool], emin: int, buf: ByteBuffer, pos: int, end: int,
                st: State, path: str, out: dict, key: str) -> int:
    nullable, compact = flags
    n, p = _length(buf, pos, end, st, path, compact, True, "array")
    if st.spans is not None:
        st.span(path + "#count", pos, p - pos, n)
    if n < 0:
        if n < -1:
            raise DecodeError(Code.FIELD_MALFORMED, st.base + pos, f"{path}: array count {n} at {st.base + pos}")
        if not nullable:
            st.note(Code.FIELD_MALFORMED, pos, f"{path}: null array in a non-nullable field")
        out[key] = None
        return p
    if emin > 0:
        if n * emin > end - p:
            raise Overrun(st.base + pos, f"{path}: array of {n} elements at {st.base + pos} needs at least "
                                         f"{n * emin} bytes, {end - p} left")
    elif n > MAX_EMPTY_ELEMENTS:
        raise DecodeError(Code.FIELD_MALFORMED, st.base + pos,
                          f"{path}: array of {n} elements at {st.base + pos} whose elements take no bytes")
    lst: list = []
    out[key] = lst
    if kind == PRIM_ARRAY:
        for i in range(n):
            v, p = r(buf, p, end, st, f"{path}[{i}]")
            lst.append(v)
    else:
        for i in range(n):
            d: dict[str, Any] = {}
            lst.append(d)
            p = read_struct(r, buf, p, end, st, f"{path}[{i}]", d)
    return p


def read_tagged(plan: Plan, buf: ByteBuffer, pos: int, end: int, st: State, path: str, out: dict) -> int:
    """The tagged-field section of a flexible struct."""
    count, p = uvarint(buf, pos, end, st, path, "tagged field count")
    if st.spans is not None:
        st.span(path + "#tags", pos, p - pos, count)
    if count > (end - p) // 2:  # each tagged field takes at least two bytes
        raise Overrun(st.base + pos, f"{path}: {count} tagged fields at {st.base + pos} cannot fit in "
                                     f"{end - p} bytes")
    last = -1
    seen = set()
    for _ in range(count):
        tpos = p
        tag, p = uvarint(buf, p, end, st, path, "tag")
        size, p = uvarint(buf, p, end, st, path, "tagged field size")
        if st.spans is not None:
            st.span(f"{path}#tag{tag}", tpos, p - tpos, size)
        if p + size > end:
            raise Overrun(st.base + tpos, f"{path}: tagged field {tag} of {size} bytes at {st.base + tpos} "
                                          f"runs past the end ({end - p} bytes left)")
        fend = p + size
        dup = tag in seen
        if dup or tag < last:
            st.note(Code.TAGGED_FIELD_ORDER, tpos,
                    f"{path}: tag {tag} {'repeated' if dup else f'after tag {last}'} (tags must ascend)")
        seen.add(tag)
        last = max(last, tag)
        step = None if dup else plan.tagged.get(tag)
        if step is None:
            if not dup:
                st.note(Code.TAGGED_FIELD_UNKNOWN, tpos, f"{path}: unknown tag {tag} ({size} bytes kept raw)")
            _raw_tag(buf, p, fend, st, path, out, tag, None)
        else:
            key = step[0]
            nfind = len(st.findings)
            nspan = None if st.spans is None else len(st.spans)
            try:
                tmp: dict = {}
                q = _read_one(step, buf, p, fend, st, f"{path}.{key}", tmp)
                if q != fend:
                    raise DecodeError(Code.FIELD_MALFORMED, st.base + q,
                                      f"{path}.{key}: tagged field {tag} used {q - p} of its {size} bytes")
                out[key] = tmp[key]
            except DecodeError as e:
                if st.strict:
                    raise
                del st.findings[nfind:]
                if nspan is not None and st.spans is not None:  # both or neither
                    del st.spans[nspan:]
                st.note(Code.FIELD_MALFORMED, e.offset - st.base, f"tagged field {tag}: {e.message}")
                _raw_tag(buf, p, fend, st, path, out, tag, key)
        p = fend
    return p


def _read_one(step: Step, buf: ByteBuffer, pos: int, end: int, st: State, fpath: str, out: dict) -> int:
    """One field of a plan (used for tagged fields) into ``out``."""
    key, kind, r, nullable, emin = step
    plan = Plan()
    plan.steps = [step]
    plan.fast = [None]
    plan.flexible = False
    return read_struct(plan, buf, pos, end, st, fpath.rsplit(".", 1)[0], out)


def _raw_tag(buf: ByteBuffer, p: int, fend: int, st: State, path: str, out: dict, tag: int,
             key: str | None) -> None:
    data = bytes(buf[p:fend])
    entry = {"tag": tag, "data": data}
    if key is not None:
        entry["name"] = key
    out.setdefault("_rawTaggedFields", []).append(entry)
    if st.spans is not None and fend > p:
        st.spans.append(Span(f"{path}._rawTaggedFields[{tag}]", st.base + p, fend - p, data, "file"))


def _fill_defaults(plan: Plan, out: dict) -> None:
    for key, v in plan.defaults.items():
        out.setdefault(key, v)
    for key, kind, r, _nullable, _emin in plan.steps:
        v = out.get(key)
        if kind == STRUCT and isinstance(v, dict):
            _fill_defaults(r, v)
        elif kind == STRUCT_ARRAY and isinstance(v, list):
            for d in v:
                if isinstance(d, dict):
                    _fill_defaults(r, d)


# --- public API ------------------------------------------------------------------------------

def decode_message(name: str, version: int, buf: ByteBuffer, pos: int = 0, end: int | None = None, spans: list | None = None,
                   *, findings: list | None = None, base: int = 0, path: str = "body", options: Options | None = None,
                   file: str = "-", response: bool | None = None, fill_defaults: bool = False,
                   flexible: bool | None = None) -> tuple[dict, int]:
    """Decode schema ``name`` at ``version`` from ``buf[pos:end]``: ``(value, next_pos)``.

    See the module docstring for the value's shape, findings and spans.
    ``options`` (a :class:`kafkadump.decoders.batches.Options`) is used for record
    batches in RECORDS fields; ``response`` (default: the schema is a
    response) makes a last batch cut short a ``partial-batch`` (info)
    instead of ``truncated``; ``flexible`` overrides the schema's
    flexibleVersions (for callers that know better).
    """
    m = S.message(name)
    if end is None:
        end = len(buf)
    st = State(findings, spans, base, options, file,
               (m["type"] == "response") if response is None else response, fill_defaults)
    lo, hi = m["valid"]
    if version > hi or version < lo:
        # no field is named from another version's layout: the bytes are kept raw
        st.note(Code.VERSION_UNKNOWN, pos,
                f"{name} version {version} is {'newer than' if version > hi else 'outside'} the schema tables, "
                f"which stop at version {hi} (versions {lo}-{hi}): {end - pos} bytes kept raw")
        if st.spans is not None and end > pos:
            st.spans.append(Span(f"{path}._undecodedBody", base + pos, end - pos, None, "file", "unparsed"))
        return {"_undecodedBody": bytes(buf[pos:end])}, end
    out, p, _err = decode_struct(m["fields"], version, buf, pos, end, st, path,
                                 S.in_range(m["flexible"], version) if flexible is None else flexible)
    return out, p


def decode_struct(fields: tuple, version: int, buf: ByteBuffer, pos: int, end: int, st: State, path: str,
                  flexible: bool) -> tuple[dict, int, DecodeError | None]:
    """Decode a field tuple with a prepared :class:`State`: ``(value, next_pos, error)``.

    ``error`` is the :class:`DecodeError` that stopped the decode (also
    appended to ``st.findings`` as a finding), or None; ``next_pos`` is then
    the position of the problem.
    """
    return decode_plan(plan_for(fields, version, flexible), buf, pos, end, st, path)


def decode_plan(plan: Plan, buf: ByteBuffer, pos: int, end: int, st: State, path: str
                ) -> tuple[dict, int, DecodeError | None]:
    """:func:`decode_struct` by the struct's plan (:func:`plan_for`), for a caller that keeps the plan."""
    if st.spans is None and COMPILED_PLANS:
        got = _compiled(plan, buf, pos, end, st)
        if got is not None:
            return got[0], got[1], None
    out: dict = {}
    try:
        p = read_struct(plan, buf, pos, end, st, path, out)
    except DecodeError as e:
        if st.strict:
            raise
        st.findings.append(Finding(e.code, e.offset, e.message))
        # handed on as a value: without its traceback, which holds every frame of the failed read
        # (and each frame's locals) for as long as the caller keeps the error
        return out, e.offset - st.base, e.with_traceback(None)
    if st.fill_defaults:
        _fill_defaults(plan, out)
    return out, p, None


_HELPERS = {"decode_records": decode_records, "read_tagged": read_tagged, "kafka_uuid": kafka_uuid,
            "uvarint": P.decode_unsigned_varint, "MAX_EMPTY_ELEMENTS": MAX_EMPTY_ELEMENTS}


def _compiled(plan: Plan, buf: ByteBuffer, pos: int, end: int, st: State) -> tuple[dict, int] | None:
    """``plan`` decoded by its compiled code (:mod:`.plan_code`): ``(value, next_pos)``, exactly what
    :func:`read_struct` makes of the plain case; None when the bytes are not plain (what the compiled
    code noted is dropped: the interpreter decodes them again and says what is wrong)."""
    code = plan.code
    if code is None:
        if plan.uses < COMPILE_AFTER:
            plan.uses += 1
            return None
        code = plan.code = compile_plan(plan, _HELPERS)
    mark = len(st.findings)
    try:
        out, p = code(buf, pos, end, st)
    except Bail:
        # the compiled code raises one shared instance: each raise would add its frames to that
        # instance's traceback, keeping every failed read's frames (and their values) alive
        BAIL.__traceback__ = None
        del st.findings[mark:]
        return None
    except (DecodeError, UnicodeDecodeError):
        del st.findings[mark:]
        return None
    if len(st.findings) != mark:   # a tagged field read by the interpreter found something
        del st.findings[mark:]
        return None
    if st.fill_defaults:
        _fill_defaults(plan, out)
    return out, p


__all__ = ["decode_message", "decode_struct", "decode_plan", "plan_cache", "RecordsValue", "Overrun", "kafka_uuid", "camel", "plan_for", "fewest_bytes", "read_struct", "State"]
