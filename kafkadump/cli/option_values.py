"""What the shared options turn into, without typer: the choices, :class:`Output`, :class:`InputLimits`.

:mod:`.option_groups` declares the options for typer and builds these values
with :data:`GROUP_BUILDERS`; the fast path (:mod:`.fast_path`) builds them with
the same functions.  Cheap to import: no typer, no dataclasses, no rich.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable

from kafkadump.base.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console

    from kafkadump.decoders.batches import Options
    from kafkadump.decoders.payloads.view import PayloadRequest
    from kafkadump.render.table import TableLayout


class Format(str, Enum):
    table = "table"
    json = "json"
    dump_log = "dump-log"
    blocks = "blocks"


class Encoding(str, Enum):
    auto = "auto"
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


class As(str, Enum):
    """capture --as: what pasted bytes are."""
    request = "request"
    response = "response"
    records = "records"


# the kinds dump --type can name (logdir.names' kinds that dump decodes)
DUMPABLE_KINDS = ("segment", "offset-index", "time-index", "txn-index", "producer-snapshot",
                  "leader-epoch-checkpoint", "partition-metadata", "offset-checkpoint", "meta-properties",
                  "quorum-state", "kraft-snapshot")
FileType = Enum("FileType", {t.replace("-", "_"): t for t in DUMPABLE_KINDS}, type=str)  # type: ignore[misc]
# txn --state: the states a transaction is listed in
TxnState = Enum("TxnState", {s: s for s in ("committed", "aborted", "ongoing", "hanging")}, type=str)  # type: ignore[misc]

# the choice types of the options, by name (the fast path's option table names them)
CHOICES: dict[str, type[Enum]] = {"Format": Format, "Encoding": Encoding, "Decode": Decode, "As": As,
                                  "FileType": FileType, "TxnState": TxnState}


def output_format(json_flag: bool, fmt: Format | None) -> Format:
    """``--json`` or ``--format``, refusing the two when they disagree (default: table)."""
    if json_flag:
        if fmt not in (None, Format.json):
            raise UsageError("--json and --format " + fmt.value + " contradict each other")
        return Format.json
    return fmt or Format.table


def console_for(color: bool | None) -> Console | None:
    """A rich console for styled tables on a terminal, else None (plain text)."""
    if color is None:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    if not color:
        return None
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True, force_terminal=True)


# --cols: bytes per hexdump row, at most (as xxd -c)
MAX_HEX_COLS = 256


def hex_cols(cols: int | None) -> int | None:
    """``--cols``, checked: 1 to :data:`MAX_HEX_COLS` bytes per row (anything else a usage error)."""
    if cols is not None and not 1 <= cols <= MAX_HEX_COLS:
        raise UsageError(f"--cols {cols}: a hexdump row holds 1 to {MAX_HEX_COLS} bytes")
    return cols


def terminal_width(console: Console | None) -> int | None:
    """The width a hexdump fits: the terminal's when stdout is one (the console's, or without
    colour the terminal's size); None when it is not (the lines scripts have always read)."""
    if not sys.stdout.isatty():
        return None
    if console is not None:
        return console.width
    import shutil

    return shutil.get_terminal_size().columns


class _Value:
    """Equality and repr by the fields in ``__slots__``, like a frozen dataclass (without its import cost)."""

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({inner})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def _init(self, **fields: object) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)


class InputLimits(_Value):
    """``--max-decompressed``, ``--max-depth``, ``--max-ratio``, ``--max-scan``."""

    __slots__ = ("max_decompressed", "max_depth", "max_ratio", "max_scan")
    max_decompressed: int
    max_depth: int
    max_ratio: int | None
    max_scan: int | None

    def __init__(self, max_decompressed: int, max_depth: int, max_ratio: int | None = None,
                 max_scan: int | None = None) -> None:
        self._init(max_decompressed=max_decompressed, max_depth=max_depth, max_ratio=max_ratio, max_scan=max_scan)

    def options(self, records: bool = True) -> Options:
        """The decoder options these limits give."""
        from kafkadump.decoders.batches.compression import DEFAULT_MAX_RATIO
        from kafkadump.decoders.batches.options import DEFAULT_MAX_SCAN, Options

        return Options(records=records, max_decompressed=self.max_decompressed, max_depth=self.max_depth,
                       max_ratio=DEFAULT_MAX_RATIO if self.max_ratio is None else self.max_ratio,
                       max_scan=DEFAULT_MAX_SCAN if self.max_scan is None else self.max_scan)


class Output(_Value):
    """How a command writes: the format (``--json`` or ``--format``, checked when first asked
    for, inside the command), the byte encoding in JSON, the colour choice."""

    __slots__ = ("json_flag", "format_choice", "encoding", "color", "wide", "columns", "fields")
    json_flag: bool
    format_choice: Format | None
    encoding: str
    color: bool | None
    wide: bool
    columns: str | None
    fields: str | None

    def __init__(self, json_flag: bool, format_choice: Format | None = None, encoding: str = "auto",
                 color: bool | None = None, wide: bool = False, columns: str | None = None,
                 fields: str | None = None) -> None:
        self._init(json_flag=json_flag, format_choice=format_choice, encoding=encoding, color=color, wide=wide,
                   columns=columns, fields=fields)

    @property
    def format(self) -> Format:
        fmt = output_format(self.json_flag, self.format_choice)
        if self.fields is not None and (fmt is not Format.table or self.columns is not None or self.wide):
            raise UsageError("--fields writes tab-separated columns: not with --json, --format, --columns or --wide")
        return fmt

    @property
    def json(self) -> bool:
        return self.format is Format.json

    def console(self) -> Console | None:
        """A rich console for a styled table, else None (plain text)."""
        if self.fields is not None:
            return None   # tab-separated values: plain, whatever the terminal
        return console_for(self.color) if self.format in (Format.table, Format.blocks) else None

    def layout(self, console: Console | None = None) -> TableLayout:
        """Which table columns to show: by priority to fit a terminal's width (``console``), all
        with ``--wide`` or when piped, or the ``--columns`` named."""
        chosen = self.fields if self.fields is not None else self.columns
        names = tuple(n.strip() for n in chosen.split(",") if n.strip()) if chosen else None
        if self.fields is not None and not names:
            raise UsageError("--fields: name at least one column")
        from kafkadump.render.table import TableLayout

        return TableLayout(console.width if console is not None else None, self.wide, names, self.fields is not None)


def build_output(json_: bool, fmt: Format | None = None, encoding: Encoding = Encoding.auto,
                 color: bool | None = None, wide: bool = False, columns: str | None = None,
                 fields: str | None = None) -> Output:
    """The :class:`Output` of the output options' values (by their parameter names)."""
    return Output(json_, fmt, encoding.value, color, wide, columns, fields)


# an option group's name (the command parameter it fills) -> the function that builds its value from
# the group's options (keyword arguments by parameter name); typer and the fast path both use these
GROUP_BUILDERS: dict[str, Callable[..., Any]] = {"limits": InputLimits, "output": build_output}


def payload_request(detect: bool, schemas: list[str] | None, where: str | None, redact: str | None,
                    redact_fields: str | None, redact_secrets: bool) -> PayloadRequest | None:
    """The payload options as one request (a bad --where or --redact is a usage error); None
    when none is given (nothing of the payload modules is imported: start-up stays as it was)."""
    if not (detect or schemas or where is not None or redact or redact_fields or not redact_secrets):
        return None
    from kafkadump.decoders.payloads.view import PayloadRequest, parse_redaction
    from kafkadump.decoders.payloads.where import parse_where
    from kafkadump.objects.records import RecordWhere

    return PayloadRequest(detect, tuple(schemas or ()), None if where is None else RecordWhere(parse_where(where)),
                          parse_redaction(redact, redact_fields, redact_secrets))
