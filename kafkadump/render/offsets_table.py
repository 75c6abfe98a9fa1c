"""``kafkadump offsets``: partitions' offsets and groups' commits and lag, as tables or JSON Lines.

Input is the items of :func:`kafkadump.reports.offsets.offsets_report`;
their objects come from :mod:`kafkadump.objects.offset_objects`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

from kafkadump.objects.offset_objects import group_offset_object, offsets_summary_object, partition_offsets_object
from kafkadump.render import describe as d
from kafkadump.render.jsontext import dumps
from kafkadump.render.table import Column, TableLayout, TableStream

if TYPE_CHECKING:
    from rich.console import Console

    from kafkadump.reports.offsets import GroupOffset, OffsetsSummary, PartitionOffsets

PARTITION_COLUMNS = (
    Column("partition", 36, False, 1, 16, name=True), Column("earliest", 12, True, 2), Column("logEnd", 12, True, 3),
    Column("highWatermark", 13, True, 4), Column("maxTimestamp", 24, False, 6), Column("atOffset", 12, True, 7),
    Column("offsetForTime", 13, True, 5),
)
GROUP_COLUMNS = (
    Column("group", 28, False, 1, 12), Column("partition", 36, False, 2, 16, name=True), Column("committed", 12, True, 3),
    Column("logEnd", 12, True, 5), Column("lag", 10, True, 4), Column("commitTimestamp", 24, False, 6),
    Column("coordinator", 0, False, 7),
)


def _n(x: object) -> str:
    return "-" if x is None else str(x)


def _partition_cells(p: PartitionOffsets) -> list[object]:
    return [f"{p.topic}-{p.partition}" if p.topic is not None else p.path, _n(p.earliest), _n(p.log_end),
            _n(p.high_watermark), d.iso_ms(p.max_timestamp) if p.max_timestamp is not None else "-",
            _n(p.max_timestamp_offset), _n(p.offset_for_time)]


def _group_cells(g: GroupOffset) -> list[object]:
    committed = "deleted" if g.deleted else _n(g.committed)
    return [g.group, f"{g.topic}-{g.partition}", committed, _n(g.log_end), _n(g.lag),
            d.iso_ms(g.commit_timestamp) if g.commit_timestamp is not None else "-",
            f"__consumer_offsets-{g.offsets_partition} (expected {g.coordinator_partition})"
            if g.offsets_partition != g.coordinator_partition else f"__consumer_offsets-{g.offsets_partition}"]


def write_offsets_table(items: Iterable[PartitionOffsets | GroupOffset | OffsetsSummary], out: TextIO,
                        console: Console | None = None, layout: TableLayout | None = None) -> None:
    from kafkadump.reports.offsets import GroupOffset, PartitionOffsets

    parts = TableStream(out, PARTITION_COLUMNS, console, layout, (GROUP_COLUMNS,))
    groups: TableStream | None = None
    for it in items:
        if isinstance(it, PartitionOffsets):
            bad = sum(it.finding_counts.values())
            parts.row(_partition_cells(it))
            if bad:
                parts.note(f"    {bad} findings while reading it (kafkadump triage tells more)", "yellow")
        elif isinstance(it, GroupOffset):
            if groups is None:
                parts.note("")
                groups = TableStream(out, GROUP_COLUMNS, console, layout, (PARTITION_COLUMNS,))
            groups.row(_group_cells(it), "red" if it.findings else None)
            for f in it.findings:
                groups.note(f"    {f.severity.value}: {f.code.value}: {f.message}", "red")
        else:
            s = offsets_summary_object(it)
            parts.note(f"partitions: {s['partitions']}; groups: {s['groups']}, {s['groupOffsets']} group offsets "
                       f"listed from {s['commits']} commits and {s['tombstones']} tombstones; "
                       f"{s['beyondLogEnd']} beyond the log end", "bold")
            for x in s["lookups"]:
                seen = ("read, and it holds commits of it" if x["known"] else "read, with no commit of it") \
                    if x["onDisk"] else "not among the inputs: collect it"
                parts.note(f"group {x['group']!r} lives in __consumer_offsets-{x['coordinatorPartition']} ({seen})")
            for f in s["findings"]:
                parts.note(f"{f['severity']}: {f['code']}: {f['message']}", "yellow")


def write_offsets_json(items: Iterable[PartitionOffsets | GroupOffset | OffsetsSummary], out: TextIO) -> None:
    from kafkadump.reports.offsets import GroupOffset, PartitionOffsets

    for it in items:
        if isinstance(it, PartitionOffsets):
            obj = partition_offsets_object(it)
        elif isinstance(it, GroupOffset):
            obj = group_offset_object(it)
        else:
            obj = offsets_summary_object(it)
        out.write(dumps(obj) + "\n")


__all__ = ["write_offsets_table", "write_offsets_json", "PARTITION_COLUMNS", "GROUP_COLUMNS"]
