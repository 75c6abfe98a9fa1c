"""Decoder limits and switches: one frozen value, handed unchanged to every path.

Every limit is a plain field, read where it applies: the walkers
(:func:`~kafkadump.decode.walk.iter_batches`, :class:`~kafkadump.decode.walk.CrcScan`,
:mod:`~kafkadump.decode.step`), the batch and legacy decoders they call, the
carver, the Spark splitter and the protocol decoder's RECORDS fields.  A
variant is made with :func:`dataclasses.replace` (or :meth:`Options.shallow`),
never by assignment.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional

from .compression import DEFAULT_MAX_DECOMPRESSED, DEFAULT_MAX_RATIO
from .legacy import DEFAULT_MAX_DEPTH

DEFAULT_MAX_SCAN = 16      # resync CRC work on failed candidates: this many times the input ...
SCAN_FLOOR = 64 << 20      # ... and at least this many bytes
DEFAULT_MAX_BATCH_BYTES = 1 << 31


@dataclass(frozen=True)
class Options:
    """Decoder limits and switches, shared by every command."""

    records: bool = True                              # decode records (else header + CRC only)
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED  # bytes one payload may decompress to
    max_ratio: int = DEFAULT_MAX_RATIO                # decompressed/compressed beyond this is a bomb (0: off)
    max_depth: int = DEFAULT_MAX_DEPTH                # legacy wrappers nested deeper are not expanded
    max_scan: int = DEFAULT_MAX_SCAN                  # resync CRC work, times the input size (0: no limit)
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES    # larger declared lengths are not trusted
    resync_window: Optional[int] = None               # bytes to scan for the next batch (None: to the end)
    select: Optional[Callable] = None                 # batch -> bool: decode this batch's records?

    def shallow(self) -> Options:
        """The same limits, records not decoded (header and CRC only; legacy wrappers still expanded)."""
        return self if not self.records else replace(self, records=False)


__all__ = ["Options", "DEFAULT_MAX_SCAN", "SCAN_FLOOR", "DEFAULT_MAX_BATCH_BYTES"]
