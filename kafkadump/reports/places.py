"""Where records were read: their topic and partition, and in a capture the frame that carried them.

Plain data the reports attach to records; the record object (:mod:`kafkadump.objects.records`)
writes it as fields.
"""

from __future__ import annotations

import functools

from kafkadump.base.values import FrozenValue
from kafkadump.decoders.logfiles.names import topic_partition


class ConnectionSeen(FrozenValue):
    """A capture's TCP connection as it stood when a frame was read: its number, the client's and
    the server's endpoints as text (None until known), and whether kafkadump found it by content
    rather than by port."""

    __match_args__ = ("id", "client", "server", "detected")
    id: int
    client: str | None
    server: str | None
    detected: bool

    def __init__(self, id: int, client: str | None, server: str | None, detected: bool) -> None:
        self._set(id=id, client=client, server=server, detected=detected)


class Sighting(FrozenValue):
    """Where a capture saw a record: the frame that carried it and how it travelled.

    ``connection``: the frame's connection as it stood then, or None; ``offset_relative``: the record came in a request (Produce), whose offsets
    the producer numbers from 0 in each batch; the broker assigns the real ones.
    """

    __match_args__ = ("frame", "api", "direction", "connection", "time", "time_text", "topic_id", "offset_relative")
    frame: int | None
    api: str | None
    direction: str | None
    connection: ConnectionSeen | None
    time: float | None
    time_text: str | None
    topic_id: str | None
    offset_relative: bool

    def __init__(self, frame: int | None, api: str | None, direction: str | None, connection: ConnectionSeen | None,
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


__all__ = ["ConnectionSeen", "Sighting", "Place", "place_of_file"]
