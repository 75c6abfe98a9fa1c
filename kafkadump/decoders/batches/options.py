"""Decoder limits and switches: one frozen value, handed unchanged to every path.

Every limit is a plain field, read where it applies: the walkers
(:func:`~kafkadump.decoders.batches.walk.iter_batches`, :class:`~kafkadump.decoders.batches.walk.CrcScan`,
:mod:`~kafkadump.decoders.batches.step`), the batch and legacy decoders they call, the
carver, the Spark splitter and the protocol decoder's RECORDS fields.  A
variant is made with :meth:`Options.replace` (or :meth:`Options.shallow`),
never by assignment.
"""

from __future__ import annotations

from typing import Callable, Optional

from kafkadump.base.values import FrozenValue
from kafkadump.decoders.batches.compression import DEFAULT_MAX_DECOMPRESSED, DEFAULT_MAX_RATIO
from kafkadump.decoders.batches.legacy import DEFAULT_MAX_DEPTH

DEFAULT_MAX_SCAN = 16      # resync CRC work on failed candidates: this many times the input ...
SCAN_FLOOR = 64 << 20      # ... and at least this many bytes
DEFAULT_MAX_BATCH_BYTES = 1 << 31


class Options(FrozenValue):
    """Decoder limits and switches, shared by every command (a frozen value: equal by its fields)."""

    __match_args__ = ("records", "max_decompressed", "max_ratio", "max_depth", "max_scan", "max_batch_bytes",
                      "resync_window", "select")
    records: bool               # decode records (else header + CRC only)
    max_decompressed: int       # bytes one payload may decompress to
    max_ratio: int              # decompressed/compressed beyond this is a bomb (0: off)
    max_depth: int              # legacy wrappers nested deeper are not expanded
    max_scan: int               # resync CRC work, times the input size (0: no limit)
    max_batch_bytes: int        # larger declared lengths are not trusted
    resync_window: Optional[int]  # bytes to scan for the next batch (None: to the end)
    select: Optional[Callable]  # batch -> bool: decode this batch's records?

    def __init__(self, records: bool = True, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
                 max_ratio: int = DEFAULT_MAX_RATIO, max_depth: int = DEFAULT_MAX_DEPTH,
                 max_scan: int = DEFAULT_MAX_SCAN, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
                 resync_window: Optional[int] = None, select: Optional[Callable] = None) -> None:
        self._set(records=records, max_decompressed=max_decompressed, max_ratio=max_ratio, max_depth=max_depth,
                  max_scan=max_scan, max_batch_bytes=max_batch_bytes, resync_window=resync_window, select=select)

    def shallow(self) -> Options:
        """The same limits, records not decoded (header and CRC only; legacy wrappers still expanded)."""
        return self if not self.records else self.replace(records=False)


__all__ = ["Options", "DEFAULT_MAX_SCAN", "SCAN_FLOOR", "DEFAULT_MAX_BATCH_BYTES"]
