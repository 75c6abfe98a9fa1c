"""The objects the payload modules hand each other: framing, schemas, decoded payloads, limits.

Plain frozen values (:mod:`kafkadump.base.values`), no behaviour beyond small derived properties, and
no imports of the payload libraries (this module is cheap to import).

Schema Registry's wire format (the "Confluent framing") of a key or value::

    magic            int8    0
    schema_id        int32   big-endian, the registry's global id
    message_indexes  (Protobuf only) zig-zag varint count, then that many
                     zig-zag varint indexes into the .proto's messages; the
                     single byte 0 is the shorthand for [0] (the first message)
    payload          the Avro binary / Protobuf / JSON encoding

The header-carried framing leaves the payload bare and names the schema in
the record headers ``__key_schema_id`` / ``__value_schema_id`` (a version
byte 1 and a 16-byte GUID, or a version byte 0 and a 4-byte id).
"""

from __future__ import annotations

from typing import Any

from kafkadump.base.values import FrozenValue

FRAMING_KINDS = ("confluent", "header-id", "json", "utf8", "binary", "empty")
SCHEMA_TYPES = ("AVRO", "PROTOBUF", "JSON")


class Framing(FrozenValue):
    """How one key or value is framed.

    ``kind`` is one of FRAMING_KINDS; ``schema_id`` / ``guid`` name the schema
    when the framing carries one; ``message_indexes`` is the Protobuf message
    path (parsed only when the schema is known to be PROTOBUF);
    ``payload_start`` counts the framing bytes before the payload; ``certain``
    is False when the bytes only look framed (a magic-0 value that may be
    something else: "possibly").
    """

    __match_args__ = ("kind", "schema_id", "guid", "message_indexes", "payload_start", "certain")
    __slots__ = __match_args__

    kind: str
    schema_id: int | None
    guid: str | None
    message_indexes: tuple[int, ...] | None
    payload_start: int
    certain: bool

    def __init__(self, kind: str, schema_id: int | None = None, guid: str | None = None,
                 message_indexes: tuple[int, ...] | None = None, payload_start: int = 0,
                 certain: bool = True) -> None:
        self._set(kind=kind, schema_id=schema_id, guid=guid, message_indexes=message_indexes,
                  payload_start=payload_start, certain=certain)


class SchemaReference(FrozenValue):
    """A reference from one schema to another: the import name and where it is registered."""

    __match_args__ = ("name", "subject", "version")
    __slots__ = __match_args__

    name: str
    subject: str
    version: int

    def __init__(self, name: str, subject: str, version: int) -> None:
        self._set(name=name, subject=subject, version=version)


class Registration(FrozenValue):
    """One (subject, version) under which a schema id is registered.

    ``deleted`` is the registry's soft delete (the value's ``"deleted": true``
    or a DELETE_SUBJECT); ``hard_deleted`` means the key's value was a
    tombstone (null) after it was written.
    """

    __match_args__ = ("subject", "version", "deleted", "hard_deleted")
    __slots__ = __match_args__

    subject: str
    version: int
    deleted: bool
    hard_deleted: bool

    def __init__(self, subject: str, version: int, deleted: bool = False, hard_deleted: bool = False) -> None:
        self._set(subject=subject, version=version, deleted=deleted, hard_deleted=hard_deleted)


class Schema(FrozenValue):
    """One schema of the store: its id (and GUID when known), type, text, references, registrations.

    ``schema_type`` is "AVRO", "PROTOBUF" or "JSON" (the registry's default,
    absent schemaType, is AVRO).  ``registrations`` lists every subject and
    version that names this id, in the order they were found; a schema loaded
    from a file that names no subject has none.
    """

    __match_args__ = ("id", "schema_type", "text", "references", "registrations", "guid", "source")
    __slots__ = __match_args__

    id: int | None
    schema_type: str
    text: str
    references: tuple[SchemaReference, ...]
    registrations: tuple[Registration, ...]
    guid: str | None
    source: str  # where it came from: a file path, or "_schemas offset N"

    def __init__(self, id: int | None, schema_type: str, text: str, references: tuple[SchemaReference, ...] = (),
                 registrations: tuple[Registration, ...] = (), guid: str | None = None, source: str = "") -> None:
        self._set(id=id, schema_type=schema_type, text=text, references=references, registrations=registrations,
                  guid=guid, source=source)

    @property
    def subjects(self) -> tuple[str, ...]:
        """The subjects that name this schema, each once, in order."""
        return tuple(dict.fromkeys(r.subject for r in self.registrations))

    @property
    def subject(self) -> str | None:
        """The first subject that names this schema, or None."""
        return self.registrations[0].subject if self.registrations else None

    @property
    def versions(self) -> tuple[int, ...]:
        """The versions of every registration, in order."""
        return tuple(r.version for r in self.registrations)

    @property
    def version(self) -> int | None:
        """The first registration's version, or None."""
        return self.registrations[0].version if self.registrations else None

    @property
    def deleted(self) -> bool:
        """Every registration is deleted (soft or hard); False when there are none."""
        return bool(self.registrations) and all(r.deleted or r.hard_deleted for r in self.registrations)

    @property
    def hard_deleted(self) -> bool:
        """Every registration was hard deleted (a tombstone); False when there are none."""
        return bool(self.registrations) and all(r.hard_deleted for r in self.registrations)


class PayloadLimits(FrozenValue):
    """Bounds on decoding one payload: nesting depth, items (array/map entries, fields) and bytes; and on the
    schemas compiled: their items (enum symbols, fields, ...)."""

    __match_args__ = ("max_depth", "max_items", "max_bytes", "max_expanded", "max_schema_items")
    __slots__ = __match_args__

    max_depth: int          # nested records/arrays/maps/messages deeper than this are an error
    max_items: int   # array and map entries, repeated fields, in one payload
    max_bytes: int    # a payload larger than this is not decoded
    max_expanded: int  # a decoded value larger as JSON (and than 16 times its payload) is not shown
    max_schema_items: int  # a schema with more symbols, fields, values is not compiled (memory)

    def __init__(self, max_depth: int = 64, max_items: int = 1_000_000, max_bytes: int = 64 << 20,
                 max_expanded: int = 16 << 20, max_schema_items: int = 200_000) -> None:
        self._set(max_depth=max_depth, max_items=max_items, max_bytes=max_bytes, max_expanded=max_expanded,
                  max_schema_items=max_schema_items)

    @classmethod
    def from_options(cls, options: Any) -> PayloadLimits:
        """The limits for the decoder's ``Options``: payloads no larger than what one batch may decompress to
        (``--max-decompressed``); depth and items as here (the legacy ``max_depth`` counts wrappers, not
        payload nesting)."""
        max_bytes = getattr(options, "max_decompressed", None)
        return cls(max_bytes=max_bytes) if isinstance(max_bytes, int) and max_bytes > 0 else cls()


class DecodedPayload(FrozenValue):
    """A payload decoded with its schema: ``value`` (JSON-ready) or ``error`` (the reason it failed).

    ``value`` holds only dict/list/str/int/float/bool/None; logical types are
    shown as people read them, losslessly (decimals as strings, timestamps as
    ISO-8601 strings, uuids and dates as strings); bytes are base64 strings.
    ``error`` is the one-line reason for a ``payload-malformed`` finding, and
    ``error_offset`` (when known) the byte offset inside the payload where it
    was seen.  ``message`` is the Protobuf message's full name, or the Avro
    record's name, when there is one.  ``limit``: the value would nest or expand past the limits.
    """

    __match_args__ = ("value", "error", "error_offset", "message", "limit")
    __slots__ = __match_args__

    value: Any
    error: str | None
    error_offset: int | None
    message: str | None
    limit: bool  # the error is a limit passed (``payload-limit``), not bytes that break the schema

    def __init__(self, value: Any = None, error: str | None = None, error_offset: int | None = None,
                 message: str | None = None, limit: bool = False) -> None:
        self._set(value=value, error=error, error_offset=error_offset, message=message, limit=limit)

    @property
    def ok(self) -> bool:
        """The payload decoded (``value`` holds it)."""
        return self.error is None


class SchemaProblem(Exception):
    """A schema that does not parse or compile, or a payload that breaks it (the message says why)."""

    def __init__(self, message: str, offset: int | None = None):
        super().__init__(message)
        self.offset = offset  # the byte offset inside the payload, when a payload broke the schema


__all__ = ["SchemaProblem", "FRAMING_KINDS", "SCHEMA_TYPES", "Framing", "SchemaReference", "Registration", "Schema",
           "PayloadLimits", "DecodedPayload"]
