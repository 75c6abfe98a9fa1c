"""report: the incident as one self-contained HTML file (triage, txn, offsets, metadata and capture gathered).

The options are declared here, for typer; the body is in :mod:`.report_body`
(the fast path runs the same one).
"""

from __future__ import annotations

from typing import List, Optional

import typer

from kafkadump.cli import report_body as bodies
from kafkadump.cli.option_groups import RedactFieldsOpt, RedactOpt, RedactSecretsOpt
from kafkadump.cli.typer_app import app
from kafkadump.cli.typer_main import run_command


@app.command()
def report(
    paths: List[str] = typer.Argument(..., show_default=False,
                                      help="Log dirs, partition directories, segments and captures (pcap, pcapng), "
                                           "several at once."),
    output_file: str = typer.Option(..., "--output", "-o", metavar="FILE",
                                    help="The HTML file to write (written beside its name, then renamed into "
                                         "place; never one of the inputs)."),
    jobs: int = typer.Option(2, "--jobs", "-j", min=1, max=64,
                             help="Worker processes scanning separate files in parallel."),
    redact: Optional[str] = RedactOpt,
    redact_fields: Optional[str] = RedactFieldsOpt,
    redact_secrets: bool = RedactSecretsOpt,
) -> None:
    """An incident report: one HTML file, offline, to share.

    The verdict first (what is wrong, where, how bad), the findings by
    partition and code with links to annotated hexdumps of the damaged
    batches, pictures (offsets against time per partition, byte maps of
    damaged segments, transactions, leader and ISR history with unclean
    elections, consumer lag, requests of captures over time), and the chain
    of custody (every file's size, mtime and SHA-256, the tool, the command
    line).  Built from the same reports as triage, txn, offsets, metadata and
    capture.  The file fetches nothing when opened and runs no script but its
    own (a Content-Security-Policy says so); it reads complete without
    JavaScript.  A one-line summary goes to stderr.  Exit 0 when nothing is
    wrong, 1 when the data has problems, 2 on usage or I/O errors.
    """
    run_command(lambda: bodies.report(paths, output_file, jobs, redact, redact_fields, redact_secrets))
