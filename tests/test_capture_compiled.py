"""The schema decoder's compiled plans (kafkadump.decoders.protocol.plan_code) against its interpreter.

A plan compiled to Python handles only plain bytes and hands anything else back to the
interpreter, which stays the reference: with the compiled plans on and off, ``capture --json``
(frames, bodies, records and findings) must be the same text on the shipped fixtures, every
capture and hex dump of the shared corpus, and damaged copies of them; ``decode_message`` must
give the same value, end and findings for every schema and version of the tables on random and
mutated bytes.  Counted, not timed: on plain traffic the interpreter decodes no frame at all.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

import builders as bld
import capture_builders as cb
import pytest
from conftest import CORPUS

from kafkadump.reports.capture import CaptureRequest
from kafkadump.reports.capture import capture_report
from kafkadump.base.findings import DecodeError
from kafkadump.decoders.protocol import decoder
from kafkadump.decoders.protocol import schema as S
from kafkadump.render import frame_views
from kafkadump.base.status import Tally


@pytest.fixture(autouse=True)
def _compile_at_once(monkeypatch):
    """Plans compiled at their first use (not after COMPILE_AFTER uses): the small captures here
    exercise the compiled code too."""
    monkeypatch.setattr(decoder, "COMPILE_AFTER", 0)


def _json(path: Path, compiled: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    """``capture --json`` of ``path`` with the compiled plans on or off."""
    monkeypatch.setattr(decoder, "COMPILED_PLANS", compiled)
    out = io.StringIO()
    frame_views.write_frames_json(capture_report(str(path), CaptureRequest(), Tally()), out)
    return out.getvalue()


def _corpus_inputs() -> list[Path]:
    """Every capture and hex dump of the shared corpus (none when it is absent)."""
    if not CORPUS.exists():
        return []
    found = [p for p in CORPUS.rglob("*") if p.suffix in (".pcap", ".pcapng")]
    hexcaps = CORPUS / "clients" / "hexcaps"
    if hexcaps.exists():
        found += [p for p in hexcaps.iterdir()   # every hex form but tshark -V (a tree, no bytes)
                  if p.suffix in (".hex", ".txt", ".bin") and not p.name.endswith("tshark-V.txt")]
    return sorted(found)


def _conversation_pcap(tmp_path: Path) -> Path:
    """Produce, Fetch (flexible, tagged header fields) and Metadata, with records, over TCP."""
    p = tmp_path / "conv.pcap"
    p.write_bytes(cb.records_conversation(4, lambda i: bld.simple_batch(i * 3, 3).data, corr_step=10, mss=700,
                                          partitions=2, api_versions=True))
    return p


@pytest.mark.parametrize("path", _corpus_inputs(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_json_is_the_same_compiled_or_interpreted(path, monkeypatch):
    assert _json(path, True, monkeypatch) == _json(path, False, monkeypatch)


def test_corpus_is_there_or_skipped():
    if not CORPUS.exists():
        pytest.skip(f"shared corpus not present at {CORPUS}")
    assert len(_corpus_inputs()) > 50


def test_fixture_conversation_is_the_same_and_never_interpreted(tmp_path, monkeypatch):
    p = _conversation_pcap(tmp_path)
    interpreted = []
    real = decoder.read_struct

    def counting(plan, buf, pos, end, st, path, out):
        if path in ("header", "body"):
            interpreted.append(path)
        return real(plan, buf, pos, end, st, path, out)

    monkeypatch.setattr(decoder, "read_struct", counting)
    compiled = _json(p, True, monkeypatch)
    assert interpreted == []   # every header and body of plain traffic: compiled code
    assert '"apiName":"Fetch"' in compiled and '"recordCount":6' in compiled
    assert compiled == _json(p, False, monkeypatch)
    assert interpreted   # and the interpreter does decode them when asked to


@pytest.mark.parametrize("seed", range(12))
def test_damaged_captures_are_the_same(tmp_path, monkeypatch, seed):
    """Bytes flipped in the TCP payloads: lengths that overrun, nulls where none may be, bad UTF-8,
    tags out of order... the compiled code hands each to the interpreter, whose findings stand."""
    clean = _conversation_pcap(tmp_path).read_bytes()
    rng = random.Random(seed)
    data = bytearray(clean)
    for _ in range(8):
        i = rng.randrange(200, len(data))
        data[i] = rng.choice((0x00, 0xFF, 0x80, 0x7F, 0x01, data[i] ^ 0x40))
    p = tmp_path / f"damaged-{seed}.pcap"
    p.write_bytes(bytes(data))
    assert _json(p, True, monkeypatch) == _json(p, False, monkeypatch)


def test_plans_used_a_few_times_stay_interpreted(tmp_path, monkeypatch):
    """Guessing a lone response tries every API and version once: those plans are not compiled."""
    monkeypatch.setattr(decoder, "_PLANS", {})   # plans made afresh: none compiled or used yet
    monkeypatch.setattr(decoder, "COMPILE_AFTER", 64)
    compiled = []
    real = decoder.compile_plan
    monkeypatch.setattr(decoder, "compile_plan", lambda plan, helpers: compiled.append(plan) or real(plan, helpers))
    p = _conversation_pcap(tmp_path)
    _json(p, True, monkeypatch)
    assert compiled == []   # 24 frames: no plan decoded 64 structs
    monkeypatch.setattr(decoder, "COMPILE_AFTER", 3)
    _json(p, True, monkeypatch)
    assert 0 < len(compiled) <= 12   # the plans of the headers and bodies used more than 3 times, once each


def _decode(name: str, version: int, data: bytes, compiled: bool, monkeypatch, strict: bool = False):
    monkeypatch.setattr(decoder, "COMPILED_PLANS", compiled)
    findings: list | None = None if strict else []
    try:
        value, end = decoder.decode_message(name, version, data, findings=findings, fill_defaults=not strict)
    except DecodeError as e:
        return ("raised", e.code, e.offset, e.message)
    return (repr(value), end, [(f.code, f.offset, f.message) for f in findings or ()])


def _protocol_messages() -> list[tuple[str, int]]:
    """Every schema of the tables (requests, responses, headers, records of the internal topics)
    at every version it has."""
    out = []
    for name in S.names():
        m = S.message(name)
        if m["valid"]:
            lo, hi = m["valid"]
            out += [(name, v) for v in range(lo, hi + 1)]
    return out


def test_every_schema_and_version_on_random_bytes(monkeypatch):
    """Random bytes, mostly small numbers (so that lengths and counts often fit), for every
    message and version: the same value, end and findings, in both modes of the decoder."""
    rng = random.Random(13)
    checked = plain = 0
    for name, version in _protocol_messages():
        for trial in range(6):
            size = rng.randrange(0, 80)
            data = bytes(rng.choice((0, 0, 0, 1, 2, 3, 0x41, 0xFF, rng.randrange(256))) for _ in range(size))
            strict = trial % 3 == 0
            a = _decode(name, version, data, True, monkeypatch, strict)
            assert a == _decode(name, version, data, False, monkeypatch, strict), (name, version, data.hex())
            checked += 1
            plain += a[0] != "raised" and not a[-1]
    assert checked > 1000 and plain > 100   # enough of them decode plainly to exercise the compiled code


def test_a_read_the_compiled_code_gives_up_keeps_no_frames(monkeypatch):
    """The compiled code gives up by raising one shared ``BAIL``: each raise added the failed read's
    frames to that instance's traceback, so a long capture (and the fuzzer, at about 0.5 MB an
    input) kept every failed read's frames and values.  Before: 3,507 frames alive after 500 reads."""
    import gc
    import types

    from kafkadump.decoders.protocol import plan_code

    monkeypatch.setattr(decoder, "COMPILED_PLANS", True)

    def frames_alive() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, types.FrameType))

    def read() -> list:
        findings: list = []
        decoder.decode_message("ApiVersionsRequest", 3, b"\x05ab", findings=findings, fill_defaults=True)
        return findings

    assert [f.code.value for f in read()] == ["field-malformed"]   # 4 bytes declared, 2 there
    before = frames_alive()
    for _ in range(500):
        read()
    assert frames_alive() - before < 10
    assert plan_code.BAIL.__traceback__ is None
