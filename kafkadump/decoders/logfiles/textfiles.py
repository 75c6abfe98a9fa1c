"""The small text files of a log dir: checkpoints, properties, partition metadata, quorum state.

    offset checkpoints (recovery-point-offset-checkpoint, replication-offset-checkpoint,
    log-start-offset-checkpoint, cleaner-offset-checkpoint), one per log dir
        0                          version
        N                          number of entries
        TOPIC PARTITION OFFSET     N lines

    leader-epoch-checkpoint, one per partition
        0
        N
        EPOCH START_OFFSET         N lines; both strictly increase

    partition.metadata
        version: 0
        topic_id: BASE64           a 16-byte topic UUID, URL-safe base64 without padding

    meta.properties                Java properties
        version=0                  broker.id=N [cluster.id=...]       (ZooKeeper mode)
        version=1                  node.id=N cluster.id=... [directory.id=...]   (KRaft)

    quorum-state                   JSON (QuorumStateData): leaderId, leaderEpoch, votedId,
                                   appliedOffset, currentVoters, data_version 0 or 1

Every decoder returns ``(content, findings)``: ``content`` is a JSON-ready
dict in camelCase, findings carry the byte offset of the line at fault.
"""

from __future__ import annotations

import base64
import binascii
import json
import mmap
from collections.abc import Callable, Iterator
from typing import Any

from kafkadump.base.findings import Code, Finding
from kafkadump.decoders.logfiles import names
from kafkadump.sources.segment import page_releaser

# what every decoder returns: the file's content (JSON-ready, camelCase) and its findings
Decoded = tuple[dict[str, Any], list[Finding]]
RELEASE_STEP = 8 << 20
# a file's bytes: in memory, or its read-only mapping
ByteBuffer = bytes | bytearray | mmap.mmap


def _lines(data: bytes) -> Iterator[tuple[int, str]]:
    """``(byte offset, text)`` of each line; invalid UTF-8 is replaced."""
    pos = 0
    for raw in data.split(b"\n"):
        yield pos, raw.rstrip(b"\r").decode("utf-8", "replace")
        pos += len(raw) + 1


def _buffer_lines(buf: ByteBuffer) -> Iterator[tuple[int, str]]:
    """``(byte offset, text)`` of each line of ``buf`` (bytes or a mapping), one at a time; a final
    newline ends the last line (no empty line after it); invalid UTF-8 is replaced."""
    pos, n = 0, len(buf)
    release = page_releaser(buf)  # a mapping: its pages behind are handed back as it is read
    released = 0
    while pos < n:
        if release is not None and pos - released >= RELEASE_STEP:
            release(pos)
            released = pos
        nl = buf.find(b"\n", pos)
        stop = n if nl < 0 else nl
        yield pos, bytes(buf[pos:stop]).rstrip(b"\r").decode("utf-8", "replace")
        pos = stop + 1


class CheckpointText:
    """A checkpoint file read line by line: :attr:`version` and :attr:`count` from its first lines,
    then :meth:`entries` one at a time; :attr:`findings` grows as they are read (and is complete
    once they are).  Memory is one line, whatever the file's size."""

    def __init__(self, buf: ByteBuffer, kind: str):
        self.kind = kind
        self.size = len(buf)
        self.findings: list[Finding] = []
        self.version: int | None = None
        self.count: int | None = None
        self._lines = _buffer_lines(buf)
        self._ok = self._header()

    def content(self) -> dict[str, Any]:
        """The header fields, JSON-ready (``entries`` apart)."""
        return {"version": self.version, "count": self.count}

    def _header(self) -> bool:
        first = next(self._lines, None)
        if first is None:  # Kafka creates a checkpoint file empty and reads an empty one as no entries
            self.count = 0
            return False
        p, t = first
        try:
            self.version = int(t.strip())
        except ValueError:
            self.findings.append(Finding(Code.FILE_MALFORMED, p, f"version line {t!r} is not a number"))
            return False
        if self.version != 0:
            self.findings.append(Finding(Code.FILE_VERSION_UNKNOWN, p, f"checkpoint version {self.version} "
                                                                       f"(only 0 is defined)"))
            return False
        second = next(self._lines, None)
        if second is None:
            self.findings.append(Finding(Code.FILE_MALFORMED, self.size, "no entry-count line"))
            return False
        self._count_at, t = second
        try:
            self.count = int(t.strip())
        except ValueError:
            self.findings.append(Finding(Code.FILE_MALFORMED, self._count_at, f"entry-count line {t!r} is not a number"))
            return False
        return True

    def entries(self) -> Iterator[dict[str, Any]]:
        """The entries that parse and pass their checks, in file order (each with its ``position``)."""
        if not self._ok:
            return
        fields, parse, check = _CHECKPOINTS[self.kind]
        lines = 0
        prev: dict[str, Any] | None = None
        for p, t in self._lines:
            lines += 1
            entry = self._parse(p, t, fields, parse)
            if entry is None:
                continue
            problem = check(entry, prev)
            if problem is not None:
                self.findings.append(problem)  # reported, and not the next entry's reference
            else:
                prev = entry
            yield entry
        if self.count != lines:
            self.findings.append(Finding(Code.FILE_MALFORMED, self._count_at,
                                         f"{self.count} entries declared, {lines} lines follow"))

    def _parse(self, p: int, t: str, fields: int, parse: Callable[[list[str]], dict[str, Any]]
               ) -> dict[str, Any] | None:
        parts = t.split()
        if len(parts) != fields:
            self.findings.append(Finding(Code.FILE_MALFORMED, p, f"line {t!r} does not have {fields} fields"))
            return None
        try:
            entry = parse(parts)
        except ValueError:
            self.findings.append(Finding(Code.FILE_MALFORMED, p, f"line {t!r} holds a non-numeric field"))
            return None
        entry["position"] = p
        return entry


def _offset_entry_problem(e: dict[str, Any], prev: dict[str, Any] | None) -> Finding | None:
    if e["partition"] < 0 or e["offset"] < -1:
        return Finding(Code.ENTRY_INVALID, e["position"], f"{e['topic']}-{e['partition']}: offset {e['offset']}")
    return None


def _epoch_entry_problem(e: dict[str, Any], prev: dict[str, Any] | None) -> Finding | None:
    if e["epoch"] < 0 or e["startOffset"] < 0:
        return Finding(Code.ENTRY_INVALID, e["position"], f"epoch {e['epoch']} start offset {e['startOffset']}")
    if prev is not None and (e["epoch"] <= prev["epoch"] or e["startOffset"] < prev["startOffset"]):
        return Finding(Code.LEADER_EPOCH_MISMATCH, e["position"],
                       f"epoch {e['epoch']} at {e['startOffset']} does not follow epoch "
                       f"{prev['epoch']} at {prev['startOffset']} (both must increase)")
    return None


_CHECKPOINTS: dict[str, tuple[int, Callable[[list[str]], dict[str, Any]],
                              Callable[[dict[str, Any], dict[str, Any] | None], Finding | None]]] = {
    names.OFFSET_CHECKPOINT: (3, lambda f: {"topic": f[0], "partition": int(f[1]), "offset": int(f[2])},
                              _offset_entry_problem),
    names.LEADER_EPOCH_CHECKPOINT: (2, lambda f: {"epoch": int(f[0]), "startOffset": int(f[1])},
                                    _epoch_entry_problem),
}
CHECKPOINT_KINDS = frozenset(_CHECKPOINTS)


def _checkpoint(data: bytes, kind: str) -> Decoded:
    text = CheckpointText(data, kind)
    content: dict[str, Any] = text.content()
    content["entries"] = list(text.entries())
    return content, text.findings


def decode_offset_checkpoint(data: bytes) -> Decoded:
    return _checkpoint(data, names.OFFSET_CHECKPOINT)


def decode_leader_epoch_checkpoint(data: bytes) -> Decoded:
    return _checkpoint(data, names.LEADER_EPOCH_CHECKPOINT)


def _topic_id(text: str) -> str | None:
    """URL-safe base64 UUID (22 chars) -> canonical UUID string, or None."""
    import uuid

    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    return str(uuid.UUID(bytes=raw)) if len(raw) == 16 else None


def decode_partition_metadata(data: bytes) -> Decoded:
    findings: list[Finding] = []
    content: dict[str, Any] = {"version": None, "topicId": None}
    seen: dict[str, tuple[int, str]] = {}
    for p, t in _lines(data):
        if not t.strip():
            continue
        key, sep, value = t.partition(":")
        if not sep:
            findings.append(Finding(Code.FILE_MALFORMED, p, f"line {t!r} is not 'key: value'"))
            continue
        seen[key.strip()] = (p, value.strip())
    if "version" not in seen:
        findings.append(Finding(Code.FILE_MALFORMED, 0, "no 'version:' line"))
    else:
        p, v = seen["version"]
        try:
            content["version"] = int(v)
        except ValueError:
            findings.append(Finding(Code.FILE_MALFORMED, p, f"version {v!r} is not a number"))
        else:
            if content["version"] != 0:
                findings.append(Finding(Code.FILE_VERSION_UNKNOWN, p, f"version {v} (only 0 is defined)"))
    if "topic_id" not in seen:
        findings.append(Finding(Code.FILE_MALFORMED, 0, "no 'topic_id:' line"))
    else:
        p, v = seen["topic_id"]
        content["topicId"] = v
        uid = _topic_id(v)
        if uid is None:
            findings.append(Finding(Code.FILE_MALFORMED, p, f"topic_id {v!r} is not a base64 UUID"))
        else:
            content["topicUuid"] = uid
    return content, findings


def decode_meta_properties(data: bytes) -> Decoded:
    findings: list[Finding] = []
    props: dict[str, str] = {}
    for p, t in _lines(data):
        s = t.strip()
        if not s or s[0] in "#!":
            continue
        for i, ch in enumerate(s):
            if ch in "=:":
                k, v = s[:i].strip(), s[i + 1:].strip()
                break
        else:
            findings.append(Finding(Code.FILE_MALFORMED, p, f"line {t!r} is not key=value"))
            continue
        props[k] = v
    content: dict[str, Any] = {"properties": props, "version": None}
    version = props.get("version")
    if version is None:
        findings.append(Finding(Code.FILE_MALFORMED, 0, "no version property"))
        return content, findings
    try:
        content["version"] = int(version)
    except ValueError:
        findings.append(Finding(Code.FILE_MALFORMED, 0, f"version {version!r} is not a number"))
        return content, findings
    required = {0: ("broker.id",), 1: ("node.id", "cluster.id")}.get(content["version"])
    if required is None:
        findings.append(Finding(Code.FILE_VERSION_UNKNOWN, 0,
                                f"meta.properties version {version} (0 and 1 are defined)"))
        return content, findings
    for k in required:
        if k not in props:
            findings.append(Finding(Code.FILE_MALFORMED, 0, f"version {version} requires {k}"))
    for k in ("broker.id", "node.id"):
        if k in props and not props[k].lstrip("-").isdigit():
            findings.append(Finding(Code.FILE_MALFORMED, 0, f"{k}={props[k]!r} is not a number"))
    content["nodeId"] = props.get("node.id", props.get("broker.id"))
    content["clusterId"] = props.get("cluster.id")
    content["directoryId"] = props.get("directory.id")
    return content, findings


def decode_quorum_state(data: bytes) -> Decoded:
    findings: list[Finding] = []
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        at = getattr(e, "pos", getattr(e, "start", 0)) or 0
        why = (str(e).splitlines() or ["nested too deeply"])[0]
        findings.append(Finding(Code.FILE_MALFORMED, at, f"not JSON: {why}"))
        return {"state": None}, findings
    if not isinstance(obj, dict):
        findings.append(Finding(Code.FILE_MALFORMED, 0, "not a JSON object"))
        return {"state": obj}, findings
    dv = obj.get("data_version")
    if dv not in (0, 1):
        findings.append(Finding(Code.FILE_VERSION_UNKNOWN, 0, f"data_version {dv!r} (0 and 1 are defined)"))
    for k in ("leaderId", "leaderEpoch", "votedId"):
        if k in obj and not isinstance(obj[k], int):
            findings.append(Finding(Code.FILE_MALFORMED, 0, f"{k} is {obj[k]!r}, not an integer"))
    return {"state": obj, "dataVersion": dv, "leaderId": obj.get("leaderId"),
            "leaderEpoch": obj.get("leaderEpoch")}, findings


DECODERS: dict[str, Callable[[bytes], Decoded]] = {
    names.OFFSET_CHECKPOINT: decode_offset_checkpoint,
    names.LEADER_EPOCH_CHECKPOINT: decode_leader_epoch_checkpoint,
    names.PARTITION_METADATA: decode_partition_metadata,
    names.META_PROPERTIES: decode_meta_properties,
    names.QUORUM_STATE: decode_quorum_state,
}

# text files are small; a larger one is not what its name says
MAX_TEXT_BYTES = 64 << 20


__all__ = ["CheckpointText", "CHECKPOINT_KINDS", "DECODERS", "decode_offset_checkpoint", "decode_leader_epoch_checkpoint",
           "decode_partition_metadata", "decode_meta_properties", "decode_quorum_state", "MAX_TEXT_BYTES"]
