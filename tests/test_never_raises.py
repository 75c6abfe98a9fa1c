"""The decoder never raises, and what it returns accounts for every byte.

Inputs: arbitrary bytes; the fixture segments with random byte flips,
overwrites, insertions, deletions, truncations and cuts; and batches /
messages whose CRC is *valid* but whose contents are random (so the walker
trusts them and the record loop, decompressors and legacy expansion see
garbage).

Properties, for every input:

* ``list(iter_batches(data))`` (deep and shallow) and ``list(CrcScan(data))``
  return without raising;
* the items tile the input: in order, each ``Batch``/``Gap`` covers
  ``[position, position + size)`` with size > 0, consecutive items are
  contiguous, the union is exactly ``[0, len(data))``; the shallow walk
  (records not decoded) yields the same tiling as the deep one, and
  ``CrcScan``'s counters and gaps agree with it;
* every finding's offset lies within the input (a batch's findings within the
  batch), and a v2 record read from the file lies within its batch;
* every JSON line (batch, gap and record lines, in every ``--encoding``) is
  valid JSON, and the lossless encodings give back the exact bytes.
"""

from __future__ import annotations

import base64
import json
import mmap
import random
import signal
import struct
import zlib
from contextlib import contextmanager

import pytest
from conftest import FIXTURES
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from kafkadump.cli import app
from kafkadump.decoders.batches import Batch
from kafkadump.decoders.batches import CrcScan
from kafkadump.decoders.batches import Gap
from kafkadump.decoders.batches import Options
from kafkadump.decoders.batches import iter_batches
from kafkadump.base.findings import Code
from kafkadump.render import jsonl
from kafkadump.objects import records as records_model

SEED_FILES = sorted(FIXTURES.glob("*/*.log"))
SEEDS = [p.read_bytes() for p in SEED_FILES]
ENCODINGS = ("auto", "base64", "hex", "text")
RECORD_LINES = {e: jsonl.RecordLines(e) for e in ENCODINGS}

BOUNDED = settings(max_examples=300, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                          HealthCheck.filter_too_much])


def _decode_b(enc: str, s):
    if s is None:
        return None
    if enc == "auto":  # text as a string, other bytes as {"base64": ...}
        return s.encode("utf-8") if isinstance(s, str) else base64.b64decode(s["base64"], validate=True)
    if enc == "base64":
        return base64.b64decode(s, validate=True)
    if enc == "hex":
        return bytes.fromhex(s)
    return s


def check_json(item):
    d = json.loads(jsonl.item_line(item))
    assert d["type"] == ("gap" if isinstance(item, Gap) else "batch")
    assert d["position"] == item.position and d["size"] == item.size
    assert [f["code"] for f in d["findings"]] == [f.code.value for f in item.findings]
    assert [f["offset"] for f in d["findings"]] == [f.offset for f in item.findings]
    # the records command's "findings" line and verify-crc's lines
    json.loads(json.dumps({"type": "findings", "position": item.position,
                           "findings": records_model.findings_list(item.findings)}))
    json.loads(json.dumps(records_model.item_object(item)))
    if isinstance(item, Batch) and item.records:
        for r in item.records:
            for enc, lines in RECORD_LINES.items():
                rd = json.loads(lines.line(r, item))
                assert rd["type"] == "record" and rd["offset"] == r.offset
                assert rd["batchPosition"] == item.position
                if enc == "text":
                    assert rd["key"] == (None if r.key is None else bytes(r.key).decode("utf-8", "replace"))
                    continue
                assert _decode_b(enc, rd["key"]) == (None if r.key is None else bytes(r.key))
                assert _decode_b(enc, rd["value"]) == (None if r.value is None else bytes(r.value))
                assert [(h["key"], _decode_b(enc, h["value"])) for h in rd["headers"]] == \
                    [(k, None if v is None else bytes(v)) for k, v in r.headers]


def check_tiling(items, n: int):
    pos = 0
    for it in items:
        assert isinstance(it, (Batch, Gap)), it
        assert it.position == pos, f"item at {it.position}, expected {pos}"
        assert it.size > 0, f"empty item at {it.position}"
        pos += it.size
    assert pos == n, f"items cover {pos} of {n} bytes"


def check_findings(items, data):
    n = len(data)
    for it in items:
        lo, hi = it.position, it.position + it.size
        for f in it.findings:
            assert 0 <= f.offset < n, f"{f.code.value} finding at {f.offset} outside the {n}-byte input"
            if isinstance(it, Batch):
                assert lo <= f.offset < hi, f"{f.code.value} at {f.offset} outside its batch [{lo}, {hi})"
            if f.length is not None and f.source_offset is None:
                # "length when it covers a byte range" (man page): the range is in the file
                assert f.length >= 0 and f.offset + f.length <= n, \
                    f"{f.code.value} covers [{f.offset}, {f.offset + f.length}) of a {n}-byte input"
            if f.source_offset is not None:
                assert f.source_offset >= 0
        if isinstance(it, Batch) and it.records:
            for r in it.records:
                if r.source == "file":
                    assert lo <= r.position and r.position + r.size <= hi


def bounded(iterable, n: int) -> list:
    """``list(iterable)``, but a walker that stops advancing fails instead of hanging:
    every item covers at least one byte, so there are at most ``n`` of them."""
    out = []
    for it in iterable:
        out.append(it)
        assert len(out) <= max(n, 1), f"more than {n} items from {n} bytes: the walk is not advancing"
    return out


@contextmanager
def time_limit(seconds: int):
    """Fail, rather than hang the suite, if the walk loops (where SIGALRM exists)."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def fire(signum, frame):
        raise TimeoutError(f"still running after {seconds} s: the walk is probably not advancing")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def check_all(data: bytes):
    n = len(data)
    items = bounded(iter_batches(data, "fuzz"), n)
    check_tiling(items, n)
    check_findings(items, data)
    for it in items:
        check_json(it)

    shallow = bounded(iter_batches(data, "fuzz", options=Options(records=False)), n)
    check_tiling(shallow, n)
    check_findings(shallow, data)
    assert [(type(i), i.position, i.size) for i in shallow] == [(type(i), i.position, i.size) for i in items]

    scan = CrcScan(data, "fuzz")
    problems = bounded(scan, n)
    prev = 0
    for it in problems:
        assert it.findings, "CrcScan yields only items with findings"
        assert it.position >= prev and it.size > 0
        prev = it.position + it.size
        check_json(it)
    assert prev <= n
    check_findings(problems, data)
    gaps = [(g.position, g.size) for g in problems if isinstance(g, Gap)]
    assert gaps == [(g.position, g.size) for g in shallow if isinstance(g, Gap)]
    assert scan.batches == sum(isinstance(i, Batch) for i in shallow)
    assert scan.bytes + sum(s for _, s in gaps) == n
    return items


# --- inputs --------------------------------------------------------------------------------------

def apply_mutations(seed: bytes, ops) -> bytes:
    d = bytearray(seed)
    for kind, where, byte, blob, span in ops:
        p = where % (len(d) + 1)
        if kind == "flip" and d:
            d[p % len(d)] ^= 1 << (byte % 8)
        elif kind == "set" and d:
            d[p % len(d)] = byte
        elif kind == "insert":
            d[p:p] = blob or bytes([byte])
        elif kind == "delete":
            del d[p:p + span]
        elif kind == "truncate":
            del d[p:]
        elif kind == "zero":
            d[p:p + span] = bytes(len(d[p:p + span]))
    return bytes(d)


mutation = st.tuples(st.sampled_from(["flip", "flip", "set", "insert", "delete", "truncate", "zero"]),
                     st.integers(0, 1 << 20), st.integers(0, 255), st.binary(max_size=24), st.integers(1, 80))


@st.composite
def mutated_fixture(draw):
    seed = draw(st.sampled_from(SEEDS))
    return apply_mutations(seed, draw(st.lists(mutation, min_size=1, max_size=6)))


@st.composite
def fixture_slice(draw):
    seed = draw(st.sampled_from(SEEDS))
    a = draw(st.integers(0, len(seed)))
    b = draw(st.integers(a, len(seed)))
    return seed[a:b]


def _varint(v: int) -> bytes:
    v = (v << 1) ^ (v >> 63)
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _compress(codec: int, data: bytes) -> bytes:
    if codec == 1:
        import gzip
        return gzip.compress(data, mtime=0)
    if codec == 2:
        import snappy
        return snappy.compress(data)
    if codec == 3:
        import lz4.frame
        return lz4.frame.compress(data)
    if codec == 4:
        import zstandard
        return zstandard.ZstdCompressor().compress(data)
    return data


# a record whose parts are plausible but whose lengths may lie
record_bytes = st.builds(
    lambda attrs, ts, od, key, val, hdrs, skew, tail: (
        lambda body: _varint(len(body) + skew) + body)(
        bytes([attrs]) + _varint(ts) + _varint(od)
        + (_varint(-1) if key is None else _varint(len(key)) + key)
        + (_varint(-1) if val is None else _varint(len(val)) + val)
        + _varint(len(hdrs)) + b"".join(_varint(len(k)) + k + (_varint(-1) if v is None else _varint(len(v)) + v)
                                        for k, v in hdrs) + tail),
    st.integers(0, 255), st.integers(-(1 << 62), 1 << 62), st.integers(-3, 40),
    st.one_of(st.none(), st.binary(max_size=8)), st.one_of(st.none(), st.binary(max_size=8)),
    st.lists(st.tuples(st.binary(max_size=4), st.one_of(st.none(), st.binary(max_size=4))), max_size=3),
    st.sampled_from([0, 0, 0, -1, 1, -6, 3]), st.sampled_from([b"", b"", b"\x00", b"\xff\xff"]),
)


@st.composite
def v2_batch_valid_crc(draw):
    codec = draw(st.sampled_from([0, 0, 1, 2, 3, 4, 5]))
    body = b"".join(draw(st.lists(st.one_of(record_bytes, st.binary(max_size=12)), max_size=5)))
    if 1 <= codec <= 4:
        body = _compress(codec, body)
        if draw(st.booleans()):
            body = apply_mutations(body, draw(st.lists(mutation, max_size=2)))
    attrs = codec | draw(st.sampled_from([0, 0x08, 0x10, 0x20, 0x30, 0x40, 0x80, -0x8000]))
    hdr = struct.pack(">hiqqqhii", attrs, draw(st.integers(-2, 50)), draw(st.integers(-1, 1 << 41)),
                      draw(st.integers(-1, 1 << 41)), draw(st.integers(-1, 10)), draw(st.integers(-1, 3)),
                      draw(st.sampled_from([-1, 0, (1 << 31) - 1])), draw(st.integers(-2, 50)))
    rest = hdr + body
    return struct.pack(">qiibI", draw(st.integers(-1, 1 << 40)), len(rest) + 9, draw(st.integers(-1, 5)), 2,
                       crc32c(rest)) + rest


def _legacy(magic, attrs, key, value, ts, offset):
    m = bytes([magic, attrs & 0xFF]) + (struct.pack(">q", ts) if magic else b"")
    m += struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key
    m += struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", offset, len(m) + 4, zlib.crc32(m)) + m


@st.composite
def legacy_message_valid_crc(draw):
    magic = draw(st.sampled_from([0, 1]))
    codec = draw(st.sampled_from([0, 0, 1, 2, 3, 5]))
    if codec in (1, 2, 3):
        inner = b"".join(
            _legacy(draw(st.sampled_from([magic, magic, 1 - magic])), draw(st.sampled_from([0, 0, 1, 8])),
                    None, draw(st.binary(max_size=6)), draw(st.integers(-1, 9)), draw(st.integers(-1, 6)))
            for _ in range(draw(st.integers(0, 4))))
        if draw(st.booleans()):
            inner = apply_mutations(inner, draw(st.lists(mutation, max_size=2)))
        value = draw(st.one_of(st.just(_compress(codec, inner)), st.binary(max_size=10), st.none()))
    else:
        value = draw(st.one_of(st.none(), st.binary(max_size=10)))
    attrs = codec | draw(st.sampled_from([0, 0, 0x08, 0xF0]))
    return _legacy(magic, attrs, draw(st.one_of(st.none(), st.binary(max_size=6))), value,
                   draw(st.integers(-1, 1 << 41)), draw(st.integers(-1, 1 << 40)))


piece = st.one_of(v2_batch_valid_crc(), legacy_message_valid_crc(), st.binary(max_size=30),
                  st.integers(1, 40).map(bytes), st.sampled_from(SEEDS).map(lambda s: s[:200]))


# --- properties -------------------------------------------------------------------------------------

@BOUNDED
@given(st.binary(max_size=700))
def test_arbitrary_bytes(data):
    check_all(data)


@BOUNDED
@given(mutated_fixture())
def test_mutated_fixtures(data):
    check_all(data)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fixture_slice())
def test_fixture_slices(data):
    check_all(data)


@BOUNDED
@given(st.lists(piece, min_size=1, max_size=5).map(b"".join))
def test_valid_crc_random_contents(data):
    check_all(data)


def test_empty_input():
    assert check_all(b"") == []
    assert list(CrcScan(b"")) == []


@pytest.mark.parametrize("path", SEED_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixtures_themselves(path):
    check_all(path.read_bytes())


@pytest.mark.parametrize("path", SEED_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_truncation_of_every_fixture_head(path):
    """Cut each fixture at every length up to its first two batches, and a sample beyond."""
    data = path.read_bytes()
    first = bounded(iter_batches(data), len(data))
    stop = min(len(data), sum(i.size for i in first[:2]) + 1)
    cuts = list(range(stop)) + list(range(stop, len(data), 97))
    for n in cuts:
        check_all(data[:n])


# --- known bugs ------------------------------------------------------------------------------------

def _empty_payload_inputs():
    hdr = struct.pack(">hiqqqhii", 1, 0, 0, 0, -1, -1, -1, 1)                 # gzip, no payload bytes
    return {
        "v2-empty-payload": struct.pack(">qiibI", 0, 49, 0, 2, crc32c(hdr)) + hdr,
        "legacy-empty-value": _legacy(1, 1, None, b"", 0, 0),                   # gzip wrapper, value b""
        "legacy-null-value": _legacy(0, 1, None, None, 0, 0),                   # gzip wrapper, value null
    }


@pytest.mark.parametrize("kind", ["v2-empty-payload", "legacy-empty-value", "legacy-null-value"])
def test_empty_compressed_payload_finding_is_inside_the_batch(kind):
    data = _empty_payload_inputs()[kind]
    for tail in (b"", data):       # last in the file, and followed by another
        buf = data + tail
        (b, *_) = bounded(iter_batches(buf), len(buf))
        assert isinstance(b, Batch) and len(b.findings) == 1
        assert b.findings[0].code in (Code.DECOMPRESSION_FAILED, Code.RECORD_MALFORMED)
        f = b.findings[0]
        assert b.position <= f.offset < b.position + b.size, (f.offset, b.position, b.size)


@pytest.mark.parametrize("kind", ["bytes", "mmap", "bytearray", "memoryview"])
def test_record_bytes_are_bytes_whatever_the_buffer(kind):
    """Keys and values are ``bytes`` whatever buffer the walker is given (a memoryview input
    once gave memoryview keys, and the text JSON renderer raised AttributeError on them)."""
    path = FIXTURES / "segment-v2" / "00000000000000000000.log"
    data = path.read_bytes()
    ref = [(r.offset, r.key, r.value, r.headers) for b in bounded(iter_batches(data), len(data)) for r in b.records]
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        buf = {"bytes": data, "mmap": mm, "bytearray": bytearray(data), "memoryview": memoryview(data)}[kind]
        items = bounded(iter_batches(buf), len(data))
        for b in items:
            check_json(b)      # renders every record in every encoding
            for r in b.records:
                assert r.key is None or type(r.key) is bytes, type(r.key).__name__
                assert r.value is None or type(r.value) is bytes, type(r.value).__name__
        assert [(r.offset, r.key, r.value, r.headers) for b in items for r in b.records] == ref
        del items, buf


@pytest.mark.parametrize("tail", [b"\x05", b"\x00\x01\x02\x03"], ids=["1-byte-tail", "4-byte-tail"])
def test_length_invalid_finding_range_is_inside_the_input(tail):
    data = bytes(8) + struct.pack(">i", len(tail)) + tail     # offset 0, length = what follows: too small
    (g,) = bounded(iter_batches(data), len(data))
    assert isinstance(g, Gap) and (g.position, g.size) == (0, len(data))
    for f in g.findings:
        assert 0 <= f.offset < len(data)
        if f.length is not None:
            assert f.offset + f.length <= len(data), (f.code.value, f.offset, f.length, len(data))


# --- the command line on damaged files ------------------------------------------------------------

def test_cli_json_lines_on_damaged_files(tmp_path):
    """Every stdout line of every --json command is JSON, on randomly damaged segments (deterministic)."""
    rnd = random.Random(20240601)
    runner = CliRunner()
    paths = []
    for i in range(8):
        seed = SEEDS[i % len(SEEDS)]
        ops = [(rnd.choice(["flip", "set", "insert", "delete", "truncate", "zero"]), rnd.randrange(1 << 20),
                rnd.randrange(256), bytes(rnd.randrange(256) for _ in range(rnd.randrange(20))), rnd.randrange(1, 80))
               for _ in range(rnd.randint(1, 5))]
        p = tmp_path / f"damaged-{i}.log"
        p.write_bytes(apply_mutations(seed, ops))
        paths.append(str(p))
    (tmp_path / "garbage.log").write_bytes(bytes(rnd.randrange(256) for _ in range(3000)))
    paths.append(str(tmp_path / "garbage.log"))
    commands = [["batches", "--json"], ["batches", "--json", "--shallow"], ["verify-crc", "--json"]]
    commands += [["records", "--json", "-e", e] for e in ENCODINGS]
    for cmd in commands:
        with time_limit(60):
            r = runner.invoke(app, cmd + paths)
        assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
        assert r.exit_code in (0, 1), (cmd, r.exit_code, r.output[-500:])
        lines = r.stdout.splitlines()
        assert lines
        for line in lines:
            json.loads(line)
