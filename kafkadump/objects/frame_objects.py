"""The JSON objects of ``capture``: frame, a RECORDS field's value, stream note, the capture's summary.

* **frame**: ``type index file kind connection time timeText source packets position size``,
  then for a request or response ``sizePrefix apiKey apiName apiVersion correlationId clientId
  requestIndex latency guessed bodyVersion header body`` (bare record data: ``records``),
  then ``recordCount findings``;
* a RECORDS field's value (in a frame's body or ``records``): ``position size recordCount
  batches`` (the ``batches --json`` objects, with their ``records``);
* **stream**: findings about a TCP stream rather than a frame (gaps, skipped bytes);
* **summary**: the capture's totals.

A frame's ``header`` and ``body`` are the decoded trees as they are: bytes and RECORDS values
inside them become JSON as the writer meets them (bytes per ``--encoding``, a RECORDS value
as :func:`records_value_object`).  Built from the decoded values; no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkadump.objects.records import connection_object, findings_list
from kafkadump.reports.capture import connection_seen, time_iso

if TYPE_CHECKING:
    from kafkadump.decoders.protocol.decoder import RecordsValue
    from kafkadump.decoders.protocol.frames import Frame
    from kafkadump.decoders.protocol.stream import StreamNote
    from kafkadump.reports.capture import CaptureTotals


def frame_object(f: Frame, records: dict[str, Any] | None = None) -> dict[str, Any]:
    """A protocol frame; ``records``: the RECORDS value of bare record data (``f.kind`` records),
    as its object (:func:`records_value_object`)."""
    d: dict[str, Any] = {
        "type": "frame", "index": f.index, "file": f.file, "kind": f.kind,
        "connection": connection_object(connection_seen(f.connection)), "time": f.time, "timeText": time_iso(f.time),
        "source": f.source, "packets": f.packets, "position": f.position, "size": f.size}
    if f.kind == "records":
        d["records"] = records
    else:
        d.update({
            "sizePrefix": f.declared, "apiKey": f.api_key, "apiName": f.api_name if f.api_key is not None else None,
            "apiVersion": f.api_version, "correlationId": f.correlation_id, "clientId": f.client_id,
            "requestIndex": f.request_index, "latency": f.latency,
            "guessed": None if not f.guessed else {"apiKey": f.guessed[0], "versions": f.guessed[1]},
            "bodyVersion": f.body_version, "header": f.header, "body": f.body,
        })
    d["recordCount"] = f.record_count()
    d["findings"] = findings_list(f.all_findings())
    return d


def records_value_object(rv: RecordsValue, batches: list[dict[str, Any]]) -> dict[str, Any]:
    """A RECORDS field's value: where its bytes are, how many records, its ``batches`` (the batch
    and gap objects, made by the caller with the place and encoding of the frame)."""
    return {"position": rv.position, "size": rv.size, "recordCount": rv.record_count, "batches": batches}


def stream_note_object(n: StreamNote) -> dict[str, Any]:
    """Findings about a stream rather than a frame (TCP gaps, retransmissions, skipped bytes)."""
    return {"type": "stream", "file": n.file, "connection": connection_object(connection_seen(n.connection)),
            "direction": n.direction, "time": n.time, "timeText": time_iso(n.time),
            "findings": findings_list(n.findings)}


def capture_summary_object(t: CaptureTotals) -> dict[str, Any]:
    """The closing summary of a capture."""
    return {"type": "summary", "file": t.file, "input": t.input, "frames": t.frames, "requests": t.requests,
            "responses": t.responses, "records": t.records, "findings": t.findings,
            "connections": t.connections, "ignoredConnections": t.ignored_connections, "packets": t.packets,
            "shown": t.shown, "valid": not t.problems}


__all__ = ["frame_object", "records_value_object", "stream_note_object", "capture_summary_object"]
