"""The body of schemas, without typer.

It takes the command's options (by the names of the parameters of
:func:`.payload_commands.schemas`, the option group built: ``output``) and
returns the exit status.  The typer command runs it through
:func:`.typer_main.run_command`, the fast path (:mod:`.fast_path`) through
:func:`.running.run_body`: one body whichever parsed the options.
"""

from __future__ import annotations

import sys

from kafkadump.base.status import Tally
from kafkadump.cli.option_values import Output
from kafkadump.cli.running import finish


def schemas(paths: list[str], output: Output) -> int:
    from kafkadump.decoders.payloads.store import SchemaStore
    from kafkadump.render import schema_views as render

    tally = Tally()
    store = SchemaStore.load(paths)
    tally.see(located.finding for located in store.findings)
    if output.json:
        render.write_schemas_json(store, sys.stdout)
    else:
        console = output.console()
        render.write_schemas_table(store, sys.stdout, console, output.layout(console))
    return finish(tally)
