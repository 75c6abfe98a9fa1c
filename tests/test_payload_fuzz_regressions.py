"""What the payload fuzz targets (fuzz/payload_targets.py) found, checked as a user sees it.

The inputs are in ``fuzz/regressions/{avro,protobuf,jsonschema}/`` (run through their targets by
test_fuzz_regressions.py); here, the fixed behaviour of each.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
sys.path.insert(0, str(FUZZ))

pytest.importorskip("fastavro")

import payload_targets as P  # noqa: E402

from kafkadump.decoders.payloads.decode import PayloadDecoder  # noqa: E402
from kafkadump.decoders.payloads.model import Schema  # noqa: E402
from kafkadump.decoders.payloads.store import SchemaStore  # noqa: E402


def test_a_library_message_of_many_lines_is_one_line():
    data = (FUZZ / "regressions" / "jsonschema" / "multiline-error").read_bytes()
    P.jsonschema(data)
    text = data[1:].partition(b"\x00")[0].decode("utf-8", "replace")
    got = PayloadDecoder(SchemaStore(), validate=True).decode(Schema(1, "JSON", text), b'"x"')
    assert got.error.startswith("UnknownType: Unknown type") and "\n" not in got.error
    assert "While checking instance: 'x'" in got.error


def test_protoc_in_process_prints_nothing(capfd):
    pytest.importorskip("grpc_tools")
    data = (FUZZ / "regressions" / "protobuf" / "no-syntax-logs-to-stderr").read_bytes()
    P.protobuf(data)
    got = PayloadDecoder(SchemaStore()).decode(Schema(7, "PROTOBUF", "message M { optional int32 n = 1; }"), b"\x08\x05")
    assert got.value == {"n": 5}
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")  # protoc's warning (no syntax line) went to the null device


def test_brackets_past_the_stack_are_plain_text():
    from kafkadump.decoders.payloads.framing import detect_framing

    data = (FUZZ / "regressions" / "avro" / "deep-brackets").read_bytes()
    P.avro(data)
    assert detect_framing(data[1:]).kind == "utf8"
    deep = (FUZZ / "regressions" / "jsonschema" / "deep-framed-json").read_bytes()
    P.jsonschema(deep)
    got = PayloadDecoder(SchemaStore()).decode(Schema(1, "JSON", '{"type": "array"}'), deep[1:])
    assert got.error == "JSON nested deeper than the limit (64)" and got.value is None
