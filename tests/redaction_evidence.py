"""What the redaction tests share: an Avro schema whose values carry a marker, confluent-kafka's
serializer types (the oracle that frames them), and the scan for the marker in any form."""

from __future__ import annotations

import base64
import re
import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

__all__ = ["MARK", "PAIRS", "SCHEMA", "AvroSerializer", "MessageField", "MockSchemaRegistryClient",
           "SerializationContext", "leaks"]

SCHEMA = ('{"type":"record","name":"User","fields":[{"name":"id","type":"string"},'
          '{"name":"password","type":"string"},{"name":"age","type":"int"}]}')
MARK = b"QZXJ" * 3
PAIRS = [("51", "5a"), ("5a", "58"), ("58", "4a"), ("4a", "51")]


def leaks(out: str, secrets: list[bytes]) -> list[str]:
    """Every form of the marker or of ``secrets`` found in ``out``: text, hex pairs (joined,
    spaced or split by a hexdump's column mark) and base64 at each alignment."""
    found = [m for m in ("QZXJ", "ZXJQ", "XJQZ", "JQZX", "QZ", "ZX", "XJ") if m in out]
    found += [f"{a} {b}" for a, b in PAIRS if re.search(f"{a}[ |!]{b}", out)]
    found += [f"{a}{b}" for a, b in PAIRS if f"{a}{b}" in out]
    for s in secrets:
        for i in range(3):
            b64 = base64.b64encode(s[i:]).decode()[:8]
            if b64 in out:
                found.append("base64 " + b64)
    return found
