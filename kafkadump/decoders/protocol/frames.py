"""Kafka protocol frames: size prefix, request/response header, body.

    Request  => Size:int32 RequestHeader body
    Response => Size:int32 ResponseHeader body

Header versions (from the schemas' rules, kept in :mod:`.schema`):

* request header v0: apiKey, apiVersion, correlationId (ControlledShutdown v0 only);
  v1 adds clientId (nullable STRING, int16 length); v2 (flexible request
  versions) adds a tagged-field section, and clientId stays a non-compact
  nullable STRING.
* response header v0: correlationId; v1 (flexible response versions) adds a
  tagged-field section, except ApiVersions responses, which always use v0
  (a client must be able to read the answer whatever version it asked for).

A response carries no API key or version: it is decoded with those of its
request (paired by correlation id), with ``--api-key/--api-version`` hints,
or, for a lone response, by trying every API and version and keeping the
only API whose body decodes exactly (``response-guessed``).

Every function here decodes one frame at ``buf[pos:end]`` (``end`` = the
end of the bytes available, which may be before the declared end: a
truncated frame) and returns a :class:`Frame`; bad bytes become findings,
never exceptions.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from mmap import mmap
from typing import TYPE_CHECKING, Any

from kafkadump.base.findings import Code, DecodeError, Finding
from kafkadump.decoders.batches.model import Batch, Gap, Span
from kafkadump.decoders.protocol import schema as S
from kafkadump.decoders.protocol.decoder import (
    Overrun,
    Plan,
    RecordsValue,
    State,
    decode_plan,
    decode_struct,
    fewest_bytes,
    plan_cache,
    plan_for,
)

if TYPE_CHECKING:
    from kafkadump.decoders.batches import Options
    from kafkadump.sources.pcap import Connection

MAX_FRAME = 1 << 30        # larger size prefixes are not trusted (Kafka's own limit is far lower)
MAX_RESYNC_WAIT = 64 << 20  # while resynchronising, wait at most this long for a candidate frame
MIN_REQUEST = 8            # apiKey + apiVersion + correlationId
MIN_RESPONSE = 4           # correlationId
_I16 = struct.Struct(">h").unpack_from
_I32 = struct.Struct(">i").unpack_from

# what frames are decoded from: a file's mapping, a reassembled stream, pasted bytes
_Buf = bytes | bytearray | memoryview | mmap
# a RECORDS field: its path in the body, the enclosing topic/partition, its batches
RecordsField = tuple[str, dict[str, Any], RecordsValue]


class Frame:
    """One request or response (or bare record data) and what was found in it.

    ``position`` is the absolute offset of the size prefix in its source
    (the input bytes for hex text; the stream offset of its direction for a
    TCP connection), ``size`` the bytes it occupies there (prefix included).
    """

    __slots__ = ("index", "kind", "position", "size", "declared", "time", "connection", "direction",
                 "api_key", "api_version", "correlation_id", "client_id", "header", "_body", "findings",
                 "spans", "data", "packets", "file", "source", "request_index", "guessed", "items",
                 "body_version", "topic_names", "request_time", "body_plan", "_records")

    def __init__(self, kind: str, position: int, size: int) -> None:
        self.index: int | None = None
        self.kind = kind              # request | response | records
        self.position = position
        self.size = size
        self.declared: int | None = None   # the size prefix (bytes after it)
        self.time: float | None = None     # capture time (epoch seconds) of the packet that completed it
        self.connection: Connection | None = None  # a Connection (pcap / packet text) or None
        self.direction: str | None = None  # "request" | "response" (which way the bytes went)
        self.api_key: int | None = None
        self.api_version: int | None = None
        self.correlation_id: int | None = None
        self.client_id: str | None = None
        self.header: dict[str, Any] | None = None  # decoded header dict
        self._body: dict[str, Any] | None = None   # decoded body dict (None: not decoded)
        self.body_plan: Plan | None = None  # the plan the body was decoded by (None: not by a plan)
        self._records: list[RecordsField] | None = None  # the body's RECORDS fields, found once
        self.findings: list[Finding] = []
        self.spans: list[Span] | None = None       # list of Span when recorded
        self.data: bytes | None = None     # the frame's bytes, kept when spans are recorded
        self.packets: list[int] | None = None      # packet numbers that carried it (pcap)
        self.file: str | None = None
        self.source: str | None = None     # "stream 3 client->server" or similar, for messages
        self.request_index: int | None = None      # the paired request's frame index
        self.guessed: tuple[int, list[int]] | None = None  # candidate (api_key, versions) when guessed
        self.items: list[Batch | Gap] | None = None        # bare record data: the batches/gaps
        self.body_version: int | None = None  # set when the body was read in another version (ApiVersions v0 fallback)
        self.topic_names: dict[str, str] | None = None  # topic id -> name, learnt from Metadata responses earlier
        self.request_time: float | None = None  # a paired response: its request's capture time

    @property
    def body(self) -> dict[str, Any] | None:
        """The decoded body (None: not decoded)."""
        return self._body

    @body.setter
    def body(self, value: dict[str, Any] | None) -> None:
        self._body = value
        self.body_plan = None
        self._records = None

    @property
    def api_name(self) -> str | None:
        return None if self.api_key is None else (S.api_name(self.api_key) or f"ApiKey{self.api_key}")

    @property
    def schema_name(self) -> str | None:
        n = None if self.api_key is None else S.api_names(self.api_key)
        if not n:
            return None
        return n.get("request" if self.kind == "request" else "response")

    def records_fields(self) -> Iterator[RecordsField]:
        """``(path, context, RecordsValue)`` for every RECORDS field, in order.

        ``context`` holds the nearest enclosing topic name/id and partition.
        """
        if self.kind == "records":
            return iter([("records", {}, RecordsValue(self.position, self.size, self.items))]
                        if self.items is not None else ())
        fields = self._records
        if fields is None:
            body = self._body
            if body is None:
                return iter(())
            plan = self.body_plan
            # the body is walked once (and only where its plan can hold records); the topic
            # names learnt so far are looked up on every call, as they grow
            fields = self._records = (list(_walk_records(body, "body", {})) if plan is None
                                      else _walk_planned(body, plan, "body", {}))
        names = self.topic_names
        return _named(fields, names) if names else iter(fields)

    def record_count(self) -> int:
        n = 0
        for _, _, rv in self.records_fields():
            n += rv.record_count
        return n

    @property
    def latency(self) -> float | None:
        """A paired response: seconds from its request to it, as captured (None when either time is unknown)."""
        if self.time is None or self.request_time is None:
            return None
        return self.time - self.request_time

    def topics(self) -> list[str]:
        """The topic names the frame mentions, in order of appearance: those around its RECORDS
        fields, then those of topic-like arrays in its body (``topics``, ``responses``, ...)."""
        names: list[str] = []
        for _, ctx, _ in self.records_fields():
            t = ctx.get("topic")
            if isinstance(t, str) and t not in names:
                names.append(t)
        if self.body is not None:
            body_topic_names(self.body, names)
        return names

    def nested_errors(self) -> list[int]:
        """The non-zero ``errorCode`` values of the body below its top level (per topic, partition...),
        in no particular order; the walk goes only where the body's plan has error codes."""
        acc: list[int] = []
        body = self._body
        if body is None:
            return acc
        plan = self.body_plan
        if plan is None:
            _errors({k: v for k, v in body.items() if k != "errorCode"}, acc)
        else:
            for k, sub in plan.error_keys.items():
                if sub is not None and k in body:
                    _planned_errors(body[k], sub, acc)
        return acc

    def all_findings(self) -> list[Finding]:
        out = list(self.findings)
        for _, _, rv in self.records_fields():
            out.extend(rv.findings())
        return out


def _named(fields: list[RecordsField], names: dict[str, str]) -> Iterator[RecordsField]:
    """``fields`` with the topic name of each one's topic id, where ``names`` knows it."""
    for path, ctx, rv in fields:
        if "topic" not in ctx and ctx.get("topicId") in names:
            ctx = {**ctx, "topic": names[ctx["topicId"]]}
        yield path, ctx, rv


def _errors(v: object, acc: list[int]) -> None:
    """The non-zero ``errorCode`` values anywhere in ``v``, into ``acc``."""
    if isinstance(v, dict):
        for k, x in v.items():
            if k == "errorCode" and isinstance(x, int) and x != 0:
                acc.append(x)
            elif isinstance(x, (dict, list)):
                _errors(x, acc)
    elif isinstance(v, list):
        for x in v:
            _errors(x, acc)


def _planned_errors(v: object, plan: Plan, acc: list[int]) -> None:
    """:func:`_errors` of a struct (or array of structs) decoded by ``plan``: only its keys that can
    hold an ``errorCode`` (its tagged fields kept raw hold none)."""
    if isinstance(v, list):
        for e in v:
            _planned_errors(e, plan, acc)
        return
    if not isinstance(v, dict):
        return
    for k, sub in plan.error_keys.items():
        x = v.get(k)
        if sub is None:
            if isinstance(x, int) and x != 0:
                acc.append(x)
        elif isinstance(x, (dict, list)):
            _planned_errors(x, sub, acc)


_TOPIC_ARRAYS: dict[str, bool] = {}   # a body's key -> whether it names an array of topic-like structs


def _topic_array(key: str) -> bool:
    """Whether an array under ``key`` holds topic-like structs (``topics``, ``responses``, ...); remembered:
    a capture's bodies repeat the schemas' few keys."""
    known = _TOPIC_ARRAYS.get(key)
    if known is None:
        if len(_TOPIC_ARRAYS) >= 4096:
            _TOPIC_ARRAYS.clear()
        known = _TOPIC_ARRAYS[key] = key.lower().startswith(("topic", "responses", "creatabletopic"))
    return known


def body_topic_names(v: object, acc: list[str], depth: int = 0) -> None:
    """Topic names of a body, added to ``acc`` (from arrays of topic-like structs, near the top)."""
    if depth > 3:
        return
    if isinstance(v, dict):
        for k, x in v.items():
            if x is None or type(x) is int or type(x) is str:
                continue   # (most values: neither a list nor a dict)
            if isinstance(x, list) and _topic_array(k):
                for e in x:
                    if isinstance(e, dict):
                        n = e.get("name", e.get("topic", e.get("topicName")))
                        if isinstance(n, str) and n not in acc:
                            acc.append(n)
            elif isinstance(x, (dict, list)):
                body_topic_names(x, acc, depth + 1)
    elif isinstance(v, list):
        for x in v:
            body_topic_names(x, acc, depth + 1)


_TOPIC_KEYS = ("topic", "name", "topicName")
_PART_KEYS = ("partition", "partitionIndex", "index")


def _context(v: dict[str, Any], ctx: dict[str, Any], topic_keys: tuple[str, ...] = _TOPIC_KEYS, topic_id: bool = True,
             part_keys: tuple[str, ...] = _PART_KEYS) -> dict[str, Any]:
    """``ctx`` with the topic name or id and the partition a struct ``v`` names, if any (looked up
    under ``topic_keys``, ``topicId`` when ``topic_id``, ``part_keys``)."""
    c = ctx
    for k in topic_keys:
        if isinstance(v.get(k), str) and ("partitions" in v or "partitionData" in v or "partitionResponses" in v
                                           or "partitionIndexes" in v or any(isinstance(x, list) for x in v.values())):
            c = {**c, "topic": v[k]}
            break
    if topic_id and "topicId" in v and isinstance(v["topicId"], str):
        c = {**c, "topicId": v["topicId"]}
    for k in part_keys:
        if isinstance(v.get(k), int) and not isinstance(v.get(k), bool):
            c = {**c, "partition": v[k]}
            break
    return c


# id(plan) -> (plan, the topic keys, whether topicId, the partition keys its structs can have), in
# _context's order (the plan kept: its id stays its own)
_CONTEXT_KEYS: dict[int, tuple[Plan, tuple[str, ...], bool, tuple[str, ...]]] = {}


def _planned_context(v: dict[str, Any], plan: Plan, ctx: dict[str, Any]) -> dict[str, Any]:
    """:func:`_context` of a struct decoded by ``plan``: only the keys its fields (and tagged fields) can
    name are looked up (any other key of ``_context`` is never in such a struct)."""
    known = _CONTEXT_KEYS.get(id(plan))
    if known is None:
        names = {step[0] for step in plan.steps} | {step[0] for step in plan.tagged.values()}
        known = _CONTEXT_KEYS[id(plan)] = (plan, tuple(k for k in _TOPIC_KEYS if k in names), "topicId" in names,
                                           tuple(k for k in _PART_KEYS if k in names))
    return _context(v, ctx, known[1], known[2], known[3])


def _walk_planned(v: dict[str, Any], plan: Plan, path: str, ctx: dict[str, Any]) -> list[RecordsField]:
    """:func:`_walk_records` of a struct decoded by ``plan``: only the keys that can hold records."""
    out: list[RecordsField] = []
    if plan.records_keys:
        _collect_planned(v, plan, path, ctx, out)
    return out


def _collect_planned(v: dict[str, Any], plan: Plan, path: str, ctx: dict[str, Any],
                     out: list[RecordsField]) -> None:
    """:func:`_walk_planned` into ``out`` (a call per struct, no generator per level); ``plan`` has
    keys that can hold records."""
    keys = plan.records_keys
    c = _planned_context(v, plan, ctx)
    for k, x in v.items():
        if k not in keys:
            continue
        if isinstance(x, RecordsValue):
            out.append((f"{path}.{k}", c, x))
            continue
        sub = keys[k]
        if sub is None or not sub.records_keys:
            continue
        if isinstance(x, dict):
            _collect_planned(x, sub, f"{path}.{k}", c, out)
        elif isinstance(x, list):
            for i, e in enumerate(x):
                if isinstance(e, dict):
                    _collect_planned(e, sub, f"{path}.{k}[{i}]", c, out)


def _walk_records(v: object, path: str, ctx: dict[str, Any]) -> Iterator[RecordsField]:
    if isinstance(v, dict):
        c = _context(v, ctx)
        for k, x in v.items():
            if isinstance(x, RecordsValue):
                yield f"{path}.{k}", c, x
            elif isinstance(x, (dict, list)):
                yield from _walk_records(x, f"{path}.{k}", c)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            if isinstance(x, (dict, list)):
                yield from _walk_records(x, f"{path}[{i}]", ctx)


class Ctx:
    """Where frames come from and how to decode: shared by a run.

    ``spans``: record spans (for the hexdump) -- True, False, or a callable
    asked before each frame (so only the frame wanted pays for them).
    """

    def __init__(self, file: str = "-", options: Options | None = None,
                 spans: bool | Callable[[], bool] = False) -> None:
        self.file = file
        self.options = options
        self.spans = spans

    def want_spans(self) -> bool:
        return bool(self.spans() if callable(self.spans) else self.spans)


def _state(ctx: Ctx, frame: Frame, base: int, response: bool) -> State:
    return State(frame.findings, frame.spans, base, ctx.options, ctx.file, response, False)


def _start(kind: str, buf: _Buf, pos: int, end: int, base: int,
           ctx: Ctx) -> tuple[Frame, int | None, int | None]:
    """Common start: the size prefix.  ``(frame, declared_end, avail_end)`` or a frame with findings."""
    avail = end - pos
    f = Frame(kind, base + pos, min(avail, 4))
    f.file = ctx.file
    if ctx.want_spans():
        f.spans = []
    if avail < 4:
        f.findings.append(Finding(Code.TRUNCATED, base + pos, f"{avail} bytes left, too few for a size prefix",
                                  length=avail))
        if f.spans is not None:
            f.spans.append(Span("size", base + pos, avail, None, "file", "unparsed"))
        return f, None, None
    size = _I32(buf, pos)[0]
    f.declared = size
    if f.spans is not None:
        f.spans.append(Span("size", base + pos, 4, size))
    minimum = MIN_REQUEST if kind == "request" else MIN_RESPONSE
    if size < minimum or size > MAX_FRAME:
        f.findings.append(Finding(Code.FRAME_SIZE_INVALID, base + pos,
                                  f"size prefix {size} is impossible for a {kind} "
                                  f"({'below the minimum ' + str(minimum) if size < minimum else 'too large'})"))
        return f, None, None
    declared_end = pos + 4 + size
    avail_end = min(declared_end, end)
    f.size = avail_end - pos
    return f, declared_end, avail_end


def _finish(f: Frame, buf: _Buf, pos: int, body_start: int, p: int | None, err: DecodeError | None,
            declared_end: int, avail_end: int, base: int, ctx: Ctx) -> Frame:
    """Close a frame: truncation, trailing bytes, unparsed spans, kept bytes."""
    truncated = avail_end < declared_end
    if err is not None and truncated and isinstance(err, Overrun):
        # the field ran into the end of what was captured: the frame is cut, not malformed
        f.findings = [x for x in f.findings if not (x.code is err.code and x.offset == err.offset
                                                    and x.message == err.message)]
        f.findings.append(Finding(Code.TRUNCATED, base + pos,
                                  f"frame of {declared_end - pos} bytes declared, {avail_end - pos} available",
                                  length=avail_end - pos))
    elif truncated and err is None and p == avail_end:
        f.findings.append(Finding(Code.FRAME_SIZE_INVALID, base + pos,
                                  f"size prefix {declared_end - pos - 4} but the body is complete after "
                                  f"{avail_end - pos - 4} bytes"))
    elif truncated:
        f.findings.append(Finding(Code.TRUNCATED, base + pos,
                                  f"frame of {declared_end - pos} bytes declared, {avail_end - pos} available",
                                  length=avail_end - pos))
    if err is None and p is not None and p < avail_end:
        quirk = _trailing_quirk(f, bytes(buf[p:min(avail_end, p + 9)]), avail_end - p)
        if quirk:
            f.findings.append(Finding(Code.CLIENT_QUIRK, base + p, quirk, length=avail_end - p))
        else:
            f.findings.append(Finding(Code.FRAME_TRAILING, base + p,
                                      f"{avail_end - p} bytes after the body inside the frame", length=avail_end - p))
    if f.spans is not None:
        covered = max((s.offset + s.length for s in f.spans if s.source == "file"), default=base + pos)
        if covered < base + avail_end:
            f.spans.append(Span("unparsed", covered, base + avail_end - covered, None, "file", "unparsed"))
        f.data = bytes(buf[pos:avail_end])
    return f


def _trailing_quirk(f: Frame, head: bytes, n: int) -> str | None:
    """The known habit that explains ``n`` bytes (starting ``head``) after a frame's body, or None."""
    if f.kind == "request" and f.api_key == 18 and f.api_version == 0 and n <= 8 and not any(head):
        return (f"ApiVersions v0 request with {n} zero bytes after its empty body, as some librdkafka versions "
                f"send it (brokers ignore them)")
    if f.kind == "response" and f.api_key == 3 and f.api_version == 13 and head == b"\x00":
        return "Metadata v13 response with one zero byte after its body, as librdkafka's mock broker writes it"
    return None


def _control_crc_quirks(f: Frame) -> None:
    """A COMMIT/ABORT control batch whose stored CRC is 0 in a response: librdkafka's mock broker writes
    its markers without computing the CRC (a real broker's CRC is 0 once in 2^32 batches)."""
    for _, _, rv in f.records_fields():
        for b in rv.batches:
            if b.is_control and b.crc == 0 and b.computed_crc != 0:
                b.findings = [Finding(Code.CLIENT_QUIRK, x.offset, "control batch with CRC 0 (its CRC32C is "
                                      f"{b.computed_crc:#010x}), as librdkafka's mock broker writes its "
                                      "COMMIT/ABORT markers", length=x.length)
                              if x.code is Code.CRC_MISMATCH and x.offset == b.position + 17 else x
                              for x in b.findings]


def decode_request(buf: _Buf, pos: int, end: int, *, base: int = 0, ctx: Ctx | None = None) -> Frame:
    """The request frame at ``buf[pos:]`` (``end``: end of the available bytes)."""
    ctx = ctx or Ctx()
    f, declared_end, avail_end = _start("request", buf, pos, end, base, ctx)
    f.direction = "request"
    if declared_end is None or avail_end is None:  # (both are, or neither)
        return f
    p = pos + 4
    hv = 1
    plans = None
    if avail_end - p >= 4:
        f.api_key = key = _I16(buf, p)[0]
        f.api_version = version = _I16(buf, p + 2)[0]
        plans = _known_plans("request").get((key, version))
        hv = S.request_header_version(key, version) if plans is None else plans[0]
    st = _state(ctx, f, base, False)
    if plans is None:
        header, p2, err = decode_struct(S.message("RequestHeader")["fields"], hv, buf, p, avail_end, st, "header",
                                        hv >= 2)
    else:
        header, p2, err = decode_plan(plans[1], buf, p, avail_end, st, "header")
    f.header = header
    f.correlation_id = header.get("correlationId")
    f.client_id = header.get("clientId")
    if err is not None:
        return _finish(f, buf, pos, p, p2, err, declared_end, avail_end, base, ctx)
    if plans is not None:
        return _planned_body(f, plans[2], buf, pos, p2, declared_end, avail_end, base, ctx, "request", st)
    return _body(f, buf, pos, p2, declared_end, avail_end, base, ctx, "request", base + pos + 6, st)


def decode_response(buf: _Buf, pos: int, end: int, api_key: int | None, api_version: int | None, *, base: int = 0,
                    ctx: Ctx | None = None) -> Frame:
    """The response frame at ``buf[pos:]``, decoded as ``api_key``/``api_version``.

    With ``api_key`` None only the header (correlationId) is decoded and the
    body is kept as raw bytes.
    """
    ctx = ctx or Ctx()
    f, declared_end, avail_end = _start("response", buf, pos, end, base, ctx)
    f.direction = "response"
    f.api_key = api_key
    f.api_version = api_version
    if declared_end is None or avail_end is None:  # (both are, or neither)
        return f
    plans = None
    if api_key is None:
        hv = 0
    else:
        assert api_version is not None, "an API key comes with its version"
        plans = _known_plans("response").get((api_key, api_version))
        hv = S.response_header_version(api_key, api_version) if plans is None else plans[0]
    st = _state(ctx, f, base, True)
    if plans is None:
        header, p2, err = decode_struct(S.message("ResponseHeader")["fields"], hv, buf, pos + 4, avail_end, st,
                                        "header", hv >= 1)
    else:
        header, p2, err = decode_plan(plans[1], buf, pos + 4, avail_end, st, "header")
    f.header = header
    f.correlation_id = header.get("correlationId")
    if err is not None:
        return _finish(f, buf, pos, pos + 4, p2, err, declared_end, avail_end, base, ctx)
    if api_key is None:
        return _keep_raw(f, buf, pos, p2, declared_end, avail_end, base, "body")
    if plans is not None:
        return _planned_body(f, plans[2], buf, pos, p2, declared_end, avail_end, base, ctx, "response", st)
    return _body(f, buf, pos, p2, declared_end, avail_end, base, ctx, "response", base + pos, st)


def _body(f: Frame, buf: _Buf, pos: int, p: int, declared_end: int, avail_end: int, base: int, ctx: Ctx,
          kind: str, version_at: int, st: State) -> Frame:
    """The body after the header (``st``: the header's decode state, the same for the body)."""
    names = S.api_names(f.api_key) if f.api_key is not None else None
    if not names or kind not in names:
        f.findings.append(Finding(Code.API_KEY_UNKNOWN, version_at - 2 if kind == "request" else base + pos,
                                  f"API key {f.api_key} is not in the schema tables; body kept as raw bytes"))
        return _keep_raw(f, buf, pos, p, declared_end, avail_end, base, "body")
    name = names[kind]
    m = S.message(name)
    lo, hi = m["valid"]
    v = f.api_version
    if v is None or v < lo or v > hi:
        return _raw_body(f, buf, pos, p, declared_end, avail_end, base, version_at,
                         f"{name} version {v} is {'newer than' if v is not None and v > hi else 'outside'} "
                         f"the schema tables, which stop at version {hi} (versions {lo}-{hi})")
    plan = plan_for(m["fields"], v, S.in_range(m["flexible"], v))
    _remember_plans(kind, f, plan)
    return _planned_body(f, plan, buf, pos, p, declared_end, avail_end, base, ctx, kind, st)


# kind -> (api key, version) -> (the header version, the header's plan, the body's plan): the
# lookups of a known message at a version the tables describe, made once (bounded: the tables'
# messages and versions only); kept with the decoder's plan cache they come from (a new one, new plans)
_PLANS: dict[str, dict[tuple[int, int], tuple[int, Plan, Plan]]] = {"request": {}, "response": {}}
_PLANS_FROM: list[object] = [None]


def _known_plans(kind: str) -> dict[tuple[int, int], tuple[int, Plan, Plan]]:
    """The plans :func:`_remember_plans` kept for ``kind`` (none when the decoder's plans were made afresh)."""
    made = plan_cache()
    if made is not _PLANS_FROM[0]:
        _PLANS_FROM[0] = made
        _PLANS["request"] = {}
        _PLANS["response"] = {}
    return _PLANS[kind]


def _remember_plans(kind: str, f: Frame, plan: Plan) -> None:
    """What :func:`decode_request` / :func:`decode_response` and :func:`_body` looked up for a frame
    whose body ``plan`` decodes, kept for the next frame of its API key and version."""
    key, version = f.api_key, f.api_version
    assert key is not None and version is not None, "a body plan is for a known API key and version"
    if kind == "request":
        hv = S.request_header_version(key, version)
        header = plan_for(S.message("RequestHeader")["fields"], hv, hv >= 2)
    else:
        hv = S.response_header_version(key, version)
        header = plan_for(S.message("ResponseHeader")["fields"], hv, hv >= 1)
    _known_plans(kind)[(key, version)] = (hv, header, plan)


def _planned_body(f: Frame, plan: Plan, buf: _Buf, pos: int, p: int, declared_end: int, avail_end: int, base: int,
                  ctx: Ctx, kind: str, st: State) -> Frame:
    """:func:`_body` of a known message at a version the tables describe, decoded by ``plan``."""
    body, p2, err = decode_plan(plan, buf, p, avail_end, st, "body")
    f.body = body
    f.body_plan = plan
    if kind == "response":
        _control_crc_quirks(f)
    return _finish(f, buf, pos, p, p2, err, declared_end, avail_end, base, ctx)


def _raw_body(f: Frame, buf: _Buf, pos: int, p: int, declared_end: int, avail_end: int, base: int,
              version_at: int, why: str) -> Frame:
    """A version the tables do not describe: the header (decoded already, its layout is known) and
    the body as raw bytes (``_undecodedBody``).  No field is named from another version's layout."""
    f.body = {"_undecodedBody": bytes(buf[p:avail_end])}
    f.findings.append(Finding(Code.VERSION_UNKNOWN, version_at,
                              f"{why}: the header is decoded, the body ({avail_end - p} bytes) is kept raw"))
    return _keep_raw(f, buf, pos, p, declared_end, avail_end, base, "body._undecodedBody")


def _keep_raw(f: Frame, buf: _Buf, pos: int, p: int, declared_end: int, avail_end: int, base: int,
              path: str) -> Frame:
    """Close a frame whose body is not decoded: its bytes as one unparsed span, a cut frame truncated."""
    if f.spans is not None:
        if p < avail_end:
            f.spans.append(Span(path, base + p, avail_end - p, None, "file", "unparsed"))
        f.data = bytes(buf[pos:avail_end])
    if avail_end < declared_end:
        f.findings.append(Finding(Code.TRUNCATED, base + pos,
                                  f"frame of {declared_end - pos} bytes declared, {avail_end - pos} available",
                                  length=avail_end - pos))
    return f


def decode_apiversions_mock(buf: _Buf, pos: int, end: int, api_version: int, *, base: int = 0,
                            ctx: Ctx | None = None) -> Frame | None:
    """An ApiVersions response in the layout librdkafka's mock broker writes for a flexible (v3+)
    request, or None when the frame is not in it.

    The mock writes the body by hand: ErrorCode int16, a one-byte count (not compact: the count
    itself), per API ApiKey, MinVersion, MaxVersion (int16 each, no tagged fields), ThrottleTimeMs
    int32, and no tagged-field section.  Only a frame whose bytes this accounts for exactly is taken.
    """
    ctx = ctx or Ctx()
    if api_version < 3 or end - pos < 8:
        return None
    size = _I32(buf, pos)[0]
    body, stop = pos + 8, pos + 4 + size
    if size < 4 or stop > end or stop - body < 3:
        return None
    count = buf[body + 2]
    if stop - body != 3 + 6 * count + 4:
        return None
    f = decode_response(buf, pos, stop, 18, 0, base=base, ctx=Ctx(ctx.file, ctx.options, False))
    f.findings = []
    keys = [dict(zip(("apiKey", "minVersion", "maxVersion"), struct.unpack_from(">hhh", buf, body + 3 + 6 * i)))
            for i in range(count)]
    f.body = {"errorCode": _I16(buf, body)[0], "apiKeys": keys, "throttleTimeMs": _I32(buf, stop - 4)[0]}
    f.api_version = api_version
    if ctx.want_spans():
        f.spans = [Span("size", base + pos, 4, size), Span("header.correlationId", base + pos + 4, 4, f.correlation_id),
                   Span("body.errorCode", base + body, 2, f.body["errorCode"]),
                   Span("body.apiKeys#count", base + body + 2, 1, count)]
        for i, k in enumerate(keys):
            for j, (name, value) in enumerate(k.items()):
                f.spans.append(Span(f"body.apiKeys[{i}].{name}", base + body + 3 + 6 * i + 2 * j, 2, value))
        f.spans.append(Span("body.throttleTimeMs", base + stop - 4, 4, f.body["throttleTimeMs"]))
        f.data = bytes(buf[pos:stop])
    return f


def clean(f: Frame) -> bool:
    """Decoded without a protocol-level error or warning (record data not considered)."""
    return f.body is not None and not any(x.severity.value != "info" for x in f.findings)


def exact(f: Frame) -> bool:
    """Decoded cleanly (:func:`clean`) and to the last byte of the frame: nothing trailing, nothing
    kept raw as beyond the tables.  A reading that fits exactly beats one that fits with warnings."""
    return clean(f) and not any(x.code is Code.FRAME_TRAILING for x in f.findings) \
        and not (f.body is not None and "_undecodedTail" in f.body)


def fit(f: Frame) -> int:
    """How well a frame's bytes fit the reading ``f``: 2 exactly (:func:`exact`), 1 with warnings
    (decoded, no error finding), 0 not at all."""
    if f.body is None or any(x.severity.value == "error" for x in f.findings):
        return 0
    return 2 if exact(f) else 1


def request_plausible(buf: _Buf, pos: int, end: int) -> bool:
    """Do the bytes at ``pos`` start like a request frame?  (Header only: cheap.)"""
    if end - pos < 14:
        return False
    size = _I32(buf, pos)[0]
    if size < 10 or size > MAX_FRAME:
        return False
    key = _I16(buf, pos + 4)[0]
    ver = _I16(buf, pos + 6)[0]
    names = S.api_names(key)
    if not names or "request" not in names:
        return False
    if ver < 0 or ver > S.max_version(names["request"]) + 2:
        return False
    if S.request_header_version(key, ver) == 0:
        return True
    n = _I16(buf, pos + 12)[0]
    if n < -1 or 14 + max(n, 0) > 4 + size:
        return False
    if n > 0:
        stop = min(end, pos + 14 + n)
        chunk = bytes(buf[pos + 14:stop])
        if any(b < 0x20 or b == 0x7F for b in chunk):
            return False
    return True


def guess_response(buf: _Buf, pos: int, end: int, *, base: int = 0, ctx: Ctx | None = None,
                   api_key: int | None = None) -> Frame | None:
    """Try every API (or only ``api_key``) and version on a lone response.

    Returns the frame of the single API whose body decodes exactly and
    cleanly (its newest such version), with a ``response-guessed`` finding
    naming the candidates; or None when no API or several fit.  A version whose
    fewest bytes (header and body) exceed the frame is not decoded: it could not fit.
    """
    ctx = ctx or Ctx()
    if end - pos < 8:
        return None
    size = _I32(buf, pos)[0]
    if size < 4 or pos + 4 + size > end:
        return None
    quiet = Ctx(ctx.file, ctx.options, False)
    fits: dict[int, list[int]] = {}
    keys = [api_key] if api_key is not None else S.api_keys()
    header = S.message("ResponseHeader")["fields"]
    for key in keys:
        name = (S.api_names(key) or {}).get("response")  # an --api-key the tables do not know: no fit
        if name is None:
            continue
        m = S.message(name)
        lo, hi = m["valid"]  # every protocol message has versions
        for v in range(hi, lo - 1, -1):
            hv = S.response_header_version(key, v)
            if size < fewest_bytes(header, hv, hv >= 1) + fewest_bytes(m["fields"], v, S.in_range(m["flexible"], v)):
                continue  # too short to be this response: it would run past its end (no plan made)
            try:
                f = decode_response(buf, pos, end, key, v, base=base, ctx=quiet)
            except DecodeError:  # pragma: no cover - decode_response does not raise
                continue
            if clean(f) and not any(x.code is Code.FRAME_TRAILING for x in f.findings) and _plausible_body(f):
                fits.setdefault(key, []).append(v)
    if len(fits) != 1:
        return None
    (key, versions), = fits.items()
    v = max(versions)
    f = decode_response(buf, pos, end, key, v, base=base, ctx=ctx)
    vs = sorted(versions)
    f.guessed = (key, vs)
    f.findings.insert(0, Finding(Code.RESPONSE_GUESSED, base + pos,
                                 f"no request for this response: decoded as {f.api_name} v{v}, the only API whose "
                                 f"body fits exactly (versions {_ranges(vs)} fit)"))
    return f


def _plausible_body(f: Frame) -> bool:
    """Reject decodes that only fit by accident: error codes must be known-small, strings printable."""
    def ok(v: object) -> bool:
        if isinstance(v, dict):
            for k, x in v.items():
                if k == "errorCode" and isinstance(x, int) and not -1 <= x <= 200:
                    return False
                if k == "_rawTaggedFields":
                    return False
                if not ok(x):
                    return False
            return True
        if isinstance(v, list):
            return all(ok(x) for x in v)
        if isinstance(v, str):
            return "\ufffd" not in v and not any(ord(c) < 0x20 for c in v)
        return True

    return f.body is not None and ok(f.body)


def _ranges(vs: list[int]) -> str:
    out: list[str] = []
    start = prev = vs[0]
    for v in vs[1:] + [None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ",".join(out)


__all__ = ["Frame", "Ctx", "decode_request", "decode_response", "guess_response", "request_plausible", "clean",
           "decode_apiversions_mock", "MAX_FRAME"]
