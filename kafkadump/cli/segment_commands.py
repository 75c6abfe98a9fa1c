"""batches, records, verify-crc, hexdump: files of record batches and legacy message sets."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from types import ModuleType
from typing import List, Optional

import typer

from ..errors import UsageError
from ..report.status import Tally
from .app import app
from .main import finish, run_command
from .option_groups import (
    FROM_OPTIONS,
    Decode,
    DecodeOpt,
    DetectOpt,
    Encoding,
    Format,
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
    payload_request,
)


def _renderer(format: Format) -> ModuleType:
    """The renderer module ``format`` names; only that one is imported (start-up time)."""
    if format is Format.json:
        from ..render import jsonl

        return jsonl
    if format is Format.table:
        from ..render import table

        return table
    from ..render import dumplog

    return dumplog


def _write(output: Output, report: str, items: Iterable[object]) -> None:
    """Hand ``items`` to the ``report`` writer of the renderer ``output`` names."""
    writer = getattr(_renderer(output.format), report)
    if output.json:
        writer(items, sys.stdout, output.encoding)
    elif output.format is Format.table and report != "write_crc_report":
        console = output.console()
        writer(items, sys.stdout, console, output.layout(console))
    else:
        writer(items, sys.stdout, output.console())


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
    from ..segment_report import batch_report

    def body() -> int:
        output.format  # noqa: B018 - a contradictory --json/--format is a usage error before any output
        tally = Tally()
        _write(output, "write_batch_report", batch_report(paths, limits.options(records=not shallow), tally))
        return finish(tally)

    run_command(body)


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
    from ..query import RecordQuery
    from ..record_window import first_records, last_records
    from ..segment_report import record_report

    def body() -> int:
        if count is not None and last is not None:
            raise UsageError("--count and --last contradict each other: give one")
        query = RecordQuery.parse(from_offset, to_offset, from_time, to_time, key)
        payloads = payload_request(detect, schemas, where, redact, redact_fields, redact_secrets)
        dump_log = output.format is Format.dump_log
        # kafka-dump-log.sh shows keys and values as they are, unless a decoder is named
        # (--offsets-decoder, ...: here --decode KIND); its control records always decoded
        choice = Decode.none if dump_log and decode is Decode.auto else decode
        tally = Tally()
        items = record_report(paths, limits.options(), query, tally, choice.value, control_values=dump_log,
                              payloads=payloads)
        if count is not None:
            items = first_records(items, count)
        elif last is not None:
            items = last_records(items, last)
        _write(output, "write_record_report", items)
        return finish(tally)

    run_command(body)


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
    from ..segment_report import crc_report

    def body() -> int:
        tally = Tally()
        _write(output, "write_crc_report", crc_report(paths, limits.options(records=False), tally))
        return finish(tally)

    run_command(body)


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
    (--decode; with --records).
    """
    from ..render import hexdump as hd
    from ..segment_report import hexdump_view

    def body() -> int:
        tally = Tally()
        payloads = payload_request(detect, schemas, None, redact, redact_fields, redact_secrets)
        view = hexdump_view(path, limits.options(), tally, position=position, offset=offset, index=batch,
                            context=context, decode=decode.value, payloads=payloads)
        if output.json:
            hd.write_json(view, sys.stdout, output.encoding)
        else:
            hd.write_text(view, sys.stdout, output.console(), expand_records=expand_records)
        return tally.exit_status

    run_command(body)
