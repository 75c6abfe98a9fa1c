"""The README's examples for jq-friendly JSON and the capture filters (issue 14, items 5 and 6),
run as written: through a shell, with ``kafkadump`` on the PATH and ``jq``, in a directory that
holds the files they name (``/var/lib/kafka/data`` is a directory of the test's own)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import builders as bld
import capture_builders as cb
import pytest
from conftest import FIXTURES, ROOT

EXAMPLES = [
    "kafkadump records --json 00000000000000000000.log | jq 'select(.key == \"user-1\")'",
    "kafkadump records --json /var/lib/kafka/data/orders-3 | jq -r 'select(.value | objects) | .offset'",
    "kafkadump capture --records --json traffic.pcapng | jq 'select(.topic == \"orders\" and .key == \"user-1\")'",
    "kafkadump capture --api Produce --topic orders traffic.pcapng",
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    d = tmp_path_factory.mktemp("readme")
    shutil.copy(FIXTURES / "segment-v2" / "00000000000000000000.log", d / "00000000000000000000.log")
    part = d / "data" / "orders-3"
    part.mkdir(parents=True)
    shutil.copy(FIXTURES / "segment-v2" / "00000000000000000000.log", part / "00000000000000000000.log")
    c = cb.Conversation(client=("127.0.0.1", 50000), server=("127.0.0.1", 9092))
    c.send("c", cb.produce_v3_request(1, bld.v2_batch(0, [bld.Rec(b"user-1", b"hello")]).data, topic="orders"))
    c.send("c", cb.fetch_v12_request(2))
    c.close()
    (d / "traffic.pcapng").write_bytes(cb.pcap([(t, p) for t, p, _ in c.packets])[0])
    bin_dir = d / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "kafkadump"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kafkadump "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return d


def run(line: str, d: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{d / 'bin'}:{os.environ['PATH']}"}
    return subprocess.run(["bash", "-o", "pipefail", "-c", line.replace("/var/lib/kafka/data", str(d / "data"))],
                          cwd=d, env=env, capture_output=True, text=True, timeout=120)


def test_the_examples_are_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    for line in EXAMPLES:
        assert f"    {line}\n" in readme, line


def test_jq_finds_the_text_key(workdir):
    r = run(EXAMPLES[0], workdir)
    assert r.returncode == 0, r.stderr
    assert [o["offset"] for o in _objects(r.stdout)] == [0]


def test_jq_lists_the_binary_values_of_a_partition(workdir):
    r = run(EXAMPLES[1], workdir)
    assert r.returncode == 0, r.stderr
    assert [int(x) for x in r.stdout.split()] == _offsets_of_binary_values()


def test_jq_selects_capture_records(workdir):
    r = run(EXAMPLES[2], workdir)
    assert r.returncode == 0, r.stderr
    found = _objects(r.stdout)
    assert [(o["api"], o["direction"], o["offsetRelative"], o["value"]) for o in found] == \
        [("Produce", "request", True, "hello")]


def test_capture_filters(workdir):
    r = run(EXAMPLES[3], workdir)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [x.split()[4] for x in lines if x[:5].strip().isdigit()] == ["Produce"]
    assert lines[-1].startswith("frames: 2 (1 shown)")


def _offsets_of_binary_values() -> list[int]:
    """From the fixture's own description (written by its generator): records whose value is bytes
    that are not text (not UTF-8, or holding a control character other than tab, LF, CR)."""
    expect = json.loads((FIXTURES / "segment-v2" / "00000000000000000000.expect.json").read_text())
    out = []
    for batch in expect["batches"]:
        for rec in batch["records"]:
            if rec["value"] is None:
                continue
            raw = bytes.fromhex(rec["value"])
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                out.append(rec["offset"])
                continue
            if any(ord(ch) < 0x20 and ch not in "\t\n\r" or 0x7F <= ord(ch) <= 0x9F for ch in text):
                out.append(rec["offset"])
    return out


def _objects(text: str) -> list[dict]:
    """jq's pretty-printed objects, one after another."""
    out, dec, pos = [], json.JSONDecoder(), 0
    text = text.strip()
    while pos < len(text):
        o, pos = dec.raw_decode(text, pos)
        out.append(o)
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out
