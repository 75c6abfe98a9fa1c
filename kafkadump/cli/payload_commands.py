"""schemas: the Schema Registry's schemas found in the evidence (a _schemas partition) or in files.

The options are declared here, for typer; the body is in :mod:`.payload_bodies`
(the fast path runs the same one).
"""

from __future__ import annotations

from typing import List

import typer

from kafkadump.cli import payload_bodies as bodies
from kafkadump.cli.option_groups import FROM_OPTIONS, Output, output_options
from kafkadump.cli.typer_app import app
from kafkadump.cli.typer_main import run_command

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
    run_command(lambda: bodies.schemas(paths, output))
