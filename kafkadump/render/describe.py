"""Values to human text: codec names, attribute bits, times, byte previews.

Used by the table, dump-log and hexdump renderers; JSON keeps raw values.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

from kafkadump.decoders.batches.compression import CODEC_NAMES

if TYPE_CHECKING:
    from kafkadump.decoders.batches.model import Batch

ATTRIBUTE_BITS_V2 = (
    (0x08, "LogAppendTime"),
    (0x10, "transactional"),
    (0x20, "control"),
    (0x40, "deleteHorizon"),
)


def codec_name(codec: int) -> str:
    return CODEC_NAMES[codec] if 0 <= codec < len(CODEC_NAMES) else f"unknown({codec})"


def describe_attributes(attributes: int, magic: int = 2) -> str:
    """``0x0013`` -> ``codec lz4 | transactional``."""
    parts = [f"codec {codec_name(attributes & 7)}"]
    if magic >= 2:
        for bit, name in ATTRIBUTE_BITS_V2:
            if attributes & bit:
                parts.append(name)
        if attributes & 0xFF80:
            parts.append(f"unused bits 0x{attributes & 0xFF80:04x}")
    elif magic == 1:
        if attributes & 0x08:
            parts.append("LogAppendTime")
        if attributes & 0xF0:
            parts.append(f"unused bits 0x{attributes & 0xF0:02x}")
    elif attributes & 0xF8:
        parts.append(f"unused bits 0x{attributes & 0xF8:02x}")
    return " | ".join(parts)


def flags(b: Batch) -> str:
    """Short flag string for a batch row: T transactional, C control, D delete horizon."""
    out = ""
    if b.is_transactional:
        out += "T"
    if b.is_control:
        out += "C"
    if b.has_delete_horizon:
        out += "D"
    return out or "-"


def iso_ms(ms: int | None) -> str:
    """Epoch milliseconds as ISO-8601 UTC; out-of-range values as the raw number."""
    if ms is None:
        return "-"
    if ms < 0:
        return str(ms)
    try:
        t = datetime.fromtimestamp(ms / 1000.0, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


_LINE_BREAKS = str.maketrans("", "", "\n\t\r")


def preview(b: bytes | None, width: int = 40) -> str:
    """Bytes as readable text for a table cell: UTF-8 if it is (newlines and tabs shown as
    ``\\n`` ``\\t``), else hex."""
    if b is None:
        return "null"
    try:
        s = b.decode("utf-8")
        if not s.isprintable() and s.translate(_LINE_BREAKS).isprintable():
            s = s.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
        if s.isprintable():
            return s if len(s) <= width else s[: width - 1] + "…"
    except UnicodeDecodeError:
        pass
    h = "0x" + b.hex()
    return h if len(h) <= width else h[: width - 1] + "…"


def crc_verdict(valid: bool | None) -> str:
    return "-" if valid is None else ("ok" if valid else "BAD")
