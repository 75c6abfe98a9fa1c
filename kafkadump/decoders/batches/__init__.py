"""The shared decoder: bytes in, decoded objects with findings out.  Never prints."""

from kafkadump.decoders.batches.model import Batch, Gap, Record, Span
from kafkadump.decoders.batches.options import Options
from kafkadump.decoders.batches.walk import CrcScan, iter_batches

__all__ = ["Batch", "Gap", "Record", "Span", "Options", "iter_batches", "CrcScan"]
