"""What a file that is none of Kafka's seems to be, from its first bytes (magic numbers).

    offset 0   89 50 4E 47 0D 0A 1A 0A      PNG image
               FF D8 FF                     JPEG image
               47 49 46 38 37|39 61         GIF image ("GIF87a", "GIF89a")
               25 50 44 46 2D               PDF document ("%PDF-")
               7F 45 4C 46                  ELF executable or library
               CF|CE FA ED FE, FE ED FA CF|CE   Mach-O executable
               CA FE BA BE                  Java class file or Mach-O universal binary
               4D 5A                        Windows (PE/MZ) executable
               1F 8B                        gzip
               50 4B 03 04 | 05 06          zip archive (also .jar)
               42 5A 68                     bzip2 ("BZh")
               FD 37 7A 58 5A 00            xz
               28 B5 2F FD                  zstd frame
               37 7A BC AF 27 1C            7-Zip archive
               53 51 4C 69 74 65 ...        SQLite database ("SQLite format 3\\0")
               AC ED                        Java serialized object
               23 21                        script ("#!")
               pcap / pcapng magic          packet capture (kafkadump capture reads it)
    offset 257 75 73 74 61 72               tar archive ("ustar")

Nothing here decides that a file is Kafka's: callers ask only about files
that are not (by name, or holding no batch).  Never raises.
"""

from __future__ import annotations

from kafkadump.sources.capture_magic import is_capture

SNIFF_BYTES = 4096

_MAGICS: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"\x7fELF", "an ELF executable or library"),
    (b"\xcf\xfa\xed\xfe", "a Mach-O executable"),
    (b"\xce\xfa\xed\xfe", "a Mach-O executable"),
    (b"\xfe\xed\xfa\xcf", "a Mach-O executable"),
    (b"\xfe\xed\xfa\xce", "a Mach-O executable"),
    (b"\xca\xfe\xba\xbe", "a Java class file or a Mach-O universal binary"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"\x1f\x8b", "a gzip-compressed file"),
    (b"PK\x03\x04", "a zip archive (or a .jar)"),
    (b"PK\x05\x06", "an empty zip archive"),
    (b"BZh", "a bzip2-compressed file"),
    (b"\xfd7zXZ\x00", "an xz-compressed file"),
    (b"\x28\xb5\x2f\xfd", "a zstd-compressed file"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"\xac\xed", "a serialized Java object"),
    (b"MZ", "a Windows (PE) executable"),
)


def _looks_like_text(head: bytes) -> bool:
    if not head or b"\x00" in head:
        return False
    printable = sum(1 for b in head if 32 <= b < 127 or b in (9, 10, 13) or b >= 0x80)
    return printable >= len(head) * 0.95


def identify(head: bytes, size: int | None = None) -> str | None:
    """What the file whose first bytes are ``head`` seems to be (``"a PNG image"``), or None when its
    first bytes match no format known here.  ``size`` (the file's size) names an empty file."""
    if size == 0 or (size is None and not head):
        return "an empty file"
    if is_capture(head[:4]):
        return "a packet capture (pcap/pcapng)"
    for magic, what in _MAGICS:
        if head.startswith(magic):
            return what
    if head[257:262] == b"ustar":
        return "a tar archive"
    if head.startswith(b"#!"):
        return "a script (" + head[2:head.find(b"\n") if b"\n" in head else 40].decode("ascii", "replace").strip()[:40] + ")"
    if _looks_like_text(head[:SNIFF_BYTES]):
        return "text"
    return None


def describe(head: bytes, size: int | None = None) -> str:
    """:func:`identify`, or ``"unrecognised binary data"``."""
    return identify(head, size) or "unrecognised binary data"


__all__ = ["identify", "describe", "SNIFF_BYTES"]
