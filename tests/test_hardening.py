"""Hostile and broken input: bounded memory, bounded work, clear errors, evidence untouched.

Every hostile case runs the real CLI as a subprocess and reads its peak RSS
(``ru_maxrss`` of a fresh wrapper process's only child), which must stay
under 200 MB.  Work bounds are checked without clocks: by counting the bytes
fed to the decompressors.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import builders as bld
import capture_builders as cb
import pytest
from conftest import FIXTURES
from crc32c import crc32c

from kafkadump.decoders.batches import Batch
from kafkadump.decoders.batches import Options
from kafkadump.decoders.batches import iter_batches
from kafkadump.decoders.batches import compression as C
from kafkadump.base.findings import Code
from kafkadump.base.findings import Severity

MUTATION_CODES = {"decompression-ratio", "scan-limit"}

RSS_LIMIT_MB = 200
MiB = 1 << 20
V2 = str(FIXTURES / "segment-v2" / "00000000000000000000.log")

_WRAPPER = r"""
import resource, subprocess, sys
r = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
sys.stdout.buffer.write(r.stdout)
sys.stderr.buffer.write(r.stderr)
with open(sys.argv[1], "w") as f:
    f.write(f"{r.returncode} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
"""


def kd(*args, cwd=None):
    """Run ``kafkadump ARGS`` in a fresh process; (returncode, stdout, stderr, peak RSS in MB)."""
    import tempfile

    with tempfile.NamedTemporaryFile("r", suffix=".rss") as t:
        p = subprocess.run([sys.executable, "-c", _WRAPPER, t.name, sys.executable, "-m", "kafkadump", *args],
                           capture_output=True, text=True, cwd=cwd)
        rc, kb = open(t.name).read().split()
    assert "Traceback" not in p.stderr, p.stderr
    return int(rc), p.stdout, p.stderr, int(kb) / 1024


def codes(stdout: str) -> set:
    out = set()
    for line in stdout.splitlines():
        d = json.loads(line)
        fs = d.get("findings")
        if isinstance(fs, list):
            out.update(f["code"] for f in fs)
    return out


def v2_raw(payload: bytes, codec: int = 0, count: int = 1, base_offset: int = 0) -> bytes:
    """A v2 batch around ``payload`` as it is (already compressed or not), with a valid CRC."""
    after = (struct.pack(">hiqqqhii", codec, count - 1, bld.T0, bld.T0, -1, -1, -1, count) + payload)
    length = 4 + 1 + 4 + len(after)
    return struct.pack(">qiib", base_offset, length, 0, 2) + struct.pack(">I", crc32c(after)) + after


# --- the acceptance cases -------------------------------------------------------------------------------

def test_2gib_declared_batch_length_in_100_byte_file(tmp_path):
    data = bytearray(v2_raw(b"\x00" * 60))[:100]
    data[8:12] = struct.pack(">i", 0x7FFFFFFF)
    legacy = bytearray(bld.legacy_message(0, b"v" * 80))[:100]
    legacy[8:12] = struct.pack(">i", 0x7FFFFFFF)
    for name, blob in (("v2.log", data), ("legacy.log", legacy)):
        p = tmp_path / name
        assert len(blob) == 100
        p.write_bytes(bytes(blob))
        for cmd in (["batches", "--json"], ["records", "--json"], ["verify-crc", "--json"], ["carve", "--json"]):
            rc, out, err, rss = kd(*cmd, str(p))
            assert rc == 1, (cmd, err)
            assert rss < RSS_LIMIT_MB, (cmd, rss)
            if cmd[0] != "carve":
                assert codes(out) & {"length-invalid", "truncated"}, (cmd, out)


def _bomb(codec: int, total: int) -> bytes:
    """Compressed zeros expanding to ``total`` bytes, built one MiB at a time (concatenated
    gzip members / lz4 frames / zstd frames, xerial snappy blocks): no big buffer here either."""
    one = b"\x00" * MiB
    n = total // MiB
    if codec == bld.GZIP:
        return gzip.compress(one, mtime=0) * n
    if codec == bld.LZ4:
        import lz4.frame

        return lz4.frame.compress(one) * n
    if codec == bld.ZSTD:
        import zstandard

        return zstandard.ZstdCompressor().compress(one) * n
    import snappy

    blk = snappy.compress(b"\x00" * 32768)
    return C.XERIAL_MAGIC + struct.pack(">ii", 1, 1) + (struct.pack(">i", len(blk)) + blk) * (total // 32768)


@pytest.mark.parametrize("codec,name", [(bld.GZIP, "gzip"), (bld.ZSTD, "zstd"), (bld.LZ4, "lz4"),
                                        (bld.SNAPPY, "snappy")])
def test_compression_bomb_past_the_cap(tmp_path, codec, name):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(v2_raw(_bomb(codec, 96 * MiB), codec) + bld.simple_batch(5).data)
    # ratio limit off: the 64 MiB cap stops every codec
    rc, out, err, rss = kd("records", "--json", "--max-ratio", "0", str(p))
    assert rc == 1 and "decompression-limit" in codes(out), err
    assert rss < RSS_LIMIT_MB, rss
    assert sum(1 for line in out.splitlines() if json.loads(line).get("type") == "record") == 3
    # default (1000:1): zstd (far beyond) is refused for its ratio first; gzip (at most about 1030:1),
    # lz4 (255:1) and snappy (21:1) run into the cap
    rc, out, err, rss = kd("batches", "--json", str(p))
    expect = "decompression-ratio" if codec == bld.ZSTD else "decompression-limit"
    assert rc == 1 and expect in codes(out), (name, out)
    assert rss < RSS_LIMIT_MB, rss


def _nested(levels: int) -> bytes:
    msg = bld.legacy_message(0, b"innermost", magic=0)
    for _ in range(levels):
        value = zlib.compressobj(0, zlib.DEFLATED, 31)
        value = value.compress(msg) + value.flush()  # stored gzip: building stays fast
        msg = bld.legacy_message(0, value, magic=0, attributes=bld.GZIP)
    return msg


@pytest.fixture(scope="module")
def nested_10k(tmp_path_factory):
    p = tmp_path_factory.mktemp("nested") / "00000000000000000000.log"
    p.write_bytes(_nested(10_000))
    return p


def test_10000_nested_legacy_wrappers(nested_10k):
    for cmd in (["records", "--json"], ["batches", "--json", "--max-depth", "64"], ["verify-crc", "--json"]):
        rc, out, err, rss = kd(*cmd, str(nested_10k))
        assert rc == 1, err
        assert "nesting-too-deep" in codes(out) or cmd[0] == "verify-crc" and '"bad":0' not in out
        assert rss < RSS_LIMIT_MB, (cmd, rss)


def test_nesting_work_is_bounded_by_max_depth(nested_10k, monkeypatch):
    """Only --max-depth levels are decompressed, whatever the nesting (count, not time)."""
    calls = []
    real = C.decompress
    monkeypatch.setattr("kafkadump.decoders.batches.legacy.decompress", lambda *a, **k: calls.append(1) or real(*a, **k))
    items = list(iter_batches(nested_10k.read_bytes(), options=Options(max_depth=4)))
    assert len(items) == 1 and any(f.code is Code.NESTING_TOO_DEEP for f in items[0].findings)
    assert len(calls) == 4


def test_record_count_2_31_minus_1_with_3_records(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(bld.simple_batch(0, 3, record_count=2**31 - 1).data
                  + bld.simple_batch(3, 3, codec=bld.GZIP, record_count=2**31 - 1).data)
    for cmd in (["records", "--json"], ["batches", "--json"], ["hexdump", "--json", "--records"]):
        rc, out, err, rss = kd(*cmd, str(p))
        assert rc == 1, err
        assert rss < RSS_LIMIT_MB, rss
    rc, out, _, _ = kd("records", "--json", str(p))
    assert codes(out) & {"record-count-mismatch", "header-invalid"}
    assert sum(1 for line in out.splitlines() if json.loads(line).get("type") == "record") == 6


def test_protocol_array_count_2_31_minus_1(tmp_path):
    body = cb.req_header(3, 0, 7, "t", hv=1, tags=b"") + struct.pack(">i", 2**31 - 1) + b"\x00\x01a" * 3
    p = tmp_path / "frame.bin"
    p.write_bytes(cb.frame(body))
    rc, out, err, rss = kd("capture", "--json", "--as", "request", str(p))
    assert rc == 1, err
    assert rss < RSS_LIMIT_MB, rss
    assert "field-malformed" in out


def test_pcap_stream_of_only_retransmissions(tmp_path):
    seg = cb.ipv4_tcp("10.0.0.1", "10.0.0.2", 40000, 9092, 1000, 1, 0x18, cb.metadata_v1_request(1))
    data, _ = cb.pcap([(1.0 + i * 1e-3, seg) for i in range(20_000)])
    p = tmp_path / "retrans.pcap"
    p.write_bytes(data)
    rc, out, err, rss = kd("capture", "--json", str(p))
    assert rc in (0, 1), err
    assert rss < RSS_LIMIT_MB, rss
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) <= 20_000 + 10  # at most one line per packet: output linear in the input
    assert "tcp-retransmission" in out


def test_head_1_exits_quietly(tmp_path):
    x = tmp_path / "x.log"
    x.write_bytes(b"".join(bld.simple_batch(i * 3, 3).data for i in range(3000)))
    for fmt in ("", "--json "):
        cmd = f"{sys.executable} -m kafkadump records {fmt}x.log | head -1"
        r = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert r.stderr == ""
        assert len(r.stdout.splitlines()) == 1
        if fmt:
            json.loads(r.stdout)


def test_ctrl_c_leaves_complete_json_lines(tmp_path):
    x = tmp_path / "x.log"
    x.write_bytes(b"".join(bld.simple_batch(i * 3, 3, value_size=200).data for i in range(30000)))
    proc = subprocess.Popen([sys.executable, "-m", "kafkadump", "records", "--json", str(x)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.send_signal(signal.SIGINT)
    # read through the same buffered reader: communicate() reads the raw pipe and would
    # skip what readline() had already buffered, cutting a line in the test, not in kafkadump
    rest = proc.stdout.read()
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err and err == b""
    for line in (first + rest).splitlines():
        json.loads(line)
    assert (first + rest).endswith(b"\n")


# --- bounded work (no clocks) ----------------------------------------------------------------------------

def _count_gzip_input(monkeypatch):
    fed = [0]
    real = zlib.decompressobj

    class Counting:
        def __init__(self, *a, **k):
            self._d = real(*a, **k)

        def decompress(self, data, *a):
            fed[0] += len(data)
            return self._d.decompress(data, *a)

        def __getattr__(self, name):
            return getattr(self._d, name)

    monkeypatch.setattr(C.zlib, "decompressobj", Counting)
    return fed


@pytest.mark.parametrize("members", [2_000, 20_000])
def test_many_gzip_members_cost_linear_input(monkeypatch, members):
    data = gzip.compress(b"", mtime=0) * members
    fed = _count_gzip_input(monkeypatch)
    assert C.decompress(1, data, 1 << 20) == b""
    assert fed[0] <= 4 * len(data) + (1 << 16)


def test_many_lz4_frames_cost_linear_input(monkeypatch):
    import lz4.frame

    fed = [0]
    real = lz4.frame.LZ4FrameDecompressor

    class Counting:
        def __init__(self, *a, **k):
            self._d = real(*a, **k)

        def decompress(self, data, *a, **k):
            fed[0] += len(data)
            return self._d.decompress(data, *a, **k)

        def __getattr__(self, name):
            return getattr(self._d, name)

    monkeypatch.setattr(lz4.frame, "LZ4FrameDecompressor", Counting)
    data = lz4.frame.compress(b"x") * 20_000
    assert C.decompress(3, data, 1 << 20) == b"x" * 20_000
    assert fed[0] <= 4 * len(data) + (1 << 16)


# --- the ratio limit: a mutation test of decompression-ratio --------------------------------------------

def test_decompression_ratio_mutation():
    good1 = bld.simple_batch(0, 3).data
    bomb = v2_raw(gzip.compress(b"\x00" * (2 * MiB), mtime=0), bld.GZIP, base_offset=3)
    good2 = bld.simple_batch(4, 3).data
    data = good1 + bomb + good2
    items = list(iter_batches(data, options=Options(max_ratio=100)))
    assert [i.position for i in items] == [0, len(good1), len(good1) + len(bomb)]
    f = [f for f in items[1].findings if f.code is Code.DECOMPRESSION_RATIO]
    assert len(f) == 1 and f[0].offset == len(good1) + 61 and f[0].severity is Severity.ERROR
    assert all(not i.findings for i in (items[0], items[2]))
    # the same bytes are fine without the ratio limit, and under the 1 MiB floor nothing is refused
    assert not any(f.code is Code.DECOMPRESSION_RATIO
                   for f in list(iter_batches(data, options=Options(max_ratio=0)))[1].findings)
    small = v2_raw(gzip.compress(bld.simple_batch(0, 3).data[61:] + b"\x00" * 9000, mtime=0), bld.GZIP)
    assert not any(f.code is Code.DECOMPRESSION_RATIO
                   for f in list(iter_batches(small, options=Options(max_ratio=2)))[0].findings)


def test_legacy_ratio_limit():
    inner = bld.legacy_message(0, b"\x00" * (2 * MiB), magic=0)
    w, _ = bld.legacy_wrapper(0, [inner], magic=0)
    (item,) = iter_batches(w, options=Options(max_ratio=100))
    assert [f.code for f in item.findings] == [Code.DECOMPRESSION_RATIO]


def test_max_ratio_option(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(v2_raw(gzip.compress(b"\x00" * (2 * MiB), mtime=0), bld.GZIP))
    rc, out, _, _ = kd("batches", "--json", "--max-ratio", "100", str(p))
    assert rc == 1 and "decompression-ratio" in codes(out)
    rc, out, _, _ = kd("batches", "--json", "--max-ratio", "0", str(p))
    assert "decompression-ratio" not in codes(out)


# --- clear errors ---------------------------------------------------------------------------------------------

def _one_line_error(rc, out, err, json_=False):
    assert rc == 2, err
    assert out == ""
    assert err.count("\n") == 1, err
    if json_:
        d = json.loads(err)
        assert d["type"] == "error" and d["exitStatus"] == 2 and d["message"]
        return d["message"]
    assert err.startswith("kafkadump: ")
    return err


@pytest.fixture(scope="module")
def wrong(tmp_path_factory):
    d = tmp_path_factory.mktemp("wrong")
    (d / "00000000000000000000.index").write_bytes(struct.pack(">ii", 0, 0) * 4)
    seg = cb.ipv4_tcp("10.0.0.1", "10.0.0.2", 40000, 9092, 1000, 1, 0x18, cb.metadata_v1_request(1))
    (d / "c.pcap").write_bytes(cb.pcap([(1.0, seg)])[0])
    (d / "empty.bin").write_bytes(b"")
    (d / "notes.txt").write_text("this is not a segment\n")
    (d / "adir").mkdir()
    return d


@pytest.mark.parametrize("args,expect", [
    (["records", "missing.log"], "no such file"),
    (["batches", "adir"], "no segment files"),  # a directory is read as a partition or log dir
    (["verify-crc", "adir"], "no segment files"),
    (["records", "00000000000000000000.index"], "kafkadump dump"),
    (["batches", "c.pcap"], "kafkadump capture"),
    (["hexdump", "c.pcap"], "kafkadump capture"),
    (["batches", "empty.bin"], "empty file"),
    (["records", "notes.txt"], "is text"),
    (["capture", "missing.pcap"], "no such file"),
    (["capture", "adir"], "is a directory"),
    (["carve", "adir"], "is a directory"),
    (["dump", "missing.index"], "no such file"),
    (["triage", "missing-dir"], "no such file"),
    (["records", "--max-depth", "0", "x.log"], "--max-depth"),
    (["records", "--max-decompressed", "-5", "x.log"], "--max-decompressed"),
    (["records", "--max-ratio", "-1", "x.log"], "--max-ratio"),
    (["records", "--encoding", "rot13", "x.log"], "--encoding"),
    (["records", "--from-time", "yesterday", "x.log"], "--from-time"),
    (["capture", "--port", "0", "x.pcap"], "--port"),
    (["records"], "Missing argument"),
    (["nosuchcommand"], "No such command"),
])
@pytest.mark.parametrize("json_", [False, True])
def test_user_errors_are_one_line_exit_2(wrong, args, expect, json_):
    if json_:
        if args[0] == "nosuchcommand":
            pytest.skip("no command, no --json")
        args = [args[0], "--json", *args[1:]]
    r = subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, text=True, cwd=wrong)
    msg = _one_line_error(r.returncode, r.stdout, r.stderr, json_)
    assert expect in msg, msg


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_unreadable_file(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(open(V2, "rb").read())
    p.chmod(0)
    r = subprocess.run([sys.executable, "-m", "kafkadump", "records", str(p)], capture_output=True, text=True)
    assert "permission denied" in _one_line_error(r.returncode, r.stdout, r.stderr)


def test_empty_segment_is_still_a_segment(tmp_path):
    """An empty .log is real (a freshly rolled segment): clean, not an error."""
    p = tmp_path / "00000000000000000005.log"
    p.write_bytes(b"")
    r = subprocess.run([sys.executable, "-m", "kafkadump", "batches", "--json", str(p)], capture_output=True)
    assert r.returncode == 0 and r.stdout == b"" and r.stderr == b""


def test_misnamed_file_holding_batches_is_decoded(tmp_path):
    p = tmp_path / "00000000000000000000.index"
    p.write_bytes(open(V2, "rb").read())
    r = subprocess.run([sys.executable, "-m", "kafkadump", "batches", "--json", str(p)], capture_output=True)
    assert r.returncode == 0 and r.stdout


# --- evidence untouched by every command -------------------------------------------------------------------

def test_every_command_leaves_every_input_untouched(tmp_path):
    part = tmp_path / "logs" / "orders-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(open(FIXTURES / "damaged" / "00000000000000000000.log",
                                                         "rb").read())
    (part / "00000000000000000000.index").write_bytes(struct.pack(">ii", 0, 0))
    (part / "00000000000000000000.timeindex").write_bytes(struct.pack(">qi", bld.T0, 0))
    (part / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    (part / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
    data, _ = cb.pcap([(1.0, cb.ipv4_tcp("10.0.0.1", "10.0.0.2", 40000, 9092, 1000, 1, 0x18,
                                         cb.metadata_v1_request(1)))])
    (tmp_path / "c.pcap").write_bytes(data)
    (tmp_path / "d.txt").write_text("0000  00 00 00 0a 00 12 00 03 00 00 00 01 00 00\n")
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    for p in files:
        p.chmod(0o444)
    before = {p: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in files}
    log = str(part / "00000000000000000000.log")
    out = tmp_path / "out"
    out.mkdir()
    runs = [["batches", log], ["records", "--json", log], ["verify-crc", log], ["hexdump", log],
            ["batches", "--format", "dump-log", log],
            ["capture", str(tmp_path / "c.pcap")], ["capture", "--json", str(tmp_path / "d.txt")],
            ["dump", str(part / "00000000000000000000.index")], ["dump", "--json", str(part / "leader-epoch-checkpoint")],
            ["triage", str(tmp_path / "logs")], ["triage", "--json", str(tmp_path / "logs")],
            ["carve", "--json", log], ["carve", "--output", str(out / "carved.log"), log],
            ["carve", "--output", log, "--force", log]]
    for args in runs:
        r = subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, text=True)
        assert r.returncode in (0, 1, 2) and "Traceback" not in r.stderr, (args, r.stderr)
    assert {p: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in files} == before
    # nothing was written next to any input
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file()) == sorted(files + [out / "carved.log"])
    # carve refuses an existing output without --force
    r = subprocess.run([sys.executable, "-m", "kafkadump", "carve", "--output", str(out / "carved.log"), log],
                       capture_output=True, text=True)
    assert "--force" in _one_line_error(r.returncode, r.stdout, r.stderr)


# --- resynchronisation is linear: a scan-limit mutation test -------------------------------------------------

def _resync_attack(n: int) -> bytes:
    """Garbage, then a plausible v2 header with a wrong CRC and a length reaching the end every 61 bytes:
    checking every candidate's CRC would cost about n*n/122 bytes."""
    out = bytearray(b"\x07" * 17)
    while len(out) + 61 <= n:
        out += struct.pack(">qiibIhiqqqhii", 0, n - len(out) - 12, 0, 2, 0, 0, 0, 0, 0, -1, -1, -1, 0)
    return bytes(out + b"\x01" * (n - len(out)))


def test_resync_crc_work_is_bounded(monkeypatch):
    from kafkadump.decoders.batches import walk

    n = 4 * MiB
    spent = []
    real = walk.ScanBudget.for_walk.__func__

    def spy(cls, opt, size):
        b = real(cls, opt, size)
        spent.append(b)
        return b

    monkeypatch.setattr(walk.ScanBudget, "for_walk", classmethod(spy))
    items = list(iter_batches(_resync_attack(n), options=Options()))
    (budget,) = spent
    assert budget.spent <= budget.limit + n  # the limit, plus the one check that crossed it
    assert sum(i.size for i in items) == n
    f = [f for i in items for f in i.findings if f.code is Code.SCAN_LIMIT]
    assert len(f) == 1 and f[0].offset == 0 and f[0].severity is Severity.WARNING
    # a damaged-but-honest file never comes near the budget
    data = open(FIXTURES / "damaged" / "00000000000000000000.log", "rb").read()
    assert not any(f.code is Code.SCAN_LIMIT for i in iter_batches(data) for f in i.findings)


def test_max_scan_option(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(_resync_attack(1 * MiB))
    rc, out, err, rss = kd("batches", "--json", str(p))
    assert rc == 1 and "scan-limit" in codes(out), err
    assert rss < RSS_LIMIT_MB
    rc, out, err, rss = kd("verify-crc", "--json", "--max-scan", "0", str(p))  # unbounded: slower, same answer
    assert rc == 1 and "scan-limit" not in codes(out)
