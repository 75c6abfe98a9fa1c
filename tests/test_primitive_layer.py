"""One layer of primitive readers (kafkadump.decoders.batches.primitives) under the record, protocol and
internal-topic decoders; encoders only in tests/primitive_encoders.py."""

from __future__ import annotations

import primitive_encoders as E
import pytest

from kafkadump.decoders.batches import primitives as P
from kafkadump.base.findings import Code
from kafkadump.base.findings import DecodeError
from kafkadump.base.findings import Truncated
from kafkadump.decoders.internal_topics.record_decoder import decoder_for
from kafkadump.decoders.protocol.decoder import Overrun
from kafkadump.decoders.protocol.decoder import State
from kafkadump.decoders.protocol.decoder import uvarint


def test_the_library_has_no_encoders():
    assert not [name for name in dir(P) if name.startswith("encode_") or name.startswith("zigzag")]
    assert E.encode_int32(-2) == b"\xff\xff\xff\xfe"


def test_unchecked_readers_and_length_prefixes():
    buf = b"\xAA" + E.encode_int16(-3) + E.encode_int32(70000) + E.encode_int64(-(1 << 40))
    assert (P.int16_at(buf, 1), P.int32_at(buf, 3), P.int64_at(buf, 7)) == (-3, 70000, -(1 << 40))
    assert P.decode_length(E.encode_int16(-1), 0, 2, False, False) == (-1, 2)
    assert P.decode_length(E.encode_int32(9), 0, 4, False, True) == (9, 4)
    assert P.decode_length(b"\x00", 0, 1, True, False) == (-1, 1)      # compact null
    assert P.decode_length(b"\x81\x01", 0, 2, True, False) == (128, 2)
    with pytest.raises(Truncated):
        P.decode_length(b"\x00", 0, 1, False, True)
    assert P.take(b"xyz", 1, 2, 3, "BYTES") == (b"yz", 3)


@pytest.mark.parametrize("raw,reason", [("8080808080", "is longer than 5 bytes"),
                                        ("ffffffff1f", "exceeds 32 bits")])
def test_malformed_varint_says_why(raw, reason):
    buf = b"\x00\x00" + bytes.fromhex(raw)
    with pytest.raises(P.MalformedVarint) as ei:
        P.decode_unsigned_varint(buf, 2, len(buf))
    assert (ei.value.offset, ei.value.reason, ei.value.code) == (2, reason, Code.RECORD_MALFORMED)


def _state(base: int = 100) -> State:
    return State([], None, base, None, "-", False, False)


def test_protocol_reader_maps_primitive_errors():
    with pytest.raises(Overrun) as ei:
        uvarint(b"\x80\x80", 0, 2, _state(), "body.x")
    assert ei.value.offset == 100 and ei.value.message == "body.x: length varint at 100 runs past the end"
    with pytest.raises(DecodeError) as ei:
        uvarint(b"\x80\x80\x80\x80\x80\x01", 0, 6, _state(), "body.x", "tag")
    assert not isinstance(ei.value, Overrun) and ei.value.code is Code.FIELD_MALFORMED
    assert ei.value.message == "body.x: tag varint at 100 is longer than 5 bytes"


def test_protocol_fixed_reader_overrun_message():
    from kafkadump.decoders.protocol.decoder import decode_message

    found: list = []
    value, stop = decode_message("RequestHeader", 1, b"\x00\x01\x00", findings=found, base=7)
    assert (value, stop) == ({"requestApiKey": 1}, 2)
    assert [(f.code, f.offset, f.message) for f in found] == [
        (Code.FIELD_MALFORMED, 9, "body.requestApiVersion: int16 needs 2 bytes at 9, 1 left")]


def test_internal_frame_varint_through_the_same_reader():
    # a KRaft frame whose apiKey varint has more than 32 bits
    d = decoder_for("metadata").decode(None, b"\x01\xff\xff\xff\xff\x1f\x00", False)
    (f,) = d.findings
    assert f.code is Code.INTERNAL_MALFORMED and f.offset == 1
    assert f.message == "metadata record frame: apiKey varint at byte 1 exceeds 32 bits"
    d = decoder_for("metadata").decode(None, b"\x01\x80", False)
    assert [x.message for x in d.findings] == ["metadata record frame: apiKey varint at byte 1 runs past the end"]
