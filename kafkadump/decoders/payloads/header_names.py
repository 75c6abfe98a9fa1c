"""The record headers that name a key's or value's schema (the header-carried framing): the
names alone, cheap to import (the record writers test every record's headers against them)."""

KEY_SCHEMA_ID_HEADER = "__key_schema_id"
VALUE_SCHEMA_ID_HEADER = "__value_schema_id"
SCHEMA_ID_HEADERS = frozenset((KEY_SCHEMA_ID_HEADER, VALUE_SCHEMA_ID_HEADER))

__all__ = ["KEY_SCHEMA_ID_HEADER", "VALUE_SCHEMA_ID_HEADER", "SCHEMA_ID_HEADERS"]
