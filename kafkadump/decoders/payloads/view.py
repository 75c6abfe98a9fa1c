"""What the payload options make of one record: framing, schema, decoded payload, redaction.

:class:`PayloadInspector` is the one place a record's key and value are inspected (the report
layer calls it per kept record when ``--detect``, ``--schemas``, ``--where`` or ``--redact*`` is
given); renderers read the :class:`RecordView` it returns and never decode.  Its findings:
``payload-malformed`` (a framed payload whose schema is known but that does not decode with it)
and ``schema-unknown`` (an id the store lacks, once per id and run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from kafkadump.base.findings import Code, Finding
from kafkadump.base.values import FrozenValue
from kafkadump.decoders.internal_topics.record_decoder import payload_anchor as payload_anchor_of
from kafkadump.decoders.payloads.framing import BINARY, MAX_JSON_DEPTH, detect_framing, json_too_deep
from kafkadump.decoders.payloads.model import DecodedPayload, Framing, Schema
from kafkadump.decoders.payloads.redact import PARTS, mask_fields

if TYPE_CHECKING:
    from kafkadump.decoders.batches.model import Batch, Record

MAX_UNKNOWN_IDS = 10_000  # distinct unknown ids remembered (each reported once); bounded


class Redaction(FrozenValue):
    """What ``--redact``, ``--redact-fields`` and ``--no-redact-secrets`` asked for."""

    __match_args__ = ("keys", "values", "headers", "fields", "secrets")
    __slots__ = __match_args__

    keys: bool
    values: bool
    headers: bool
    fields: frozenset[str]
    secrets: bool

    def __init__(self, keys: bool = False, values: bool = False, headers: bool = False,
                 fields: frozenset[str] = frozenset(), secrets: bool = True) -> None:
        self._set(keys=keys, values=values, headers=headers, fields=fields, secrets=secrets)

    @property
    def bytes_redacted(self) -> bool:
        return self.keys or self.values or self.headers

    @property
    def active(self) -> bool:
        """Anything asked of record payloads (the secrets of internal records are elsewhere)."""
        return self.bytes_redacted or bool(self.fields)

    def side(self, which: str) -> bool:
        """Whether the key (``which`` "key") or value is redacted."""
        return self.keys if which == "key" else self.values


def parse_redaction(parts: str | None, fields: str | None, secrets: bool = True) -> Redaction:
    """The options as a :class:`Redaction`; an unknown part is a usage error."""
    names = [p.strip() for p in (parts or "").split(",") if p.strip()]
    unknown = [p for p in names if p not in PARTS]
    if unknown:
        from kafkadump.base.errors import UsageError

        raise UsageError(f"--redact: unknown part {unknown[0]!r} (choose from {', '.join(PARTS)})")
    field_names = frozenset(f.strip().lower() for f in (fields or "").split(",") if f.strip())
    return Redaction("keys" in names, "values" in names, "headers" in names, field_names, secrets)


class Store(Protocol):
    def lookup(self, schema_id: int | None = None, guid: str | None = None) -> Schema | None: ...


class Decoder(Protocol):
    def decode(self, schema: Schema, payload: bytes, message_indexes: tuple[int, ...] | None) -> DecodedPayload: ...


_NO_REDACTION = Redaction()


class PayloadSide(FrozenValue):
    """A key or value: its framing, the schema that names it (when the store has it) and the
    payload decoded with it (``decoded``; None when not attempted)."""

    __match_args__ = ("framing", "schema", "decoded")
    __slots__ = __match_args__

    framing: Framing
    schema: Schema | None
    decoded: DecodedPayload | None

    def __init__(self, framing: Framing, schema: Schema | None = None, decoded: DecodedPayload | None = None) -> None:
        self._set(framing=framing, schema=schema, decoded=decoded)


class RecordView(FrozenValue):
    """The payload view of one record: ``key``/``value`` (None when null or not inspected),
    ``detected`` (framing was looked for: the record object gains ``keyPayload`` and
    ``valuePayload``), the redaction every renderer applies, and ``secret`` (a metadata record
    holding a secret, shown undecoded: its value's bytes are hidden)."""

    __match_args__ = ("key", "value", "redaction", "detected", "secret")
    __slots__ = __match_args__

    key: PayloadSide | None
    value: PayloadSide | None
    redaction: Redaction
    detected: bool
    secret: bool   # the value holds a secret of the metadata log (shown: its length only)

    def __init__(self, key: PayloadSide | None, value: PayloadSide | None, redaction: Redaction | None = None,
                 detected: bool = False, secret: bool = False) -> None:
        self._set(key=key, value=value, redaction=_NO_REDACTION if redaction is None else redaction,
                  detected=detected, secret=secret)

    def side(self, which: str) -> PayloadSide | None:
        return self.key if which == "key" else self.value

    def hides_bytes(self, which: str) -> bool:
        """The raw bytes of the key (``which`` "key") or value are not shown, in any output: asked by
        ``--redact``, a value holding a secret, or any key or value under ``--redact-fields`` (its
        bytes may hold the fields: it is shown decoded with the fields masked, else as its digest)."""
        if self.redaction.side(which) or (self.secret and which == "value"):
            return True
        return bool(self.redaction.fields) and self.side(which) is not None

    def masked_whole(self, which: str) -> bool:
        """The key or value is shown as its digest alone, nothing decoded of it either: ``--redact``
        asked for it, or ``--redact-fields`` and it did not parse, so no field could be found in it."""
        if self.redaction.side(which):
            return True
        side = self.side(which)
        return bool(self.redaction.fields) and side is not None and not _decoded(side)

    def shows_decoded(self, which: str) -> bool:
        """The key or value is shown as its decoded payload (fields masked under ``--redact-fields``)."""
        side = self.side(which)
        return side is not None and _decoded(side) and not self.masked_whole(which) and \
            not (self.secret and which == "value")


def _decoded(side: PayloadSide) -> bool:
    return side.decoded is not None and side.decoded.ok


def payload_anchor(r: Record, b: Batch, which: str) -> tuple[int, int | None]:
    """``(offset, decompressedOffset)`` of a record's key or value: the file offset where it
    starts, or, in a compressed batch, the batch's payload with the offset inside it."""
    pos = r.key_position if which == "key" else r.value_position
    pos = pos if pos is not None else r.position
    if r.source == "file":
        return pos, None
    return payload_anchor_of(b) or b.position, pos


class PayloadInspector:
    """Inspects the keys and values of records: framing always, decoding with ``store`` and
    ``decoder`` (both or neither), ``redaction`` applied to what is decoded."""

    def __init__(self, store: Store | None = None, decoder: Decoder | None = None,
                 redaction: Redaction | None = None, detect: bool = True):
        self.store = store
        self.decoder = decoder
        self.redaction = redaction or Redaction()
        self.detect = detect
        self.unknown: set[object] = set()
        self.masked_sides: set[str] = set()  # "key"/"value": payload-masked reported (once per run)
        self._type_of: Callable[[int | None, str | None], str | None] | None = \
            None if store is None else self._schema_type

    def _schema_type(self, schema_id: int | None, guid: str | None) -> str | None:
        s = self._lookup(schema_id, guid)
        return None if s is None else s.schema_type

    def _lookup(self, schema_id: int | None, guid: str | None) -> Schema | None:
        if self.store is None or (schema_id is None and guid is None):
            return None
        return self.store.lookup(schema_id=schema_id, guid=guid)

    def view(self, r: Record, b: Batch) -> tuple[RecordView, list[Finding]]:
        """The view of record ``r`` (of batch ``b``) and its findings."""
        findings: list[Finding] = []
        if not self.detect or r.control is not None:
            return RecordView(None, None, self.redaction), findings
        key = self._guarded_side(r, b, "key", findings)
        value = self._guarded_side(r, b, "value", findings)
        return RecordView(key, value, self.redaction, True), findings

    def _guarded_side(self, r: Record, b: Batch, which: str, findings: list[Finding]) -> PayloadSide | None:
        """:meth:`_side`, with a payload too deep or too large for Python (a stack or memory exhausted
        anywhere on its way) a ``payload-limit`` finding on this record: no payload stops the records
        around it."""
        try:
            return self._side(r, b, which, findings)
        except (RecursionError, MemoryError) as e:
            why = "nests too deep" if isinstance(e, RecursionError) else "expands past the memory there is"
            self._limit(r, b, which, 0, f"the payload {why} to inspect", findings)
            return PayloadSide(BINARY)

    def _limit(self, r: Record, b: Batch, which: str, at: int, why: str, findings: list[Finding]) -> None:
        """A ``payload-limit`` finding at byte ``at`` of the key or value."""
        start, inside = payload_anchor(r, b, which)
        where = (start + at, None) if inside is None else (start, inside + at)
        data = r.key if which == "key" else r.value
        findings.append(Finding(Code.PAYLOAD_LIMIT, where[0], f"{which} of offset {r.offset}: {why}",
                                length=len(data) - at if data is not None else None, source_offset=where[1]))

    def _side(self, r: Record, b: Batch, which: str, findings: list[Finding]) -> PayloadSide | None:
        data = r.key if which == "key" else r.value
        if data is None:
            return None
        side = self._framed_side(r, b, which, bytes(data), findings)
        if self.redaction.fields:
            side = self._fields_masked(side, r, b, which, bytes(data), findings)
        return side

    def _framed_side(self, r: Record, b: Batch, which: str, data: bytes, findings: list[Finding]) -> PayloadSide:
        """The side as framing, the store and the decoder make it (fields not yet masked)."""
        f = detect_framing(data, r.headers, which, self._type_of)
        if f.kind in ("utf8", "binary") and bytes(data[:1]).lstrip()[:1] in (b"[", b"{"):
            deep = json_too_deep(data)
            if deep is not None:
                self._limit(r, b, which, deep, f"JSON nested deeper than {MAX_JSON_DEPTH} at byte {deep}: "
                            f"not parsed, shown as {f.kind}", findings)
        if f.kind not in ("confluent", "header-id") or self.store is None:
            return PayloadSide(f)
        schema = self._lookup(f.schema_id, f.guid)
        if schema is None:
            self._unknown(f, r, b, which, findings)
            return PayloadSide(f)
        if self.decoder is None or not f.certain:
            return PayloadSide(f, schema)
        decoded = self.decoder.decode(schema, data[f.payload_start:], f.message_indexes)
        if not decoded.ok:
            findings.append(self._undecoded(r, b, which, f, schema, decoded, len(data)))
            if not decoded.limit:
                f = f.replace(certain=False)  # framed bytes that do not parse: only "possibly"
        return PayloadSide(f, schema, decoded)

    def _undecoded(self, r: Record, b: Batch, which: str, f: Framing, schema: Schema, decoded: DecodedPayload,
                   size: int) -> Finding:
        """The finding of a payload that did not decode: ``payload-limit`` at the byte where a limit was passed,
        else ``payload-malformed`` where the payload starts; under redaction without the decoder's reason
        (it may quote the bytes)."""
        start = f.payload_start if f.kind == "confluent" else 0
        byte = "" if decoded.error_offset is None else f" at byte {decoded.error_offset} of the payload"
        skip = start + (decoded.error_offset or 0) if decoded.limit else start
        at, inside = payload_anchor(r, b, which)
        where = (at + skip, None) if inside is None else (at, inside + skip)
        code = Code.PAYLOAD_LIMIT if decoded.limit else Code.PAYLOAD_MALFORMED
        reason = decoded.error if not self._redacts(which) else "the reason is withheld under redaction"
        return Finding(code, where[0], f"{which} of offset {r.offset}: schema {_name(f)} "
                       f"({schema.schema_type}){byte}: {reason}", length=size - skip, source_offset=where[1])

    def _redacts(self, which: str) -> bool:
        return self.redaction.side(which) or bool(self.redaction.fields)

    def _fields_masked(self, side: PayloadSide, r: Record, b: Batch, which: str, data: bytes,
                       findings: list[Finding]) -> PayloadSide:
        """``--redact-fields``: a decoded payload with the fields masked; a plain JSON key or value
        parsed to mask them; anything else masked whole (``payload-masked``, once per side and run)."""
        names = self.redaction.fields
        if side.decoded is not None and side.decoded.ok:
            d = side.decoded
            return side.replace(decoded=DecodedPayload(mask_fields(d.value, names), None, None, d.message))
        if side.framing.kind == "json":
            parsed = _json_value(data)
            if parsed is not None:
                return side.replace(decoded=DecodedPayload(mask_fields(parsed[0], names)))
        if data and which not in self.masked_sides and not self.redaction.side(which):
            self.masked_sides.add(which)
            at, inside = payload_anchor(r, b, which)
            findings.append(Finding(Code.PAYLOAD_MASKED, at,
                                    f"{which} of offset {r.offset}: not parsed ({_why(side)}), so no field "
                                    f"could be found in it: masked whole under --redact-fields (reported once "
                                    f"per run; every such {which} is)", length=len(data), source_offset=inside))
        return side

    def _unknown(self, f: Framing, r: Record, b: Batch, which: str, findings: list[Finding]) -> None:
        ident = f.schema_id if f.guid is None else f.guid
        if ident is None or ident in self.unknown or len(self.unknown) >= MAX_UNKNOWN_IDS:
            return
        self.unknown.add(ident)
        at, inside = payload_anchor(r, b, which)
        findings.append(Finding(Code.SCHEMA_UNKNOWN, at,
                                f"{which} of offset {r.offset}: schema {_name(f)} is not in the schema store "
                                "(reported once per id)", source_offset=inside))


class RecordFilter(Protocol):
    """``--where`` over records (:class:`kafkadump.objects.records.RecordWhere`): whether a record,
    seen as its JSON object, is kept."""

    def keeps(self, record: Record, batch: Batch, place: Any = None, view: RecordView | None = None,
              decoded: Any = None) -> bool: ...


class PayloadRequest(FrozenValue):
    """What the payload options of a command ask for: framing detection (``--detect``; implied
    by ``--schemas``), schema files or directories, a ``--where`` filter, redaction."""

    __match_args__ = ("detect", "schemas", "where", "redaction")
    __slots__ = __match_args__

    detect: bool
    schemas: tuple[str, ...]
    where: RecordFilter | None
    redaction: Redaction

    def __init__(self, detect: bool = False, schemas: tuple[str, ...] = (), where: RecordFilter | None = None,
                 redaction: Redaction | None = None) -> None:
        self._set(detect=detect, schemas=schemas, where=where,
                  redaction=Redaction() if redaction is None else redaction)

    @property
    def active(self) -> bool:
        """Records need the payload path (else the fast path writes them as before)."""
        return self.detect or bool(self.schemas) or self.where is not None or self.redaction.active


def open_inspector(request: PayloadRequest, inputs: list[str]) -> PayloadInspector:
    """The inspector ``request`` asks for: with ``--schemas`` their store (the payload libraries
    its schema types need checked before any output: a missing one is a usage error); with
    ``--detect`` alone the ``_schemas`` partition of the inputs' log dir when there is one
    (decoding with it when the libraries are installed, else framing and schema names only)."""
    from kafkadump.decoders.payloads.decode import PayloadDecoder, PayloadLibrariesMissing, check_payload_libraries
    from kafkadump.decoders.payloads.store import SchemaStore

    detect = request.detect or bool(request.schemas) or bool(request.redaction.fields)
    paths = list(request.schemas) or (_schemas_beside(inputs) if request.detect else [])
    if not paths:
        return PayloadInspector(None, None, request.redaction, detect)
    store = SchemaStore.load(paths)
    types = store.schema_types()
    try:
        check_payload_libraries(types)
    except PayloadLibrariesMissing:
        if request.schemas:
            raise
        return PayloadInspector(store, None, request.redaction, detect)
    return PayloadInspector(store, PayloadDecoder(store), request.redaction, detect)


def _schemas_beside(inputs: list[str]) -> list[str]:
    """The ``_schemas`` partitions of the log dirs the inputs are in (or are), each once."""
    from pathlib import Path

    from kafkadump.decoders.payloads.store import find_schemas_dir

    found: list[str] = []
    seen: set[Path] = set()
    for p in inputs:
        here = Path(p)
        for logdir in (here.parent, here.parent.parent) if not here.is_dir() else (here, here.parent):
            if logdir in seen:
                continue
            seen.add(logdir)
            partition = find_schemas_dir(logdir)
            if partition is not None and str(partition) not in found:
                found.append(str(partition))
                break
    return found


def _json_value(data: bytes) -> tuple[object] | None:
    """``(value,)`` of a plain JSON key or value, None when it does not parse (or nests too deep)."""
    import json

    try:
        return (json.loads(data),)
    except (ValueError, RecursionError):
        return None


def _why(side: PayloadSide) -> str:
    f = side.framing
    if side.decoded is not None:
        return f"schema {_name(f)} did not decode it"
    if f.kind in ("confluent", "header-id"):
        return f"schema {_name(f)} " + ("not decoded" if side.schema is not None else "not in the schema store")
    return f"{f.kind} bytes"


def _name(f: Framing) -> str:
    return f"id {f.schema_id}" if f.guid is None else f"guid {f.guid}"


__all__ = ["Redaction", "parse_redaction", "PayloadInspector", "PayloadRequest", "open_inspector", "PayloadSide", "RecordView", "payload_anchor", "Store", "Decoder"]
