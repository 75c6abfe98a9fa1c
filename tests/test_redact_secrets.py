"""Secrets of the KRaft metadata log are masked by default in every output; --no-redact-secrets shows them."""

from __future__ import annotations

import base64
import json

import pytest
from cli_inprocess import run
from metadata_builders import MetaLog

from kafkadump.decoders.payloads.redact import SECRET_MASK
from kafkadump.decoders.payloads.redact import is_sensitive_config

SALT = b"\x13salt-is-secret\x99"
STORED = b"\x07stored-key-bytes\xfe"
SERVER = b"\x05server-key-bytes\xfd"
JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="hunter2-jaas";'
KEYPASS = "hunter3-keypass"


@pytest.fixture()
def metadata_segment(tmp_path):
    log = MetaLog()
    log.rec("UserScramCredentialRecord", 0, name="alice", mechanism=1, salt=SALT, storedKey=STORED,
            serverKey=SERVER, iterations=4096)
    log.rec("ConfigRecord", 0, resourceType=4, resourceName="1", name="listener.name.sasl.scram-sha-256.sasl.jaas.config",
            value=JAAS)
    log.rec("ConfigRecord", 0, resourceType=4, resourceName="1", name="ssl.key.password", value=KEYPASS)
    log.rec("ConfigRecord", 0, resourceType=2, resourceName="orders", name="retention.ms", value="604800000")
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    seg = d / "00000000000000000000.log"
    seg.write_bytes(bytes(log.data))
    return seg


SECRETS_BYTES = [SALT, STORED, SERVER]
SECRETS_TEXT = ["hunter2-jaas", KEYPASS]


def _forms(b: bytes) -> list[str]:
    """Every way an output could spell these bytes."""
    return [base64.b64encode(b).decode(), b.hex(), b.hex(" "), b[1:-1].decode("latin-1"),
            " ".join(f"{x:02x}" for x in b[1:9])]


OUTPUTS = [["records", "--json"], ["records"], ["records", "--format", "dump-log", "--decode", "metadata"],
           ["records", "--json", "--encoding", "hex"], ["records", "--json", "--encoding", "text"],
           ["hexdump", "--records"], ["hexdump", "--records", "--batch", "1"], ["hexdump", "--records", "--batch", "2"],
           ["hexdump", "--json"], ["hexdump", "--json", "--batch", "1"], ["hexdump", "--json", "--batch", "2"],
           ["metadata"], ["metadata", "--json"],
           # shown undecoded: the values that hold secrets are hidden all the same
           ["records", "--format", "dump-log"], ["records", "--decode", "none"], ["records", "--json", "--decode", "none"],
           ["records", "--json", "--decode", "none", "--encoding", "hex"], ["hexdump", "--records", "--decode", "none"],
           ["hexdump", "--json", "--decode", "none", "--batch", "2"], ["records", "--json", "--decode", "none", "--detect"]]


@pytest.mark.parametrize("args", OUTPUTS)
def test_secrets_masked_by_default(metadata_segment, args):
    target = metadata_segment.parent if args[0] == "metadata" else metadata_segment
    r = run(*args, str(target))
    assert r.returncode in (0, 1), r.stderr
    for b in SECRETS_BYTES:
        for form in _forms(b):
            assert form not in r.stdout
    for t in SECRETS_TEXT:
        assert t not in r.stdout
        assert t.encode().hex()[:16] not in r.stdout.replace(" ", "").replace("|", "")


def test_json_says_what_was_masked(metadata_segment):
    lines = [json.loads(x) for x in run("records", "--json", str(metadata_segment)).stdout.splitlines()]
    scram = lines[0]["value"]
    assert scram["schema"] == "UserScramCredentialRecord"
    assert {k: scram["data"][k] for k in ("salt", "storedKey", "serverKey")} == dict.fromkeys(
        ("salt", "storedKey", "serverKey"), SECRET_MASK)
    assert scram["data"]["name"] == "alice" and scram["data"]["iterations"] == 4096
    assert scram["raw"] is None
    assert lines[3]["value"]["data"]["value"] == "604800000" and lines[3]["value"]["raw"] is not None


@pytest.mark.parametrize("args", [["records", "--json"], ["records", "-f", "dump-log", "--decode", "metadata"],
                                  ["hexdump", "--json"], ["hexdump", "--records"], ["records", "-f", "dump-log"],
                                  ["records", "--json", "--decode", "none", "--encoding", "hex"],
                                  ["hexdump", "--records", "--decode", "none"]])
def test_the_oracle_sees_the_secrets_when_asked(metadata_segment, args):
    """What the test above looks for is there with --no-redact-secrets (else it could not fail)."""
    out = run(*args, "--no-redact-secrets", str(metadata_segment)).stdout
    assert any(form in out for form in _forms(SALT))


def test_undecoded_secret_values_say_so(metadata_segment):
    lines = [json.loads(x) for x in run("records", "--json", "--decode", "none", str(metadata_segment)).stdout.splitlines()]
    assert [sorted(x["value"]) if "redacted" in x["value"] else "shown" for x in lines] == \
        [["length", "redacted"]] * 3 + ["shown"]
    assert [x["value"].get("redacted") for x in lines[:3]] == ["secret"] * 3
    assert lines[0]["value"]["length"] > len(SALT) + len(STORED) + len(SERVER)


def test_no_redact_secrets_shows_them(metadata_segment):
    out = run("records", "--json", "--encoding", "hex", "--no-redact-secrets", str(metadata_segment)).stdout
    for b in SECRETS_BYTES:
        assert b.hex() in out
    assert KEYPASS in out


@pytest.mark.parametrize(("name", "sensitive"), [
    ("ssl.key.password", True), ("ssl.keystore.password", True), ("sasl.jaas.config", True),
    ("listener.name.internal.plain.sasl.jaas.config", True), ("ssl.keystore.key", True),
    ("password.encoder.secret", True), ("sasl.oauthbearer.client.credentials.client.secret", True),
    ("retention.ms", False), ("ssl.keystore.location", False), ("cleanup.policy", False),
])
def test_sensitive_config_names(name, sensitive):
    assert is_sensitive_config(name) is sensitive


def test_where_on_decoded_metadata_records(metadata_segment):
    lines = [json.loads(x) for x in run("records", "--json", "--where",
                                        'value.schema == "ConfigRecord" and value.data.name startswith "retention"',
                                        str(metadata_segment)).stdout.splitlines()]
    assert [(x["offset"], x["value"]["data"]["value"]) for x in lines] == [(3, "604800000")]


def test_redact_wins_over_decoding_internal_topics(metadata_segment):
    lines = [json.loads(x) for x in run("records", "--json", "--redact", "values", str(metadata_segment)).stdout.splitlines()]
    assert [x["value"]["redacted"][:7] for x in lines] == ["secret", "secret", "secret", "sha256:"]
    assert "decoded" not in lines[3]
    out = run("hexdump", "--records", "--batch", "3", "--redact", "values", str(metadata_segment)).stdout
    assert "604800000" not in out and "** **" in out
