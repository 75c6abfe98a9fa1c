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

from kafkadump.decoders.payloads.model import DecodedPayload, PayloadLimits, Schema, SchemaProblem
from kafkadump.decoders.payloads.store import SchemaStore


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
    from referencing import Registry

    resources = []
    for ref in schema.references:
        found = store.resolve(ref)
        if found is None:
            raise SchemaProblem(f"the reference {ref.name!r} (subject {ref.subject!r}) is not in the schema store")
        resource = _resource(found, ref.name)
        resources += [(ref.name, resource), (ref.subject, resource)]
    # files of the store by name (a directory of .json schemas: "$ref": "other.json"), where no reference says
    taken = {name for name, _ in resources}
    for name, found in store.by_name.items():
        if found.schema_type == "JSON" and found is not schema and name not in taken:
            try:
                resources.append((name, _resource(found, name)))
            except SchemaProblem:
                continue
    if not isinstance(document, (dict, bool)):
        raise SchemaProblem("the JSON Schema is not an object")
    cls = validators.validator_for(document, default=validators.Draft202012Validator)
    return cls(document, registry=Registry().with_resources(resources))


def _resource(found: Schema, name: str) -> Any:
    from referencing import Resource
    from referencing.jsonschema import DRAFT202012

    try:
        contents = json.loads(found.text)
    except (ValueError, RecursionError):
        raise SchemaProblem(f"the referenced schema {name!r} is not JSON") from None
    return Resource.from_contents(contents, default_specification=DRAFT202012)


def within_limits(value: Any, limits: PayloadLimits) -> str | None:
    """Why ``value`` nests deeper or holds more items than ``limits`` allow, or None (checked without recursion)."""
    todo = [(value, 0)]
    items = 0
    while todo:
        v, d = todo.pop()
        if d > limits.max_depth:
            return f"nested deeper than the limit ({limits.max_depth})"
        if isinstance(v, (dict, list)):
            items += len(v)
            if items > limits.max_items:
                return f"more than {limits.max_items} items"
            todo.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return None


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
        too_much = within_limits(value, self.limits)
        if too_much is not None:
            return DecodedPayload(error=f"JSON {too_much}")
        if self.validator is not None:
            from jsonschema.exceptions import best_match

            error = best_match(self.validator.iter_errors(value))
            if error is not None:
                where = "/".join(map(str, error.absolute_path)) or "(the value)"
                return DecodedPayload(value=value, error=f"does not validate at {where}: {error.message[:160]}")
        return DecodedPayload(value=value)


__all__ = ["require", "compile_schema", "JsonCodec", "within_limits"]
