"""Bytes as text the way Java's ``new String(bytes, UTF_8)`` makes it (what Kafka's StringDecoder
prints): the same characters as Python's ``"replace"`` for every valid sequence, but invalid bytes
replaced by Java's rules, which group some differently from Python's (Unicode's maximal subparts):

* a three-byte lead followed by two continuation bytes that would spell a surrogate (``ED A0..BF xx``)
  is one U+FFFD in Java, three in Python;
* ``ED A0..BF`` then a non-continuation byte is one U+FFFD in Java, two in Python;
* a sequence cut short by the end of the bytes is one U+FFFD for all that is left when its second
  byte is a continuation byte (``ED A0`` at the end: one in Java, two in Python).
"""

from __future__ import annotations

import codecs

_HANDLER = "kafkadump-java-utf8"


def _cont(b: int) -> bool:
    return b & 0xC0 == 0x80


def _three(b: bytes, i: int) -> int:
    """Bytes Java replaces by one U+FFFD at a three-byte lead ``b[i]`` (E0..EF)."""
    n = len(b)
    if i + 1 >= n:
        return 1
    b2 = b[i + 1]
    if (b[i] == 0xE0 and b2 & 0xE0 == 0x80) or not _cont(b2):
        return 1
    if i + 2 >= n:
        return 2                                  # cut short: the rest is one replacement
    return 3 if _cont(b[i + 2]) else 2            # 3: a surrogate, well formed otherwise


def _four(b: bytes, i: int) -> int:
    """Bytes Java replaces by one U+FFFD at a four-byte lead ``b[i]`` (F0..F7)."""
    n, b1 = len(b), b[i]
    if i + 1 >= n:
        return 1
    b2 = b[i + 1]
    if b1 > 0xF4 or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and b2 & 0xF0 != 0x80) \
            or not _cont(b2):
        return 1
    if i + 2 >= n:
        return 2
    if not _cont(b[i + 2]):
        return 2
    return 3


def _java_replace(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    b, i = exc.object, exc.start
    lead = b[i]
    if 0xE0 <= lead <= 0xEF:
        return "\ufffd", i + _three(b, i)
    if 0xF0 <= lead <= 0xF7:
        return "\ufffd", i + _four(b, i)
    return "\ufffd", i + 1


codecs.register_error(_HANDLER, _java_replace)


def java_string(b: bytes | bytearray | memoryview) -> str:
    """``b`` decoded as UTF-8 as Java decodes it, invalid bytes replaced by Java's rules."""
    return bytes(b).decode("utf-8", _HANDLER)


__all__ = ["java_string"]
