"""``kafkadump metadata``: its items as JSON Lines or as one line of text each.

The objects are :mod:`kafkadump.objects.metadata_objects`'; the lines read
the same values.  Names from the input (topics, endpoints, racks) pass
through :class:`~kafkadump.render.lines.LineWriter`, which escapes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TextIO

from kafkadump.decoders.internal_topics.metadata_replay import BrokerChange, ClusterState, PartitionChange, TopicChange
from kafkadump.objects import metadata_objects as M
from kafkadump.render import describe as d
from kafkadump.render import jsontext
from kafkadump.render.lines import LineWriter
from kafkadump.reports.metadata import FileProblems, MetadataItem, MetadataSummary

if TYPE_CHECKING:
    from rich.console import Console


def metadata_object(item: MetadataItem) -> dict[str, Any]:
    """The JSON object of one item of :func:`kafkadump.reports.metadata.metadata_report`."""
    if isinstance(item, PartitionChange):
        return M.partition_change_object(item)
    if isinstance(item, TopicChange):
        return M.topic_change_object(item)
    if isinstance(item, BrokerChange):
        return M.broker_change_object(item)
    if isinstance(item, ClusterState):
        return M.cluster_state_object(item)
    if isinstance(item, FileProblems):
        return M.file_problems_object(item)
    return M.metadata_summary_object(item)


def write_metadata_json(items: Iterable[MetadataItem], out: TextIO) -> None:
    for item in items:
        if isinstance(item, ClusterState):   # a topic at a time: the state is never one object in memory
            _write_state_json(item, out)
        else:
            out.write(jsontext.dumps(metadata_object(item)) + "\n")


def _write_state_json(st: ClusterState, out: TextIO) -> None:
    """:func:`~kafkadump.objects.metadata_objects.cluster_state_object`'s JSON line, written a topic at a time."""
    head = jsontext.dumps(M.cluster_state_head(st))
    out.write(head[:-1] + ',"topics":[')
    sep = ""
    for topic in M.cluster_state_topics(st):
        out.write(sep + jsontext.dumps(topic))
        sep = ","
    out.write("]," + jsontext.dumps(M.cluster_state_rest(st))[1:] + "\n")


def _n(x: int | None) -> str:
    return "?" if x is None else str(x)


def _ids(xs: list[int] | None) -> str:
    """``[1,2]``; ``?`` when not known (the partition's earlier history is not in the files)."""
    return "?" if xs is None else "[" + ",".join(map(str, xs)) + "]"


def _head(o: dict[str, Any]) -> str:
    return f"{o['offset']:>10}  {d.iso_ms(o['timestamp']):<24}  "


def partition_line(o: dict[str, Any]) -> str:
    name = f"{o['topic'] if o['topic'] is not None else o['topicId']}-{o['partition']}"
    was = "" if o["previousLeader"] is None or o["previousLeader"] == o["leader"] else f" (was {o['previousLeader']})"
    text = (f"{_head(o)}{name}  leader {o['leader']}{was} epoch {_n(o['leaderEpoch'])}  isr {_ids(o['isr'])}"
            f"  elr {_ids(o['elr'])}")
    if o["leaderRecoveryState"] == "RECOVERING":
        text += "  RECOVERING"
    if o["snapshot"]:
        text += "  (snapshot)"
    if o["unclean"]:
        why = ("the record says RECOVERING" if o["uncleanReason"] == "leader-recovery-state" else
               f"leader not in the previous ISR {_ids(o['previousIsr'])} / ELR {_ids(o['previousElr'])}")
        text += f"  UNCLEAN ELECTION: {why}"
    return text


def topic_line(o: dict[str, Any]) -> str:
    text = f"{_head(o)}topic {o['topic']} {o['change'].upper() if o['change'] == 'recreated' else o['change']}" \
           f"  id {o['topicId']}"
    if o["change"] == "recreated":
        text += f"  (was {o['previousTopicId']}" + (f", deleted at offset {o['previousDeletedAt']})"
                                                   if o["previousDeletedAt"] is not None else ")")
    return text + ("  (snapshot)" if o["snapshot"] else "")


def broker_line(o: dict[str, Any]) -> str:
    text = f"{_head(o)}broker {o['broker']} {o['change']}  epoch {o['brokerEpoch']}"
    if o["change"] == "registered":
        text += f"  {' '.join(o['endpoints'] or [])}" + (f"  rack {o['rack']}" if o["rack"] else "")
    return text + ("  (snapshot)" if o["snapshot"] else "")


def state_lines(o: dict[str, Any]) -> list[str]:
    """The lines of a cluster-state object (:func:`_write_state_lines` writes them a topic at a time)."""
    lines = [f"cluster state at offset {o['offset']} ({d.iso_ms(o['timestamp'])})"]
    for t in o["topics"]:
        lines += topic_lines(t)
    return lines + rest_lines(o)


def topic_lines(t: dict[str, Any]) -> list[str]:
    lines = [f"  topic {t['topic']}  id {t['topicId']}  {len(t['partitions'])} partitions"]
    for p in t["partitions"]:
        lines.append(f"    {t['topic']}-{p['partition']}  leader {p['leader']} epoch {_n(p['leaderEpoch'])}  "
                     f"isr {_ids(p['isr'])}  elr {_ids(p['elr'])}  replicas {_ids(p['replicas'])}"
                     + (f"  {p['leaderRecoveryState']}" if p["leaderRecoveryState"] == "RECOVERING" else ""))
    return lines


def rest_lines(o: dict[str, Any]) -> list[str]:
    """Brokers, controllers, configs and features of a cluster state."""
    lines = []
    for b in o["brokers"]:
        state = "fenced" if b["fenced"] else "unfenced" if b["fenced"] is not None else "?"
        lines.append(f"  broker {b['broker']}  epoch {b['brokerEpoch']}  {state}"
                     + ("  in controlled shutdown" if b["inControlledShutdown"] else "")
                     + f"  {' '.join(b['endpoints'] or [])}")
    for c in o["controllers"]:
        lines.append(f"  controller {c['controller']}  {' '.join(c['endpoints'] or [])}")
    for c in o["configs"]:
        lines.append(f"  config {c['resourceType']} {c['resourceName'] or '(default)'}  "
                     + "  ".join(f"{k}={v}" for k, v in c["configs"].items()))
    features = ", ".join(f"{k}={v}" + (f" ({o['metadataVersion']})" if k == "metadata.version" and o["metadataVersion"]
                                        else "") for k, v in o["features"].items())
    lines.append(f"  features: {features or 'none'}")
    return lines


def summary_line(o: dict[str, Any]) -> str:
    read = ("no snapshot" if not o["snapshot"] else f"snapshot {o['snapshot']}"
            + (f" (offsets below {o['snapshotOffset']})" if o["snapshotOffset"] is not None else ""))
    if o["logFiles"]:
        read += f" + {len(o['logFiles'])} log segment{'s' if len(o['logFiles']) > 1 else ''}"
    span = (f"log offsets {o['firstOffset']}..{o['lastOffset']}" if o["firstOffset"] is not None
            else "no log records")
    text = (f"replayed {o['records']} records, {span} ({read}): "
            f"{o['partitionChanges']} partition changes, {o['elections']} elections, "
            f"{o['uncleanElections']} unclean")
    if o["uncleanAt"]:
        text += f" ({', '.join(o['uncleanAt'])})"
    text += f"; {o['topicsCreated']} topics created, {o['topicsDeleted']} deleted, {o['topicsRecreated']} re-created"
    if o["recreatedTopics"]:
        text += f" ({', '.join(o['recreatedTopics'])})"
    text += f"; now {o['topics']} topics, {o['partitions']} partitions, {o['brokers']} brokers"
    if o["historyFrom"]:
        text += f"; history before offset {o['historyFrom']} unknown" + (
            " (no snapshot)" if not o["snapshot"] else f" (the log after the snapshot starts at {o['firstOffset']})")
    return text


def _write_state_lines(st: ClusterState, lines: LineWriter) -> None:
    lines.line(f"cluster state at offset {st.offset} ({d.iso_ms(st.timestamp)})")
    for topic in M.cluster_state_topics(st):
        for text in topic_lines(topic):
            lines.line(text)
    for text in rest_lines(M.cluster_state_rest(st)):
        lines.line(text)


def write_metadata_table(items: Iterable[MetadataItem], out: TextIO, console: Console | None = None) -> None:
    lines = LineWriter(out, console)
    for item in items:
        if isinstance(item, ClusterState):
            _write_state_lines(item, lines)
            continue
        o = metadata_object(item)
        kind = o["type"]
        if kind == "partition-change":
            lines.line(partition_line(o), "red" if o["unclean"] else None)
        elif kind == "topic-change":
            lines.line(topic_line(o), "yellow" if o["change"] == "recreated" else None)
        elif kind == "broker-change":
            lines.line(broker_line(o), "dim" if o["change"] == "unfenced" else None)
        elif kind == "cluster-state":
            for text in state_lines(o):
                lines.line(text)
        elif kind == "findings":
            for f in o["findings"]:
                lines.line(f"  {f['severity']} {f['code']} at {o['file']}:{f['offset']}: {f['message']}", "yellow")
        else:
            problem = isinstance(item, MetadataSummary) and (o["uncleanElections"] or o["topicsRecreated"])
            lines.line(summary_line(o), "bold red" if problem else "bold")


__all__ = ["metadata_object", "write_metadata_json", "write_metadata_table", "summary_line", "partition_line"]
