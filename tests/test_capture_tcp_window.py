"""The bytes a TCP direction keeps to judge a resend: the last RECENT delivered, whatever it holds.

A direction holds up to RECENT_HELD delivered bytes (trimmed back to RECENT only past that, so the
buffer is not copied per segment), and a resend is compared with the last RECENT of them only: a
resend further back is a ``tcp-retransmission`` that could not be compared, one within them a
``tcp-overlap-conflict`` when its bytes differ, exactly at the window's edge and after any number of
trims.
"""

from __future__ import annotations

import pytest

from kafkadump.base.findings import Code
from kafkadump.sources.pcap import RECENT, RECENT_HELD, HalfStream, Packet


class _Sink:
    def deliver(self, half, offset, data, packet):
        pass

    def gap(self, half, offset, length, finding):
        pass


def _packet(seq: int, data: bytes) -> Packet:
    return Packet(1, 0.0, "10.0.0.1", "10.0.0.2", 5000, 9092, seq & 0xFFFFFFFF, 0x10, data, 0, 0)


def _stream(total: int) -> tuple[HalfStream, bytes]:
    """A direction that delivered ``total`` bytes (a pattern) in segments of 1000."""
    half = HalfStream(_Sink(), ("10.0.0.1", 5000))
    sent = bytes(i * 7 % 251 for i in range(total))
    for at in range(0, total, 1000):
        half.segment(_packet(100 + at, sent[at:at + 1000]))
    return half, sent


@pytest.mark.parametrize("total", [RECENT - 500, RECENT + 1500, RECENT_HELD + 2500, 3 * RECENT_HELD + 700])
@pytest.mark.parametrize("back", [10, 700, RECENT - 100, RECENT, RECENT + 1, RECENT + 900])
def test_a_resend_is_compared_with_the_last_recent_bytes_only(total, back):
    half, sent = _stream(total)
    assert len(half.recent) <= RECENT_HELD and bytes(half.recent)[-min(total, RECENT):] == sent[-RECENT:]
    start = total - back
    if start < 0:
        return
    length = min(100, back)
    same, changed = sent[start:start + length], bytes(b ^ 0xFF for b in sent[start:start + length])
    for data, differs in ((same, False), (changed, True)):
        half.notes = []
        half.segment(_packet(100 + start, data))
        (note,) = half.notes
        comparable = back <= min(total, RECENT)
        assert note.code is (Code.TCP_CONFLICT if comparable and differs else Code.TCP_RETRANSMISSION)
        assert note.offset == start and note.length == length
