"""Where records were read: their topic and partition, and in a capture the frame that carried them.

Plain data the reports attach to records; the record object (:mod:`kafkadump.objects.records`)
writes it as fields.
"""

from __future__ import annotations

import functools
from typing import Any

from kafkadump.base.values import FrozenValue
from kafkadump.decoders.logfiles.names import topic_partition


class Sighting(FrozenValue):
    """Where a capture saw a record: the frame that carried it and how it travelled.

    ``connection`` is the frame's connection object (``capture --json``'s shape) or
    None; ``offset_relative``: the record came in a request (Produce), whose offsets
    the producer numbers from 0 in each batch; the broker assigns the real ones.
    """

    __match_args__ = ("frame", "api", "direction", "connection", "time", "time_text", "topic_id", "offset_relative")
    frame: int | None
    api: str | None
    direction: str | None
    connection: dict[str, Any] | None
    time: float | None
    time_text: str | None
    topic_id: str | None
    offset_relative: bool

    def __init__(self, frame: int | None, api: str | None, direction: str | None, connection: dict[str, Any] | None,
                 time: float | None, time_text: str | None, topic_id: str | None, offset_relative: bool) -> None:
        self._set(frame=frame, api=api, direction=direction, connection=connection, time=time, time_text=time_text,
                  topic_id=topic_id, offset_relative=offset_relative)


class Place(FrozenValue):
    """Where records belong: their topic and partition (from a partition directory's name,
    or from the request or response that carried them) and, in a capture, the sighting."""

    __match_args__ = ("topic", "partition", "sighting")
    topic: str | None
    partition: int | None
    sighting: Sighting | None

    def __init__(self, topic: str | None = None, partition: int | None = None,
                 sighting: Sighting | None = None) -> None:
        self._set(topic=topic, partition=partition, sighting=sighting)


@functools.lru_cache(maxsize=256)
def place_of_file(path: str) -> Place:
    """The place of a segment's records, from its directory's name (``orders-3``); nothing
    when the directory is not a partition's."""
    topic, partition = topic_partition(path)
    return Place(topic, partition)


__all__ = ["Sighting", "Place", "place_of_file"]
