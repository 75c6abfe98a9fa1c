"""Lookups over the generated schema tables: names, API keys, versions, header rules.

The tables (``kafkadump.decoders.protocol.tables``) are imported lazily, on first use,
so importing this module costs nothing.
"""

from __future__ import annotations

from functools import lru_cache

OPEN = 32767


def in_range(r: list[int] | None, v: int) -> bool:
    """Is version ``v`` inside range ``r`` (``(lo, hi)`` or None for "none")?"""
    return r is not None and r[0] <= v <= r[1]


_ENTRIES: dict[str, dict] = {}  # schema name -> its table entry as a dict, made on first ask
_BY_KEY: dict[int, dict[str, str]] = {}  # filled with the messages' table
_TABLES: dict[str, dict] = {}  # "messages", "records" -> the table, imported on first use


def _messages() -> dict[str, tuple]:
    """The protocol messages' table (entries are tuples in the order of its ``KEYS``): a module of
    constants, loaded from its compiled form on first use."""
    table = _TABLES.get("messages")
    if table is None:
        from kafkadump.decoders.protocol.tables.messages import MESSAGES

        for name, (kind, *_, api_key, _unstable, _deprecated) in MESSAGES.items():
            if kind in ("request", "response") and api_key is not None:
                _BY_KEY.setdefault(api_key, {})[kind] = name
        table = _TABLES["messages"] = MESSAGES
    return table


def _records() -> dict[str, dict]:
    table = _TABLES.get("records")
    if table is None:
        from kafkadump.decoders.protocol.tables.records import RECORDS

        table = _TABLES["records"] = RECORDS
    return table


def _new_entry(name: str) -> dict:
    """The table entry of ``name`` as a dict, kept (a name in both tables: the protocol message wins)."""
    row = _messages().get(name)
    if row is not None:
        from kafkadump.decoders.protocol.tables.messages import KEYS

        e = {k: v for k, v in zip(KEYS, row) if v is not None or k in ("valid", "flexible")}
    else:
        e = _records()[name]  # KeyError when unknown
    _ENTRIES[name] = e
    return e


def message(name: str) -> dict:
    """The table entry of schema ``name`` (KeyError when unknown)."""
    e = _ENTRIES.get(name)
    return _new_entry(name) if e is None else e


def has(name: str) -> bool:
    return name in _messages() or name in _records()


def names(kind: str | None = None) -> list[str]:
    """Schema names, optionally only those of one ``type`` (request, response, data, ...)."""
    messages = _messages()  # a name in both tables: the protocol message's type counts
    found = [n for n, m in _records().items() if n not in messages and (kind is None or m["type"] == kind)]
    found += [n for n, m in messages.items() if kind is None or m[0] == kind]
    return sorted(found)


def record_schemas(group: str | None = None) -> list[str]:
    """Names of the records/ schemas, optionally of one sub-folder (e.g. "metadata")."""
    return sorted(n for n, m in _records().items() if group is None or m.get("group") == group)


def api_names(api_key: int) -> dict[str, str] | None:
    """``{"request": name, "response": name}`` for an API key, or None."""
    _messages()
    return _BY_KEY.get(api_key)


def api_keys() -> list[int]:
    _messages()
    return sorted(_BY_KEY)


@lru_cache(maxsize=4096)
def api_name(api_key: int) -> str | None:
    """"Produce" for 0, "Fetch" for 1, ... (the request schema's name without "Request")."""
    n = api_names(api_key)
    if not n or "request" not in n:
        return None
    return n["request"][: -len("Request")]


def valid_versions(name: str) -> list[int] | None:
    """``[lo, hi]`` of schema ``name``, or None for a record schema that has no valid version."""
    return message(name)["valid"]


def max_version(name: str) -> int:
    return message(name)["valid"][1]


def is_flexible(name: str, version: int) -> bool:
    return in_range(message(name)["flexible"], version)


# the tables never change: asked per frame, answered once per API and version (bounded: the keys
# and versions come from the bytes)
@lru_cache(maxsize=4096)
def request_header_version(api_key: int, api_version: int) -> int:
    """0 (ControlledShutdown v0 only), 1, or 2 (flexible request versions)."""
    n = api_names(api_key)
    if n is None or "request" not in n:
        return 1
    if api_key == 7 and api_version == 0:
        return 0
    return 2 if is_flexible(n["request"], api_version) else 1


@lru_cache(maxsize=4096)
def response_header_version(api_key: int, api_version: int) -> int:
    """0 or 1 (flexible response versions); ApiVersions responses always use 0."""
    if api_key == 18:
        return 0
    n = api_names(api_key)
    if n is None or "response" not in n:
        return 0
    return 1 if is_flexible(n["response"], api_version) else 0


__all__ = ["in_range", "message", "has", "names", "record_schemas", "api_names", "api_keys", "api_name",
           "valid_versions", "max_version", "is_flexible", "request_header_version", "response_header_version"]
