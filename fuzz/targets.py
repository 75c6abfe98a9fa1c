"""Fuzz targets: one per input path of kafkadump.

Each target takes arbitrary bytes and runs them through one input path the
way the command line does, checking the contract: no exception other than
the documented user-facing errors, output lines that are valid JSON, and
(for the segment walk) items that tile the input.  A target raises on a
contract violation; the fuzzers (``fuzz/run.py`` with atheris, or the
hypothesis fallback in ``tests/test_fuzz.py``) report that as a crash.

Targets are plain functions, importable without atheris.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import struct
import tempfile
import zlib

import payload_targets
from kafkadump.decoders.batches import Batch
from kafkadump.decoders.batches import CrcScan
from kafkadump.decoders.batches import Gap
from kafkadump.decoders.batches import Options
from kafkadump.decoders.batches import iter_batches
from kafkadump.decoders.batches.compression import decompress
from kafkadump.base.findings import DecodeError
from kafkadump.render import dumplog, jsonl
from kafkadump.objects import records as records_model

# small caps keep every execution fast and memory-bounded
CAP = 1 << 20
OPT = Options(records=True, max_decompressed=CAP, max_depth=4)
SHALLOW = Options(records=False, max_decompressed=CAP, max_depth=4)

_TMP = None


def _tmpdir() -> str:
    global _TMP
    if _TMP is None:
        base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        _TMP = tempfile.mkdtemp(prefix="kafkadump-fuzz-", dir=base)
    return _TMP


def _file(name: str, data: bytes) -> str:
    d = os.path.join(_tmpdir(), "t-0")
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, name)
    with open(p, "wb") as f:
        f.write(data)
    return p


def _cli(args) -> tuple[int, str, str]:
    """Run the CLI in process (no subprocess: fast enough to fuzz).  A traceback is a crash."""
    from kafkadump.cli import app

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = app(list(args), standalone_mode=False, prog_name="kafkadump")
    rc = 0 if rc is None else rc
    if rc not in (0, 1, 2):
        raise AssertionError(f"exit status {rc}")
    text = out.getvalue()
    if "--json" in args:
        _json_lines(text)
    if rc == 2:
        e = err.getvalue().strip()
        assert e and "\n" not in e and "Traceback" not in e, e
    return rc, text, err.getvalue()


_UNSAFE = frozenset(chr(c) for c in (0x7F, *range(0x80, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F),
                                     *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C))


def _json_lines(text: str) -> None:
    """JSON Lines as the format defines them (split on ``\\n`` only): each line one valid
    object, and no raw DEL, C1 or Unicode line separator that another splitter would cut at."""
    for line in text.split("\n"):
        if not line:
            continue
        json.loads(line)
        bad = _UNSAFE.intersection(line)
        assert not bad, f"raw {sorted(hex(ord(c)) for c in bad)} in a JSON line"


def _tiles(items, n: int) -> None:
    pos = 0
    for it in items:
        assert it.position == pos and it.size > 0, (it.position, it.size, pos)
        for f in it.findings:
            assert 0 <= f.offset <= n, (f.code, f.offset, n)
        pos += it.size
    assert pos == n, (pos, n)


# --- the targets -------------------------------------------------------------------------------

def segment(data: bytes) -> None:
    """batches / verify-crc: deep and shallow walks tile the input; CrcScan agrees."""
    deep = list(iter_batches(data, "fuzz", options=OPT))
    _tiles(deep, len(data))
    shallow = list(iter_batches(data, "fuzz", options=SHALLOW))
    assert [(i.position, i.size) for i in shallow] == [(i.position, i.size) for i in deep]
    scan = CrcScan(data, "fuzz", SHALLOW, threads=1)
    list(scan)
    assert scan.batches == sum(isinstance(i, Batch) for i in deep)
    for it in deep:
        json.loads(jsonl.item_line(it))


_LINES = {e: jsonl.RecordLines(e) for e in ("base64", "hex", "text")}


def records(data: bytes) -> None:
    """records: every JSON line is valid in every encoding; dump-log renders."""
    for it in iter_batches(data, "fuzz", options=OPT):
        dumplog.render(it, records=True)
        if isinstance(it, Gap):
            json.dumps(records_model.gap_object(it))
            continue
        json.dumps(records_model.findings_list(it.findings))
        if it.records:
            for lines in _LINES.values():
                _json_lines(lines.batch_lines(it, it.records))


def _legacy_message(magic: int, attributes: int, key, value: bytes, offset: int = 0) -> bytes:
    body = bytes([magic, attributes]) + (struct.pack(">q", 0) if magic else b"")
    body += struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key
    body += struct.pack(">i", len(value)) + value
    msg = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(msg)) + msg


def legacy(data: bytes) -> None:
    """Legacy message sets: a valid-CRC wrapper around fuzzed (maybe compressed) inner bytes."""
    if not data:
        return
    ctl = data[0]
    magic = ctl & 1
    codec = (ctl >> 1) % 5
    inner = data[1:]
    if codec == 1 and ctl & 0x80:
        import gzip

        inner = gzip.compress(inner, mtime=0)  # reach the inner-message parser through a valid gzip
    buf = _legacy_message(magic, codec, None, inner)
    items = list(iter_batches(buf, "fuzz", options=OPT))
    _tiles(items, len(buf))
    records(buf)


def compression(data: bytes) -> None:
    """Every codec: output never beyond the cap; only DecodeError on bad bytes."""
    if not data:
        return
    codec = data[0] % 5
    cap = 1 << 16
    try:
        out = decompress(codec, data[1:], cap, [])
    except DecodeError:
        return
    assert len(out) <= cap


def _dump(name: str, data: bytes, with_log: bytes | None = None) -> None:
    p = _file(name, data)
    if with_log is not None:
        _file("00000000000000000000.log", with_log)
    try:
        _cli(["dump", "--json", p])
        _cli(["dump", p])
    finally:
        if with_log is not None:
            os.unlink(os.path.join(os.path.dirname(p), "00000000000000000000.log"))


_SEED_LOG = None


def _seed_log() -> bytes:
    """A small valid segment for the index targets to be checked against."""
    global _SEED_LOG
    if _SEED_LOG is None:
        here = os.path.dirname(os.path.abspath(__file__))
        p = os.path.join(here, "..", "fixtures", "segment-v2", "00000000000000000000.log")
        try:
            with open(p, "rb") as f:
                _SEED_LOG = f.read(1 << 16)
        except OSError:
            _SEED_LOG = b""
    return _SEED_LOG


def index(data: bytes) -> None:
    """.index / .timeindex / .txnindex, each checked against a real sibling .log."""
    if not data:
        return
    ext = (".index", ".timeindex", ".txnindex")[data[0] % 3]
    _dump("00000000000000000000" + ext, data[1:], _seed_log())


def snapshot(data: bytes) -> None:
    """Producer-state .snapshot files."""
    _dump("00000000000000000000.snapshot", data)


_TEXT_NAMES = ("leader-epoch-checkpoint", "recovery-point-offset-checkpoint", "partition.metadata",
               "meta.properties", "quorum-state", "replication-offset-checkpoint")


def checkpoint(data: bytes) -> None:
    """Checkpoint / properties / metadata text files."""
    if not data:
        return
    _dump(_TEXT_NAMES[data[0] % len(_TEXT_NAMES)], data[1:])


def carve(data: bytes) -> None:
    """carve: the recovered/damaged report (no output file)."""
    p = _file("00000000000000000000.log", data)
    _cli(["carve", "--json", p])


def _capture(name: str, data: bytes, *extra) -> None:
    p = _file(name, data)
    _cli(["capture", "--json", *extra, p])
    _cli(["capture", "--records", "--json", p])


def hextext(data: bytes) -> None:
    """Hex text (xxd, hexdump -C, tcpdump -X, tshark -x ...) as capture reads it."""
    _capture("dump.txt", data.decode("latin-1").encode("ascii", "replace"))


def pcap(data: bytes) -> None:
    """pcap and pcapng files: TCP reassembly, framing, decoding."""
    _capture("capture.pcap", data)


def protocol(data: bytes) -> None:
    """Raw protocol frames (requests, responses, bare batches), as a binary capture input."""
    if not data:
        return
    as_ = (None, "request", "response", "records")[data[0] % 4]
    p = _file("frames.bin", data[1:])
    _cli(["capture", "--json", p] if as_ is None else ["capture", "--json", "--as", as_, p])


def internal(data: bytes) -> None:
    """Internal-topic keys and values (__consumer_offsets, __transaction_state, metadata, ...)."""
    from kafkadump.decoders.internal_topics.constants import KINDS
    from kafkadump.decoders.internal_topics.record_decoder import decoder_for
    from kafkadump.render.internal_records import record_dict, summary

    if len(data) < 3:
        return
    kind = KINDS[data[0] % len(KINDS)]
    control = bool(data[1] & 1)
    split = data[2] % max(1, len(data) - 3 + 1)
    rest = data[3:]
    key, value = rest[:split], rest[split:]
    if data[1] & 2:
        key = None
    if data[1] & 4:
        value = None
    dec = decoder_for(kind).decode(key, value, control)
    for lines in _LINES.values():
        json.dumps(record_dict({"type": "record"}, dec, lines.enc))
    summary(dec)


def forensics(data: bytes) -> None:
    """txn and offsets: the bytes as a data partition, a __transaction_state and a __consumer_offsets partition."""
    root = os.path.join(_tmpdir(), "forensics")
    for d in ("t-0", "__transaction_state-0", "__consumer_offsets-0"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
        with open(os.path.join(root, d, "00000000000000000000.log"), "wb") as f:
            f.write(data)
    _cli(["txn", "--json", root])
    _cli(["txn", root])
    _cli(["offsets", "--json", "--time", "0", root])


TARGETS = {
    "segment": segment,
    "records": records,
    "legacy": legacy,
    "compression": compression,
    "index": index,
    "snapshot": snapshot,
    "checkpoint": checkpoint,
    "carve": carve,
    "hextext": hextext,
    "pcap": pcap,
    "protocol": protocol,
    "internal": internal,
    "forensics": forensics,
    # the payload decoders and the _schemas reader (payload_targets.py)
    **payload_targets.TARGETS,
}
