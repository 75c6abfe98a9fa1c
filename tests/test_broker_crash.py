"""A broker killed while producers wrote, its log dir torn as a power loss tears it, and Kafka's own log
recovery as the oracle (tests/broker/crash_scenario.py): where Kafka truncated each segment is where
kafkadump says the valid data ends; what Kafka kept reads the same in kafkadump and DumpLogSegments;
every record the producers were acknowledged is on the killed broker's disk.

The differences from Kafka that are Kafka's oddities are in the man page (man/parts/oracle_crash.man)."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from broker.readback import as_bytes

pytestmark = pytest.mark.broker

BATCH_HEADER = 61
DAMAGE = ("cut", "zeroed", "garbage", "flipped")
DUMP_FIELDS = re.compile(r"(\w+): (\S+)")


@pytest.fixture(scope="module")
def crash(tmp_path_factory):
    from broker.harness import missing_tools

    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    from broker.crash_scenario import build

    built = build(tmp_path_factory.mktemp("crash"))
    warm(built)
    return built


def warm(crash) -> None:
    """Run the kafkadump reports the tests read side by side (each is a process; they are cached)."""
    from concurrent.futures import ThreadPoolExecutor

    torn = crash.copies["torn"]
    jobs = [functools.partial(triage, c.before) for c in crash.copies.values()]
    jobs += [functools.partial(triage, c.after) for c in crash.copies.values()]
    jobs += [functools.partial(carve, torn.before / d.segment) for d in torn.damage]
    with ThreadPoolExecutor(4) as pool:
        for future in [pool.submit(job) for job in jobs]:
            future.result()


def kafkadump(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "kafkadump", *args], capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    return done


def lines(*args: str) -> list[dict]:
    return [json.loads(line) for line in kafkadump(*args).stdout.splitlines()]


@functools.cache
def triage(path: Path) -> dict:
    return json.loads(kafkadump("triage", "--json", str(path)).stdout)


@functools.cache
def carve(path: Path) -> list[dict]:
    return lines("carve", "--json", str(path))


def segments(report: dict, root: Path) -> dict[str, dict]:
    """The data topic's segment objects of a triage report, by "topic-p/name.log"."""
    out = {}
    for f in report["files"]:
        rel = Path(f["file"]).relative_to(root)
        if f["kind"] == "segment" and rel.parent.name.startswith("crash-"):
            out[str(rel)] = f
    return out


def dump_log_segments(*files: Path) -> tuple[dict[str, list[dict]], str, int]:
    """Kafka's DumpLogSegments on ``files``: its batch lines by file name, its other lines, its exit."""
    from broker.harness import DUMP_LOG_SEGMENTS, run_tool

    done = run_tool(DUMP_LOG_SEGMENTS, "--files", ",".join(map(str, files)), check=False, timeout=300)
    batches: dict[str, list[dict]] = {}
    other, current = [], ""
    for line in done.stdout.splitlines():
        if line.startswith("Dumping "):
            current = str(Path(line.split(" ", 1)[1]))
            batches[current] = []
        elif line.startswith("baseOffset:"):
            batches[current].append(dict(DUMP_FIELDS.findall(line)))
        else:
            other.append(line)
    return batches, "\n".join(other) + done.stderr, done.returncode


@pytest.fixture(scope="module")
def kafka_kept(crash) -> dict[str, list[dict]]:
    """DumpLogSegments on every segment Kafka kept, of every recovered copy (one run)."""
    files = [c.after / f for c in crash.copies.values() for f in sorted(c.sizes_after)]
    kept, other, code = dump_log_segments(*files)
    assert code == 0 and len(kept) == len(files), other[-2000:]
    return kept


@pytest.fixture(scope="module")
def kafka_torn(crash) -> tuple[dict[str, list[dict]], str, int]:
    """DumpLogSegments on the damaged segments before recovery (one run: the zeroed one last, as it
    makes DumpLogSegments throw)."""
    torn = crash.copies["torn"]
    damage = sorted(torn.damage, key=lambda d: d.kind == "zeroed")
    return dump_log_segments(*(torn.before / d.segment for d in damage))


# ---- the oracle itself -----------------------------------------------------------------------------


def test_kafka_truncated_each_torn_segment_to_its_last_whole_batch(crash):
    torn = crash.copies["torn"]
    assert [d.kind for d in torn.damage] == list(DAMAGE)
    for d in torn.damage:
        assert torn.sizes_before[d.segment] == d.size_after
        assert torn.sizes_after[d.segment] == d.valid_end < d.size_after, d
    untouched = set(torn.sizes_before) - {d.segment for d in torn.damage} - deleted_by_kafka(crash)
    assert untouched and all(torn.sizes_after[k] == torn.sizes_before[k] for k in untouched)


def later_segments(sizes: dict[str, int], segment: str) -> set[str]:
    partition, base = segment.split("/")[0], int(Path(segment).stem)
    return {k for k in sizes if k.startswith(f"{partition}/") and int(Path(k).stem) > base}


def deleted_by_kafka(crash) -> set[str]:
    """The segments after a damaged one: Kafka's recovery deletes them all, intact or not (after a flipped
    byte in a middle segment; after the last segment holding a few batches, the short ones after it)."""
    torn = crash.copies["torn"]
    later = {d.kind: later_segments(torn.sizes_before, d.segment) for d in torn.damage}
    assert later["flipped"]
    assert set(torn.sizes_before) - set(torn.sizes_after) == set().union(*later.values())
    return set().union(*later.values())


def dropped_partitions(crash) -> set[int]:
    """The partitions of the torn copy where Kafka deleted segments that held batches."""
    torn = crash.copies["torn"]
    return {int(k.split("/")[0].rsplit("-", 1)[1]) for k in deleted_by_kafka(crash) if torn.sizes_before[k]}


def test_kafka_left_the_killed_log_whole(crash):
    """SIGKILL leaves the page cache: the killed broker's segments are whole, Kafka truncates nothing."""
    for name in ("killed", "live"):
        copy = crash.copies[name]
        assert copy.sizes_before == copy.sizes_after, name
        assert len(copy.sizes_before) > 4 * 2  # segments rolled in every partition


def test_the_killed_log_dir_triages_clean(crash):
    """SIGKILL leaves whole files and Kafka's recovery changes no segment of them: kafkadump finds
    nothing wrong either (the cleaner-offset-checkpoint Kafka creates empty is no entries)."""
    copy = crash.copies["killed"]
    report = triage(copy.before)
    assert report["verdict"] == "clean", report["findingCounts"]
    assert (copy.before / "cleaner-offset-checkpoint").stat().st_size == 0


# ---- triage: where the valid data ends ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["killed", "torn", "live"])
def test_triage_valid_bytes_is_the_size_kafka_recovered_to(crash, name):
    copy = crash.copies[name]
    found = segments(triage(copy.before), copy.before)
    assert set(found) == set(copy.sizes_before)
    got = {k: f["validBytes"] for k, f in found.items() if k in copy.sizes_after}
    assert got == copy.sizes_after
    for k in set(found) - set(copy.sizes_after):  # deleted by Kafka, whole by kafkadump (man page)
        assert name == "torn" and found[k]["validBytes"] == found[k]["size"]
        assert all(x["severity"] == "info" for x in found[k]["findings"]), found[k]["findings"]


def test_triage_names_the_torn_tail_where_kafka_cut_it(crash, kafka_kept):
    torn = crash.copies["torn"]
    found = segments(triage(torn.before), torn.before)
    for d in torn.damage:
        f = found[d.segment]
        kept = torn.sizes_after[d.segment]
        errors = [x for x in f["findings"] if x["severity"] == "error"]
        padding = sum(x["length"] for x in f["findings"] if x["code"] == "zero-padding")
        assert errors and kept <= errors[0]["offset"] < kept + BATCH_HEADER, (d, errors)
        if d.kind == "flipped":  # one batch damaged, the intact ones after it read (Kafka drops them)
            assert (errors[0]["code"], errors[0]["offset"]) == ("crc-mismatch", kept + 17)
            assert f["damagedRanges"] == 1
            assert f["damagedBytes"] < d.size_after - kept
            continue
        assert f["damagedBytes"] + padding == d.size_after - kept, d
        assert f["lastOffset"] == int(kafka_kept[str(torn.after / d.segment)][-1]["lastOffset"])
        if d.kind == "cut":
            assert [(x["code"], x["offset"]) for x in errors] == [("truncated", kept)]
        if d.kind == "zeroed":
            assert padding > 0 and f["size"] - padding > kept


@pytest.mark.parametrize("name", ["killed", "torn", "live"])
def test_triage_log_end_offset_is_the_one_kafka_recovered_to(crash, kafka_kept, name):
    """Each partition's logEndOffset (one past its last offset) before recovery is Kafka's after it; but
    where Kafka deleted intact segments after a damaged one, kafkadump still counts them (man page)."""
    copy = crash.copies[name]
    dropped = dropped_partitions(crash) if name == "torn" else set()
    assert name != "torn" or 3 in dropped
    report = triage(copy.before)
    for p in range(4):
        kept = [b for f in sorted(k for k in copy.sizes_after if k.startswith(f"crash-{p}/"))
                for b in kafka_kept[str(copy.after / f)]]
        kafka_end = int(kept[-1]["lastOffset"]) + 1
        ours = next(x["logEndOffset"] for x in report["partitions"] if x["topic"] == "crash" and x["partition"] == p)
        assert ours > kafka_end if p in dropped else ours == kafka_end, (name, p)


def test_kafkas_recovery_log_names_the_bytes_and_offsets_kafkadump_does(crash):
    """"Corruption found in segment S, truncating to offset O": O is where carve's lost offsets start;
    "Found invalid messages ... at byte offset N" with the stored and computed CRC: kafkadump's
    crc-mismatch finding of the batch at N, with the same two CRCs."""
    torn = crash.copies["torn"]
    truncations = {int(p): (int(s), int(o)) for p, s, o in re.findall(
        r"partition=crash-(\d+),.*Corruption found in segment (\d+), truncating to offset (\d+)", torn.server_log)}
    expected = {}
    for d in torn.damage:
        lost = next(i for i in carve(torn.before / d.segment) if i["type"] == "damaged")
        expected[d.partition] = (int(Path(d.segment).stem), lost["lostOffsets"]["first"])
    assert truncations == expected
    invalid = re.findall(r"Found invalid messages in log segment (\S+) at byte offset (\d+)\.[^\n]*\n"
                         r"[^\n]*stored crc = (\d+), computed crc = (\d+)", torn.server_log)
    assert invalid
    found = segments(triage(torn.before), torn.before)
    for path, at, stored, computed in invalid:
        f = found[str(Path(path).relative_to(torn.after))]
        crc = [x for x in f["findings"] if x["code"] == "crc-mismatch"]
        assert [(x["offset"], x["message"]) for x in crc] == [(int(at) + 17, f"stored crc {stored} != computed {computed}")]


# ---- carve: what was lost ----------------------------------------------------------------------------


def test_carve_loses_what_kafka_truncated(crash, kafka_kept):
    torn, kept = crash.copies["torn"], kafka_kept
    for d in torn.damage:
        items = carve(torn.before / d.segment)
        damaged = [i for i in items if i["type"] == "damaged"]
        summary = items[-1]
        last_kept = int(kept[str(torn.after / d.segment)][-1]["lastOffset"])
        assert damaged[0]["start"] == torn.sizes_after[d.segment], d
        assert damaged[0]["lostOffsets"]["first"] == last_kept + 1
        if d.kind == "flipped":  # carve keeps the intact batches after the damaged one (man page)
            assert len(damaged) == 1 and summary["recoveredBytes"] + summary["damagedBytes"] == d.size_after
            assert damaged[0]["lostOffsets"]["last"] is not None and summary["lastOffset"] > last_kept
            continue
        assert damaged[-1]["end"] + summary["paddingBytes"] == d.size_after
        assert summary["recoveredBytes"] == torn.sizes_after[d.segment]
        assert summary["lastOffset"] == last_kept


def test_carved_segment_is_the_one_kafka_recovered(crash, tmp_path):
    """``carve -o`` writes the intact batches: byte for byte the segment Kafka truncated, and after a
    flipped byte, that segment followed by the intact batches Kafka dropped."""
    torn = crash.copies["torn"]
    for d in torn.damage:
        out = tmp_path / f"{d.kind}.log"
        kafkadump("carve", "-o", str(out), str(torn.before / d.segment))
        kafkas, ours = (torn.after / d.segment).read_bytes(), out.read_bytes()
        if d.kind == "flipped":
            assert ours.startswith(kafkas) and len(ours) > len(kafkas)
        else:
            assert ours == kafkas, d


def test_dumplogsegments_on_the_torn_files_counts_the_invalid_bytes_carve_lost(crash, kafka_torn):
    """DumpLogSegments names the invalid tail of a cut segment and of one with garbage appended, and
    the flipped batch as not valid; a tail of zeros makes it throw (documented in the man page)."""
    torn = crash.copies["torn"]
    dumped, other, code = kafka_torn
    assert code != 0 and len(dumped) == len(torn.damage)
    for d in torn.damage:
        path = torn.before / d.segment
        carved = carve(path)[-1]
        if d.kind == "zeroed":
            assert f"CorruptRecordException: Found record size 0 smaller than minimum record overhead (14) in " \
                   f"file {path}" in other
        elif d.kind == "flipped":
            invalid = [int(b["position"]) for b in dumped[str(path)] if b["isvalid"] != "true"]
            assert invalid == [torn.sizes_after[d.segment]]
            assert len(dumped[str(path)]) == len(kafkadump_batches(path.parent, [path.name])[str(path)])
        else:
            assert f"Found {carved['damagedBytes']} invalid bytes at the end of {path.name}" in other


# ---- what Kafka kept reads the same --------------------------------------------------------------------


def kafkadump_batches(root: Path, files: list[str]) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = {str(root / f): [] for f in files}
    for b in lines("batches", "--json", *(str(root / f) for f in files)):
        if b["type"] == "batch":
            out.setdefault(str(Path(b["file"])), []).append(
                (b["position"], b["baseOffset"], b["lastOffset"], b["recordCount"], b["size"], b["crc"],
                 b["compression"], b["crcValid"]))
    return out


def dump_batches(kept: dict[str, list[dict]], root: Path, files: list[str]) -> dict[str, list[tuple]]:
    kept = {str(root / f): kept[str(root / f)] for f in files}
    return {k: [(int(b["position"]), int(b["baseOffset"]), int(b["lastOffset"]), int(b["count"]), int(b["size"]),
                 int(b["crc"]), b["compresscodec"], b["isvalid"] == "true") for b in v] for k, v in kept.items()}


@pytest.mark.parametrize("name", ["killed", "torn", "live"])
def test_recovered_log_reads_as_dumplogsegments_reads_it(crash, kafka_kept, name):
    copy = crash.copies[name]
    files = sorted(copy.sizes_after)
    ours, kafkas = kafkadump_batches(copy.after, files), dump_batches(kafka_kept, copy.after, files)
    assert sorted(ours) == sorted(kafkas) and len(ours) == len(files)
    assert ours == kafkas
    summary = lines("verify-crc", "--json", *(str(copy.after / f) for f in files))[-1]
    assert summary["batches"] == sum(map(len, kafkas.values())) and summary["bad"] == 0 and summary["valid"]


@pytest.mark.parametrize("name", ["killed", "torn", "live"])
def test_the_recovered_partitions_triage_clean(crash, name):
    """Kafka rebuilt the indexes the crash or the live copy left out of step; kafkadump finds them whole.
    The broker's own return is an unclean election in its metadata (documented in the man page)."""
    report = triage(crash.copies[name].after)
    verdicts = {p["partition"]: p["verdict"] for p in report["partitions"] if p["topic"] == "crash"}
    assert verdicts == {0: "clean", 1: "clean", 2: "clean", 3: "clean"}
    # a live copy may miss the end of a segment that rolled while it was copied: an info offset-gap
    live_hole = {"offset-gap"} if name == "live" else set()
    assert set(report["findingCounts"]) <= {"unclean-election", "zero-padding"} | live_hole


def test_what_triage_flags_in_the_live_copy_is_what_kafka_repairs(crash):
    """The copy taken while the broker wrote (what it holds depends on the timing): every file kafkadump
    flags is one Kafka's recovery rebuilds (indexes, producer snapshots), rewrites (checkpoints) or
    truncates (a segment whose valid bytes end before its size); the test above finds them whole after."""
    copy = crash.copies["live"]
    rebuilt = {"offset-index", "time-index", "txn-index", "producer-snapshot", "offset-checkpoint",
               "leader-epoch-checkpoint"}
    for f in triage(copy.before)["files"]:
        if any(x["severity"] != "info" for x in f["findings"]):
            rel = str(Path(f["file"]).relative_to(copy.before))
            assert f["kind"] in rebuilt or (f["kind"] == "segment" and f["validBytes"] < f["size"]
                                            and copy.sizes_after[rel] == f["validBytes"]), f


# ---- every acknowledged record ---------------------------------------------------------------------------


def test_every_acknowledged_record_is_on_the_killed_brokers_disk(crash):
    from broker.crash_scenario import ACKED_BEFORE_KILL

    assert len(crash.acked) >= ACKED_BEFORE_KILL and crash.errors  # writes were in flight at the kill
    got = {}
    parts = sorted(crash.killed.glob("crash-*"))
    for r in lines("records", "--json", *map(str, parts)):
        if r["type"] == "record":
            got[(r["partition"], r["offset"])] = (as_bytes(r["key"]), as_bytes(r["value"]))
    missing = [a for a in crash.acked if (a.partition, a.offset) not in got]
    different = [a for a in crash.acked if got.get((a.partition, a.offset), (a.key, a.value)) != (a.key, a.value)]
    assert not missing, missing[:3]
    assert not different, different[:3]
