"""Selecting batches and records by offset, time and key, and a capture's frames by API, topic
and client: the query layer.

One :class:`RecordQuery` serves the CLI (``records --from-offset ...``),
Spark and the tests.  Batches are pruned first, from their headers, before
any record is decoded (:meth:`RecordQuery.batch_may_match`, handed to the
walker as ``Options.select``); the records of the batches that remain are
then kept or dropped one by one (:meth:`RecordQuery.keeps`).

Times are epoch milliseconds; :func:`parse_time` and :func:`parse_key`
turn what a user types into them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, cast

from kafkadump.base.errors import UsageError
from kafkadump.base.values import FrozenValue
from kafkadump.decoders.batches.model import EVERY_RECORD, INT64_MAX, INT64_MIN, Batch, Record, RecordSource

if TYPE_CHECKING:
    from kafkadump.decoders.protocol.frames import Frame

LOG_APPEND_TIME = 0x08


def parse_time(text: str | None, name: str) -> int | None:
    """ISO-8601 (naive means UTC) or epoch milliseconds -> epoch ms; ``name`` is the option, for the error."""
    if text is None:
        return None
    t = text.strip()
    if t.lstrip("-").isdigit():
        return int(t)
    from datetime import datetime, timezone  # (only for a time given as text: start-up)

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
            import base64  # (only for a key given so: start-up)

            return base64.b64decode(text[7:], validate=True)
    except ValueError:  # (binascii.Error is one)
        raise UsageError(f"--key: {text!r} is not valid {text.split(':')[0]}") from None
    return text.encode("utf-8")


def parse_keys(texts: Iterable[str] | None) -> tuple[bytes | None, ...] | None:
    """Keys as typed (each as :func:`parse_key`; ``null`` is the null key); None when none given."""
    if not texts:
        return None
    return tuple(None if t == NULL_KEY else parse_key(t) for t in texts)


class RecordQuery(FrozenValue):
    """Which records to show: offsets and times inclusive, key one of ``keys`` (None in it: the null
    key); None means no bound.  Refuses bounds no record can meet."""

    __match_args__ = ("from_offset", "to_offset", "from_time", "to_time", "keys")
    from_offset: int | None
    to_offset: int | None
    from_time: int | None
    to_time: int | None
    keys: tuple[bytes | None, ...] | None

    def __init__(self, from_offset: int | None = None, to_offset: int | None = None, from_time: int | None = None,
                 to_time: int | None = None, keys: tuple[bytes | None, ...] | None = None) -> None:
        self._set(from_offset=from_offset, to_offset=to_offset, from_time=from_time, to_time=to_time, keys=keys)
        for lo, hi, name in ((from_offset, to_offset, "offset"), (from_time, to_time, "time")):
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

    def run_bounds(self) -> tuple[int, int, int, int] | None:
        """The bounds of the walk's windows of plain batches (``iter_batches(runs=...)``): this query's
        offsets and times, int64 (``EVERY_RECORD``'s for no bound); None when the compiled windows cannot
        say what it keeps (a key asked for, a bound past 64 bits): its records are then kept one by one."""
        if self.keys is not None:
            return None
        bounds = tuple(default if v is None else v for v, default in zip(
            (self.from_offset, self.to_offset, self.from_time, self.to_time), EVERY_RECORD))
        if not all(INT64_MIN <= v <= INT64_MAX for v in bounds):
            return None
        return cast(tuple[int, int, int, int], bounds)

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

        A batch's :class:`~kafkadump.decoders.batches.model.RecordSource` stays a stream (filtered
        as it is read): a batch of millions of records is never held as a list.
        """
        if isinstance(records, RecordSource):
            # a RecordSource reads as a sequence of records (len, iteration, [i])
            return cast(Sequence[Record], records if not self.active else records.filtered(self.keeps))
        if not self.active:
            return records if isinstance(records, list) else list(records)
        return [r for r in records if self.keeps(r)]


# --- frames of a capture -----------------------------------------------------------------------

# what Kafka accepts as a topic name (Topic.validate): 1 to 249 of these characters, not "." nor ".."
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")
MAX_CLIENT_ID = 0x7FFF  # a client id is a STRING: an INT16 length


class FrameFilter(FrozenValue):
    """Which frames of a capture to show (``capture --api/--topic/--client``): a frame is kept
    when it meets every filter given, and a filter given several values keeps any of them.
    A response is matched by its own API and topics and by its request's client id."""

    __match_args__ = ("api_keys", "topics", "clients")
    api_keys: frozenset[int]
    topics: frozenset[str]
    clients: frozenset[str]

    def __init__(self, api_keys: frozenset[int] = frozenset(), topics: frozenset[str] = frozenset(),
                 clients: frozenset[str] = frozenset()) -> None:
        self._set(api_keys=api_keys, topics=topics, clients=clients)

    @classmethod
    def parse(cls, apis: Iterable[str] | None, topics: Iterable[str] | None,
              clients: Iterable[str] | None) -> FrameFilter:
        """From what a user types; a value no frame can have is a :class:`UsageError`."""
        return cls(frozenset(parse_api(a) for a in apis or ()), frozenset(parse_topic(t) for t in topics or ()),
                   frozenset(parse_client(c) for c in clients or ()))

    @property
    def active(self) -> bool:
        return bool(self.api_keys or self.topics or self.clients)

    def keeps(self, f: Frame) -> bool:
        if self.api_keys and f.api_key not in self.api_keys:
            return False
        if self.clients and f.client_id not in self.clients:
            return False
        return not self.topics or any(t in self.topics for t in f.topics())


def parse_api(text: str) -> int:
    """An API by name (``Produce``, ``fetch``, ``ApiVersions``; any case) or key (``0``)."""
    from kafkadump.decoders.protocol import schema

    by_name = {name.lower(): key for key in schema.api_keys() if (name := schema.api_name(key))}
    t = text.strip()
    if t.isdigit() and int(t) in by_name.values():
        return int(t)
    if t.lower() in by_name:
        return by_name[t.lower()]
    near = sorted(n for n in {schema.api_name(k) or "" for k in schema.api_keys()}
                  if n and (n.lower().startswith(t.lower()[:3]) if t else False))
    hint = f" (did you mean {', '.join(near[:5])}?)" if near else " (an API name such as Produce or Fetch, or its key)"
    raise UsageError(f"--api: no Kafka API {text!r}{hint}")


def parse_topic(text: str) -> str:
    """A topic name as Kafka allows them; any other text can match no frame."""
    if not _TOPIC_NAME.fullmatch(text) or text in (".", ".."):
        raise UsageError(f"--topic: {text!r} cannot be a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -)")
    return text


def parse_client(text: str) -> str:
    """A client id (any text that fits the protocol's STRING)."""
    if len(text.encode("utf-8", "surrogateescape")) > MAX_CLIENT_ID:
        raise UsageError(f"--client: a client id is at most {MAX_CLIENT_ID} bytes")
    return text


__all__ = ["RecordQuery", "FrameFilter", "parse_time", "parse_key", "parse_keys", "parse_api", "parse_topic",
           "parse_client", "NULL_KEY"]
