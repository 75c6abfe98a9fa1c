"""kafkadump's dump-log lines against Kafka's own DumpLogSegments (4.1.1), line for line, on every file
kind it reads, from log dirs a real broker wrote (tests/broker/incident.py, and a second small node
made here that writes KRaft ``.checkpoint`` snapshots).

* ``kafkadump dump --format dump-log`` against ``--deep-iteration --print-data-log`` over every
  ``.log``, ``.index``, ``.timeindex``, ``.txnindex`` and producer ``.snapshot`` file at once (stdout
  and the mismatch sections on stderr), and over copies of a segment made wrong on purpose;
* ``kafkadump records --format dump-log --decode offsets|transactions|metadata`` against
  ``--offsets-decoder``, ``--transaction-log-decoder``, ``--cluster-metadata-decoder``;
* the KRaft ``.checkpoint`` snapshots and ``bootstrap.checkpoint``, plain and decoded.

DumpLogSegments runs once per decoder over many files (``--files a,b,c``), never per file.  The
normalisations are the documented differences (man/parts/oracle_dumplog.man): kafkadump escapes control
characters in keys and payloads, so Kafka's output is passed through the same escaping; it leaves out
the stray ``}`` Kafka prints after a legacy record's crc; and it masks the payload of a metadata record
holding a secret (the line is otherwise Kafka's).
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkadump.render.lines import terminal_safe

pytestmark = pytest.mark.broker

KAFKA_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")
DECODERS = {"offsets": ("--offsets-decoder", "__consumer_offsets"),
            "transactions": ("--transaction-log-decoder", "__transaction_state"),
            "metadata": ("--cluster-metadata-decoder", "__cluster_metadata")}


def dump_log_segments(files: list[Path], *flags: str, check: bool = True) -> tuple[str, str]:
    """Kafka's DumpLogSegments over ``files`` in one JVM: (stdout, stderr), bytes decoded as UTF-8
    with every ``\\r`` kept (run_tool's text mode would turn a payload's ``\\r`` into a newline);
    ``check``: it must exit 0."""
    from broker.harness import DUMP_LOG_SEGMENTS, run_tool

    done = run_tool(DUMP_LOG_SEGMENTS, "--files", ",".join(map(str, files)), "--deep-iteration", "--print-data-log",
                    *flags, check=check, text=False, timeout=300)
    return done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")


def kafkadump(*args: str) -> tuple[str, str]:
    done = subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr.decode(errors="replace")[-3000:]
    return done.stdout.decode("utf-8"), done.stderr.decode("utf-8")


# Kafka's stray brace after a legacy record's crc (man/parts/oracle_dumplog.man)
LEGACY_CRC_BRACE = re.compile(r"^(\| offset: \d+ \S+: -?\d+ keySize: -?\d+ valueSize: -?\d+ isValid: \w+ crc: \d+)\}",
                              re.MULTILINE)


def kafka_lines(text: str) -> list[str]:
    """Kafka's lines with the documented differences normalised: control characters escaped, and the
    stray ``}`` of a legacy record line dropped."""
    return LEGACY_CRC_BRACE.sub(r"\1", terminal_safe(text, keep_newlines=True)).split("\n")


# a metadata record holding a secret, its payload masked by kafkadump (man/parts/oracle_dumplog.man)
MASKED = re.compile(r"^(\| offset: \d+ .* valueSize: (\d+) .*?) payload: \[redacted secret\] \(\2 bytes\)$")


def same_line(kafka: str, ours: str) -> bool:
    """Equal, or ours masks the payload of the very record line Kafka prints raw (same fields, same size)."""
    if kafka == ours:
        return True
    m = MASKED.match(ours)
    return m is not None and kafka.startswith(m.group(1) + " payload: ")


def assert_same_lines(kafka: str, ours: str) -> int:
    """The two outputs line for line (the first difference shown); the number of lines."""
    want, got = kafka_lines(kafka), ours.split("\n")
    for i, (a, b) in enumerate(zip(want, got)):
        assert same_line(a, b), f"line {i + 1} differs:\nKafka:     {a[:600]}\nkafkadump: {b[:600]}"
    assert len(want) == len(got), (len(want), len(got), want[len(got):][:3], got[len(want):][:3])
    return len(want) - 1


# the sections Kafka's tool writes to stderr after every file, in this order; within each, a hash map's order
SECTIONS = ("Mismatches in :", "Found timestamp mismatch in :", "Found out of order timestamp in :",
            "The following indexed offsets are not found in the log.", "Non-consecutive offsets in ")


def files_in_order(stderr: str) -> str:
    """``stderr`` with each section's per-file blocks sorted (documented: Kafka's file order is a hash
    map's); the lines before the sections (written while dumping) stay as they are."""
    end = "\n" if stderr.endswith("\n") else ""
    lines = stderr[: len(stderr) - len(end)].split("\n") if stderr else []
    first = next((i for i, line in enumerate(lines) if line.startswith(SECTIONS)), len(lines))
    blocks: list[list[str]] = []
    for line in lines[first:]:
        if line.startswith(SECTIONS) or not blocks:
            blocks.append([])
        blocks[-1].append(line)
    rank = {name: i for i, name in enumerate(SECTIONS)}
    ordered = sorted(blocks, key=lambda b: (next((rank[n] for n in SECTIONS if b[0].startswith(n)), -1), b))
    return "\n".join(lines[:first] + [line for b in ordered for line in b]) + end


def kafka_files(log_dir: Path) -> list[Path]:
    """Every file of ``log_dir`` Kafka's tool reads by its suffix (internal topics' ``.log`` too: their
    records as bytes, as without a decoder)."""
    return [p for p in sorted(log_dir.glob("*/*")) if p.suffix in KAFKA_SUFFIXES]


def blocks(text: str) -> dict[str, list[str]]:
    """Kafka's stdout cut at each ``Dumping PATH`` line: the lines of each file."""
    out: dict[str, list[str]] = {}
    cur = ""
    for line in text.splitlines():
        if line.startswith("Dumping "):
            cur = line[len("Dumping "):]
            out[cur] = []
        else:
            out.setdefault(cur, []).append(line)
    return out


# --- the incident's log dir ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def plain_dump(incident):
    files = kafka_files(incident.log_dir)
    return files, dump_log_segments(files), kafkadump("dump", "--format", "dump-log", *map(str, files))


def test_every_file_kind_line_for_line(plain_dump):
    files, (k_out, k_err), (out, err) = plain_dump
    assert {p.suffix for p in files} == set(KAFKA_SUFFIXES)
    assert assert_same_lines(k_out, out) > 3000
    assert assert_same_lines(files_in_order(k_err), files_in_order(err)) == 0 and k_err == ""


def test_what_the_comparison_covered(plain_dump):
    """The comparison is not vacuous: each kind's lines are there, with real values."""
    files, (k_out, _), _ = plain_dump
    per_file = blocks(k_out)
    assert len(per_file) == len(files)
    lines = [line for p in files for line in per_file[str(p)]]
    assert {"none", "gzip", "snappy", "lz4", "zstd"} <= {
        line.split(" compresscodec: ")[1].split()[0] for line in lines if " compresscodec: " in line}
    assert sum(line.startswith("offset: ") and " position: " in line for line in lines) > 20
    assert sum(line.startswith("timestamp: ") for line in lines) > 20
    assert sum(" is empty." in line for line in lines) > 0
    assert sum(line.startswith("version: 0 producerId: ") for line in lines) >= 4   # aborted txns
    producers = [line for line in lines if line.startswith("producerId: ")]
    assert any("currentTxnFirstOffset: OptionalLong[" in line for line in producers)  # the open txn
    assert any("firstSequence: " in line for line in producers)
    assert sum(" endTxnMarker: ABORT " in line for line in lines) > 0
    assert sum(" endTxnMarker: COMMIT " in line for line in lines) > 0


@pytest.mark.parametrize("kind", sorted(DECODERS))
def test_internal_topic_decoders(incident, kind, request):
    """Each decoder over its internal topic's segments (for metadata also the KRaft node's snapshots,
    SCRAM credential and all: compared with --no-redact-secrets), one JVM per decoder."""
    flag, topic = DECODERS[kind]
    files = sorted(incident.log_dir.glob(f"{topic}-*/*.log"))
    unmasked = []
    if kind == "metadata":
        files += checkpoints(request.getfixturevalue("kraft_log_dir"))
        unmasked = ["--no-redact-secrets"]
    k_out, k_err = dump_log_segments(files, flag)
    out, _err = kafkadump("records", "--format", "dump-log", "--decode", kind, *unmasked, *map(str, files))
    assert assert_same_lines(k_out, out) > 10
    assert k_err == ""
    decoded = [line for line in out.splitlines() if line.startswith("| ") and " payload: {" in line]
    assert decoded, f"no record decoded by --decode {kind}"
    if kind == "metadata":
        assert '"type":"TOPIC_RECORD"' in out and '"name":"snap-a"' in out and "Snapshot end offset: " in out
        assert '"type":"USER_SCRAM_CREDENTIAL_RECORD"' in out and '"name":"alice"' in out
        assert '"value":1.048576E7' in out and '"value":1024.0' in out       # quotas: doubles as Java writes them


# --- index checks: copies made wrong on purpose ------------------------------------------------------

def _wrong_copies(incident, root: Path) -> list[Path]:
    """The segment with the densest time index copied, its offset index naming the wrong batch, its
    time index's timestamps and an offset wrong; and two segments' logs joined (offsets jump)."""
    dense = max((p for p in incident.log_dir.glob("*/*.timeindex") if not p.parent.name.startswith("__")),
                key=lambda p: (p.stat().st_size, str(p)))
    src, base = dense.parent, dense.stem
    segs = sorted(incident.partition_dir("rolled").glob("*.log"))
    bad = root / src.name
    bad.mkdir()
    for ext in (".log", ".index", ".timeindex"):
        shutil.copy(src / f"{base}{ext}", bad / f"{base}{ext}")
    index = bytearray((bad / f"{base}.index").read_bytes())
    assert len(index) >= 24, f"{src.name}: a dense offset index"
    index[4:8] = index[12:16]                                   # entry 0 names entry 1's batch
    (bad / f"{base}.index").write_bytes(bytes(index))
    times = bytearray((bad / f"{base}.timeindex").read_bytes())
    assert len(times) >= 48, f"{src.name}: a dense time index"
    (ts,) = struct.unpack_from(">q", times, 12)
    struct.pack_into(">q", times, 12, ts + 7)                   # entry 1: timestamp off by 7
    struct.pack_into(">q", times, 24, ts - 5)                   # entry 2: before entry 1
    (rel,) = struct.unpack_from(">i", times, 44)
    struct.pack_into(">i", times, 44, rel - 1)                  # entry 3: mid-batch
    (bad / f"{base}.timeindex").write_bytes(bytes(times))
    joined = root / "joined-0"
    joined.mkdir()
    (joined / segs[0].name).write_bytes(segs[0].read_bytes() + segs[2].read_bytes())
    return [bad / f"{base}.index", bad / f"{base}.timeindex", joined / segs[0].name]


def _damaged_snapshots(incident, root: Path) -> list[Path]:
    """The producer snapshot with the most producers, copied damaged in each way Kafka words apart."""
    good = max((p for p in incident.log_dir.glob("*/*.snapshot")), key=lambda p: (p.stat().st_size, str(p)))
    data = good.read_bytes()
    assert len(data) >= 10 + 2 * 46, f"{good}: two producers at least"
    crc, version = bytearray(data), bytearray(data)
    crc[-1] ^= 1
    version[1] = 9
    variants = [bytes(crc), bytes(version), data[:30], data[:3], data + b"xyz",
                data[:6] + struct.pack(">i", 1000) + data[10:], data[:6] + struct.pack(">i", -1) + data[10:]]
    folder = root / "snapshots-0"
    folder.mkdir()
    out = []
    for n, variant in enumerate(variants):
        out.append(folder / f"{n:020d}.snapshot")
        out[-1].write_bytes(variant)
    return out


def _damaged_copies(incident, root: Path) -> tuple[Path, Path, int]:
    """A segment cut inside its last batch (and its size), and one with a payload byte changed."""
    # a folder of their own: the wrong-index copies may have taken codec-gzip-0's name already
    cut = root / "damaged" / "codec-gzip-0" / "00000000000000000000.log"
    cut.parent.mkdir(parents=True)
    data = (incident.partition_dir("codec-gzip") / cut.name).read_bytes()
    cut.write_bytes(data[:-100])
    flipped = root / "damaged" / "codec-none-0" / "00000000000000000000.log"
    flipped.parent.mkdir(parents=True)
    raw = bytearray((incident.partition_dir("codec-none") / flipped.name).read_bytes())
    raw[-3] ^= 0x01                                    # inside the last record's value: the batch's CRC fails
    flipped.write_bytes(bytes(raw))
    return cut, flipped, len(data) - 100


def test_mismatch_sections_and_damage(incident, tmp_path):
    """Wrong indexes, offsets that jump, a cut-off tail, a failed CRC and damaged producer snapshots in
    one JVM: Kafka's lines on stdout and stderr, and kafkadump's own ``# kafkadump:`` finding lines
    (documented) besides."""
    wrong = _wrong_copies(incident, tmp_path)
    cut, flipped, cut_size = _damaged_copies(incident, tmp_path)
    snapshots = _damaged_snapshots(incident, tmp_path)
    files = [*wrong, cut, flipped, *snapshots]
    k_out, k_err = dump_log_segments(files)
    out, err = kafkadump("dump", "--format", "dump-log", *map(str, files))
    notes = [line for line in out.split("\n") if line.startswith("# kafkadump: ")]
    assert assert_same_lines(k_out, "\n".join(line for line in out.split("\n")
                                              if not line.startswith("# kafkadump: "))) > 150
    assert assert_same_lines(files_in_order(k_err), files_in_order(err)) >= 8 + len(snapshots)
    assert sum(line.startswith(("Snapshot is corrupt", "Snapshot failed")) for line in err.splitlines()) == 7
    assert f"Mismatches in :{wrong[0]}" in err
    for header in ("Found timestamp mismatch in :", "Found out of order timestamp in :",
                   "The following indexed offsets are not found in the log.", "Non-consecutive offsets in "):
        assert header in err, header
    cut_at = int(next(n for n in notes if " truncated " in n).split("position: ")[1].split()[0])
    assert f"Found {cut_size - cut_at} invalid bytes at the end of {cut.name}" in k_out
    assert any("crc" in n for n in notes) and " isvalid: false" in out


# --- legacy message sets (magic 0 and 1): a broker of 4.x writes none, its tool still reads them ---------

def _invalid_utf8_segment(root: Path) -> Path:
    """A v2 segment whose values are byte strings Java and Python's "replace" turn into different text."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    bld = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                    producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, value in enumerate((b"\xed\xa0\x80", b"\xed\xb7\x14", b"ok\xed\xa0", b"\xf0\x90\x80", b"\xe0\x80\x80")):
        bld.append(i, timestamp=1_700_000_000_000, key=b"\xed\xa0\x80k", value=value, headers=[])
    log = root / "utf8-0" / "00000000000000000000.log"
    log.parent.mkdir()
    log.write_bytes(bytes(bld.build()))
    return log


def test_crafted_segments_then_an_index_kafka_throws_on(tmp_path, kraft_log_dir):
    """Magic 0 and 1 (Kafka's stray brace documented), invalid UTF-8 (Java's replacement rules), then the
    preallocated index of an empty segment, on which Kafka's tool throws (documented): kafkadump shows
    slot 0 and its mismatch."""
    from builders import GZIP, legacy_message, legacy_wrapper

    data = legacy_message(0, b"v0-plain", key=b"k0", magic=0) + legacy_message(1, b"v1\x01plain", key=b"k1")
    data += legacy_message(2, None, key=b"k2") + legacy_message(3, b"no key", magic=0)
    wrapper, _ = legacy_wrapper(6, [legacy_message(i, b"in%d" % i, key=b"ik") for i in (4, 5, 6)], codec=GZIP)
    log = tmp_path / "old-0" / "00000000000000000000.log"
    log.parent.mkdir()
    log.write_bytes(data + wrapper)
    utf8 = _invalid_utf8_segment(tmp_path)
    index = next(p for p in kafka_files(kraft_log_dir) if empty_segment_index(p))
    k_out, k_err = dump_log_segments([log, utf8, index], check=False)
    assert k_out.endswith(f"Dumping {index}\n") and "java.util.NoSuchElementException" in k_err
    out, err = kafkadump("dump", "--format", "dump-log", str(log), str(utf8), str(index))
    assert len(LEGACY_CRC_BRACE.findall(k_out)) == 7      # Kafka's stray brace, on every record line
    ours_before, ours_index = out.split(f"Dumping {index}\n")
    assert assert_same_lines(k_out[: -len(f"Dumping {index}\n")], ours_before) == 14 + 8  # + 2 + 1 batch + 5
    assert " NoTimestampType: -1 " in out and "compresscodec: gzip" in out
    assert "key: \ufffdk payload: \ufffd\n" in out      # an encoded surrogate: one replacement, as Java's
    assert ours_index.splitlines() == ["offset: 0 position: 0"]
    assert err.splitlines() == [f"Mismatches in :{index}", "  Index offset: 0, log offset: -1"]


# --- KRaft snapshots: a second node that writes them ------------------------------------------------

def metadata_activity(bootstrap: str) -> None:
    """Metadata records of many types: topics created, grown and deleted, a config, a SCRAM
    credential (a secret), client quotas (doubles: ``1.048576E7``), producer ids; and records enough for dense indexes on ``snap-a-0`` and on
    ``snap-appended-0`` (LogAppendTime, gzip)."""
    from broker.harness import quiet, run_tool
    from broker.incident import create_topics, delete_topics
    from confluent_kafka import Producer
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    create_topics(bootstrap, {"snap-a": (2, {"index.interval.bytes": "100", "retention.ms": "86400000"}),
                              "snap-b": (1, {}), "snap-gone": (1, {}),
                              "snap-appended": (1, {"message.timestamp.type": "LogAppendTime",
                                                    "index.interval.bytes": "100"})})
    admin = AdminClient(quiet({"bootstrap.servers": bootstrap}))
    for future in admin.create_partitions([NewPartitions("snap-b", 3)]).values():
        future.result(30)
    conf = ConfigResource(ResourceType.TOPIC, "snap-b", incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([conf]).values():
        future.result(30)
    scram = UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                         b"alice-secret", b"fixed-salt-0123")
    for future in admin.alter_user_scram_credentials([scram]).values():
        future.result(30)
    delete_topics(bootstrap, ["snap-gone"])
    run_tool("kafka.admin.ConfigCommand", "--bootstrap-server", bootstrap, "--alter", "--entity-type", "clients",
             "--entity-default", "--add-config", "consumer_byte_rate=10485760,producer_byte_rate=1024")
    producer = Producer(quiet({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 1}))
    for i in range(400):
        producer.produce("snap-a", key=b"s%d" % i, value=b"v" * (i % 50), partition=0)
        if i % 40 == 39:
            producer.flush(30)
    producer.flush(30)
    appended = Producer(quiet({"bootstrap.servers": bootstrap, "compression.type": "gzip", "linger.ms": 1}))
    for i in range(200):   # the broker's clock replaces these timestamps
        appended.produce("snap-appended", key=b"a%d" % i, value=b"w" * 30, timestamp=1_600_000_000_000 + i)
        if i % 25 == 24:
            appended.flush(30)
    appended.flush(30)


@pytest.fixture(scope="module")
def kraft_log_dir(tmp_path_factory) -> Path:
    """A node whose controller writes a ``.checkpoint`` snapshot each second, its metadata changed in
    many ways, killed (SIGKILL) once the metadata log has a snapshot taken after the changes: its
    active segments' indexes stay preallocated (zero slots to the end)."""
    from broker.harness import Cluster, missing_tools

    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    cluster = Cluster(tmp_path_factory.mktemp("kraft-snapshots"), 1,
                      {"metadata.log.max.snapshot.interval.ms": "1000", "metadata.max.idle.interval.ms": "200"})
    try:
        cluster.start()
        metadata_activity(cluster.bootstrap)
        meta = cluster.nodes[0].log_dir / "__cluster_metadata-0"
        changed = time.time()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not [p for p in meta.glob("*.checkpoint")
                                                   if p.stat().st_mtime > changed + 0.5]:
            time.sleep(0.2)
    finally:
        cluster.stop(kill=True)
    return cluster.nodes[0].log_dir


def checkpoints(log_dir: Path) -> list[Path]:
    found = sorted((log_dir / "__cluster_metadata-0").glob("*.checkpoint"))
    assert found, "the controller wrote no KRaft snapshot"
    return [*found, log_dir / "bootstrap.checkpoint"]


def empty_segment_index(p: Path) -> bool:
    """An offset index (preallocated: a slot at least) of a segment with no batch: Kafka's tool throws on it."""
    return p.suffix == ".index" and p.stat().st_size > 0 and p.with_suffix(".log").stat().st_size == 0


def test_kraft_checkpoints_and_preallocated_indexes(kraft_log_dir):
    files = [p for p in checkpoints(kraft_log_dir) + kafka_files(kraft_log_dir) if not empty_segment_index(p)]
    k_out, k_err = dump_log_segments(files)
    out, err = kafkadump("dump", "--format", "dump-log", *map(str, files))
    assert assert_same_lines(k_out, out) > 500
    assert assert_same_lines(files_in_order(k_err), files_in_order(err)) > 0
    assert " SnapshotHeader {" in out and " SnapshotFooter {" in out and "KRaft bootstrap snapshot" in out
    assert " payload: [redacted secret] (" in out       # the SCRAM credential, masked on its own line
    appended = blocks(out)[str(kraft_log_dir / "snap-appended-0" / "00000000000000000000.timeindex")]
    assert len(appended) >= 3 and " LogAppendTime: " in out
    dense = blocks(out)[str(kraft_log_dir / "snap-a-0" / "00000000000000000000.index")]
    assert len(dense) >= 5 and dense[0] != "offset: 0 position: 0"      # stopped at the first zero slot
    assert "The following indexed offsets are not found in the log." in err  # an empty segment's zero slot 0
