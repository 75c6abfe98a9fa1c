"""Mutation tests: for every finding code, damage a valid segment in the one way
that should produce it, and check

* ``finding``:   the code appears at the exact absolute offset the format says
                 (and ``decompressedOffset`` for bytes inside compressed data),
                 with the right severity, and no unexpected other codes;
* ``recovery``:  every batch the damage did not touch still decodes, at its
                 (shifted) position, with the same offsets and record values,
                 and the walk tiles the file exactly;
* ``inside``:    every finding lies inside the batch or gap that carries it;
* ``cli``:       ``kafkadump batches --json`` exits 1 (0 when only info codes
                 are expected), prints only JSON lines, and shows the
                 decoder's findings.

Valid segments are the shipped fixtures (encoded by kafka-python) or
segments from ``builders`` (a small independent encoder).  Expected offsets
are worked out from the format, never by decoding.  A case whose check the
decoder currently gets wrong carries ```` and runs as a
strict xfail for that check only.
"""

from __future__ import annotations

import gzip
import json
import struct
from dataclasses import dataclass, field, replace

import builders as bld
import pytest
from builders import GZIP, LZ4, SNAPPY, T0, ZSTD, Rec, fix_crc, patch
from conftest import FIXTURES, load_json
from typer.testing import CliRunner

from kafkadump.cli import app
from kafkadump.decoders.batches import Batch
from kafkadump.decoders.batches import Gap
from kafkadump.decoders.batches import Options
from kafkadump.decoders.batches import iter_batches
from kafkadump.base.findings import Code
from kafkadump.base.findings import Severity

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

# The spec's severities, restated here so a silent change is caught.
EXPECTED_SEVERITY = {
    Code.TRUNCATED: E, Code.LENGTH_INVALID: E, Code.UNKNOWN_MAGIC: E, Code.GARBAGE: E,
    Code.ZERO_PADDING: I, Code.CRC_MISMATCH: E, Code.UNKNOWN_CODEC: E, Code.RESERVED_ATTRIBUTES: W,
    Code.RECORD_COUNT_MISMATCH: E, Code.OFFSET_DELTA_MISMATCH: W, Code.TIMESTAMP_MISMATCH: W,
    Code.TRAILING_BYTES: E, Code.HEADER_INVALID: E, Code.RECORD_MALFORMED: E, Code.CONTROL_MALFORMED: E,
    Code.CONTROL_UNKNOWN: W, Code.DECOMPRESSION_FAILED: E, Code.DECOMPRESSION_LIMIT: E,
    Code.LZ4_LEGACY_CHECKSUM: I, Code.NESTING_TOO_DEEP: E, Code.NESTED_COMPRESSION: W,
    Code.INNER_OFFSETS: W, Code.OFFSET_ORDER: W, Code.LENGTH_REPAIRED: E,
}


# --- expectations -----------------------------------------------------------------------

@dataclass(frozen=True)
class Exp:
    """A batch that must come through the damage unchanged."""

    position: int
    size: int
    base_offset: int
    last_offset: int
    records: tuple  # (offset, timestamp, key, value)


def _hex(h):
    return None if h is None else bytes.fromhex(h)


def _fixture(name: str):
    data = (FIXTURES / f"{name}.log").read_bytes()
    exp = load_json(FIXTURES / f"{name}.expect.json")
    exps = [Exp(b["position"], b["size"], b["baseOffset"], b["lastOffset"],
                tuple((r["offset"], r["timestamp"], _hex(r["key"]), _hex(r["value"])) for r in b["records"]))
            for b in exp["batches"]]
    return data, exps


V2, V2X = _fixture("segment-v2/00000000000000000000")      # 14 v2 batches
MIX, MIXX = _fixture("segment-mixed/00000000000000000000")  # magic 0, 1, 2


class Seg:
    """A segment built from :class:`builders.Layout` pieces, with its expectations."""

    def __init__(self, *layouts):
        self.layouts = list(layouts)
        self.pos = []
        p = 0
        for lay in self.layouts:
            self.pos.append(p)
            p += lay.size
        self.data = b"".join(lay.data for lay in self.layouts)
        self.exps = [Exp(p, lay.size, lay.base_offset, lay.last_offset, tuple(lay.records))
                     for p, lay in zip(self.pos, self.layouts)]


def survivors(exps, damaged=(), at=None, delta=0, end=None):
    """``exps`` minus the damaged ones, positions at or after ``at`` moved by ``delta``."""
    out = []
    for i, e in enumerate(exps):
        if i in damaged:
            continue
        pos = e.position + (delta if at is not None and e.position >= at else 0)
        if end is not None and pos + e.size > end:
            continue
        out.append(replace(e, position=pos))
    return out


def v2_seg(target: bld.Layout | bytes):
    """Ordinary batches around ``target`` (index 1): offsets 0-2, target, 6-8 (none), 9-11 (gzip)."""
    a = bld.simple_batch(0, tag="a")
    c = bld.simple_batch(6, tag="c")
    d = bld.simple_batch(9, tag="d", codec=GZIP, value_size=30)
    tb = target.data if isinstance(target, bld.Layout) else target
    seg = Seg(a, c, d)
    data = a.data + tb + c.data + d.data
    return data, a.size, survivors(seg.exps, at=a.size, delta=len(tb))


def plain_legacy(offset, value, *, magic=1, key=None):
    data = bld.legacy_message(offset, value, magic=magic, key=key)
    return bld.Layout(data, magic, offset, offset, [(offset, T0 if magic else None, key, value)])


def legacy_seg(target: bytes, magic: int = 1):
    """Legacy messages 0 and 1, ``target`` (offsets 2..4), a magic-1 message 5, a v2 batch 6-8."""
    head = [plain_legacy(0, b"m-0", magic=magic), plain_legacy(1, b"m-1", magic=magic)]
    tail = [plain_legacy(5, b"m-5"), bld.simple_batch(6, tag="v2")]
    seg = Seg(*head, *tail)
    at = seg.pos[2]
    data = seg.data[:at] + target + seg.data[at:]
    return data, at, survivors(seg.exps, at=at, delta=len(target))


# --- cases ------------------------------------------------------------------------------

@dataclass
class Case:
    id: str
    code: Code
    data: bytes
    offset: int
    intact: list
    decompressed: int | None = None        # expected decompressedOffset (None: the bytes are in the file)
    length: int | None = None              # expected finding length, when the format fixes it
    also: frozenset | None = frozenset()   # the other codes expected (None: not checked)
    options: dict = field(default_factory=dict)
    bugs: dict = field(default_factory=dict)  # check name -> reason (strict xfail)


CASES: list[Case] = []


def case(id, code, data, offset, intact, *, also=(), **kw):
    CASES.append(Case(id, code, bytes(data), offset, intact,
                      also=None if also is None else frozenset(also), **kw))


def flip(data: bytes, pos: int, mask: int = 0xFF) -> bytes:
    b = bytearray(data)
    b[pos] ^= mask
    return bytes(b)


def v2_records(data: bytes, pos: int) -> list[int]:
    """Record start positions of the uncompressed v2 batch at ``pos``."""
    (length,) = struct.unpack_from(">i", data, pos + 8)
    return bld.record_starts(data, pos + 61, pos + 12 + length)


def _set_batch_length(layout_bytes: bytes, payload: bytes) -> bytes:
    """The v2 batch with its records payload replaced (length and CRC made right)."""
    buf = bytearray(layout_bytes[:61] + payload)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    fix_crc(buf, 0)
    return bytes(buf)


# truncated ---------------------------------------------------------------------------------
last = V2X[13]
cut = last.position + 100
case("truncated/v2-cut-inside-last-batch", Code.TRUNCATED, V2[:cut], last.position,
     survivors(V2X, {13}), length=100)
cut = last.position + 10
case("truncated/v2-cut-inside-header", Code.TRUNCATED, V2[:cut], last.position,
     survivors(V2X, {13}), length=10)
cut = MIXX[9].position + 60  # inside the magic-1 gzip wrapper with LogAppendTime
case("truncated/legacy-cut-inside-wrapper", Code.TRUNCATED, MIX[:cut], MIXX[9].position,
     survivors(MIXX, end=cut), length=60)
_inner = [bld.legacy_message(0, b"t-2"), bld.legacy_message(1, b"t-3"), bld.legacy_message(2, b"t-4")]
_w, _wpos = bld.legacy_wrapper(4, _inner[:2] + [_inner[2][:-5]])
_data, _at, _ok = legacy_seg(_w)
case("truncated/legacy-inner-message-cut", Code.TRUNCATED, _data, _at + bld.legacy_value_start(1), _ok,
     decompressed=_wpos[2])

# length-invalid -------------------------------------------------------------------------------
# (the stored CRC is damaged too: a batch whose only damage is its length is recovered, length-repaired below)
p = V2X[6].position
case("length-invalid/batchLength-10", Code.LENGTH_INVALID, patch(patch(V2, p + 8, ">i", 10), p + 17, ">I", 1), p + 8,
     survivors(V2X, {6}), also={Code.GARBAGE})
p = V2X[3].position
case("length-invalid/batchLength-past-EOF-then-intact-batches", Code.LENGTH_INVALID,
     patch(patch(V2, p + 8, ">i", 10_000_000), p + 17, ">I", 1), p + 8, survivors(V2X, {3}), also={Code.GARBAGE})
p = MIXX[3].position
case("length-invalid/legacy-message_size-5", Code.LENGTH_INVALID, patch(MIX, p + 8, ">i", 5), p + 8,
     survivors(MIXX, {3}), also={Code.GARBAGE})
_b = bld.simple_batch(3)
_data, _at, _ok = v2_seg(_b)
case("length-invalid/batchLength+5-runs-into-next-batch", Code.LENGTH_INVALID,
     patch(patch(_data, _at + 8, ">i", _b.size - 12 + 5), _at + 17, ">I", 1), _at + 8, _ok, also=None,
     )

# length-repaired: the length alone is damaged; the stored CRC-32C over the bytes up to the next intact
# batch (or the end) confirms the batch, which is decoded whole, the length it should have had
p = V2X[6].position
case("length-repaired/batchLength-10", Code.LENGTH_REPAIRED, patch(V2, p + 8, ">i", 10), p + 8,
     survivors(V2X, {6}), also=set(), length=4)
p = V2X[3].position
case("length-repaired/batchLength-past-EOF-then-intact-batches", Code.LENGTH_REPAIRED,
     patch(V2, p + 8, ">i", 10_000_000), p + 8, survivors(V2X, {3}), also=set())
case("length-repaired/batchLength+5-runs-into-next-batch", Code.LENGTH_REPAIRED,
     patch(_data, _at + 8, ">i", _b.size - 12 + 5), _at + 8, _ok, also=set())
p = V2X[-1].position
case("length-repaired/last-batch-length-past-the-end", Code.LENGTH_REPAIRED,
     patch(V2, p + 8, ">i", 70_000), p + 8, survivors(V2X, {len(V2X) - 1}), also=set())

# unknown-magic ----------------------------------------------------------------------------------
p = V2X[3].position
case("unknown-magic/v2-magic-7", Code.UNKNOWN_MAGIC, patch(V2, p + 16, ">b", 7), p + 16,
     survivors(V2X, {3}), also={Code.GARBAGE})
p = MIXX[1].position
case("unknown-magic/legacy-magic-3", Code.UNKNOWN_MAGIC, patch(MIX, p + 16, ">b", 3), p + 16,
     survivors(MIXX, {1}), also={Code.GARBAGE})

# garbage --------------------------------------------------------------------------------------------
at = V2X[5].position
junk = bytes(range(1, 38))  # byte 16 of the junk reads as magic 17
case("garbage/37-bytes-between-batches", Code.GARBAGE, V2[:at] + junk + V2[at:], at,
     survivors(V2X, at=at, delta=len(junk)), length=len(junk), also={Code.UNKNOWN_MAGIC})
junk = b"\xab" * 5
case("garbage/5-bytes-between-batches", Code.GARBAGE, V2[:at] + junk + V2[at:], at,
     survivors(V2X, at=at, delta=len(junk)), length=len(junk), also=None,
     )
at = MIXX[4].position
junk = bytes(range(100, 140))
case("garbage/legacy-40-bytes-between-messages", Code.GARBAGE, MIX[:at] + junk + MIX[at:], at,
     survivors(MIXX, at=at, delta=len(junk)), length=len(junk), also={Code.UNKNOWN_MAGIC})

# zero-padding ---------------------------------------------------------------------------------------
case("zero-padding/4096-zero-tail", Code.ZERO_PADDING, (FIXTURES / "damaged/padded.log").read_bytes(),
     len(V2), V2X, length=4096)
case("zero-padding/5-zero-bytes", Code.ZERO_PADDING, MIX + bytes(5), len(MIX), MIXX, length=5)

# crc-mismatch -----------------------------------------------------------------------------------------
p = V2X[1].position
big = V2X[1].records[1][3]  # the 256-byte value
vpos = V2.index(big, p)
case("crc-mismatch/v2-value-byte-flipped", Code.CRC_MISMATCH, flip(V2, vpos + 100), p + 17, survivors(V2X, {1}))
p = MIXX[1].position
vpos = MIX.index(MIXX[1].records[0][3], p + 18)
case("crc-mismatch/legacy-value-byte-flipped", Code.CRC_MISMATCH, flip(MIX, vpos), p + 12, survivors(MIXX, {1}))

# unknown-codec -----------------------------------------------------------------------------------------
p = V2X[2].position
case("unknown-codec/v2-codec-6", Code.UNKNOWN_CODEC, patch(V2, p + 21, ">h", 6, crc_at=p), p + 21,
     survivors(V2X, {2}))
p = MIXX[4].position  # a plain magic-1 message
case("unknown-codec/legacy-codec-5", Code.UNKNOWN_CODEC, patch(MIX, p + 17, ">b", 5, crc_at=p), p + 17,
     survivors(MIXX, {4}))
p = MIXX[3].position  # a plain magic-1 message with a value
case("unknown-codec/legacy-codec-4-zstd-does-not-exist-before-v2", Code.UNKNOWN_CODEC,
     patch(MIX, p + 17, ">b", 4, crc_at=p), p + 17, survivors(MIXX, {3}),
     )

# reserved-attributes ----------------------------------------------------------------------------------------
p = V2X[7].position
case("reserved-attributes/v2-bit-8", Code.RESERVED_ATTRIBUTES, patch(V2, p + 21, ">h", 0x100, crc_at=p), p + 21,
     survivors(V2X, {7}))
p = MIXX[3].position
case("reserved-attributes/legacy-magic1-bit-4", Code.RESERVED_ATTRIBUTES, patch(MIX, p + 17, ">b", 0x10, crc_at=p),
     p + 17, survivors(MIXX, {3}))
p = MIXX[0].position
case("reserved-attributes/legacy-magic0-bit-3", Code.RESERVED_ATTRIBUTES, patch(MIX, p + 17, ">b", 0x08, crc_at=p),
     p + 17, survivors(MIXX, {0}))

# record-count-mismatch -----------------------------------------------------------------------------------------
p = V2X[0].position
case("record-count-mismatch/recordCount+1", Code.RECORD_COUNT_MISMATCH,
     patch(V2, p + 57, ">i", 6, crc_at=p), p + 57, survivors(V2X, {0}))

# offset-delta-mismatch ---------------------------------------------------------------------------------------------
_recs = [Rec(b"a", b"1"), Rec(b"b", b"2", offset_delta=2), Rec(b"c", b"3", offset_delta=1)]
_b = bld.v2_batch(3, _recs, last_offset_delta=2)
_data, _at, _ok = v2_seg(_b)
case("offset-delta-mismatch/deltas-0-2-1", Code.OFFSET_DELTA_MISMATCH, _data, _at + _b.record_positions[2], _ok)
p = V2X[0].position
case("offset-delta-mismatch/lastOffsetDelta-too-small", Code.OFFSET_DELTA_MISMATCH,
     patch(V2, p + 23, ">i", 3, crc_at=p), v2_records(V2, p)[4], survivors(V2X, {0}))
_b = bld.v2_batch(3, _recs, last_offset_delta=2, codec=GZIP)
_data, _at, _ok = v2_seg(_b)
case("offset-delta-mismatch/deltas-0-2-1-gzip", Code.OFFSET_DELTA_MISMATCH, _data, _at + 61, _ok,
     decompressed=_b.record_positions[2],
     )

# timestamp-mismatch ---------------------------------------------------------------------------------------------------
p = V2X[0].position
case("timestamp-mismatch/maxTimestamp-below-a-record", Code.TIMESTAMP_MISMATCH,
     patch(V2, p + 35, ">q", T0 + 3000, crc_at=p), p + 35, survivors(V2X, {0}))
p = V2X[13].position
case("timestamp-mismatch/maxTimestamp-above-every-record", Code.TIMESTAMP_MISMATCH,
     patch(V2, p + 35, ">q", 1_700_000_200_000, crc_at=p), p + 35, survivors(V2X, {13}),
     )

# trailing-bytes ---------------------------------------------------------------------------------------------------------
p = V2X[0].position
_starts = v2_records(V2, p)
case("trailing-bytes/recordCount-1", Code.TRAILING_BYTES, patch(V2, p + 57, ">i", 4, crc_at=p), _starts[4],
     survivors(V2X, {0}), length=p + V2X[0].size - _starts[4])
p = V2X[2].position  # gzip, 4 records
_plain = gzip.decompress(V2[p + 61:p + V2X[2].size])
_starts = bld.record_starts(_plain, 0, len(_plain))
case("trailing-bytes/recordCount-1-gzip", Code.TRAILING_BYTES, patch(V2, p + 57, ">i", 3, crc_at=p), p + 61,
     survivors(V2X, {2}), decompressed=_starts[3], length=len(_plain) - _starts[3])

# header-invalid -----------------------------------------------------------------------------------------------------------
p = V2X[13].position
case("header-invalid/negative-recordCount", Code.HEADER_INVALID, patch(V2, p + 57, ">i", -1, crc_at=p), p + 57,
     survivors(V2X, {13}))
p = V2X[0].position
case("header-invalid/lastOffsetDelta--1-with-records", Code.HEADER_INVALID, patch(V2, p + 23, ">i", -1, crc_at=p),
     p + 23, survivors(V2X, {0}), also={Code.OFFSET_DELTA_MISMATCH})

# record-malformed ----------------------------------------------------------------------------------------------------------
_b = bld.simple_batch(3)
_data, _at, _ok = v2_seg(_b)
_r1 = bld.record_fields(_data, _at + _b.record_positions[1])
case("record-malformed/record-length-3", Code.RECORD_MALFORMED,
     patch(_data, _r1["length"], ">B", 6, crc_at=_at),  # zig-zag 6 = 3, below the 6-byte minimum
     _r1["length"], _ok, also={Code.RECORD_COUNT_MISMATCH})
case("record-malformed/negative-key-length", Code.RECORD_MALFORMED,
     patch(_data, _r1["keyLength"], ">B", 3, crc_at=_at),  # zig-zag 3 = -2
     _r1["keyLength"], _ok, also={Code.RECORD_COUNT_MISMATCH})
case("record-malformed/key-length-exceeds-record-length", Code.RECORD_MALFORMED,
     patch(_data, _r1["keyLength"], ">B", 120, crc_at=_at),  # zig-zag 120 = 60, the record is 15 bytes
     _r1["keyLength"], _ok, also={Code.RECORD_COUNT_MISMATCH},
     )
_m = bytearray(bld.legacy_message(3, b"value-3", key=b"kk"))
struct.pack_into(">i", _m, 26, 50)
fix_crc(_m, 0)
_data, _at, _ok = legacy_seg(bytes(_m))
case("record-malformed/legacy-key-length-exceeds-message", Code.RECORD_MALFORMED, _data, _at + 26, _ok,
     also={Code.GARBAGE})
_m = bld.legacy_message(3, None, attributes=GZIP)  # a gzip wrapper whose value is null
_data, _at, _ok = legacy_seg(_m)
case("record-malformed/legacy-wrapper-with-null-value", Code.RECORD_MALFORMED, _data,
     _at + bld.legacy_value_start(1) - 4, _ok,  # the value length field (-1)
     )

# control-malformed / control-unknown ---------------------------------------------------------------------------------------
_b = bld.control_batch(3, 1, key=b"\x00\x00")
_data, _at, _ok = v2_seg(_b)
case("control-malformed/key-2-bytes", Code.CONTROL_MALFORMED, _data,
     bld.record_fields(_data, _at + 61)["key"], _ok)
_b = bld.control_batch(3, 0, value=b"\x00\x00\x00")
_data, _at, _ok = v2_seg(_b)
case("control-malformed/abort-value-3-bytes", Code.CONTROL_MALFORMED, _data,
     bld.record_fields(_data, _at + 61)["value"], _ok)
p = V2X[10].position  # the COMMIT marker
_key = bld.record_fields(V2, p + 61)["key"]
case("control-unknown/type-99", Code.CONTROL_UNKNOWN, patch(V2, _key + 2, ">h", 99, crc_at=p), _key,
     survivors(V2X, {10}))

# decompression-failed ---------------------------------------------------------------------------------------------------------
p = V2X[2].position
case("decompression-failed/gzip-trailer-crc", Code.DECOMPRESSION_FAILED,
     patch(flip(V2, p + V2X[2].size - 6), p, ">q", V2X[2].base_offset, crc_at=p), p + 61, survivors(V2X, {2}),
     length=V2X[2].size - 61)
for _codec, _name in ((GZIP, "gzip"), (SNAPPY, "snappy"), (LZ4, "lz4"), (ZSTD, "zstd")):
    _b = bld.simple_batch(3, codec=_codec, value_size=40)
    _junk = b"this is not %s data, not at all" % _name.encode()
    _data, _at, _ok = v2_seg(_set_batch_length(_b.data, _junk))
    case(f"decompression-failed/{_name}-junk-payload", Code.DECOMPRESSION_FAILED, _data, _at + 61, _ok,
         length=len(_junk))
    _cut = _b.data[61:-4]
    _data, _at, _ok = v2_seg(_set_batch_length(_b.data, _cut))
    case(f"decompression-failed/{_name}-payload-cut-short", Code.DECOMPRESSION_FAILED, _data, _at + 61, _ok,
         length=len(_cut),
         )
p = MIXX[2].position  # magic-0 gzip wrapper
_vstart = p + bld.legacy_value_start(0)
_end = p + MIXX[2].size
case("decompression-failed/legacy-gzip-wrapper", Code.DECOMPRESSION_FAILED,
     patch(flip(MIX, _end - 6), p, ">q", MIXX[2].last_offset, crc_at=p), _vstart, survivors(MIXX, {2}),
     length=_end - _vstart)

# decompression-limit ------------------------------------------------------------------------------------------------------------
for _codec, _name in ((GZIP, "gzip"), (SNAPPY, "snappy"), (LZ4, "lz4"), (ZSTD, "zstd")):
    _b = bld.simple_batch(3, codec=_codec, value_size=400)  # ~1250 bytes decompressed
    _data, _at, _ok = v2_seg(_b)
    case(f"decompression-limit/{_name}-over-1000-byte-cap", Code.DECOMPRESSION_LIMIT, _data, _at + 61, _ok,
         length=_b.size - 61, options={"max_decompressed": 1000})
_w, _ = bld.legacy_wrapper(4, [bld.legacy_message(i, b"L" * 600) for i in range(3)])
_data, _at, _ok = legacy_seg(_w)
case("decompression-limit/legacy-gzip-wrapper", Code.DECOMPRESSION_LIMIT, _data, _at + bld.legacy_value_start(1),
     _ok, length=len(_w) - bld.legacy_value_start(1), options={"max_decompressed": 1000})

# lz4-legacy-checksum ---------------------------------------------------------------------------------------------------------------
_w = bld.kafka_python_legacy_lz4(0, [(2, None, b"lz-2"), (3, b"k", b"lz-3"), (4, None, b"lz-4")])
_data, _at, _ok = legacy_seg(_w, magic=0)
case("lz4-legacy-checksum/kafka-python-magic0-lz4-wrapper", Code.LZ4_LEGACY_CHECKSUM, _data,
     _at + bld.legacy_value_start(0), _ok)

# nested-compression / nesting-too-deep -------------------------------------------------------------------------------------------------
# Outer magic-1 snappy wrapper (offset 4) holding a gzip wrapper and a plain message.  The inner
# relative offsets are written equal to the absolute ones so that every reading of nested offsets
# gives 2, 3, 4.
_mid, _ = bld.legacy_wrapper(3, [bld.legacy_message(2, b"n-2"), bld.legacy_message(3, b"n-3")])
_outer, _opos = bld.legacy_wrapper(4, [_mid, bld.legacy_message(4, b"n-4")], codec=SNAPPY)
_data, _at, _ok = legacy_seg(_outer)
case("nested-compression/gzip-wrapper-inside-snappy-wrapper", Code.NESTED_COMPRESSION, _data,
     _at + bld.legacy_value_start(1), _ok, decompressed=_opos[0])
case("nesting-too-deep/two-levels-max-depth-1", Code.NESTING_TOO_DEEP, _data, _at + bld.legacy_value_start(1), _ok,
     decompressed=_opos[0], also={Code.NESTED_COMPRESSION}, options={"max_depth": 1},
     )

# inner-offsets --------------------------------------------------------------------------------------------------------------------------
_w, _ipos = bld.legacy_wrapper(4, [bld.legacy_message(o, b"i-%d" % o) for o in (0, 2, 1)])
_data, _at, _ok = legacy_seg(_w)
case("inner-offsets/magic1-relative-offsets-0-2-1", Code.INNER_OFFSETS, _data, _at + bld.legacy_value_start(1),
     _ok, decompressed=_ipos[2])
_w, _ = bld.legacy_wrapper(5, [bld.legacy_message(o, b"i-%d" % o, magic=0) for o in (2, 3, 4)], magic=0)
_data, _at, _ok = legacy_seg(_w, magic=0)
# the next message (offset 5) is the wrapper's claimed last offset: not "after" it, so offset-order too
_ok = [e for e in _ok if e.base_offset != 5]
case("inner-offsets/magic0-wrapper-offset-is-not-last-inner", Code.INNER_OFFSETS, _data,
     _at + bld.legacy_value_start(0), _ok, also={Code.OFFSET_ORDER})

# offset-order -------------------------------------------------------------------------------------------------------------------------------
p = V2X[8].position
case("offset-order/baseOffset-goes-backwards", Code.OFFSET_ORDER, patch(V2, p, ">q", 0), p, survivors(V2X, {8}))
e = V2X[5]
case("offset-order/batch-written-twice", Code.OFFSET_ORDER,
     V2[:e.position + e.size] + V2[e.position:e.position + e.size] + V2[e.position + e.size:], e.position + e.size,
     survivors(V2X, at=e.position + e.size, delta=e.size))
p = MIXX[4].position
case("offset-order/legacy-offset-goes-backwards", Code.OFFSET_ORDER, patch(MIX, p, ">q", 2), p,
     survivors(MIXX, {4}))


# --- running the checks ---------------------------------------------------------------------------------------------------------------------

def _params(check: str):
    out = []
    for c in CASES:
        marks = ()
        if check in c.bugs:
            marks = pytest.mark.xfail(strict=True, reason="BUG: " + c.bugs[check])
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


_decoded: dict = {}


def decode(c: Case):
    if c.id not in _decoded:
        _decoded[c.id] = list(iter_batches(c.data, "mut", options=Options(**c.options)))
    return _decoded[c.id]


def _all_findings(items):
    return [f for it in items for f in it.findings]


@pytest.mark.parametrize("c", _params("finding"))
def test_finding(c: Case):
    findings = _all_findings(decode(c))
    seen = [(f.code.value, f.offset, f.source_offset) for f in findings]
    hits = [f for f in findings if f.code is c.code]
    assert hits, f"no {c.code.value} finding; got {seen}"
    at = [f for f in hits if (f.offset, f.source_offset) == (c.offset, c.decompressed)]
    assert at, (f"{c.code.value} expected at offset {c.offset} decompressedOffset {c.decompressed}; "
                f"got {[(f.offset, f.source_offset, f.message) for f in hits]}")
    for f in hits:
        assert f.severity is EXPECTED_SEVERITY[c.code]
    if c.length is not None:
        assert at[0].length == c.length, at[0].message
    if c.also is not None:
        assert {f.code for f in findings} == {c.code} | c.also, seen


@pytest.mark.parametrize("c", _params("recovery"))
def test_recovery(c: Case):
    items = decode(c)
    # the walk tiles the input: no byte skipped or counted twice
    p = 0
    for it in items:
        assert it.position == p, (it.position, p)
        p += it.size
    assert p == len(c.data)
    batches = {it.position: it for it in items if isinstance(it, Batch)}
    assert c.intact, "a case needs undamaged batches to check"
    for e in c.intact:
        b = batches.get(e.position)
        assert b is not None, f"no batch at {e.position}: {[(type(i).__name__, i.position) for i in items]}"
        assert b.findings == [], (e.position, b.findings)
        assert b.crc_valid
        assert (b.size, b.base_offset, b.last_offset) == (e.size, e.base_offset, e.last_offset)
        got = tuple((r.offset, r.timestamp, None if r.key is None else bytes(r.key),
                     None if r.value is None else bytes(r.value)) for r in b.records)
        assert got == e.records, e.position


@pytest.mark.parametrize("c", _params("inside"))
def test_findings_inside_their_item(c: Case):
    for it in decode(c):
        for f in it.findings:
            assert it.position <= f.offset < it.position + it.size, (
                f"{f.code.value} at {f.offset} outside its {type(it).__name__} "
                f"[{it.position}, {it.position + it.size})")


_FLAGS = {"max_decompressed": "--max-decompressed", "max_depth": "--max-depth"}


@pytest.mark.parametrize("c", _params("cli"))
def test_cli_batches_json(c: Case, tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(c.data)
    args = ["batches", "--json", str(path)]
    for k, v in c.options.items():
        args += [_FLAGS[k], str(v)]
    result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.stdout.splitlines()
    assert lines
    docs = [json.loads(line) for line in lines]  # every line is JSON
    assert all(isinstance(d, dict) and d["type"] in ("batch", "gap") for d in docs)
    shown = [(f["code"], f["severity"], f["offset"], f.get("decompressedOffset"))
             for d in docs for f in d["findings"]]
    decoded = [(f.code.value, f.severity.value, f.offset, f.source_offset) for f in _all_findings(decode(c))]
    assert shown == decoded
    assert c.code.value in {s[0] for s in shown}
    info_only = all(EXPECTED_SEVERITY[code] is I for code in {c.code} | (c.also or set()))
    assert result.exit_code == (0 if info_only else 1), result.stderr


def _declared_elsewhere() -> dict:
    """``MUTATION_CODES = {...}`` declared at module level by other test files.

    Read with ``ast`` (nothing is imported): feature test modules that own
    the mutation tests of their codes (protocol, log dir, ...) say so there.
    """
    import ast
    from pathlib import Path

    out = {}
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        if path.name == Path(__file__).name:
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MUTATION_CODES"
                                                    for t in node.targets):
                for code in ast.literal_eval(node.value):
                    out[code] = path.name
    return out


def test_every_code_has_a_mutation():
    covered = {c.code.value for c in CASES}
    elsewhere = _declared_elsewhere()
    assert set(elsewhere) <= {c.value for c in Code}, "MUTATION_CODES names a code that does not exist"
    missing = {c.value for c in Code} - covered - set(elsewhere)
    assert not missing, f"finding codes without a mutation test: {sorted(missing)}"


def test_case_ids_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


def test_builders_xxh32_matches_reference():
    xxhash = pytest.importorskip("xxhash")
    for data in (b"", b"\x04\x22\x4d\x18\x60\x40", bytes(range(40)), b"kafka" * 30):
        assert bld.xxh32(data) == xxhash.xxh32(data).intdigest()


def test_nested_wrapper_offsets_are_made_absolute_first():
    # outer magic-1 wrapper, offset 4, inner relative offsets 0 (a gzip wrapper of two) and 1
    mid, _ = bld.legacy_wrapper(0, [bld.legacy_message(0, b"n-2"), bld.legacy_message(1, b"n-3")])
    outer, _ = bld.legacy_wrapper(4, [mid, bld.legacy_message(1, b"n-4")], codec=SNAPPY)
    data, at, _ = legacy_seg(outer)
    items = list(iter_batches(data, "nested"))
    b = next(i for i in items if i.position == at)
    # wrapper offset 4, last inner relative 1: the nested wrapper is at 3, so its two messages are 2 and 3
    assert [r.offset for r in b.records] == [2, 3, 4]
    assert Code.OFFSET_ORDER not in {f.code for f in b.findings}
