"""What kind of file is this, and opening the files of batches a command reads.

:func:`sniff` says what a file holds, from its name and first bytes;
:func:`open_segments` opens each path read-only, refuses (as an
:class:`~kafkadump.base.errors.InputError`, exit 2) a file that is plainly not
record batches, with the command to use instead (the walkers release the
file's mapped pages as they pass them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from enum import Enum
from typing import BinaryIO

from kafkadump.base.errors import InputError
from kafkadump.base.status import Tally
from kafkadump.decoders.batches.primitives import ByteBuffer
from kafkadump.decoders.batches.walk import find_next_batch
from kafkadump.decoders.logfiles import names
from kafkadump.sources.capture_magic import is_capture
from kafkadump.sources.segment import Segment, open_segment

SNIFF_BYTES = 65536

# what read_capture_input gives: the bytes of a pcap or of raw frames, or the text of a hex dump
CaptureData = ByteBuffer | str

_NOT_SEGMENT = {names.OFFSET_INDEX: "an offset index", names.TIME_INDEX: "a time index",
                names.TXN_INDEX: "a transaction index", names.PRODUCER_SNAPSHOT: "a producer-state snapshot",
                names.LEADER_EPOCH_CHECKPOINT: "a checkpoint file", names.PARTITION_METADATA: "a partition.metadata file",
                names.OFFSET_CHECKPOINT: "a checkpoint file", names.META_PROPERTIES: "a meta.properties file",
                names.QUORUM_STATE: "a quorum-state file"}


class InputKind(str, Enum):
    """What a file holds, as far as its name and first bytes tell."""

    EMPTY_SEGMENT = "empty-segment"    # an empty .log or KRaft snapshot: a real, empty segment
    EMPTY = "empty"                    # any other empty file
    CAPTURE = "capture"                # pcap / pcapng
    LOG_DIR_FILE = "log-dir-file"      # an index, snapshot, checkpoint ... holding no batch
    TEXT = "text"                      # text holding no batch (hex dump, properties)
    BATCHES = "batches"                # record batches or legacy message sets (maybe damaged)


def looks_like_text(head: bytes) -> bool:
    """Printable text (no NUL, nearly all printable ASCII or UTF-8): never a segment's first bytes."""
    if b"\x00" in head:
        return False
    printable = sum(1 for b in head if 32 <= b < 127 or b in (9, 10, 13) or b >= 0x80)
    return printable >= len(head) * 0.95


def sniff(path: str, buf: ByteBuffer, size: int) -> InputKind:
    """The kind of the file at ``path`` whose bytes are ``buf`` (``size`` of them).

    The name decides only when the bytes agree: a file named ``.index`` that
    does hold batches is :attr:`InputKind.BATCHES`.  A file named as a
    segment is decoded as one whatever its head (erased flash, a log line
    written over it): garbage, then the batches after it.
    """
    kind = names.classify(path).kind
    if size == 0:
        return InputKind.EMPTY_SEGMENT if kind in (names.SEGMENT, names.KRAFT_SNAPSHOT) else InputKind.EMPTY

    head = bytes(buf[:SNIFF_BYTES])
    if is_capture(head[:4]):
        return InputKind.CAPTURE
    if kind in (names.SEGMENT, names.KRAFT_SNAPSHOT):
        return InputKind.BATCHES  # named as a segment: decoded as one (garbage, then resync)
    if kind in _NOT_SEGMENT and find_next_batch(buf, 0, size, limit=SNIFF_BYTES) is None:
        return InputKind.LOG_DIR_FILE
    if looks_like_text(head) and find_next_batch(buf, 0, size, limit=SNIFF_BYTES) is None:
        return InputKind.TEXT
    return InputKind.BATCHES


def check_batches(path: str, seg: Segment) -> None:
    """Raise :class:`InputError` with what to do instead when ``seg`` plainly holds no batches."""
    kind = sniff(path, seg.buf, seg.size)
    if kind is InputKind.EMPTY:
        raise InputError(f"{path}: empty file, nothing to decode (give a segment file or a file of batches)")
    if kind is InputKind.CAPTURE:
        raise InputError(f"{path}: is a pcap/pcapng capture, not a segment; use 'kafkadump capture {path}'")
    if kind is InputKind.LOG_DIR_FILE:
        what = _NOT_SEGMENT[names.classify(path).kind]
        raise InputError(f"{path}: is {what} (by its name and bytes), not a segment; use 'kafkadump dump {path}'")
    if kind is InputKind.TEXT:
        raise InputError(f"{path}: is text, not record batches; for a hex dump use 'kafkadump capture {path}', "
                         f"for a checkpoint or properties file 'kafkadump dump {path}'")


def open_segments(paths: Iterable[str], tally: Tally | None = None) -> Iterator[tuple[str, Segment]]:
    """``(path, segment)`` for each path, the file closed after its turn.

    An unreadable path or a file that is not batches raises :class:`InputError`;
    with a ``tally`` and several paths, it is kept there and the rest is read.
    """
    paths = list(paths)
    for path in paths:
        try:
            seg = _opened_batches(path)
        except InputError as e:
            if tally is None or len(paths) < 2:
                raise
            tally.input_errors.append(str(e))
            continue
        try:
            yield path, seg
        finally:
            seg.close()


def _opened_batches(path: str) -> Segment:
    seg = open_segment(path)
    try:
        check_batches(path, seg)
    except InputError:
        seg.close()
        raise
    return seg




MAX_STDIN = 1 << 30


class CaptureKind(str, Enum):
    """What a capture input is."""

    PCAP = "pcap"       # pcap or pcapng
    TEXT = "text"       # a hex dump in one of the common text forms
    BINARY = "binary"   # raw frame bytes (or a bare record batch)


def read_capture_input(path: str, stdin: BinaryIO | None = None
                       ) -> tuple[CaptureKind, CaptureData, Callable[[], None] | None]:
    """``(kind, data, close)`` for ``capture``: ``data`` is the mapping (or stdin's bytes), or the
    text of a hex dump; ``close`` releases the mapping (None for stdin)."""
    buf: ByteBuffer
    close: Callable[[], None] | None
    if path == "-":
        assert stdin is not None, "path '-' reads the stdin given"
        buf = stdin.read(MAX_STDIN + 1)
        if len(buf) > MAX_STDIN:
            raise InputError(f"-: more than {MAX_STDIN} bytes on stdin; give the file's path instead")
        close = None
    else:
        seg = open_segment(path)
        buf, close = seg.buf, seg.close
    if not len(buf):
        _closed(close)
        raise InputError(f"{path}: empty: no capture, hex dump or frame to read")
    if is_capture(bytes(buf[:4])):
        return CaptureKind.PCAP, buf, close
    from kafkadump.sources.hextext import MAX_TEXT  # (here: a pcap does not pay for the hex reader's import)
    from kafkadump.sources.hextext import looks_like_text as looks_like_hex_text

    if looks_like_hex_text(bytes(buf[:SNIFF_BYTES])):
        if len(buf) > MAX_TEXT:
            raise InputError(f"{path}: hex text larger than {MAX_TEXT} bytes")
        return CaptureKind.TEXT, bytes(buf).decode("ascii", "replace"), close  # a non-ASCII line: named as not hex
    if _prose(bytes(buf[:SNIFF_BYTES])):
        _closed(close)
        raise InputError(f"{path}: text that is not a hex dump: not a pcap or pcapng capture, a hex dump or "
                         "frame bytes")
    return CaptureKind.BINARY, buf, close


def _prose(head: bytes) -> bool:
    """Text (printable UTF-8, tabs and line ends) that is not a frame: a frame starts with a
    size whose first byte is zero for anything under 16 MiB, never a printable character."""
    if len(head) < 4 or head[0] < 0x20:
        return False
    text = head.decode("utf-8", "ignore")
    return len(text.encode()) >= len(head) - 3 and text.translate(_LINE_ENDS).isprintable()


_LINE_ENDS = str.maketrans("", "", "\t\n\r")


def _closed(close: Callable[[], None] | None) -> None:
    if close is not None:
        close()


__all__ = ["InputKind", "sniff", "check_batches", "open_segments", "looks_like_text", "CaptureKind",
           "read_capture_input"]
