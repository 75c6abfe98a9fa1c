"""The segment walk's trackers hand the partition fold typed results, with the builders' facts.

Segments come from tests/logdir_helpers.py (kafka-python's encoder); every
expected value is the builders' own bookkeeping.
"""

from logdir_helpers import ABORT, COMMIT, Seg, batch, control, flip, name, write

from kafkadump.base.findings import Code
from kafkadump.reports.scan import scan_segment
from kafkadump.decoders.logfiles.trackers import (
    AbortedTxn,
    EpochStart,
    Marker,
    ProducerRun,
    SegmentDigest,
    SequencePoint,
    TxnStart,
    check_sequence,
)


def digest_of(tmp_path, seg: Seg, base: int = 0, data=None) -> SegmentDigest:
    log = write(tmp_path / "orders-0" / name(base, ".log"), seg.data if data is None else data)
    [scan] = scan_segment(str(log))
    assert isinstance(scan.digest, SegmentDigest)
    return scan.digest


def test_offsets_epochs_and_producers(tmp_path):
    s = Seg([batch(10, 3, pid=5, epoch=0, seq=0), batch(13, 2, pid=5, epoch=0, seq=3, leader_epoch=1),
             batch(17, 4, pid=5, epoch=0, seq=9, leader_epoch=1)])        # offsets 15..16 and sequences 5..8 skip
    d = digest_of(tmp_path, s, base=10)
    o = d.offsets
    assert (o.base, o.first, o.first_position, o.last) == (10, 10, 0, 20)
    assert (o.batches, o.records, o.offset_gaps, o.missing, o.damaged_ranges, o.crc_failures) == (3, 9, 1, 2, 0, 0)
    assert not o.ends_damaged
    assert d.epochs == [EpochStart(0, 10, 0), EpochStart(1, 13, s.at(1))]
    assert d.producers == {5: ProducerRun(first=SequencePoint(0, 0, 10, 0, 0), epoch=0, last_sequence=12,
                                          last_offset=20, last_position=s.at(2), missing_at=2, batches=3)}
    assert d.sequence_gaps_explained == 1       # the sequence gap comes with missing offsets: no finding


def test_transactions(tmp_path):
    s = Seg([batch(0, 2, pid=7, epoch=0, seq=0, txn=True), control(2, ABORT, pid=7, epoch=0),
             batch(3, 2, pid=7, epoch=0, seq=2, txn=True), control(5, ABORT, pid=7, epoch=0),
             batch(6, 1, pid=8, epoch=0, seq=0, txn=True), control(7, COMMIT, pid=9, epoch=0)])
    d = digest_of(tmp_path, s)
    t7, t8, t9 = d.transactions[7], d.transactions[8], d.transactions[9]
    assert t7.first_marker == Marker("ABORT", 2, s.at(1), TxnStart(0, 0), 0) and t7.open is None
    assert d.aborted == [AbortedTxn(7, 3, 5, s.at(3), s.at(2))]
    assert t8.open == TxnStart(6, s.at(4)) and t8.first_marker is None
    assert t9.first_marker == Marker("COMMIT", 7, s.at(5), None, 0)
    assert list(d.producers) == [7, 8, 9]


def test_damage_is_counted_and_ends_the_segment(tmp_path):
    s = Seg([batch(0, 3), batch(3, 2), batch(5, 4)])
    d = digest_of(tmp_path, s, data=flip(s.data, s.at(2) + 70))
    o = d.offsets
    assert (o.batches, o.last, o.crc_failures, o.damaged_ranges, o.damaged_bytes) == (2, 4, 1, 1, s.batches[2].size)
    assert o.ends_damaged


def test_check_sequence_says_when_a_gap_is_explained():
    found = []
    assert check_sequence(found.append, 5, 0, 9, 100, 0, 2, explained=True) is True
    assert found == []
    assert check_sequence(found.append, 5, 0, 9, 100, 0, 2, explained=False) is False
    assert [(f.code, f.offset) for f in found] == [(Code.SEQUENCE_GAP, 153)]
    assert check_sequence(found.append, 5, 1, 0, 200, 0, 2, explained=False) is False      # new epoch from 0
    assert check_sequence(found.append, 5, 0, 1, 300, 0, 2, explained=True) is False       # backwards
    assert [f.code for f in found] == [Code.SEQUENCE_GAP, Code.SEQUENCE_ORDER]
