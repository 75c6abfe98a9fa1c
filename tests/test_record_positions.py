"""Key and value positions are kept on the record by the decoders, not re-derived.

The old re-derivation re-encoded the record's varints minimally, so a record
written with longer varints (legal: a reader takes any encoding of the
value) got its key placed wrongly, and findings inside the key landed on the
wrong byte.  The control-record key and marker are read by one module
(:mod:`kafkadump.decoders.batches.control`) for both the batch and internal decoders.
"""

from __future__ import annotations

import gzip
import struct

import builders as bld
import pytest
from test_hardening import v2_raw

from kafkadump.decoders.batches import iter_batches
from kafkadump.decoders.batches.control import decode_control
from kafkadump.decoders.batches.control import read_control_key
from kafkadump.decoders.batches.control import read_end_txn_marker
from kafkadump.base.findings import Code
from kafkadump.decoders.internal_topics.record_decoder import decoder_for
from kafkadump.decoders.internal_topics.record_decoder import record_locations


def records_of(data: bytes) -> list:
    return [(b, r) for b in iter_batches(data) for r in (b.records or ())]


def source_bytes(data: bytes, b, codec: int) -> bytes:
    """What a record's positions index: the file, or the batch's decompressed payload."""
    payload = data[b.position + 61:b.next_position]
    if codec == 0:
        return data
    if codec == bld.GZIP:
        return gzip.decompress(payload)
    import zstandard

    return zstandard.ZstdDecompressor().decompressobj().decompress(payload)


@pytest.mark.parametrize("codec", [0, bld.GZIP, bld.ZSTD])
def test_v2_positions_point_at_the_bytes(codec):
    data = bld.simple_batch(0, 2).data + bld.simple_batch(100, 4, codec=codec).data
    recs = records_of(data)
    assert len(recs) == 6
    for b, r in recs:
        src = source_bytes(data, b, b.codec)
        assert src[r.key_position:r.key_position + len(r.key)] == r.key
        assert src[r.value_position:r.value_position + len(r.value)] == r.value
        fields = bld.record_fields(src, r.position)
        assert (r.key_position, r.value_position) == (fields["key"], fields["value"])


def test_legacy_positions_plain_and_wrapped():
    plain = bld.legacy_message(5, b"value-5", key=b"key-5", magic=1)
    inner = [bld.legacy_message(i, f"v{i}".encode(), key=f"k{i}".encode(), magic=1) for i in range(3)]
    wrapper, _ = bld.legacy_wrapper(8, inner, magic=1)
    data = plain + wrapper
    (b0, r0), *wrapped = records_of(data)
    assert r0.source == "file" and data[r0.key_position:r0.key_position + 5] == b"key-5"
    assert data[r0.value_position:r0.value_position + 7] == b"value-5"
    inner_bytes = b"".join(inner)
    for i, (_, r) in enumerate(wrapped):
        assert r.source == "decompressed"
        assert inner_bytes[r.key_position:r.key_position + 2] == f"k{i}".encode()
        assert inner_bytes[r.value_position:r.value_position + 2] == f"v{i}".encode()


def _long_varint_record(key: bytes, value: bytes) -> bytes:
    """One v2 record whose varints are written longer than needed (two bytes each)."""
    def zz2(v: int) -> bytes:  # zig-zag, always two bytes
        u = (v << 1) ^ (v >> 31)
        assert u < 1 << 14
        return bytes([(u & 0x7F) | 0x80, u >> 7])

    body = b"\x00" + zz2(0) + zz2(0) + zz2(len(key)) + key + zz2(len(value)) + value + zz2(0)
    return zz2(len(body)) + body


def test_positions_with_non_minimal_varints_and_exact_findings():
    key = struct.pack(">h", 99) + b"xy"   # an offsets-topic key of an unknown record type
    rec = _long_varint_record(key, b"\x00\x01")
    data = bld.simple_batch(0, 1).data
    at = len(data)
    data += v2_raw(rec, base_offset=1)
    (_, _), (b, r) = records_of(data)
    # 61-byte header, 2-byte length, attributes, timestampDelta (2), offsetDelta (2), keyLength (2)
    assert r.key_position == at + 61 + 2 + 1 + 2 + 2 + 2
    assert data[r.key_position:r.key_position + len(key)] == key
    assert r.value_position == r.key_position + len(key) + 2
    assert record_locations(r, b) == ((r.key_position, "file", None), (r.value_position, "file", None))
    d = decoder_for("offsets").decode_record(r, b)
    unknown = [f for f in d.findings if f.code is Code.INTERNAL_TYPE_UNKNOWN]
    assert len(unknown) == 1 and unknown[0].offset == r.key_position


def test_findings_in_a_compressed_batch_anchor_at_its_payload():
    key = struct.pack(">h", 99) + b"xy"
    layout = bld.v2_batch(0, [bld.Rec(key, b"\x00\x01")], codec=bld.GZIP)
    (b, r), = records_of(layout.data)
    assert r.source == "decompressed" and record_locations(r, b)[0] == (r.key_position, "decompressed", 61)
    f = [f for f in decoder_for("offsets").decode_record(r, b).findings if f.code is Code.INTERNAL_TYPE_UNKNOWN]
    assert [(x.offset, x.source_offset) for x in f] == [(61, r.key_position)]


# --- control records: one reader ------------------------------------------------------------------------------

def test_control_reader():
    assert read_control_key(struct.pack(">hh", 0, 1)) == (0, 1)
    assert read_control_key(b"\x00\x00\x01") is None and read_control_key(None) is None
    assert read_end_txn_marker(struct.pack(">hi", 0, 7)) == (0, 7)
    assert read_end_txn_marker(b"\x00" * 5) is None
    assert decode_control(struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 9)) == (
        {"type": "ABORT", "version": 0, "valueVersion": 0, "coordinatorEpoch": 9}, [])
    ctl, problems = decode_control(struct.pack(">hh", 0, 1), None)
    assert ctl == {"type": "COMMIT", "version": 0}
    assert problems == [(Code.CONTROL_MALFORMED, "value", "COMMIT marker value is null")]
    ctl, problems = decode_control(struct.pack(">hh", 0, 42), b"")
    assert ctl == {"type": "UNKNOWN(42)", "version": 0} and [p[0] for p in problems] == [Code.CONTROL_UNKNOWN]
    assert decode_control(b"\x00", None) == ({"type": None}, [(Code.CONTROL_MALFORMED, "key",
                                                                "control record key shorter than 4 bytes")])


def test_control_batch_and_internal_decoder_agree():
    layout = bld.control_batch(10, 1)
    (b, r), = records_of(layout.data)
    assert r.control == {"type": "COMMIT", "version": 0, "valueVersion": 0, "coordinatorEpoch": 7}
    d = decoder_for("offsets").decode_record(r, b)
    assert d.control == "COMMIT" and not d.findings
    assert d.value.data == {"version": 0, "coordinatorEpoch": 7}
    # a short marker: the batch decoder's finding at the value's first byte
    short = bld.control_batch(10, 0, value=b"\x00\x00\x00")
    (b, r), = records_of(short.data)
    f = [f for f in b.findings if f.code is Code.CONTROL_MALFORMED]
    assert len(f) == 1 and f[0].offset == r.value_position
