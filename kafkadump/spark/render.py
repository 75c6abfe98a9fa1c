"""The fleet summary of ``spark triage`` (and ``spark scan``'s closing line) as text or JSON Lines.

Input is the plain dict :func:`kafkadump.spark.jobs.triage` returns (no
Spark objects), so this renders without Spark and could equally render a
summary built by the single-process ``triage``.
"""

from __future__ import annotations

import json
import os

from ..describe import iso_ms
from ..render.table import Column, TableStream

PARTITION_COLUMNS = (
    Column("topic-partition", 40), Column("verdict", 8), Column("files", 5, True), Column("batches", 9, True),
    Column("records", 11, True), Column("bytes", 13, True), Column("offsets", 25, True),
    Column("first timestamp", 24), Column("last timestamp", 24), Column("crc-bad", 7, True),
    Column("gaps", 5, True), Column("seq-gaps", 8, True), Column("findings", 40),
)
FINDING_COLUMNS = (
    Column("severity", 8), Column("code", 26), Column("count", 9, True), Column("files", 6, True),
    Column("partitions", 10, True), Column("first seen", 60),
)
GAP_COLUMNS = (
    Column("topic-partition", 40), Column("check", 14), Column("producerId", 12, True), Column("epoch", 9, True),
    Column("after offset", 12, True), Column("at offset", 12, True), Column("expected seq", 12, True),
    Column("found seq", 12, True), Column("missing", 8, True), Column("explained", 9),
)


def tp_name(topic, partition, log_dir=None, dirs=None) -> str:
    """``orders-3``; with replicas from several log dirs, ``broker-1/kafka-logs:orders-3``
    (the log dir relative to what the log dirs have in common)."""
    name = "(not a partition dir)" if topic is None else f"{topic}-{partition}"
    if dirs and len(dirs) > 1 and log_dir is not None:
        common = os.path.commonpath(sorted(dirs))
        rel = os.path.relpath(log_dir, common)
        name = f"{rel}:{name}"
    return name


def _n(v) -> str:
    return "-" if v is None else f"{v:,}" if isinstance(v, int) else str(v)


def _ts(v) -> str:
    return "-" if v is None else iso_ms(v)


def _counts(fc: dict) -> str:
    return ",".join(f"{c}:{n}" for c, n in sorted(fc.items())) or "-"


_STYLE = {"errors": "bold red", "warnings": "yellow", "clean": "green", "error": "red", "warning": "yellow",
          "info": "cyan"}


def exit_code(summary: dict) -> int:
    """2 unreadable files, 1 error or warning findings, else 0."""
    t = summary["totals"]
    if t["unreadable"]:
        return 2
    return 1 if t["errors"] + t["warnings"] else 0


def summary_line(summary: dict) -> str:
    """The closing line, in the words of ``kafkadump triage``'s."""
    t = summary["totals"]
    pv = t["partitionVerdicts"]
    line = (f"verdict: {summary['verdict']}  files: {t['files']}  bytes: {t['bytes']}  partitions: {t['partitions']} "
            f"(clean {pv['clean']}, warnings {pv['warnings']}, errors {pv['errors']})  "
            f"batches: {t['batches']}  records: {t['records']}  "
            f"findings: {t['errors']} errors, {t['warnings']} warnings, {t['infos']} info  "
            f"crc failures: {t['crcFailures']}  sequence gaps: {t['sequenceGaps']}")
    if t["unreadable"]:
        line += f"  unreadable files: {t['unreadable']}"
    return line


def triage_text(summary: dict, out, console=None) -> None:
    """Tables: partitions, findings by code, producer sequence gaps, unreadable files; then the verdict."""
    emit = TableStream(out, (), console).note
    tab = TableStream(out, PARTITION_COLUMNS, console)
    dirs = {p["logDir"] for p in summary["partitions"] if p.get("logDir")}
    for p in summary["partitions"]:
        offsets = "-" if p["firstOffset"] is None else f"{p['firstOffset']}..{p['lastOffset']}"
        tab.row([tp_name(p["topic"], p["partition"], p.get("logDir"), dirs), p["verdict"], _n(p["files"]), _n(p["batches"]),
                 _n(p["records"]), _n(p["bytes"]), offsets, _ts(p["firstTimestamp"]), _ts(p["lastTimestamp"]),
                 _n(p["crcFailures"]), _n(p["gaps"]), _n(p["sequenceGaps"]), _counts(p["findingCounts"])],
                _STYLE.get(p["verdict"]) if p["verdict"] != "clean" else None)
    if summary["findings"]:
        emit("")
        tab = TableStream(out, FINDING_COLUMNS, console)
        for f in summary["findings"]:
            first = f.get("first") or {}
            tab.row([f["severity"], f["code"], _n(f["count"]), _n(f["files"]), _n(f["partitions"]),
                     f"{first.get('file')} @{first.get('position')}"], _STYLE.get(f["severity"]))
    if summary["sequenceGaps"]:
        t = summary["totals"]
        total = t["sequenceGaps"] + t["sequenceGapsExplained"]
        shown = len(summary["sequenceGaps"])
        emit("")
        emit(f"producer sequence gaps: {t['sequenceGaps']:,}, and {t['sequenceGapsExplained']:,} explained by "
             f"missing offsets" + (f" (first {shown} of {total:,} shown)" if shown < total else ""), "bold")
        tab = TableStream(out, GAP_COLUMNS, console)
        for g in summary["sequenceGaps"]:
            epoch = g["producerEpoch"] if g["previousEpoch"] == g["producerEpoch"] else \
                f"{g['previousEpoch']}>{g['producerEpoch']}"
            tab.row([tp_name(g["topic"], g["partition"], g.get("logDir"), dirs), g["kind"], g["producerId"], epoch, _n(g["afterOffset"]),
                     _n(g["atOffset"]), g["expectedSequence"], g["foundSequence"], _n(g["missing"]),
                     "yes" if g["explained"] else "no"], None if g["explained"] else "yellow")
    if summary["unreadable"]:
        emit("")
        for f, e in summary["unreadable"]:
            emit(f"error    unreadable                  {e}", "red")
    emit("")
    emit(summary_line(summary), _STYLE.get(summary["verdict"]))


def triage_json(summary: dict, out) -> None:
    w = out.write
    for p in summary["partitions"]:
        w(json.dumps({"type": "partition", **p}) + "\n")
    for f in summary["findings"]:
        w(json.dumps({"type": "finding-count", **f}) + "\n")
    for g in summary["sequenceGaps"]:
        w(json.dumps({"type": "sequence-gap", **g}) + "\n")
    for f, e in summary["unreadable"]:
        w(json.dumps({"type": "unreadable", "file": f, "error": e}) + "\n")
    w(json.dumps({"type": "summary", "verdict": summary["verdict"], **summary["totals"],
                  "seconds": summary["seconds"], "valid": exit_code(summary) == 0}) + "\n")


def scan_text(stats: dict) -> str:
    what = {"records": f"{stats['records']:,} records", "batches": f"{stats['batches']:,} batches",
            "findings": f"{stats['rows']:,} findings"}[stats["level"]]
    line = (f"wrote {stats['rows']:,} rows ({what}, {stats['gaps']:,} gaps) from {stats['files']:,} files, "
            f"{stats['bytes']:,} bytes, to {stats['output']} ({stats['format']}, partitioned by topic/partition) "
            f"in {stats['seconds']:.1f} s")
    if stats["problemRows"]:
        line += f"\n{stats['problemRows']:,} rows carry error or warning findings"
    for f, e in stats.get("errors", ()):
        line += f"\nunreadable: {e}"
    return line


__all__ = ["triage_text", "triage_json", "scan_text", "summary_line", "exit_code"]
