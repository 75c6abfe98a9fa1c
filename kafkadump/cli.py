"""The command line: wires a source to the decoder to a renderer.

This is the only module that prints.  Data goes to stdout, diagnostics to
stderr.  Exit codes: 0 clean, 1 the data has problems (an error or warning
finding), 2 usage or I/O error.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timezone
from enum import Enum
from typing import List, Optional

import typer

from . import __version__
from .decode import CrcScan, Options, iter_batches
from .decode.model import Batch, Gap
from .errors import UsageError
from .findings import Severity
from .render import dumplog, jsonl, table
from .sources.segment import InputError, open_segment

app = typer.Typer(
    name="kafkadump",
    help="Forensic inspector for Apache Kafka's binary data: segment files, record batches, "
         "legacy message sets.  Exit status: 0 clean, 1 the data has problems, 2 usage or I/O error.",
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class Format(str, Enum):
    table = "table"
    json = "json"
    dump_log = "dump-log"


class Encoding(str, Enum):
    base64 = "base64"
    hex = "hex"
    text = "text"


class Decode(str, Enum):
    auto = "auto"
    offsets = "offsets"
    transactions = "transactions"
    metadata = "metadata"
    share_state = "share-state"
    remote_log_metadata = "remote-log-metadata"
    none = "none"


# --- shared options (defined once) ------------------------------------------------

PathsArg = typer.Argument(..., help="Segment files (.log) or any file of record batches / message sets.",
                          show_default=False)
JsonOpt = typer.Option(False, "--json", help="JSON Lines on stdout (same as --format json).")
FormatOpt = typer.Option(None, "--format", "-f",
                         help="table (default on a terminal), json (JSON Lines), or dump-log "
                              "(the line format of Kafka's kafka-dump-log.sh).")
MaxDecompOpt = typer.Option(64 * 1024 * 1024, "--max-decompressed", min=1, metavar="BYTES",
                            help="Cap on one batch's decompressed size; beyond it a "
                                 "decompression-limit finding, not an out-of-memory kill.")
MaxDepthOpt = typer.Option(4, "--max-depth", min=1, max=64,
                           help="Deepest legacy wrapper nesting that is expanded.")
MaxScanOpt = typer.Option(16, "--max-scan", min=0, metavar="N",
                          help="Resynchronising after damage may spend N times the input size (at least 64 MiB) "
                               "on CRC checks of candidates that fail; past that, candidates are accepted by "
                               "their headers and a scan-limit finding says so.  0: no limit.")
MaxRatioOpt = typer.Option(1000, "--max-ratio", min=0, metavar="N",
                           help="Refuse decompressed output beyond N times its compressed size (past 1 MiB): "
                                "a decompression-ratio finding.  0: no ratio limit.")
ColorOpt = typer.Option(None, "--color/--no-color", help="Force or disable colour (default: on a terminal, "
                                                         "unless NO_COLOR is set).")
DecodeOpt = typer.Option(Decode.auto, "--decode",
                         help="Decode the keys and values of Kafka's internal topics: __consumer_offsets "
                              "(offsets), __transaction_state (transactions), __cluster_metadata and KRaft "
                              "snapshots (metadata), __share_group_state (share-state), __remote_log_metadata "
                              "(remote-log-metadata).  auto: from the partition directory's name; none: never.")


def _version(value: bool):
    if value:
        typer.echo(f"kafkadump {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")):
    """kafkadump: decode Kafka segments, batches and messages, byte-exact and damage-tolerant."""


# --- helpers -------------------------------------------------------------------------

def _fmt(json_flag: bool, fmt: Optional[Format]) -> Format:
    if json_flag:
        if fmt not in (None, Format.json):
            raise UsageError("--json and --format " + fmt.value + " contradict each other")
        return Format.json
    return fmt or Format.table


def _console(color: Optional[bool]):
    """A rich console for styled tables on a terminal, else None (plain text)."""
    if color is None:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    if not color:
        return None
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True, force_terminal=True)


def _parse_time(text: Optional[str], name: str) -> Optional[int]:
    """ISO-8601 (naive = UTC) or epoch milliseconds -> epoch ms."""
    if text is None:
        return None
    t = text.strip()
    if t.lstrip("-").isdigit():
        return int(t)
    try:
        dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{name}: {text!r} is neither epoch milliseconds nor an ISO-8601 time") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def _parse_key(text: Optional[str]) -> Optional[bytes]:
    """--key: UTF-8 text, or hex:..., base64:... for binary keys."""
    if text is None:
        return None
    import base64
    import binascii

    try:
        if text.startswith("hex:"):
            return bytes.fromhex(text[4:])
        if text.startswith("base64:"):
            return base64.b64decode(text[7:], validate=True)
    except (ValueError, binascii.Error):
        raise UsageError(f"--key: {text!r} is not valid {text.split(':')[0]}") from None
    return text.encode("utf-8")


class _Status:
    """Tracks whether any problem was seen, for the exit code."""

    def __init__(self):
        self.problems = 0

    def see(self, item) -> None:
        for f in item.findings:
            if f.severity is not Severity.INFO:
                self.problems += 1


def _internal_decoder(choice: "Decode", path: str):
    """The internal-topic decoder for ``path`` under ``--decode`` (None: show keys and values as bytes)."""
    if choice is Decode.none:
        return None
    from .internal.kinds import resolve_kind

    kind = resolve_kind(choice.value, path)
    if kind is None:
        return None
    from .internal.decoder import decoder_for

    return decoder_for(kind)


_NOT_SEGMENT = {"offset-index": "an offset index", "time-index": "a time index", "txn-index": "a transaction index",
                "producer-snapshot": "a producer-state snapshot", "leader-epoch-checkpoint": "a checkpoint file",
                "partition-metadata": "a partition.metadata file", "offset-checkpoint": "a checkpoint file",
                "meta-properties": "a meta.properties file", "quorum-state": "a quorum-state file"}


def _is_text(head: bytes) -> bool:
    """Printable text (no NUL, nearly all printable ASCII or UTF-8): never a segment's first bytes."""
    if b"\x00" in head:
        return False
    printable = sum(1 for b in head if 32 <= b < 127 or b in (9, 10, 13) or b >= 0x80)
    return printable >= len(head) * 0.95


def _check_kind(path: str, seg) -> None:
    """Refuse, with what to do instead, a file that is plainly not batches (exit 2).

    The name decides only when the bytes agree: a file named ``.index`` that
    does hold batches is decoded.  An empty ``.log`` is a real (empty)
    segment; any other empty input is an error.
    """
    from .decode.walk import find_next_batch
    from .logdir import names
    from .sources.pcap import is_capture

    buf = seg.buf
    if seg.size == 0:
        if names.classify(path).kind in (names.SEGMENT, names.KRAFT_SNAPSHOT):
            return
        raise InputError(f"{path}: empty file, nothing to decode (give a segment file or a file of batches)")
    head = bytes(buf[:65536])
    if is_capture(head[:4]):
        raise InputError(f"{path}: is a pcap/pcapng capture, not a segment; use 'kafkadump capture {path}'")
    kind = names.classify(path).kind
    if kind in _NOT_SEGMENT and find_next_batch(buf, 0, seg.size, limit=65536) is None:
        raise InputError(f"{path}: is {_NOT_SEGMENT[kind]} (by its name and bytes), not a segment; "
                         f"use 'kafkadump dump {path}'")
    if _is_text(head) and find_next_batch(buf, 0, seg.size, limit=65536) is None:
        raise InputError(f"{path}: is text, not record batches; for a hex dump use 'kafkadump capture {path}', "
                         f"for a checkpoint or properties file 'kafkadump dump {path}'")


def _open_all(paths, opt: Optional[Options] = None):
    """Yield ``(path, segment)``; an unreadable path is an I/O error (exit 2).

    The walkers release the segment's mapped pages as they go (``opt`` is unused).
    """
    for p in paths:
        seg = open_segment(p)
        try:
            _check_kind(p, seg)
        except InputError:
            seg.close()
            raise
        try:
            yield p, seg
        finally:
            seg.close()


class _Out:
    """Buffered stdout writer (one write per batch, not per line)."""

    def __init__(self):
        self.w = sys.stdout.write
        self.flush = sys.stdout.flush


def _json_wanted(argv=None) -> bool:
    """Whether the command being run asked for JSON (then errors are JSON objects on stderr too)."""
    try:
        from typer._click.globals import get_current_context

        ctx = get_current_context(silent=True)
    except Exception:  # pragma: no cover - typer internals moved
        ctx = None
    if ctx is not None and ctx.params:
        fmt = ctx.params.get("fmt")
        return bool(ctx.params.get("json_")) or getattr(fmt, "value", fmt) == "json"
    argv = sys.argv[1:] if argv is None else argv
    return "--json" in argv or "--format=json" in argv or "-fjson" in argv or any(
        a in ("--format", "-f") and b == "json" for a, b in zip(argv, argv[1:]))


def _say_error(message: str, code: int = 2, as_json: Optional[bool] = None) -> None:
    """One line on stderr: ``kafkadump: MESSAGE`` (under --json, a JSON object)."""
    message = " ".join(str(message).split())
    if as_json is None:
        as_json = _json_wanted()
    if as_json:
        line = json.dumps({"type": "error", "message": message, "exitStatus": code})
    else:
        line = f"kafkadump: {message}"
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # pragma: no cover - stderr is gone too
        pass


def _run(fn):
    """Run a command body, mapping our errors to exit codes and messages on stderr."""
    try:
        code = fn()
    except (InputError, UsageError) as e:
        _say_error(str(e))
        raise typer.Exit(2)
    except BrokenPipeError:
        # the reader went away (``| head``): what was printed is complete lines
        _quiet_exit(0)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_exit(0)
    raise typer.Exit(code)


# --- batches -----------------------------------------------------------------------------

@app.command()
def batches(
    paths: List[str] = PathsArg,
    json_: bool = JsonOpt,
    fmt: Optional[Format] = FormatOpt,
    shallow: bool = typer.Option(False, "--shallow",
                                 help="Header and CRC only: do not decompress or decode records "
                                      "(faster; record-level damage is not seen)."),
    max_decompressed: int = MaxDecompOpt,
    max_depth: int = MaxDepthOpt,
    max_ratio: int = MaxRatioOpt,
    max_scan: int = MaxScanOpt,
    color: Optional[bool] = ColorOpt,
):
    """One row per batch (per top-level message for magic 0/1), with findings."""

    def body():
        f = _fmt(json_, fmt)
        opt = Options(records=not shallow, max_decompressed=max_decompressed, max_depth=max_depth,
                      max_ratio=max_ratio, max_scan=max_scan)
        status = _Status()
        out = sys.stdout
        console = _console(color) if f is Format.table else None
        for path, seg in _open_all(paths, opt):
            if f is Format.json:
                for item in iter_batches(seg.buf, path, options=opt):
                    status.see(item)
                    out.write(jsonl.render_batch_line(item) + "\n")
            elif f is Format.dump_log:
                out.write(dumplog.file_header(path, seg.buf))
                for item in iter_batches(seg.buf, path, options=opt):
                    status.see(item)
                    out.write(dumplog.render(item, records=False))
            else:
                t = table.TableStream(out, table.BATCH_COLUMNS, console)
                if len(paths) > 1:
                    t.note(f"== {path}", "bold")
                for item in iter_batches(seg.buf, path, options=opt):
                    status.see(item)
                    if isinstance(item, Gap):
                        t.row(table.gap_cells(item), "red")
                    else:
                        t.row(table.batch_cells(item), table.batch_style(item))
                    for line in table.findings_lines(item):
                        t.note(line, "red" if item.findings and isinstance(item, Gap) else "yellow")
        return 1 if status.problems else 0

    _run(body)


# --- records --------------------------------------------------------------------------------

@app.command()
def records(
    paths: List[str] = PathsArg,
    json_: bool = JsonOpt,
    fmt: Optional[Format] = FormatOpt,
    encoding: Encoding = typer.Option(Encoding.base64, "--encoding", "-e",
                                      help="How key, value and header values appear in JSON: base64 and hex "
                                           "are lossless; text replaces invalid UTF-8."),
    from_offset: Optional[int] = typer.Option(None, "--from-offset", help="First offset to show."),
    to_offset: Optional[int] = typer.Option(None, "--to-offset", help="Last offset to show (inclusive)."),
    from_time: Optional[str] = typer.Option(None, "--from-time",
                                            help="Earliest timestamp: ISO-8601 (UTC if no zone) or epoch ms."),
    to_time: Optional[str] = typer.Option(None, "--to-time", help="Latest timestamp (inclusive)."),
    key: Optional[str] = typer.Option(None, "--key",
                                      help="Only records with this key (UTF-8 text, or hex:..., base64:...)."),
    decode: Decode = DecodeOpt,
    max_decompressed: int = MaxDecompOpt,
    max_depth: int = MaxDepthOpt,
    max_ratio: int = MaxRatioOpt,
    max_scan: int = MaxScanOpt,
    color: Optional[bool] = ColorOpt,
):
    """Every record (inner messages of legacy wrappers included), with filters.

    Records of Kafka's internal topics are decoded (see --decode).
    """

    def body():
        f = _fmt(json_, fmt)
        t_from = _parse_time(from_time, "--from-time")
        t_to = _parse_time(to_time, "--to-time")
        want_key = _parse_key(key)
        lo = from_offset
        hi = to_offset

        def select(b: Batch) -> bool:
            # batch-level pruning before any record is decoded
            if lo is not None and b.last_offset is not None and b.last_offset < lo:
                return False
            if hi is not None and b.base_offset is not None and b.base_offset > hi:
                return False
            if t_from is not None and b.magic >= 2 and not (b.attributes & 0x08) and b.max_timestamp < t_from:
                return False
            return True

        filtered = any(v is not None for v in (lo, hi, t_from, t_to, want_key))

        def keep(r) -> bool:
            if lo is not None and r.offset < lo:
                return False
            if hi is not None and r.offset > hi:
                return False
            if t_from is not None and (r.timestamp is None or r.timestamp < t_from):
                return False
            if t_to is not None and (r.timestamp is None or r.timestamp > t_to):
                return False
            if want_key is not None and r.key != want_key:
                return False
            return True

        opt = Options(records=True, max_decompressed=max_decompressed, max_depth=max_depth,
                      max_ratio=max_ratio, max_scan=max_scan,
                      select=select if (lo is not None or hi is not None or t_from is not None) else None)
        status = _Status()
        out = sys.stdout
        console = _console(color) if f is Format.table else None
        lines = jsonl.RecordLines(encoding.value)
        for path, seg in _open_all(paths, opt):
            internal = _internal_decoder(decode, path) if f is not Format.dump_log else None
            if f is Format.json:
                write = out.write
                for item in iter_batches(seg.buf, path, options=opt):
                    status.see(item)
                    if isinstance(item, Gap) or item.findings:
                        # damage is part of the data stream: say where, in the same lines
                        d = jsonl.gap_dict(item) if isinstance(item, Gap) else {
                            "type": "findings", "file": item.file, "position": item.position,
                            "findings": jsonl.findings_list(item.findings)}
                        write(json.dumps(d) + "\n")
                    recs = item.records if isinstance(item, Batch) else None
                    if recs:
                        if filtered:
                            recs = [r for r in recs if keep(r)]
                        if internal is None:
                            write(lines.batch_lines(item, recs))
                            continue
                        chunk = []
                        for r in recs:
                            dr = internal.decode_record(r, item)
                            status.see(dr)
                            chunk.append(lines.decoded_line(r, item, dr) + "\n")
                        write("".join(chunk))
            elif f is Format.dump_log:
                out.write(dumplog.file_header(path, seg.buf))
                for item in iter_batches(seg.buf, path, options=opt):
                    status.see(item)
                    if isinstance(item, Batch) and filtered and not item.findings:
                        # a batch with no kept record is not shown; damage always is
                        if item.records is None or not any(keep(r) for r in item.records):
                            continue
                    out.write(dumplog.render(item, records=True, keep=keep if filtered else None))
            else:
                t = table.TableStream(out, table.RECORD_COLUMNS if internal is None else table.DECODED_COLUMNS,
                                      console)
                if len(paths) > 1:
                    t.note(f"== {path}", "bold")
                for item in iter_batches(seg.buf, path, options=opt):
                    status.see(item)
                    for line in table.findings_lines(item):
                        t.note(f"{item.position}:" + line, "red")
                    for r in (item.records or []) if isinstance(item, Batch) else ():
                        if not filtered or keep(r):
                            if internal is None:
                                t.row(table.record_cells(r), "cyan" if r.control is not None else None)
                                continue
                            dr = internal.decode_record(r, item)
                            status.see(dr)
                            t.row(table.decoded_record_cells(r, dr),
                                  "yellow" if dr.findings else "cyan" if r.control is not None else None)
                            for line in table.findings_lines(dr):
                                t.note(line, "yellow")
        return 1 if status.problems else 0

    _run(body)


# --- verify-crc --------------------------------------------------------------------------------

@app.command("verify-crc")
def verify_crc(
    paths: List[str] = PathsArg,
    json_: bool = JsonOpt,
    max_decompressed: int = MaxDecompOpt,
    max_depth: int = MaxDepthOpt,
    max_ratio: int = MaxRatioOpt,
    max_scan: int = MaxScanOpt,
):
    """Check the CRC of every batch and message; list the bad ones; summarise.

    Exit 0 when everything is valid, 1 when any problem was found.
    """

    def body():
        opt = Options(records=False, max_decompressed=max_decompressed, max_depth=max_depth,
                      max_ratio=max_ratio, max_scan=max_scan)
        out = sys.stdout
        totals = {"files": 0, "batches": 0, "bytes": 0, "bad": 0, "findings": 0}
        status = _Status()
        for path, seg in _open_all(paths, opt):
            scan = CrcScan(seg.buf, path, opt)
            for item in scan:
                status.see(item)
                totals["findings"] += len(item.findings)
                if json_:
                    d = jsonl.gap_dict(item) if isinstance(item, Gap) else jsonl.batch_dict(item)
                    out.write(json.dumps(d) + "\n")
                else:
                    out.write(table.verify_line(item) + "\n")
            totals["files"] += 1
            totals["batches"] += scan.batches
            totals["bytes"] += seg.size
            totals["bad"] += scan.bad
        if json_:
            out.write(json.dumps({"type": "summary", **totals, "valid": not status.problems}) + "\n")
        else:
            verdict = "all valid" if not status.problems else f"{totals['bad']} bad"
            out.write(f"files: {totals['files']}  batches: {totals['batches']}  bytes: {totals['bytes']}  "
                      f"bad: {totals['bad']}  ({verdict})\n")
        return 1 if status.problems else 0

    _run(body)


# --- hexdump ---------------------------------------------------------------------------------

@app.command()
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
    json_: bool = JsonOpt,
    encoding: Encoding = typer.Option(Encoding.hex, "--encoding", "-e", help="Byte values in --json."),
    decode: Decode = DecodeOpt,
    max_decompressed: int = MaxDecompOpt,
    max_depth: int = MaxDepthOpt,
    max_ratio: int = MaxRatioOpt,
    max_scan: int = MaxScanOpt,
    color: Optional[bool] = ColorOpt,
):
    """Annotated hexdump of one batch: every byte named by its field.

    Default: the first batch.  Compressed batches show the decompressed
    records as a second, separately addressed pane.  Bytes the decoder
    cannot explain are shown as unparsed, with the finding that says why.
    Keys and values of internal topics are split into their fields
    (--decode; with --records).
    """
    from .decode.walk import decode_spanned, locate
    from .render import hexdump as hd

    def body():
        if sum(x is not None for x in (position, offset, batch)) > 1:
            raise UsageError("give at most one of --position, --offset, --batch")
        opt = Options(records=True, max_decompressed=max_decompressed, max_depth=max_depth,
                      max_ratio=max_ratio, max_scan=max_scan)
        with open_segment(path) as seg:
            _check_kind(path, seg)
            item = locate(seg.buf, path, position=position, offset=offset, index=batch, options=opt)
            if item is None:
                what = ("position " + str(position) if position is not None else
                        "offset " + str(offset) if offset is not None else
                        "batch " + str(batch) if batch is not None else "batch at all")
                raise UsageError(f"{path}: no {what} in this file")
            decoded, spans = decode_spanned(seg.buf, item, opt)
            internal = _internal_decoder(decode, path)
            if internal is not None:
                from .internal import expand_spans

                spans, more = expand_spans(internal.kind, decoded, spans)
                decoded.findings.extend(more)
            status = _Status()
            status.see(decoded)
            if json_:
                out = sys.stdout
                leaves = hd.leaf_spans(spans, expand_records=True)
                for sp in leaves:
                    out.write(hd.span_json(sp, encoding.value) + "\n")
                for f in decoded.findings:
                    out.write(json.dumps({"type": "finding", **f.to_dict()}) + "\n")
            else:
                start = item.position
                end = start + item.size
                before = seg.buf[max(0, start - context):start] if context else b""
                after = seg.buf[end:end + context] if context else b""
                hd.render_text(decoded, spans, seg.buf[start:end], start, expand_records=expand_records,
                               context=(before, start - len(before), after), console=_console(color),
                               out=sys.stdout)
        return 1 if status.problems else 0

    _run(body)


def _register_commands() -> None:
    import importlib

    from .commands import MODULES

    for name in MODULES:
        importlib.import_module(f".commands.{name}", __package__).register(app)


_register_commands()


class _WholeWrites:
    """stdout whose writes and flushes Ctrl-C cannot cut in half.

    A KeyboardInterrupt raised inside a write (CPython checks for signals
    between the partial writes of a large buffer) can leave half a line on
    the pipe and drop the rest.  So SIGINT gets a handler that, during a
    write or flush, only notes the interrupt, and raises KeyboardInterrupt
    as soon as the write is complete; outside writes it raises at once, as
    usual.  What was printed is whole lines.
    """

    def __init__(self, stream):
        import signal

        self._stream = stream
        self._busy = False
        self._pending = False
        signal.signal(signal.SIGINT, self._on_sigint)

    def _on_sigint(self, signum, frame):
        if self._busy:
            self._pending = True
            return
        raise KeyboardInterrupt

    def _guarded(self, fn, *a):
        self._busy = True
        try:
            return fn(*a)
        finally:
            self._busy = False
            if self._pending:
                self._pending = False
                raise KeyboardInterrupt

    def write(self, text):
        return self._guarded(self._stream.write, text)

    def flush(self):
        return self._guarded(self._stream.flush)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def main() -> None:
    """Console entry point: one-line errors, quiet on a closed pipe or Ctrl-C, never a traceback."""
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError as ClickUsageError
    from typer.exceptions import Abort

    argv = sys.argv[1:]
    import threading

    if threading.current_thread() is threading.main_thread() and not isinstance(sys.stdout, _WholeWrites):
        sys.stdout = _WholeWrites(sys.stdout)
    try:
        code = app(args=argv, standalone_mode=False, prog_name="kafkadump")
    except NoArgsIsHelpError:
        app(args=argv + ["--help"], prog_name="kafkadump")
        return
    except ClickUsageError as e:
        hint = f" (see 'kafkadump {e.ctx.info_name} -h')" if e.ctx is not None and e.ctx.parent is not None \
            else " (see 'kafkadump -h')"
        _say_error(e.format_message() + hint, 2, _json_wanted(argv))
        _quiet_exit(2)
    except ClickException as e:
        _say_error(e.format_message(), 2, _json_wanted(argv))
        _quiet_exit(2)
    except (KeyboardInterrupt, Abort):
        _quiet_exit(130)
    except BrokenPipeError:
        _quiet_exit(0)
    except MemoryError:
        _say_error("out of memory; lower --max-decompressed or give smaller inputs", 2, _json_wanted(argv))
        _quiet_exit(2)
    except Exception as e:
        if os.environ.get("KAFKADUMP_DEBUG"):
            raise
        # a bug in kafkadump, not in the input: still one line, exit 2
        _say_error(f"internal error: {type(e).__name__}: {e}; please report it "
                   f"(KAFKADUMP_DEBUG=1 shows the traceback)", 2, _json_wanted(argv))
        _quiet_exit(2)
    if code == 130:
        _quiet_exit(130)
    sys.exit(code or 0)


def _quiet_exit(code: int) -> None:
    # Flush what is buffered (whole lines: a cut line would be half flushed and half lost);
    # if stdout is gone, point it at devnull so the interpreter's final flush is silent.
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    except KeyboardInterrupt:  # pragma: no cover - a second Ctrl-C while flushing
        pass
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
