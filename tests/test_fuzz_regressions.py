"""Every input a fuzzer ever crashed on, run through its target, plus what each one broke.

The files are in ``fuzz/regressions/TARGET/NAME``; a new crash found by
``fuzz/run_all.py`` goes there, and, when the defect has a user-visible
effect, a test below that checks the fixed output.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FUZZ = ROOT / "fuzz"
sys.path.insert(0, str(FUZZ))

import targets as T  # noqa: E402

from kafkadump.decoders.internal_topics.constants import KINDS  # noqa: E402
from kafkadump.decoders.internal_topics.record_decoder import decoder_for  # noqa: E402
from kafkadump.render import jsontext  # noqa: E402
from kafkadump.render.internal_records import summary  # noqa: E402

REGRESSIONS = sorted((FUZZ / "regressions").glob("*/*"))


@pytest.mark.parametrize("path", REGRESSIONS, ids=[f"{p.parent.name}/{p.name}" for p in REGRESSIONS])
def test_regression(path):
    T.TARGETS[path.parent.name](path.read_bytes())


def test_every_regression_names_a_target():
    assert {p.parent.name for p in REGRESSIONS} <= set(T.TARGETS)
    assert len(REGRESSIONS) >= 5


def _internal_record(data: bytes):
    """The key/value/control split the ``internal`` target makes of its input."""
    kind = KINDS[data[0] % len(KINDS)]
    split = data[2] % max(1, len(data) - 3 + 1)
    rest = data[3:]
    return decoder_for(kind).decode(rest[:split], rest[split:], bool(data[1] & 1))


def test_null_topic_in_a_subscription_renders_as_null():
    data = (FUZZ / "regressions" / "internal" / "consumer-protocol-null-topic").read_bytes()
    line = summary(_internal_record(data))
    assert line.startswith("group metadata group=console-consumer-2399 protocolType=consumer generation=1 ")
    assert "console-consu1er@/192.168.50.45 subscribed=cities,null,null assigned=cities:0" in line


def test_null_strings_in_a_transaction_summary_render_as_null():
    from kafkadump.decoders.internal_topics.decoded import DecodedRecord
    from kafkadump.decoders.internal_topics.decoded import Part

    key = Part("TransactionLogKey", 0, {"transactionalId": None}, b"")
    value = Part("TransactionLogValue", 0, raw=b"", data={
        "producerId": 7, "producerEpoch": 1, "transactionTimeoutMs": 60000, "transactionStatus": 1,
        "transactionPartitions": [{"topic": None, "partitionIds": [0, 1]}],
        "transactionLastUpdateTimestampMs": 0})
    dec = DecodedRecord("transactions", 0, 0, key, value)
    line = summary(dec)
    assert "id=null" in line and "partitions=null:0/1" in line


def test_nel_in_a_text_value_stays_inside_its_json_line(tmp_path):
    data = (FUZZ / "regressions" / "legacy" / "text-value-with-nel").read_bytes()
    assert data[0] & 1 == 1 and (data[0] >> 1) % 5 == 0  # magic 1, uncompressed
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(T._legacy_message(1, 0, None, data[1:]))
    rc, out, _ = T._cli(["records", "--json", "--encoding", "text", str(seg)])
    assert rc == 0
    lines = out.splitlines()  # any splitter, not only "\n", sees one object
    assert len(lines) == 1
    obj = json.loads(lines[0])
    assert obj["value"] == data[1:].decode("utf-8", "replace")
    assert "\x85" in obj["value"] and "\\u0085" in lines[0] and "\x85" not in lines[0]


@pytest.mark.parametrize("cp", [0x7F, 0x80, 0x85, 0x9B, 0x9F, 0x2028, 0x2029])
def test_json_text_escapes_line_breakers_and_c1(cp):
    s = f"a{chr(cp)}b é ☃"
    text = jsontext.dumps({"v": s})
    assert chr(cp) not in text and f"\\u{cp:04x}" in text
    assert "é ☃" in text  # other non-ASCII stays readable
    assert json.loads(text) == {"v": s}
    assert len(text.splitlines()) == 1


def test_regression_inputs_are_the_ones_the_issue_names():
    nel = (FUZZ / "regressions" / "legacy" / "text-value-with-nel").read_bytes()
    assert base64.b64encode(nel).startswith(b"R6eFhYWF")


def test_a_capture_timestamp_beyond_the_calendar_is_kept_as_a_number():
    from kafkadump.reports.capture import time_iso, time_text

    assert time_iso(2.0e12) is None and time_text(2.0e12) == "2000000000000.000000"
    assert time_iso(1_700_000_000.5) == "2023-11-14T22:13:20.500000Z"
    data = (FUZZ / "regressions" / "pcap" / "timestamp-beyond-the-calendar").read_bytes()
    T.pcap(data)  # no traceback; JSON lines valid
