"""The field registry of the record contract: each field of a record line registered once.

A field's JSON name, how its value is read from the decoded objects, how it is encoded, which
records carry it, its table column and its Spark column are all written here, and only here.
``tools/gen_fields.py`` writes from this table the code that builds and writes records:

* ``objects/generated_fields.py``: the record object's fields (``records.record_object`` adds the
  capture's sighting and the payload fields after them);
* ``render/generated_lines.py``: the fast line writer of ``records --json`` (straight-line Python, one
  f-string per line) and the cells of the records table;
* ``accel/generated_fields.h``: the per-record fields the compiled line writer writes, in order (the
  text between them comes from Python: :func:`kafkadump.render.generated_lines.plain_segments`);
* ``spark/generated_rows.py``: the ``records`` level's Spark columns and how each is filled; the
  ``batches`` level's columns.

Batch lines (:data:`BATCH_FIELDS`), gap lines (:data:`GAP_FIELDS`) and findings (:data:`FINDING_FIELDS`,
in every object that lists them) are registered the same way:
their objects, the fast v2 batch line, the batch table and the ``batches`` level's Spark columns are
generated from them; the compiled batch writer reads the header integers' names and slots from
``accel/generated_fields.h``.

Adding a field: a row in :data:`RECORD_FIELDS` (fields are only ever added, and only at the end
of their kind of record: ``legacy`` fields after the others), ``python tools/gen_fields.py``,
``pip install -e .`` (rebuilds the compiled writer), the man page's JSON contract.
``tests/test_field_registry.py`` checks the generated files are current and that a new field
reaches the JSON line, the table, the compiled writer and a Spark row.

The expressions are Python over ``r`` (the :class:`~kafkadump.decoders.batches.model.Record`),
``b`` (its :class:`~kafkadump.decoders.batches.model.Batch`) and ``where`` (its
:class:`~kafkadump.reports.places.Place`); a field's value is JSON-ready after its ``kind``'s
encoding:

``const``   a literal (``value`` is the JSON text)
``int``     an int or null
``bool``    true, false or null
``text``    a string or null
``bytes``   bytes or null, encoded per ``--encoding``
``headers`` a list of (str, bytes or None), written as ``[{"key": ..., "value": ...}]``
``json``    any JSON-ready value (``json.dumps``)

``scope`` says how often a field's value changes in a plain v2 batch (not control, no legacy
fields): ``file`` (per file and place: the line's head), ``batch`` (one value for every record of
the batch: ``plain`` is its JSON text as a Python expression over ``b`` and ``tst``, the batch's
timestamp type), ``record`` (per record: written by the compiled writer too, ``c`` naming the
value there: a ``Record`` slot, ``R_*``, read by ``format_lines``; the run's variable in
``format_run``).
"""

from __future__ import annotations

from typing import Any, NamedTuple


class ColumnSpec(NamedTuple):
    """A field's column in the records table: its place among the columns (``at``), title, width
    (characters), right-aligned, priority
    (lower: kept first when the terminal is narrow), min_width (a value column that narrows and widens
    with the terminal); ``cell``: the cell as a Python expression over ``r`` (and ``preview`` /
    ``header_preview``: how many characters of a value or header value to show), ``view_cell`` under
    the payload options (``view``), ``control_cell`` for a control record (None: ``cell``)."""

    at: int
    title: str
    width: int
    right: bool
    priority: int
    min_width: int
    cell: str
    view_cell: str | None = None
    control_cell: str | None = None


class Field(NamedTuple):
    name: str                          # the JSON name
    value: str                         # the value: a Python expression (``const``: its JSON text)
    kind: str                          # const, int, bool, text, bytes, headers, json
    scope: str = "record"              # file, batch, record (see the module's doc)
    plain: str | None = None           # scope batch: the JSON text in a plain v2 batch (Python over b, tst)
    c: tuple[str, str] | None = None   # scope record: (the Record slot, format_run's variable)
    legacy: bool = False               # only in records of magic 0/1 message sets
    spark: Any = None                  # the Spark column's type (spark/row_schema's ColumnType); None: none
    spark_value: str | None = None     # the Spark value, when not ``value`` (Python over r, b)
    column: ColumnSpec | None = None   # the table column; None: not in the table
    optional: bool = False             # absent from the object when null (finding fields)


_CONTROL_VALUE = ("f\"<{r.control.get('type')}\" + (f\" coordinatorEpoch={r.control['coordinatorEpoch']}\" "
                  "if 'coordinatorEpoch' in r.control else '') + '>'")

RECORD_FIELDS: tuple[Field, ...] = (
    Field("type", '"record"', "const", "file", spark="string"),
    Field("file", "b.file", "text", "file", spark="string"),
    Field("topic", "where.topic", "text", "file"),          # Spark's topic and partition come first, per task
    Field("partition", "where.partition", "int", "file"),
    Field("batchPosition", "b.position", "int", "batch", plain="str(b.position)", spark="bigint"),
    Field("offset", "r.offset", "int", c=("R_OFFSET", "offset"), spark="bigint",
          column=ColumnSpec(0, "offset", 11, True, 1, 0, "r.offset")),
    Field("timestamp", "r.timestamp", "int", c=("R_TIMESTAMP", "timestamp"), spark="timestamp",
          column=ColumnSpec(1, "timestamp", 24, False, 2, 0, "d.iso_ms(r.timestamp)")),
    Field("timestampType", "r.timestamp_type", "text", "batch", plain="'\"' + str(tst) + '\"'", spark="string"),
    Field("key", "r.key", "bytes", c=("R_KEY", "key"), spark="binary",
          column=ColumnSpec(4, "key", 24, False, 3, 12, 'framed_cell(r.key, r.headers, "key", preview)',
                            'payload_cell(r.key, view.key, view.masked_whole("key"), preview)', '"<control>"')),
    Field("value", "r.value", "bytes", c=("R_VALUE", "value"), spark="binary",
          column=ColumnSpec(5, "value", 40, False, 4, 16, 'framed_cell(r.value, r.headers, "value", preview)',
                            "view_value_cell(r, view, preview)", _CONTROL_VALUE)),
    Field("headers", "r.headers", "headers", c=("R_HEADERS", "headers"),
          spark=("array", ("struct", [("key", "string"), ("value", "binary")])),
          column=ColumnSpec(6, "headers", 24, False, 5, 10, "headers_cell(r.headers, header_preview)",
                            "view_headers_cell(r.headers, view, header_preview)")),
    Field("offsetDelta", "r.offset_delta", "int", c=("R_OFFSET_DELTA", "offset_delta"), spark="int",
          column=ColumnSpec(2, "Δoff", 5, True, 6, 0, '"-" if r.offset_delta is None else r.offset_delta')),
    Field("timestampDelta", "r.timestamp_delta", "int", c=("R_TIMESTAMP_DELTA", "timestamp_delta"), spark="bigint",
          column=ColumnSpec(3, "Δts", 7, True, 7, 0, '"-" if r.timestamp_delta is None else r.timestamp_delta')),
    Field("control", "r.control", "json", "batch", plain='"null"',
          spark=("struct", [("type", "string"), ("version", "int"), ("valueVersion", "int"),
                            ("coordinatorEpoch", "int")])),
    Field("magic", "r.magic", "int", legacy=True, spark="int"),
    Field("crc", "r.crc", "int", legacy=True, spark="bigint"),
    Field("crcValid", "r.crc == r.computed_crc", "bool", legacy=True, spark="boolean"),
)



class BatchField(NamedTuple):
    """A field of a batch line (``batches --json``: a v2 batch or a top-level legacy message).

    ``group``: ``head`` (every batch, first), ``v2`` (a v2 batch's header and what follows from it),
    ``legacy`` (a magic 0/1 message's, in place of the v2 group; a name may be in both), ``tail``
    (every batch, last).  ``value``: Python over ``b`` (the Batch) and ``where`` (its Place).
    ``c``: the Batch slot (``B_*``) the compiled batch writer reads a v2 header integer from (the
    head's and v2 group's fields with one come first, in order: the writer writes those from the
    registry, the rest of a v2 line it computes itself).  ``optional``: absent when null.
    """

    name: str
    value: str
    kind: str                          # const, int, bool, text, json
    group: str
    c: str | None = None
    optional: bool = False
    spark: Any = None
    column: ColumnSpec | None = None   # ``cell``: Python over ``b``


_H = "head"
BATCH_FIELDS: tuple[BatchField, ...] = (
    BatchField("type", '"batch"', "const", _H, spark="string"),
    BatchField("file", "b.file", "text", _H, spark="string"),
    BatchField("topic", "where.topic", "text", _H),
    BatchField("partition", "where.partition", "int", _H),
    BatchField("position", "b.position", "int", _H, "B_POSITION", spark="bigint",
               column=ColumnSpec(0, "position", 10, True, 1, 0, "b.position")),
    BatchField("size", "b.size", "int", _H, "B_SIZE", spark="bigint",
               column=ColumnSpec(3, "size", 7, True, 6, 0, "b.size")),
    BatchField("baseOffset", "b.base_offset", "int", "v2", "B_BASE_OFFSET", spark="bigint",
               column=ColumnSpec(1, "baseOffset", 11, True, 2, 0, '"-" if b.base_offset is None else b.base_offset')),
    BatchField("batchLength", "b.batch_length", "int", "v2", "B_BATCH_LENGTH", spark="int"),
    BatchField("partitionLeaderEpoch", "b.partition_leader_epoch", "int", "v2", "B_LEADER_EPOCH", spark="int",
               column=ColumnSpec(12, "leaderEpoch", 11, True, 13, 0,
                                 '"-" if b.partition_leader_epoch is None else b.partition_leader_epoch')),
    BatchField("magic", "b.magic", "int", "v2", "B_MAGIC", spark="int",
               column=ColumnSpec(4, "magic", 5, True, 14, 0, "b.magic")),
    BatchField("crc", "b.crc", "int", "v2", "B_CRC", spark="bigint"),
    BatchField("attributes", "b.attributes", "int", "v2", "B_ATTRIBUTES", spark="int",
               column=ColumnSpec(7, "flags", 5, False, 9, 0, "d.flags(b)")),
    BatchField("lastOffsetDelta", "b.last_offset_delta", "int", "v2", "B_LAST_OFFSET_DELTA", spark="int"),
    BatchField("baseTimestamp", "b.base_timestamp", "int", "v2", "B_BASE_TIMESTAMP", spark="bigint"),
    BatchField("maxTimestamp", "b.max_timestamp", "int", "v2", "B_MAX_TIMESTAMP", spark="bigint",
               column=ColumnSpec(13, "maxTimestamp", 24, False, 8, 0,
                                 "d.iso_ms(b.max_timestamp if b.magic >= 2 else b.timestamp)")),
    BatchField("producerId", "b.producer_id", "int", "v2", "B_PRODUCER_ID", spark="bigint",
               column=ColumnSpec(8, "producerId", 10, True, 10, 0, '"-" if b.producer_id is None else b.producer_id')),
    BatchField("producerEpoch", "b.producer_epoch", "int", "v2", "B_PRODUCER_EPOCH", spark="int",
               column=ColumnSpec(9, "epoch", 5, True, 11, 0, '"-" if b.producer_epoch is None else b.producer_epoch')),
    BatchField("baseSequence", "b.base_sequence", "int", "v2", "B_BASE_SEQUENCE", spark="int",
               column=ColumnSpec(10, "seq", 10, True, 12, 0, "sequence_cell(b)")),
    BatchField("recordCount", "b.record_count", "int", "v2", "B_RECORD_COUNT", spark="int",
               column=ColumnSpec(11, "count", 6, True, 4, 0, '"-" if b.record_count is None else b.record_count')),
    BatchField("lastOffset", "b.last_offset", "int", "v2", spark="bigint",
               column=ColumnSpec(2, "lastOffset", 11, True, 3, 0, '"-" if b.last_offset is None else b.last_offset')),
    BatchField("lastSequence", "b.last_sequence", "int", "v2", spark="int"),
    BatchField("offset", "b.offset", "int", "legacy", spark="bigint"),
    BatchField("messageSize", "b.message_size", "int", "legacy", spark="int"),
    BatchField("magic", "b.magic", "int", "legacy"),
    BatchField("crc", "b.crc", "int", "legacy"),
    BatchField("attributes", "b.attributes", "int", "legacy"),
    BatchField("timestamp", "b.timestamp", "int", "legacy", spark="timestamp"),
    BatchField("baseOffset", "b.base_offset", "int", "legacy"),
    BatchField("lastOffset", "b.last_offset", "int", "legacy"),
    BatchField("recordCount", "b.record_count", "int", "legacy"),
    # what Kafka reports for a legacy batch, so that one jq filter serves every magic
    BatchField("partitionLeaderEpoch", "-1", "const", "legacy"),
    BatchField("producerId", "-1", "const", "legacy"),
    BatchField("producerEpoch", "-1", "const", "legacy"),
    BatchField("baseSequence", "-1", "const", "legacy"),
    BatchField("compression", "b.compression", "text", "tail", spark="string",
               column=ColumnSpec(5, "codec", 6, False, 7, 0, "b.compression")),
    BatchField("timestampType", "b.timestamp_type", "text", "tail", spark="string",
               column=ColumnSpec(6, "tsType", 13, False, 15, 0, 'b.timestamp_type or "-"')),
    BatchField("isTransactional", "b.is_transactional", "bool", "tail", spark="boolean"),
    BatchField("isControlBatch", "b.is_control", "bool", "tail", spark="boolean"),
    BatchField("hasDeleteHorizonMs", "b.has_delete_horizon", "bool", "tail", spark="boolean"),
    BatchField("crcValid", "b.crc_valid", "bool", "tail", spark="boolean",
               column=ColumnSpec(14, "crc", 4, False, 5, 0, "d.crc_verdict(b.crc_valid)")),
    BatchField("computedCrc", "b.computed_crc", "int", "tail", spark="bigint"),
    BatchField("decompressedSize", "b.decompressed_size", "int", "tail", optional=True, spark="bigint"),
    BatchField("findings", "[finding_fields(f) for f in b.findings]", "json", "tail"),
)

# a gap line: bytes that are not a batch
GAP_FIELDS: tuple[Field, ...] = (
    Field("type", '"gap"', "const", "file"),
    Field("file", "g.file", "text", "file"),
    Field("topic", "where.topic", "text", "file"),
    Field("partition", "where.partition", "int", "file"),
    Field("position", "g.position", "int"),
    Field("size", "g.size", "int"),
    Field("findings", "[finding_fields(f) for f in g.findings]", "json"),
)

# a finding, as every object that lists findings carries it (``f``: the Finding)
FINDING_FIELDS: tuple[Field, ...] = (
    Field("code", "f.code.value", "text"),
    Field("severity", "f.severity.value", "text"),
    Field("offset", "f.offset", "int"),
    Field("message", "f.message", "text"),
    Field("length", "f.length", "int", optional=True),
    Field("decompressedOffset", "f.source_offset", "int", optional=True),
)

__all__ = ["Field", "ColumnSpec", "BatchField", "RECORD_FIELDS", "BATCH_FIELDS", "GAP_FIELDS", "FINDING_FIELDS"]
