"""The compiled hot path against its pure-Python twin: byte-identical output, findings included.

The pure-Python code is the reference (kafkadump.accel).  Each test renders the same bytes
twice, once with the compiled loops and once with them switched off (as
KAFKADUMP_PURE_PYTHON=1 does for a whole process), and requires the same text: every batch
line (findings and all), every record line in every --encoding, and every field of every
decoded record.  The inputs: the fixtures, the shared corpus, and generated batches, plain
and damaged (cut, bytes flipped, odd headers and lengths, non-UTF-8 header keys, text and
non-text values).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from builders import T0, Rec, compress, fix_crc, v2_batch
from conftest import need_corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkadump import accel
from kafkadump.decoders.batches import CrcScan
from kafkadump.decoders.batches import Options
from kafkadump.decoders.batches import iter_batches
from kafkadump.decoders.batches import batch as batch_module
from kafkadump.decoders.batches import step as step_module
from kafkadump.decoders.batches import walk as walk_module
from kafkadump.decoders.batches.model import Batch
from kafkadump.decoders.batches.model import Record
from kafkadump.decoders.batches.model import record_chunks
from kafkadump.render import jsonl
from kafkadump.render.jsonl import RecordLines, item_line
from kafkadump.objects.records import item_object

ROOT = Path(__file__).resolve().parent.parent
FILE = "orders-3/00000000000000000000.log"
ENCODINGS = ("auto", "base64", "hex", "text")
CORPUS_BYTES = 64 << 10

compiled = pytest.mark.skipif(accel.compiled_loops(Record) is None,
                              reason="the compiled hot path is not built here (or KAFKADUMP_PURE_PYTHON is set)")


@contextmanager
def pure_python() -> Iterator[None]:
    """Switch the compiled loops off in this process (what KAFKADUMP_PURE_PYTHON=1 does at start)."""
    saved = batch_module._HOT, jsonl._HOT, walk_module._HOT, step_module._HOT
    batch_module._HOT = jsonl._HOT = walk_module._HOT = step_module._HOT = None
    try:
        yield
    finally:
        batch_module._HOT, jsonl._HOT, walk_module._HOT, step_module._HOT = saved


def _record_fields(r: Record) -> tuple:
    return tuple(getattr(r, name) for name in Record.__slots__)


def render(data: bytes, encodings: tuple[str, ...] = ENCODINGS, file: str = FILE) -> tuple[str, list]:
    """Every batch line, then each batch's record lines in every encoding; and every record's fields."""
    out = io.StringIO()
    writers = [RecordLines(e) for e in encodings]
    fields = []
    for item in iter_batches(data, file):
        out.write(item_line(item) + "\n")
        if not isinstance(item, Batch) or not item.records:
            continue
        for w in writers:  # the stream writer (from the bytes, on the compiled path) ...
            out.write("".join(w.record_text(item, item.records)))
        for chunk in record_chunks(item.records, item.payload_bytes):  # ... and from the record objects
            fields.extend(_record_fields(r) for r in chunk)
            for w in writers:
                out.write(w.batch_lines(item, chunk))
    scan = CrcScan(data, file, Options(records=False), threads=1)  # verify-crc's walk
    for item in scan:
        out.write(item_line(item) + "\n")
    out.write(f"verify-crc: {scan.batches} batches, {scan.bytes} bytes, {scan.bad} bad\n")
    return out.getvalue(), fields


def assert_same(data: bytes, **kw) -> str:
    fast = render(data, **kw)
    with pure_python():
        slow = render(data, **kw)
        for item in iter_batches(data, kw.get("file", FILE)):  # the fast batch line is batch_object's JSON
            assert item_line(item) == json.dumps(item_object(item), separators=(",", ":"))
    assert fast[0] == slow[0]
    assert fast[1] == slow[1]
    return fast[0]


# --- the project's fixtures and the shared corpus --------------------------------------------------------

@compiled
@pytest.mark.parametrize("path", sorted((ROOT / "fixtures").glob("*/*.log")), ids=lambda p: p.parent.name + "/" + p.name)
def test_fixtures(path):
    text = assert_same(path.read_bytes(), file=str(path))
    assert '"type":"record"' in text


@compiled
def test_shared_corpus_segments():
    corpus = need_corpus("real/segments")
    paths = sorted(corpus.rglob("*.log"))
    assert paths
    records = 0
    for path in paths:
        # each file's first 64 KiB (a cut tail now and then: damage both paths must agree on too)
        with open(path, "rb") as f:
            data = f.read(CORPUS_BYTES)
        text = assert_same(data, encodings=("auto", "base64"), file=str(path))
        records += text.count('"type":"record"')
    assert records > 1000


# --- generated batches ----------------------------------------------------------------------------------

_bytes = st.one_of(st.none(), st.binary(max_size=40),
                   st.text(max_size=20).map(lambda s: s.encode("utf-8")),
                   st.sampled_from([b"", b"plain", b'q"uote\\back\tTab\nLF\rCR', b"\x7f", b"\xc2\x85", b"\xc2\xa0",
                                    "\u2028\u202e\u061c\u200e\u2066".encode(), b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                                    b"\xe0\x80\x80", b"\xf0\x9f\x98\x80", b"\x00", b"\x1b[31m"]),
                   # Schema Registry framing: magic 0, a 4-byte id (any sign), a payload
                   st.binary(max_size=8).map(lambda b: b"\x00" + b))
_header_key = st.one_of(st.text(max_size=8), st.sampled_from(["\x00", "\x7f", "\u00e9", '"\\', "\u2028",
                                                              "__key_schema_id", "__value_schema_id"]))
_records = st.lists(st.builds(Rec, _bytes, _bytes,
                              ts_delta=st.one_of(st.integers(-3, 3), st.integers(-(1 << 63), (1 << 63) - 1)),
                              headers=st.lists(st.tuples(_header_key, _bytes), max_size=3).map(tuple),
                              attributes=st.integers(-128, 127)),
                    min_size=0, max_size=6)


@st.composite
def batches(draw) -> bytes:
    recs = draw(_records)
    kw = {}
    if draw(st.booleans()):
        kw["base_ts"] = draw(st.integers(-(1 << 63), (1 << 63) - 1))
    if draw(st.booleans()):
        kw["attributes"] = draw(st.sampled_from([0x08, 0x40, 0x10, 0x80]))
    if draw(st.booleans()) and recs:
        kw["last_offset_delta"] = draw(st.integers(-2, len(recs) + 2))
    if draw(st.booleans()):
        kw["record_count"] = draw(st.integers(-1, len(recs) + 2))
    base = draw(st.sampled_from([0, 5, (1 << 63) - 3, -1]))
    if recs and draw(st.booleans()):  # offset deltas out of order
        deltas = draw(st.permutations(range(len(recs))))
        recs = [Rec(r.key, r.value, r.ts_delta, d, r.headers, r.attributes) for r, d in zip(recs, deltas)]
    return _build(base, recs, **kw)


def _build(base: int, recs: list[Rec], **kw) -> bytes:
    """``v2_batch``, with a maxTimestamp the header can hold when the largest record timestamp cannot."""
    base_ts = kw.get("base_ts", T0)
    top = max((base_ts + r.ts_delta for r in recs), default=base_ts)
    if not -(1 << 63) <= top < (1 << 63):
        kw["max_ts"] = (1 << 63) - 1
    return v2_batch(base, recs, **kw).data


@st.composite
def damaged(draw) -> bytes:
    data = bytearray(b"".join(draw(st.lists(batches(), min_size=1, max_size=3))))
    how = draw(st.sampled_from(["cut", "flip", "flip-fixed", "append", "none"]))
    if how == "cut":
        data = data[:draw(st.integers(0, len(data)))]
    elif how in ("flip", "flip-fixed"):
        for _ in range(draw(st.integers(1, 3))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= draw(st.integers(1, 255))
        if how == "flip-fixed":
            fix_crc(data, 0)  # a damaged record behind an intact CRC: the record loop's own findings
    elif how == "append":
        data += draw(st.binary(max_size=30))
    return bytes(data)


@compiled
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_generated_batches(data):
    assert_same(data)


@compiled
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged())
def test_damaged_batches(data):
    assert_same(data)


@compiled
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_records, st.sampled_from([1, 2, 3, 4]))
def test_compressed_batches(recs, codec):
    assert_same(_build(0, recs, codec=codec))


@compiled
def test_trailing_bytes_inside_the_batch_hand_back_to_python():
    """Bytes after the declared records (inside an intact CRC): the finding comes from the Python loop."""
    lay = v2_batch(0, [Rec(b"k", b"v"), Rec(b"k2", b"v2")], record_count=1)
    text = assert_same(lay.data)
    assert "trailing-bytes" in text


@compiled
def test_a_batch_of_many_records_streams_the_same():
    recs = [Rec(b"k%d" % i, b"v" * (i % 7), ts_delta=i, headers=(("h", b"\xff"),)) for i in range(9000)]
    text = assert_same(v2_batch(0, recs).data, encodings=("auto",))
    assert text.count('"type":"record"') == 2 * 9000  # by the stream writer, then from the objects


class _Marked(str):
    """A str the compiled writer does not take as one (not exactly a str): it hands back."""


@compiled
def test_a_hand_back_in_the_middle_of_a_stream():
    recs = [Rec(b"k%d" % i, b"v%d" % i) for i in range(9000)]
    data = v2_batch(0, recs).data

    def lines() -> str:
        w = RecordLines("text")
        plain = w._val_json
        w._val_json = lambda b: _Marked(plain(b)) if b == b"k5000" else plain(b)
        (item,) = iter_batches(data, FILE)
        return "".join(w.record_text(item, item.records))

    fast = lines()
    with pure_python():
        slow = lines()
    assert fast == slow and fast.count("\n") == 9000 and '"key":"k5000"' in fast


@compiled
def test_garbage_after_a_batch():
    plain = v2_batch(0, [Rec(b"k", b"x" * 100)] * 3)
    assert_same(plain.data + compress(1, b"not a batch"))


# --- the switch ------------------------------------------------------------------------------------------

def _cli(*args: str, pure: bool) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop(accel.PURE_ENV, None)
    if pure:
        env[accel.PURE_ENV] = "1"
    return subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, text=True, env=env,
                          timeout=60)


def test_version_names_the_active_path():
    pure = _cli("--version", pure=True)
    assert pure.stdout.strip() == "kafkadump 0.1.0 (pure Python)"
    default = _cli("--version", pure=False)
    built = accel.hotloops_built()
    assert default.stdout.strip() == f"kafkadump 0.1.0 ({'compiled hot path' if built else 'pure Python'})"


@compiled
def test_cli_output_is_the_same_on_both_paths():
    path = str(ROOT / "fixtures" / "damaged" / "00000000000000000000.log")
    for args in (["records", "--json", path], ["batches", "--json", path], ["verify-crc", "--json", path],
                 ["records", path]):
        fast, slow = _cli(*args, pure=False), _cli(*args, pure=True)
        assert (fast.stdout, fast.returncode) == (slow.stdout, slow.returncode)
        assert fast.stdout


# --- keyPayload / valuePayload: framing detection in every record line ------------------------------------

MAGIC0 = [b"\x00" + bytes(range(1, n)) for n in range(1, 9)]  # magic 0 and 0..7 bytes more: lengths 1..8
GUID = bytes(range(16))


def _payload_fields(text: str) -> list[tuple[object, object]]:
    return [(o["keyPayload"], o["valuePayload"]) for o in map(json.loads, text.splitlines()[:-1])
            if o.get("type") == "record"]


@compiled
def test_framed_values_of_every_length_are_the_same_on_both_paths():
    ids = [b"\x00\x00\x00\x00\x11", b"\x00\xff\xff\xff\xff", b"\x00\x80\x00\x00\x00", b"\x00\x00\x00\x00\x00"]
    values = [b"", b"plain", b"\x01\x00"] + MAGIC0 + ids
    recs = [Rec(k, v) for k in (None, b"\x00\x00\x00\x00\x2a") for v in values + [None]]
    text = assert_same(v2_batch(0, recs).data)
    got = _payload_fields(text)
    assert len(got) == 2 * len(recs) * len(ENCODINGS)  # stream writer and object writer, every encoding
    plain = {"framing": None}
    want_values = [plain, plain, plain] + \
        [{"framing": "confluent", "certain": False, "schemaId": None, "guid": None}] * 4 + \
        [{"framing": "confluent", "certain": True, "schemaId": 0x01020304, "guid": None}] * 4 + \
        [{"framing": "confluent", "certain": True, "schemaId": 17, "guid": None},
         plain, plain,   # a negative id: not framed
         {"framing": "confluent", "certain": False, "schemaId": 0, "guid": None}, None]
    key42 = {"framing": "confluent", "certain": True, "schemaId": 42, "guid": None}
    assert got[:len(recs)] == [(None, v) for v in want_values] + [(key42, v) for v in want_values]


@compiled
def test_schema_id_headers_are_the_same_on_both_paths():
    headers = [(("__value_schema_id", b"\x00\x00\x00\x00\x07"),),
               (("__key_schema_id", b"\x01" + GUID), ("h", b"x")),
               (("__value_schema_id", None),),
               (("__value_schema_id", b"\x00\x00"),),
               (("__value_schema_id", b"\x00\x00\x00\x00\x01"), ("__value_schema_id", b"\x00\x00\x00\x00\x02"))]
    recs = [Rec(b"k", b"plain", headers=h) for h in headers] + [Rec(b"k", b"\x00\x00\x00\x00\x05")] * 3
    got = _payload_fields(assert_same(v2_batch(0, recs).data))
    plain = {"framing": None}

    def header(certain, sid=None, guid=None):
        return {"framing": "header-id", "certain": certain, "schemaId": sid, "guid": guid}

    five = {"framing": "confluent", "certain": True, "schemaId": 5, "guid": None}
    assert got[:len(recs)] == [(plain, header(True, 7)),
                               (header(True, guid="00010203-0405-0607-0809-0a0b0c0d0e0f"), plain),
                               (plain, header(False)), (plain, header(False)), (plain, header(True, 2)),
                               (plain, five), (plain, five), (plain, five)]
