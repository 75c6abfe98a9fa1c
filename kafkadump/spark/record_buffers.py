"""Record rows as Arrow column buffers, filled straight from a batch's bytes by the compiled
loop (``kafkadump.accel.arrowcols``): the records level's fast path, no Python object per
record.

A plain run of a v2 batch's records (what :class:`kafkadump.decoders.batches.batch.RecordStream`
reads: checked by the decoder, not a control batch, not filtered) is appended to one
bytearray per buffer (:class:`RecordBuffers`); the loop hands a run back (None) when
it is not plain, and the caller then adds that run's rows from the decoder's records,
as before.  The values are those of the decoder's :class:`~kafkadump.decoders.batches.model.Record`
(the tests hold the two paths equal, and both equal to ``records --json``).

:func:`buffer_arrays` turns the buffers into Arrow arrays (pyarrow imported there only).
``KAFKADUMP_PURE_PYTHON`` turns the compiled loop off, as for the CLI.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

from kafkadump.accel import compiled
from kafkadump.decoders.batches.batch import RecordStream, decode_record_run
from kafkadump.decoders.batches.model import STREAM_RECORDS, Batch, Record
from kafkadump.spark.row_schema import TIMESTAMP_MS_MAX, TIMESTAMP_MS_MIN

# the buffers of record_columns (arrowcols.c's B_* order)
(B_OFFSET, B_TIMESTAMP, B_OFFSET_DELTA, B_TIMESTAMP_DELTA, B_BATCH_POSITION, B_LOG_APPEND,
 B_KEY_OFFSETS, B_KEY_DATA, B_KEY_VALID, B_VALUE_OFFSETS, B_VALUE_DATA, B_VALUE_VALID,
 B_HEADER_OFFSETS, B_HKEY_OFFSETS, B_HKEY_DATA, B_HVALUE_OFFSETS, B_HVALUE_DATA, B_HVALUE_VALID,
 B_TIMESTAMP_US, B_TIMESTAMP_VALID) = range(20)
NBUFS = 20
_OFFSET_BUFFERS = (B_KEY_OFFSETS, B_VALUE_OFFSETS, B_HEADER_OFFSETS, B_HKEY_OFFSETS, B_HVALUE_OFFSETS)
F_KEY, F_VALUE, F_HEADERS, F_TIMESTAMP = 1, 2, 4, 8
_FLAG_OF = {"key": F_KEY, "value": F_VALUE, "headers": F_HEADERS, "timestamp": F_TIMESTAMP}

# the columns the buffers give; the other record-row columns of a plain run are the same for
# every row of a part (constants) or null
BUFFER_COLUMNS = ("offset", "timestamp", "timestampMs", "offsetDelta", "timestampDelta", "batchPosition",
                  "timestampType", "key", "value", "headers")
CONSTANT_COLUMNS = ("topic", "partition", "logDir", "type", "file")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")   # by the batch's timestamp-type bit


_COLS: ModuleType | None = compiled("arrowcols")


def available() -> bool:
    """Whether the compiled column loop is here (and not turned off)."""
    return _COLS is not None


def plain_stream(b: Batch, records: object) -> bool:
    """Whether ``records`` (of ``b``) is a run the column loop may take: an unfiltered
    :class:`RecordStream` of a v2 batch that is not a control batch."""
    return type(records) is RecordStream and records.keep is None and b.magic >= 2 and not b.is_control


class RecordBuffers:
    """The buffers of one part: rows of plain runs of one file (``file``, ``topic``,
    ``partition``, ``log_dir`` are those of every row)."""

    def __init__(self, names: Sequence[str], file: str, topic: str | None, partition: int | None,
                 log_dir: str | None):
        self.flags = sum(f for n, f in _FLAG_OF.items() if n in names)
        self.constants = {"topic": topic, "partition": partition, "logDir": log_dir, "type": "record", "file": file}
        self.bufs = [bytearray(4) if i in _OFFSET_BUFFERS else bytearray() for i in range(NBUFS)]

    @property
    def rows(self) -> int:
        return len(self.bufs[B_OFFSET]) >> 3

    @property
    def bytes(self) -> int:
        """Key and value bytes held."""
        return len(self.bufs[B_KEY_DATA]) + len(self.bufs[B_VALUE_DATA])

    def add_run(self, b: Batch, records: RecordStream, pos: int, n: int) -> tuple[int, int, bool] | None:
        """Append the records ``n`` on (at ``pos``) of the plain stream ``records`` of ``b``, a run of
        at most :data:`STREAM_RECORDS`: ``(next position, next record number, done)``, or None
        when the loop hands the run back (nothing appended: see :func:`run_records`)."""
        assert _COLS is not None
        count = b.record_count
        got = _COLS.record_columns(records.data, pos, records.stop, n, min(count, n + STREAM_RECORDS), count,
                                   b.base_offset, b.base_timestamp, b.max_timestamp, (b.attributes & 0x08) != 0,
                                   b.position, self.flags, TIMESTAMP_MS_MIN, TIMESTAMP_MS_MAX, self.bufs)
        return None if got is None else (got[0], got[1], bool(got[2]))


def run_records(b: Batch, records: RecordStream, pos: int, n: int) -> tuple[list[Record], int, int, bool]:
    """The run :meth:`RecordBuffers.add_run` handed back, as the decoder's records (what
    ``records``' own runs give there): ``(records, next position, next record number, done)``."""
    recs, _, pos, n, done = decode_record_run(records.data, pos, records.stop, b, records.source, records.shift,
                                              None, n, STREAM_RECORDS)
    return recs, pos, n, done


def buffer_arrays(part: RecordBuffers, names: Sequence[str], schema: Any) -> list[Any]:
    """The Arrow arrays of ``names`` (fields of the Arrow ``schema``, in order) for the rows in
    ``part``."""
    import pyarrow as pa

    n = part.rows
    bufs = [pa.py_buffer(b) for b in part.bufs]

    def fixed(i: int, t: Any) -> Any:
        return pa.Array.from_buffers(t, n, [None, bufs[i]])

    def binary(t: Any, count: int, valid: int, offsets: int, data: int) -> Any:
        return pa.Array.from_buffers(t, count, [bufs[valid], bufs[offsets], bufs[data]])

    out = []
    for name, f in zip(names, schema):
        t = f.type
        if name == "offset":
            out.append(fixed(B_OFFSET, t))
        elif name == "timestampMs":
            out.append(fixed(B_TIMESTAMP, t))
        elif name == "timestamp":
            out.append(pa.Array.from_buffers(t, n, [bufs[B_TIMESTAMP_VALID], bufs[B_TIMESTAMP_US]]))
        elif name == "offsetDelta":
            out.append(fixed(B_OFFSET_DELTA, t))
        elif name == "timestampDelta":
            out.append(fixed(B_TIMESTAMP_DELTA, t))
        elif name == "batchPosition":
            out.append(fixed(B_BATCH_POSITION, t))
        elif name == "timestampType":
            out.append(_timestamp_types(part.bufs[B_LOG_APPEND], fixed(B_LOG_APPEND, pa.uint8()), t))
        elif name == "key":
            out.append(binary(t, n, B_KEY_VALID, B_KEY_OFFSETS, B_KEY_DATA))
        elif name == "value":
            out.append(binary(t, n, B_VALUE_VALID, B_VALUE_OFFSETS, B_VALUE_DATA))
        elif name == "headers":
            out.append(_headers(part, t, bufs))
        else:   # the same value in every row (null for most)
            out.append(repeated(part.constants.get(name), t, n))
    return out


_REPEATED: dict[tuple, Any] = {}


def repeated(value: object, t: Any, n: int) -> Any:
    """An Arrow array of ``n`` times ``value`` (None: null) of type ``t``: a slice of one made
    once, so the parts after the first pay nothing per row for it.  Made for the part's length
    the first time (a small file's name is wanted for its few rows, once), at least twice as
    long when asked again for more (a large file's parts, the nulls of every part)."""
    import pyarrow as pa

    key = (value, t)
    whole = _REPEATED.get(key)
    if whole is None or len(whole) < n:
        if len(_REPEATED) >= 64:
            _REPEATED.clear()
        size = n if whole is None else max(n, 2 * len(whole))
        whole = _REPEATED[key] = pa.repeat(pa.scalar(value, t), size) if value is not None else _nulls(t, size)
    return whole.slice(0, n)


def _nulls(t: Any, n: int) -> Any:
    """``n`` nulls of type ``t`` (a struct's fields null too, as a null struct is built elsewhere)."""
    import pyarrow as pa

    if pa.types.is_struct(t):
        return pa.Array.from_buffers(t, n, [pa.py_buffer(bytes((n + 7) >> 3))], null_count=n,
                                     children=[_nulls(f.type, n) for f in t])
    return pa.nulls(n, t)


def _timestamp_types(codes: bytearray, code_array: Any, t: Any) -> Any:
    """The ``timestampType`` column from the rows' timestamp-type bits."""
    if 1 not in codes:
        return repeated(TIMESTAMP_TYPES[0], t, len(codes))
    if 0 not in codes:
        return repeated(TIMESTAMP_TYPES[1], t, len(codes))
    import pyarrow as pa

    return pa.array(TIMESTAMP_TYPES, t).take(code_array)


def _headers(part: RecordBuffers, t: Any, bufs: list[Any]) -> Any:
    """The ``headers`` column: a list of (key, value) structs per row."""
    import pyarrow as pa

    count = (len(part.bufs[B_HKEY_OFFSETS]) >> 2) - 1
    item = t.value_type
    keys = pa.Array.from_buffers(item.field(0).type, count, [None, bufs[B_HKEY_OFFSETS], bufs[B_HKEY_DATA]])
    values = pa.Array.from_buffers(item.field(1).type, count,
                                   [bufs[B_HVALUE_VALID], bufs[B_HVALUE_OFFSETS], bufs[B_HVALUE_DATA]])
    structs = pa.StructArray.from_arrays([keys, values], fields=[item.field(0), item.field(1)])
    return pa.Array.from_buffers(t, part.rows, [None, bufs[B_HEADER_OFFSETS]], children=[structs])


__all__ = ["RecordBuffers", "run_records", "buffer_arrays", "available", "plain_stream", "BUFFER_COLUMNS"]
