"""The line format of Kafka's ``kafka-dump-log.sh`` (``DumpLogSegments``).

Scripts written against Kafka's tool should keep working on
``kafkadump batches|records --format dump-log``.  The reference is the
modern tool (Kafka 3.x ``kafka.tools.DumpLogSegments`` and its 4.x Java
port ``org.apache.kafka.tools.DumpLogSegments``); this module only formats
the decoded objects, it never decodes or prints.

Per file::

    Dumping PATH
    Log starting offset: N            (NNNNNNNNNNNNNNNNNNNN.log file names)

Per v2 batch (one line; ``position`` is the batch's byte position)::

    baseOffset: B lastOffset: L count: C baseSequence: S lastSequence: S
    producerId: P producerEpoch: E partitionLeaderEpoch: LE isTransactional: false
    isControl: false deleteHorizonMs: OptionalLong.empty position: POS
    CreateTime: MAXTS size: SIZE magic: 2 compresscodec: none crc: CRC isvalid: true

Per legacy (magic 0/1) top-level message, ``offset`` is the wrapper's
(= last) offset, and magic 0 has ``NoTimestampType: -1``::

    offset: O position: POS CreateTime: TS size: SIZE magic: 1 compresscodec: gzip crc: CRC isvalid: true

Per record (``records`` mode: Kafka's ``--print-data-log``)::

    | offset: O CreateTime: TS keySize: K valueSize: V sequence: S headerKeys: [a,b] key: k payload: v
    | offset: O CreateTime: TS keySize: K valueSize: V isValid: true crc: CRC key: k payload: v   (magic 0/1)
    | offset: O CreateTime: TS keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 7

KRaft control records are printed decoded, as Kafka 4.x prints them: the
label, then the value as compact JSON with the schema's field names
(``LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],
"grantingVoters":[{"voterId":1}]}``; ``SnapshotHeader {...}``,
``SnapshotFooter {...}``, ``KRaftVersion {...}``, ``KRaftVoters {...}``).

With ``--decode KIND`` (what kafka-dump-log's ``--offsets-decoder``,
``--transaction-log-decoder``, ``--share-group-state-decoder``,
``--cluster-metadata-decoder`` do; ``auto`` decodes nothing here, as Kafka
decodes only when asked) keys and payloads are JSON::

    key: {"type":"1","data":{"group":"g","topic":"t","partition":0}} payload: {"version":"3","data":{...}}
    key: {"type":"2","data":{"group":"g"}} payload: <DELETE>                       (a tombstone)
    payload: {"type":"TOPIC_RECORD","version":0,"data":{"name":"t","topicId":"..."}}   (metadata: no key)
    key: Unknown record type 99 at offset 7, skipping.
    key: Error at offset 7, skipping. MESSAGE           (metadata: payload: Error at 7, skipping. MESSAGE)

Bytes fields are base64 and UUIDs Kafka's base64 form, as Kafka's JSON
converters write them; the consumer protocol's subscription and assignment
inside group metadata are decoded objects, as Kafka 4.x decodes them.

Timestamps are the batch's timestamp type name and the record's effective
timestamp (the batch's maxTimestamp under LogAppendTime); sizes are -1 for
null; ``key:`` is left out for a null key and ``payload:`` for a null value;
control records carry no key/payload, as in Kafka.  Keys and payloads are
UTF-8 text with invalid bytes replaced as Java replaces them (``new
String(bytes, UTF_8)``: an encoded surrogate is one U+FFFD, not three),
newlines printed as they are, other control characters escaped.

Lines Kafka never prints start with ``# kafkadump: `` so scripts can skip
them; all their fields are ``name: value`` pairs, the free-text message last::

    # kafkadump: not-a-batch position: POS size: N
    # kafkadump: CODE severity: SEV position: P [decompressedPosition: D] [length: N] message: TEXT

``position`` (like Kafka's own ``position:``) is a byte position in the
file; the finding lines follow the batch (or gap) line they belong to,
before its records (a record's decoding findings follow its own line).  A gap that is a cut-off tail (a ``truncated``
finding) is also reported as Kafka reports one:
``Found N invalid bytes at the end of FILENAME``.

Where kafkadump departs from Kafka, deliberately:

* Kafka's DumpLogSegments (the Scala tool, still that in 4.1.1) prints a
  stray ``}`` after a legacy record's crc (``crc: 123}``); we do not.
* A KRaft control record's body that does not decode (a finding says
  why) is shown after Kafka's label as ``0x...`` hex, where Kafka throws.
* ``--decode remote-log-metadata`` prints the payload as the other
  decoders' JSON (``{"type":"RemoteLogSegmentMetadataRecord","version":V,
  "data":{...}}``) where Kafka prints its Java objects' ``toString()``.
* Where Kafka throws (a control key too short to name a type, a marker
  value too short, zero padding, an unknown magic) the line is printed
  with what is known and a ``# kafkadump:`` finding line says the rest.
* ``Log starting offset`` is printed only for 20-digit segment names
  (also ``.log.deleted`` and the like); KRaft snapshot names
  (``<offset>-<epoch>.checkpoint``) give Kafka's ``Snapshot end offset`` line.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TextIO

from kafkadump.decoders.batches.model import Batch, Gap, Record, record_chunks
from kafkadump.decoders.internal_topics import constants as K
from kafkadump.decoders.internal_topics.decoded import Part
from kafkadump.render.java_utf8 import java_string
from kafkadump.render.lines import terminal_safe

if TYPE_CHECKING:
    from rich.console import Console

    from kafkadump.base.findings import Finding
    from kafkadump.decoders.internal_topics.decoded import DecodedRecord
    from kafkadump.decoders.payloads.view import RecordView
    from kafkadump.reports.segments import FileStart, RecordsOf

_SEGMENT_NAME = re.compile(r"^(\d{20})\.log(?:\.[A-Za-z]+)*$")
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")

# Kafka's labels for the KRaft control records whose body it prints as JSON
_CONTROL_LABELS = {
    "LEADER_CHANGE": " LeaderChange: ",
    "SNAPSHOT_HEADER": " SnapshotHeader ",
    "SNAPSHOT_FOOTER": " SnapshotFooter ",
    "KRAFT_VERSION": " KRaftVersion ",
    "KRAFT_VOTERS": " KRaftVoters ",
}

_NOTE = "# kafkadump: "


def file_header(path: str) -> str:
    """``Dumping PATH`` and, as Kafka does, the start offset from the file name."""
    name = os.path.basename(str(path))
    out = f"Dumping {path}\n"
    m = _SEGMENT_NAME.match(name)
    if m:
        out += f"Log starting offset: {int(m.group(1))}\n"
    elif name == "bootstrap.checkpoint":
        out += "KRaft bootstrap snapshot\n"
    else:
        m = _SNAPSHOT_NAME.match(name)
        if m:
            out += f"Snapshot end offset: {int(m.group(1))}, epoch: {int(m.group(2))}\n"
    return out


def render(item: Batch | Gap, records: bool | list[Record] = False,
           keep: Callable[[Record], bool] | None = None) -> str:
    """One batch (or gap) as kafka-dump-log lines, with records when asked: ``records`` True
    for all of them (those ``keep`` keeps, when given), or the list of records to show."""
    if isinstance(item, Gap):
        return _gap(item)
    lines = [_batch_line(item)]
    lines.extend(_finding_lines(item.findings))
    text = "\n".join(lines) + "\n"
    shown = item.records if records is True else (records or None)
    if shown:
        text += "".join(record_lines(item, chunk, keep) for chunk in record_chunks(shown))
    return text


def record_lines(item: Batch, recs: Iterable[Record], keep: Callable[[Record], bool] | None = None,
                 decoded: dict[int, DecodedRecord] | None = None, views: dict[int, RecordView] | None = None) -> str:
    """Records of ``item`` (those ``keep`` keeps, when given) as newline-terminated kafka-dump-log lines;
    ``decoded``: their decoding (by ``id`` of the record), for control records and ``--decode``;
    ``views``: what the payload options made of them (decoded payloads, redaction)."""
    line = _v2_record_line if item.magic >= 2 else _legacy_record_line
    control = item.is_control
    out = []
    for r in recs:
        if keep is None or keep(r):
            dec = None if decoded is None else decoded.get(id(r))
            text = line(r, item, control, dec)
            view = None if views is None else views.get(id(r))
            if view is not None and not control:
                text = text[: len(text) - len(_contents(r, dec))] + _view_contents(r, view)
            out.append(text + "\n")
            if dec is not None and dec.findings:
                out.extend(x + "\n" for x in _finding_lines(dec.findings))
    return "".join(out)


def write_batch_with_records(item: Batch, records: Iterable[Record], out: TextIO,
                             decoded: list[DecodedRecord] | None = None,
                             views: list[RecordView] | None = None) -> None:
    """One batch and its ``records`` (a list or a stream; with ``decoded``, their decoding, a list
    parallel to them; with ``views``, the payload views), a run of records at a time; control
    characters from the input escaped."""
    out.write(terminal_safe(render(item, records=[]), keep_newlines=True))
    by_record = None
    if decoded is not None:
        records = list(records)
        by_record = {id(r): d for r, d in zip(records, decoded)}
    by_view = None
    if views is not None:
        records = list(records)
        by_view = {id(r): v for r, v in zip(records, views)}
    for chunk in record_chunks(records, item.payload_bytes):
        out.write(terminal_safe(record_lines(item, chunk, decoded=by_record, views=by_view), keep_newlines=True))


# --- values ----------------------------------------------------------------------

def _v(x: object) -> str:
    """A value as Java string concatenation shows it (null for missing)."""
    if x is None:
        return "null"
    if x is True:
        return "true"
    if x is False:
        return "false"
    return str(x)


def _text(b: bytes) -> str:
    """Key/payload bytes as Kafka's StringDecoder shows them: Java's UTF-8 decoding, invalid bytes
    replaced by Java's rules (:mod:`kafkadump.render.java_utf8`)."""
    return java_string(b)


def _ts_type(b: Batch) -> str:
    return b.timestamp_type or "NoTimestampType"


def _one_line(s: str) -> str:
    return s.replace("\r", "\\r").replace("\n", "\\n")


# --- batches ---------------------------------------------------------------------

def _batch_line(b: Batch) -> str:
    if b.magic >= 2:
        horizon = (f"OptionalLong[{b.base_timestamp}]" if b.has_delete_horizon
                   else "OptionalLong.empty")
        head = (f"baseOffset: {_v(b.base_offset)} lastOffset: {_v(b.last_offset)} count: {_v(b.record_count)}"
                f" baseSequence: {_v(b.base_sequence)} lastSequence: {_v(_last_sequence(b))}"
                f" producerId: {_v(b.producer_id)} producerEpoch: {_v(b.producer_epoch)}"
                f" partitionLeaderEpoch: {_v(b.partition_leader_epoch)}"
                f" isTransactional: {_v(b.is_transactional)} isControl: {_v(b.is_control)}"
                f" deleteHorizonMs: {horizon}")
        max_ts = b.max_timestamp
    else:
        head = f"offset: {_v(b.last_offset)}"
        max_ts = b.timestamp if b.magic >= 1 else None
    return (f"{head} position: {b.position} {_ts_type(b)}: {-1 if max_ts is None else max_ts}"
            f" size: {b.size} magic: {b.magic} compresscodec: {b.compression}"
            f" crc: {_v(b.crc)} isvalid: {_v(b.crc_valid)}")


# --- records ---------------------------------------------------------------------

def _i32(x: int) -> int:
    return ((x + 0x80000000) & 0xFFFFFFFF) - 0x80000000


def _increment_sequence(seq: int, inc: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence, in Java int arithmetic (wraps past INT32_MAX to 0)."""
    if seq > _i32(0x7FFFFFFF - inc):
        return _i32(inc - _i32(0x7FFFFFFF - seq) - 1)
    return _i32(seq + inc)


def _last_sequence(b: Batch) -> int | None:
    """DefaultRecordBatch.lastSequence: -1 only for baseSequence -1, else incremented (even if odd)."""
    if b.base_sequence is None or b.last_offset_delta is None:
        return None
    if b.base_sequence == -1:
        return -1
    return _increment_sequence(b.base_sequence, b.last_offset_delta)


def _sequence(b: Batch, r: Record) -> int:
    """DefaultRecord.sequence: -1 unless the batch's baseSequence is >= 0."""
    base = b.base_sequence
    if base is None or base < 0 or r.offset_delta is None:
        return -1
    return _increment_sequence(base, r.offset_delta)


def _contents(r: Record, dec: DecodedRecord | None = None) -> str:
    if dec is not None:
        return kafka_decoded_contents(r, dec)
    out = ""
    if r.key is not None:
        out += " key: " + _text(r.key)
    if r.value is not None:
        out += " payload: " + _text(r.value)
    return out


def _view_contents(r: Record, view: RecordView) -> str:
    """`` key: ... payload: ...`` with the payload options applied: a redacted key or value as
    ``sha256:<hex> (n bytes)``, a decoded one as its compact JSON."""
    from kafkadump.decoders.payloads.redact import digest_line

    out = ""
    for which, label, b in (("key", "key", r.key), ("value", "payload", r.value)):
        if b is None:
            continue
        side = view.side(which)
        if view.secret and which == "value":
            out += f" {label}: [redacted secret] ({len(b)} bytes)"
        elif view.masked_whole(which):  # --redact (even a decoded payload), or --redact-fields and not parsed
            out += f" {label}: {digest_line(b)}"
        elif side is not None and side.decoded is not None and side.decoded.ok:
            out += f" {label}: " + kafka_json(side.decoded.value)
        else:
            out += f" {label}: " + _text(b)
    return out


def _control(r: Record, dec: DecodedRecord | None = None) -> str:
    ctl = r.control
    if not ctl:
        return ""
    ctype = ctl.get("type")
    if ctype in ("ABORT", "COMMIT"):
        out = f" endTxnMarker: {ctype}"
        if "coordinatorEpoch" in ctl:
            out += f" coordinatorEpoch: {ctl['coordinatorEpoch']}"
        return out
    label = _CONTROL_LABELS.get(ctype)
    if label is not None:
        value = None if dec is None else dec.value
        if value is not None and value.data is not None and not value.partial:
            return label + kafka_json(value.data)
        return label + ("null" if r.value is None else "0x" + bytes(r.value).hex())
    if ctype is None:  # key too short to name a type; the finding says so
        return ""
    return f" controlType: {ctype}"  # UNKNOWN(n), as Kafka prints an unknown type


def _record_head(r: Record, b: Batch) -> str:
    ts = -1 if r.timestamp is None else r.timestamp
    return (f"| offset: {r.offset} {_ts_type(b)}: {ts}"
            f" keySize: {-1 if r.key is None else len(r.key)}"
            f" valueSize: {-1 if r.value is None else len(r.value)}")


def _v2_record_line(r: Record, b: Batch, control: bool, dec: DecodedRecord | None = None) -> str:
    keys = ",".join(k for k, _ in r.headers)
    line = f"{_record_head(r, b)} sequence: {_sequence(b, r)} headerKeys: [{keys}]"
    if control:
        return line + _control(r, dec)
    return line + _contents(r, dec)


def _legacy_record_line(r: Record, b: Batch, control: bool, dec: DecodedRecord | None = None) -> str:
    return (f"{_record_head(r, b)} isValid: {_v(r.crc_valid)} crc: {_v(r.crc)}"
            + _contents(r, dec))


# --- decoded values, as Kafka's JSON converters and message parsers write them ---------------------

def _jackson(v: object, floats: list[float]) -> object:
    """``v`` as Kafka's generated JSON converters give it: bytes as base64, an embedded decoded
    payload (the consumer protocol inside group metadata) as its object; finite floats (written as
    Java writes doubles) are added to ``floats``."""
    if isinstance(v, Part):
        return _jackson(v.data, floats) if v.data is not None else base64.b64encode(bytes(v.raw)).decode()
    if isinstance(v, dict):
        return {k: _jackson(x, floats) for k, x in v.items()}
    if isinstance(v, list):
        return [_jackson(x, floats) for x in v]
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode()
    if isinstance(v, float):
        if not math.isfinite(v):
            return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
        floats.append(v)
    return v


def java_double(x: float) -> str:
    """A finite double as Java's ``Double.toString`` (and so Jackson) writes it: positional from 10^-3
    to 10^7 (``1024.0``, ``0.002``), else ``1.048576E7``, ``1.0E-4``; the shortest digits that read back."""
    from decimal import Decimal

    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    text = repr(x)
    if 1e-3 <= abs(x) < 1e7:
        return text                      # repr is positional here, with ".0" when integral
    sign, digits, exp = Decimal(text).as_tuple()
    assert isinstance(exp, int)
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    return f"{'-' if sign else ''}{ds[0]}.{ds[1:] or '0'}E{exp + len(digits) - 1}"


def _java_json(v: object) -> str:
    """JSON of a converted value (:func:`_jackson`) holding finite floats, each as :func:`java_double`."""
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + _java_json(x) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(_java_json(x) for x in v) + "]"
    if isinstance(v, float):
        return java_double(v)
    return json.dumps(v, ensure_ascii=False)


# a control character's escape as json.dumps writes it (lowercase hex), not after an escaped backslash
_CONTROL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u00([0-9a-f]{2})")


def _upper_escape(m: re.Match[str]) -> str:
    return f"{m.group(1)}\\u00{m.group(2).upper()}"


def kafka_json(data: object) -> str:
    """A decoded struct as compact JSON, the field names the schema's (Jackson's ``toString``: a
    control character in a string is escaped with uppercase hex, ``\\u001F``; a double as Java's
    ``Double.toString``, ``1.048576E7``)."""
    floats: list[float] = []
    value = _jackson(data, floats)
    text = _java_json(value) if floats else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return _CONTROL_ESCAPE.sub(_upper_escape, text) if "\\u00" in text else text


_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def metadata_type_name(schema: str) -> str:
    """``TopicRecord`` -> ``TOPIC_RECORD``: the name of Kafka's MetadataRecordType."""
    return _SNAKE.sub("_", schema).upper()


def _broken(part: Part | None) -> bool:
    return part is not None and (part.data is None or part.partial)


def kafka_decoded_contents(r: Record, dec: DecodedRecord) -> str:
    """`` key: ... payload: ...`` of a record of an internal topic, as kafka-dump-log's decoders print it."""
    if dec.kind in (K.METADATA, K.REMOTE_LOG_METADATA):
        v = dec.value
        if v is None or _broken(v) or v.schema is None:
            why = dec.findings[0].message if dec.findings else "the value does not decode"
            return f" payload: Error at {r.offset}, skipping. {why}"
        name = metadata_type_name(v.schema) if dec.kind == K.METADATA else v.schema
        return " payload: " + kafka_json({"type": name, "version": v.version, "data": v.data})
    k, v = dec.key, dec.value
    if k is None:
        return f" key: Error at offset {r.offset}, skipping. the record has no key"
    if k.schema is None and k.version is not None:
        return f" key: Unknown record type {k.version} at offset {r.offset}, skipping."
    if _broken(k) or _broken(v) or (v is not None and v.schema is None):
        why = dec.findings[0].message if dec.findings else "the record does not decode"
        return f" key: Error at offset {r.offset}, skipping. {why}"
    out = " key: " + kafka_json({"type": str(k.version), "data": k.data})
    if v is None:
        return out + " payload: <DELETE>"
    return out + " payload: " + kafka_json({"version": str(v.version), "data": v.data})


# --- damage ----------------------------------------------------------------------

def _finding_lines(findings: Iterable[Finding]) -> list[str]:
    out: list[str] = []
    for f in findings:
        line = f"{_NOTE}{f.code.value} severity: {f.severity.value} position: {f.offset}"
        if f.source_offset is not None:
            line += f" decompressedPosition: {f.source_offset}"
        if f.length is not None:
            line += f" length: {f.length}"
        out.append(line + " message: " + _one_line(f.message))
    return out


def _gap(g: Gap) -> str:
    lines = [f"{_NOTE}not-a-batch position: {g.position} size: {g.size}"]
    lines.extend(_finding_lines(g.findings))
    if any(f.code.value == "truncated" for f in g.findings):
        # Kafka stops at a cut-off tail and says so in these words.
        lines.append(f"Found {g.size} invalid bytes at the end of {os.path.basename(str(g.file))}")
    return "\n".join(lines) + "\n"


# --- whole reports (items from kafkadump.reports.segments) ------------------------------------------------

def write_batch_report(items: Iterable[FileStart | Batch | Gap], out: TextIO,
                       console: Console | None = None) -> None:
    """``batches -f dump-log``: a header per file, a line per batch."""
    from kafkadump.reports.segments import FileStart

    for item in items:
        text = file_header(item.path) if isinstance(item, FileStart) else render(item, records=False)
        out.write(terminal_safe(text, keep_newlines=True))


def write_record_report(items: Iterable[FileStart | Gap | RecordsOf], out: TextIO,
                        console: Console | None = None) -> None:
    """``records -f dump-log``: batches with their kept records; batches with nothing to show are left out."""
    from kafkadump.reports.segments import FileStart

    for item in items:
        if isinstance(item, FileStart):
            out.write(terminal_safe(file_header(item.path), keep_newlines=True))
        elif isinstance(item, Gap):
            out.write(terminal_safe(render(item), keep_newlines=True))
        elif item.shown:
            write_batch_with_records(item.batch, item.records, out, item.decoded, item.views)
