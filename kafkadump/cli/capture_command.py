"""kafkadump capture: Kafka wire protocol from pcap/pcapng files and pasted hex dumps."""

from __future__ import annotations

from typing import List, Optional

import typer

from kafkadump.cli import capture_body as body
from kafkadump.cli.option_groups import (
    FROM_OPTIONS,
    DetectOpt,
    Encoding,
    HexColsOpt,
    InputLimits,
    Output,
    RedactFieldsOpt,
    RedactOpt,
    RedactSecretsOpt,
    SchemasOpt,
    WhereOpt,
    input_limits,
    output_options,
)
from kafkadump.cli.option_values import As
from kafkadump.cli.typer_app import app
from kafkadump.cli.typer_main import run_command


@app.command()
@input_limits(scan=False)
@output_options(table_columns=True, encoding=Encoding.auto, encoding_help="How bytes appear in JSON (keys, values, bytes fields): auto "
                                                    "(text as a string, other bytes as {\"base64\": ...}), base64, "
                                                    "hex or text.")
def capture(
    path: str = typer.Argument(..., metavar="FILE|-",
                               help="A pcap/pcapng file, hex text (plain hex, xxd, hexdump -C, tcpdump -x/-X/-XX, "
                                    "tshark -x / Wireshark hex dump), or raw frame bytes; - reads stdin."),
    records: bool = typer.Option(False, "--records",
                                 help="List the records the frames carry (with --hexdump: name every "
                                      "field of every record)."),
    frame: Optional[int] = typer.Option(None, "--frame", min=0, metavar="N",
                                        help="Only frame N (counting from 0, as the table numbers them)."),
    hexdump: bool = typer.Option(False, "--hexdump", help="Annotated hexdump of the --frame."),
    cols: Optional[int] = HexColsOpt,
    as_: Optional[As] = typer.Option(None, "--as",
                                     help="What pasted bytes are (default: detected): request, response or "
                                          "records (a bare record batch / legacy message set)."),
    api_key: Optional[int] = typer.Option(None, "--api-key", min=0, max=32767, metavar="KEY",
                                          help="API key for a response whose request is not in the input."),
    api_version: Optional[int] = typer.Option(None, "--api-version", min=0, max=32767, metavar="V",
                                              help="API version for such a response (with --api-key)."),
    port: List[int] = typer.Option([9092], "--port", "-p", min=1, max=65535,
                                   help="Kafka broker port (repeatable; default 9092).  Kafka on other ports "
                                        "is found by content unless --no-detect."),
    no_detect: bool = typer.Option(False, "--no-detect",
                                   help="Do not look for Kafka on ports other than --port (found by content "
                                        "by default).  (--detect is the payload option: framing of keys and values.)"),
    api: Optional[List[str]] = typer.Option(None, "--api", metavar="NAME",
                                            help="Only frames of this API (Produce, Fetch, ... or its key); "
                                                 "repeatable: any of them."),
    topic: Optional[List[str]] = typer.Option(None, "--topic", metavar="NAME",
                                              help="Only frames that name this topic; repeatable."),
    client: Optional[List[str]] = typer.Option(None, "--client", metavar="ID",
                                               help="Only frames of this client id (a response: its "
                                                    "request's); repeatable."),
    detect: bool = DetectOpt,
    schemas: Optional[List[str]] = SchemasOpt,
    where: Optional[str] = WhereOpt,
    redact: Optional[str] = RedactOpt,
    redact_fields: Optional[str] = RedactFieldsOpt,
    redact_secrets: bool = RedactSecretsOpt,
    output: Output = FROM_OPTIONS,
    limits: InputLimits = FROM_OPTIONS,
) -> None:
    """Decode Kafka requests and responses (and the record batches in them) from captures.

    Reads pcap/pcapng files (TCP reassembled per connection, frames split by
    their size prefix, responses paired with their requests by correlation
    id) and hex text in every common dump form.  One row per frame; --json
    for the full decoded tree; --records for the records carried; --frame N
    --hexdump for one frame's bytes, every field named.  Keys and values of
    the records carried: framing and Schema Registry payloads with --detect /
    --schemas, --where over the record objects, --redact.
    """
    run_command(lambda: body.capture(path, records, frame, hexdump, cols, as_, api_key, api_version, port, no_detect, api,
                                     topic, client, detect, schemas, where, redact, redact_fields, redact_secrets,
                                     output, limits))
