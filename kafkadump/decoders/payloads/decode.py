"""Payloads decoded with their schema: one entry point for Avro, Protobuf and JSON Schema.

``PayloadDecoder(store, limits).decode(schema, payload, message_indexes)``
gives a :class:`DecodedPayload`: the value as JSON-ready Python, or the
reason it does not decode (for a ``payload-malformed`` finding).  A schema is
compiled once (per id) and kept; bad payloads and bad schemas are reasons,
never exceptions.  The one exception is :class:`PayloadLibrariesMissing`
(exit 2, one line saying how to install the ``payloads`` extra): the
libraries are imported only here, when the first payload is decoded;
a command that wants the message before any output calls
:func:`check_payload_libraries` with the schema types its store holds.

Protobuf's Schema Registry framing puts the message indexes before the
payload (:func:`parse_message_indexes`)::

    count    zig-zag varint; 0 is the shorthand for the indexes [0]
    indexes  count zig-zag varints: the message's place among the .proto's
             top-level messages, then among that message's nested types, ...
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Protocol

from kafkadump.base.errors import UsageError
from kafkadump.decoders.batches.work import WORK
from kafkadump.decoders.payloads.model import DecodedPayload, PayloadLimits, Schema, SchemaProblem
from kafkadump.decoders.payloads.store import SchemaStore

INSTALL_HINT = "pip install 'kafkadump[payloads]'"
LIBRARY_OF = {"AVRO": "fastavro", "PROTOBUF": "grpcio-tools", "JSON": "jsonschema"}
MAX_MESSAGE_INDEXES = 64  # deeper than any .proto nests its messages
EXPANSION = 16            # a decoded value may take this many times its payload as JSON (or max_expanded)
MAX_CODECS = 256          # compiled schemas kept (the least recently used compiled again when needed)


class PayloadLibrariesMissing(UsageError):
    """A payload library (the ``payloads`` extra) is not installed: exit 2 with how to install it."""


class Codec(Protocol):
    """A compiled schema: decodes payloads of one schema."""

    def decode(self, data: bytes, message_indexes: tuple[int, ...] | None) -> DecodedPayload: ...


def missing_libraries(schema_type: str, error: ImportError) -> PayloadLibrariesMissing:
    """The one-line error for a payload library that is not installed."""
    name = LIBRARY_OF.get(schema_type, "the payload libraries")
    return PayloadLibrariesMissing(f"decoding {schema_type} payloads needs {name} ({error.name or error}), "
                                   f"part of the payloads extra: {INSTALL_HINT}")


def check_payload_libraries(schema_types: tuple[str, ...] = ("AVRO", "PROTOBUF", "JSON")) -> None:
    """Raise PayloadLibrariesMissing now (before any output) when a library for these types is absent."""
    for schema_type in schema_types:
        try:
            _import_codec_module(schema_type)
        except ImportError as e:
            raise missing_libraries(schema_type, e) from None


def _import_codec_module(schema_type: str) -> Any:
    if schema_type == "AVRO":
        from kafkadump.decoders.payloads import avro
        avro.require()
        return avro
    if schema_type == "PROTOBUF":
        from kafkadump.decoders.payloads import protobuf
        protobuf.require()
        return protobuf
    from kafkadump.decoders.payloads import json_schema
    json_schema.require()
    return json_schema


class PayloadDecoder:
    """Decodes payloads with the schemas of one store, each schema compiled once."""

    def __init__(self, store: SchemaStore, limits: PayloadLimits | None = None, *, validate: bool = False):
        self.store = store
        self.limits = limits or PayloadLimits()
        self.validate = validate
        self._codecs: OrderedDict[tuple[int | None, str, str], Codec | DecodedPayload] = OrderedDict()

    def decode(self, schema: Schema, payload: bytes | memoryview,
               message_indexes: tuple[int, ...] | None = None) -> DecodedPayload:
        """``payload`` (the bytes after the framing) decoded with ``schema``: a value, or an error."""
        if len(payload) > self.limits.max_bytes:
            return DecodedPayload(error=f"payload of {len(payload)} bytes is over the {self.limits.max_bytes}-byte "
                                        f"limit: not decoded")
        WORK.payload_bytes += len(payload)
        codec = self._codec(schema)
        if isinstance(codec, DecodedPayload):
            return codec
        try:
            got = codec.decode(bytes(payload), message_indexes)
        except (RecursionError, MemoryError):
            return DecodedPayload(error=f"nested deeper than the limit ({self.limits.max_depth})")
        except Exception as e:  # noqa: BLE001 - a library's own error on hostile bytes is a reason, not a crash
            return DecodedPayload(error=one_line(f"{type(e).__name__}: {str(e)[:200]}"))
        if got.error is not None and not got.error.isprintable():
            got = got.replace(error=one_line(got.error))
        cap = max(self.limits.max_expanded, EXPANSION * len(payload))
        if got.value is not None and json_size_over(got.value, cap):
            return DecodedPayload(error=f"the decoded value would take more than {cap} bytes as JSON "
                                        f"({len(payload)} bytes of payload): not shown", message=got.message,
                                  limit=True)
        return got

    def _codec(self, schema: Schema) -> Codec | DecodedPayload:
        key = (schema.id, schema.schema_type, schema.text)
        codec = self._codecs.get(key)
        if codec is None:
            codec = self._compile(schema)
            self._codecs[key] = codec
            if len(self._codecs) > MAX_CODECS:
                self._codecs.popitem(last=False)
        else:
            self._codecs.move_to_end(key)
        return codec

    def _compile(self, schema: Schema) -> Codec | DecodedPayload:
        """The schema compiled, or the reason it is not (a DecodedPayload holding the error)."""
        if schema.schema_type not in LIBRARY_OF:
            return DecodedPayload(error=f"schema type {schema.schema_type!r} is not AVRO, PROTOBUF or JSON")
        too_large = self._too_large(schema)
        if too_large is not None:
            return DecodedPayload(error=too_large, limit=True)
        WORK.schemas += 1
        try:
            module = _import_codec_module(schema.schema_type)
        except ImportError as e:
            raise missing_libraries(schema.schema_type, e) from None
        try:
            codec: Codec = module.compile_schema(schema, self.store, self.limits, self.validate)
            return codec
        except SchemaProblem as e:
            return DecodedPayload(error=one_line(f"schema {_name(schema)} does not compile: {e}"))
        except (RecursionError, MemoryError):
            return DecodedPayload(error=f"schema {_name(schema)} nests too deep to compile")
        except Exception as e:  # noqa: BLE001 - the libraries' parsers raise many kinds on bad schema text
            return DecodedPayload(error=one_line(f"schema {_name(schema)} does not compile: {type(e).__name__}: "
                                                 f"{str(e)[:200]}"))

    def _too_large(self, schema: Schema) -> str | None:
        """Why a schema is too large to compile within the limits, or None: its items (an upper bound: the
        commas and semicolons of its text, one at least between two symbols, fields or values), each a few
        hundred bytes once the library has parsed it."""
        items = schema.text.count(",") + schema.text.count(";")
        if items > self.limits.max_schema_items:
            return (f"schema {_name(schema)} holds up to {items} items (symbols, fields, values), over the "
                    f"limit of {self.limits.max_schema_items}: not compiled")
        return None


def json_size_over(value: Any, cap: int) -> bool:
    """Whether ``value`` (JSON-ready) takes more than ``cap`` bytes as JSON, about: strings and keys by their
    length, every other item a few bytes.  Walked without recursion, and only until the cap is passed (the
    same enum symbol or field name repeated a million times is counted as often as it would be written)."""
    size = 0
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, str):
            size += len(v) + 3
        elif isinstance(v, dict):
            size += 2 + sum(len(str(k)) + 4 for k in v)
            todo.extend(v.values())
        elif isinstance(v, list):
            size += 2 + len(v)
            todo.extend(v)
        else:
            size += 8
        if size > cap:
            return True
    return False


def one_line(text: str) -> str:
    """``text`` (a library's message) as one line of printable characters: whitespace runs made one space,
    other control characters escaped."""
    joined = " ".join(text.split())
    return joined if joined.isprintable() else joined.encode("unicode_escape").decode("ascii")


def _name(schema: Schema) -> str:
    return f"id {schema.id}" if schema.id is not None else (schema.subject or schema.source or "?")


def _zigzag_varint(data: bytes | memoryview, pos: int) -> tuple[int, int] | None:
    """A zig-zag varint at ``pos`` (at most 10 bytes): (value, next position), or None when cut or too long."""
    result = shift = 0
    end = min(len(data), pos + 10)
    while pos < end:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
    return None


def parse_message_indexes(data: bytes | memoryview, start: int) -> tuple[tuple[int, ...], int] | None:
    """The Protobuf message indexes at ``start`` and the payload's start after them, or None when malformed.

    A count of 0 is the shorthand for ``(0,)``; a negative or impossible count, a negative index or bytes
    that end inside the list are malformed.
    """
    first = _zigzag_varint(data, start)
    if first is None:
        return None
    count, pos = first
    if count == 0:
        return (0,), pos
    if count < 0 or count > MAX_MESSAGE_INDEXES or count > len(data) - pos:
        return None
    indexes = []
    for _ in range(count):
        item = _zigzag_varint(data, pos)
        if item is None or item[0] < 0:
            return None
        indexes.append(item[0])
        pos = item[1]
    return tuple(indexes), pos


__all__ = ["PayloadDecoder", "PayloadLibrariesMissing", "parse_message_indexes", "one_line", "json_size_over",
           "check_payload_libraries", "missing_libraries", "INSTALL_HINT"]
