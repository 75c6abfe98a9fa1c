"""``kafkadump txn``: transactions as a table, or as JSON Lines.

Input is the transaction report (:class:`kafkadump.reports.transactions.TxnReport`);
its objects come from :mod:`kafkadump.objects.transaction_objects`.  The table
has one row per transaction and partition, hanging ones first, each hanging
partition followed by why and the command that ends it; a closing summary
says which partitions are stuck at which last stable offset.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

from kafkadump.objects.transaction_objects import (
    BOOTSTRAP_PLACEHOLDER,
    abort_command,
    transaction_object,
    transactions_summary_object,
)
from kafkadump.render import describe as d
from kafkadump.render.jsontext import dumps
from kafkadump.render.table import Column, TableLayout, TableStream

if TYPE_CHECKING:
    from rich.console import Console

    from kafkadump.reports.transactions import Transaction, TxnPartition, TxnReport

TXN_COLUMNS = (
    Column("state", 9, False, 1), Column("transactionalId", 24, False, 2, 12), Column("producerId", 10, True, 3),
    Column("epoch", 5, True, 4), Column("partition", 30, False, 5, 14, name=True), Column("offsets", 23, False, 6),
    Column("marker", 12, False, 7), Column("firstTimestamp", 24, False, 9), Column("lastTimestamp", 24, False, 10),
    Column("coordinator", 0, False, 8),
)

_STYLE = {"hanging": "bold red", "ongoing": "yellow", "aborted": "cyan", "committed": None}


def _coordinator_cell(t: Transaction) -> str:
    c = t.coordinator
    if c is None:
        return "-"
    where = f" __transaction_state-{c.state_partition}" if c.state_partition is not None else ""
    return f"{c.state}{where} timeout={c.timeout_ms}ms"


def _cells(t: Transaction, p: TxnPartition) -> list[object]:
    s = p.span
    marker = f"{s.marker}@{s.marker_offset}" if s.marker else "-"
    last = s.marker_timestamp if s.marker_timestamp is not None else s.last_timestamp
    tid = "-" if t.transactional_id is None else t.transactional_id
    return [p.state, tid, t.producer_id, t.producer_epoch, f"{p.topic}-{p.partition}",
            f"{s.first_offset}..{s.last_offset}", marker, d.iso_ms(s.first_timestamp), d.iso_ms(last),
            _coordinator_cell(t)]


def write_txn_table(report: TxnReport, out: TextIO, console: Console | None = None,
                    layout: TableLayout | None = None, bootstrap: str = BOOTSTRAP_PLACEHOLDER,
                    states: Iterable[str] | None = None) -> None:
    table = TableStream(out, TXN_COLUMNS, console, layout)
    keep = None if states is None else set(states)
    for t in report.listed(states):
        # a transaction hanging in one partition and committed in another: --state hanging shows the hanging row
        for p in t.partitions if keep is None else [p for p in t.partitions if p.state in keep]:
            table.row(_cells(t, p), _STYLE.get(p.state))
            if p.state in ("hanging", "ongoing") and p.reason:
                table.note(f"    {p.state}: {p.reason}; last stable offset {p.last_stable_offset} "
                           f"(log end {p.log_end_offset})", _STYLE.get(p.state))
            if p.state == "hanging":
                table.labelled_command("    end it: ", abort_command(p.topic, p.partition, p.span.first_offset,
                                                                     bootstrap), "bold")
        if t.transactional_id is not None and t.coordinator_partition is not None and t.state == "hanging":
            table.note(f"    transactional id {t.transactional_id!r} lives in __transaction_state-"
                       f"{t.coordinator_partition}")
    for line in summary_lines(report):
        table.note(line, "bold")


def summary_lines(report: TxnReport) -> list[str]:
    s = transactions_summary_object(report)
    lines = [f"transactions: {s['transactions']} ({s['committed']} committed, {s['aborted']} aborted, "
             f"{s['ongoing']} ongoing, {s['hanging']} hanging"
             + (f"; {s['notListed']} not listed" if s["notListed"] else "") + f") in {s['partitions']} partitions"]
    parts = s["statePartitions"]
    lines.append("coordinator records: " + (f"{s['coordinators']} transactional ids from __transaction_state-"
                                            + ",".join(str(p) for p in parts) if parts else
                                            "none on disk (collect the __transaction_state partitions)"))
    for x in s["lookups"]:
        where = f"__transaction_state-{x['coordinatorPartition']}"
        seen = ("read, and it holds records of it" if x["known"] else "read, with no record of it") \
            if x["onDisk"] else "not among the inputs: collect it"
        lines.append(f"transactional id {x['transactionalId']!r} lives in {where} ({seen})")
    for p in s["stuckPartitions"]:
        lines.append(f"stuck: {p['topic']}-{p['partition']} at last stable offset {p['lastStableOffset']} "
                     f"(log end {p['logEndOffset']})")
    for f in s["findings"]:
        lines.append(f"{f['severity']}: {f['code']}: {f['message']}")
    return lines


def write_txn_json(report: TxnReport, out: TextIO, bootstrap: str = BOOTSTRAP_PLACEHOLDER,
                   states: Iterable[str] | None = None) -> None:
    for t in report.listed(states):
        out.write(dumps(transaction_object(t, bootstrap)) + "\n")
    out.write(dumps(transactions_summary_object(report)) + "\n")


__all__ = ["write_txn_table", "write_txn_json", "summary_lines", "TXN_COLUMNS"]
