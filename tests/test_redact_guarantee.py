"""Redaction as a guarantee: random and damaged segments and captures, sentinels in keys, values,
headers and a named field, and no sentinel in any command's output in any format.

Every case is built from a fixed seed: a few v2 batches (each codec), records whose keys, values
and header values carry MARK and whose values are plain bytes, plain JSON, Avro framed for a
registry (clean, with a trailing byte, or naming an id the store lacks), the password field
carrying FIELD; then damage: a byte flipped in the records (CRC made right or not), a record
length changed, a batch cut short, junk between batches, trailing bytes.  The same batches go
into a capture (Produce and Fetch).  Under ``--redact keys,values,headers`` neither sentinel may
appear, under ``--redact-fields password`` FIELD may not; the same runs without redaction show
them (per command and format, over the cases), so the test cannot pass vacuously.  A sentinel is
looked for as text, as hex (joined, spaced or split by a hexdump's column marks) and as base64 at
every alignment.
"""

from __future__ import annotations

import base64
import json
import random
import re
import struct
from collections import defaultdict
from pathlib import Path

import pytest
import typer.testing
from builders import GZIP, LZ4, SNAPPY, ZSTD, Rec, fix_crc, legacy_message, legacy_wrapper, record_starts, v2_batch
from capture_builders import records_conversation
from cli_inprocess import run
from redaction_evidence import SCHEMA

from kafkadump.cli import app
from kafkadump.decoders.batches import Batch
from kafkadump.decoders.batches import iter_batches

MARK = b"QZXJ" * 3    # keys, values, header values
FIELD = b"PWVK" * 3   # the password field's value
# eight seeds, and those over 250 that found leaks (a batch's trailing bytes, a legacy wrapper's inner set)
SEEDS = (*range(8), 17, 19, 24, 34, 40)
CODECS = (0, 0, GZIP, SNAPPY, LZ4, ZSTD)
ALL = ["--redact", "keys,values,headers"]
FIELDS = ["--redact-fields", "password"]


def forms(s: bytes) -> list[re.Pattern]:
    """Patterns for ``s`` (a 4-byte unit repeated) in any output: 4 characters of text, 3 bytes
    of hex with or without a separator (space, a hexdump's ``|`` or ``!``), 8 characters of the
    base64 of any 3-aligned run of 6 bytes."""
    unit = s[:4]
    rots = [unit[i:] + unit[:i] for i in range(4)]
    out = [re.escape(r.decode()) for r in rots]
    out += ["[ |!]?".join(f"{b:02x}" for b in r[:3]) for r in rots]
    out += [re.escape(base64.b64encode((r * 2)[:6]).decode()) for r in rots]
    return [re.compile(p, re.IGNORECASE if "[" in p else 0) for p in out]


FORMS = {MARK: forms(MARK), FIELD: forms(FIELD)}


def shows(out: str, s: bytes) -> list[str]:
    return [m.group(0) for p in FORMS[s] if (m := p.search(out))]


@pytest.fixture(scope="module", autouse=True)
def _command_built_once():
    """The typer app made into its click command once, not on each of the runs (nine tenths of a
    run's time): the runs are the same, only faster."""
    build = typer.testing._get_command
    command = build(app)
    typer.testing._get_command = lambda a: command if a is app else build(a)
    yield
    typer.testing._get_command = build


# --- the evidence ----------------------------------------------------------------------------

def _zz(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def _avro(i: int) -> bytes:
    """The Avro encoding of SCHEMA's User (id, password, age)."""
    uid = b"u%d" % i
    return _zz(len(uid)) + uid + _zz(len(FIELD) + 2) + FIELD + b"-%d" % (i % 10) + _zz(30 + i)


def _value(rng: random.Random, i: int) -> bytes:
    kind = rng.choice(("plain", "json", "avro", "avro", "trailing", "unknown-id"))
    if kind == "plain":
        return b"V" + MARK + rng.randbytes(rng.randrange(0, 4))
    if kind == "json":
        return b'{"password": "' + FIELD + b'", "note": "' + MARK + b'", "n": %d}' % i
    framed = b"\x00" + struct.pack(">i", 99 if kind == "unknown-id" else 1) + _avro(i)
    return framed + (b"\x00" if kind == "trailing" else b"")


def _key(rng: random.Random, i: int) -> bytes | None:
    kind = rng.choice(("null", "plain", "plain", "json"))
    if kind == "null":
        return None
    return b"K" + MARK + b"%d" % i if kind == "plain" else b'{"password": "' + FIELD + b'", "k": "' + MARK + b'"}'


def _batch(rng: random.Random, base: int) -> bytes:
    n = rng.randrange(1, 4)
    if rng.random() < 0.2:   # legacy messages (magic 0 and 1), now and then in a compressed wrapper
        msgs = [legacy_message(j, _value(rng, j), key=_key(rng, j), magic=rng.choice((0, 1))) for j in range(n)]
        return legacy_wrapper(base + n - 1, msgs)[0] if rng.random() < 0.5 else b"".join(msgs)
    recs = [Rec(_key(rng, i), _value(rng, i), headers=(("h", b"H" + MARK),) if rng.random() < 0.7 else ())
            for i in range(n)]
    return v2_batch(base, recs, codec=rng.choice(CODECS)).data


def _damaged(rng: random.Random, data: bytes) -> bytes:
    how = rng.choice(("none", "none", "flip", "flip-crc", "length", "cut"))
    buf = bytearray(data)
    v2 = buf[16] == 2
    if how in ("flip", "flip-crc"):
        buf[rng.randrange(61 if v2 else 22, len(buf))] ^= 1 << rng.randrange(8)
        if how == "flip-crc":
            fix_crc(buf, 0)
    elif how == "length" and v2 and buf[22] & 7 == 0:
        starts = record_starts(buf, 61, len(buf))
        buf[rng.choice(starts)] = rng.choice((0x02, 0x20, 0x7E))
        fix_crc(buf, 0)
    elif how == "cut":
        return bytes(buf[:rng.randrange(62, len(buf))])
    return bytes(buf)


def _case(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    batches = [_batch(rng, 3 * i) for i in range(rng.randrange(2, 5))]
    out = [_damaged(rng, b) for b in batches]
    if rng.random() < 0.5:
        out.insert(rng.randrange(1, len(out)), b"\x00\x00" + MARK + FIELD)  # junk between batches
    if rng.random() < 0.5:
        out.append(b"\x07" + MARK)  # trailing bytes
    return out


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> list[dict]:
    root = tmp_path_factory.mktemp("guarantee")
    export = root / "schemas.json"
    export.write_text(json.dumps([{"subject": "users-value", "version": 1, "id": 1, "schema": SCHEMA}]))
    out = []
    for seed in SEEDS:
        parts = _case(seed)
        part = root / f"c{seed}" / "users-0"
        part.mkdir(parents=True)
        seg = part / "00000000000000000000.log"
        seg.write_bytes(b"".join(parts))
        cap = root / f"c{seed}" / "capture.pcap"
        kept = [p for p in parts if len(p) > 17]  # a Produce and a Fetch for each (junk included)
        cap.write_bytes(records_conversation(len(kept), lambda i, kept=kept: kept[i], corr_step=10, mss=700))
        out.append({"seg": seg, "cap": cap, "export": export, "frames": len(kept)})
    return out


# --- the commands ----------------------------------------------------------------------------

RECORDS = [["records"], ["records", "--wide"], ["records", "--json"], ["records", "-f", "dump-log"]] + \
          [["records", "--json", "--encoding", e] for e in ("hex", "base64", "text", "auto")]
CAPTURE = [["capture"], ["capture", "--json"], ["capture", "--records"], ["capture", "--records", "--json"]]


def _positions(seg: Path) -> list[int]:
    """Where each item (batch or unparsed bytes) of the segment starts: hexdump --position each."""
    return [i.position for i in iter_batches(seg.read_bytes(), str(seg))]


def _runs(case: dict) -> list[tuple[str, list[str], str]]:
    """(name, arguments, input) of every run that takes the payload options."""
    seg, cap = str(case["seg"]), str(case["cap"])
    out = [(" ".join(a), a, seg) for a in RECORDS]
    for p in _positions(case["seg"]):
        out += [(" ".join(["hexdump", *x]), ["hexdump", "--position", str(p), *x], seg)
                for x in ([], ["--records"], ["--json"], ["--records", "--context", "40"])]
    out += [(" ".join(a), a, cap) for a in CAPTURE]
    for n in range(case["frames"]):
        for frame in (5 * n + 2, 5 * n + 4):   # the Produce request and the Fetch response of round n
            out += [("capture --frame N --hexdump", ["capture", "--frame", str(frame), "--hexdump"], cap),
                    ("capture --frame N --json", ["capture", "--frame", str(frame), "--json"], cap)]
    return out


def _out(args: list[str], more: list[str], target: str) -> str:
    r = run(*args, *more, target)
    assert r.returncode in (0, 1), (args, more, r.stderr)
    return r.stdout


@pytest.mark.parametrize(("mode", "hidden"), [(ALL, (MARK, FIELD)), (FIELDS, (FIELD,))], ids=["redact", "fields"])
def test_no_sentinel_in_any_output(cases, mode, hidden):
    leaked: list[tuple] = []
    shown: dict[str, set[bytes]] = defaultdict(set)
    for case in cases:
        schemas = ["--schemas", str(case["export"])]
        for name, args, target in _runs(case):
            for s in hidden:
                if shows(_out(args, schemas, target), s):
                    shown[name].add(s)
            out = _out(args, [*mode, *schemas], target)
            leaked += [(case["seg"].parent.parent.name, args, s, shows(out, s)) for s in hidden if shows(out, s)]
    assert leaked == []
    # the oracle: each command and format shows each sentinel without redaction in some case (the
    # capture table, a line per frame, shows no key or value at all)
    names = {name for name, _, _ in _runs(cases[0])} - {"capture"}
    assert dict(shown) == {name: set(hidden) for name in names}
    assert len(names) == len(RECORDS) + 4 + len(CAPTURE) - 1 + 2


OTHERS = [["batches"], ["batches", "--json"], ["dump"], ["dump", "--json"], ["carve"], ["triage", "--json"], ["txn"],
          ["txn", "--json"], ["offsets"], ["offsets", "--json"]]


def test_commands_without_payload_options_print_no_payload(cases, tmp_path):
    """The commands that take no --redact (they print batches, files, findings, transactions and
    offsets, never a key, value or header value) show no sentinel, damaged inputs included."""
    for case in cases:
        seg = case["seg"]
        for args in OTHERS:
            target = seg.parent.parent if args[0] in ("triage", "txn", "offsets") else seg
            out = _out(args, [], str(target))
            assert (args, shows(out, MARK), shows(out, FIELD)) == (args, [], [])


def test_the_cases_are_damaged_and_varied(cases):
    """What the property runs over: damage of each kind the decoder reports, every codec."""
    codes: set[str] = set()
    codecs: set[str] = set()
    magics: set[int] = set()
    for case in cases:
        for item in iter_batches(case["seg"].read_bytes(), str(case["seg"])):
            codes |= {f.code.value for f in item.findings}
            if isinstance(item, Batch):
                codecs.add(item.compression)
                magics.add(item.magic)
    assert {"record-malformed", "crc-mismatch", "truncated"} <= codes
    assert codecs == {"none", "gzip", "snappy", "lz4", "zstd"}
    assert magics == {0, 1, 2}
