"""JSON Lines: one object per batch, record or gap, in the spec's field names.

The contract (documented in man/kafkadump.1) is stable; fields are only
ever added.  Every line is valid JSON whatever the input bytes: byte
fields are encoded per ``--encoding`` (base64 and hex are lossless, text
replaces invalid UTF-8 with U+FFFD), null stays null, and strings taken
from the input are escaped by :func:`json.dumps`.

Record lines are built with string formatting rather than ``json.dumps``
of a dict: they are the hot path of ``records --json``.
"""

from __future__ import annotations

import base64
import binascii
import json

from ..decode.model import Batch, Gap, Record
from .jsontext import dumps as _dumps_text

_dumps = json.dumps
_Q = '"'
_b64 = binascii.b2a_base64


def _enc_base64(b):
    return None if b is None else _b64(b, newline=False).decode("ascii")


def _enc_hex(b):
    return None if b is None else b.hex()


def _enc_text(b):
    return None if b is None else b.decode("utf-8", "replace")


ENCODERS = {"base64": _enc_base64, "hex": _enc_hex, "text": _enc_text}


def findings_list(findings) -> list:
    return [f.to_dict() for f in findings]


def batch_dict(b: Batch) -> dict:
    """A batch (or top-level legacy message) as a JSON-ready dict."""
    d = {"type": "batch", "file": b.file, "position": b.position, "size": b.size}
    if b.magic >= 2:
        d.update({
            "baseOffset": b.base_offset,
            "batchLength": b.batch_length,
            "partitionLeaderEpoch": b.partition_leader_epoch,
            "magic": b.magic,
            "crc": b.crc,
            "attributes": b.attributes,
            "lastOffsetDelta": b.last_offset_delta,
            "baseTimestamp": b.base_timestamp,
            "maxTimestamp": b.max_timestamp,
            "producerId": b.producer_id,
            "producerEpoch": b.producer_epoch,
            "baseSequence": b.base_sequence,
            "recordCount": b.record_count,
            "lastOffset": b.last_offset,
            "lastSequence": b.last_sequence,
        })
    else:
        d.update({
            "offset": b.offset,
            "messageSize": b.message_size,
            "magic": b.magic,
            "crc": b.crc,
            "attributes": b.attributes,
            "timestamp": b.timestamp,
            "baseOffset": b.base_offset,
            "lastOffset": b.last_offset,
            "recordCount": b.record_count,
        })
    d.update({
        "compression": b.compression,
        "timestampType": b.timestamp_type,
        "isTransactional": b.is_transactional,
        "isControlBatch": b.is_control,
        "hasDeleteHorizonMs": b.has_delete_horizon,
        "crcValid": b.crc_valid,
        "computedCrc": b.computed_crc,
    })
    if b.decompressed_size is not None:
        d["decompressedSize"] = b.decompressed_size
    d["findings"] = findings_list(b.findings)
    return d


def gap_dict(g: Gap) -> dict:
    return {"type": "gap", "file": g.file, "position": g.position, "size": g.size,
            "findings": findings_list(g.findings)}


def render_batch_line(item) -> str:
    if isinstance(item, Gap):
        return _dumps(gap_dict(item))
    return _dumps(batch_dict(item))


class RecordLines:
    """Formats record lines for one encoding; reuse across a whole run."""

    def __init__(self, encoding: str = "base64"):
        self.encoding = encoding
        self.enc = ENCODERS[encoding]
        self._file = None
        self._file_json = "null"
        # base64/hex output never needs JSON escaping; text does.
        self._escape = encoding == "text"

    def _val(self, b) -> str:
        if b is None:
            return "null"
        s = self.enc(b)
        return _dumps_text(s) if self._escape else '"' + s + '"'

    def _headers(self, headers) -> str:
        val = self._val
        return "[" + ",".join('{"key":' + _dumps(k) + ',"value":' + val(v) + "}" for k, v in headers) + "]"

    def line(self, r: Record, b: Batch) -> str:
        if b.file is not self._file:
            self._file = b.file
            self._file_json = _dumps(b.file)
        val = self._val
        headers = self._headers(r.headers) if r.headers else "[]"
        ts = r.timestamp
        tst = r.timestamp_type
        extra = ""
        if r.magic < 2:
            extra = f',"magic":{r.magic},"crc":{r.crc},"crcValid":{"true" if r.crc == r.computed_crc else "false"}'
        control = "null" if r.control is None else _dumps(r.control)
        return (
            f'{{"type":"record","file":{self._file_json},"batchPosition":{b.position},'
            f'"offset":{r.offset},"timestamp":{"null" if ts is None else ts},'
            f'"timestampType":{"null" if tst is None else chr(34) + tst + chr(34)},'
            f'"key":{val(r.key)},"value":{val(r.value)},"headers":{headers},'
            f'"offsetDelta":{"null" if r.offset_delta is None else r.offset_delta},'
            f'"timestampDelta":{"null" if r.timestamp_delta is None else r.timestamp_delta},'
            f'"control":{control}{extra}}}'
        )

    def batch_lines(self, b: Batch, recs) -> str:
        """All of ``recs`` (records of ``b``) as newline-terminated lines: the hot path.

        Same output as :meth:`line` per record; per-batch constants are
        formatted once and the common case (no headers, not control, v2) is
        inlined.
        """
        if not recs:
            return ""
        if b.magic < 2 or b.is_control or self._escape:
            return "\n".join([self.line(r, b) for r in recs]) + "\n"
        if b.file is not self._file:
            self._file = b.file
            self._file_json = _dumps(b.file)
        enc = self.enc
        hdrs = self._headers
        tst = recs[0].timestamp_type
        prefix = (f'{{"type":"record","file":{self._file_json},"batchPosition":{b.position},'
                  f'"offset":')
        mid_ts = f',"timestampType":"{tst}","key":'
        out = []
        append = out.append
        if self.encoding == "base64":
            # the benchmarked case: base64 inline, no per-field Python call
            b64 = _b64
            for r in recs:
                k = r.key
                v = r.value
                append(f'{prefix}{r.offset},"timestamp":{r.timestamp}{mid_ts}'
                       f'{"null" if k is None else _Q + b64(k, newline=False).decode() + _Q},'
                       f'"value":{"null" if v is None else _Q + b64(v, newline=False).decode() + _Q},'
                       f'"headers":{hdrs(r.headers) if r.headers else "[]"},'
                       f'"offsetDelta":{r.offset_delta},"timestampDelta":{r.timestamp_delta},"control":null}}\n')
            return "".join(out)
        for r in recs:
            k = r.key
            v = r.value
            headers = hdrs(r.headers) if r.headers else "[]"
            append(f'{prefix}{r.offset},"timestamp":{r.timestamp}{mid_ts}'
                   f'{"null" if k is None else _Q + enc(k) + _Q},'
                   f'"value":{"null" if v is None else _Q + enc(v) + _Q},"headers":{headers},'
                   f'"offsetDelta":{r.offset_delta},"timestampDelta":{r.timestamp_delta},"control":null}}\n')
        return "".join(out)

    def dict(self, r: Record, b: Batch) -> dict:
        return json.loads(self.line(r, b))

    def record_base(self, r: Record, b: Batch) -> dict:
        """The fields of :meth:`line` as a dict (key and value left out: the caller adds them)."""
        enc = self.enc
        d = {"type": "record", "file": b.file, "batchPosition": b.position, "offset": r.offset,
             "timestamp": r.timestamp, "timestampType": r.timestamp_type, "key": None, "value": None,
             "headers": [{"key": k, "value": None if v is None else enc(v)} for k, v in r.headers],
             "offsetDelta": r.offset_delta, "timestampDelta": r.timestamp_delta, "control": r.control}
        if r.magic < 2:
            d["magic"] = r.magic
            d["crc"] = r.crc
            d["crcValid"] = r.crc == r.computed_crc
        return d

    def decoded_line(self, r: Record, b: Batch, dec) -> str:
        """A record of an internal topic with its key and value decoded (``dec``, a
        :class:`kafkadump.internal.DecodedRecord`): the same fields as :meth:`line`,
        ``key``/``value`` as objects, plus ``decoded``, ``tombstone``, ``findings``
        (see :mod:`kafkadump.render.internal`)."""
        from .internal import record_dict

        return _dumps_text(record_dict(self.record_base(r, b), dec, self.enc), separators=(",", ":"))


__all__ = ["batch_dict", "gap_dict", "render_batch_line", "RecordLines", "ENCODERS", "base64"]
