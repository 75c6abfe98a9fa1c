"""The capture command: outputs, exit codes, options, and that inputs are never modified."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))

import capture_builders as B  # noqa: E402
from conftest import FIXTURES, need_corpus  # noqa: E402
from test_protocol import first_batch  # noqa: E402

from kafkadump.cli import app  # noqa: E402
from kafkadump.decoders.batches.model import Span  # noqa: E402
from kafkadump.render.hexdump import tiling_errors  # noqa: E402


def run(*args, input=None):
    r = CliRunner().invoke(app, ["capture", *map(str, args)], input=input)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    return r


def jsonl(r):
    return [json.loads(x) for x in r.stdout.splitlines()]


def small_pcap(tmp_path, **kw):
    batch, exp = first_batch()
    c, idx, frames = B.kafka_conversation(batch)
    data, offsets = B.pcap([(t, p) for t, p, _ in c.packets])
    p = tmp_path / "small.pcap"
    p.write_bytes(data)
    small_pcap.where = (offsets, idx)
    return p, exp, frames


def test_table_json_and_summary(tmp_path):
    p, exp, frames = small_pcap(tmp_path)
    r = run(p)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("== c0: 10.0.0.1:50000 > 10.0.0.2:9092 (Kafka by port)")
    assert lines[1].split()[:4] == ["#", "time", "conn", "dir"]
    assert "\x1b[" not in r.stdout
    assert lines[-1].startswith("frames: 4  requests: 2  responses: 2  records: 5")
    j = run(p, "--json")
    docs = jsonl(j)
    assert [d["type"] for d in docs] == ["frame"] * 4 + ["summary"]
    fetch = docs[3]
    assert (fetch["apiName"], fetch["apiVersion"], fetch["correlationId"], fetch["requestIndex"]) == ("Fetch", 12, 2, 2)
    assert fetch["connection"] == {"id": 0, "client": "10.0.0.1:50000", "server": "10.0.0.2:9092", "detected": False}
    part = fetch["body"]["responses"][0]["partitions"][0]
    batch = part["records"]["batches"][0]
    assert batch["type"] == "batch" and batch["recordCount"] == exp["recordCount"] and batch["crcValid"] is True
    assert [r["offset"] for r in batch["records"]] == [r["offset"] for r in exp["records"]]
    assert docs[-1] == {"type": "summary", "file": str(p), "input": "pcap", "frames": 4, "requests": 2,
                        "responses": 2, "records": exp["recordCount"], "findings": 0, "connections": 1,
                        "ignoredConnections": 0, "packets": docs[-1]["packets"], "shown": 4, "valid": True}


def test_records_listing_uses_the_records_contract(tmp_path):
    p, exp, _ = small_pcap(tmp_path)
    r = run(p, "--records", "--json", "--encoding", "hex")
    recs = jsonl(r)
    assert len(recs) == exp["recordCount"]
    contract = run_records_json_keys()
    for rec, want in zip(recs, exp["records"]):
        assert set(contract) <= set(rec)
        assert (rec["type"], rec["offset"], rec["key"], rec["frame"], rec["topic"], rec["partition"]) == \
            ("record", want["offset"], want["key"], 3, "t", 0)
    table = run(p, "--records")
    assert table.stdout.splitlines()[0].split()[:4] == ["frame", "topic", "part", "offset"]
    assert len(table.stdout.splitlines()) == 1 + exp["recordCount"]


def run_records_json_keys():
    r = CliRunner().invoke(app, ["records", "--json", str(FIXTURES / "segment-v2" / "00000000000000000000.log")])
    return json.loads(r.stdout.splitlines()[0]).keys()


def test_one_frame_tree_and_hexdump(tmp_path):
    p, exp, frames = small_pcap(tmp_path)
    tree = run(p, "--frame", 3)
    assert tree.exit_code == 0
    assert "responses: (1)" in tree.stdout and f"{exp['recordCount']} records" in tree.stdout
    hd = run(p, "--frame", 3, "--hexdump")
    assert hd.stdout.startswith("── frame 3: Fetch v12 response at position 82, 373 bytes, correlation id 2")
    assert "(computed crc32c" in hd.stdout and ": ok)" in hd.stdout
    spans = [json.loads(x) for x in run(p, "--frame", 3, "--hexdump", "--json").stdout.splitlines()]
    file_spans = [Span(s["path"], s["offset"], s["length"], s["value"], s["source"]) for s in spans
                  if s.get("source") == "file"]
    assert tiling_errors(file_spans, 82, 82 + len(frames["fetch_resp"])) == []
    assert {s["path"] for s in spans} >= {"size", "header.correlationId", "body.responses[0].topic"}


def test_usage_errors_exit_2_with_one_line(tmp_path):
    p, _, _ = small_pcap(tmp_path)
    for args in ([p, "--frame", 99], [p, "--hexdump"], [tmp_path / "missing.pcap"], [p, "--api-version", 3],
                 [tmp_path]):
        r = run(*args)
        assert r.exit_code == 2, args
        assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
        assert "Traceback" not in r.stderr


def test_exit_1_on_problems_and_json_stays_valid(tmp_path):
    p, _, _ = small_pcap(tmp_path)
    data = bytearray(p.read_bytes())
    offsets, idx = small_pcap.where
    data[offsets[idx["fetch_resp"][2]] + 16 + 14 + 40 + 50] ^= 0xFF  # inside the Fetch response's batch
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(bytes(data))
    r = run(bad, "--json")
    assert r.exit_code == 1
    docs = jsonl(r)
    assert docs[-1]["type"] == "summary" and docs[-1]["valid"] is False
    assert any(f["code"] == "crc-mismatch" for d in docs if d["type"] == "frame" for f in d["findings"])


def test_inputs_are_not_modified(tmp_path):
    p, _, _ = small_pcap(tmp_path)
    before = (p.read_bytes(), os.stat(p).st_mtime_ns)
    os.chmod(p, 0o444)
    run(p, "--json")
    run(p, "--frame", 3, "--hexdump")
    assert (p.read_bytes(), os.stat(p).st_mtime_ns) == before


def test_ports_and_detection(tmp_path):
    batch, _ = first_batch()
    c = B.Conversation(server=("10.0.0.2", 19092))
    c.send("c", B.metadata_v1_request(corr=1))
    c.send("s", B.metadata_v1_response(corr=1))
    c.close()
    p = tmp_path / "odd-port.pcap"
    p.write_bytes(B.pcap([(t, x) for t, x, _ in c.packets])[0])
    detected = jsonl(run(p, "--json"))
    assert detected[0]["connection"]["detected"] is True and detected[-1]["frames"] == 2
    none = jsonl(run(p, "--json", "--no-detect"))
    assert none[-1]["frames"] == 0 and none[-1]["ignoredConnections"] == 1
    by_port = jsonl(run(p, "--json", "--no-detect", "--port", 19092))
    assert by_port[-1]["frames"] == 2 and by_port[0]["connection"]["detected"] is False


def test_pcapng_and_raw_ip_link(tmp_path):
    batch, exp = first_batch()
    c, idx, frames = B.kafka_conversation(batch)
    for name, (data, _) in (("x.pcapng", B.pcapng([(t, x) for t, x, _ in c.packets])),
                            ("raw.pcap", B.pcap([(t, x) for t, x, _ in c.packets], link="raw"))):
        p = tmp_path / name
        p.write_bytes(data)
        docs = jsonl(run(p, "--json"))
        assert docs[-1]["frames"] == 4 and docs[-1]["records"] == exp["recordCount"], name


def test_bare_record_batches_and_binary_frames(tmp_path):
    seg = FIXTURES / "segment-v2" / "00000000000000000000.log"
    docs = jsonl(run(seg, "--json"))
    assert docs[0]["kind"] == "records" and docs[0]["records"]["batches"][0]["type"] == "batch"
    forced = jsonl(run(seg, "--json", "--as", "records"))
    assert forced[0]["recordCount"] == docs[0]["recordCount"] > 0
    b = tmp_path / "frame.bin"
    b.write_bytes(B.apiversions_v3_request(corr=5))
    one = jsonl(run(b, "--json"))
    assert (one[0]["apiName"], one[0]["apiVersion"], one[0]["correlationId"]) == ("ApiVersions", 3, 5)


def test_stdin_pcap(tmp_path):
    p, exp, _ = small_pcap(tmp_path)
    r = CliRunner().invoke(app, ["capture", "-", "--json"], input=p.read_bytes())
    assert jsonl(r)[-1]["frames"] == 4


def test_corpus_capture_cli_smoke():
    wire = need_corpus("clients/wire")
    r = run(wire / "aiokafka_codecs.pcap")
    assert r.exit_code == 0 and "records: 300" in r.stdout.splitlines()[-1]
    r = run(wire / "ck216_produce_gzip.pcap", "--json")
    # healthy librdkafka 2.16 traffic: Metadata v13 is in the tables, the mock's ApiVersions answer
    # is a named quirk (info), nothing is a problem
    assert r.exit_code == 0, r.stdout[-2000:]
    codes = {f["code"] for d in jsonl(r) if d["type"] == "frame" for f in d["findings"]}
    assert codes == {"client-quirk"}


def test_lone_response_with_an_unknown_api_key_is_kept_raw(tmp_path):
    """--api-key without --api-version on a lone response: a key the tables do not know fits no
    API, so the body is kept raw (response-unpaired), not an internal error."""
    p = tmp_path / "response.hex"
    p.write_text("0000000800000007000000000000\n")
    r = run(p, "--as", "response", "--api-key", 999, "--json")
    assert r.exit_code == 1, r.stderr
    frame = jsonl(r)[0]
    assert frame["body"] is None and frame["correlationId"] == 7
    assert [f["code"] for f in frame["findings"]] == ["response-unpaired"]
