"""Kafka's internal topics, decoded: consumer offsets, transactions, KRaft metadata, share state,
remote log metadata.

Decoding only: nothing here prints.  The record batches come from the
shared decoder (:mod:`kafkadump.decoders.batches`); the keys and values inside them
are decoded by the generated schema tables through the one schema decoder
(:mod:`kafkadump.decoders.protocol.decoder`).  The layouts are in
:mod:`kafkadump.decoders.internal_topics.record_decoder`.

    from kafkadump.decoders.internal_topics.kinds import kind_from_path
    from kafkadump.decoders.internal_topics.record_decoder import decoder_for
    from kafkadump.decoders.internal_topics.summary import summarize

    kind = kind_from_path(path)                # "offsets", ..., or None
    dec = decoder_for(kind)
    decoded = [dec.decode_record(r, batch) for batch in batches for r in batch.records]
    summary = summarize(kind, decoded)         # JSON-ready dict: groups and offsets, transactions, ...

Importing :mod:`kafkadump.decoders.internal_topics.kinds` is cheap (it reads nothing and
imports nothing heavy), so callers may ask :func:`kind_from_path` about every
file.
"""
