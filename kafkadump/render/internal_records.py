"""Decoded internal-topic records as JSON objects and one-line summaries.

Input is what :mod:`kafkadump.decoders.internal_topics` decoded; nothing is decoded here.

JSON: a decoded key or value is an object

    {"schema": "OffsetCommitKey", "version": 1, "data": {...}, "raw": "<per --encoding>"}

plus ``"frameVersion"`` and ``"apiKey"`` for KRaft metadata and remote log
metadata values, ``"names"`` ({field: name} for enum fields such as
``transactionStatus``), and ``"partial": true`` when decoding stopped
early.  ``schema`` and ``data`` are null when the bytes name no schema
kafkadump knows.  Byte fields in ``data`` follow ``--encoding``; payloads
embedded in them (the consumer protocol's subscription and assignment)
are objects of the same shape.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kafkadump.decoders.internal_topics import constants as K
from kafkadump.decoders.internal_topics.decoded import Part
from kafkadump.objects.records import findings_list
from kafkadump.render import describe as d
from kafkadump.render import jsontext

if TYPE_CHECKING:
    from kafkadump.decoders.internal_topics.decoded import DecodedRecord
    from kafkadump.objects.records import Encoder


# --- JSON ---------------------------------------------------------------------------------------------

def jsonable(v: object, enc: Encoder) -> Any:
    """``v`` with bytes encoded by ``enc``, Parts as objects, non-finite floats as strings."""
    if isinstance(v, Part):
        return part_json(v, enc)
    if isinstance(v, dict):
        return {k: jsonable(x, enc) for k, x in v.items()}
    if isinstance(v, list):
        return [jsonable(x, enc) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return enc(bytes(v))
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def part_json(p: Part | None, enc: Encoder) -> dict[str, Any] | None:
    if p is None:
        return None
    o: dict[str, Any] = {}
    if p.frame_version is not None:
        o["frameVersion"] = p.frame_version
    if p.api_key is not None:
        o["apiKey"] = p.api_key
    o["schema"] = p.schema
    o["version"] = p.version
    o["data"] = None if p.data is None else jsonable(p.data, enc)
    names = _names(p)
    if names:
        o["names"] = names
    if p.partial:
        o["partial"] = True
    o["raw"] = enc(p.raw)
    return o


def _names(p: Part) -> dict[str, str]:
    if not isinstance(p.data, dict):
        return {}
    out: dict[str, str] = {}
    for (schema, field), table in K.ENUMS.items():
        if schema == p.schema and field in p.data:
            out[field] = K.enum_name(table, p.data[field])
    return out


def record_dict(base: dict[str, Any], dec: DecodedRecord, enc: Encoder) -> dict[str, Any]:
    """A record line's dict (``base``, the undecoded form) with the decoded key and value.

    ``decoded`` names the kind, ``tombstone`` says whether the value is a
    tombstone, ``findings`` lists this record's decoding findings.
    """
    base["key"] = part_json(dec.key, enc) if dec.key is not None else None
    base["value"] = part_json(dec.value, enc) if dec.value is not None else None
    base["decoded"] = dec.kind
    base["tombstone"] = dec.tombstone
    base["findings"] = findings_list(dec.findings)
    return base


# --- one-line summaries --------------------------------------------------------------------------------

def summary(dec: DecodedRecord) -> str:
    """``offset commit group=g topic=t partition=3 offset=42 ...``: one line for a decoded record."""
    k, v = dec.key, dec.value
    if dec.control is not None:
        return _control(dec)
    if dec.kind in (K.METADATA, K.REMOTE_LOG_METADATA):
        if v is None:
            return "<null value>"
        if v.data is None:
            return _undecoded(v, "value")
        return _join(v.schema if v.version == 0 else f"{v.schema} v{v.version}", _fields(v.data, v.schema)) \
            + (" …(partial)" if v.partial else "")
    if k is None:
        return "<null key>"
    if k.data is None:
        return _undecoded(k, "key")
    kd = k.data
    if v is not None and v.data is None:
        tail = " " + _undecoded(v, "value")
        vd = None
    else:
        tail = " …(partial)" if (k.partial or (v is not None and v.partial)) else ""
        vd = v.data if v is not None else None
    s = k.schema
    if s == "OffsetCommitKey":
        head = f"offset commit{'' if v is not None else ' DELETED'} " \
               f"group={_q(kd.get('group'))} topic={_q(kd.get('topic'))} partition={kd.get('partition')}"
        if vd:
            parts = [f"offset={vd.get('offset')}"]
            if vd.get("leaderEpoch", -1) != -1:
                parts.append(f"leaderEpoch={vd['leaderEpoch']}")
            if vd.get("metadata"):
                parts.append(f"metadata={_q(vd['metadata'])}")
            parts.append(f"committed={d.iso_ms(vd.get('commitTimestamp'))}")
            if vd.get("expireTimestamp", -1) != -1:
                parts.append(f"expires={d.iso_ms(vd['expireTimestamp'])}")
            head += " " + " ".join(parts)
        return head + tail
    if s == "GroupMetadataKey":
        head = f"group metadata{'' if v is not None else ' DELETED'} group={_q(kd.get('group'))}"
        if vd:
            head += (f" protocolType={_q(vd.get('protocolType'))} generation={vd.get('generation')}"
                     f" protocol={_q(vd.get('protocol'))} leader={_q(vd.get('leader'))}")
            members = vd.get("members") or []
            head += f" members={len(members)}"
            if members:
                head += ": " + "; ".join(_member(m) for m in members)
        return head + tail
    if s == "TransactionLogKey":
        head = f"transaction{'' if v is not None else ' DELETED'} id={_q(kd.get('transactionalId'))}"
        if vd:
            parts = [f"state={K.enum_name(K.TRANSACTION_STATES, vd.get('transactionStatus'))}",
                     f"producerId={vd.get('producerId')}", f"epoch={vd.get('producerEpoch')}",
                     f"timeout={vd.get('transactionTimeoutMs')}ms"]
            tps = vd.get("transactionPartitions") or []
            parts.append("partitions=" + (",".join(f"{_q(tp.get('topic'))}:{_ints(tp.get('partitionIds'))}"
                                                   for tp in tps) or "-"))
            if vd.get("transactionStartTimestampMs", -1) not in (-1, None):
                parts.append(f"started={d.iso_ms(vd['transactionStartTimestampMs'])}")
            parts.append(f"updated={d.iso_ms(vd.get('transactionLastUpdateTimestampMs'))}")
            head += " " + " ".join(parts)
        return head + tail
    # the other coordinator records: name, key fields, value fields
    name = s[: -len("Key")] if s.endswith("Key") else s
    head = _join(name + ("" if v is not None else " DELETED"), _fields(kd, s))
    if vd:
        head = _join(head, _fields(vd, v.schema))
    return head + tail


def _control(dec: DecodedRecord) -> str:
    v = dec.value
    name = dec.control
    if v is None:
        return f"<{name}>"
    if v.data is None:
        return f"<{name}> " + _undecoded(v, "value")
    data = {k: x for k, x in v.data.items() if k != "version"}
    return _join(f"<{name}>", _fields(data, v.schema))


def _undecoded(p: Part, what: str) -> str:
    if p.schema is None:
        ty = f"apiKey {p.api_key}" if p.api_key is not None else f"version {p.version}"
        return f"<undecoded {what}: {ty}, {len(p.raw)} bytes>"
    return f"<undecoded {what}: {p.schema} v{p.version}, {len(p.raw)} bytes>"


def _member(m: dict) -> str:
    s = f"{_q(m.get('clientId'))}@{_q(m.get('clientHost'))}"
    sub, asg = m.get("subscription"), m.get("assignment")
    if isinstance(sub, Part) and sub.data is not None:
        s += " subscribed=" + (",".join(_q(t) for t in sub.data.get("topics") or []) or "-")
    if isinstance(asg, Part) and asg.data is not None:
        tps = asg.data.get("assignedPartitions") or []
        s += " assigned=" + (",".join(f"{_q(tp.get('topic'))}:{_ints(tp.get('partitions'))}" for tp in tps) or "-")
    return s


def _ints(xs: Iterable[object] | None) -> str:
    return "/".join(str(x) for x in xs or ()) or "-"


def _q(v: object) -> str:
    """A string value: bare when it is one plain word, null when null, else JSON-quoted
    (control characters, C1 and line separators escaped)."""
    if v is None:
        return "null"
    s = str(v)
    if s and all(c.isalnum() or c in "-_./:@" for c in s):
        return s
    return jsontext.dumps(s)


def _join(head: str, tail: str) -> str:
    return f"{head} {tail}" if tail else head


_MAX_ITEMS = 8


def _value(key: str, v: object, schema: str | None = None) -> str:
    if isinstance(v, Part):
        if v.data is None:
            return _undecoded(v, key)
        return "{" + _fields(v.data, v.schema) + "}"
    if isinstance(v, dict):
        return "{" + _fields(v, None) + "}"
    if isinstance(v, list):
        items = [_value(key, x) for x in v[:_MAX_ITEMS]]
        more = f",…+{len(v) - _MAX_ITEMS}" if len(v) > _MAX_ITEMS else ""
        return "[" + ",".join(items) + more + "]"
    if isinstance(v, (bytes, bytearray)):
        return d.preview(bytes(v), 24)
    if isinstance(v, str):
        return _q(v)
    if isinstance(v, bool) or v is None:
        return str(v).lower() if v is not None else "null"
    if isinstance(v, int) and (key.endswith("Timestamp") or key.endswith("TimestampMs")) and v > 0:
        return d.iso_ms(v)
    table = K.ENUMS.get((schema, key))
    if table is not None:
        return f"{K.enum_name(table, v)}({v})"
    return str(v)


def _fields(data: dict[str, Any], schema: str | None) -> str:
    out: list[str] = []
    for key, v in data.items():
        if key == "_rawTaggedFields":
            out.append(f"+{len(v)} unknown tagged field{'s' if len(v) != 1 else ''}")
            continue
        if isinstance(v, dict) and "host" in v and "port" in v and "name" in v:
            out.append(f"{key}={_q(v['name'])}://{_q(v['host'])}:{v['port']}")
            continue
        if isinstance(v, list) and v and all(isinstance(e, dict) and "host" in e and "port" in e for e in v):
            out.append(f"{key}=[" + ",".join(f"{_q(e.get('name'))}://{_q(e['host'])}:{e['port']}" for e in v) + "]")
            continue
        out.append(f"{key}={_value(key, v, schema)}")
    return " ".join(out)


__all__ = ["part_json", "record_dict", "summary", "jsonable"]
