"""Everything else a Kafka log dir holds, cross-checks across its files, triage and carving.

Decoding only: nothing here prints.  Record batches (segments, KRaft
snapshots) go through the shared decoder in :mod:`kafkadump.decode`.
"""
