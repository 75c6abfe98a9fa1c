"""The field registry of the record contract: each field of a record line registered once.

A field's JSON name, how its value is read from the decoded objects, how it is encoded, which
records carry it, its table column and its Spark column are all written here, and only here.
``tools/gen_fields.py`` writes from this table the code that builds and writes records:

* ``objects/record_fields.py``: the record object's fields (``records.record_object`` adds the
  capture's sighting and the payload fields after them);
* ``render/record_code.py``: the fast line writer of ``records --json`` (straight-line Python, one
  f-string per line) and the cells of the records table;
* ``accel/record_fields.h``: the per-record fields the compiled line writer writes, in order (the
  text between them comes from Python: :func:`kafkadump.render.record_code.plain_segments`);
* ``spark/record_row_code.py``: the ``records`` level's Spark columns and how each is filled.

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

__all__ = ["Field", "ColumnSpec", "RECORD_FIELDS"]
