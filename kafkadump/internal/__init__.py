"""Kafka's internal topics, decoded: consumer offsets, transactions, KRaft metadata, share state,
remote log metadata.

Decoding only: nothing here prints.  The record batches come from the
shared decoder (:mod:`kafkadump.decode`); the keys and values inside them
are decoded by the generated schema tables through the one schema decoder
(:mod:`kafkadump.protocol.decoder`).  The layouts are in
:mod:`kafkadump.internal.decoder`.

    from kafkadump.internal import kind_from_path, decoder_for, summarize

    kind = kind_from_path(path)                # "offsets", ..., or None
    dec = decoder_for(kind)
    decoded = [dec.decode_record(r, batch) for batch in batches for r in batch.records]
    summary = summarize(kind, decoded)         # JSON-ready dict: groups and offsets, transactions, ...

Importing this package is cheap (names are loaded on first use), so callers
may ask :func:`kind_from_path` about every file.
"""

from .constants import KINDS
from .kinds import kind_from_path, resolve_kind

_LAZY = {
    "Decoder": ".decoder", "decoder_for": ".decoder", "expand_spans": ".decoder",
    "DecodedRecord": ".model", "Part": ".model",
    "Summary": ".summary", "summarize": ".summary",
}


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(mod, __name__), name)
    globals()[name] = value
    return value


__all__ = ["KINDS", "Decoder", "decoder_for", "expand_spans", "kind_from_path", "resolve_kind",
           "DecodedRecord", "Part", "Summary", "summarize"]
