"""JSON Schema payloads: the payload is JSON text; validated against its schema when asked.

The value is the parsed JSON (nesting bounded by the limits' depth).  With
``validate``, the schema (draft from its ``$schema``, else 2020-12) checks
the value; ``$ref`` to other schemas resolves through the schema's
references (by reference name, subject) and the store's files.  A value
that does not validate keeps its value and says why in ``error``.
"""

from __future__ import annotations

import json
from typing import Any

from .model import DecodedPayload, PayloadLimits, Schema, SchemaProblem
from .store import SchemaStore


def require() -> None:
    """Raise ImportError when jsonschema is not installed."""
    import jsonschema  # noqa: F401


def compile_schema(schema: Schema, store: SchemaStore, limits: PayloadLimits, validate: bool = False
                   ) -> JsonCodec:
    """``schema`` parsed (and its validator built when ``validate``).  Raises SchemaProblem."""
    try:
        document = json.loads(schema.text)
    except (ValueError, RecursionError):
        raise SchemaProblem("the JSON Schema text is not JSON") from None
    return JsonCodec(_validator(document, schema, store) if validate else None, limits)


def _validator(document: Any, schema: Schema, store: SchemaStore) -> Any:
    from jsonschema import validators
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    resources = []
    for ref in schema.references:
        found = store.resolve(ref)
        if found is None:
            raise SchemaProblem(f"the reference {ref.name!r} (subject {ref.subject!r}) is not in the schema store")
        try:
            contents = json.loads(found.text)
        except (ValueError, RecursionError):
            raise SchemaProblem(f"the referenced schema {ref.name!r} is not JSON") from None
        resource = Resource.from_contents(contents, default_specification=DRAFT202012)
        resources += [(ref.name, resource), (ref.subject, resource)]
    if not isinstance(document, (dict, bool)):
        raise SchemaProblem("the JSON Schema is not an object")
    cls = validators.validator_for(document, default=validators.Draft202012Validator)
    return cls(document, registry=Registry().with_resources(resources))


def _depth(value: Any, limit: int) -> bool:
    """True when ``value`` nests no deeper than ``limit`` (checked without recursion)."""
    todo = [(value, 0)]
    while todo:
        v, d = todo.pop()
        if d > limit:
            return False
        if isinstance(v, dict):
            todo.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            todo.extend((x, d + 1) for x in v)
    return True


class JsonCodec:
    """Parses JSON payloads (and validates them when it holds a validator)."""

    def __init__(self, validator: Any, limits: PayloadLimits):
        self.validator = validator
        self.limits = limits

    def decode(self, data: bytes, message_indexes: tuple[int, ...] | None = None) -> DecodedPayload:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            return DecodedPayload(error=f"the JSON payload is not UTF-8 ({e.reason})", error_offset=e.start)
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            return DecodedPayload(error=f"not JSON: {e.msg}", error_offset=len(text[:e.pos].encode("utf-8")))
        except RecursionError:
            return DecodedPayload(error=f"JSON nested deeper than the limit ({self.limits.max_depth})")
        if not _depth(value, self.limits.max_depth):
            return DecodedPayload(error=f"JSON nested deeper than the limit ({self.limits.max_depth})")
        if self.validator is not None:
            error = next(iter(self.validator.iter_errors(value)), None)
            if error is not None:
                where = "/".join(map(str, error.absolute_path)) or "(the value)"
                return DecodedPayload(value=value, error=f"does not validate at {where}: {error.message[:160]}")
        return DecodedPayload(value=value)


__all__ = ["require", "compile_schema", "JsonCodec"]
