"""One step of the walk: what is at position ``p``, and where the next item starts.

Every batch, whatever its magic, starts with ``offset: INT64, length: INT32``
and has its magic byte at offset 16 (v2: after partitionLeaderEpoch; v0/v1:
after the CRC).  So a step reads 17 bytes, picks the decoder by magic, and
goes on at ``position + 12 + length``.

When the bytes at ``p`` are not a batch (impossible length, unknown magic, a
legacy message whose framing is broken), the step scans forward for the
next position that holds a plausible header whose CRC passes and reports
the skipped bytes as a :class:`Gap` with a finding.  A batch whose CRC fails
but whose length is sane is still stepped past by its length (the length is
outside the CRC, but a following plausible header confirms it); otherwise
the step resyncs.  An all-zero tail is a preallocated segment's unused space
(info finding); a tail shorter than the batch it starts is truncated.

The public API, used by the walkers, the carver and the Spark splitter:

    decode_at(buf, pos, end, file, opt, base=0, budget=None) -> ([Batch | Gap, ...], next)
    decode_item(chunk, magic, file, base, opt, records, spans=None) -> Batch
    intact_batch_at(buf, pos, end, file, opt) -> Batch | None
    length_step(buf, pos, end, opt) -> next | None
    find_next_batch(buf, start, end, limit=None, budget=None) -> position | None
    plausible_at(buf, pos, end, check_crc=True) -> bool
    ScanBudget.for_walk(opt, size) -> ScanBudget | None
"""

from __future__ import annotations

import mmap
import re
import struct
import zlib
from collections.abc import Callable
from types import ModuleType

from kafkadump.accel import compiled
from kafkadump.base.findings import Code, Finding
from kafkadump.decoders.batches.batch import (
    CRC_START,
    HEADER_SIZE,
    MIN_BATCH_LENGTH,
    compiled_records,
    decode_batch,
    plausible_v2_header,
)
from kafkadump.decoders.batches.crc import crc32c
from kafkadump.decoders.batches.inplace import RELEASE_STEP, checksum, page_releaser
from kafkadump.decoders.batches.legacy import LOG_OVERHEAD, MIN_MESSAGE_SIZE, decode_legacy, framing_error
from kafkadump.decoders.batches.model import Batch, Gap, Span
from kafkadump.decoders.batches.options import SCAN_FLOOR, Options
from kafkadump.decoders.batches.primitives import ByteBuffer
from kafkadump.decoders.batches.work import WORK

_PREFIX = struct.Struct(">qi")
_ZERO_CHUNK = 1 << 16
COPY_MAX = 1 << 20  # items up to this size are decoded from a copy; larger ones in place
_MAGIC_BYTE = re.compile(rb"[\x00-\x02]")  # a candidate's byte 16: magic 0, 1 or 2

# the compiled twin of decode_at's step over an intact plain batch (None: pure Python; see kafkadump.accel)
_HOT = compiled("batchstep", batch_class=Batch)


def compiled_step() -> ModuleType | None:
    """The compiled step (``accel/batchstep.c``: ``batch_hop``, ``plain_window``), or None: the pure path."""
    return _HOT


def crc_ok_v2(buf: ByteBuffer, pos: int) -> bool:
    """Is the CRC-32C of the v2 batch at ``pos`` right?  Checked in place."""
    (blen,) = struct.unpack_from(">i", buf, pos + 8)
    (crc,) = struct.unpack_from(">I", buf, pos + 17)
    return checksum(crc32c, buf, pos + CRC_START, pos + 12 + blen) == crc


# what one failed candidate counts against a :class:`ScanBudget` beyond its CRC'd bytes: about the
# Python time of its checks, in bytes of CRC work (so 64 MiB of budget is at most 16,384 candidates)
CANDIDATE_COST = 4096


class ScanBudget:
    """CRC work spent on candidates that turned out not to be intact while resynchronising.

    A hostile file can put a plausible header with a wrong CRC and a length
    reaching the end at every few bytes: checking every candidate's CRC
    would cost quadratic time.  One walk may spend ``limit`` bytes on such
    failed checks (``max_scan`` times the input, at least 64 MiB; each failed
    candidate counts its bytes plus :data:`CANDIDATE_COST`); past
    that, a candidate is accepted when its header is plausible and its
    declared end lands on another plausible header, the end, or padding
    (its CRC is then checked once, by the decoder, like any batch's), and a
    ``scan-limit`` finding says where.  The walk owns its budget; the
    options stay unchanged.
    """

    __slots__ = ("limit", "spent", "hit", "reported")

    def __init__(self, limit: int):
        self.limit = limit
        self.spent = 0
        self.hit: int | None = None
        self.reported = False

    @classmethod
    def for_walk(cls, opt: Options, size: int) -> ScanBudget | None:
        """The budget of a walk over ``size`` bytes (None when ``opt.max_scan`` is 0: no limit)."""
        if not opt.max_scan:
            return None
        return cls(max(SCAN_FLOOR, opt.max_scan * size))


# --- predicates ------------------------------------------------------------------------------------

def _legacy_ok(buf: ByteBuffer, pos: int, end: int) -> bool:
    if pos + LOG_OVERHEAD + 5 > end:
        return False
    _, size = _PREFIX.unpack_from(buf, pos)
    magic = buf[pos + 16]
    if magic not in (0, 1) or size < MIN_MESSAGE_SIZE[magic] or pos + 12 + size > end:
        return False
    if framing_error(buf, pos, end) is not None:
        return False
    (crc,) = struct.unpack_from(">I", buf, pos + 12)
    return checksum(zlib.crc32, buf, pos + 16, pos + 12 + size) == crc


def plausible_at(buf: ByteBuffer, pos: int, end: int, check_crc: bool = True) -> bool:
    """Could a batch or legacy message start at ``pos``?  (With ``check_crc``: and it is intact.)"""
    if pos + 17 > end:
        return False
    magic = buf[pos + 16]
    if magic == 2:
        if not plausible_v2_header(buf, pos, end):
            return False
        return crc_ok_v2(buf, pos) if check_crc else True
    if magic in (0, 1):
        if check_crc:
            return _legacy_ok(buf, pos, end)
        return framing_error(buf, pos, end) is None
    return False


def _next_ok(buf: ByteBuffer, pos: int, end: int) -> bool:
    """Does the end of a batch at ``pos`` look like the start of the next item (or of padding)?"""
    if end - pos < 17:
        return not any(buf[pos:end])  # a few zero bytes: padding, fine
    if not any(buf[pos:pos + 17]):
        return True  # zero padding follows
    return plausible_at(buf, pos, end, check_crc=False)


def _bad_length(buf: ByteBuffer, pos: int, end: int, opt: Options) -> bool:
    _, length = _PREFIX.unpack_from(buf, pos)
    magic = buf[pos + 16]
    minimum = MIN_BATCH_LENGTH if magic == 2 else MIN_MESSAGE_SIZE.get(magic, 0)
    if length < minimum or length > opt.max_batch_bytes:
        return True
    if pos + LOG_OVERHEAD + length > end:
        return True
    if magic == 2 and end - pos < HEADER_SIZE:
        return True
    return False


def length_step(buf: ByteBuffer, pos: int, end: int, opt: Options) -> int | None:
    """Where :func:`decode_at` goes from the v2 batch at ``pos`` whatever its CRC, read from the
    header alone; None when the step needs the decoder (not v2, a length not trusted, or a
    declared end that lands on no plausible header)."""
    if end - pos < 17 or buf[pos + 16] != 2 or _bad_length(buf, pos, end, opt):
        return None
    nxt = pos + 12 + _PREFIX.unpack_from(buf, pos)[1]
    if nxt >= end or _next_ok(buf, nxt, end):
        return nxt
    return None


# --- the next candidate ----------------------------------------------------------------------------

def find_next_batch(buf: ByteBuffer, start: int, end: int, limit: int | None = None,
                    budget: ScanBudget | None = None) -> int | None:
    """Scan forward from ``start`` for an intact batch or message; its position, or None.

    With a ``budget`` (see :class:`ScanBudget`), CRC work on failed candidates is bounded.
    Only positions whose byte 16 is a magic (0, 1, 2) are looked at (found by a regular
    expression, in C) and a declared length that fits no item rejects a candidate at once;
    a run of zero bytes holds no candidate (its lengths are 0) and is skipped whole;
    mapped pages behind the scan are handed back.
    """
    stop = end - 17 if limit is None else min(end - 17, start + limit)
    if stop < start:
        return None
    found, candidates = _scan(buf, start, stop, end, budget)
    WORK.candidates += candidates
    return found


def _scan(buf: ByteBuffer, start: int, stop: int, end: int, budget: ScanBudget | None) -> tuple[int | None, int]:
    """The loop of :func:`find_next_batch`: ``(position or None, candidates looked at)``."""
    search = _MAGIC_BYTE.search
    unpack = _PREFIX.unpack_from
    release = page_releaser(buf) if stop - start > RELEASE_STEP else None
    released = start
    candidates = 0
    p = start
    while p <= stop:
        m = search(buf, p + 16, stop + 17)
        if m is None:
            return None, candidates
        p = m.start() - 16
        candidates += 1
        length = unpack(buf, p)[1]
        if length < 14 or p + 12 + length > end:  # no batch nor message is this short or this long
            if length == 0:
                # length 0: so are the lengths of the candidates inside this zero run
                p = max(p + 1, _zero_run_end(buf, p + 8, stop + 12, release) - 11)
            else:
                p += 1
            continue
        if release is not None and p - released >= RELEASE_STEP:
            release(p)
            released = p
        if _accept(buf, p, end, length, budget):
            return p, candidates
        p += 1
    return None, candidates


def _accept(buf: ByteBuffer, p: int, end: int, length: int, budget: ScanBudget | None) -> bool:
    """Is the candidate at ``p`` (declared ``length``) where the resync stops?"""
    if budget is None:
        return plausible_at(buf, p, end)
    if not plausible_at(buf, p, end, check_crc=False):
        return False
    if budget.spent < budget.limit:
        if plausible_at(buf, p, end):
            return True
        # a failed candidate costs its CRC and a fixed share for the Python work of looking at it
        # (a range packed with short fake headers is dear for its count, not its bytes)
        budget.spent += length + CANDIDATE_COST
        return False
    if _next_ok(buf, p + 12 + length, end):
        if budget.hit is None:
            budget.hit = p
        return True
    return False


# --- one item ----------------------------------------------------------------------------------------

def decode_item(chunk: bytes, magic: int, file: str, base: int, opt: Options, records: bool,
                spans: list[Span] | None = None) -> Batch:
    """Decode the batch (magic 2) or top-level legacy message that is all of ``chunk``.

    The one place where the options' limits reach the decoders.  ``base`` is
    the chunk's absolute position.  With ``spans`` (a list: every field's
    place is recorded) the whole item is decoded, whatever ``opt.select``
    says.  Raises :class:`DecodeError` only when a legacy message's own
    framing is broken.
    """
    if magic == 2:
        select = opt.select if spans is None else None
        return decode_batch(chunk, 0, file, base=base, records=records, max_decompressed=opt.max_decompressed,
                            max_ratio=opt.max_ratio, spans=spans, select=select)
    return decode_legacy(chunk, 0, len(chunk), file, base=base, records=records,
                         max_decompressed=opt.max_decompressed, max_ratio=opt.max_ratio,
                         max_depth=opt.max_depth, spans=spans)


def decode_at(buf: ByteBuffer, pos: int, end: int, file: str, opt: Options, base: int = 0,
              budget: ScanBudget | None = None) -> tuple[list, int]:
    """Decode what is at ``pos``: ``([Batch or Gap, ...], next_position)``.

    The one step of every walk (:func:`~kafkadump.decoders.batches.walk.iter_batches`,
    the verify-crc fast path for anything that is not an intact v2 batch,
    the carver, the Spark splitter).  ``budget`` bounds resync work (see
    :class:`ScanBudget`); positions are ``base`` + position in ``buf``.
    """
    if _HOT is not None:
        plain = _compiled_step(buf, pos, end, file, opt, base)
        if plain is not None:
            return [plain], pos + plain.size
    if end - pos < 17 or buf[pos + 16] not in (0, 1, 2) or _bad_length(buf, pos, end, opt):
        gap = _damage(buf, pos, end, file, base, opt, budget)
        stop = pos + gap.size
        fixed = _length_repaired(buf, pos, stop, end, file, base, opt)
        return [gap if fixed is None else fixed], stop
    magic = buf[pos + 16]
    (_, length) = _PREFIX.unpack_from(buf, pos)
    size = length + LOG_OVERHEAD
    err = framing_error(buf, pos, pos + size) if magic != 2 else None
    if err is not None:
        # the message's own framing is broken (seen in place, nothing copied): treat like damage
        gap = _damage(buf, pos, end, file, base, opt, budget, first=Finding(err.code, base + err.offset, err.message))
        return [gap], pos + gap.size
    b = _decode_in_place(buf, pos, size, magic, file, base, opt)
    nxt = pos + size
    if b.crc_valid is False and nxt < end and not _next_ok(buf, nxt, end):
        return _distrusted_length(buf, pos, nxt, end, file, base, opt, budget, b)
    return [b], nxt


def _compiled_step(buf: ByteBuffer, pos: int, end: int, file: str, opt: Options, base: int) -> Batch | None:
    """What the step below makes of an intact, uncompressed, non-control v2 batch whose header
    and records are plain, by the compiled loops (the same Batch, findings and all); None for
    anything else, which the step below judges."""
    assert _HOT is not None
    got = _HOT.batch_hop(buf, pos, end, opt.max_batch_bytes, COPY_MAX, crc32c, file, base + pos)
    if got is None:
        return None
    b, chunk = got  # (b: what decode_batch_header makes of the header, its computed CRC set)
    WORK.crc_bytes += b.size - CRC_START
    if opt.records and (opt.select is None or opt.select(b)) and \
            not compiled_records(b, chunk, HEADER_SIZE, b.size, "file", base + pos):
        return None
    return b


def _decode_in_place(buf: ByteBuffer, pos: int, size: int, magic: int, file: str, base: int, opt: Options) -> Batch:
    """Decode the item at ``pos`` on ``buf`` itself when its slices are bytes (bytes, a mapping):
    nothing is copied before the checksum and the structure say what the item is worth.  A small
    item (up to :data:`COPY_MAX` bytes) is copied: its records decode faster from bytes."""
    if size <= COPY_MAX or type(buf) is not bytes and not isinstance(buf, mmap.mmap):
        chunk = bytes(buf[pos:pos + size])  # bytearray / memoryview input: records must hold bytes
        return decode_item(chunk, magic, file, base + pos, opt, opt.records)
    if magic == 2:
        return decode_batch(buf, pos, file, base=base, records=opt.records, max_decompressed=opt.max_decompressed,
                            max_ratio=opt.max_ratio, select=opt.select)
    return decode_legacy(buf, pos, pos + size, file, base=base, records=opt.records,
                         max_decompressed=opt.max_decompressed, max_ratio=opt.max_ratio, max_depth=opt.max_depth)


def decode_spanned_at(buf: ByteBuffer, pos: int, size: int, magic: int, file: str, base: int, opt: Options,
                      spans: list[Span]) -> Batch:
    """Decode the item at ``pos`` whole (records included, whatever ``opt.select`` says), recording
    every field's span in ``spans``: in place on bytes or a mapping past :data:`COPY_MAX` (a batch
    declaring 2 GiB is not copied to be shown), else from a copy."""
    if size <= COPY_MAX or type(buf) is not bytes and not isinstance(buf, mmap.mmap):
        return decode_item(bytes(buf[pos:pos + size]), magic, file, base + pos, opt, True, spans)
    if magic == 2:
        return decode_batch(buf, pos, file, base=base, records=True, max_decompressed=opt.max_decompressed,
                            max_ratio=opt.max_ratio, spans=spans)
    return decode_legacy(buf, pos, pos + size, file, base=base, records=True, max_decompressed=opt.max_decompressed,
                         max_ratio=opt.max_ratio, max_depth=opt.max_depth, spans=spans)


def _distrusted_length(buf: ByteBuffer, pos: int, nxt: int, end: int, file: str, base: int, opt: Options,
                       budget: ScanBudget | None, b: Batch) -> tuple[list, int]:
    """CRC failed and the declared end does not land on a batch: the length itself may be damaged.

    Report the batch, then resync from just after its start instead of trusting the length.
    """
    found = find_next_batch(buf, pos + 1, end, opt.resync_window, budget)
    stop = end if found is None else found
    fixed = _length_repaired(buf, pos, stop, end, file, base, opt)
    if fixed is not None:
        return [fixed], stop
    if stop < nxt:
        # an intact batch starts inside the declared length: the length is
        # wrong, and what lies before that batch is not a batch we can trust
        a = base + pos
        return [Gap(file, a, stop - pos, [
            Finding(Code.LENGTH_INVALID, a + 8, f"length {nxt - pos - 12} runs into the intact batch at {base + stop}"),
            Finding(Code.GARBAGE, a, f"skipped {stop - pos} bytes to the next intact batch at {base + stop}",
                    length=stop - pos)])], stop
    if stop > nxt:
        g = Gap(file, base + nxt, stop - nxt,
                [Finding(Code.GARBAGE, base + nxt, f"{stop - nxt} bytes after a damaged batch are not a batch",
                         length=stop - nxt)])
        return [b, g], stop
    return [b], nxt


def _length_repaired(buf: ByteBuffer, pos: int, stop: int, end: int, file: str, base: int,
                     opt: Options) -> Batch | None:
    """The v2 batch at ``pos`` whose only damage is its length field, or None.

    ``stop`` is where the walk resumes (the next intact batch, or the end of the data).  The
    length is outside the CRC: when the stored CRC-32C matches the bytes from ``attributes``
    up to ``stop``, those bytes are the batch, intact but for its length.  It is decoded
    with the length they give (a copy; the input is never changed), keeps the length it
    declares in ``batch_length``, and carries a ``length-repaired`` finding.  One CRC over
    bytes the resync skips anyway: linear work.  Only a batch of at most ``max_decompressed``
    bytes is repaired (its copy is held in memory).
    """
    # the repaired copy is held in memory: no larger than one batch's decompressed bytes may be
    if not HEADER_SIZE <= stop - pos <= min(opt.max_batch_bytes + LOG_OVERHEAD, opt.max_decompressed) \
            or stop > end or buf[pos + 16] != 2:
        return None
    (stored,) = struct.unpack_from(">I", buf, pos + 17)
    if checksum(crc32c, buf, pos + CRC_START, stop) != stored:
        return None
    (declared,) = struct.unpack_from(">i", buf, pos + 8)
    chunk = bytearray(buf[pos:stop])
    struct.pack_into(">i", chunk, 8, stop - pos - LOG_OVERHEAD)
    b = decode_item(bytes(chunk), 2, file, base + pos, opt, opt.records)
    b.batch_length = declared
    where = f"the next intact batch at {base + stop}" if stop < end else "the end of the data"
    b.findings.insert(0, Finding(Code.LENGTH_REPAIRED, base + pos + 8,
                                 f"batchLength {declared} is wrong: the stored CRC-32C matches the bytes from "
                                 f"attributes up to {where}: the batch is intact, with batchLength "
                                 f"{stop - pos - LOG_OVERHEAD}", length=4))
    return b


def intact_batch_at(buf: ByteBuffer, pos: int, end: int, file: str, opt: Options) -> Batch | None:
    """The batch at ``pos`` when the walk would take it as CRC-valid with a known last offset, else None.

    Records are not decoded.
    """
    items, _ = decode_at(buf, pos, end, file, opt.shallow())
    b = items[0]
    if isinstance(b, Batch) and b.crc_valid and b.last_offset is not None:
        return b
    return None


# --- damage ----------------------------------------------------------------------------------------

def _zero_run_end(buf: ByteBuffer, pos: int, end: int, release: Callable[[int], None] | None = None) -> int:
    """First position >= pos that is not a zero byte (or ``end``); on a mapping, the pages
    of a long run are handed back as it is passed."""
    if release is None and end - pos > RELEASE_STEP:
        release = page_releaser(buf)
    p = pos
    released = pos
    while p < end:
        q = min(end, p + _ZERO_CHUNK)
        chunk = bytes(buf[p:q])
        stripped = len(chunk) - len(chunk.lstrip(b"\x00"))
        if stripped < q - p:
            return p + stripped
        p = q
        if release is not None and p - released >= RELEASE_STEP:
            release(p)
            released = p
    return end


def _damage(buf: ByteBuffer, pos: int, end: int, file: str, base: int, opt: Options, budget: ScanBudget | None,
            first: Finding | None = None) -> Gap:
    """Describe the bad bytes at ``pos`` and find where good data resumes."""
    absolute = base + pos
    remaining = end - pos
    # 1. all-zero tail: preallocated segment space
    # (bytes, bytearrays, mappings or memoryviews: the zero run is read through bytes copies of its slices,
    # the resync search through the buffer protocol)
    zend = _zero_run_end(buf, pos, end)
    if zend == end:
        return Gap(file, absolute, remaining,
                   [Finding(Code.ZERO_PADDING, absolute, f"{remaining} zero bytes to the end (preallocated space)",
                            length=remaining)])
    # 2. a header whose declared length runs past the end: truncated tail,
    #    unless an intact batch can be found further on.
    findings = [first] if first is not None else []
    # no candidate starts inside the leading zero run (its lengths are 0): scan from its end
    start = max(pos + 1, zend - 11)
    window = opt.resync_window
    if window is not None:
        window = max(0, window - (start - pos - 1))
    nxt = find_next_batch(buf, start, end, window, budget)
    if budget is not None and budget.hit is not None and not budget.reported:
        budget.reported = True
        findings.append(Finding(Code.SCAN_LIMIT, absolute,
                                f"looking for the next intact batch spent {budget.spent} bytes of CRC checks on "
                                f"candidates that were not (--max-scan); from {base + budget.hit} on, candidates "
                                f"are accepted by their headers", length=remaining))
    if nxt is not None and nxt - pos < 17 and first is None:
        # fewer than 17 junk bytes: there is no header here to describe
        findings.append(Finding(Code.GARBAGE, absolute, f"skipped {nxt - pos} bytes to the next intact batch "
                                                        f"at {base + nxt}", length=nxt - pos))
        return Gap(file, absolute, nxt - pos, findings)
    if nxt is None:
        if first is None:
            findings.append(_describe_head(buf, pos, end, base, tail=True))
        return Gap(file, absolute, remaining, findings)
    if first is None:
        findings.append(_describe_head(buf, pos, end, base, tail=False))
    findings.append(Finding(Code.GARBAGE, absolute, f"skipped {nxt - pos} bytes to the next intact batch at {base + nxt}",
                            length=nxt - pos))
    return Gap(file, absolute, nxt - pos, findings)


def _describe_head(buf: ByteBuffer, pos: int, end: int, base: int, tail: bool) -> Finding:
    """Say why the bytes at ``pos`` are not a batch."""
    absolute = base + pos
    remaining = end - pos
    if remaining < 17:
        if remaining < 12:
            return Finding(Code.TRUNCATED, absolute, f"{remaining} bytes left, too few for a batch header",
                           length=remaining)
        _, length = _PREFIX.unpack_from(buf, pos)
        if 0 <= length and 12 + length <= remaining:
            # every declared byte is here: the length itself is too small to hold a message
            return Finding(Code.LENGTH_INVALID, absolute + 8,
                           f"length {length} is too small for any batch or message", length=4)
        return Finding(Code.TRUNCATED, absolute,
                       f"batch of {length + 12} bytes declared, {remaining} bytes left", length=remaining)
    _, length = _PREFIX.unpack_from(buf, pos)
    magic = buf[pos + 16]
    if magic not in (0, 1, 2):
        return Finding(Code.UNKNOWN_MAGIC, absolute + 16, f"magic byte {magic} is not 0, 1 or 2")
    minimum = MIN_BATCH_LENGTH if magic == 2 else MIN_MESSAGE_SIZE[magic]
    if length < minimum:
        return Finding(Code.LENGTH_INVALID, absolute + 8, f"length {length} below the minimum {minimum}")
    if pos + 12 + length > end:
        if tail:
            return Finding(Code.TRUNCATED, absolute,
                           f"batch of {length + 12} bytes declared, {remaining} bytes left", length=remaining)
        return Finding(Code.LENGTH_INVALID, absolute + 8,
                       f"length {length} runs past the end of the data ({remaining} bytes left)")
    return Finding(Code.LENGTH_INVALID, absolute + 8, f"length {length} is not trusted")


__all__ = ["ScanBudget", "compiled_step", "decode_at", "decode_item", "intact_batch_at", "length_step", "find_next_batch",
           "plausible_at"]
