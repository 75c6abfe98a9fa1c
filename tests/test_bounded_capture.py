"""Issue 12, defect class 4 in ``capture``: resynchronising, closing connections and deciding
whether a connection is Kafka are linear in the capture.

Generators build scaled pcaps; work is read from :data:`kafkadump.decoders.batches.work.WORK`
(counters, never clocks) and the CLI's peak RSS from the kernel (``test_hardening.kd``).
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import capture_builders as cb
from test_bounded_work import doubles
from test_hardening import RSS_LIMIT_MB, kd

from kafkadump.reports.capture import CaptureRequest
from kafkadump.reports.capture import capture_report
from kafkadump.decoders.batches.options import SCAN_FLOOR
from kafkadump.decoders.batches.work import WORK
from kafkadump.decoders.protocol.stream import StreamNote
from kafkadump.base.status import Tally

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import hostile  # noqa: E402


def produce_candidates(k: int) -> bytes:
    """A bad size prefix, then ``k`` plausible Produce v3 request headers, each one's size reaching
    the end of the stream (its records field holding every later one), ending in a batch with a
    wrong CRC: each candidate, decoded whole, fails only at the end."""
    parts = [hostile.v2_batch(0, [b"x"], crc=1)]
    rest = len(parts[0])
    for i in range(k):
        body = struct.pack(">hhiihsiii", -1, 1, 1000, 1, 1, b"t", 1, 0, rest)
        hdr = struct.pack(">hhih", 0, 3, i, 1) + b"x"
        head = struct.pack(">i", len(hdr) + len(body) + rest) + hdr + body
        parts.append(head)
        rest += len(head)
    return b"\x00\x00\x00\x01" + b"".join(reversed(parts))


def pcap_of(conversations: list) -> bytes:
    packets = [(t, p) for c in conversations for t, p, _ in c.packets]
    return cb.pcap(packets)[0]


def resync_pcap(k: int) -> bytes:
    c = cb.Conversation()
    c.send("c", produce_candidates(k))
    c.close()
    return pcap_of([c])


def syn_only_pcap(n: int) -> bytes:
    """``n`` connections that are only a SYN and a RST."""
    packets = []
    for i in range(n):
        client = f"10.{1 + i // 60000}.{(i // 250) % 240}.{1 + i % 250}"
        sport = 1024 + i % 60000
        packets.append((1.0 + i * 1e-4, cb.ipv4_tcp(client, "10.0.0.2", sport, 9092, 1000, 0, cb.SYN)))
        packets.append((1.0 + i * 1e-4, cb.ipv4_tcp("10.0.0.2", client, 9092, sport, 0, 1001, 0x04 | cb.ACK)))
    return cb.pcap(packets)[0]


def one_byte_segments_pcap(size: int) -> bytes:
    """A Produce request of about ``size`` bytes on a port that is not Kafka's, one byte a segment:
    the decoder must decide from the content whether the connection is Kafka."""
    body = struct.pack(">hhiihsiii", -1, 1, 1000, 1, 1, b"t", 1, 0, size)
    hdr = struct.pack(">hhih", 0, 3, 7, 1) + b"x"
    frame = struct.pack(">i", len(hdr) + len(body) + size) + hdr + body + hostile.v2_batch(0, [bytes(size - 70)])[:size]
    c = cb.Conversation(server=("10.0.0.2", 19092))
    c.send("c", frame, segment=1)
    c.close()
    return pcap_of([c])


def run(tmp_path: Path, raw: bytes) -> tuple[int, list]:
    p = tmp_path / "x.pcap"
    p.write_bytes(raw)
    WORK.reset()
    items = list(capture_report(str(p), CaptureRequest(), Tally()))
    return WORK.total(), items


def note_codes(items: list) -> set:
    return {f.code.value for i in items if isinstance(i, StreamNote) for f in i.findings}


def test_resync_after_a_bad_size_prefix_is_linear(tmp_path):
    """Every stream position is examined at most once for a frame start (the waiting starts
    are a heap by frame end, not re-walked per segment); the bytes of candidate frames decoded
    stay within the resync budget (64 MiB below 4 MiB of input), where decoding every candidate
    whole would cost about k*k/2 * 44 bytes; segments double with the input."""
    sizes = {}
    for k in (4000, 8000):
        stream = len(produce_candidates(k))
        _, items = run(tmp_path, resync_pcap(k))
        assert WORK.positions <= stream
        assert WORK.verified <= SCAN_FLOOR + stream
        assert "frame-size-invalid" in note_codes(items)
        sizes[k] = WORK.segments
    assert doubles(sizes[4000], sizes[8000])


def test_resync_work_grows_by_equal_steps(tmp_path):
    """The whole counted work of the resync, at 4000, 8000 and 16000 candidates: each doubling of
    the input adds twice the work the previous doubling added (the work is a straight line in the
    input, with a fixed start-up share below the budget's floor); quadratic work would add four
    times as much."""
    work = {k: run(tmp_path, resync_pcap(k))[0] for k in (4000, 8000, 16000)}
    first_step, second_step = work[8000] - work[4000], work[16000] - work[8000]
    assert doubles(first_step, second_step), work
    assert 1.9 <= second_step / first_step <= 2.1, work


def test_closing_many_connections_is_linear(tmp_path):
    small, _ = run(tmp_path, syn_only_pcap(5000))
    large, _ = run(tmp_path, syn_only_pcap(10000))
    assert doubles(small, large), (small, large)
    p = tmp_path / "syn.pcap"
    p.write_bytes(syn_only_pcap(20000))
    rc, out, err, rss = kd("capture", "--json", str(p))
    assert rc in (0, 1), err
    assert rss < RSS_LIMIT_MB


def test_deciding_on_one_byte_segments_is_linear(tmp_path):
    small, items = run(tmp_path, one_byte_segments_pcap(10000))
    large, _ = run(tmp_path, one_byte_segments_pcap(20000))
    assert doubles(small, large), (small, large)
    frames = [i for i in items if not isinstance(i, StreamNote) and hasattr(i, "api_key")]
    assert frames and frames[0].api_key == 0


def test_resync_capture_cli_memory(tmp_path):
    p = tmp_path / "r.pcap"
    p.write_bytes(resync_pcap(3000))
    rc, out, err, rss = kd("capture", "--json", str(p))
    assert rc == 1, err
    assert "frame-size-invalid" in out
    assert rss < RSS_LIMIT_MB


def produce_pcap(batch: bytes) -> bytes:
    """A Produce v3 request carrying ``batch``, in a one-connection pcap."""
    body = struct.pack(">hhiihsiii", -1, 1, 1000, 1, 1, b"t", 1, 0, len(batch)) + batch
    hdr = struct.pack(">hhih", 0, 3, 7, 1) + b"x"
    c = cb.Conversation()
    c.send("c", struct.pack(">i", len(hdr) + len(body)) + hdr + body)
    c.close()
    return pcap_of([c])


def test_a_million_records_in_a_produce_request(tmp_path):
    """Class 1 in capture: the frame's JSON streams its records field (same text as one tree)."""
    from test_bounded_work import many_records_batch

    p = tmp_path / "big.pcap"
    p.write_bytes(produce_pcap(many_records_batch(1_000_000)))
    for args in (["--json"], ["--records", "--json"]):
        rc, out, err, rss = kd("capture", *args, str(p))
        assert rc == 0, err
        assert rss < RSS_LIMIT_MB, (args, rss)
    assert out.count("\n") == 1_000_000


def test_streamed_frame_json_is_the_same_text(tmp_path, monkeypatch):
    import io

    from test_bounded_work import many_records_batch

    from kafkadump.render import frame_views

    p = tmp_path / "x.pcap"
    p.write_bytes(produce_pcap(many_records_batch(9000)))
    texts = []
    for threshold in (10**9, 100):
        monkeypatch.setattr(frame_views, "STREAMED_RECORDS", threshold)
        out = io.StringIO()
        frame_views.write_frames_json(capture_report(str(p), CaptureRequest(), Tally()), out)
        texts.append(out.getvalue())
    assert texts[0] == texts[1] and '"records":[{"type":"record"' in texts[0]
