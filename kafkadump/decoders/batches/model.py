"""The decoded objects the decoder hands to renderers.

Plain slotted classes: cheap to build in the record loop, attribute access
only, no behaviour beyond small derived properties.  Python names are
snake_case; renderers map them to the spec's field names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from kafkadump.decoders.batches.compression import CODEC_NAMES
from kafkadump.decoders.batches.control import CONTROL_TYPES  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from kafkadump.base.findings import Finding

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


class Span:
    """One decoded field's place in the bytes (recorded only when asked for).

    ``path`` names the field (``batch.records[3].headers[0].key``), ``offset``
    and ``length`` locate it in ``source`` (``file``, or ``decompressed`` for
    bytes produced by decompressing the batch's payload; decompressed
    offsets count from the start of the decompressed data).
    """

    __slots__ = ("path", "offset", "length", "value", "source", "raw")

    def __init__(self, path: str, offset: int, length: int, value: Any, source: str = "file",
                 raw: int | str | None = None):
        self.path = path
        self.offset = offset
        self.length = length
        self.value = value
        self.source = source
        self.raw = raw  # for varints: the decoded unsigned/zig-zag form, shown beside the bytes;
        # "unparsed" / "block" for bytes that are not one field

    def __repr__(self) -> str:  # pragma: no cover
        return f"Span({self.path}@{self.source}:{self.offset}+{self.length}={self.value!r})"


class Record:
    """A record of a v2 batch, or an (inner) message of a legacy message set.

    ``position``/``size`` locate the record in ``source`` (``file`` or
    ``decompressed``); ``key_position``/``value_position`` locate the first
    byte of its key and value (after their length prefixes) in the same
    source: where they would start when null.  For legacy messages
    ``offset_delta`` and ``timestamp_delta`` are None and ``headers`` is
    empty; ``crc`` and ``crc_valid`` are set instead.
    """

    __slots__ = ("offset", "timestamp", "timestamp_type", "key", "value", "headers",
                 "offset_delta", "timestamp_delta", "attributes", "position", "size",
                 "source", "control", "magic", "crc", "computed_crc", "stored_offset",
                 "key_position", "value_position")

    def __init__(self, offset, timestamp, timestamp_type, key, value, headers,
                 offset_delta, timestamp_delta, attributes, position, size, source,
                 key_position=None, value_position=None, control=None, magic=2,
                 crc=None, computed_crc=None, stored_offset=None):
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self.headers = headers
        self.offset_delta = offset_delta
        self.timestamp_delta = timestamp_delta
        self.attributes = attributes
        self.position = position
        self.size = size
        self.source = source
        self.control = control
        self.magic = magic
        self.crc = crc
        self.computed_crc = computed_crc
        self.stored_offset = stored_offset
        self.key_position = key_position
        self.value_position = value_position

    @property
    def crc_valid(self) -> bool | None:
        return None if self.crc is None else self.crc == self.computed_crc

    @property
    def identity(self) -> tuple[str, int]:
        """Which record of its batch this is, stable across reads: a batch's records may be a
        stream that makes new objects each time it is read, so ``id()`` is no key for them."""
        return (self.source, self.position)

    def __repr__(self) -> str:  # pragma: no cover
        return f"Record(offset={self.offset}, key={self.key!r}, value={self.value!r})"


class Batch:
    """A v2 record batch, or one top-level legacy message (magic 0/1).

    Header fields use the spec's meaning; for legacy messages the v2-only
    fields are None and ``offset`` / ``message_size`` / ``timestamp`` are set.
    ``records`` is None when records were not decoded, else the list
    (possibly partial, with the reason in ``findings``).
    """

    __slots__ = ("file", "position", "size", "magic", "base_offset", "batch_length",
                 "partition_leader_epoch", "crc", "computed_crc", "attributes",
                 "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id",
                 "producer_epoch", "base_sequence", "record_count", "findings", "records",
                 "offset", "message_size", "timestamp", "key", "decompressed_size",
                 "last_offset_override", "spans", "decompressed")

    def __init__(self, file, position, size, magic):
        self.file = file
        self.position = position
        self.size = size
        self.magic = magic
        self.base_offset = None
        self.batch_length = None
        self.partition_leader_epoch = None
        self.crc = None
        self.computed_crc = None
        self.attributes = 0
        self.last_offset_delta = None
        self.base_timestamp = None
        self.max_timestamp = None
        self.producer_id = None
        self.producer_epoch = None
        self.base_sequence = None
        self.record_count = None
        self.findings = []
        self.records = None
        self.offset = None
        self.message_size = None
        self.timestamp = None
        self.key = None
        self.decompressed_size = None
        self.last_offset_override = None
        self.spans = None
        self.decompressed = None  # the decompressed payload, kept only when spans are recorded

    # --- derived -------------------------------------------------------------
    @property
    def payload_bytes(self) -> int:
        """At least the bytes its records span: the batch, or its decompressed payload; a legacy
        wrapper's nested wrappers are not counted, so a wrapper says "unknown" (a large number)."""
        if self.magic < 2 and self.attributes & 7:
            return 1 << 62
        return max(self.size, self.decompressed_size or 0)

    @property
    def codec(self) -> int:
        return self.attributes & 0x07

    @property
    def compression(self) -> str:
        c = self.attributes & 0x07
        return CODEC_NAMES[c] if c < len(CODEC_NAMES) else f"unknown({c})"

    @property
    def timestamp_type(self) -> str | None:
        if self.magic == 0:
            return None
        return TIMESTAMP_TYPES[(self.attributes >> 3) & 1]

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & 0x10)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & 0x20)

    @property
    def has_delete_horizon(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & 0x40)

    @property
    def crc_valid(self) -> bool | None:
        if self.crc is None or self.computed_crc is None:
            return None
        return self.crc == self.computed_crc

    @property
    def last_offset(self) -> int | None:
        if self.magic >= 2:
            if self.base_offset is None or self.last_offset_delta is None:
                return None
            return self.base_offset + self.last_offset_delta
        return self.offset

    @property
    def last_sequence(self) -> int | None:
        """baseSequence + lastOffsetDelta, wrapping past INT32_MAX as the broker does."""
        if self.base_sequence is None or self.base_sequence < 0 or self.last_offset_delta is None:
            return -1 if self.base_sequence == -1 else None
        s = self.base_sequence + self.last_offset_delta
        return s - (1 << 31) if s > 0x7FFFFFFF else s

    @property
    def next_position(self) -> int:
        return self.position + self.size


# Batches of more records than this are not held as a list: their records stream
# (a :class:`RecordSource`), this many at a time.
STREAM_RECORDS = 4096

# A hexdump records the spans of at most this many records (or inner messages) of a batch.
SPAN_RECORDS = 10_000


class RecordSource:
    """The records of a batch too large to hold as a list, decoded again from the batch's bytes
    each time they are read, :data:`STREAM_RECORDS` at a time (a subclass says how: ``runs``).

    Behaves as a read-only sequence for the uses of ``Batch.records``: ``len``, truth,
    iteration (again and again), ``[i]`` (linear in ``i``); :meth:`chunks` gives the runs
    as lists for the fast writers.  The findings were taken when the batch was decoded.
    """

    def __init__(self, decoded: int, keep: Callable[[Record], bool] | None = None):
        self.decoded = decoded  # records the batch decodes to (before ``keep``)
        self.keep = keep
        self._count = None if keep is not None else decoded

    def runs(self) -> Iterator[list[Record]]:
        """Every record, a list of at most :data:`STREAM_RECORDS` at a time (``keep`` not applied)."""
        raise NotImplementedError

    def filtered(self, keep: Callable[[Record], bool]) -> RecordSource:
        """The same records, only those ``keep`` keeps."""
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        RecordSource.__init__(other, self.decoded, keep)
        return other

    def chunks(self) -> Iterator[list[Record]]:
        """The records, a list of at most :data:`STREAM_RECORDS` at a time."""
        keep = self.keep
        for recs in self.runs():
            if keep is not None:
                recs = [r for r in recs if keep(r)]
            if recs:
                yield recs

    @property
    def count(self) -> int:
        """How many records there are (for a filtered stream: counted once, by a pass)."""
        if self._count is None:
            self._count = sum(map(len, self.chunks()))
        return self._count

    def __iter__(self) -> Iterator[Record]:
        for recs in self.chunks():
            yield from recs

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        if self._count is None:
            return next(self.chunks(), None) is not None
        return self._count > 0

    def __getitem__(self, i: int) -> Record:
        if not isinstance(i, int):
            raise TypeError("a record stream is indexed by position only")
        if i < 0:
            i += self.count
        for k, r in enumerate(self):
            if k == i:
                return r
        raise IndexError(i)


# A list of records whose batch holds more bytes than this is written in runs of about this
# many key and value bytes (a writer's text for the run is then bounded too).
CHUNK_BYTES = 4 << 20


def record_chunks(records: Iterable[Record], size_hint: int = 0) -> Iterator[list[Record]]:
    """``records`` (a list, a :class:`RecordSource` or any iterable) as lists of bounded length;
    ``size_hint``: the bytes of the batch (past :data:`CHUNK_BYTES`, a list goes by bytes)."""
    if isinstance(records, RecordSource):
        yield from records.chunks()
    elif isinstance(records, list):
        if size_hint <= CHUNK_BYTES:
            if records:
                yield records
            return
        start = held = 0
        for i, r in enumerate(records):
            held += len(r.key or b"") + len(r.value or b"")
            if held >= CHUNK_BYTES:
                yield records[start:i + 1]
                start, held = i + 1, 0
        if start < len(records):
            yield records[start:]
    else:
        chunk: list[Record] = []
        for r in records:
            chunk.append(r)
            if len(chunk) >= STREAM_RECORDS:
                yield chunk
                chunk = []
        if chunk:
            yield chunk


class Gap:
    """Bytes between batches that belong to no batch: garbage, padding, a cut tail."""

    __slots__ = ("file", "position", "size", "findings")

    def __init__(self, file: str, position: int, size: int, findings: list[Finding]):
        self.file = file
        self.position = position
        self.size = size
        self.findings = findings


# a window's record selection: (from_offset, to_offset, from_time, to_time), inclusive, int64; these
# bounds keep every record (reports.query.RecordQuery.run_bounds makes the others)
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
EVERY_RECORD = (INT64_MIN, INT64_MAX, INT64_MIN, INT64_MAX)


class PlainRun:
    """A window of plain batches the walk has nothing to say about, handed on undecoded: intact,
    uncompressed, non-control v2 batches in offset order whose records are plain and agree with
    their header (the compiled walk checked them: ``accel/batchstep.c``'s ``plain_window``).

    ``data[position - base:position - base + size]`` holds its ``batches`` batches (``records``
    records checked).  The lines of its records are those ``bounds`` keep (``EVERY_RECORD``, or a
    query's offset and time bounds: its batches pruned by header first, as ``Options.select``
    does); ``options``: the walk's, for the pure-Python twin, which decodes the same bytes batch
    by batch (``decoders.batches.walk.run_batches``).  No findings, ever.
    """

    __slots__ = ("file", "position", "size", "data", "base", "batches", "records", "bounds", "options", "findings")

    def __init__(self, file: str, position: int, size: int, data: Any, base: int, batches: int, records: int,
                 bounds: tuple[int, int, int, int], options: Any) -> None:
        self.file = file
        self.position = position
        self.size = size
        self.data = data
        self.base = base
        self.batches = batches
        self.records = records
        self.bounds = bounds
        self.options = options
        self.findings: list[Finding] = []
