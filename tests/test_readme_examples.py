"""Every command example in the README, run as written (issue 27): through bash with ``pipefail``,
``kafkadump`` on the PATH and ``jq``, in a directory holding the files they name.  The absolute
paths of the examples (``/var/lib/kafka/data``, ``/evidence``, ``/tmp``) are folders of the test's
own.  Each example's exit status is checked, and what its output must hold.

The ``kafkadump spark`` examples need a Spark session and are run by the Spark tests.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
from pathlib import Path

import builders as bld
import capture_builders as cb
import pytest
from conftest import FIXTURES, ROOT
from forensics_builders import make_offsets_logdir, make_txn_logdir
from logdir_helpers import index_bytes, name, snapshot_bytes, timeindex_bytes
from metadata_builders import MetaLog, broker, change, partition, topic, unfence
from schemas_topic_builder import write_schemas_partition

SEGMENT = FIXTURES / "segment-v2" / "00000000000000000000.log"
T0 = 1_700_000_000_000
USER_42 = b'{"user": {"id": "42", "name": "ada"}}'

# example -> (exit statuses allowed, what stdout (or the file it writes) must hold)
CHECKS: dict[str, tuple[set[int], list[str]]] = {
    "kafkadump batches 00000000000000000000.log": ({0}, ["baseOffset", " ok"]),
    "kafkadump verify-crc /var/lib/kafka/data/orders-3/*.log": ({0}, ["all valid"]),
    "kafkadump records --json 00000000000000000000.log | jq 'select(.key == \"user-1\")'": ({0}, ['"user-1"']),
    "kafkadump records --json /var/lib/kafka/data/orders-3 | jq -r 'select(.value | objects) | .offset'": ({0}, []),
    "kafkadump records --from-time 2023-11-14T22:14:00Z --format dump-log 00000000000000000000.log":
        ({0}, ["baseOffset:", "| offset:"]),
    "kafkadump capture broker.pcap": ({0}, ["Fetch", "Metadata"]),
    "kafkadump capture --records --json traffic.pcapng | jq 'select(.topic == \"orders\" and .key == \"user-1\")'":
        ({0}, ['"orders"']),
    "kafkadump capture --api Produce --topic orders traffic.pcapng": ({0}, ["Produce"]),
    "kafkadump capture --api-key 1 --api-version 12 fetch-response.txt": ({0}, ["Fetch"]),
    "kafkadump capture --frame 7 --hexdump broker.pcap": ({0}, ["Fetch"]),
    "kafkadump capture --records --json --schemas schemas.json --where 'value.user.id == \"42\"' traffic.pcap":
        ({0}, ['"ada"']),
    "kafkadump records /var/lib/kafka/data/__consumer_offsets-17/00000000000000000000.log": ({0}, ["billing"]),
    "kafkadump records --json __cluster_metadata-0/*.log | jq 'select(.value.schema == \"TopicRecord\") | .value.data'":
        ({0}, ['"orders"']),
    "kafkadump records --decode offsets copied-segment.log": ({0}, ["billing"]),
    "kafkadump records --format dump-log --decode metadata __cluster_metadata-0/00000000000000000000.log":
        ({0}, ["TOPIC_RECORD"]),
    "kafkadump triage /var/lib/kafka/data": ({1}, ["verdict"]),
    "kafkadump triage --json /evidence/broker-3/kafka-logs > report.json": ({1}, []),
    "kafkadump dump 00000000000000000000.index": ({0}, ["offset"]),
    "kafkadump dump --format dump-log 00000000000000000000.index 00000000000000000000.timeindex "
    "00000000000000000000.snapshot": ({0}, ["offset:", "timestamp:", "producerId:"]),
    "kafkadump carve --output /tmp/recovered.log 00000000000000000000.log": ({0}, ["recovered: 14 batches"]),
    "kafkadump report /var/lib/kafka/data -o /tmp/incident.html": ({1}, []),
    "kafkadump report /evidence/broker-3/kafka-logs traffic.pcap -o incident.html": ({1}, []),
    "kafkadump diff /evidence/broker-1/orders-3 /evidence/broker-2/orders-3": ({0}, ["A CONTAINS B"]),
    "kafkadump diff --json backup/orders-3 /var/lib/kafka/data/orders-3 | jq 'select(.type == \"diff\")'":
        ({0}, ['"identical"']),
    "kafkadump metadata /var/lib/kafka/data/__cluster_metadata-0": ({0, 1}, ["orders"]),
    "kafkadump metadata --brokers --json __cluster_metadata-0 | jq 'select(.unclean)'": ({0, 1}, []),
    "kafkadump metadata --at 2024-02-27T19:49:00Z __cluster_metadata-0": ({0, 1}, ["orders"]),
    "kafkadump txn /var/lib/kafka/data": ({1}, ["hanging", "kafka-transactions.sh"]),
    "kafkadump txn --json --bootstrap-server broker-1:9092 /evidence/broker-*/kafka-logs | jq 'select(.state == "
    "\"hanging\") | .abortCommands[]'": ({1}, ["--bootstrap-server broker-1:9092 abort --topic orders"]),
    "kafkadump offsets --time 2024-10-10T12:00:00Z /var/lib/kafka/data": ({1}, ["billing", "orders-0"]),
    "kafkadump offsets --history --group billing --json /var/lib/kafka/data": ({0}, ['"billing"']),
    "kafkadump schemas /var/lib/kafka/data": ({1}, ["orders-value"]),
    "kafkadump schemas --json schemas-export.json | jq 'select(.type == \"schema\" and .deleted != null)'":
        ({0}, []),
    "kafkadump records --schemas /var/lib/kafka/data --where 'value.user.id == \"42\"' /var/lib/kafka/data/orders-0":
        ({0}, []),
    "kafkadump records --json --redact keys,values,headers orders-0/ > shareable.jsonl": ({0}, []),
}


def readme_examples() -> list[str]:
    """The README's indented ``kafkadump`` command lines (a line ending in a backslash goes on)."""
    lines = (ROOT / "README.md").read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("    kafkadump "):
            command = line.strip()
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command[:-1].rstrip() + " " + lines[i].strip()
            out.append(command)
        i += 1
    return out


def test_every_readme_example_is_checked():
    run_here = [e for e in readme_examples() if not e.startswith("kafkadump spark ")]
    assert sorted(run_here) == sorted(CHECKS), set(run_here) ^ set(CHECKS)


def _metadata_log() -> bytes:
    log = MetaLog()
    broker(log, 1, 10)
    broker(log, 2, 11)
    unfence(log, 1, 10)
    unfence(log, 2, 11)
    topic(log, "orders", 1)
    partition(log, 1, 0, [1, 2], [1, 2], 1)
    change(log, 1, 0, isr=[1])
    return bytes(log.data)


def _framed_json_batch() -> bytes:
    framed = b"\x00" + struct.pack(">i", 1) + USER_42
    return bld.v2_batch(0, [bld.Rec(b"user-1", b"hello"), bld.Rec(b"k", framed)]).data


def _data_dir(root: Path) -> Path:
    data = root / "data"
    make_txn_logdir(str(data))
    make_offsets_logdir(str(data))
    shutil.copytree(data / "__consumer_offsets-9", data / "__consumer_offsets-17")
    (data / "orders-3").mkdir()
    shutil.copy(SEGMENT, data / "orders-3" / SEGMENT.name)
    (data / "__cluster_metadata-0").mkdir()
    (data / "__cluster_metadata-0" / name(0, ".log")).write_bytes(_metadata_log())
    write_schemas_partition(data)
    return data


def _captures(d: Path) -> None:
    conversation, _, frames = cb.kafka_conversation(bld.simple_batch(0, 2).data)
    more, _, _ = cb.kafka_conversation(bld.simple_batch(2, 2).data)
    packets = [(t, p) for t, p, _ in conversation.packets] + [(t + 1, p) for t, p, _ in more.packets]
    (d / "broker.pcap").write_bytes(cb.pcap(packets)[0])
    (d / "fetch-response.txt").write_text(frames["fetch_resp"].hex() + "\n")
    c = cb.Conversation(client=("127.0.0.1", 50000), server=("127.0.0.1", 9092))
    c.send("c", cb.produce_v3_request(1, _framed_json_batch(), topic="orders"))
    c.close()
    (d / "traffic.pcap").write_bytes(cb.pcap([(t, p) for t, p, _ in c.packets])[0])
    (d / "traffic.pcapng").write_bytes(cb.pcapng([(t, p) for t, p, _ in c.packets])[0])
    export = [{"subject": "orders-value", "version": 1, "id": 1, "schemaType": "JSON",
               "schema": json.dumps({"type": "object"})}]
    (d / "schemas.json").write_text(json.dumps(export))
    (d / "schemas-export.json").write_text(json.dumps(export))


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    d = tmp_path_factory.mktemp("readme-world")
    data = _data_dir(d)
    shutil.copy(SEGMENT, d / SEGMENT.name)
    (d / name(0, ".index")).write_bytes(index_bytes([(7, 310)]))
    (d / name(0, ".timeindex")).write_bytes(timeindex_bytes([(T0 + 9500, 5)]))
    (d / name(0, ".snapshot")).write_bytes(snapshot_bytes([(5, 0, 4, 4, 1, T0, -1, -1)]))
    shutil.copy(data / "__consumer_offsets-17" / name(0, ".log"), d / "copied-segment.log")
    shutil.copytree(data / "__cluster_metadata-0", d / "__cluster_metadata-0")
    shutil.copytree(data / "orders-0", d / "orders-0")
    shutil.copytree(data / "orders-3", d / "backup" / "orders-3")
    evidence = d / "evidence"
    shutil.copytree(data / "orders-3", evidence / "broker-1" / "orders-3")
    cut = evidence / "broker-2" / "orders-3" / SEGMENT.name
    cut.parent.mkdir(parents=True)
    cut.write_bytes(SEGMENT.read_bytes()[:1221])
    shutil.copytree(data, evidence / "broker-3" / "kafka-logs")
    _captures(d)
    (d / "tmp").mkdir()
    bin_dir = d / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "kafkadump"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kafkadump "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return d


def run(example: str, d: Path) -> subprocess.CompletedProcess:
    here = {"/var/lib/kafka/data": d / "data", "/evidence": d / "evidence", "/tmp": d / "tmp"}
    line = re.sub(r"(?<![\w.])(/var/lib/kafka/data|/evidence|/tmp)(?=[/ ]|$)", lambda m: str(here[m.group(1)]),
                  example)
    env = {**os.environ, "PATH": f"{d / 'bin'}:{os.environ['PATH']}"}
    return subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=d, env=env, capture_output=True, text=True,
                          timeout=180)


@pytest.mark.parametrize("example", sorted(CHECKS))
def test_readme_example(world, example):
    statuses, wanted = CHECKS[example]
    r = run(example, world)
    assert "Traceback" not in r.stderr, r.stderr
    # a jq pipeline's status is jq's when kafkadump exits 0; kafkadump's 1 makes it 1 (pipefail)
    assert r.returncode in statuses, (r.returncode, r.stderr[-2000:], r.stdout[-2000:])
    written = {"> report.json": world / "report.json", "> shareable.jsonl": world / "shareable.jsonl",
               "--output /tmp/recovered.log": world / "tmp" / "recovered.log",
               "-o /tmp/incident.html": world / "tmp" / "incident.html", "-o incident.html": world / "incident.html"}
    for marker, path in written.items():
        if marker in example:
            assert path.stat().st_size > 0
            if path.suffix in (".json", ".jsonl"):
                [json.loads(line) for line in path.read_text().splitlines()]
    for text in wanted:
        assert text in r.stdout, (text, r.stdout[-3000:], r.stderr[-1000:])
    if "shareable.jsonl" in example:
        shared = (world / "shareable.jsonl").read_text()
        assert "tx-hang" not in shared or '"redacted"' in shared
