"""Work counters: how much the walks did, counted (never timed).

Each walk adds to :data:`WORK` as it goes: positions it stepped to, resync
candidates it examined, bytes it checksummed or inflated, records it
decoded; in captures, TCP segments, stream positions examined for a frame start, candidate frames decoded while
resynchronising and their bytes (``verified``), packet marks a frame looked at to name its packets (``marks``); in payloads, bytes of keys and values decoded or
scanned for JSON nesting (``payload_bytes``) and schemas compiled (``schemas``).  Tests read the counters to prove a walk is linear in its input
(double the input, the work roughly doubles); nothing in kafkadump reads
them.  Counting is a few integer additions per item, never per byte.
"""

from __future__ import annotations


class WorkCounters:
    """Additive counters of decoder work (see the module docstring)."""

    __slots__ = ("steps", "candidates", "crc_bytes", "inflated", "records", "segments", "positions", "frames",
                 "verified", "marks", "payload_bytes", "schemas")
    steps: int
    candidates: int
    crc_bytes: int
    inflated: int
    records: int
    segments: int
    positions: int
    frames: int
    verified: int
    marks: int
    payload_bytes: int
    schemas: int

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Set every counter to 0."""
        for name in self.__slots__:
            setattr(self, name, 0)

    def total(self) -> int:
        """All the counted work as one number (bytes count as bytes, items as one each)."""
        return sum(getattr(self, name) for name in self.__slots__)

    def snapshot(self) -> dict[str, int]:
        """The counters as a dict."""
        return {name: getattr(self, name) for name in self.__slots__}


WORK = WorkCounters()

__all__ = ["WORK", "WorkCounters"]
