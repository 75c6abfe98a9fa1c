"""Which internal topic a file belongs to, from its path alone (nothing is read, nothing heavy imported)."""

from __future__ import annotations

import os
import re

from kafkadump.decoders.internal_topics import constants as K

_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)(?:\.[0-9a-fA-F]{32}-(?:delete|future|stray))?$")


def kind_from_path(path: str) -> str | None:
    """The internal topic kind of a file or partition directory, from its name; None for other topics.

    ``.../__consumer_offsets-17/00000000000000000000.log`` -> ``"offsets"``; a
    partition directory itself (``__cluster_metadata-0``) too; KRaft's
    ``bootstrap.checkpoint`` -> ``"metadata"``.  Directories being deleted or
    moved (``__consumer_offsets-17.<uuid>-delete``) keep their topic.
    """
    p = os.path.normpath(str(path))
    base = os.path.basename(p)
    if base == "bootstrap.checkpoint":
        return K.METADATA
    for name in (base, os.path.basename(os.path.dirname(p))):
        m = _PARTITION_DIR.match(name)
        if m and m.group("topic") in K.TOPICS:
            return K.TOPICS[m.group("topic")]
    return None


def resolve_kind(choice: str | None, path: str) -> str | None:
    """The kind to decode ``path`` as, for a ``--decode`` choice: ``auto`` (from the name), ``none``, or a kind."""
    if choice is None or choice == "auto":
        return kind_from_path(path)
    if choice == "none":
        return None
    if choice not in K.KINDS:
        raise ValueError(f"unknown internal topic kind {choice!r} (one of {', '.join(K.KINDS)})")
    return choice


__all__ = ["kind_from_path", "resolve_kind"]
