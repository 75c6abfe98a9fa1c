"""Bytes pasted as hex text: every common hex-dump form, back to bytes.

Accepted forms (mixed freely, one file may hold several dumps):

* plain hex, with or without separators: ``000007ad0000``, ``00 00 07 ad``,
  ``00:00:07:ad``, ``0x00, 0x00, 0x07``, ``\\x00\\x00\\x07``;
* ``xxd`` (``00000000: 0000 07ad ...  ..ascii..``), ``xxd -p``;
* ``hexdump -C`` (``00000000  00 00 07 ad ...  |..ascii..|``, final offset line);
* ``tcpdump -x``, ``-X``, ``-XX`` (a header line per packet, then
  ``\\t0x0000:  4500 ...`` lines; the IP/TCP/link headers are in the bytes);
* Wireshark / ``tshark -x`` hex dumps (``0000  00 00 ...   ..ascii..``),
  including the titled blocks of ``tshark -x`` (``Frame (N bytes):``,
  ``Reassembled TCP (N bytes):``; derived blocks such as ``Decompressed
  Records`` are skipped: they are not bytes that were on the wire).

An offset column is recognised when its values follow the bytes counted
so far (so ``00 00 07 ad`` is never mistaken for an offset); an ASCII
column is recognised when it renders exactly the bytes on its line.  A
new dump starts at a header or title line, a blank line, or an offset that
restarts.  A line that is none of these is an error that names it.

This module only turns text into :class:`HexBlock` objects (bytes plus what
kind of dump they came from); :mod:`kafkadump.sources.pcap` recognises the
packet headers inside them.
"""

from __future__ import annotations

import re

from kafkadump.base.errors import InputError

MAX_TEXT = 256 << 20   # refuse hex text beyond this (it would be 128 MiB of bytes)


class HexError(InputError):
    """A line that is not hex: exit 2 with the line named."""


class HexBlock:
    """One dump's bytes.

    ``kind``: ``raw`` (bytes as pasted), ``packet`` (a tcpdump packet or a
    tshark ``Frame`` block: link/IP/TCP headers included), ``reassembled``
    (a tshark ``Reassembled TCP`` block: TCP payload only), ``derived``
    (decompressed or otherwise computed by the dumping tool: not wire bytes).
    """

    __slots__ = ("kind", "data", "line", "title", "time", "offsets")

    def __init__(self, kind: str, line: int, title: str | None = None, time: float | None = None):
        self.kind = kind
        self.data = bytearray()
        self.line = line
        self.title = title
        self.time = time
        self.offsets: int | None = None   # first offset-column value, when the dump had one

    def __repr__(self) -> str:  # pragma: no cover
        return f"HexBlock({self.kind}, line {self.line}, {len(self.data)} bytes)"


_TITLE = re.compile(r"^(?P<t>[A-Za-z][^()]*?)\s*\((?P<n>\d+) bytes?\):\s*$")
_TCPDUMP_TIME = re.compile(r"^(?:(?P<date>\d{4}-\d\d-\d\d)\s+)?(?P<h>\d{1,2}):(?P<m>\d\d):(?P<s>\d\d(?:\.\d+)?)\s")
_TCPDUMP_HDR = re.compile(r"(^|\s)(IP6?|ARP|Flags \[|ethertype|length \d+)")
_OFFSET = re.compile(r"^\s*(?:0x)?(?P<o>[0-9a-fA-F]{4,})(?P<sep>:\s*|\s{2,}|\t\s*)")
_LONE_OFFSET = re.compile(r"^\s*(?:0x)?([0-9a-fA-F]{4,})\s*$")
_HEXTOK = re.compile(r"^(?:0[xX])?([0-9a-fA-F]+)[,;]?$")
_ESCAPED = re.compile(r"^(?:\\x[0-9a-fA-F]{2})+$")


def _render(b: int) -> str:
    return chr(b) if 0x20 <= b < 0x7F else "."


def _ascii_matches(data: bytes, text: str) -> bool:
    """Is ``text`` an ASCII column for ``data``?  ('.' may stand for any byte; tcpdump
    shows spaces as '.'; an optional ``|...|`` frame as hexdump -C draws it, or two bytes
    0x7c at the ends of a column that has no frame, as tcpdump draws them)."""
    if len(text) >= 2 and text[0] == "|" and text.rstrip()[-1:] == "|" \
            and _column_matches(data, text.rstrip()[1:-1]):
        return True
    return _column_matches(data, text)


def _column_matches(data: bytes, t: str) -> bool:
    n = len(data)
    if len(t) > n or len(t) < n - 16:
        return False
    if len(t) < len(data):
        # trailing spaces of the ASCII column may have been stripped by the paste
        if not all(data[i] == 0x20 for i in range(len(t), len(data))):
            return False
    for ch, b in zip(t, data):
        if ch != "." and ch != _render(b):
            return False
    return True


def _token_bytes(tok: str) -> bytes | None:
    """One whitespace-separated token as bytes, or None when it is not hex."""
    if ":" in tok.strip(":") and all(len(x) in (1, 2) for x in tok.strip(":").split(":")):
        parts = tok.strip(":").split(":")
        try:
            return bytes(int(x, 16) for x in parts)
        except ValueError:
            return None
    if _ESCAPED.match(tok):
        return bytes.fromhex(tok.replace("\\x", ""))
    m = _HEXTOK.match(tok)
    if not m:
        return None
    digits = m.group(1)
    if len(digits) % 2:
        return None
    return bytes.fromhex(digits)


def _tokens(text: str) -> list[tuple[int, str]]:
    """``(column, token)`` for the whitespace-separated tokens of ``text`` (commas split too)."""
    out: list[tuple[int, str]] = []
    for m in re.finditer(r"[^\s,]+", text):
        out.append((m.start(), m.group(0)))
    return out


def _data_line(rest: str, with_ascii: bool) -> bytes | None:
    """The bytes of one line (after any offset column), or None when it is not hex."""
    toks = _tokens(rest)
    if not toks:
        return b""
    vals = [_token_bytes(t) for _, t in toks]
    if with_ascii:
        # the ASCII column: the longest hex prefix whose bytes the rest of the line renders
        line = rest.rstrip("\r\n")
        acc = b""
        prefixes = []
        for i, v in enumerate(vals):
            if v is None:
                break
            acc += v
            prefixes.append((i + 1, acc))
        for n, data in reversed(prefixes):
            if n >= len(toks):
                continue
            hex_end = toks[n - 1][0] + len(toks[n - 1][1])
            if _ascii_matches(data, line[toks[n][0]:]):
                return data
            # an ASCII column that starts with spaces, right-aligned at the end of the line
            tail = line[-len(data):] if len(line) - len(data) > hex_end else None
            if tail is not None and not line[hex_end:len(line) - len(data)].strip() \
                    and _ascii_matches(data, tail):
                return data
    present = [v for v in vals if v is not None]
    if len(present) == len(vals):
        return b"".join(present)
    return None


def parse(text: str, name: str = "-") -> list[HexBlock]:
    """All dumps in ``text``, in order.  Raises :class:`HexError` naming the first bad line."""
    if len(text) > MAX_TEXT:
        raise InputError(f"{name}: {len(text)} characters of hex text is more than the {MAX_TEXT} accepted")
    blocks: list[HexBlock] = []
    cur: HexBlock | None = None
    has_offsets: bool | None = None  # does the current block have an offset column?
    expect = 0                # offset the next line must have
    lines = text.splitlines()

    def new(kind: str, lineno: int, title: str | None = None, time: float | None = None) -> HexBlock:
        nonlocal cur, has_offsets, expect
        cur = HexBlock(kind, lineno, title, time)
        blocks.append(cur)
        has_offsets = None
        expect = 0
        return cur

    for i, line in enumerate(lines, 1):
        s = line.rstrip("\r\n")
        stripped = s.strip()
        if not stripped:
            if cur is not None and cur.data:
                cur = None  # a blank line ends a dump
                has_offsets = None
                expect = 0
            continue
        if stripped.startswith("#") or stripped.startswith("//"):
            continue
        m = _TITLE.match(stripped)
        if m and not _OFFSET.match(s):
            t = m.group("t")
            kind = "packet" if t.lower().startswith("frame") else (
                "reassembled" if t.lower().startswith("reassembled") else "derived")
            new(kind, i, stripped)
            continue
        if not s[:1].isspace() and (_TCPDUMP_TIME.match(s) or (": Flags [" in s or re.match(r"^IP6? ", s))) \
                and _TCPDUMP_HDR.search(s):
            tm = _TCPDUMP_TIME.match(s)
            time = None
            if tm:
                time = int(tm.group("h")) * 3600 + int(tm.group("m")) * 60 + float(tm.group("s"))
            new("packet", i, stripped, time)
            continue
        # a data line: offset column?
        om = _OFFSET.match(s)
        offset = None
        rest = s
        if om and (has_offsets is not False):
            o = int(om.group("o"), 16)
            if has_offsets is None and (cur is None or not cur.data):
                offset, rest = o, s[om.end():]
            elif has_offsets and cur is not None:
                if o == expect:
                    offset, rest = o, s[om.end():]
                elif o < expect:
                    # an offset that restarts: a new dump (its kind is found from its bytes)
                    new("raw", i)
                    offset, rest = o, s[om.end():]
                else:
                    raise HexError(f"{name}: line {i}: offset {om.group('o')} does not follow the previous "
                                   f"line (expected {expect:x}; lines missing?): {stripped[:80]!r}")
        elif (lm := _LONE_OFFSET.match(s)) and has_offsets and cur is not None:
            # hexdump -C / xxd end marker: the total length
            if int(lm.group(1), 16) == expect:
                continue
        data = _data_line(rest, True) if offset is not None else _data_line(s, False)
        if data is None:
            raise HexError(f"{name}: line {i} is not hex: {stripped[:80]!r}")
        if cur is None:
            cur = new("raw", i)
        if has_offsets is None:
            has_offsets = offset is not None
            if offset is not None:
                cur.offsets = offset
                expect = offset
        elif has_offsets and offset is None:
            raise HexError(f"{name}: line {i} has no offset column, unlike the lines before it: {stripped[:80]!r}")
        cur.data += data
        expect += len(data)
    return [b for b in blocks if b.data]


def looks_like_text(raw: bytes) -> bool:
    """Is this input hex text rather than binary?  No NUL byte, nearly all printable ASCII, and
    hex digits a good part of it (a stray non-ASCII character stays text, to be named as not hex)."""
    head = raw[:65536]
    if not head or b"\x00" in head:
        return False
    printable = sum(1 for b in head if 32 <= b < 127 or b in (9, 10, 13))
    if printable < len(head) * 0.9:
        return False
    t = head.decode("ascii", "replace")
    hexish = sum(1 for c in t if c in "0123456789abcdefABCDEF")
    return hexish >= len(t.replace(" ", "").replace("\n", "")) * 0.3


__all__ = ["HexBlock", "HexError", "parse", "looks_like_text"]
