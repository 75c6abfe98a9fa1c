"""JSON text that every line splitter reads as one object per line.

``json.dumps(..., ensure_ascii=False)`` leaves U+0085 (NEL), U+2028 and
U+2029 raw inside strings; ``str.splitlines()`` and many JSON Lines readers
cut a line there.  It also leaves DEL, the C1 controls and the bidi
overrides raw, which a terminal may obey.  :func:`dumps` writes them as ``\\uXXXX`` escapes: the
text stays valid JSON with the same value, and every other non-ASCII
character stays readable.  Every JSON output that keeps non-ASCII text
goes through here.

A file name that is not UTF-8 reaches Python with its bytes as lone
surrogates (U+DC80..U+DCFF, PEP 383): written raw they would make the
output invalid UTF-8, so every surrogate is escaped too (``\\udcff``: valid
UTF-8 JSON, and ``os.fsencode(json.loads(...))`` gives the name's bytes back).
"""

from __future__ import annotations

import json
from typing import Any

# DEL, C1 (U+0080..U+009F, NEL among them), LINE SEPARATOR, PARAGRAPH SEPARATOR,
# the bidirectional controls that reorder what a terminal shows, and the
# surrogates (a non-UTF-8 file name's bytes)
BIDI_CONTROLS = (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)
UNSAFE_CODEPOINTS = (0x7F, *range(0x80, 0xA0), 0x2028, 0x2029, *BIDI_CONTROLS, *range(0xD800, 0xE000))
_ESCAPES = str.maketrans({c: f"\\u{c:04x}" for c in UNSAFE_CODEPOINTS})
# text that is printable holds none of them (controls, format characters, separators, surrogates), and
# nearly all text is: str.translate with multi-character escapes takes its slow path (a table lookup per
# character) on every text, so it is kept for the text that is not


def escape_unsafe(text: str) -> str:
    """``text`` (already JSON) with DEL, C1 and the Unicode line separators escaped."""
    return text if text.isprintable() else text.translate(_ESCAPES)


# one JSON style in every command: no space after a separator (``"crcValid":false`` is found by grep
# whichever command wrote it)
SEPARATORS = (",", ":")


def dumps(obj: Any, **kwargs: Any) -> str:
    """:func:`json.dumps` keeping non-ASCII text readable, minus the characters above, in the
    one JSON style (:data:`SEPARATORS`)."""
    kwargs.setdefault("separators", SEPARATORS)
    return escape_unsafe(json.dumps(obj, ensure_ascii=False, **kwargs))


__all__ = ["dumps", "escape_unsafe", "UNSAFE_CODEPOINTS", "BIDI_CONTROLS", "SEPARATORS"]
