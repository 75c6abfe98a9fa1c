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
import sys
from pathlib import Path
from typing import Any

from kafkadump.base.findings import Code, Finding
from kafkadump.base.values import FrozenValue, Value
from kafkadump.decoders.batches.model import Batch, Record
from kafkadump.decoders.batches.walk import iter_batches
from kafkadump.decoders.logfiles import names
from kafkadump.sources.segment import open_segment

MAX_FINDINGS = 1000  # findings kept from one _schemas partition (the rest counted)


class Located(FrozenValue):
    """A finding and the file it is in."""

    __match_args__ = ("file", "finding")
    __slots__ = __match_args__

    file: str
    finding: Finding

    def __init__(self, file: str, finding: Finding) -> None:
        self._set(file=file, finding=finding)


SOFT, HARD = 1, 2  # the deletion flags of a version
_ID_BITS, _FLAG_BITS, _FILE_BITS = 32, 2, 10


def pack_version(sid: int, offset: int, file_no: int, flags: int) -> int | tuple[int, int, int, int]:
    """One version's state (its schema id, the offset of the record that set it, the segment it is in, its
    deletion flags) as one int (a few dozen bytes, whatever the number of versions), or as a tuple when a
    field does not fit its bits."""
    if 0 <= sid < 1 << _ID_BITS - 1 and 0 <= file_no < 1 << _FILE_BITS and offset >= 0:
        return (((offset << _FILE_BITS | file_no) << _FLAG_BITS | flags) << _ID_BITS) | sid
    return sid, offset, file_no, flags


def unpack_version(packed: int | tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    """(schema id, offset, file number, flags) of a :func:`pack_version` value."""
    if isinstance(packed, tuple):
        return packed
    sid = packed & ((1 << _ID_BITS) - 1)
    rest = packed >> _ID_BITS
    flags = rest & ((1 << _FLAG_BITS) - 1)
    rest >>= _FLAG_BITS
    return sid, rest >> _FILE_BITS, rest & ((1 << _FILE_BITS) - 1), flags


def _with_flags(packed: int | tuple[int, int, int, int], flags: int) -> int | tuple[int, int, int, int]:
    sid, offset, file_no, old = unpack_version(packed)
    return pack_version(sid, offset, file_no, old | flags)


class SchemaText(Value):
    """What every version of one id shares: the text (the last one written), its type, references, GUID;
    ``versions`` the (subject, version) keys that were ever set to this id (checked against ``versions`` of
    the topic when the schema is looked up: a key may have been set to another id since)."""

    __match_args__ = ("text", "schema_type", "references", "guid", "versions")
    __slots__ = __match_args__

    text: str
    schema_type: str
    references: tuple[Any, ...]   # (name, subject, version) triples
    guid: str | None
    versions: tuple[str, int] | list[tuple[str, int]] | None  # one key, or a list of them

    def __init__(self, text: str, schema_type: str = "AVRO", references: tuple[Any, ...] = (),
                 guid: str | None = None, versions: tuple[str, int] | list[tuple[str, int]] | None = None) -> None:
        self.text = text
        self.schema_type = schema_type
        self.references = references
        self.guid = guid
        self.versions = versions


class Setting(FrozenValue):
    """A CONFIG (compatibilityLevel) or MODE setting: global when ``subject`` is None; ``value`` None when removed."""

    __match_args__ = ("keytype", "subject", "value", "offset")
    __slots__ = __match_args__

    keytype: str
    subject: str | None
    value: str | None
    offset: int

    def __init__(self, keytype: str, subject: str | None, value: str | None, offset: int) -> None:
        self._set(keytype=keytype, subject=subject, value=value, offset=offset)


class SchemasTopic(Value):
    """The fold of a ``_schemas`` partition, kept small: each version as one packed int
    (:func:`pack_version`) by subject, each id's text once (:class:`SchemaText`); settings, counts, findings.
    A schema is made from them when it is looked up (``payloads.store``)."""

    __match_args__ = ("versions", "ids", "guids", "settings", "findings", "findings_dropped", "records", "noops",
                       "files")
    __slots__ = __match_args__

    versions: dict[str, dict[int, int | tuple[int, int, int, int]]]
    ids: dict[int, SchemaText]
    guids: dict[str, int]
    settings: dict[tuple[str, str | None], Setting]
    findings: list[Located]
    findings_dropped: int
    records: int
    noops: int
    files: list[str]

    def __init__(self, versions: dict[str, dict[int, int | tuple[int, int, int, int]]] | None = None,
                 ids: dict[int, SchemaText] | None = None, guids: dict[str, int] | None = None,
                 settings: dict[tuple[str, str | None], Setting] | None = None,
                 findings: list[Located] | None = None, findings_dropped: int = 0, records: int = 0,
                 noops: int = 0, files: list[str] | None = None) -> None:
        self.versions = dict() if versions is None else versions
        self.ids = dict() if ids is None else ids
        self.guids = dict() if guids is None else guids
        self.settings = dict() if settings is None else settings
        self.findings = list() if findings is None else findings
        self.findings_dropped = findings_dropped
        self.records = records
        self.noops = noops
        self.files = list() if files is None else files

    def note(self, file: str, finding: Finding) -> None:
        if len(self.findings) < MAX_FINDINGS:
            self.findings.append(Located(file, finding))
        else:
            self.findings_dropped += 1

    def registrations(self, sid: int) -> list[tuple[str, int, int, int, int]]:
        """(subject, version, flags, offset, file number) of every version whose latest value has id ``sid``,
        by subject and version."""
        text = self.ids.get(sid)
        if text is None:
            return []
        out = []
        keys = [text.versions] if isinstance(text.versions, tuple) else text.versions or []
        for subject, version in dict.fromkeys(keys):
            packed = self.versions.get(subject, {}).get(version)
            if packed is not None:
                got, offset, file_no, flags = unpack_version(packed)
                if got == sid:
                    out.append((subject, version, flags, offset, file_no))
        return sorted(out)

    def schema_types(self) -> set[str]:
        """The schema types of the ids (the libraries a decoder needs)."""
        return {t.schema_type for t in self.ids.values()}


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
            topic.files.append(str(path))  # the fold's file number: its index here
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
        obj = json.loads(str(data, "utf-8"))  # decoded from the record's bytes in place (no copy of them first)
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
    sv = (_shared(sv[0]), sv[1])  # one string a subject (and a short text), not one a version
    by_version = topic.versions.get(sv[0])
    if value is None:
        if by_version is not None and sv[1] in by_version:
            by_version[sv[1]] = _with_flags(by_version[sv[1]], HARD)
        return None
    sid, text = value.get("id"), value.get("schema")
    if not isinstance(text, str) or not isinstance(sid, int) or isinstance(sid, bool):
        return "a SCHEMA value without a schema text and an id"
    if by_version is None:
        by_version = topic.versions[sv[0]] = {}
    by_version[sv[1]] = pack_version(sid, offset, len(topic.files) - 1, SOFT if value.get("deleted") is True else 0)
    _note_text(topic, sid, _shared(text), value, sv)
    return None


def _shared(text: str) -> str:
    return sys.intern(text) if len(text) <= 256 else text


def _note_text(topic: SchemasTopic, sid: int, text: str, value: dict[str, Any], sv: tuple[str, int]) -> None:
    schema_type = str(value.get("schemaType") or "AVRO").upper()
    refs = value.get("references")
    references = tuple((str(r.get("name", "")), str(r.get("subject", "")), r.get("version"))
                       for r in refs if isinstance(r, dict)) if isinstance(refs, list) else ()
    guid = value.get("guid") if isinstance(value.get("guid"), str) else None
    known = topic.ids.get(sid)
    if known is None:
        known = topic.ids[sid] = SchemaText(text, schema_type, references, guid)
    elif (known.text, known.schema_type, known.references) != (text, schema_type, references):
        known.text, known.schema_type, known.references = text, schema_type, references  # the last one wins
    if guid is not None:
        known.guid = guid
        topic.guids[guid.lower()] = sid
    if known.versions is None:
        known.versions = sv
    elif isinstance(known.versions, tuple):
        if known.versions != sv:
            known.versions = [known.versions, sv]
    elif known.versions[-1] != sv:
        known.versions.append(sv)


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
    flag = HARD if key["keytype"] == "CLEAR_SUBJECT" else SOFT
    by_version = topic.versions.get(subject, {})
    for v, packed in by_version.items():
        if not isinstance(upto, int) or v <= upto:
            by_version[v] = _with_flags(packed, flag)
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

__all__ = ["Located", "SchemaText", "pack_version", "unpack_version", "SOFT", "HARD", "Setting", "SchemasTopic", "segments_of", "read_schemas_topic", "MAX_FINDINGS"]
