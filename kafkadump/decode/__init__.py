"""The shared decoder: bytes in, decoded objects with findings out.  Never prints."""

from .model import Batch, Gap, Record, Span
from .options import Options
from .walk import CrcScan, iter_batches

__all__ = ["Batch", "Gap", "Record", "Span", "Options", "iter_batches", "CrcScan"]
