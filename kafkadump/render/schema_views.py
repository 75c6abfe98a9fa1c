"""``kafkadump schemas``: a schema store's subjects, versions, ids, types, deletions and settings.

Input is a loaded :class:`kafkadump.decoders.payloads.store.SchemaStore`; the objects come from
:mod:`kafkadump.objects.schema_objects` (the table shows the same facts as --json).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from kafkadump.objects.schema_objects import (
    finding_object,
    registrations,
    schema_object,
    setting_object,
    settings,
    summary_object,
)
from kafkadump.render.jsontext import dumps
from kafkadump.render.lines import terminal_safe
from kafkadump.render.table import Column, TableLayout, TableStream

if TYPE_CHECKING:
    from rich.console import Console

    from kafkadump.decoders.payloads.store import SchemaStore

SCHEMA_COLUMNS = (
    Column("subject", 40, False, 1, 16), Column("version", 7, True, 2), Column("id", 8, True, 3),
    Column("type", 8, False, 4), Column("deleted", 7, False, 5), Column("references", 0, False, 6),
)
SETTING_COLUMNS = (Column("setting", 18, False, 1), Column("subject", 40, False, 2, 16), Column("value", 0, False, 3))


def _n(x: object) -> str:
    return "-" if x is None else str(x)


def write_schemas_table(store: SchemaStore, out: TextIO, console: Console | None = None,
                        layout: TableLayout | None = None) -> None:
    table = TableStream(out, SCHEMA_COLUMNS, console, layout, (SETTING_COLUMNS,))
    for schema, reg in registrations(store):
        o = schema_object(schema, reg)
        refs = ", ".join(f"{r['name']} ({r['subject']} v{r['version']})" for r in o["references"])
        table.row([o["subject"] if o["subject"] is not None else schema.source, _n(o["version"]), _n(o["id"]),
                   o["schemaType"], o["deleted"] or "-", refs or "-"], "dim" if o["deleted"] else None)
    listed = settings(store)
    if listed:
        table.note("")
        stable = TableStream(out, SETTING_COLUMNS, console, layout, (SCHEMA_COLUMNS,))
        for setting in listed:
            so = setting_object(setting)
            stable.row([so["setting"], so["subject"] if so["subject"] is not None else "(global)",
                        so["value"] if so["value"] is not None else "(removed)"])
    for located in store.findings:
        f = finding_object(located)
        table.note(terminal_safe(f"{f['severity']}: {f['code']} at {f['offset']} in {f['file']}: {f['message']}"),
                   "red")
    s = summary_object(store)
    more = f" ({s['findingsNotListed']} more not listed)" if s["findingsNotListed"] else ""
    table.note(f"{s['schemas']} schemas, {s['subjects']} subjects, {s['registrations']} versions "
               f"({s['softDeleted']} soft deleted, {s['hardDeleted']} hard deleted), {s['settings']} settings; "
               f"{s['records']} _schemas records read ({s['noops']} NOOP); {s['findings']} findings{more}", "bold")


def write_schemas_json(store: SchemaStore, out: TextIO) -> None:
    from kafkadump.objects.schema_objects import store_objects

    for obj in store_objects(store):
        out.write(dumps(obj) + "\n")


__all__ = ["write_schemas_table", "write_schemas_json", "SCHEMA_COLUMNS", "SETTING_COLUMNS"]
