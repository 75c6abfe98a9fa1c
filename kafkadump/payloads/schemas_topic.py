"""The Schema Registry's ``_schemas`` topic, read from its segments: every schema, config and deletion.

The registry keeps its whole state in one compacted topic; each record's key
and value are JSON (the registry's ``SchemaRegistryKey`` / ``...Value``)::

    key   {"keytype":"SCHEMA","subject":S,"version":V,"magic":1}
    value {"subject":S,"version":V,"id":N,"schemaType":"AVRO"|"PROTOBUF"|"JSON" (absent: AVRO),
           "schema":TEXT,"references":[{"name":..,"subject":..,"version":..}],"deleted":true (soft delete)}
          null: a tombstone, the (subject, version) hard deleted
    key   {"keytype":"CONFIG","subject":S|null,"magic":0}      value {"compatibilityLevel":LEVEL} | null
    key   {"keytype":"MODE","subject":S|null,"magic":0}        value {"mode":MODE} | null
    key   {"keytype":"DELETE_SUBJECT","subject":S,"magic":0}  value {"subject":S,"version":V}: versions <= V soft deleted
    key   {"keytype":"CLEAR_SUBJECT","subject":S,"magic":0}   value {"subject":S}: the subject's versions hard deleted
    key   {"keytype":"NOOP","magic":0}                         value null (the leader's read barrier)

Records are folded in offset order, as the registry does on start-up.  A
record whose key or value is not that JSON is an ``internal-malformed``
finding at its key's (or value's) byte offset, and the fold goes on.
Decoding uses kafkadump's own walk; nothing is printed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..decode.model import Batch, Record
from ..decode.walk import iter_batches
from ..findings import Code, Finding
from ..logdir import names
from ..sources.segment import open_segment

MAX_FINDINGS = 1000  # findings kept from one _schemas partition (the rest counted)


@dataclass(frozen=True, slots=True)
class Located:
    """A finding and the file it is in."""

    file: str
    finding: Finding


@dataclass(slots=True)
class SchemaEntry:
    """The latest state of one (subject, version) key of ``_schemas``.

    ``value`` is the last non-null value seen (kept after a tombstone so a
    hard-deleted schema can still be shown and used); ``offset`` the offset
    of the record that set it.
    """

    subject: str
    version: int
    value: dict[str, Any]
    offset: int
    file: str
    soft_deleted: bool = False
    hard_deleted: bool = False


@dataclass(frozen=True, slots=True)
class Setting:
    """A CONFIG (compatibilityLevel) or MODE setting: global when ``subject`` is None; ``value`` None when removed."""

    keytype: str
    subject: str | None
    value: str | None
    offset: int


@dataclass(slots=True)
class SchemasTopic:
    """The fold of a ``_schemas`` partition: entries, settings, counts and findings."""

    entries: dict[tuple[str, int], SchemaEntry] = field(default_factory=dict)
    settings: dict[tuple[str, str | None], Setting] = field(default_factory=dict)
    findings: list[Located] = field(default_factory=list)
    findings_dropped: int = 0
    records: int = 0
    noops: int = 0
    files: list[str] = field(default_factory=list)

    def note(self, file: str, finding: Finding) -> None:
        if len(self.findings) < MAX_FINDINGS:
            self.findings.append(Located(file, finding))
        else:
            self.findings_dropped += 1


def segments_of(directory: Path) -> list[Path]:
    """The ``.log`` segments of a partition directory, in base-offset order."""
    found = []
    for name in sorted(os.listdir(directory)):
        fn = names.classify(name)
        if fn.kind == names.SEGMENT and fn.suffix is None:
            found.append((fn.offset if fn.offset is not None else -1, name))
    return [directory / name for _, name in sorted(found)]


def read_schemas_topic(segments: list[Path]) -> SchemasTopic:
    """Fold the records of ``segments`` (one ``_schemas`` partition, in offset order).  Raises OSError."""
    topic = SchemasTopic()
    for path in segments:
        with open_segment(str(path)) as seg:
            topic.files.append(str(path))
            for item in iter_batches(seg.buf, str(path)):
                for f in item.findings:
                    topic.note(str(path), f)
                if isinstance(item, Batch) and item.records:
                    for r in item.records:
                        if r.control is None:
                            _fold_record(topic, r, item, str(path))
    return topic


def _anchor(r: Record, b: Batch, position: int | None) -> tuple[int, int | None]:
    """(file offset, decompressed offset or None) of a key/value: compressed data anchors at the batch."""
    where = position if position is not None else r.position
    return (b.position, where) if r.source == "decompressed" else (where, None)


def _json_object(data: Any, what: str) -> tuple[dict[str, Any] | None, str | None]:
    """The JSON object in ``data`` (bytes), or (None, why not)."""
    try:
        obj = json.loads(bytes(data))
    except (ValueError, RecursionError) as e:
        return None, f"{what} is not JSON ({str(e)[:80]})"
    if not isinstance(obj, dict):
        return None, f"{what} is JSON but not an object"
    return obj, None


def _fold_record(topic: SchemasTopic, r: Record, b: Batch, file: str) -> None:
    topic.records += 1
    offset = r.offset if r.offset is not None else -1
    if r.key is None:
        _malformed(topic, r, b, file, r.key_position, f"offset {offset}: the key is null")
        return
    key, why = _json_object(r.key, "the key")
    value: dict[str, Any] | None = None
    if key is not None and r.value is not None:
        value, why = _json_object(r.value, "the value")
    if why is not None or key is None:
        at = r.key_position if key is None else r.value_position
        _malformed(topic, r, b, file, at, f"offset {offset}: {why}")
        return
    keytype = key.get("keytype")
    fold = _FOLDS.get(keytype) if isinstance(keytype, str) else None
    if fold is None:
        _malformed(topic, r, b, file, r.key_position, f"offset {offset}: keytype {str(keytype)[:40]!r} is unknown")
        return
    why = fold(topic, key, value, offset, file)
    if why:
        _malformed(topic, r, b, file, r.value_position if value is not None else r.key_position,
                   f"offset {offset}: {why}")


def _malformed(topic: SchemasTopic, r: Record, b: Batch, file: str, position: int | None, message: str) -> None:
    at, source = _anchor(r, b, position)
    topic.note(file, Finding(Code.INTERNAL_MALFORMED, at, f"_schemas record {message}", source_offset=source))


def _subject_version(key: dict[str, Any]) -> tuple[str, int] | None:
    subject, version = key.get("subject"), key.get("version")
    if isinstance(subject, str) and isinstance(version, int) and not isinstance(version, bool):
        return subject, version
    return None


def _fold_schema(topic: SchemasTopic, key: dict[str, Any], value: dict[str, Any] | None, offset: int,
                 file: str) -> str | None:
    sv = _subject_version(key)
    if sv is None:
        return "a SCHEMA key without a subject and a version"
    old = topic.entries.get(sv)
    if value is None:
        if old is not None:
            old.hard_deleted = True
        return None
    if not isinstance(value.get("schema"), str) or not isinstance(value.get("id"), int):
        return "a SCHEMA value without a schema text and an id"
    topic.entries[sv] = SchemaEntry(sv[0], sv[1], value, offset, file, soft_deleted=value.get("deleted") is True)
    return None


def _fold_setting(field_name: str):
    def fold(topic: SchemasTopic, key: dict[str, Any], value: dict[str, Any] | None, offset: int,
             file: str) -> str | None:
        subject = key.get("subject")
        if subject is not None and not isinstance(subject, str):
            return f"a {key['keytype']} key whose subject is not a string"
        level = value.get(field_name) if value is not None else None
        topic.settings[(key["keytype"], subject)] = Setting(key["keytype"], subject,
                                                            str(level) if level is not None else None, offset)
        return None
    return fold


def _fold_delete_subject(topic: SchemasTopic, key: dict[str, Any], value: dict[str, Any] | None, offset: int,
                         file: str) -> str | None:
    subject = key.get("subject")
    if not isinstance(subject, str):
        return f"a {key['keytype']} key without a subject"
    upto = value.get("version") if value is not None else None
    hard = key["keytype"] == "CLEAR_SUBJECT"
    for (s, v), entry in topic.entries.items():
        if s == subject and (not isinstance(upto, int) or v <= upto):
            if hard:
                entry.hard_deleted = True
            else:
                entry.soft_deleted = True
    return None


def _fold_noop(topic: SchemasTopic, key: dict[str, Any], value: dict[str, Any] | None, offset: int,
               file: str) -> str | None:
    topic.noops += 1
    return None


_FOLDS = {
    "SCHEMA": _fold_schema,
    "CONFIG": _fold_setting("compatibilityLevel"),
    "MODE": _fold_setting("mode"),
    "DELETE_SUBJECT": _fold_delete_subject,
    "CLEAR_SUBJECT": _fold_delete_subject,
    "NOOP": _fold_noop,
    # the registry's contexts and tenant markers carry nothing a decoder needs
    "CONTEXT": lambda topic, key, value, offset, file: None,
}

__all__ = ["Located", "SchemaEntry", "Setting", "SchemasTopic", "segments_of", "read_schemas_topic", "MAX_FINDINGS"]
