"""schemas: the Schema Registry's schemas found in the evidence (a _schemas partition) or in files."""

from __future__ import annotations

import sys
from typing import List

import typer

from kafkadump.base.status import Tally
from kafkadump.cli.option_groups import FROM_OPTIONS, Output, output_options
from kafkadump.cli.typer_app import app
from kafkadump.cli.typer_main import finish, run_command

SchemaPathsOpt = typer.Argument(..., show_default=False,
                                help="A _schemas partition directory or a log dir holding one, a _schemas segment "
                                     "(.log), a registry export (the JSON of GET /schemas), or a directory of "
                                     ".avsc/.proto/.json files named by id or subject.")


@app.command()
@output_options(encoding=None, json_help="JSON Lines on stdout: schema, schema-setting, finding and "
                                         "schemas-summary objects.", table_columns=True)
def schemas(
    paths: List[str] = SchemaPathsOpt,
    output: Output = FROM_OPTIONS,
) -> None:
    """The schemas a Schema Registry left in its _schemas topic, offline.

    Lists every subject and version with its schema id, type (AVRO,
    PROTOBUF, JSON), references and deletion (soft: the registry's delete,
    hard: a tombstone followed; the schema text is still shown from the
    log), then the compatibility and mode settings (global and per
    subject).  Nothing is fetched from a registry.  Exit 0 when the records
    read cleanly, 1 when a _schemas record or segment is damaged, 2 on
    usage or I/O errors.
    """
    from kafkadump.decoders.payloads.store import SchemaStore
    from kafkadump.render import schema_views as render

    def body() -> int:
        tally = Tally()
        store = SchemaStore.load(paths)
        tally.see(located.finding for located in store.findings)
        if output.json:
            render.write_schemas_json(store, sys.stdout)
        else:
            console = output.console()
            render.write_schemas_table(store, sys.stdout, console, output.layout(console))
        return finish(tally)

    run_command(body)
