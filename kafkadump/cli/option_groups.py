"""Options shared by the commands, defined once, and what they turn into."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Optional

import typer

from kafkadump.cli.option_values import (  # noqa: F401 (re-exported: the commands import them from here)
    GROUP_BUILDERS,
    MAX_HEX_COLS,
    Decode,
    Encoding,
    Format,
    InputLimits,
    Output,
    console_for,
    output_format,
    payload_request,
)

# --- input ---------------------------------------------------------------------------------

PathsArg = typer.Argument(..., help="Segment files (.log) or any file of record batches / message sets.",
                          show_default=False)
MaxDecompOpt = typer.Option(64 * 1024 * 1024, "--max-decompressed", min=1, metavar="BYTES",
                            help="Cap on one batch's decompressed size; beyond it a "
                                 "decompression-limit finding, not an out-of-memory kill.")
MaxDepthOpt = typer.Option(4, "--max-depth", min=1, max=64, metavar="N",
                           help="Deepest legacy wrapper nesting that is expanded.")
MaxScanOpt = typer.Option(16, "--max-scan", min=0, metavar="N",
                          help="Resynchronising after damage may spend N times the input size (at least 64 MiB) "
                               "on CRC checks of candidates that fail; past that, candidates are accepted by "
                               "their headers and a scan-limit finding says so.  0: no limit.")
MaxRatioOpt = typer.Option(1000, "--max-ratio", min=0, metavar="N",
                           help="Refuse decompressed output beyond N times its compressed size (past 1 MiB): "
                                "a decompression-ratio finding.  0: no ratio limit.")
DecodeOpt = typer.Option(Decode.auto, "--decode", metavar="KIND",
                         help="Decode the keys and values of Kafka's internal topics: __consumer_offsets "
                              "(offsets), __transaction_state (transactions), __cluster_metadata and KRaft "
                              "snapshots (metadata), __share_group_state (share-state), __remote_log_metadata "
                              "(remote-log-metadata).  auto: from the partition directory's name (with --format "
                              "dump-log: never, as kafka-dump-log.sh without a decoder); none: never.")

# --- output --------------------------------------------------------------------------------

JsonOpt = typer.Option(False, "--json", help="JSON Lines on stdout (same as --format json).")
FormatOpt = typer.Option(None, "--format", "-f", metavar="FORMAT",
                         help="table (default), json (JSON Lines), dump-log (the line format of Kafka's "
                              "kafka-dump-log.sh), or blocks (batches, records: one per block, values whole).")
WideOpt = typer.Option(False, "--wide", help="(table) Every column, however wide the terminal.")
ColumnsOpt = typer.Option(None, "--columns", metavar="A,B,...",
                          help="(table) Only these columns, in this order (titles as in the header).")
FieldsOpt = typer.Option(None, "--fields", metavar="A,B,...",
                         help="These columns as tab-separated values for scripts (as tshark -T fields): a line "
                              "per row, no header, values whole, tabs and newlines escaped; notes on stderr.")
# (its range is checked by ``option_values.hex_cols``: a range shown in --help narrows the whole panel)
HexColsOpt = typer.Option(None, "--cols", "-c", metavar="N",
                          help=f"(hexdump) Bytes per row, 1 to {MAX_HEX_COLS}, as xxd -c (default: 16, or what "
                               "fits a terminal).")
ColorOpt = typer.Option(None, "--color/--no-color", help="Force or disable colour (default: on a terminal, "
                                                         "unless NO_COLOR is set).")


# --- option groups -----------------------------------------------------------------------------

# the default of a command's ``output`` / ``limits`` parameter: the group decorators fill it in
FROM_OPTIONS: Any = None

_KW = inspect.Parameter.KEYWORD_ONLY


def _with_group(fn: Callable, name: str, params: list[inspect.Parameter]) -> Callable:
    """``fn`` with its parameter ``name`` replaced, for typer, by ``params``; ``GROUP_BUILDERS[name]``
    makes the value of ``name`` from theirs.  The wrapper's ``option_groups`` says which options
    fill which parameter (the fast path's option table is generated from it)."""
    sig = inspect.signature(fn)
    names = [p.name for p in params]
    build = GROUP_BUILDERS[name]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs[name] = build(**{n: kwargs.pop(n) for n in names})
        return fn(*args, **kwargs)

    kept = [p for p in sig.parameters.values() if p.name != name]
    wrapper.__signature__ = sig.replace(parameters=kept + params)  # type: ignore[attr-defined]
    wrapper.option_groups = {**getattr(fn, "option_groups", {}), name: tuple(names)}  # type: ignore[attr-defined]
    return wrapper


def input_limits(*, scan: bool = True) -> Callable[[Callable], Callable]:
    """Give the command a ``limits: InputLimits`` built from the input-limit options
    (without ``--max-scan`` when ``scan`` is False: the command does no resync)."""
    params = [inspect.Parameter("max_decompressed", _KW, default=MaxDecompOpt, annotation=int),
              inspect.Parameter("max_depth", _KW, default=MaxDepthOpt, annotation=int),
              inspect.Parameter("max_ratio", _KW, default=MaxRatioOpt, annotation=int)]
    if scan:
        params.append(inspect.Parameter("max_scan", _KW, default=MaxScanOpt, annotation=int))
    return lambda fn: _with_group(fn, "limits", params)


def output_options(*, formats: bool = False, encoding: Encoding | None = Encoding.auto,
                   encoding_help: str | None = None, color: bool = True,
                   json_help: str | None = None, table_columns: bool = False) -> Callable[[Callable], Callable]:
    """Give the command an ``output: Output`` built from ``--json`` and, as asked, ``--format``,
    ``--encoding/-e`` (with this default) and ``--color/--no-color``."""
    json_opt = JsonOpt if json_help is None else typer.Option(False, "--json", help=json_help)
    params = [inspect.Parameter("json_", _KW, default=json_opt, annotation=bool)]
    if formats:
        params.append(inspect.Parameter("fmt", _KW, default=FormatOpt, annotation=Optional[Format]))
    if encoding is not None:
        opt = typer.Option(encoding, "--encoding", "-e", metavar="ENC",
                           help=encoding_help or "How key, value and header values appear in JSON: auto (text as a "
                                                 "string, other bytes as {\"base64\": ...}), base64 and hex are "
                                                 "lossless; text replaces invalid UTF-8.")
        params.append(inspect.Parameter("encoding", _KW, default=opt, annotation=Encoding))
    if color:
        params.append(inspect.Parameter("color", _KW, default=ColorOpt, annotation=Optional[bool]))
    if table_columns:
        params.append(inspect.Parameter("wide", _KW, default=WideOpt, annotation=bool))
        params.append(inspect.Parameter("columns", _KW, default=ColumnsOpt, annotation=Optional[str]))
        params.append(inspect.Parameter("fields", _KW, default=FieldsOpt, annotation=Optional[str]))

    return lambda fn: _with_group(fn, "output", params)


# --- payloads (records, hexdump): framing, schemas, --where, redaction ----------------------------

DetectOpt = typer.Option(False, "--detect",
                         help="Detect the framing of every key and value (Schema Registry: magic byte 0 and a "
                              "schema id, or a schema id header; else JSON, UTF-8 or binary): keyPayload and "
                              "valuePayload in --json, the schema id in the table.  Decodes with the _schemas "
                              "partition of the input's log dir when there is one.")
SchemasOpt = typer.Option(None, "--schemas", metavar="PATH",
                          help="Schemas to decode framed payloads with (implies --detect): a _schemas partition "
                               "directory or a log dir holding one, a directory of .avsc/.proto/.json files, or "
                               "a registry export (GET /schemas).  Never the network.  Repeatable.")
WhereOpt = typer.Option(None, "--where", metavar="EXPR",
                        help="Only records for which EXPR holds, e.g. 'value.user.id == \"42\" and offset > 10': "
                             "paths into the record's JSON object (key and value decoded when they are), "
                             "== != < <= > >= contains startswith endswith, and, or, not, parentheses.")
RedactOpt = typer.Option(None, "--redact", metavar="PARTS",
                         help="Show keys, values and/or headers (comma-separated) as sha256:<hex> and their "
                              "length instead of their bytes, in every format.")
RedactFieldsOpt = typer.Option(None, "--redact-fields", metavar="NAMES",
                               help="Mask these fields (comma-separated names, at any depth) in decoded payloads.")
RedactSecretsOpt = typer.Option(True, "--redact-secrets/--no-redact-secrets",
                                help="Mask the secrets of Kafka's metadata log (SCRAM salts and keys, sensitive "
                                     "config values such as *.password and sasl.jaas.config): on by default.")

