"""Selecting batches and records by offset, time and key: the query layer.

One :class:`RecordQuery` serves the CLI (``records --from-offset ...``),
Spark and the tests.  Batches are pruned first, from their headers, before
any record is decoded (:meth:`RecordQuery.batch_may_match`, handed to the
walker as ``Options.select``); the records of the batches that remain are
then kept or dropped one by one (:meth:`RecordQuery.keeps`).

Times are epoch milliseconds; :func:`parse_time` and :func:`parse_key`
turn what a user types into them.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import cast

from .decode.model import Batch, Record, RecordSource
from .errors import UsageError

LOG_APPEND_TIME = 0x08


def parse_time(text: str | None, name: str) -> int | None:
    """ISO-8601 (naive means UTC) or epoch milliseconds -> epoch ms; ``name`` is the option, for the error."""
    if text is None:
        return None
    t = text.strip()
    if t.lstrip("-").isdigit():
        return int(t)
    try:
        dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{name}: {text!r} is neither epoch milliseconds nor an ISO-8601 time") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


NULL_KEY = "null"


def parse_key(text: str | None) -> bytes | None:
    """A key as typed: UTF-8 text, or ``hex:...`` / ``base64:...`` for binary keys (``hex:6e756c6c``
    for the text ``null``, which alone means the null key: see :func:`parse_keys`)."""
    if text is None:
        return None
    try:
        if text.startswith("hex:"):
            return bytes.fromhex(text[4:])
        if text.startswith("base64:"):
            return base64.b64decode(text[7:], validate=True)
    except (ValueError, binascii.Error):
        raise UsageError(f"--key: {text!r} is not valid {text.split(':')[0]}") from None
    return text.encode("utf-8")


def parse_keys(texts: Iterable[str] | None) -> tuple[bytes | None, ...] | None:
    """Keys as typed (each as :func:`parse_key`; ``null`` is the null key); None when none given."""
    if not texts:
        return None
    return tuple(None if t == NULL_KEY else parse_key(t) for t in texts)


@dataclass(frozen=True)
class RecordQuery:
    """Which records to show: offsets and times inclusive, key one of ``keys`` (None in it: the null
    key); None means no bound.  Refuses bounds no record can meet."""

    from_offset: int | None = None
    to_offset: int | None = None
    from_time: int | None = None
    to_time: int | None = None
    keys: tuple[bytes | None, ...] | None = None

    def __post_init__(self) -> None:
        for lo, hi, name in ((self.from_offset, self.to_offset, "offset"), (self.from_time, self.to_time, "time")):
            if lo is not None and hi is not None and lo > hi:
                raise UsageError(f"--from-{name} {lo} is after --to-{name} {hi}: no record can match")

    @classmethod
    def parse(cls, from_offset: int | None = None, to_offset: int | None = None, from_time: str | None = None,
              to_time: str | None = None, keys: Iterable[str] | None = None) -> RecordQuery:
        """A query from the strings a user typed (times and keys as :func:`parse_time` / :func:`parse_keys`)."""
        return cls(from_offset, to_offset, parse_time(from_time, "--from-time"), parse_time(to_time, "--to-time"),
                   parse_keys(keys))

    @property
    def active(self) -> bool:
        """Whether any record can be dropped at all."""
        return any(v is not None for v in (self.from_offset, self.to_offset, self.from_time, self.to_time,
                                           self.keys))

    @property
    def prunes_batches(self) -> bool:
        return any(v is not None for v in (self.from_offset, self.to_offset, self.from_time))

    def batch_may_match(self, b: Batch) -> bool:
        """False when no record of ``b`` can be kept, judged from its header alone."""
        lo, hi, t_from = self.from_offset, self.to_offset, self.from_time
        if lo is not None and b.last_offset is not None and b.last_offset < lo:
            return False
        if hi is not None and b.base_offset is not None and b.base_offset > hi:
            return False
        if t_from is not None and b.magic >= 2 and not (b.attributes & LOG_APPEND_TIME) and b.max_timestamp < t_from:
            return False
        return True

    def batch_selector(self) -> Callable[[Batch], bool] | None:
        """The pruning function for ``Options.select`` (None when nothing is pruned)."""
        return self.batch_may_match if self.prunes_batches else None

    def keeps(self, r: Record) -> bool:
        """Whether record ``r`` is within every bound."""
        if self.from_offset is not None and r.offset < self.from_offset:
            return False
        if self.to_offset is not None and r.offset > self.to_offset:
            return False
        ts = r.timestamp
        if self.from_time is not None and (ts is None or ts < self.from_time):
            return False
        if self.to_time is not None and (ts is None or ts > self.to_time):
            return False
        return self.keys is None or r.key in self.keys

    def select(self, records: Iterable[Record]) -> Sequence[Record]:
        """The records this query keeps, in order (all of them when it is not active).

        A batch's :class:`~kafkadump.decode.model.RecordSource` stays a stream (filtered
        as it is read): a batch of millions of records is never held as a list.
        """
        if isinstance(records, RecordSource):
            # a RecordSource reads as a sequence of records (len, iteration, [i])
            return cast(Sequence[Record], records if not self.active else records.filtered(self.keeps))
        if not self.active:
            return records if isinstance(records, list) else list(records)
        return [r for r in records if self.keeps(r)]


__all__ = ["RecordQuery", "parse_time", "parse_key", "parse_keys", "NULL_KEY"]
