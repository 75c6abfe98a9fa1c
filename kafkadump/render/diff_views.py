"""``kafkadump diff``: its items as JSON Lines, or a line per divergent run and the one-line verdict.

The objects are :mod:`kafkadump.objects.replica_objects`'; the lines read the same values.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

from kafkadump.objects import replica_objects as R
from kafkadump.render import jsontext
from kafkadump.render.lines import LineWriter
from kafkadump.reports.diff import CopyProblems, DiffItem, Divergence

if TYPE_CHECKING:
    from rich.console import Console

_PATTERN_TEXT = {"compaction-hole": "compaction hole in {other} (not loss)",
                 "log-start": "before {other}'s first offset (its retention or log start)",
                 "tail": "past {other}'s last offset ({other} never had it, or lost it)",
                 "damaged": "{other}'s bytes there are damaged (lost)"}


def diff_item_object(item: DiffItem) -> dict[str, Any]:
    if isinstance(item, Divergence):
        return R.divergence_object(item)
    if isinstance(item, CopyProblems):
        return R.copy_problems_object(item)
    return R.diff_object(item)


def write_diff_json(items: Iterable[DiffItem], out: TextIO) -> None:
    for item in items:
        out.write(jsontext.dumps(diff_item_object(item)) + "\n")


def _epoch(e: int | None) -> str:
    return "-" if e is None else str(e)


def _range(o: dict[str, Any]) -> str:
    return str(o["fromOffset"]) if o["fromOffset"] == o["toOffset"] else f"{o['fromOffset']}..{o['toOffset']}"


def divergence_line(o: dict[str, Any]) -> str:
    kind = o["kind"]
    n = f"{o['records']} record{'s' if o['records'] != 1 else ''}"
    if kind == "different":
        what = f"differ   {n:>14}  leader epoch A {_epoch(o['leaderEpochA'])} / B {_epoch(o['leaderEpochB'])}" \
               f"  ({', '.join(o['fields'])})"
    else:
        mine, other = ("A", "B") if kind == "only-in-a" else ("B", "A")
        epoch = o["leaderEpochA"] if mine == "A" else o["leaderEpochB"]
        why = _PATTERN_TEXT.get(o["pattern"] or "", "").format(other=other)
        what = f"only in {mine} {n:>14}  leader epoch {mine} {_epoch(epoch)}  {why}"
    return f"  {_range(o):>23}  {what}"


def _epochs(side: dict[str, Any]) -> str:
    es = side["leaderEpochs"]
    if not es:
        return "no leader epochs"
    shown = ", ".join(f"{e['epoch']}@{e['startOffset']}" for e in es[-4:])
    return f"leader epochs {'..., ' if len(es) > 4 else ''}{shown}"


def _own_epoch(run: dict[str, Any]) -> int | None:
    """The leader epoch of a run's records in the copy that has them."""
    return run["leaderEpochA"] if run["kind"] == "only-in-a" else run["leaderEpochB"]


def _joined_tail(tail: dict[str, Any] | None, run: dict[str, Any]) -> dict[str, Any]:
    """The tail runs of one copy as one: from the first run's offset to the last's, their records
    summed, the leader epochs of the first and the last run (a copy's tail may be listed as several
    runs, one per leader epoch)."""
    if tail is None or tail["kind"] != run["kind"]:
        return {**run, "firstEpoch": _own_epoch(run)}
    return {**run, "fromOffset": tail["fromOffset"], "records": tail["records"] + run["records"],
            "firstEpoch": tail["firstEpoch"]}


def _tail_text(tail: dict[str, Any], o: dict[str, Any]) -> str:
    """``B has offsets 12..13 (2 records, leader epoch 2) that A lacks`` (the records counted as the
    summary counts them; ``leader epochs 1..4`` when the runs joined span several)."""
    mine, other = ("A", "B") if tail["kind"] == "only-in-a" else ("B", "A")
    first, last = tail.get("firstEpoch", _own_epoch(tail)), _own_epoch(tail)
    epochs = f"leader epoch {_epoch(last)}" if first == last else f"leader epochs {_epoch(first)}..{_epoch(last)}"
    by = o["onlyInAByPattern"] if mine == "A" else o["onlyInBByPattern"]
    n = by.get("tail", tail["records"])
    return f"{mine} has offsets {_range(tail)} ({n} record{'s' if n != 1 else ''}, {epochs}) that {other} lacks"


def _explained(o: dict[str, Any]) -> tuple[list[str], list[str]]:
    """What each copy lacks by damage (lost), and by compaction or retention (not loss)."""
    lost, cleanup = [], []
    for mine, other in (("A", "B"), ("B", "A")):
        by = o["onlyInAByPattern"] if mine == "A" else o["onlyInBByPattern"]
        if by.get("damaged"):
            lost.append(f"{other} lost {by['damaged']} of {mine}'s records to damage")
        if by.get("compaction-hole"):
            cleanup.append(f"{by['compaction-hole']} of {mine}'s offsets are compaction holes in {other}")
        if by.get("log-start"):
            cleanup.append(f"{by['log-start']} of {mine}'s offsets are before {other}'s first offset")
    return lost, cleanup


def verdict_line(o: dict[str, Any], ranges: list[dict[str, Any]], tail: dict[str, Any] | None) -> str:
    """What a person needs, in one line: where the copies agree up to, where they diverge, what each
    has that the other lost, with leader epochs."""
    v, a, b = o["verdict"], o["a"], o["b"]
    through = (f"agree through offset {o['identicalThrough']}" if o["identicalThrough"] is not None
               else "agree on no offset")
    lost, cleanup = _explained(o)
    if v == "identical":
        return (f"IDENTICAL: A and B hold the same {o['same']} records, offsets {a['firstOffset']}..{a['lastOffset']}"
                f" ({_epochs(a)})")
    parts = []
    if v == "diverged":
        head = f"DIVERGED: A and B {through}; they diverge at offset {o['firstDivergentOffset']}"
        if ranges:
            shown = sum(r["records"] for r in ranges)
            parts.append("; ".join(f"offsets {_range(r)} differ ({r['records']} records: A leader epoch "
                                   f"{_epoch(r['leaderEpochA'])}, B leader epoch {_epoch(r['leaderEpochB'])})"
                                   for r in ranges)
                         + (f" and {o['different'] - shown} more" if o["different"] > shown else "")
                         + "; each copy's records at those offsets are lost from the other")
            if any(r["leaderEpochA"] != r["leaderEpochB"] for r in ranges):
                parts[-1] += " (different leader epochs: the usual sign of a truncation after an unclean election)"
    elif v in ("a-contains-b", "b-contains-a"):
        big, small = ("A", "B") if v == "a-contains-b" else ("B", "A")
        head = f"{big} CONTAINS {small}: A and B {through}"
    else:
        head = f"EQUIVALENT: A and B {through}; no offset differs, neither goes past the other's end"
    if tail is not None:
        parts.append(_tail_text(tail, o))
    parts += lost
    text = ": ".join([head, parts[0]]) if v == "diverged" and ranges else head
    rest = parts[1:] if v == "diverged" and ranges else parts
    if rest:
        text += "; " + "; ".join(rest)
    if cleanup:
        text += "; not loss: " + ", ".join(cleanup)
    return text + f"  [A: {_epochs(a)}; B: {_epochs(b)}]"


def write_diff_table(items: Iterable[DiffItem], out: TextIO, console: Console | None = None) -> None:
    lines = LineWriter(out, console)
    ranges: list[dict[str, Any]] = []
    tail: dict[str, Any] | None = None
    for item in items:
        o = diff_item_object(item)
        if o["type"] == "divergence":
            lines.line(divergence_line(o), "red" if o["kind"] == "different" else
                       "yellow" if o["pattern"] == "tail" else "dim")
            if o["kind"] == "different" and len(ranges) < 3:
                ranges.append(o)
            if o["pattern"] == "tail" and o["kind"] != "different":
                tail = _joined_tail(tail, o)
        elif o["type"] == "findings":
            for f in o["findings"]:
                lines.line(f"  {o['side'].upper()}: {f['severity']} {f['code']} at {o['file']}:{f['offset']}: "
                           f"{f['message']}", "yellow")
        else:
            style = {"identical": "bold green", "diverged": "bold red"}.get(o["verdict"], "bold")
            lines.line(verdict_line(o, ranges, tail), style)


__all__ = ["diff_item_object", "write_diff_json", "write_diff_table", "verdict_line", "divergence_line"]
