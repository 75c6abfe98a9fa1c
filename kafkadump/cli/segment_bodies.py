"""The bodies of batches, records, verify-crc and hexdump, without typer.

Each takes the command's options (by the names of the command's parameters in
:mod:`.segment_commands`, the option groups built: ``output``, ``limits``) and
returns the exit status.  The typer commands run them through
:func:`.main.run_command`, the fast path (:mod:`.fast_path`) through
:func:`.running.run_body`: one body per command whichever parsed its options.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from types import ModuleType

from kafkadump.base.errors import UsageError
from kafkadump.base.status import Tally
from kafkadump.cli.option_values import Decode, Format, InputLimits, Output, hex_cols, payload_request, terminal_width
from kafkadump.cli.running import finish


def _renderer(format: Format) -> ModuleType:
    """The renderer module ``format`` names; only that one is imported (start-up time)."""
    if format is Format.json:
        from kafkadump.render import jsonl

        return jsonl
    if format is Format.table:
        from kafkadump.render import table

        return table
    if format is Format.blocks:
        from kafkadump.render import blocks

        return blocks
    from kafkadump.render import dumplog

    return dumplog


def _write(output: Output, report: str, items: Iterable[object]) -> None:
    """Hand ``items`` to the ``report`` writer of the renderer ``output`` names."""
    writer = getattr(_renderer(output.format), report)
    if output.json:
        writer(items, sys.stdout, output.encoding)
    elif output.format in (Format.table, Format.blocks) and report != "write_crc_report":
        console = output.console()
        writer(items, sys.stdout, console, output.layout(console))
    else:
        writer(items, sys.stdout, output.console())


def batches(paths: list[str], shallow: bool, output: Output, limits: InputLimits) -> int:
    from kafkadump.reports.segments import batch_report, batch_windows

    output.format  # noqa: B018 - a contradictory --json/--format is a usage error before any output
    tally = Tally()
    # --json: windows of plain batches are written whole (render.jsonl)
    report = batch_windows if output.json else batch_report
    _write(output, "write_batch_report", report(paths, limits.options(records=not shallow), tally))
    return finish(tally)


def records(paths: list[str], from_offset: int | None, to_offset: int | None, from_time: str | None,
            to_time: str | None, key: list[str] | None, count: int | None, last: int | None, decode: Decode,
            detect: bool, schemas: list[str] | None, where: str | None, redact: str | None,
            redact_fields: str | None, redact_secrets: bool, output: Output, limits: InputLimits) -> int:
    from kafkadump.reports.query import RecordQuery
    from kafkadump.reports.record_window import first_records, last_records
    from kafkadump.reports.segments import record_report, record_windows

    if count is not None and last is not None:
        raise UsageError("--count and --last contradict each other: give one")
    query = RecordQuery.parse(from_offset, to_offset, from_time, to_time, key)
    payloads = payload_request(detect, schemas, where, redact, redact_fields, redact_secrets)
    dump_log = output.format is Format.dump_log
    # kafka-dump-log.sh shows keys and values as they are, unless a decoder is named
    # (--offsets-decoder, ...: here --decode KIND); its control records always decoded
    choice = Decode.none if dump_log and decode is Decode.auto else decode
    tally = Tally()
    if output.json and count is None and last is None:
        # windows of plain batches are written whole (render.jsonl)
        _write(output, "write_record_report", record_windows(paths, limits.options(), query, tally, choice.value,
                                                             payloads=payloads))
        return finish(tally)
    items = record_report(paths, limits.options(), query, tally, choice.value, control_values=dump_log,
                          payloads=payloads)
    if count is not None:
        items = first_records(items, count)
    elif last is not None:
        items = last_records(items, last)
    _write(output, "write_record_report", items)
    return finish(tally)


def verify_crc(paths: list[str], output: Output, limits: InputLimits) -> int:
    from kafkadump.reports.segments import crc_report

    tally = Tally()
    _write(output, "write_crc_report", crc_report(paths, limits.options(records=False), tally))
    return finish(tally)


def hexdump(path: str, position: int | None, offset: int | None, batch: int | None, expand_records: bool,
            context: int, cols: int | None, decode: Decode, detect: bool, schemas: list[str] | None, redact: str | None,
            redact_fields: str | None, redact_secrets: bool, output: Output, limits: InputLimits) -> int:
    from kafkadump.render import hexdump as hd
    from kafkadump.reports.segments import hexdump_view

    cols = hex_cols(cols)
    tally = Tally()
    payloads = payload_request(detect, schemas, None, redact, redact_fields, redact_secrets)
    view = hexdump_view(path, limits.options(), tally, position=position, offset=offset, index=batch,
                        context=context, decode=decode.value, payloads=payloads)
    if output.json:
        hd.write_json(view, sys.stdout, output.encoding)
    else:
        console = output.console()
        hd.write_text(view, sys.stdout, console, expand_records=expand_records,
                      layout=hd.HexLayout(terminal_width(console), cols))
    return finish(tally)
