"""The plain case of an internal-topic record, decoded by plans made once per record type.

:class:`~kafkadump.decoders.internal_topics.record_decoder.Decoder` asks :class:`PlainReader`
first.  For every (record type, version) the bytes name, a :class:`RecordPlan` is made once:
the struct's plan (:func:`~kafkadump.decoders.protocol.decoder.plan_for`; the schema decoder
compiles a busy plan to straight-line Python, :mod:`kafkadump.decoders.protocol.plan_code`),
whether the type can hold a secret (masked then, :mod:`kafkadump.decoders.payloads.redact`) and
whether it embeds consumer protocol payloads.  A record is read with no finding list, no span,
no path: the frame or key version, the struct, the end.  Anything that is not the plain case
(a short or null key or value, an unknown type, a version outside the tables, a struct the
schema decoder has anything to say about, a byte after the struct, a control record) gives
None, and the reference reader of ``record_decoder`` decodes the record again and says what is
wrong: the findings are always its own, and for plain bytes both give the same record
(``tests/test_internal_plain.py`` holds them equal on every record of the corpus, on generated
records of every type and version, and on damaged bytes).
"""

from __future__ import annotations

from collections.abc import Iterator

from kafkadump.decoders.batches import primitives as P
from kafkadump.decoders.internal_topics import newer_records as LATER
from kafkadump.decoders.internal_topics.decoded import DecodedRecord, Part
from kafkadump.decoders.payloads.redact import holds_secrets, mask_secrets
from kafkadump.decoders.protocol import schema as S
from kafkadump.decoders.protocol.decoder import Plan, State, decode_plan, plan_for
from kafkadump.decoders.protocol.plan_code import BAIL, Bail

CONSUMER_SUBSCRIPTION = "ConsumerProtocolSubscription"
CONSUMER_ASSIGNMENT = "ConsumerProtocolAssignment"
# the value schemas whose bytes fields embed the consumer protocol
EMBEDDING = ("GroupMetadataValue", "ConsumerGroupMemberMetadataValue")


def record_entry(name: str) -> dict:
    """The table entry of record schema ``name`` (the tables first, then the newer record types;
    KeyError when neither knows it)."""
    return S.message(name) if S.has(name) else LATER.LAYOUTS[name]


_PLANS: dict[tuple[str, int], Plan] = {}


def struct_plan(name: str, version: int) -> Plan:
    """The plan of record schema ``name`` at ``version`` (cached; the version is not checked)."""
    k = (name, version)
    plan = _PLANS.get(k)
    if plan is None:
        m = record_entry(name)
        plan = _PLANS[k] = plan_for(m["fields"], version, S.in_range(m["flexible"], version))
    return plan


def within_tables(name: str, version: int) -> bool:
    """Whether ``version`` of record schema ``name`` is one the tables (or the newer records) lay out."""
    try:
        versions = record_entry(name)["valid"]
    except KeyError:
        return False
    if versions is None or (name in LATER.VALUE_LAYOUT_UNKNOWN and not S.has(name)):
        return False
    return versions[0] <= version <= versions[1]


def embedded_payloads(name: str, data: dict, path: str) -> Iterator[tuple[dict, str, str, str]]:
    """The consumer protocol payloads inside a decoded ``name`` value: ``(holder, field, schema,
    path)``, the payload's bytes being ``holder[field]``."""
    if name == "GroupMetadataValue":
        if data.get("protocolType") != "consumer":
            return  # connect, ksql, schema registry ...: their own protocols, not Kafka's to define
        for i, m in enumerate(data.get("members") or ()):
            yield m, "subscription", CONSUMER_SUBSCRIPTION, f"{path}.members[{i}].subscription"
            yield m, "assignment", CONSUMER_ASSIGNMENT, f"{path}.members[{i}].assignment"
    else:  # ConsumerGroupMemberMetadataValue: a classic member's supported protocols
        classic = data.get("classicMemberMetadata")
        if isinstance(classic, dict):
            for i, pr in enumerate(classic.get("supportedProtocols") or ()):
                yield (pr, "metadata", CONSUMER_SUBSCRIPTION,
                       f"{path}.classicMemberMetadata.supportedProtocols[{i}].metadata")


class RecordPlan:
    """What one record type at one version needs, decided once: its struct's plan, whether it can
    hold a secret, whether it embeds consumer protocol payloads."""

    __slots__ = ("name", "version", "plan", "secrets", "embeds")

    def __init__(self, name: str, version: int) -> None:
        self.name = name
        self.version = version
        self.plan = struct_plan(name, version)
        self.secrets = holds_secrets(name)
        self.embeds = name in EMBEDDING

    def read(self, raw: bytes, pos: int) -> dict | None:
        """The struct in ``raw[pos:]``, every byte used and nothing to say of it; else None."""
        found: list = []
        st = State(found, None, 0, None, "-", False, False)
        code = self.plan.code
        try:
            if code is None:   # not compiled yet (the schema decoder compiles a plan once it is busy)
                data, end, err = decode_plan(self.plan, raw, pos, len(raw), st, "")
            else:
                data, end = code(raw, pos, len(raw), st)
                err = None
        except Bail:
            BAIL.__traceback__ = None  # the one shared instance: keep no frames alive through it
            return None
        except Exception:  # noqa: BLE001 - not the plain case: the reference reader says why
            return None
        if err is not None or found or end != len(raw):
            return None
        return data


class PlainReader:
    """The plain records of one kind: :meth:`read` gives the :class:`DecodedRecord` the reference
    reader gives, or None (then the reference reader decodes the record)."""

    def __init__(self, kind: str, keys: dict[int, str] | None, frames: dict[int, str], redact_secrets: bool):
        self.kind = kind
        self.keys = keys           # a coordinator topic: key version -> key schema
        self.frames = frames       # a framed topic: apiKey -> record schema
        self.redact_secrets = redact_secrets
        self.plans: dict[tuple[str, int], RecordPlan] = {}   # bounded by the tables: valid versions only

    def plan(self, name: str, version: int) -> RecordPlan | None:
        """The :class:`RecordPlan` of ``name`` at ``version``; None when the tables do not lay it out."""
        rp = self.plans.get((name, version))
        if rp is None and within_tables(name, version):
            rp = self.plans[(name, version)] = RecordPlan(name, version)
        return rp

    def read(self, key: bytes | None, value: bytes | None, offset: int | None,
             timestamp: int | None) -> DecodedRecord | None:
        """A record that is not a control record, decoded; None when it is not the plain case."""
        if self.keys is None:
            vpart = self._framed(value)
            if vpart is None:
                return None
            kpart = None if key is None else Part(None, None, None, key)
        else:
            kpart = self._keyed(key)
            if kpart is None:
                return None
            if value is None:
                vpart = None
            else:
                vpart = self._versioned(value, kpart.schema[: -len("Key")] + "Value")
                if vpart is None:
                    return None
        return DecodedRecord(self.kind, offset, timestamp, kpart, vpart, None, [])

    def _framed(self, value: bytes | None) -> Part | None:
        """A KRaft / remote log metadata value whose frame is one byte each (version 1, apiKey and
        version below 128)."""
        if value is None or len(value) < 3 or value[0] != 1 or value[1] > 0x7F or value[2] > 0x7F:
            return None
        api_key, version = value[1], value[2]
        name = self.frames.get(api_key)
        rp = None if name is None else self.plan(name, version)
        data = None if rp is None else rp.read(value, 3)
        if rp is None or data is None:
            return None
        raw: bytes | None = value
        if rp.secrets and self.redact_secrets and mask_secrets(rp.name, data):
            raw = None   # the decoded secret is masked; the bytes would show it
        return Part(rp.name, version, data, raw, False, 1, api_key)

    def _keyed(self, key: bytes | None) -> Part | None:
        """A coordinator key: INT16 version naming the key schema, then its struct."""
        if key is None or len(key) < 2:
            return None
        assert self.keys is not None
        version = P.int16_at(key, 0)
        name = self.keys.get(version)
        rp = None if name is None else self.plan(name, version)
        data = None if rp is None else rp.read(key, 2)
        return None if rp is None or data is None else Part(rp.name, version, data, key)

    def _versioned(self, raw: bytes, name: str) -> Part | None:
        """A coordinator value (or an embedded consumer protocol payload): INT16 version, struct."""
        if len(raw) < 2:
            return None
        version = P.int16_at(raw, 0)
        rp = self.plan(name, version)
        data = None if rp is None else rp.read(raw, 2)
        if rp is None or data is None:
            return None
        if rp.embeds and not self._embedded(name, data):
            return None
        raw_shown: bytes | None = raw
        if rp.secrets and self.redact_secrets and mask_secrets(name, data):
            raw_shown = None
        return Part(name, version, data, raw_shown)

    def _embedded(self, name: str, data: dict) -> bool:
        """The consumer protocol payloads inside ``data`` replaced by their Parts; False when one is
        not the plain case (a version outside the tables' among them: the reference reader words it)."""
        for holder, field, schema, _ in embedded_payloads(name, data, ""):
            raw = holder.get(field)
            if not isinstance(raw, bytes) or not raw:
                continue
            part = self._versioned(raw, schema)
            if part is None:
                return False
            holder[field] = part
        return True


__all__ = ["PlainReader", "RecordPlan", "record_entry", "struct_plan", "within_tables", "embedded_payloads",
           "EMBEDDING", "CONSUMER_SUBSCRIPTION", "CONSUMER_ASSIGNMENT"]
