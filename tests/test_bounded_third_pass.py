"""Issue 26, defect class 5 (hardening, third pass): the second pass's attacks, larger.

* ``capture``: size prefixes waited for (plausible sizes past ``MAX_RESYNC_WAIT``) hold the
  bytes behind them; when the wait ends, every frame cut from that buffer walked every packet
  mark still buffered (quadratic) and the frames came out in one list (memory of all of them).
* ``hexdump`` of a wrapper of many tiny inner messages: a table of the owning span of every
  decompressed byte (8 bytes a byte: 530 MB for 66 MB of inner messages), and every finding
  looked at for every row.

Work is read from :data:`kafkadump.decoders.batches.work.WORK` (counters, never clocks), memory from the
kernel (``test_hardening.kd``) or from tracemalloc.
"""

from __future__ import annotations

import io
import random
import struct
import sys
from pathlib import Path

import capture_builders as cb
from test_bounded_work import doubles
from test_hardening import RSS_LIMIT_MB, kd

from kafkadump.reports.capture import CaptureRequest
from kafkadump.reports.capture import capture_report
from kafkadump.decoders.batches.work import WORK
from kafkadump.decoders.protocol.frames import MAX_FRAME
from kafkadump.decoders.protocol.frames import MAX_RESYNC_WAIT
from kafkadump.decoders.protocol.stream import StreamNote
from kafkadump.base.status import Tally

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import hostile  # noqa: E402


def waited_prefixes_pcap(frames: int, bad: int, seed: int = 26) -> bytes:
    """One connection of ``frames`` small Metadata requests with ``bad`` size prefixes spread
    through the stream, each a plausible size past ``MAX_RESYNC_WAIT`` (waited for to the end
    of the stream, where the splitter resynchronises through everything it held)."""
    rnd = random.Random(seed)
    every = frames // bad
    parts = []
    for i in range(frames):
        if i % every == every // 2:
            parts.append(struct.pack(">i", rnd.randrange(MAX_RESYNC_WAIT + 1, MAX_FRAME)))
        parts.append(cb.metadata_v1_request(corr=i))
    c = cb.Conversation()
    c.send("c", b"".join(parts))
    c.close()
    return cb.pcap([(t, p) for t, p, _ in c.packets])[0]


def run(tmp_path: Path, raw: bytes) -> tuple[int, list, int]:
    """(counted work, the report's items, the most memory blocks held at once while reading them,
    beyond those held before)."""
    p = tmp_path / "x.pcap"
    p.write_bytes(raw)
    WORK.reset()
    items = []
    before = top = sys.getallocatedblocks()
    for item in capture_report(str(p), CaptureRequest(), Tally()):
        top = max(top, sys.getallocatedblocks())
        if not isinstance(item, StreamNote) and getattr(item, "kind", None) == "request":
            item = "request"  # (a test that kept every frame would hold them all itself)
        items.append(item)
    return WORK.total(), items, top - before


def test_frames_behind_waited_prefixes_cost_their_packets_once(tmp_path):
    """Each frame looks at the packet marks it spans (and the next one), not at every mark
    buffered behind it: the marks looked at stay near frames + packets, and all the counted
    work doubles with the input.  The frames a drain cuts from the held buffer stream out:
    the blocks held at once stay below 8 a frame (the requests awaiting answers), where the
    list of every frame held about 17 a frame."""
    work = {}
    for frames in (20_000, 40_000):
        bad = frames // 200
        total, items, held = run(tmp_path, waited_prefixes_pcap(frames, bad))
        lost = [f for i in items if isinstance(i, StreamNote) for f in i.findings
                if f.code.value == "frame-size-invalid"]
        assert items.count("request") == frames and len(lost) == bad
        packets = frames * 27 // 1400 + 10
        assert WORK.marks <= 2 * (frames + packets), (WORK.marks, frames)
        assert held < 8 * frames, (held, frames)
        work[frames] = total
    assert doubles(work[20_000], work[40_000]), work


def test_waited_prefixes_capture_cli(tmp_path):
    p = tmp_path / "w.pcap"
    p.write_bytes(waited_prefixes_pcap(40_000, 200))
    rc, out, err, rss = kd("capture", "--json", str(p))
    assert rc == 1, err
    assert out.count('"frame-size-invalid"') == 200
    assert out.count('{"type":"frame"') == 40_000
    assert rss < RSS_LIMIT_MB, rss


def test_unanswered_requests_are_forgotten_oldest_first():
    """Past MAX_PENDING_REQUESTS the oldest unanswered request leaves (in constant time)."""
    from kafkadump.decoders.protocol import stream as S

    conv = S.Conversation(S.CaptureDecoder(), None, False, "-")

    class F:
        api_key, api_version, client_id, time = 3, 1, "t", None

    for i in range(S.MAX_PENDING_REQUESTS + 10):
        f = F()
        f.correlation_id, f.index = i, i
        conv.remember(f)
    assert len(conv.pending) == S.MAX_PENDING_REQUESTS and next(iter(conv.pending)) == 10


# --- hexdump of a wrapper of many tiny inner messages ------------------------------------------------

def _render(data: bytes, traced: bool = False) -> tuple[int, str]:
    """Render the hexdump of ``data``'s one item: (peak memory of the rendering, traced, with the
    text thrown away; or 0 and the text)."""
    import tracemalloc

    from kafkadump.decoders.batches.walk import decode_spanned
    from kafkadump.decoders.batches.walk import locate
    from kafkadump.render.hexdump import render_text

    item, spans = decode_spanned(data, locate(data, "x.log"))
    if not traced:
        out = io.StringIO()
        render_text(item, spans, data, 0, out=out)
        return 0, out.getvalue()
    render_text(item, spans, data, 0, out=_Sink())   # once untraced: modules a line needs imported, not counted
    tracemalloc.start()
    try:
        render_text(item, spans, data, 0, out=_Sink())
        return tracemalloc.get_traced_memory()[1], ""
    finally:
        tracemalloc.stop()


class _Sink:
    def write(self, s: str) -> int:
        return len(s)

    def flush(self) -> None:
        pass


def test_hexdump_rows_find_their_owning_spans_without_a_table(monkeypatch):
    """Rendering holds no per-byte table (a wrapper of 3,000 inner messages, 105 KB decompressed,
    cost 850 KB of table; 1.9 M messages, 530 MB)."""
    from kafkadump.decoders.batches import legacy as L

    monkeypatch.setattr(L, "SPAN_RECORDS", 50)
    peak, _ = _render(hostile.tiny_inner_wrapper(3000), traced=True)
    assert peak < 200 << 10, peak
    _, text = _render(hostile.tiny_inner_wrapper(200))
    assert "! span-limit" in text and "inner[50:]" in text


def test_hexdump_rows_take_their_findings_in_one_pass():
    """Every inner message's CRC is wrong: each finding is shown on its row, once (rows used to
    look at every finding: rows times findings)."""
    import gzip

    rest = hostile.legacy_message(0, b"v", magic=0)[8:]
    bad = rest[:4] + rest[4:8][::-1] + rest[8:]  # a wrong stored CRC
    n = 1000
    inner = b"".join(struct.pack(">q", i) + bad for i in range(n))
    _, text = _render(hostile.legacy_message(n - 1, gzip.compress(inner, mtime=0), attributes=1, magic=0))
    assert text.count("! crc-mismatch") == n
