"""A batch and its record stream form no reference cycle, so a walk frees each batch (and the
mapped or decompressed bytes its stream reads) as soon as the caller drops it, not when the
cycle collector next runs (which kept about 150-200 batches alive: 256 MB of 1 MB batches)."""

from __future__ import annotations

import gc

from forensics_builders import kv_batch

from kafkadump.decoders.batches.batch import RecordStream
from kafkadump.decoders.batches.model import STREAM_RECORDS
from kafkadump.decoders.batches.walk import iter_batches

# Batches of more records than are kept as a list: their records stream on both paths.
SEGMENT = b"".join(kv_batch(n * 2 * STREAM_RECORDS, [(b"k", b"v%d" % i) for i in range(2 * STREAM_RECORDS)]).data
                   for n in range(3))


def test_walk_leaves_no_cycles_to_collect() -> None:
    gc.collect()
    gc.disable()
    try:
        streams = 0
        for b in iter_batches(SEGMENT, "seg.log"):
            streams += isinstance(b.records, RecordStream)
            assert sum(1 for _ in b.records) == 2 * STREAM_RECORDS
        unreachable = gc.collect()
    finally:
        gc.enable()
    assert (streams, unreachable) == (3, 0)


def test_stream_reads_the_same_records_after_the_batch_is_gone() -> None:
    kept = [(b.records, [r.offset for r in b.records]) for b in iter_batches(SEGMENT, "seg.log")]
    assert [offsets[0] for _, offsets in kept] == [0, 2 * STREAM_RECORDS, 4 * STREAM_RECORDS]
    for stream, offsets in kept:
        assert [r.offset for r in stream] == offsets
