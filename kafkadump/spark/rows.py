"""Decoded items to rows of the three levels (a renderer: objects in, columns out).

Batch and gap rows are built from ``kafkadump.report.records.batch_object`` /
``gap_object``, the functions behind ``batches --json``, so a row holds the
very values of the JSON line.  Record rows are built field by field (the hot
path), with the values ``RecordLines`` writes; the tests hold the two equal.

Rows are accumulated column-wise (one Python list per column) and handed out
in chunks, which the data source turns into Arrow record batches.  No
pyspark or pyarrow here.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..decode.model import Batch, Gap, Record
from ..query import RecordQuery
from ..report.records import batch_object as batch_dict
from ..report.records import findings_list
from ..report.records import gap_object as gap_dict
from .row_schema import BATCH_FIELDS, FINDING_FIELDS, RECORD_FIELDS, Fields

CHUNK_ROWS = 8192
CHUNK_BYTES = 32 << 20       # key + value bytes held before a chunk is handed out


class Columns:
    """Column lists for one level; ``take()`` returns and resets them."""

    def __init__(self, fields: Fields, topic: str | None, partition: int | None, log_dir: str | None = None):
        self.names = [n for n, _ in fields]
        self.index = {n: i for i, n in enumerate(self.names)}
        self.topic = topic
        self.partition = partition
        self.log_dir = log_dir
        self.query: RecordQuery | None = None  # records level: the records kept (kafkadump.query)
        self._reset()

    def _reset(self):
        self.cols = [[] for _ in self.names]
        self.rows = 0
        self.bytes = 0

    def full(self) -> bool:
        return self.rows >= CHUNK_ROWS or self.bytes >= CHUNK_BYTES

    def take(self) -> tuple[list[list], int]:
        cols, n = self.cols, self.rows
        self._reset()
        return cols, n

    def add_dict(self, d: dict) -> None:
        """One row from a JSON-contract dict (absent keys are null)."""
        get = d.get
        for name, col in zip(self.names, self.cols):
            col.append(get(name))
        self.rows += 1

    def where(self, d: dict) -> dict:
        d["topic"] = self.topic
        d["partition"] = self.partition
        d["logDir"] = self.log_dir
        return d

    def error(self, file: str, message: str) -> None:
        self.add_dict(self.where({"type": "error", "file": file, "error": message}))

    def add(self, item: Batch | Gap) -> None:
        """The rows of one decoded item (each level has its own)."""
        raise NotImplementedError


class BatchColumns(Columns):
    def __init__(self, topic: str | None, partition: int | None, log_dir: str | None = None):
        super().__init__(BATCH_FIELDS, topic, partition, log_dir)

    def add(self, item: Batch | Gap) -> None:
        d = gap_dict(item) if isinstance(item, Gap) else batch_dict(item)
        self.add_dict(self.where(d))


class FindingColumns(Columns):
    def __init__(self, topic: str | None, partition: int | None, log_dir: str | None = None):
        super().__init__(FINDING_FIELDS, topic, partition, log_dir)

    def add(self, item: Batch | Gap) -> None:
        if not item.findings:
            return
        batch = item if isinstance(item, Batch) else None
        base = self.where({
            "type": "batch" if batch is not None else "gap", "file": item.file, "position": item.position,
            "size": item.size,
            "baseOffset": batch.base_offset if batch is not None else None,
            "lastOffset": batch.last_offset if batch is not None else None,
        })
        for f in findings_list(item.findings):
            self.add_dict({**base, **f})


class RecordColumns(Columns):
    """``records --json`` lines as rows: a gap line per gap, a findings line for a
    batch with findings (before its records), a record line per record."""

    def __init__(self, topic: str | None, partition: int | None, log_dir: str | None = None):
        super().__init__(RECORD_FIELDS, topic, partition, log_dir)
        i = self.index
        self._rec = [i[n] for n in ("topic", "partition", "logDir", "type", "file", "position", "size", "batchPosition",
                                    "offset", "timestamp", "timestampType", "key", "value", "headers",
                                    "offsetDelta", "timestampDelta", "control", "magic", "crc", "crcValid",
                                    "findings", "error")]

    def add(self, item: Batch | Gap) -> None:
        if isinstance(item, Gap):
            self.add_dict(self.where(gap_dict(item)))
            return
        if item.findings:
            self.add_dict(self.where({"type": "findings", "file": item.file, "position": item.position,
                                      "findings": findings_list(item.findings)}))
        recs = item.records if self.query is None or item.records is None else self.query.select(item.records)
        if recs:
            self.add_records(item, recs)

    def add_records(self, b: Batch, recs: Sequence[Record]) -> None:
        (c_topic, c_part, c_logdir, c_type, c_file, c_pos, c_size, c_bpos, c_off, c_ts, c_tst, c_key, c_val, c_hdr,
         c_od, c_td, c_ctl, c_magic, c_crc, c_crcv, c_find, c_err) = (self.cols[i] for i in self._rec)
        n = len(recs)
        nothing = [None] * n
        c_topic += [self.topic] * n
        c_part += [self.partition] * n
        c_logdir += [self.log_dir] * n
        c_type += ["record"] * n
        c_file += [b.file] * n
        c_pos += nothing
        c_size += nothing
        c_bpos += [b.position] * n
        c_err += nothing
        c_find += nothing
        nbytes = 0
        if b.magic >= 2:
            c_magic += nothing
            c_crc += nothing
            c_crcv += nothing
        else:
            for r in recs:
                c_magic.append(r.magic)
                c_crc.append(r.crc)
                c_crcv.append(r.crc == r.computed_crc)
        for r in recs:
            c_off.append(r.offset)
            c_ts.append(r.timestamp)
            c_tst.append(r.timestamp_type)
            k = r.key
            v = r.value
            c_key.append(k)
            c_val.append(v)
            if k is not None:
                nbytes += len(k)
            if v is not None:
                nbytes += len(v)
            c_hdr.append(r.headers)
            c_od.append(r.offset_delta)
            c_td.append(r.timestamp_delta)
            c_ctl.append(r.control)
        self.rows += n
        self.bytes += nbytes


COLUMNS = {"batches": BatchColumns, "records": RecordColumns, "findings": FindingColumns}


__all__ = ["COLUMNS", "BatchColumns", "RecordColumns", "FindingColumns", "CHUNK_ROWS"]
