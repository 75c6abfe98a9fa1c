"""The files of a Kafka log dir besides segments' batches: names, indexes, producer snapshots,
checkpoints and other text files; the trackers a segment walk feeds; carving intact batches out.

Decoding only: nothing here prints.  Record batches go through :mod:`kafkadump.decoders.batches`.
"""
