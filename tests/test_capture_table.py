"""The capture table (issue 14, item 6): rows in time order with the connection as a column,
dates when a capture spans days, each response's latency, --api/--topic/--client filters, and
a layout that fits the terminal.  Everything through the CLI, as a user runs it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import builders as bld
import capture_builders as cb
import pytest

DAY = 86400.0
T0 = 1_700_000_000.0   # 2023-11-14T22:13:20Z
ANSI = re.compile(r"\x1b\[[0-9;]*m")
BATCH = bld.v2_batch(0, [bld.Rec(b"user-1", b"v")]).data


def kd(*args, columns: int | None = None, color: bool = False) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    cmd = [sys.executable, "-m", "kafkadump", "capture", *(["--color"] if color else []), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


def producer(port: int, t0: float, client: str = "producer-1", topic: str = "orders") -> cb.Conversation:
    """Metadata, then a Produce request and its response (answered as Metadata-shaped bytes are not:
    a real ProduceResponse v3 for ``topic``)."""
    c = cb.Conversation(client=("127.0.0.1", port), server=("127.0.0.1", 9092), t0=t0)
    c.send("c", cb.metadata_v1_request(1, topics=(topic,), client=client))
    c.send("s", cb.metadata_v1_response(1, topic=topic))
    c.send("c", cb.produce_v3_request(2, BATCH, topic=topic, client=client))
    c.send("s", produce_v3_response(2, topic))
    c.close()
    return c


def consumer(port: int, t0: float, client: str = "consumer-1") -> cb.Conversation:
    c = cb.Conversation(client=("127.0.0.1", port), server=("127.0.0.1", 9092), t0=t0)
    c.send("c", cb.fetch_v12_request(1, client=client))
    c.send("s", cb.fetch_v12_response(1, [(0, BATCH, b"\x00")]))
    c.close()
    return c


def produce_v3_response(corr: int, topic: str) -> bytes:
    """ProduceResponse v3: one topic, one partition (index 0, no error, base offset 7), throttle 0."""
    I16, I32, I64 = cb.I16, cb.I32, cb.I64
    body = (I32(1) + cb.encode_string(topic) + I32(1) + I32(0) + I16(0) + I64(7) + I64(-1) + I32(0))
    return cb.frame(I32(corr) + body)


def write_pcap(tmp_path: Path, conversations, order=None, name="c.pcap") -> Path:
    packets = [(t, p) for c in conversations for t, p, _ in c.packets]
    if order == "time":
        packets.sort(key=lambda x: x[0])
    p = tmp_path / name
    p.write_bytes(cb.pcap(packets)[0])
    return p


def rows(out: str) -> list[list[str]]:
    """The table's frame rows, split into cells (the header and the notes left out)."""
    return [line.split() for line in out.splitlines() if re.match(r"^\s+\d+\s", line)]


def header(out: str) -> list[str]:
    return next(line.split() for line in out.splitlines() if line.lstrip().startswith("#"))


def test_rows_in_time_order_with_the_connection_as_a_column(tmp_path):
    # the consumer's packets are written after all the producer's, but happened in between
    p = write_pcap(tmp_path, [producer(50000, T0), consumer(50001, T0 + 0.0025)])
    r = kd(p)
    assert r.returncode == 0, r.stderr
    cols = header(r.stdout)
    assert cols == ["#", "time", "conn", "dir", "api", "ver", "corr", "client", "size", "latency", "summary"]
    got = [(row[2], row[3], row[4]) for row in rows(r.stdout)]
    assert got == [("c0", "req", "Metadata"), ("c0", "resp", "Metadata"), ("c0", "req", "Produce"),
                   ("c1", "req", "Fetch"), ("c0", "resp", "Produce"), ("c1", "resp", "Fetch")]
    assert [row[0] for row in rows(r.stdout)] == ["0", "1", "2", "4", "3", "5"]   # frames keep their numbers
    times = [row[1] for row in rows(r.stdout)]
    assert times == sorted(times) and times[0] == "22:13:20.004000"
    # each connection's line comes before its first row
    lines = r.stdout.splitlines()
    first_c1 = next(i for i, line in enumerate(lines) if re.match(r"^\s+\d+\s+\S+\s+c1\s", line))
    assert lines[first_c1 - 1].startswith("== c1: 127.0.0.1:50001 > 127.0.0.1:9092")
    assert lines[0].startswith("== c0: 127.0.0.1:50000 > 127.0.0.1:9092")


def test_dates_when_the_capture_spans_more_than_a_day(tmp_path):
    p = write_pcap(tmp_path, [producer(50000, T0), consumer(50001, T0 + 2 * DAY)])
    r = kd(p)
    assert r.returncode == 0, r.stderr
    stamps = [" ".join(row[1:3]) for row in rows(r.stdout)]
    assert stamps[0] == "2023-11-14 22:13:20.004"
    assert stamps[-1].startswith("2023-11-16 22:13:20.")
    assert len(stamps) == 6
    # within one day: times alone, to the microsecond
    one_day = write_pcap(tmp_path, [producer(50000, T0), consumer(50001, T0 + 3600)], name="one.pcap")
    assert [row[1] for row in rows(kd(one_day).stdout)][-1] == "23:13:20.005000"


def test_latency_on_each_response_row_and_in_json(tmp_path):
    prod = producer(50000, T0)
    p = write_pcap(tmp_path, [prod])
    # the data packets' times (request, response, request, response), as the pcap holds them: microseconds
    packet_time = [int(t) + round((t - int(t)) * 1e6) / 1e6 for t, _, info in prod.packets if info["len"]]
    want = [None, packet_time[1] - packet_time[0], None, packet_time[3] - packet_time[2]]
    table = rows(kd(p, "--columns", "#,dir,api,latency").stdout)
    assert [row[:3] for row in table] == [["0", "req", "Metadata"], ["1", "resp", "Metadata"],
                                          ["2", "req", "Produce"], ["3", "resp", "Produce"]]
    assert [row[3] for row in table] == ["-" if s is None else f"{s * 1000:.3f}ms" for s in want]
    assert (table[1][3], table[3][3]) == ("1.000ms", "0.999ms")
    frames = [json.loads(x) for x in kd(p, "--json").stdout.splitlines() if '"frame"' in x[:20]]
    assert [f["latency"] if f["latency"] is None else round(f["latency"], 6) for f in frames] == \
        [None if s is None else round(s, 6) for s in want]


def test_filters_by_api_topic_and_client(tmp_path):
    p = write_pcap(tmp_path, [producer(50000, T0), consumer(50001, T0 + 0.0025),
                              producer(50002, T0 + 0.005, client="other", topic="payments")], order="time")
    every = kd(p)
    assert every.returncode == 0 and len(rows(every.stdout)) == 10

    def shown(*args):
        r = kd(p, *args)
        assert r.returncode == 0, r.stderr
        return [(row[2], row[4]) for row in rows(r.stdout)], r.stdout.splitlines()[-1]

    got, last = shown("--api", "Produce")
    assert got == [("c0", "Produce"), ("c0", "Produce"), ("c2", "Produce"), ("c2", "Produce")]
    assert last.startswith("frames: 10 (4 shown)")
    assert shown("--api", "fetch")[0] == [("c1", "Fetch"), ("c1", "Fetch")]
    assert shown("--api", "1", "--api", "3")[0] == [("c0", "Metadata"), ("c0", "Metadata"), ("c1", "Fetch"),
                                                     ("c1", "Fetch"), ("c2", "Metadata"), ("c2", "Metadata")]
    assert shown("--topic", "payments")[0] == [("c2", "Metadata"), ("c2", "Metadata"), ("c2", "Produce"),
                                               ("c2", "Produce")]
    assert shown("--client", "other", "--api", "Produce")[0] == [("c2", "Produce"), ("c2", "Produce")]
    assert shown("--client", "nobody")[0] == []
    # the filters choose the frames of every output
    recs = [json.loads(x) for x in kd(p, "--records", "--json", "--topic", "orders").stdout.splitlines()]
    assert [(o["api"], o["topic"], o["key"]) for o in recs] == [("Produce", "orders", "user-1")]
    frames = [json.loads(x) for x in kd(p, "--json", "--client", "consumer-1").stdout.splitlines()]
    assert [f.get("apiName") for f in frames] == ["Fetch", "Fetch", None]
    assert frames[-1]["shown"] == 2 and frames[-1]["frames"] == 10


@pytest.mark.parametrize("args, message", [
    (["--api", "Bogus"], "--api: no Kafka API 'Bogus'"),
    (["--api", "9999"], "--api: no Kafka API '9999'"),
    (["--topic", "bad name!"], "cannot be a Kafka topic name"),
    (["--topic", ""], "cannot be a Kafka topic name"),
    (["--topic", ".."], "cannot be a Kafka topic name"),
    (["--topic", "x" * 250], "cannot be a Kafka topic name"),
    (["--client", "c" * 40000], "--client: a client id is at most 32767 bytes"),
    (["--frame", "0", "--api", "Produce"], "--frame picks one frame"),
])
def test_impossible_filters_are_usage_errors(tmp_path, args, message):
    p = write_pcap(tmp_path, [producer(50000, T0)])
    r = kd(p, *args)
    assert r.returncode == 2 and message in r.stderr and r.stdout == ""


def test_the_exit_rule_is_the_same_with_filters(tmp_path):
    # a fetched batch whose last byte was changed: crc-mismatch
    damaged = BATCH[:-1] + bytes([BATCH[-1] ^ 0xFF])
    c = cb.Conversation(client=("127.0.0.1", 50001), server=("127.0.0.1", 9092), t0=T0 + 1)
    c.send("c", cb.fetch_v12_request(1, client="consumer-1"))
    c.send("s", cb.fetch_v12_response(1, [(0, damaged, b"\x00")]))
    c.close()
    p = write_pcap(tmp_path, [producer(50000, T0), c])
    whole = kd(p)
    assert whole.returncode == 1
    only_produce = kd(p, "--api", "Produce")
    assert only_produce.returncode == 1           # the damage is in the input, shown or not
    assert all(row[4] == "Produce" for row in rows(only_produce.stdout))
    assert only_produce.stdout.splitlines()[-1].endswith(whole.stdout.splitlines()[-1].split("  (")[-1])
    clean = write_pcap(tmp_path, [producer(50000, T0)], name="clean.pcap")
    assert kd(clean, "--api", "Fetch").returncode == 0


def _visible(out: str) -> list[str]:
    return [ANSI.sub("", line) for line in out.splitlines()]


@pytest.mark.parametrize("columns", [80, 120, 200])
@pytest.mark.parametrize("days", [0, 2], ids=["one-day", "days"])
def test_the_table_fits_the_terminal(tmp_path, columns, days):
    long_client = "client-with-a-rather-long-name-" + "x" * 40
    p = write_pcap(tmp_path, [producer(50000, T0, client=long_client, topic="orders-" + "y" * 100),
                              consumer(50001, T0 + days * DAY + 0.001)])
    r = kd(p, columns=columns, color=True)
    assert r.returncode == 0, r.stderr
    lines = _visible(r.stdout)
    assert max(len(line) for line in lines) <= columns, [line for line in lines if len(line) > columns]
    cols = header(r.stdout and "\n".join(lines))
    if columns == 80:
        want = ["#", "time", "conn", "dir", "api", "latency", "summary"]
        assert cols == (want if days else want[:5] + ["client"] + want[5:])
    else:
        assert cols == ["#", "time", "conn", "dir", "api", "ver", "corr", "client", "size", "latency", "summary"]
    produce = next(line for line in lines if " Produce " in line and " req " in line)
    if columns == 200:
        assert "orders-" + "y" * 40 in produce       # the room goes to the value columns
    assert "…" in produce                           # a cut value says so
    # the frame rows keep their columns aligned: the time column starts at the same place
    starts = {line.index(":") for line in lines if re.match(r"^\s+\d+\s", line)}
    assert len(starts) == 1


def test_piped_output_keeps_the_stable_layout(tmp_path):
    p = write_pcap(tmp_path, [producer(50000, T0, client="c" * 30)])
    for columns in (80, 200):
        r = kd(p, columns=columns)
        assert "\x1b" not in r.stdout
        assert header(r.stdout) == ["#", "time", "conn", "dir", "api", "ver", "corr", "client", "size",
                                    "latency", "summary"]
    assert kd(p, "--wide", columns=80, color=True).stdout.count("latency") == 1
    picked = kd(p, "--columns", "#,api,latency", columns=80)
    assert header(picked.stdout) == ["#", "api", "latency"]
    assert kd(p, "--columns", "nope").returncode == 2


def test_long_notes_wrap_to_the_terminal_and_keep_their_text(tmp_path):
    c = cb.Conversation(client=("127.0.0.1", 50001), server=("127.0.0.1", 9092), t0=T0)
    c.send("s", cb.fetch_v12_response(9, [(0, BATCH, b"\x00")]))   # a response with no request
    c.close()
    p = write_pcap(tmp_path, [c])
    wide = kd(p)
    note = next(line for line in wide.stdout.splitlines() if line.lstrip().startswith("!"))
    assert len(note) > 60
    narrow = _visible(kd(p, columns=60, color=True).stdout)
    assert max(len(line) for line in narrow) <= 60
    assert " ".join(" ".join(narrow).split()).count(" ".join(note.split())) == 1


def test_client_ids_and_topics_are_escaped_and_keep_the_columns(tmp_path):
    p = write_pcap(tmp_path, [producer(50000, T0, client="evil\x1b]0;pwned\x07\x1b[2J", topic="ord\x1b[2Jers")])
    for columns, color in ((None, False), (120, True)):
        r = kd(p, columns=columns, color=color)
        shown = ANSI.sub("", r.stdout)
        assert "\x07" not in shown and "\x1b" not in shown
        assert "evil\\x1b" in shown and "ord\\x1b[2Jers" in shown
        sizes = {line.index(" req ") if " req " in line else line.index(" resp ")
                 for line in shown.splitlines() if re.match(r"^\s+\d+\s", line)}
        assert len(sizes) == 1


def test_rows_are_held_in_a_bounded_window(tmp_path, monkeypatch):
    """Ordering holds at most TIME_ORDER_WINDOW rows: beyond it rows come out as they were decoded."""
    import io

    from kafkadump.reports.capture import CaptureRequest
    from kafkadump.reports.capture import capture_report
    from kafkadump.render import frame_views
    from kafkadump.base.status import Tally

    p = write_pcap(tmp_path, [producer(50000, T0), consumer(50001, T0 + 0.0025)])   # file order: c0 then c1

    def order(window):
        monkeypatch.setattr(frame_views, "TIME_ORDER_WINDOW", window)
        out = io.StringIO()
        frame_views.write_frames_table(capture_report(str(p), CaptureRequest(), Tally(), time_span=True), out)
        return [row[0] for row in rows(out.getvalue())]

    assert order(1024) == ["0", "1", "2", "4", "3", "5"]     # time order
    assert order(0) == ["0", "1", "2", "3", "4", "5"]        # nothing held: decode order


def test_the_table_decodes_no_more_than_the_json(tmp_path, monkeypatch):
    """Counted, not timed: the table's time span reads packet record headers only, so it parses each
    packet once, as --json does, and renders each frame once."""
    import io

    from kafkadump.reports.capture import CaptureRequest
    from kafkadump.reports.capture import capture_report
    from kafkadump.render import frame_views
    from kafkadump.base.status import Tally
    from kafkadump.sources import pcap

    conversations = [producer(50000, T0), consumer(50001, T0 + 2 * DAY)]
    p = write_pcap(tmp_path, conversations)
    parsed = []
    real = pcap.CaptureReader.__iter__

    def counted(reader):   # the packets the reader takes apart, on the compiled path or the pure one
        for p in real(reader):
            parsed.append(1)
            yield p

    monkeypatch.setattr(pcap.CaptureReader, "__iter__", counted)
    summaries = []
    real_summary = frame_views.summary
    monkeypatch.setattr(frame_views, "summary", lambda f, *rest: summaries.append(f.index) or real_summary(f, *rest))

    frame_views.write_frames_json(capture_report(str(p), CaptureRequest(), Tally()), io.StringIO())
    json_parsed = len(parsed)
    parsed.clear()
    frame_views.write_frames_table(capture_report(str(p), CaptureRequest(), Tally(), time_span=True), io.StringIO())
    assert len(parsed) == json_parsed == sum(len(c.packets) for c in conversations)   # each packet once
    assert sorted(summaries) == list(range(6))    # one summary per frame


@pytest.mark.parametrize("seconds, text", [
    (None, "-"), (0.000412, "0.412ms"), (0.0123456, "12.35ms"), (0.4567, "456.7ms"), (1.2041, "1.204s"),
    (99.9994, "99.999s"), (3600.4, "3600s"), (-0.0021, "-2.100ms"),
])
def test_latency_text_fits_its_column(seconds, text):
    from kafkadump.render.frame_views import FRAME_COLUMNS, latency_text

    width = next(c.width for c in FRAME_COLUMNS if c.title == "latency")
    assert latency_text(seconds) == text and len(text) <= width


def test_time_text_with_and_without_dates():
    from kafkadump.render.frame_views import DATED_TIME_WIDTH, spans_days, time_text

    assert time_text(T0 + 0.004512) == "22:13:20.004512"
    assert time_text(T0 + 0.004512, dated=True) == "2023-11-14 22:13:20.004"
    assert len(time_text(T0, dated=True)) == DATED_TIME_WIDTH
    assert spans_days(T0, T0 + 2 * 3600)            # 22:13 to 00:13 the next day: two dates
    assert not spans_days(T0, T0 + 600)
    assert not spans_days(10.0, 90000.0)             # seconds of the day (tcpdump text): no dates
