"""Every compiled function against its pure-Python twin (kafkadump.accel: the one loader).

The pure-Python code is the reference.  Each compiled module (``accel.MODULES``) computes what
its Python twin computes for the plain case and hands anything else back; the tests here run
both on the same bytes and require the same output, byte for byte:

- the record loop and the record lines (``recordloop``, ``recordlines``), the walk's step and
  the batch lines (``batchstep``, ``batchlines``): every batch line (findings and all), every
  record line in every --encoding and every field of every decoded record, on the fixtures,
  the shared corpus and generated batches, plain and damaged (cut, bytes flipped, odd headers
  and lengths, non-UTF-8 header keys, text and non-text values), and each loop at the edges of
  what it takes (varints at their limits, lengths that lie, classes it does not know);
- verify-crc's hop and its CRC-32C (``crchop``): every code the CPU runs against the crc32c
  package (every length around the folding code's edges, every alignment, continuing any CRC,
  random bytes, the corpus's stored CRCs), and the hop's verdicts against the pure walk;
- the Spark column loop (``arrowcols``): its rows against the decoder's records (the Spark
  rows themselves: tests/test_spark_arrow.py, which needs pyarrow and pyspark);
- the capture reader's packet loop (``pcapread``): the same packets, counts, findings and
  output with it on and off, on every link type, byte order and time unit, odd and damaged
  captures and the corpus.

:data:`TWINS` names each compiled function's twin and the tests that hold them equal: a function
a compiled module exports without an entry there fails :func:`test_every_compiled_function_has_a_twin`.
"""

from __future__ import annotations

import io
import json
import mmap
import os
import platform
import random
import shutil
import struct
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import capture_builders as cb
import pytest
from builders import HEADER_SIZE, T0, Rec, compress, fix_crc, v2_batch
from conftest import CORPUS, need_corpus
from crc32c import crc32c as oracle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from primitive_encoders import encode_varint

from kafkadump import accel
from kafkadump.reports.capture import CaptureRequest
from kafkadump.reports.capture import capture_report
from kafkadump.decoders.batches import CrcScan
from kafkadump.decoders.batches import Options
from kafkadump.decoders.batches import iter_batches
from kafkadump.decoders.batches import batch as batch_module
from kafkadump.decoders.batches import step as step_module
from kafkadump.decoders.batches import walk as walk_module
from kafkadump.decoders.batches.batch import decode_batch_header
from kafkadump.decoders.batches.crc import crc32c
from kafkadump.decoders.batches.model import EVERY_RECORD, Batch, PlainRun
from kafkadump.decoders.batches.model import Record
from kafkadump.decoders.batches.model import record_chunks
from kafkadump.base.findings import Code
from kafkadump.base.findings import Finding
from kafkadump.render import frame_views, generated_lines, jsonl
from kafkadump.render.jsonl import RecordLines, item_line
from kafkadump.reports.query import RecordQuery
from kafkadump.reports.segments import batch_report, batch_windows, record_report, record_windows
from kafkadump.objects.records import item_object
from kafkadump.base.status import Tally
from kafkadump.sources import pcap

ROOT = Path(__file__).resolve().parent.parent
ACCEL_DIR = ROOT / "kafkadump" / "accel"
FILE = "orders-3/00000000000000000000.log"
ENCODINGS = ("auto", "base64", "hex", "text")
CORPUS_BYTES = 64 << 10

compiled = pytest.mark.skipif(any(accel.compiled(name) is None for name in accel.HOT_PATH),
                              reason="the compiled hot path is not built here (or KAFKADUMP_PURE_PYTHON is set)")
HOP = accel.compiled("crchop")
COLS = accel.compiled("arrowcols")
cols_compiled = pytest.mark.skipif(COLS is None, reason="the compiled column loop is not built (or is off)")
LOOP = accel.compiled("pcapread")
capture_compiled = pytest.mark.skipif(LOOP is None, reason="the compiled capture loop is not built "
                                                           "(or KAFKADUMP_PURE_PYTHON is set): nothing to compare")


@contextmanager
def pure_python() -> Iterator[None]:
    """Switch the compiled loops off in this process (what KAFKADUMP_PURE_PYTHON=1 does at start)."""
    saved = batch_module._HOT, jsonl._HOT, jsonl._BATCH_HOT, walk_module._HOT, step_module._HOT
    batch_module._HOT = jsonl._HOT = jsonl._BATCH_HOT = walk_module._HOT = step_module._HOT = None
    try:
        yield
    finally:
        batch_module._HOT, jsonl._HOT, jsonl._BATCH_HOT, walk_module._HOT, step_module._HOT = saved


# --- every compiled function, its pure-Python twin, and the tests that hold them equal -------------------

_CLASSES = ("test_a_record_class_the_loops_do_not_know_keeps_the_pure_path", "test_the_compiled_loops_know_record_and_batch")
_RECORDS = ("test_fixtures", "test_shared_corpus_segments", "test_generated_batches", "test_damaged_batches",
            "test_record_edges", "test_every_loop_over_a_buffer_hands_back_positions_outside_it")
_LINES = ("test_fixtures", "test_generated_batches", "test_damaged_batches", "test_a_batch_of_many_records_streams_the_same",
          "test_a_hand_back_in_the_middle_of_a_stream", "test_framed_values_of_every_length_are_the_same_on_both_paths",
          "test_schema_id_headers_are_the_same_on_both_paths")
_WINDOWS = ("test_window_reports_of_generated_segments", "test_window_reports_of_one_record_batches",
            "test_window_reports_of_the_corpus", "test_windows_expand_to_the_walks_batches")
_CAPTURE = ("test_every_link_type_byte_order_and_time_unit_is_read_the_same", "test_cut_and_damaged_files_are_read_the_same",
            "test_corpus_is_read_the_same")
TWINS: dict[str, tuple[str, tuple[str, ...]]] = {
    "recordloop.configure": ("decode.model.Record's slots", _CLASSES),
    "recordloop.record_run": ("decode.batch.decode_record_run", _RECORDS),
    "recordloop.record_check": ("decode.batch's check of a plain run (RecordStream)", _RECORDS),
    "recordlines.configure": ("decode.model.Record's slots", _CLASSES),
    "recordlines.format_lines": ("render.jsonl.RecordLines.batch_lines' loop", _LINES),
    "recordlines.format_run": ("render.jsonl.RecordLines.record_text's stream writer",
                               _LINES + ("test_every_loop_over_a_buffer_hands_back_positions_outside_it",)),
    "batchstep.configure_batch": ("decode.model.Batch's slots",
                                  _CLASSES + ("test_a_batch_class_the_loops_do_not_know_is_handed_back",)),
    "batchstep.batch_hop": ("decode.step.decode_at's step over an intact plain v2 batch (decode_batch_header)",
                            ("test_the_hop_makes_the_batch_the_header_decoder_makes",
                             "test_the_hop_hands_back_what_the_python_step_judges", "test_fixtures", "test_damaged_batches",
                             "test_every_loop_over_a_buffer_hands_back_positions_outside_it")),
    "batchstep.plain_window": ("decode.walk.iter_batches' steps over plain batches (decode_at, the offset order)",
                               _WINDOWS + ("test_every_loop_over_a_buffer_hands_back_positions_outside_it",
                                           "test_a_window_stops_where_the_walk_has_something_to_say")),
    "batchlines.window_batch_lines": ("render.jsonl.python_run_batch_lines (each batch's batch_line)",
                                      _WINDOWS + ("test_every_loop_over_a_buffer_hands_back_positions_outside_it",)),
    "recordlines.window_record_lines": ("render.jsonl.RecordLines.python_run_text (each batch's record_text)",
                                        _WINDOWS + ("test_every_loop_over_a_buffer_hands_back_positions_outside_it",)),
    "batchlines.configure_batch": ("decode.model.Batch's slots",
                                   _CLASSES + ("test_a_batch_class_the_loops_do_not_know_is_handed_back",)),
    "batchlines.batch_json": ("render.jsonl.python_batch_line",
                              ("test_batch_lines_are_the_same_on_both_paths", "test_fixtures", "test_damaged_batches")),
    "crchop.crc_hop": ("decode.walk.CrcScan's loop over intact batches",
                       ("test_hop_equals_pure_serial_and_threaded", "test_hop_stops_at_a_failed_crc_and_at_until",
                        "test_hop_with_the_packages_function", "test_scan_with_the_packages_function",
                        "test_every_loop_over_a_buffer_hands_back_positions_outside_it")),
    "crchop.crc32c": ("the crc32c package's crc32c",
                      ("test_every_length_alignment_and_seed", "test_continuing_equals_one_call", "test_random_bytes",
                       "test_large_buffer_without_the_gil", "test_corpus_stored_crcs")),
    "crchop.crc32c_codes": ("crc32c.h's codes, each against the crc32c package",
                            ("test_codes_named_the_one_in_use_first", "test_every_length_alignment_and_seed")),
    "arrowcols.record_columns": ("decode.batch.decode_record_run's records (the Spark rows: tests/test_spark_arrow.py)",
                                 ("test_record_columns_equal_the_decoders_records",
                                  "test_record_columns_hand_back_without_touching_the_buffers")),
    "pcapread.pcap_run": ("sources.pcap.CaptureReader's packet loop (_pcap, packet_from_bytes)",
                          _CAPTURE + ("test_plain_packets_never_reach_the_python_parser",)),
    "pcapread.pcap_times": ("sources.pcap.CaptureReader.time_span",
                            _CAPTURE + ("test_packet_times_round_as_python_does",)),
}


def _exported(module: object) -> list[str]:
    """The functions a compiled module exports (its dir() but INTERFACE and dunders)."""
    return sorted(n for n in dir(module) if n != "INTERFACE" and not (n.startswith("__") and n.endswith("__")))


def test_every_compiled_module_is_loaded_by_the_one_loader():
    """Each C file beside the loader is one of its MODULES (and setup.py builds it)."""
    sources = sorted(p.stem for p in ACCEL_DIR.glob("*.c"))
    assert sources == sorted(accel.MODULES)
    setup = (ROOT / "setup.py").read_text()
    for name in accel.MODULES:
        assert f'twin("{name}"' in setup, name
    assert set(accel.HOT_PATH) <= set(accel.MODULES)


def test_every_compiled_function_has_a_twin():
    """A function a compiled module exports is named in TWINS, with tests of this module that exist."""
    seen = 0
    for name in accel.MODULES:
        module = accel._import(name)  # (built, whatever KAFKADUMP_PURE_PYTHON says)
        if module is None:
            continue
        seen += 1
        for fn in _exported(module):
            assert f"{name}.{fn}" in TWINS, f"{name}.{fn} has no pure-Python twin in TWINS (and no parity test)"
        assert [k for k in TWINS if k.startswith(name + ".") and k.split(".", 1)[1] not in _exported(module)] == []
    if not seen:
        pytest.skip("no compiled module is built here")
    for key, (_, tests) in TWINS.items():
        assert key.split(".")[0] in accel.MODULES, key
        for t in tests:
            assert callable(globals().get(t)), (key, t)


@pytest.mark.parametrize("name", sorted(accel.MODULES))
def test_a_module_of_another_interface_is_not_used(name, monkeypatch):
    """A build of other sources (its INTERFACE not the loader's: an in-place build older than the Python code,
    whose functions take other arguments) leaves that part on the pure path."""
    module = accel._import(name)
    if module is None or accel.pure_forced():
        pytest.skip(f"{name} is not built here (or KAFKADUMP_PURE_PYTHON is set)")
    monkeypatch.setattr(accel, "_LOADED", {})
    assert accel.compiled(name) is module
    monkeypatch.setattr(accel, "_LOADED", {})
    monkeypatch.setattr(module, "INTERFACE", accel.MODULES[name] + 1)
    assert accel.compiled(name) is None
    if name in accel.HOT_PATH:
        assert accel.active_path() == f"compiled hot path, pure Python for {name}"
    monkeypatch.setattr(accel, "_LOADED", {})
    monkeypatch.delattr(module, "INTERFACE")
    assert accel.compiled(name) is None


def test_the_pure_path_when_asked(monkeypatch):
    monkeypatch.setattr(accel, "_LOADED", {})
    monkeypatch.setenv(accel.PURE_ENV, "1")
    assert [accel.compiled(name) for name in accel.MODULES] == [None] * len(accel.MODULES)
    assert accel.active_path() == "pure Python"
    monkeypatch.setenv(accel.PURE_ENV, "0")
    monkeypatch.setattr(accel, "_LOADED", {})
    assert [accel.compiled(name) is not None for name in accel.MODULES] == [accel.built(name) for name in accel.MODULES]


def test_a_record_class_the_loops_do_not_know_keeps_the_pure_path():
    class Other:
        offset = 1

    for name in ("recordloop", "recordlines"):
        assert accel.compiled(name, Other) is None
        assert accel.compiled(name, Record) is accel.compiled(name)  # the real one again: the path is back
    items = list(iter_batches(v2_batch(0, [Rec(b"k", b"v")]).data, "x"))
    assert isinstance(items[0], Batch) and items[0].records[0].key == b"k"


def test_the_compiled_loops_know_record_and_batch():
    """A slot added to Record or Batch must be taught to record_slots.h or batch_slots.h (else every loop
    falls back to Python)."""
    if not all(accel.built(name) for name in accel.HOT_PATH) or accel.pure_forced():
        pytest.skip("the compiled hot path is not built here (or KAFKADUMP_PURE_PYTHON is set)")
    for name in ("recordloop", "recordlines"):
        assert accel.compiled(name, Record) is not None, name
    for name in ("batchstep", "batchlines"):
        assert accel.compiled(name, batch_class=Batch) is not None, name


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
    built = [accel.built(name) for name in accel.HOT_PATH]
    path = "compiled hot path" if all(built) else "pure Python" if not any(built) else "compiled hot path, pure Python"
    assert default.stdout.strip().startswith(f"kafkadump 0.1.0 ({path}")


@compiled
def test_cli_output_is_the_same_on_both_paths():
    path = str(ROOT / "fixtures" / "damaged" / "00000000000000000000.log")
    for args in (["records", "--json", path], ["batches", "--json", path], ["verify-crc", "--json", path],
                 ["records", path]):
        fast, slow = _cli(*args, pure=False), _cli(*args, pure=True)
        assert (fast.stdout, fast.returncode) == (slow.stdout, slow.returncode)
        assert fast.stdout


# === the record loop, the record lines, the batch lines: rendered on both paths ==========================

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



# === the edges of what the record loops, the step and the batch lines take =================================

def _with_record_body(body: bytes) -> bytes:
    """A one-record batch whose record is ``body`` (after its length varint), CRC fixed."""
    lay = v2_batch(0, [Rec(b"k", b"v")])
    data = bytearray(lay.data[:HEADER_SIZE]) + encode_varint(len(body)) + body
    data[8:12] = (len(data) - 12).to_bytes(4, "big")
    fix_crc(data, 0)
    return bytes(data)


# attributes, timestampDelta (varlong), offsetDelta, key length, key, value length, value, header count
PLAIN_TAIL = b"\x00" + b"\x02k" + b"\x02v" + b"\x00"
CASES = {
    "one-byte fields": b"\x00" + b"\x00" + b"\x00" + PLAIN_TAIL[1:],
    "non-minimal varints": b"\x00" + b"\x80\x00" + b"\x80\x80\x00" + PLAIN_TAIL[1:],
    "largest varlong": b"\x00" + b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01" + b"\x00" + PLAIN_TAIL[1:],
    "varlong past 64 bits": b"\x00" + b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x02" + b"\x00" + PLAIN_TAIL[1:],
    "varlong of 11 bytes": b"\x00" + b"\xff" * 10 + b"\x00" + b"\x00" + PLAIN_TAIL[1:],
    "varint of 32 bits": b"\x00" + b"\x00" + b"\xff\xff\xff\xff\x0f" + PLAIN_TAIL[1:],
    "varint past 32 bits": b"\x00" + b"\x00" + b"\xff\xff\xff\xff\x1f" + PLAIN_TAIL[1:],
    "varint of 6 bytes": b"\x00" + b"\x00" + b"\x80\x80\x80\x80\x80\x00" + PLAIN_TAIL[1:],
    "key length -2": b"\x00\x00\x00" + b"\x03" + b"\x02v\x00",
    "null key and value": b"\x00\x00\x00" + b"\x01" + b"\x01" + b"\x00",
    "key past the record": b"\x00\x00\x00" + b"\x7e" + b"\x02v\x00",
    "header count past the record": b"\x00\x00\x00\x02k\x02v" + b"\x7e",
    "header key not UTF-8": b"\x00\x00\x00\x02k\x02v" + b"\x02" + b"\x04\xff\xfe" + b"\x02\x00",
    "header key length -1": b"\x00\x00\x00\x02k\x02v" + b"\x02" + b"\x01" + b"\x01",
    "header value null": b"\x00\x00\x00\x02k\x02v" + b"\x02" + b"\x02h" + b"\x01",
    "bytes after the headers": b"\x00\x00\x00\x02k\x02v\x00" + b"\x00",
}


@compiled
@pytest.mark.parametrize("body", CASES.values(), ids=CASES.keys())
def test_record_edges(body):
    assert_same(_with_record_body(body))


@compiled
def test_record_length_running_past_the_batch():
    data = bytearray(_with_record_body(CASES["one-byte fields"]))
    data[HEADER_SIZE] = 0x7E
    fix_crc(data, 0)
    text = assert_same(bytes(data))
    assert "record-malformed" in text




# --- batch lines: render.jsonl.batch_line's compiled twin --------------------------------------------------

def _batch(**fields: object) -> Batch:
    """A v2 batch as the header decoder makes it (CRC valid, no findings), with ``fields`` changed."""
    b = Batch("logs/orders-3/00000000000000000000.log", 4096, 80, 2)
    header = dict(base_offset=10, batch_length=68, partition_leader_epoch=3, crc=123, computed_crc=123,
                  attributes=0, last_offset_delta=2, base_timestamp=1700000000000, max_timestamp=1700000000002,
                  producer_id=-1, producer_epoch=-1, base_sequence=-1, record_count=3)
    for name, value in {**header, **fields}.items():
        setattr(b, name, value)
    return b


I64 = (1 << 63) - 1
# batches the compiled writer writes itself: every attribute bit pattern of the low 7 bits and some high, the
# edges of lastSequence (no sequence, -2, a sum wrapping past INT32_MAX), lastOffset and the CRC
WRITTEN = [dict(attributes=a) for a in (*range(0x80), 0x80, 0xFF80, 0xFFFF)] + [
    dict(base_sequence=0), dict(base_sequence=-2), dict(base_sequence=0x7FFFFFFF, last_offset_delta=1),
    dict(base_sequence=0x7FFFFFFE, last_offset_delta=1), dict(base_sequence=5, last_offset_delta=-7),
    dict(base_offset=I64 - 2, last_offset_delta=2), dict(base_offset=-(1 << 63), last_offset_delta=0),
    dict(computed_crc=None), dict(computed_crc=124), dict(decompressed_size=1 << 20),
    dict(producer_id=I64, producer_epoch=32767, base_timestamp=-(1 << 63), max_timestamp=I64),
    dict(record_count=-1, last_offset_delta=-1), dict(magic=3),
]
# batches it hands back to the Python writer (which is then the only one that writes them)
HANDED_BACK = [
    dict(findings=[Finding(Code.CRC_MISMATCH, 4113, "stored crc 123 != computed 124")]),
    dict(base_offset=I64, last_offset_delta=1), dict(base_offset=1 << 64), dict(position=True),
    dict(base_sequence=I64, last_offset_delta=1), dict(attributes=-1),
    dict(magic=1), dict(base_sequence=None), dict(computed_crc=1.5), dict(decompressed_size=False),
]


@compiled
@pytest.mark.parametrize("fields", WRITTEN + HANDED_BACK, ids=lambda f: ",".join(f"{k}={v!r:.20}" for k, v in f.items()))
def test_batch_lines_are_the_same_on_both_paths(fields):
    b = _batch(**fields)
    text = jsonl._batch_hot().batch_json(b, jsonl.batch_head_json(b.file))
    assert (text is not None) == (fields in WRITTEN)
    assert jsonl.batch_line(b) == jsonl.python_batch_line(b)
    if text is not None:
        assert text == jsonl.python_batch_line(b) == json.dumps(item_object(b), separators=(",", ":"))
        assert json.loads(text)["lastSequence"] == b.last_sequence


@compiled
def test_a_batch_class_the_loops_do_not_know_is_handed_back():
    class Other:
        __slots__ = ("file",)

    assert jsonl._batch_hot().batch_json(Other(), '"x"') is None
    assert jsonl._batch_hot().batch_json(_batch(), '"x"') is not None
    for hot in (jsonl._batch_hot(), step_module._HOT):
        with pytest.raises(TypeError):
            hot.configure_batch(Other)

    class Wider(Batch):  # a slot the hop would leave unset
        __slots__ = ("extra",)

    for hot in (jsonl._batch_hot(), step_module._HOT):
        with pytest.raises(TypeError):
            hot.configure_batch(Wider)
    assert jsonl._batch_hot().batch_json(_batch(), '"x"') is not None  # the configured class is kept


# the text between a plain record line's fields (generated_lines.plain_segments: its length is the registry's)
SEGMENTS = ('{"offset":', *[","] * (generated_lines.PLAIN_SEGMENTS - 1))


@compiled
def test_every_loop_over_a_buffer_hands_back_positions_outside_it():
    rec_loop, rec_lines, crc_hop, step = batch_module._HOT, jsonl._record_hot(), HOP, step_module._HOT
    data = v2_batch(0, [Rec(b"k", b"v")]).data
    n = len(data)
    loops = {
        "record_check": lambda p, e, base=0: rec_loop.record_check(data, p, e, 1, base, T0, T0, False, 0),
        "record_run": lambda p, e, base=0: rec_loop.record_run(data, p, e, 0, 1, 1, base, T0, T0, False,
                                                               "CreateTime", "file", 0, 0),
        "format_run": lambda p, e, base=0: rec_lines.format_run(data, p, e, 8, base, T0, T0, False, SEGMENTS, 0, str,
                                                                json.dumps),
        "crc_hop": lambda p, e, base=0: crc_hop.crc_hop(data, p, e, e + base, 1 << 20),
        "batch_hop": lambda p, e, base=0: step.batch_hop(data, p, e, 1 << 20, (1 << 20) + base, crc32c, "x", 0),
        "plain_window": lambda p, e, base=0: step.plain_window(data, p, e, e, 1 << 20, True, base or None,
                                                               EVERY_RECORD, crc32c),
        "window_batch_lines": lambda p, e, base=0: jsonl._batch_hot().window_batch_lines(data, p, e, base, '"x"'),
        "window_record_lines": lambda p, e, base=0: rec_lines.window_record_lines(
            data, p, e, base, SEGMENTS, SEGMENTS, ",", 0, str, json.dumps, EVERY_RECORD),
    }
    start = {"crc_hop": 0, "batch_hop": 0, "plain_window": 0, "window_batch_lines": 0,
             "window_record_lines": 0}  # the record loops start after the header
    for name, loop in loops.items():
        first = start.get(name, HEADER_SIZE)
        assert loop(first, n) is not None, name
        for p, e in ((-1, n), (first + 1, first), (first, n + 1)):
            assert loop(p, e) is None, (name, p, e)
        assert loop(first, n, 1 << 64) is None, name  # an argument past 64 bits
    assert crc_hop.crc_hop(data, 0, n, n, 1 << 20) == (n, 1, n)


# === windows of plain batches: the walk, the batch lines and the record lines of a whole window ===========

# what the windows' report lines are held against: the same reports batch by batch, compiled and pure
QUERIES = [RecordQuery(), RecordQuery(from_offset=3), RecordQuery(to_offset=4), RecordQuery(from_offset=2, to_offset=2),
           RecordQuery(from_time=T0 + 2), RecordQuery(to_time=T0 + 1), RecordQuery(from_time=T0 + 1, to_time=T0 + 3),
           RecordQuery(from_offset=-(1 << 63), to_offset=(1 << 63) - 1), RecordQuery(from_offset=1 << 64),
           RecordQuery(keys=(b"k1", None))]


@pytest.fixture(scope="module")
def window_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("windows") / "orders-3"
    d.mkdir()
    return d


def _window_lines(path: str, query: RecordQuery, encoding: str, windows: bool) -> str:
    """records --json and batches --json (records checked, and not) of ``path``, and the problems counted."""
    out = io.StringIO()
    tally = Tally()
    records = record_windows if windows else record_report
    jsonl.write_record_report(records([path], Options(), query, tally), out, encoding)
    for options in (Options(), Options(records=False)):
        jsonl.write_batch_report((batch_windows if windows else batch_report)([path], options, tally), out, encoding)
    return out.getvalue() + f"problems {tally.problems}\n"


def _window_twins(path: str, query: RecordQuery, encoding: str) -> None:
    """Each window's lines by the compiled writers and by their pure-Python twins."""
    bounds = query.run_bounds()
    if bounds is None:
        return
    data = Path(path).read_bytes()
    options = Options(select=query.batch_selector())
    for item in walk_module.iter_windows(data, path, options=options, runs=bounds):
        if isinstance(item, PlainRun):
            lines = RecordLines(encoding)
            assert lines.run_text(item) == lines.python_run_text(item)
            assert jsonl.run_batch_lines(item) == jsonl.python_run_batch_lines(item)


def assert_same_windows(data: bytes, where: Path, queries=QUERIES, encodings: tuple[str, ...] = ENCODINGS,
                        name: str = "00000000000000000000.log") -> str:
    """The windows' report lines equal the per-batch path's and the pure path's, every query and encoding."""
    path = where / name
    path.write_bytes(data)
    first = ""
    for query in queries:
        for encoding in encodings:
            fast = _window_lines(str(path), query, encoding, True)
            assert fast == _window_lines(str(path), query, encoding, False), (query, encoding)
            with pure_python():
                assert fast == _window_lines(str(path), query, encoding, True), (query, encoding)
            _window_twins(str(path), query, encoding)
            first = first or fast
    return first


def _plain(base: int, n: int, **kw) -> bytes:
    return v2_batch(base, [Rec(b"k%d" % i, b"value %d" % i, ts_delta=i, headers=(("h", b"\x01\x02"),))
                           for i in range(n)], **kw).data


@st.composite
def segments(draw) -> bytes:
    """One-record, many-record, odd, compressed, control and transactional batches in a row, then maybe damage."""
    parts, offset = [], 0
    for kind in draw(st.lists(st.sampled_from(["one", "one", "many", "odd", "gzip", "control", "txn", "log-append",
                                               "empty", "past"]), min_size=1, max_size=8)):
        if kind == "odd":
            parts.append(draw(batches()))
            continue
        n = {"one": 1, "many": 5, "empty": 0}.get(kind, 2)
        if kind == "control":
            parts.append(cb_control(offset))
        elif kind == "past":  # an offset at or before the last one: offset-order
            parts.append(_plain(max(offset - 2, 0), 1))
        else:
            kw = {"gzip": dict(codec=1), "txn": dict(transactional=True, producer_id=7),
                  "log-append": dict(attributes=0x08)}.get(kind, {})
            parts.append(_plain(offset, n, **kw))
        offset += max(n, 1)
    data = bytearray(b"".join(parts))
    how = draw(st.sampled_from(["none", "none", "cut", "flip", "flip-fixed", "append"]))
    if how == "cut":
        data = data[:draw(st.integers(0, len(data)))]
    elif how.startswith("flip"):
        i = draw(st.integers(0, len(data) - 1))
        data[i] ^= draw(st.integers(1, 255))
        if how == "flip-fixed":
            fix_crc(data, 0)
    elif how == "append":
        data += draw(st.binary(max_size=30))
    return bytes(data)


def cb_control(offset: int) -> bytes:
    from builders import control_batch

    return control_batch(offset, 0).data


@compiled
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(segments(), st.sampled_from(QUERIES))
def test_window_reports_of_generated_segments(window_dir, data, query):
    assert_same_windows(data, window_dir, queries=[query], encodings=("auto", "hex"))


@compiled
def test_window_reports_of_one_record_batches(window_dir):
    data = b"".join(_plain(i, 1, base_ts=T0 + i) for i in range(3000))
    text = assert_same_windows(data, window_dir, queries=QUERIES[:3], encodings=ENCODINGS)
    assert text.count('"type":"record"') == 3000 and text.count('"type":"batch"') == 2 * 3000
    items = list(walk_module.iter_windows(data, FILE, runs=EVERY_RECORD))
    assert all(isinstance(item, PlainRun) for item in items)
    assert sum(item.batches for item in items) == 3000 and len(items) == 1  # (less than a window of bytes)


@compiled
def test_window_reports_of_the_corpus(window_dir):
    corpus = need_corpus("real/segments")
    windows = 0
    for i, path in enumerate(sorted(corpus.rglob("*.log"))):
        with open(path, "rb") as f:
            data = f.read(CORPUS_BYTES)
        where = window_dir.parent / path.parent.name
        where.mkdir(exist_ok=True)
        assert_same_windows(data, where, queries=QUERIES[:2], encodings=("auto",), name=path.name)
        windows += sum(isinstance(item, PlainRun)
                       for item in walk_module.iter_windows(data, str(path), runs=EVERY_RECORD))
    assert windows > 10


@compiled
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segments())
def test_windows_expand_to_the_walks_batches(data):
    """Each window holds the batches the walk makes of its bytes, and they have nothing to say."""
    walked = [item_line(item) for item in iter_batches(data, FILE)]
    expanded = []
    for item in walk_module.iter_windows(data, FILE, runs=EVERY_RECORD):
        if not isinstance(item, PlainRun):
            expanded.append(item_line(item))
            continue
        inside = list(walk_module.run_batches(item))
        assert len(inside) == item.batches and all(not b.findings and b.crc_valid for b in inside)
        assert sum(len(b.records or ()) for b in inside) == item.records
        assert item.position == inside[0].position and item.size == sum(b.size for b in inside)
        expanded.extend(item_line(b) for b in inside)
    assert expanded == walked


@compiled
def test_a_window_stops_where_the_walk_has_something_to_say():
    step = step_module._HOT
    good = [_plain(i * 2, 2) for i in range(4)]
    stoppers = {"compressed": _plain(8, 2, codec=1), "control": cb_control(8), "offset-order": _plain(5, 1),
                "crc": bytes(bytearray(_plain(8, 2))[:-1] + b"\x00"), "count": _plain(8, 2, record_count=3),
                "timestamp": _plain(8, 2, max_ts=T0 + 7), "lod": _plain(8, 2, last_offset_delta=0),
                "legacy-magic": b"\x00" * 16 + b"\x01" + b"\x00" * 60}
    for name, stopper in stoppers.items():
        data = b"".join(good) + stopper + good[0]
        got = step.plain_window(data, 0, len(data), len(data), 1 << 20, True, None, EVERY_RECORD, crc32c)
        assert got[:3] == (sum(map(len, good)), 4, 8), name
        assert step.plain_window(data, got[0], len(data), len(data), 1 << 20, True, got[3], EVERY_RECORD,
                                 crc32c) is None, name
    data = b"".join(good)
    assert step.plain_window(data, 0, len(data), 1, 1 << 20, True, None, EVERY_RECORD, crc32c)[:2] == (len(good[0]), 1)
    assert step.plain_window(data, 0, len(data), len(data), len(good[0]) - 13, True, None, EVERY_RECORD, crc32c) is None
    assert step.plain_window(data, 0, len(data), len(data), 1 << 20, True, -1, EVERY_RECORD, crc32c)[:2] == (len(data), 4)
    assert step.plain_window(data, 0, len(data), len(data), 1 << 20, True, 0, EVERY_RECORD, crc32c) is None


# --- the step's hop makes the Batch the header decoder makes ------------------------------------------------

@st.composite
def _headers(draw) -> bytes:
    """One plain batch (the hop takes it) with header values at their edges."""
    i64 = st.integers(-(1 << 63), (1 << 63) - 1)
    i32 = st.integers(-(1 << 31), (1 << 31) - 1)
    return v2_batch(draw(i64), [Rec(b"k", b"v")], base_ts=draw(st.integers(-(1 << 62), 1 << 62)),
                    max_ts=draw(i64), producer_id=draw(i64), producer_epoch=draw(st.integers(-(1 << 15), (1 << 15) - 1)),
                    base_sequence=draw(i32), leader_epoch=draw(i32), last_offset_delta=draw(st.integers(0, (1 << 31) - 1)),
                    record_count=draw(st.integers(0, (1 << 31) - 1)),
                    attributes=draw(st.sampled_from([0, 0x08, 0x10, 0x40, 0x58]))).data


@compiled
@settings(max_examples=200, deadline=None)
@given(_headers(), st.integers(0, 1 << 40))
def test_the_hop_makes_the_batch_the_header_decoder_makes(data, base):
    got = step_module._HOT.batch_hop(data, 0, len(data), 1 << 20, 1 << 20, crc32c, "dir/x.log", base)
    assert got is not None
    b, chunk = got
    ref = decode_batch_header(chunk, 0, "dir/x.log", base)
    ref.computed_crc = crc32c(chunk[21:])
    assert chunk == data and type(b) is Batch
    for name in Batch.__slots__:
        mine, theirs = getattr(b, name), getattr(ref, name)
        assert (type(mine), mine) == (type(theirs), theirs), name
    assert b.findings is not ref.findings and b.crc_valid


@compiled
def test_the_hop_hands_back_what_the_python_step_judges():
    plain = v2_batch(0, [Rec(b"k", b"v")])
    for data in (v2_batch(0, [Rec(b"k", b"v")], codec=1).data, v2_batch(0, [Rec(b"k", b"v")], control=True).data,
                 v2_batch(0, [Rec(b"k", b"v")], attributes=0x80).data, v2_batch(0, [Rec(b"k", b"v")], record_count=-1).data,
                 plain.data[:-1], plain.data[:21] + bytes([plain.data[21] ^ 1]) + plain.data[22:]):
        assert step_module._HOT.batch_hop(data, 0, len(data), 1 << 20, 1 << 20, crc32c, "x", 0) is None
    assert step_module._HOT.batch_hop(plain.data, 0, plain.size, 1 << 20, plain.size - 1, crc32c, "x", 0) is None  # copy_max
    assert step_module._HOT.batch_hop(plain.data, 0, plain.size, plain.size - 13, 1 << 20, crc32c, "x", 0) is None



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


# === verify-crc's hop and its CRC-32C (crchop) =============================================================

CODES = HOP.crc32c_codes() if HOP is not None else ()
SEEDS = (0, 1, 0xFFFFFFFF, 0xE3069283, 0x12345678)
# lengths around the edges of the folding code: below a first lane, one round of 64, the rounds, the tail
EDGES = sorted({*range(0, 300), *(64 * k + d for k in range(2, 40) for d in (-9, -1, 0, 1, 7, 8, 15, 16, 63))})


_BLOCK = bytes((i * 131 + (i >> 8) * 29 + (i >> 13) * 7 + 17) & 0xFF for i in range(1 << 15))


def _data(n: int, salt: int = 0) -> bytes:
    """``n`` bytes that are not a repeating pattern (every lane of the fold differs), from ``salt`` on."""
    start = (salt * 4099) % len(_BLOCK)
    block = _BLOCK * (1 + (start + n) // len(_BLOCK))
    return block[start:start + n]


@compiled
def test_codes_named_the_one_in_use_first():
    assert CODES[-1] == "table"
    assert set(CODES) <= {"sse4.2+pclmul", "sse4.2", "table"}
    assert HOP.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value (Castagnoli, RFC 3720)
    with pytest.raises(ValueError):
        HOP.crc32c(b"x", 0, "crc64")


@compiled
@pytest.mark.parametrize("code", CODES)
def test_every_length_alignment_and_seed(code):
    block = _data(max(EDGES) + 16)
    view = memoryview(block)
    for n in EDGES:
        for align in (0, 1, 3, 8, 13):
            piece = view[align:align + n]
            seed = SEEDS[(n + align) % len(SEEDS)]
            assert HOP.crc32c(piece, seed, code) == oracle(piece, seed), (code, n, align, seed)


@compiled
@pytest.mark.parametrize("code", CODES)
def test_continuing_equals_one_call(code):
    data = _data(5000, 3)
    whole = oracle(data)
    for cut in (0, 1, 63, 64, 129, 2500, 4999, 5000):
        assert HOP.crc32c(data[cut:], HOP.crc32c(data[:cut], 0, code), code) == whole, cut


@compiled
@pytest.mark.parametrize("code", CODES)
def test_large_buffer_without_the_gil(code):
    data = _data((1 << 20) + 77, 5)  # past the size the GIL is released at
    assert HOP.crc32c(data, 7, code) == oracle(data, 7)


@compiled
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000), st.integers(0, 15), st.integers(0, 0xFFFFFFFF))
def test_random_bytes(data, align, seed):
    piece = memoryview(b"\xa5" * align + data)[align:]
    expected = oracle(piece, seed)
    for code in CODES:
        assert HOP.crc32c(piece, seed, code) == expected, code


_PROGRAM = r"""
#include <stdio.h>
#include "crc32c.h"
int main(void) {
    static unsigned char data[1 << 16];
    size_t n = fread(data, 1, sizeof data, stdin);
    crc32c_setup();
    printf("%s %u %u\n", crc32c_codes[0].name, kafkadump_crc32c(0, data, n), kafkadump_crc32c(0xE3069283u, data + 3, n - 3));
    return 0;
}
"""


@compiled
@pytest.mark.parametrize("defines", [["-DKAFKADUMP_CRC32C_PORTABLE"], []], ids=["portable", "native"])
def test_header_alone_without_warnings(tmp_path, defines):
    """crc32c.h in a C program of its own, warnings as errors: as built where only the tables exist (any CPU
    that is not x86-64, checked here by the macro that leaves the x86 code out) and natively."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler")
    (tmp_path / "t.c").write_text(_PROGRAM)
    header_dir = Path(accel.__file__).resolve().parent
    exe = tmp_path / "t"
    subprocess.run([cc, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", *defines, "-I", str(header_dir),
                    str(tmp_path / "t.c"), "-o", str(exe)], check=True, capture_output=True)
    data = _data(40000, 11)
    name, whole, seeded = subprocess.run([str(exe)], input=data, check=True, capture_output=True).stdout.split()
    assert name.decode() == ("table" if defines else CODES[0])  # natively: the code the extension chose
    assert (int(whole), int(seeded)) == (oracle(data), oracle(data[3:], 0xE3069283))


def _v2_regions(data: bytes) -> list[tuple[int, int, int]]:
    """(start, end, stored CRC) of each v2 batch walked by length from the start of ``data``."""
    out = []
    pos = 0
    while len(data) - pos >= 61:
        (length,) = struct.unpack_from(">i", data, pos + 8)
        if data[pos + 16] != 2 or length < 49 or pos + 12 + length > len(data):
            break
        out.append((pos + 21, pos + 12 + length, struct.unpack_from(">I", data, pos + 17)[0]))
        pos += 12 + length
    return out


@compiled
def test_corpus_stored_crcs():
    """Every v2 batch of the corpus's segments (all stored CRCs are right there, says its manifest)."""
    root = need_corpus("real/segments")
    checked = 0
    for path in sorted(root.rglob("*.log")):
        data = path.read_bytes()
        for start, end, stored in _v2_regions(data):
            assert oracle(data[start:end]) == stored, (path, start)
            for code in CODES:
                assert HOP.crc32c(data[start:end], 0, code) == stored, (path, start, code)
            checked += 1
    assert checked > 1000


# --- verify-crc's hop ------------------------------------------------------------------------------------

def _scan(data: bytes, threads: int) -> tuple[list, tuple[int, int, int]]:
    scan = CrcScan(data, "x", Options(records=False), threads=threads)
    items = [(type(i).__name__, i.position, i.size, [(f.code.value, f.offset, f.message) for f in i.findings])
             for i in scan]
    return items, (scan.batches, scan.bytes, scan.bad)


def _segment(batches: int) -> bytearray:
    """``batches`` one-record v2 batches of 3,000 to 5,000 value bytes (every alignment of a batch's start)."""
    out = bytearray()
    for i in range(batches):
        value = _data(3000 + (i * 389) % 2001, i)
        out += v2_batch(i, [Rec(b"k%d" % i, value)]).data
    return out


def _damaged(batches: int) -> bytes:
    """A flipped byte in the CRC region of every 97th batch, and one batch with a length past the file."""
    data = _segment(batches)
    starts = [start - 21 for start, _, _ in _v2_regions(bytes(data))]
    for s in starts[5::97]:
        data[s + 61] ^= 0x40
    struct.pack_into(">i", data, starts[len(starts) // 2] + 8, 1 << 30)
    return bytes(data)


@compiled
def test_hop_equals_pure_serial_and_threaded():
    """The compiled hop (one thread) against the pure path, serial and on its two threads."""
    data = _damaged(2200)  # above the pure path's threaded threshold
    assert len(data) > CrcScan.THREAD_MIN_BYTES
    fast = _scan(data, 2)
    with pure_python():
        assert _scan(data, 1) == fast
        assert _scan(data, 2) == fast
    assert fast[1][2] == len(fast[0]) > 20


@compiled
def test_hop_stops_at_a_failed_crc_and_at_until():
    data = bytes(_segment(20))
    regions = _v2_regions(data)
    n = len(data)
    assert HOP.crc_hop(data, 0, n, n, 1 << 20) == (n, len(regions), n)
    second = regions[1][0] - 21
    assert HOP.crc_hop(data, 0, n, second, 1 << 20) == (second, 1, second)  # stops at ``until``
    bad = bytearray(data)
    bad[regions[3][1] - 1] ^= 1  # the last byte of the fourth batch
    fourth = regions[3][0] - 21
    assert HOP.crc_hop(bytes(bad), 0, n, n, 1 << 20) == (fourth, 3, fourth)
    # a batch longer than max_length is left to the Python loop
    assert HOP.crc_hop(data, 0, n, n, regions[0][1] - regions[0][0] + 7) == (0, 0, 0)


@compiled
@pytest.mark.skipif(HOP is None or sys.maxsize < 1 << 32, reason="needs the compiled hop and a 64-bit address space")
def test_hop_counts_a_batch_near_two_gib_without_overflow():
    """A batch whose length + 12 passes 2**31 - 1 is counted in full (the count was an int sum once).
    The mapping is anonymous: untouched pages are the zero page and cost no memory."""
    length = 0x7FFFFFFF - 3
    size = 12 + length
    m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
    try:
        m[8:12] = struct.pack(">i", length)
        m[16] = 2
        view = memoryview(m)
        m[17:21] = struct.pack(">I", HOP.crc32c(view[21:size]))
        view.release()
        assert HOP.crc_hop(m, 0, size, size, 0x7FFFFFFF) == (size, 1, size)
    finally:
        m.close()


@compiled
def test_hop_with_the_packages_function():
    """Where crc32c.h has only its tables the hop calls the crc32c package instead: the same walk."""
    data = _damaged(300)
    n = len(data)
    stops = set()
    for start in [start - 21 for start, _, _ in _v2_regions(data)][::7] + [1, n - 70]:
        ours = HOP.crc_hop(data, start, n, n, 1 << 20)
        assert HOP.crc_hop(data, start, n, n, 1 << 20, oracle) == ours
        stops.add(ours[0])
    assert len(stops) > 3  # at a flipped byte, at the bad length, at the start of no batch

    def broken(_region):
        raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        HOP.crc_hop(data, 0, n, n, 1 << 20, broken)


@compiled
def test_scan_with_the_packages_function(monkeypatch):
    data = _damaged(300)
    fast = _scan(data, 1)
    monkeypatch.setattr(walk_module, "_HOP_CRC", oracle)
    assert _scan(data, 1) == fast


# === the Spark data source's column loop (arrowcols) =======================================================

TS_MIN, TS_MAX = -62135596800000, 253402300799999   # (the ms a Spark TimestampType holds)
_ALL_COLUMNS = 15   # key, value, headers, the microseconds column
NBUFS = 20
(B_OFFSET, B_TIMESTAMP, B_OFFSET_DELTA, B_TIMESTAMP_DELTA, B_BATCH_POSITION, B_LOG_APPEND,
 B_KEY_OFFSETS, B_KEY_DATA, B_KEY_VALID, B_VALUE_OFFSETS, B_VALUE_DATA, B_VALUE_VALID,
 B_HEADER_OFFSETS, B_HKEY_OFFSETS, B_HKEY_DATA, B_HVALUE_OFFSETS, B_HVALUE_DATA, B_HVALUE_VALID,
 B_TIMESTAMP_US, B_TIMESTAMP_VALID) = range(NBUFS)
_OFFSET_BUFFERS = (B_KEY_OFFSETS, B_VALUE_OFFSETS, B_HEADER_OFFSETS, B_HKEY_OFFSETS, B_HVALUE_OFFSETS)


def _new_buffers() -> list[bytearray]:
    return [bytearray(4) if i in _OFFSET_BUFFERS else bytearray() for i in range(NBUFS)]


def _column_rows(bufs: list[bytearray], batch_position: int) -> list[tuple]:
    """The rows in Arrow column buffers, as the decoder's record fields: (offset, timestamp, offset delta,
    timestamp delta, key, value, headers, log append, microseconds or None)."""
    n = len(bufs[B_OFFSET]) >> 3

    def fixed(i: int, fmt: str) -> tuple:
        return struct.unpack(f"<{n}{fmt}", bufs[i])

    def valid(i: int, row: int) -> bool:
        return bool(bufs[i][row >> 3] >> (row & 7) & 1)

    def offsets(i: int, count: int) -> tuple:
        return struct.unpack(f"<{count + 1}i", bufs[i])

    def binary(valid_i: int, offsets_i: int, data_i: int, count: int) -> list:
        o = offsets(offsets_i, count)
        return [bytes(bufs[data_i][o[r]:o[r + 1]]) if valid(valid_i, r) else None for r in range(count)]

    assert fixed(B_BATCH_POSITION, "q") == (batch_position,) * n
    keys, values = binary(B_KEY_VALID, B_KEY_OFFSETS, B_KEY_DATA, n), binary(B_VALUE_VALID, B_VALUE_OFFSETS, B_VALUE_DATA, n)
    per_row = offsets(B_HEADER_OFFSETS, n)
    count = per_row[-1]
    ho = offsets(B_HKEY_OFFSETS, count)
    hkeys = [bytes(bufs[B_HKEY_DATA][ho[h]:ho[h + 1]]).decode() for h in range(count)]
    hvalues = binary(B_HVALUE_VALID, B_HVALUE_OFFSETS, B_HVALUE_DATA, count)
    us = fixed(B_TIMESTAMP_US, "q")
    return [(off, ts, od, td, keys[r], values[r], list(zip(hkeys[per_row[r]:per_row[r + 1]], hvalues[per_row[r]:per_row[r + 1]])),
             la, us[r] if valid(B_TIMESTAMP_VALID, r) else None)
            for r, (off, ts, od, td, la) in enumerate(zip(fixed(B_OFFSET, "q"), fixed(B_TIMESTAMP, "q"), fixed(B_OFFSET_DELTA, "i"),
                                                      fixed(B_TIMESTAMP_DELTA, "q"), fixed(B_LOG_APPEND, "B")))]


def _columns_of(data: bytes, position: int = 0) -> list[tuple] | None:
    """The column loop over the records of the v2 batch ``data``: its rows, or None (handed back)."""
    assert COLS is not None
    base_offset, length = struct.unpack_from(">qi", data, 0)
    attributes, lod, base_ts, max_ts = struct.unpack_from(">hiqq", data, 21)
    (count,) = struct.unpack_from(">i", data, 57)
    bufs = _new_buffers()
    got = COLS.record_columns(data, HEADER_SIZE, 12 + length, 0, count, count, base_offset, base_ts, max_ts,
                              bool(attributes & 0x08), position, _ALL_COLUMNS, TS_MIN, TS_MAX, bufs)
    if got is None:
        return None
    assert got == (12 + length, count, True)  # (a loop over the whole batch: every record, done)
    return _column_rows(bufs, position)


def _decoder_rows(data: bytes) -> tuple[list[tuple], bool]:
    """The decoder's records of the one batch in ``data`` as :func:`_column_rows` gives them, and whether
    the batch is plain (a v2 batch without findings: the column loop must take it)."""
    with pure_python():
        (b,) = [i for i in iter_batches(data, FILE) if isinstance(i, Batch)]
    la = int(b.attributes & 0x08 != 0)
    rows = [(r.offset, r.timestamp, r.offset_delta, r.timestamp_delta, r.key, r.value, list(r.headers), la,
             r.timestamp * 1000 if TS_MIN <= r.timestamp <= TS_MAX else None) for r in b.records or []]
    return rows, not b.findings and not b.is_control and b.compression == "none"


_col_bytes = st.one_of(st.none(), st.binary(max_size=12))
_col_records = st.lists(st.builds(Rec, _col_bytes, _col_bytes, ts_delta=st.integers(-(1 << 40), 1 << 40),
                                  headers=st.lists(st.tuples(st.text(max_size=4), _col_bytes), max_size=3).map(tuple)),
                        min_size=1, max_size=6)


@cols_compiled
@settings(max_examples=100, deadline=None)
@given(_col_records, st.booleans(), st.integers(-(1 << 50), 1 << 50), st.sampled_from([0, 5, (1 << 62)]),
       st.sampled_from(["none", "cut", "flip"]), st.integers(0, 1 << 40), st.data())
def test_record_columns_equal_the_decoders_records(recs, log_append, base_ts, base, damage, position, data):
    """Any keys, values, headers (text keys), timestamps, CreateTime or LogAppendTime; a plain batch is
    taken whole, and what the loop takes from a damaged one is what the decoder reads."""
    raw = bytearray(v2_batch(base, recs, attributes=0x08 if log_append else 0, base_ts=base_ts).data)
    if damage == "cut":
        raw[8:12] = (struct.unpack_from(">i", raw, 8)[0] - data.draw(st.integers(1, 3))).to_bytes(4, "big")
    elif damage == "flip":
        raw[data.draw(st.integers(HEADER_SIZE, len(raw) - 1))] ^= data.draw(st.integers(1, 255))
    if damage != "none":
        fix_crc(raw, 0)
    raw = bytes(raw)
    fast = _columns_of(raw, position)
    slow, plain = _decoder_rows(raw)
    if damage == "none":
        assert fast is not None and len(fast) == len(recs)
    if fast is not None:
        assert fast == slow
    elif plain:  # handed back: only what the loop must not take (a header key that is not UTF-8)
        assert any("\\x" in k for r in slow for k, _ in r[6])


@cols_compiled
def test_record_columns_hand_back_without_touching_the_buffers():
    """A run that is not plain (a record cut short) leaves every buffer as it was."""
    data = v2_batch(0, [Rec(b"k", b"v", headers=(("h", b"x"),)), Rec(b"k2", b"v2")]).data
    bufs = [bytearray(4) if i in (6, 9, 12, 13, 15) else bytearray() for i in range(NBUFS)]
    args = (0, 2, 2, 100, 0, 0, False, 0, 15, TS_MIN, TS_MAX, bufs)
    assert COLS is not None
    assert COLS.record_columns(data, 61, len(data), *args) == (len(data), 2, True)
    before = [bytes(b) for b in bufs]
    assert struct.unpack("<2q", before[B_OFFSET]) == (100, 101)
    assert before[B_KEY_DATA] == b"kk2" and before[B_HKEY_DATA] == b"h"
    assert COLS.record_columns(data, 61, len(data) - 1, *args) is None       # the last byte missing
    assert [bytes(b) for b in bufs] == before


# === the capture reader's packet loop (pcapread) ==========================================================

MAGICS = {("<", False): 0xA1B2C3D4, (">", False): 0xA1B2C3D4, ("<", True): 0xA1B23C4D, (">", True): 0xA1B23C4D}


def _reading(data: bytes, compiled: bool, monkeypatch: pytest.MonkeyPatch) -> tuple:
    """Everything the reader says about ``data``, with the compiled loop on or off."""
    monkeypatch.setattr(pcap, "_compiled_reader", (lambda: LOOP) if compiled else (lambda: None))
    try:
        span = pcap.CaptureReader(data, "x").time_span()
        r = pcap.CaptureReader(data, "x")
    except pcap.CaptureError as e:
        return ("not a capture", str(e))
    packets = [tuple(getattr(p, s) for s in pcap.Packet.__slots__) for p in r]
    return (span, packets, r.packets, r.skipped, r.fragments, sorted(r.linktypes), dict(r.not_read),
            r.first_not_read, [(f.code, f.offset, f.message, f.length) for f in r.findings])


def _outputs(path: Path, compiled: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """``capture`` (the table) and ``capture --json`` of ``path``, the compiled loop on or off."""
    monkeypatch.setattr(pcap, "_compiled_reader", (lambda: LOOP) if compiled else (lambda: None))
    table, js = io.StringIO(), io.StringIO()
    frame_views.write_frames_table(capture_report(str(path), CaptureRequest(), Tally(), time_span=True), table)
    frame_views.write_frames_json(capture_report(str(path), CaptureRequest(), Tally()), js)
    return table.getvalue(), js.getvalue()


def _same(data: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _reading(data, True, monkeypatch) == _reading(data, False, monkeypatch)


def classic(frames: list[tuple[float, bytes]], linktype: int = 1, bo: str = "<", nanos: bool = False) -> bytes:
    """A classic pcap of link-layer ``frames`` in either byte order and time unit."""
    out = bytearray(struct.pack(bo + "IHHiIII", MAGICS[bo, nanos], 2, 4, 0, 0, 262144, linktype))
    unit = 1e9 if nanos else 1e6
    for t, data in frames:
        sec = int(t)
        out += struct.pack(bo + "IIII", sec, int(round((t - sec) * unit)), len(data), len(data)) + data
    return bytes(out)


def _link(ip: bytes, linktype: int) -> bytes:
    """``ip`` behind the link header of ``linktype``."""
    if linktype == 1:
        return cb.ethernet(ip)
    if linktype == 0:   # BSD loopback: the address family, host order
        return struct.pack("<I", 2) + ip
    if linktype == 113:   # Linux cooked v1: the protocol last
        return b"\x00" * 14 + b"\x08\x00" + ip
    if linktype == 276:   # Linux cooked v2: the protocol first
        return b"\x08\x00" + b"\x00" * 18 + ip
    return ip   # raw IP (101, 228)


def _conversation_frames() -> list[tuple[float, bytes]]:
    """A Kafka conversation's IP packets (Metadata, Fetch with records), in order."""
    conv, _, _ = cb.kafka_conversation(cb.fetch_v12_request(9), segment=60)
    return [(t, ip) for t, ip, _ in conv.packets]


def _odd_packets() -> list[tuple[float, bytes]]:
    """Packets the compiled loop hands back: UDP, a fragment, IPv6, cut headers, a VLAN tag (read)."""
    tcp = cb.ipv4_tcp("10.0.0.1", "10.0.0.2", 50000, 9092, 77, 0, cb.ACK | cb.PSH, b"abc")
    udp = tcp[:9] + b"\x11" + tcp[10:]
    fragment = tcp[:6] + b"\x20\x00" + tcp[8:]
    v6 = (b"\x60\x00\x00\x00" + struct.pack(">HBB", 23, 6, 64) + b"\x00" * 15 + b"\x01" + b"\x00" * 15 + b"\x02"
          + tcp[20:])
    return [(1_700_000_000.5, udp), (1_700_000_000.6, fragment), (1_700_000_000.7, v6),
            (1_700_000_000.8, tcp[:30]), (1_700_000_000.9, tcp[:1]), (1_700_000_001.0, b""),
            (1_700_000_001.1, tcp[:5] + b"\x00" + tcp[6:]), (1_700_000_001.2, b"\x4f" + tcp[1:])]


@capture_compiled
@pytest.mark.parametrize("linktype", [0, 1, 101, 113, 228, 276, 147])
@pytest.mark.parametrize("bo, nanos", [("<", False), (">", False), ("<", True), (">", True)])
def test_every_link_type_byte_order_and_time_unit_is_read_the_same(linktype, bo, nanos, monkeypatch):
    frames = [(t, _link(ip, linktype)) for t, ip in _conversation_frames() + _odd_packets()]
    data = classic(frames, linktype, bo, nanos)
    _same(data, monkeypatch)
    got = _reading(data, True, monkeypatch)
    if linktype != 147:   # (a link type kafkadump cannot read: no packet)
        # the conversation, the TCP packet with another identification, and the one over IPv6 (read by Python)
        assert len(got[1]) == len(_conversation_frames()) + 2
        assert got[4] == 1 and len(got[6]) >= 3   # the fragment; packets not read, by reason


@capture_compiled
def test_vlan_tags_and_ethernet_oddities_are_read_the_same(monkeypatch):
    ip = cb.ipv4_tcp("10.0.0.1", "10.0.0.2", 50000, 9092, 5, 0, cb.ACK, b"xyz")
    frames = [(1.0e9, b"\x00" * 12 + b"\x81\x00\x00\x05\x08\x00" + ip),          # one VLAN tag
              (1.0e9, b"\x00" * 12 + b"\x88\xa8\x00\x05\x81\x00\x00\x06\x08\x00" + ip),  # two
              (1.0e9, b"\x00" * 12 + b"\x08\x06" + ip),                          # ARP: not IP
              (1.0e9, b"\x00" * 12 + b"\x81\x00"),                                # cut in the tag
              (1.0e9, b"\x00" * 12 + b"\x86\xdd" + ip)]                           # IPv6 type, IPv4 bytes
    _same(classic(frames), monkeypatch)


@capture_compiled
def test_tcp_out_of_order_resent_and_lost_is_the_same_table_and_json(tmp_path, monkeypatch):
    frames = _conversation_frames()
    rng = random.Random(5)
    for trial in range(6):
        shuffled = list(frames)
        i = rng.randrange(3, len(shuffled) - 2)
        if trial % 3 == 0:
            shuffled[i], shuffled[i + 1] = shuffled[i + 1], shuffled[i]    # out of order
        elif trial % 3 == 1:
            shuffled.insert(i, shuffled[i + 1])                           # resent
        else:
            del shuffled[i]                                               # lost
        p = tmp_path / f"tcp-{trial}.pcap"
        p.write_bytes(classic([(t, cb.ethernet(ip)) for t, ip in shuffled]))
        assert _outputs(p, True, monkeypatch) == _outputs(p, False, monkeypatch)


@capture_compiled
@pytest.mark.parametrize("seed", range(4))
def test_cut_and_damaged_files_are_read_the_same(seed, monkeypatch):
    data = classic([(t, cb.ethernet(ip)) for t, ip in _conversation_frames() + _odd_packets()])
    rng = random.Random(seed)
    for _ in range(40):
        b = bytearray(data[:rng.randrange(20, len(data) + 1)])
        for _ in range(rng.randrange(0, 4)):   # bytes of record headers, link, IP and TCP headers
            j = rng.randrange(24, len(b)) if len(b) > 24 else 0
            if j < len(b):
                b[j] = rng.choice((0, 0xFF, 0x45, 0x06, rng.randrange(256)))
        _same(bytes(b), monkeypatch)


@capture_compiled
def test_a_record_too_long_or_past_the_end_stops_both_alike(monkeypatch):
    data = bytearray(classic([(t, cb.ethernet(ip)) for t, ip in _conversation_frames()]))
    second = 24 + 16 + struct.unpack_from("<I", data, 24 + 8)[0]
    for incl in (1 << 29, len(data)):
        damaged = bytearray(data)
        struct.pack_into("<I", damaged, second + 8, incl)
        _same(bytes(damaged), monkeypatch)
        assert [f[0].value for f in _reading(bytes(damaged), True, monkeypatch)[-1]] == ["capture-malformed"]


@capture_compiled
def test_mapped_pages_go_back_at_the_same_points(tmp_path, monkeypatch):
    monkeypatch.setattr(pcap, "RELEASE_STEP", 300)
    data = classic([(t, cb.ethernet(ip)) for t, ip in _conversation_frames() + _odd_packets()])
    released = {}
    for compiled in (True, False):
        monkeypatch.setattr(pcap, "_compiled_reader", (lambda: LOOP) if compiled else (lambda: None))
        calls: list[int] = []
        monkeypatch.setattr(pcap, "page_releaser", lambda buf, calls=calls: calls.append)
        packets = [p.number for p in pcap.CaptureReader(data, "x")]
        released[compiled] = (calls, packets)
    assert released[True] == released[False] and len(released[True][0]) > 3


@capture_compiled
def test_plain_packets_never_reach_the_python_parser(tmp_path, monkeypatch):
    parsed = []
    real = pcap.packet_from_bytes
    monkeypatch.setattr(pcap, "packet_from_bytes", lambda *a, **k: parsed.append(1) or real(*a, **k))
    frames = _conversation_frames()
    packets = list(pcap.CaptureReader(classic([(t, cb.ethernet(ip)) for t, ip in frames]), "x"))
    assert len(packets) == len(frames) and parsed == []


def _corpus_captures() -> list[Path]:
    return sorted(p for p in CORPUS.rglob("*.pcap*")) if CORPUS.exists() else []


@capture_compiled
@pytest.mark.parametrize("path", _corpus_captures(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_is_read_the_same(path, monkeypatch):
    _same(path.read_bytes(), monkeypatch)


@capture_compiled
def test_packet_times_round_as_python_does(monkeypatch):
    """seconds + fraction * unit rounded twice, as Python does (a fused multiply-add rounds once:
    1 s + 369140570 ns then reads 1.3691405700000001 where Python says 1.36914057)."""
    frame = _link(_conversation_frames()[0][1], 1)
    data = bytearray(classic([(1.0, frame)], 1, "<", True))
    struct.pack_into("<I", data, 24 + 4, 369140570)
    got = _reading(bytes(data), True, monkeypatch)
    assert got[0][0] == got[1][0][list(pcap.Packet.__slots__).index("time")] == 1 + 369140570 * 1e-9
    _same(bytes(data), monkeypatch)


_FUSED_TIMES = r"""
import sys
sys.path.insert(0, sys.argv[1])
import pcapread
print(repr(pcapread.pcap_times(bytes.fromhex(sys.argv[2]), False, True)[0]))
"""


@capture_compiled
def test_packet_times_round_as_python_does_when_the_compiler_fuses(tmp_path):
    """pcapread.c built with fused multiply-add allowed (-mfma: what aarch64 builds do by default) still
    rounds a packet's time as Python does."""
    cc = shutil.which("cc") or shutil.which("gcc")
    cpu = Path("/proc/cpuinfo")
    if cc is None or platform.machine() != "x86_64" or not cpu.exists() or " fma " not in cpu.read_text():
        pytest.skip("needs a C compiler and an x86-64 CPU with FMA")
    source = Path(pcap.__file__).resolve().parent.parent / "accel" / "pcapread.c"
    built = tmp_path / ("pcapread" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run([cc, "-O2", "-mfma", "-fPIC", "-shared", "-I", sysconfig.get_paths()["include"], str(source),
                    "-o", str(built)], check=True, capture_output=True)
    data = bytearray(classic([(1.0, b"")], 1, "<", True))
    struct.pack_into("<I", data, 24 + 4, 369140570)
    out = subprocess.run([sys.executable, "-c", _FUSED_TIMES, str(tmp_path), bytes(data).hex()],
                         check=True, capture_output=True, text=True).stdout
    assert float(out) == 1 + 369140570 * 1e-9 == 1.36914057
