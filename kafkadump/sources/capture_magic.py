"""The magic numbers of pcap and pcapng files: whether a file is a capture, told without the capture reader.

    pcap     D4 C3 B2 A1 (little-endian, microseconds)   A1 B2 C3 D4 (big-endian, microseconds)
             4D 3C B2 A1 (little-endian, nanoseconds)    A1 B2 3C 4D (big-endian, nanoseconds)
    pcapng   0A 0D 0D 0A (the section header block's type)
"""

from __future__ import annotations

# the pcap magic -> (the byte order of the file's fields, the unit of its sub-second timestamps, in seconds)
PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6), b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9), b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"


def is_capture(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a pcap or pcapng capture."""
    return head[:4] in PCAP_MAGICS or head[:4] == PCAPNG_MAGIC


__all__ = ["PCAP_MAGICS", "PCAPNG_MAGIC", "is_capture"]
