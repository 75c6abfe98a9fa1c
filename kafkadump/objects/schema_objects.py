"""The JSON objects of ``kafkadump schemas``: what a schema store holds.

* **schema**: ``type subject version id guid schemaType deleted references source schema``, one per
  (subject, version) registration; a schema file that names no subject is one object with ``subject``
  and ``version`` null.  ``deleted`` is ``"soft"`` (the registry's delete: still readable by id),
  ``"hard"`` (a tombstone followed; the text is what the topic still holds) or null.
  ``references`` lists ``{name, subject, version}``.
* **schema-setting**: ``type setting subject value offset``: a CONFIG (``setting``
  ``"compatibilityLevel"``) or MODE (``"mode"``) record's latest state; ``subject`` null is the global
  setting, ``value`` null a setting removed.
* **finding**: ``type file code severity offset message ...``: a problem in the ``_schemas`` segments.
* **schemas-summary**: ``type sources records noops schemas subjects registrations softDeleted hardDeleted
  settings findings findingsNotListed``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kafkadump.decoders.payloads.model import Registration, Schema
from kafkadump.decoders.payloads.schemas_topic import Located, Setting
from kafkadump.decoders.payloads.store import SchemaStore
from kafkadump.objects.generated_fields import finding_fields

SETTING_NAMES = {"CONFIG": "compatibilityLevel", "MODE": "mode"}


def deletion(reg: Registration | None) -> str | None:
    """``"hard"``, ``"soft"`` or None: how a registration was deleted."""
    if reg is None:
        return None
    return "hard" if reg.hard_deleted else ("soft" if reg.deleted else None)


def schema_object(schema: Schema, reg: Registration | None) -> dict[str, Any]:
    return {
        "type": "schema", "subject": reg.subject if reg else None, "version": reg.version if reg else None,
        "id": schema.id, "guid": schema.guid, "schemaType": schema.schema_type, "deleted": deletion(reg),
        "references": [{"name": r.name, "subject": r.subject, "version": r.version} for r in schema.references],
        "source": schema.source, "schema": schema.text,
    }


def setting_object(s: Setting) -> dict[str, Any]:
    return {"type": "schema-setting", "setting": SETTING_NAMES.get(s.keytype, s.keytype), "subject": s.subject,
            "value": s.value, "offset": s.offset}


def finding_object(located: Located) -> dict[str, Any]:
    return {"type": "finding", "file": located.file, **finding_fields(located.finding)}


def registrations(store: SchemaStore) -> Iterator[tuple[Schema, Registration | None]]:
    """Every (schema, registration) of the store, by subject then version; schemas with none last."""
    regs = sorted(((r, s) for s in store.schemas() for r in s.registrations),
                  key=lambda rs: (rs[0].subject, rs[0].version))
    for r, s in regs:
        yield s, r
    for s in store.schemas():
        if not s.registrations:
            yield s, None


def settings(store: SchemaStore) -> list[Setting]:
    """The settings, global first, then by subject."""
    return sorted(store.settings, key=lambda s: (s.keytype, s.subject is not None, s.subject or ""))


def summary_object(store: SchemaStore) -> dict[str, Any]:
    regs = [r for s in store.schemas() for r in s.registrations]
    return {
        "type": "schemas-summary", "sources": list(store.sources), "records": store.records, "noops": store.noops,
        "schemas": len(store), "subjects": len({r.subject for r in regs}), "registrations": len(regs),
        "softDeleted": sum(1 for r in regs if deletion(r) == "soft"),
        "hardDeleted": sum(1 for r in regs if deletion(r) == "hard"),
        "settings": len(store.settings), "findings": len(store.findings),
        "findingsNotListed": store.findings_dropped,
    }


def store_objects(store: SchemaStore) -> Iterator[dict[str, Any]]:
    """Every object of the listing, in the order --json writes them."""
    for schema, reg in registrations(store):
        yield schema_object(schema, reg)
    for s in settings(store):
        yield setting_object(s)
    for located in store.findings:
        yield finding_object(located)
    yield summary_object(store)


__all__ = ["schema_object", "setting_object", "finding_object", "summary_object", "store_objects",
           "registrations", "settings", "deletion"]
