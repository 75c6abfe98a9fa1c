"""Keys and values of Kafka's internal topics, decoded by the generated schema tables.

    __consumer_offsets, __transaction_state, __share_group_state (coordinator records)
        key   => version: INT16            names the record type: the key schema whose valid
                                           versions hold it (__consumer_offsets: 0-1 OffsetCommitKey,
                                           2 GroupMetadataKey, 3-8 consumer group records (KIP-848),
                                           9-15 share group records; __transaction_state: 0
                                           TransactionLogKey; __share_group_state: 0 ShareSnapshotKey,
                                           1 ShareUpdateKey)
                 key struct               at that version
        value => version: INT16            the value schema's version (the key's name, Key -> Value)
                 value struct             at that version
                 null                     a tombstone: compaction deletes the key

    __cluster_metadata (KRaft), __remote_log_metadata (ApiMessageAndVersion frames)
        key   => null
        value => frameVersion: UNSIGNED_VARINT   1 (0 was KRaft's 2.8 preview)
                 apiKey: UNSIGNED_VARINT         the record type (metadata/*.json or storage/*.json)
                 version: UNSIGNED_VARINT
                 record                          at that version; no byte may follow

    control records (control batches, any topic)
        key   => version: INT16, type: INT16     ControlRecordKey (0 ABORT, 1 COMMIT, 2 LEADER_CHANGE,
                                                 3 SNAPSHOT_HEADER, 4 SNAPSHOT_FOOTER, 5 KRAFT_VERSION,
                                                 6 KRAFT_VOTERS)
        value => ABORT/COMMIT: EndTxnMarker (version: INT16, coordinatorEpoch: INT32)
                 2..6: LeaderChangeMessage, SnapshotHeaderRecord, SnapshotFooterRecord,
                 KRaftVersionRecord, VotersRecord, read at version 0 as Kafka reads them
                 (each carries its own Version field)

    consumer protocol, embedded (GroupMetadataValue members when protocolType is "consumer";
    ConsumerGroupMemberMetadataValue.classicMemberMetadata.supportedProtocols[].metadata)
        subscription => version: INT16, ConsumerProtocolSubscription
        assignment   => version: INT16, ConsumerProtocolAssignment
        a version newer than the tables is read with the newest layout and may carry
        trailing bytes, as Kafka's ConsumerProtocol reads it

Everything schema-shaped goes through the one schema decoder,
:func:`kafkadump.decoders.protocol.decoder.decode_struct`; this module adds only the
prefixes above and the choice of schema.  Bad bytes become findings
(``internal-*`` codes, plus the schema decoder's tagged-field codes), never
exceptions; what cannot be decoded stays available as raw bytes.

Findings carry absolute offsets: a key or value in the file is addressed
directly; one inside a compressed batch is anchored at the compressed
payload with ``source_offset`` in the decompressed bytes (as everywhere in
kafkadump).  Where a key and a value start is kept on the record by the
batch decoder (:func:`record_locations` reads it); the hexdump path uses the
spans, which say the same.
"""

from __future__ import annotations

import re
from typing import Any

from kafkadump.base.findings import Code, DecodeError, Finding, Truncated
from kafkadump.decoders.batches import primitives as P
from kafkadump.decoders.batches.control import (
    CONTROL_TYPES,
    CONTROL_VALUE_SCHEMAS,
    END_TXN_SIZE,
    END_TXN_TYPES,
    control_type_name,
    read_control_key,
    read_end_txn_marker,
)
from kafkadump.decoders.batches.model import Batch, Gap, Record, Span
from kafkadump.decoders.internal_topics import constants as K
from kafkadump.decoders.internal_topics import newer_records as LATER
from kafkadump.decoders.internal_topics.decoded import DecodedRecord, Part
from kafkadump.decoders.internal_topics.kinds import (
    kind_from_path,  # noqa: F401  (re-exported)
    resolve_kind,  # noqa: F401  (re-exported)
)
from kafkadump.decoders.internal_topics.plain_records import (
    EMBEDDING,
    PlainReader,
    embedded_payloads,
    record_entry,
)
from kafkadump.decoders.payloads.redact import holds_secrets
from kafkadump.decoders.protocol import schema as S
from kafkadump.decoders.protocol.decoder import State, decode_struct

# where a key or value starts: (position, source, file offset its findings anchor at or None)
Loc = tuple[int, str, int | None]

# the schema decoder's stopping error for a field that does not decode, as this layer names it
_REMAP = {Code.FIELD_MALFORMED: Code.INTERNAL_MALFORMED}

_COORDINATOR_GROUPS = {K.OFFSETS: "group-coordinator", K.TRANSACTIONS: "transaction-coordinator",
                       K.SHARE_STATE: "share-coordinator"}
_FRAME_GROUPS = {K.METADATA: "metadata", K.REMOTE_LOG_METADATA: "storage"}


# --- which decoder --------------------------------------------------------------------------------------

_DECODERS: dict = {}


def decoder_for(kind: str, redact_secrets: bool = True) -> Decoder:
    """The (cached) :class:`Decoder` of one kind: offsets, transactions, metadata, share-state,
    remote-log-metadata.  ``redact_secrets``: mask the secrets of KRaft records (SCRAM salts and
    keys, sensitive config values; :mod:`kafkadump.decoders.payloads.redact`), the default."""
    d = _DECODERS.get((kind, redact_secrets))
    if d is None:
        if kind not in K.KINDS:
            raise ValueError(f"unknown internal topic kind {kind!r} (one of {', '.join(K.KINDS)})")
        d = _DECODERS[(kind, redact_secrets)] = Decoder(kind, redact_secrets)
    return d


def control_decoder() -> Decoder:
    """A decoder for the records of control batches of any topic: the control path is the same for
    every kind (the key names the type; ABORT/COMMIT markers and the KRaft control records)."""
    return decoder_for(K.METADATA)


# --- schema maps, from the generated tables ---------------------------------------------------------------

def _record_entries() -> dict[str, dict]:
    """The record schemas known: the generated tables, and the newer record types they lack."""
    from kafkadump.decoders.protocol.tables.records import RECORDS

    return {**LATER.LAYOUTS, **RECORDS}


def key_schemas(group: str) -> dict[int, str]:
    """Coordinator key version -> key schema name, from the key schemas' valid versions."""
    out: dict[int, str] = {}
    for name, e in _record_entries().items():
        if e.get("group") == group and name.endswith("Key") and e["valid"] is not None:
            lo, hi = e["valid"]
            for v in range(lo, min(hi, 0x7FFF) + 1):
                out[v] = name
    return out


def frame_schemas(group: str) -> dict[int, str]:
    """apiKey -> schema name of the ``metadata``-type records of one records/ folder."""
    return {e["apiKey"]: name for name, e in _record_entries().items()
            if e.get("group") == group and e["type"] == "metadata" and "apiKey" in e}


def _range_text(versions: dict) -> str:
    """{0: "A", 1: "A", 2: "B"} -> "0-1 A, 2 B"."""
    out: list[list] = []  # [first, last, name]
    for v in sorted(versions):
        if out and out[-1][2] == versions[v] and out[-1][1] == v - 1:
            out[-1][1] = v
        else:
            out.append([v, v, versions[v]])
    return ", ".join((f"{a}" if a == b else f"{a}-{b}") + f" {n}" for a, b, n in out)


# --- where bytes are: findings and spans ------------------------------------------------------------------

class _Out:
    """One key or value: where its byte 0 is, and where its findings and spans go.

    ``start`` is in ``source`` coordinates (file, or decompressed); for a
    decompressed source ``anchor`` is the file offset findings are
    anchored at (the compressed payload), with ``source_offset``.
    """

    __slots__ = ("start", "source", "anchor", "findings", "spans", "added")

    def __init__(self, start: int, source: str, anchor: int | None, findings: list[Finding],
                 spans: list[Span] | None):
        self.start = start
        self.source = source
        self.anchor = anchor
        self.findings = findings
        self.spans = spans
        self.added: list[Span] = []

    def finding(self, code: Code, rel: int, message: str, length: int | None = None) -> None:
        pos = self.start + rel
        if self.source == "file":
            self.findings.append(Finding(code, pos, message, length=length))
        else:
            self.findings.append(Finding(code, pos if self.anchor is None else self.anchor, message,
                                         length=length, source_offset=pos))

    def adopt(self, f: Finding) -> None:
        """A finding of the schema decoder (offset = start + relative position)."""
        code = _REMAP.get(f.code, f.code)
        if self.source == "file":
            self.findings.append(Finding(code, f.offset, f.message, length=f.length))
        else:
            self.findings.append(Finding(code, f.offset if self.anchor is None else self.anchor, f.message,
                                         length=f.length, source_offset=f.offset))

    def span(self, path: str, rel: int, n: int, value: Any, raw: Any = None) -> None:
        if self.spans is not None:
            s = Span(path, self.start + rel, n, value, self.source, raw)
            self.spans.append(s)
            self.added.append(s)

    def take(self, spans: list) -> None:
        """Spans of the schema decoder (absolute offsets, source "file"): into ours."""
        if self.spans is not None:
            for s in spans:
                s.source = self.source
            self.spans.extend(spans)
            self.added.extend(spans)

    def close(self, path: str, size: int) -> None:
        """Bytes of this part no span explains become one unparsed span (tiling holds)."""
        if self.spans is None or not self.added:
            return
        covered = max(s.offset + s.length for s in self.added) - self.start
        if covered < size:
            self.span(path + ".unparsed", covered, size - covered, None, raw="unparsed")


_LAYOUTS: dict = {}


def _layout(name: str, version: int) -> tuple[tuple, bool]:
    """``(fields, flexible)`` of schema ``name`` at ``version`` (cached)."""
    k = (name, version)
    lay = _LAYOUTS.get(k)
    if lay is None:
        m = record_entry(name)
        lay = _LAYOUTS[k] = (m["fields"], S.in_range(m["flexible"], version))
    return lay


def _struct(out: _Out, name: str, version: int, raw: bytes, pos: int, path: str, want_spans: bool = False
            ) -> tuple[dict, int, DecodeError | None, list[Span] | None]:
    """Decode schema ``name`` at ``version`` from ``raw[pos:]``: ``(data, end, error, spans)``."""
    fields, flexible = _layout(name, version)
    found: list = []
    spans: list[Span] | None = [] if (out.spans is not None or want_spans) else None
    st = State(found, spans, out.start, None, "-", False, False)
    data, p, err = decode_struct(fields, version, raw, pos, len(raw), st, path, flexible)
    for f in found:
        out.adopt(f)
    if spans is not None and out.spans is not None:
        out.take(spans)
    return data, p, err, spans


def _trailing(out: _Out, raw: bytes, p: int, what: str) -> None:
    if p < len(raw):
        out.finding(Code.INTERNAL_TRAILING, p, f"{len(raw) - p} bytes after the {what}", length=len(raw) - p)


def _version16(out: _Out, raw: bytes, path: str, what: str) -> int | None:
    """The INT16 version prefix, or None (a finding) when the bytes are too short."""
    if len(raw) < 2:
        out.finding(Code.INTERNAL_MALFORMED, 0, f"{what} of {len(raw)} bytes has no INT16 version",
                    length=len(raw) or None)
        return None
    v = P.int16_at(raw, 0)
    out.span(path + "#version", 0, 2, v)
    return v


def _uvarint(raw: bytes, pos: int) -> tuple[int, int] | tuple[None, str]:
    """UNSIGNED_VARINT (at most 5 bytes, 32 bits): ``(value, next)``, or ``(None, why)``."""
    try:
        return P.decode_unsigned_varint(raw, pos, len(raw))
    except Truncated:
        return None, "runs past the end"
    except P.MalformedVarint as e:
        return None, e.reason


# --- parts ------------------------------------------------------------------------------------------------

def _coordinator_key(out: _Out, raw: bytes, path: str, keys: dict[int, str], kind: str) -> tuple[Part, str | None]:
    """``(Part, value schema name or None)``."""
    v = _version16(out, raw, path, "key")
    if v is None:
        return Part(None, None, None, raw, partial=True), None
    name = keys.get(v)
    if name is None:
        out.finding(Code.INTERNAL_TYPE_UNKNOWN, 0,
                    f"key version {v} is no {kind} record type in the schema tables ({_range_text(keys)})")
        return Part(None, v, None, raw), None
    data, p, err, _ = _struct(out, name, v, raw, 2, path)
    if err is None:
        _trailing(out, raw, p, f"{name} v{v}")
    return Part(name, v, data, raw, partial=err is not None), name[: -len("Key")] + "Value"



def _outside_tables(out: _Out, name: str, version: int) -> bool:
    """Whether ``version`` of schema ``name`` is beyond the tables (an info finding says so)."""
    versions = record_entry(name)["valid"]
    assert versions is not None  # the schemas named here all have valid versions
    lo, hi = versions
    if lo <= version <= hi:
        return False
    out.finding(Code.INTERNAL_VERSION_UNKNOWN, 0,
                f"{name} version {version} is outside the schema tables' versions {lo}-{hi} (kept raw)")
    return True

def _layout_unknown(out: _Out, name: str, version: int) -> bool:
    """Whether the value schema ``name`` is a record type known by name only (an info finding says so)."""
    if name not in LATER.VALUE_LAYOUT_UNKNOWN or S.has(name):
        return False
    out.finding(Code.INTERNAL_LAYOUT_UNKNOWN, 0,
                f"{name} version {version}: the record type is known, its layout is not (kept raw)")
    return True


def _coordinator_value(out: _Out, raw: bytes, path: str, name: str | None) -> Part:
    if name is None:
        # the key named no schema (already a finding): only the version can be shown
        v = P.int16_at(raw, 0) if len(raw) >= 2 else None
        if v is not None:
            out.span(path + "#version", 0, 2, v)
        return Part(None, v, None, raw)
    v = _version16(out, raw, path, "value")
    if v is None:
        return Part(name, None, None, raw, partial=True)
    if _layout_unknown(out, name, v) or _outside_tables(out, name, v):
        return Part(name, v, None, raw)
    embedded = name in EMBEDDING
    data, p, err, spans = _struct(out, name, v, raw, 2, path, want_spans=embedded)
    if err is None:
        _trailing(out, raw, p, f"{name} v{v}")
    if embedded and data and spans is not None:  # spans: asked for when embedded
        _embedded(out, name, data, spans, path)
    return Part(name, v, data, raw, partial=err is not None)


def _frame_value(out: _Out, raw: bytes, path: str, records: dict[int, str], what: str) -> Part:
    if len(raw) >= 3 and raw[0] == 1 and raw[1] < 0x80 and raw[2] < 0x80 and out.spans is None:
        # the common case, one byte each: frame version 1, apiKey and version below 128
        return _frame_record(out, raw, path, records, what, 1, raw[1], raw[2], 3)
    vals: dict[str, int] = {}
    p = 0
    for field in ("frameVersion", "apiKey", "version"):
        got = _uvarint(raw, p)
        if got[0] is None:
            out.finding(Code.INTERNAL_MALFORMED, p, f"{what} frame: {field} varint at byte {p} {got[1]}")
            return Part(None, vals.get("version"), None, raw, partial=True,
                        frame_version=vals.get("frameVersion"), api_key=vals.get("apiKey"))
        v, q = got
        if v > 0x7FFF:
            out.finding(Code.INTERNAL_MALFORMED, p, f"{what} frame: {field} {v} is larger than an INT16")
            return Part(None, vals.get("version"), None, raw, partial=True,
                        frame_version=vals.get("frameVersion"), api_key=vals.get("apiKey"))
        if out.spans is not None:
            out.span(f"{path}#{field}", p, q - p, v)
        vals[field] = v
        p = q
    return _frame_record(out, raw, path, records, what, vals["frameVersion"], vals["apiKey"], vals["version"], p)


def _frame_record(out: _Out, raw: bytes, path: str, records: dict[int, str], what: str, fv: int, ak: int, ver: int,
                  p: int) -> Part:
    """The record after its frame (``p``: where it starts)."""
    if fv != 1:
        why = " (frame version 0 was written only by KRaft's 2.8 preview)" if fv == 0 else ""
        out.finding(Code.INTERNAL_VERSION_UNKNOWN, 0, f"{what} frame version {fv}, not 1{why} (kept raw)")
        return Part(None, ver, None, raw, frame_version=fv, api_key=ak)
    name = records.get(ak)
    if name is None:
        out.finding(Code.INTERNAL_TYPE_UNKNOWN, 0,
                    f"{what} apiKey {ak} is no record type in the schema tables (known: "
                    f"{', '.join(str(k) for k in sorted(records))}); kept raw")
        return Part(None, ver, None, raw, frame_version=fv, api_key=ak)
    if _outside_tables(out, name, ver):
        return Part(name, ver, None, raw, frame_version=fv, api_key=ak)
    data, q, err, _ = _struct(out, name, ver, raw, p, path)
    if err is None:
        _trailing(out, raw, q, f"{name} v{ver}")
    return Part(name, ver, data, raw, partial=err is not None, frame_version=fv, api_key=ak)


def _control_key(out: _Out, raw: bytes | None, path: str) -> tuple[Part | None, int | None]:
    """``(Part or None, type or None)``.  A short key is the batch decoder's control-malformed finding."""
    if raw is None:
        return None, None
    parsed = read_control_key(raw)
    if parsed is None:
        return Part(None, None, None, raw, partial=True), None
    v, t = parsed
    out.span(path + ".version", 0, 2, v)
    out.span(path + ".type", 2, 2, t)
    if len(raw) > 4:
        out.finding(Code.INTERNAL_TRAILING, 4, f"{len(raw) - 4} bytes after the control record key",
                    length=len(raw) - 4)
    return Part("ControlRecordKey", v, {"version": v, "type": t}, raw), t


def _control_value(out: _Out, raw: bytes | None, path: str, ctype: int | None) -> Part | None:
    name = None if ctype is None else CONTROL_VALUE_SCHEMAS.get(ctype)
    if raw is None:
        if name is not None and ctype is not None:
            out.finding(Code.INTERNAL_MALFORMED, 0, f"{CONTROL_TYPES[ctype]} control record has no value")
        return None
    if ctype in END_TXN_TYPES:
        marker = read_end_txn_marker(raw)
        if marker is None:  # the batch decoder's control-malformed finding says so
            return Part("EndTxnMarker", None, None, raw, partial=True)
        v, epoch = marker
        out.span(path + ".version", 0, 2, v)
        out.span(path + ".coordinatorEpoch", 2, 4, epoch)
        if len(raw) > END_TXN_SIZE and v == 0:
            out.finding(Code.INTERNAL_TRAILING, END_TXN_SIZE,
                        f"{len(raw) - END_TXN_SIZE} bytes after the end transaction marker",
                        length=len(raw) - END_TXN_SIZE)
        return Part("EndTxnMarker", v, {"version": v, "coordinatorEpoch": epoch}, raw)
    if name is None:  # unknown control type: the batch decoder's control-unknown finding
        return Part(None, None, None, raw)
    data, p, err, _ = _struct(out, name, 0, raw, 0, path)
    if err is None:
        _trailing(out, raw, p, name)
    return Part(name, 0, data, raw, partial=err is not None)


def _consumer_protocol(out: _Out, name: str, raw: bytes, path: str) -> Part:
    """An embedded ConsumerProtocolSubscription / ConsumerProtocolAssignment (version-prefixed)."""
    v = _version16(out, raw, path, name)
    if v is None:
        return Part(name, None, None, raw, partial=True)
    versions = S.valid_versions(name)
    assert versions is not None  # the schemas named here all have valid versions
    lo, hi = versions
    if v < lo:
        out.finding(Code.INTERNAL_VERSION_UNKNOWN, 0, f"{name} version {v} is below {lo} (kept raw)")
        return Part(name, v, None, raw)
    use = min(v, hi)
    if v > hi:
        out.finding(Code.INTERNAL_VERSION_UNKNOWN, 0,
                    f"{name} version {v} is newer than the schema tables ({lo}-{hi}); read with the "
                    f"version {hi} layout, as Kafka's ConsumerProtocol reads it")
    data, p, err, _ = _struct(out, name, use, raw, 2, path)
    if err is None and v <= hi:
        _trailing(out, raw, p, f"{name} v{v}")
    return Part(name, v, data, raw, partial=err is not None)


def _embedded(out: _Out, name: str, data: dict, spans: list, path: str) -> None:
    """Replace the consumer protocol payloads inside ``data`` by decoded Parts (and their spans)."""
    where = {s.path: s for s in spans} if spans else {}
    for holder, field, schema, fpath in list(embedded_payloads(name, data, path)):
        raw = holder.get(field)
        span = where.get(fpath)
        if not isinstance(raw, bytes) or not raw or span is None:
            continue
        head = span.length - len(raw)  # the length prefix before the payload
        sub = _Out(span.offset + head, out.source, out.anchor, out.findings, out.spans)
        holder[field] = _consumer_protocol(sub, schema, raw, fpath)
        if out.spans is not None and sub.added:
            sub.close(fpath, len(raw))
            # the bytes field's span gives way to its length prefix and the payload's fields
            for lst in (out.spans, out.added):
                for k, s in enumerate(lst):
                    if s.path == fpath and s.offset == span.offset:
                        del lst[k]
                        break
            size = Span(fpath + "#size", span.offset, head, len(raw), out.source)
            out.spans.append(size)
            out.added.append(size)
            out.added.extend(sub.added)


# --- records ----------------------------------------------------------------------------------------------

def payload_anchor(batch: Batch | None) -> int | None:
    """File offset of a batch's compressed payload (where findings in its decompressed bytes anchor)."""
    if batch is None:
        return None
    if batch.magic >= 2:
        return batch.position + 61
    return batch.position + 18 + (8 if batch.magic == 1 else 0) + 4 + len(batch.key or b"") + 4


def record_locations(r: Record, batch: Batch | None = None) -> tuple[Loc, Loc]:
    """``((key start, source, anchor), (value start, source, anchor))`` of a record's key and value:
    the positions the batch decoder kept on the record, and for a decompressed source the file
    offset of the batch's payload, where findings anchor."""
    anchor = None if r.source == "file" else payload_anchor(batch)
    return (r.key_position, r.source, anchor), (r.value_position, r.source, anchor)


class Decoder:
    """Decodes the records of one kind of internal topic."""

    def __init__(self, kind: str, redact_secrets: bool = True):
        self.kind = kind
        self.redact_secrets = redact_secrets
        # a coordinator topic has key schemas; the other kinds frame their values (apiKey -> schema)
        self.keys: dict[int, str] | None = None
        self.records: dict[int, str] = {}
        if kind in _COORDINATOR_GROUPS:
            self.keys = key_schemas(_COORDINATOR_GROUPS[kind])
        else:
            self.records = frame_schemas(_FRAME_GROUPS[kind])
        # the plain records, read by plans made once per record type (None: this reader decodes them)
        self.plain = PlainReader(kind, self.keys, self.records, redact_secrets)

    def decode_record(self, record: Record, batch: Batch | None = None) -> DecodedRecord:
        """Decode one :class:`~kafkadump.decoders.batches.model.Record` (pass its batch: findings inside
        compressed batches are anchored at its payload).  Never raises on bad bytes."""
        if record.control is None:
            plain = self.plain.read(record.key, record.value, record.offset, record.timestamp)
            if plain is not None:
                return plain
        return self.reference_record(record, batch)

    def reference_record(self, record: Record, batch: Batch | None = None) -> DecodedRecord:
        """:meth:`decode_record` by this reader alone (the reference of :mod:`.plain_records`)."""
        control = record.control is not None
        d = self.decode(record.key, record.value, control, offset=record.offset, timestamp=record.timestamp)
        if d.findings:
            # rare: decode again knowing where the key and value are, for exact offsets in the findings
            kloc, vloc = record_locations(record, batch)
            d = self.decode(record.key, record.value, control, kloc, vloc,
                            offset=record.offset, timestamp=record.timestamp)
        return d

    def decode(self, key: bytes | None, value: bytes | None, control: bool, kloc: Loc = (0, "file", None),
               vloc: Loc = (0, "file", None), *, spans: list[Span] | None = None, prefix: str = "",
               offset: int | None = None, timestamp: int | None = None) -> DecodedRecord:
        """Decode a key and a value given where they are (``(start, source, anchor)`` each).

        With ``spans`` (a list) each decoded field's :class:`Span` is appended,
        under ``prefix + "key"`` / ``prefix + "value"``.
        """
        findings: list = []
        ko = _Out(kloc[0], kloc[1], kloc[2], findings, spans)
        vo = _Out(vloc[0], vloc[1], vloc[2], findings, spans)
        kpath, vpath = prefix + "key", prefix + "value"
        ctl = None
        try:
            if control:
                kpart, ctype = _control_key(ko, key, kpath)
                ctl = control_type_name(ctype) if ctype is not None else "UNKNOWN"
                vpart = _control_value(vo, value, vpath, ctype)
            elif self.keys is not None:
                if key is None:
                    ko.finding(Code.INTERNAL_MALFORMED, 0, f"{self.kind} record has a null key")
                    kpart, vname = None, None
                else:
                    kpart, vname = _coordinator_key(ko, key, kpath, self.keys, self.kind)
                vpart = None if value is None else _coordinator_value(vo, value, vpath, vname)
            else:
                kpart = None if key is None else Part(None, None, None, key)
                if value is None:
                    vo.finding(Code.INTERNAL_MALFORMED, 0, f"{self.kind} record has a null value")
                    vpart = None
                else:
                    vpart = _frame_value(vo, value, vpath, self.records,
                                         "metadata record" if self.kind == K.METADATA else "remote log metadata")
        except Exception as e:  # pragma: no cover - defensive: a bug of ours must not hide the data
            # reported where the key starts, the bytes kept raw (the tests assert this never happens)
            ko.finding(Code.INTERNAL_MALFORMED, 0,
                       f"kafkadump could not decode this record (a bug): {type(e).__name__}: {e}")
            kpart = None if key is None else Part(None, None, None, key, partial=True)
            vpart = None if value is None else Part(None, None, None, value, partial=True)
        if key is not None:
            ko.close(kpath, len(key))
        if value is not None:
            vo.close(vpath, len(value))
        if self.redact_secrets and vpart is not None and holds_secrets(vpart.schema):
            _mask_secrets(vpart, vo.added, vpath)
        return DecodedRecord(self.kind, offset, timestamp, kpart, vpart, ctl, findings)


def _mask_secrets(part: Part, spans: list[Span], vpath: str) -> None:
    """The secrets of a decoded KRaft record masked: its fields, the spans that name them
    (hexdump), and the raw bytes of the whole value (not shown)."""
    from kafkadump.decoders.payloads.redact import (
        SECRET_MASK,  # here: start-up does not pay for it
        mask_secrets,  # here: start-up does not pay for it
    )

    masked = mask_secrets(part.schema, part.data)
    if not masked:
        return
    part.raw = None
    ends = tuple("." + n for n in masked)
    for s in spans:
        if s.path.startswith(vpath) and s.path.endswith(ends):
            s.value = SECRET_MASK
            s.raw = None


# --- hexdump: decoded fields as spans --------------------------------------------------------------------

_RECORD_PREFIX = re.compile(r"^(batch\.records\[\d+\]|message|message\.inner\[\d+\])$")


def expand_spans(kind: str, item: Batch | Gap, spans: list[Span], redact_secrets: bool = True) -> tuple[list[Span], list[Finding]]:
    """The spans of one decoded batch with each record's key and value split into their fields.

    ``item`` is the batch :func:`kafkadump.decoders.batches.walk.decode_spanned`
    returned, ``spans`` its spans.  Returns ``(spans, findings)``: a new
    list in which every decoded key/value span is replaced by spans of its
    fields (together they tile the same bytes; bytes that do not decode
    become an unparsed span), and the decoding findings.
    """
    if not isinstance(item, Batch) or not spans:
        return list(spans), []
    dec = decoder_for(kind, redact_secrets)
    groups: dict = {}
    for s in spans:
        head, _, leaf = s.path.rpartition(".")
        if leaf in ("key", "value", "keyLength", "valueLength") and _RECORD_PREFIX.match(head):
            groups.setdefault(head, {})[leaf] = s
    if item.magic < 2 and item.codec != 0:
        groups.pop("message", None)  # the wrapper's value is the compressed message set, not a record's
    anchor = payload_anchor(item)
    control = item.is_control
    out = list(spans)
    findings: list = []
    for head, g in groups.items():
        kl, vl = g.get("keyLength"), g.get("valueLength")
        if kl is None or vl is None:
            continue
        key = _span_bytes(g.get("key"), kl)
        value = _span_bytes(g.get("value"), vl)
        kloc = (kl.offset + kl.length, kl.source, None if kl.source == "file" else anchor)
        vloc = (vl.offset + vl.length, vl.source, None if vl.source == "file" else anchor)
        new: list = []
        d = dec.decode(key, value, control, kloc, vloc, spans=new, prefix=head + ".")
        findings.extend(d.findings)
        for leaf, prefix in (("key", head + ".key"), ("value", head + ".value")):
            old = g.get(leaf)
            mine = [s for s in new if s.path == prefix or s.path.startswith(prefix + ".")
                    or s.path.startswith(prefix + "#")]
            if old is not None and mine:
                out.remove(old)
                out.extend(mine)
    return out, findings


def _span_bytes(span, length_span):
    if span is not None and isinstance(span.value, (bytes, bytearray)):
        return bytes(span.value)
    return None if length_span.value is None or length_span.value < 0 else b""


__all__ = ["Decoder", "decoder_for", "control_decoder", "kind_from_path", "resolve_kind", "expand_spans", "record_locations",
           "payload_anchor", "key_schemas", "frame_schemas", "CONTROL_VALUE_SCHEMAS"]
