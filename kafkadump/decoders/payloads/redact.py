"""Redaction for sharing evidence: payload bytes as their digest, named fields masked, secrets hidden.

``--redact keys,values,headers`` shows a key, value or header value as ``sha256:<hex>`` and its
length instead of its bytes (enough to match two copies of the evidence, nothing of the content;
mind that a digest of a short or guessable value can be found by trying candidates).
``--redact-fields password,ssn`` masks the fields of those names at any depth of a decoded
payload.  Secrets Kafka keeps in its metadata log (the salt and keys of a
``UserScramCredentialRecord``, the values of sensitive configs in a ``ConfigRecord``: Kafka's
PASSWORD-type configs such as ``*.password``, ``sasl.jaas.config``, ``ssl.keystore.key``) are
masked by default (``--no-redact-secrets`` shows them): the decoded field reads
:data:`SECRET_MASK` and the raw bytes of the value are not shown.  (What was asked for is a
:class:`kafkadump.decoders.payloads.view.Redaction`; this module stays cheap to import: the internal-topic
decoder uses it on every run.)
"""

from __future__ import annotations

import re
from typing import Any

PARTS = ("keys", "values", "headers")
FIELD_MASK = "[redacted]"
SECRET_MASK = "[redacted secret]"
MAX_MASK_DEPTH = 256

# config names whose values Kafka types PASSWORD (ConfigDef.Type.PASSWORD), or that hold credentials:
# ssl.key.password, ssl.keystore.password, ssl.truststore.password, ssl.keystore.key,
# ssl.keystore.certificate.chain, ssl.truststore.certificates, sasl.jaas.config (also per listener and
# mechanism: listener.name.x.scram-sha-256.sasl.jaas.config), password.encoder.secret, ..., and
# anything named *password* / *secret* / *credentials*
SENSITIVE_CONFIG = (r"password|secret|credential|sasl\.jaas\.config$|ssl\.key\.|ssl\.keystore\.key$|"
                    r"ssl\.keystore\.certificate\.chain$|ssl\.truststore\.certificates$|token\.master\.key$")
# KRaft metadata records' secret fields (camelCase, as decoded)
SECRET_FIELDS = {"UserScramCredentialRecord": ("salt", "storedKey", "serverKey")}
# the record types that can hold a secret (:func:`secret_fields` finds none in any other)
SECRET_SCHEMAS = frozenset({"ConfigRecord", *SECRET_FIELDS})


def digest_text(b: bytes) -> str:
    """``sha256:<hex>`` of ``b``."""
    import hashlib  # only when something is redacted: start-up stays as it was

    return "sha256:" + hashlib.sha256(b).hexdigest()


def digest_object(b: bytes) -> dict[str, Any]:
    """A redacted byte field in JSON: ``{"redacted": "sha256:<hex>", "length": n}``."""
    return {"redacted": digest_text(b), "length": len(b)}


def digest_line(b: bytes) -> str:
    """A redacted byte field in a human format: ``sha256:<hex> (n bytes)``."""
    return f"{digest_text(b)} ({len(b)} bytes)"


def mask_fields(value: Any, names: frozenset[str], depth: int = 0) -> Any:
    """``value`` (decoded JSON) with every field whose name (case-insensitive) is in ``names``
    replaced by :data:`FIELD_MASK`, at any depth (bounded)."""
    if not names:
        return value
    if depth > MAX_MASK_DEPTH:
        return FIELD_MASK
    if isinstance(value, dict):
        return {k: FIELD_MASK if str(k).lower() in names else mask_fields(v, names, depth + 1)
                for k, v in value.items()}
    if isinstance(value, list):
        return [mask_fields(v, names, depth + 1) for v in value]
    return value


def is_sensitive_config(name: object) -> bool:
    """A config name whose value is a secret (Kafka's PASSWORD-type configs and the like)."""
    return isinstance(name, str) and re.search(SENSITIVE_CONFIG, name, re.IGNORECASE) is not None


def secret_fields(schema: str | None, data: object) -> tuple[str, ...]:
    """The fields of a decoded KRaft record (``schema``, ``data``) that hold secrets."""
    if not isinstance(data, dict) or schema is None:
        return ()
    if schema == "ConfigRecord":
        return ("value",) if is_sensitive_config(data.get("name")) and data.get("value") is not None else ()
    return tuple(f for f in SECRET_FIELDS.get(schema, ()) if data.get(f) is not None)


def holds_secrets(schema: str | None) -> bool:
    """Whether records of ``schema`` can hold a secret (decided once per record type: the others
    are never looked at)."""
    return schema in SECRET_SCHEMAS


def mask_secrets(schema: str | None, data: object) -> tuple[str, ...]:
    """Replace the secret fields of ``data`` (a decoded record's dict, changed in place) by
    :data:`SECRET_MASK`; the names of the fields masked."""
    names = secret_fields(schema, data)
    if names and isinstance(data, dict):
        for n in names:
            data[n] = SECRET_MASK
    return names


__all__ = ["mask_fields", "mask_secrets", "secret_fields", "holds_secrets", "SECRET_SCHEMAS", "is_sensitive_config",
           "digest_text", "digest_object", "digest_line", "FIELD_MASK", "SECRET_MASK", "PARTS"]
