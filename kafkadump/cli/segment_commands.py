"""batches, records, verify-crc, hexdump: files of record batches and legacy message sets.

The options are declared here, for typer; the bodies are in :mod:`.segment_bodies`
(the fast path runs the same ones).
"""

from __future__ import annotations

from typing import List, Optional

import typer

from kafkadump.cli import segment_bodies as bodies
from kafkadump.cli.option_groups import (
    FROM_OPTIONS,
    Decode,
    DecodeOpt,
    DetectOpt,
    Encoding,
    HexColsOpt,
    InputLimits,
    Output,
    PathsArg,
    RedactFieldsOpt,
    RedactOpt,
    RedactSecretsOpt,
    SchemasOpt,
    WhereOpt,
    input_limits,
    output_options,
)
from kafkadump.cli.typer_app import app
from kafkadump.cli.typer_main import run_command


@app.command()
@input_limits()
@output_options(formats=True, encoding=None, table_columns=True)
def batches(
    paths: List[str] = PathsArg,
    shallow: bool = typer.Option(False, "--shallow",
                                 help="Header and CRC only: do not decompress or decode records "
                                      "(faster; record-level damage is not seen)."),
    output: Output = FROM_OPTIONS,
    limits: InputLimits = FROM_OPTIONS,
) -> None:
    """One row per batch (per top-level message for magic 0/1), with findings."""
    run_command(lambda: bodies.batches(paths, shallow, output, limits))


@app.command()
@input_limits()
@output_options(formats=True, table_columns=True)
def records(
    paths: List[str] = PathsArg,
    from_offset: Optional[int] = typer.Option(None, "--from-offset", help="First offset to show."),
    to_offset: Optional[int] = typer.Option(None, "--to-offset", help="Last offset to show (inclusive)."),
    from_time: Optional[str] = typer.Option(None, "--from-time",
                                            help="Earliest timestamp: ISO-8601 (UTC if no zone) or epoch ms."),
    to_time: Optional[str] = typer.Option(None, "--to-time", help="Latest timestamp (inclusive)."),
    key: Optional[List[str]] = typer.Option(None, "--key",
                                            help="Only records with this key (UTF-8 text, hex:..., base64:..., or "
                                                 "null for the null key); repeatable: any of them."),
    count: Optional[int] = typer.Option(None, "--count", min=1, metavar="N",
                                        help="Only the first N records shown (the walk stops there)."),
    last: Optional[int] = typer.Option(None, "--last", min=1, metavar="N",
                                       help="Only the last N records (damage is still shown as it comes)."),
    decode: Decode = DecodeOpt,
    detect: bool = DetectOpt,
    schemas: Optional[List[str]] = SchemasOpt,
    where: Optional[str] = WhereOpt,
    redact: Optional[str] = RedactOpt,
    redact_fields: Optional[str] = RedactFieldsOpt,
    redact_secrets: bool = RedactSecretsOpt,
    output: Output = FROM_OPTIONS,
    limits: InputLimits = FROM_OPTIONS,
) -> None:
    """Every record (inner messages of legacy wrappers included), with filters.

    Records of Kafka's internal topics are decoded (see --decode).  Keys and values of other
    topics: framing and Schema Registry payloads with --detect / --schemas, --where, --redact.
    """
    run_command(lambda: bodies.records(paths, from_offset, to_offset, from_time, to_time, key, count, last, decode,
                                       detect, schemas, where, redact, redact_fields, redact_secrets, output, limits))


@app.command("verify-crc")
@input_limits()
@output_options(encoding=None, color=False)
def verify_crc(
    paths: List[str] = PathsArg,
    output: Output = FROM_OPTIONS,
    limits: InputLimits = FROM_OPTIONS,
) -> None:
    """Check the CRC of every batch and message; list the bad ones; summarise.

    Exit 0 when everything is valid, 1 when any problem was found.
    """
    run_command(lambda: bodies.verify_crc(paths, output, limits))


@app.command()
@input_limits()
@output_options(encoding=Encoding.hex, encoding_help="Byte values in --json.")
def hexdump(
    path: str = typer.Argument(..., help="Segment file or any file of record batches / message sets."),
    position: Optional[int] = typer.Option(None, "--position", min=0, metavar="BYTES",
                                           help="The batch or message containing this byte position."),
    offset: Optional[int] = typer.Option(None, "--offset", help="The batch holding this Kafka offset."),
    batch: Optional[int] = typer.Option(None, "--batch", min=0, metavar="N",
                                        help="The N-th batch of the file, counting from 0."),
    expand_records: bool = typer.Option(False, "--records", help="Name every field of every record too."),
    context: int = typer.Option(0, "--context", min=0, metavar="BYTES",
                                help="Also show this many raw bytes before and after (for damaged regions)."),
    cols: Optional[int] = HexColsOpt,
    decode: Decode = DecodeOpt,
    detect: bool = DetectOpt,
    schemas: Optional[List[str]] = SchemasOpt,
    redact: Optional[str] = RedactOpt,
    redact_fields: Optional[str] = RedactFieldsOpt,
    redact_secrets: bool = RedactSecretsOpt,
    output: Output = FROM_OPTIONS,
    limits: InputLimits = FROM_OPTIONS,
) -> None:
    """Annotated hexdump of one batch: every byte named by its field.

    Default: the first batch.  Compressed batches show the decompressed
    records as a second, separately addressed pane.  Bytes the decoder
    cannot explain are shown as unparsed, with the finding that says why.
    Keys and values of internal topics are split into their fields
    (--decode; with --records).  On a terminal the rows fit its width.
    """
    run_command(lambda: bodies.hexdump(path, position, offset, batch, expand_records, context, cols, decode, detect,
                                       schemas, redact, redact_fields, redact_secrets, output, limits))
