"""kafkadump capture: Kafka wire protocol from pcap/pcapng files and pasted hex dumps."""



from enum import Enum
from typing import List, Optional

import typer


class As(str, Enum):
    request = "request"
    response = "response"
    records = "records"


def register(app) -> None:
    """Add this module's commands to the typer app."""
    from ..cli import ColorOpt, Encoding, JsonOpt, MaxDecompOpt, MaxDepthOpt, MaxRatioOpt, UsageError, _console, _run

    @app.command()
    def capture(
        path: str = typer.Argument(..., metavar="FILE|-",
                                   help="A pcap/pcapng file, hex text (plain hex, xxd, hexdump -C, tcpdump -x/-X/-XX, "
                                        "tshark -x / Wireshark hex dump), or raw frame bytes; - reads stdin."),
        json_: bool = JsonOpt,
        records: bool = typer.Option(False, "--records",
                                     help="List the records the frames carry (with --hexdump: name every "
                                          "field of every record)."),
        frame: Optional[int] = typer.Option(None, "--frame", min=0, metavar="N",
                                            help="Only frame N (counting from 0, as the table numbers them)."),
        hexdump: bool = typer.Option(False, "--hexdump", help="Annotated hexdump of the --frame."),
        as_: Optional[As] = typer.Option(None, "--as",
                                         help="What pasted bytes are (default: detected): request, response or "
                                              "records (a bare record batch / legacy message set)."),
        api_key: Optional[int] = typer.Option(None, "--api-key", min=0, max=32767, metavar="KEY",
                                              help="API key for a response whose request is not in the input."),
        api_version: Optional[int] = typer.Option(None, "--api-version", min=0, max=32767, metavar="V",
                                                  help="API version for such a response (with --api-key)."),
        port: List[int] = typer.Option([9092], "--port", "-p", min=1, max=65535,
                                       help="Kafka broker port (repeatable; default 9092).  Kafka on other ports "
                                            "is found by content unless --no-detect."),
        detect: bool = typer.Option(True, "--detect/--no-detect",
                                    help="Look for Kafka on ports other than --port."),
        encoding: Encoding = typer.Option(Encoding.base64, "--encoding", "-e",
                                          help="How bytes appear in JSON (keys, values, bytes fields)."),
        max_decompressed: int = MaxDecompOpt,
        max_depth: int = MaxDepthOpt,
        max_ratio: int = MaxRatioOpt,
        color: Optional[bool] = ColorOpt,
    ):
        """Decode Kafka requests and responses (and the record batches in them) from captures.

        Reads pcap/pcapng files (TCP reassembled per connection, frames split by
        their size prefix, responses paired with their requests by correlation
        id) and hex text in every common dump form.  One row per frame; --json
        for the full decoded tree; --records for the records carried; --frame N
        --hexdump for one frame's bytes, every field named.
        """

        def body():
            if hexdump and frame is None:
                raise UsageError("--hexdump needs --frame N")
            if api_version is not None and api_key is None:
                raise UsageError("--api-version needs --api-key")
            return _capture(path, json_=json_, records=records, frame=frame, hexdump=hexdump,
                            as_=as_.value if as_ else None, api_key=api_key, api_version=api_version,
                            ports=port, detect=detect, encoding=encoding.value,
                            max_decompressed=max_decompressed, max_depth=max_depth, max_ratio=max_ratio,
                            console=None if json_ else _console(color))

        _run(body)


MAX_STDIN = 1 << 30


def _read_input(path: str):
    """``(kind, buffer, closer)``: kind pcap | text | binary."""
    import sys

    from ..sources.hextext import MAX_TEXT, looks_like_text
    from ..sources.pcap import is_capture
    from ..sources.segment import InputError, open_segment

    if path == "-":
        buf = sys.stdin.buffer.read(MAX_STDIN + 1)
        if len(buf) > MAX_STDIN:
            raise InputError(f"-: more than {MAX_STDIN} bytes on stdin; give the file's path instead")
        closer = None
    else:
        seg = open_segment(path)
        buf = seg.buf
        closer = seg.close
    head = bytes(buf[:4])
    if is_capture(head):
        return "pcap", buf, closer
    if looks_like_text(bytes(buf[:65536])):
        if len(buf) > MAX_TEXT:
            raise InputError(f"{path}: hex text larger than {MAX_TEXT} bytes")
        return "text", bytes(buf).decode("ascii", "replace"), closer  # a non-ASCII line: named as not hex
    return "binary", buf, closer


def _items(kind, data, path, dec, reader_out: list):
    """Frames and notes from the input, in order."""
    from ..protocol.stream import StreamNote
    from ..sources import hextext
    from ..sources.pcap import CaptureReader, packet_from_bytes

    if kind == "pcap":
        reader = CaptureReader(data, path)
        reader_out.append(reader)
        yield from dec.packets(reader)
        if reader.findings:
            yield StreamNote(None, None, reader.findings, None, path)
        return
    if kind == "binary":
        yield from dec.block(data, 0, None)
        return
    dec.lenient = True
    blocks = hextext.parse(data, path)
    superseded = _superseded(blocks)
    number = 0
    for i, b in enumerate(blocks):
        if b.kind == "derived" or i in superseded:
            continue
        if b.kind in ("packet", "raw"):
            number += 1
            p = packet_from_bytes(bytes(b.data), number, b.time)
            if p is not None:
                yield from dec.packet(p)
                continue
        for f in dec.block(bytes(b.data), 0, f"dump {i} (line {b.line})"):
            f.source = f"dump {i} (line {b.line})"
            yield f
    yield from dec.finish()


def _superseded(blocks) -> set:
    """tshark -x shows a PDU that spans packets as its last packet's frame plus a
    "Reassembled TCP" block: the reassembled bytes are the PDU, the frame only its tail."""
    out = set()
    for i, b in enumerate(blocks):
        if b.kind != "packet" or not (b.title or "").startswith("Frame"):
            continue
        for later in blocks[i + 1:]:
            if later.kind == "reassembled":
                out.add(i)
                break
            if later.kind != "derived":
                break
    return out


def _capture(path, *, json_, records, frame, hexdump, as_, api_key, api_version, ports, detect, encoding,
             max_decompressed, max_depth, console, max_ratio=None) -> int:
    import json
    import sys

    from ..cli import UsageError
    from ..decode import Options
    from ..protocol.stream import CaptureDecoder, Hints, StreamNote
    from ..render import capture as R
    from ..render.table import TableStream

    opt = Options(records=True, max_decompressed=max_decompressed, max_depth=max_depth)
    if max_ratio is not None:
        opt = Options(records=True, max_decompressed=max_decompressed, max_depth=max_depth, max_ratio=max_ratio)
    kind, data, closer = _read_input(path)
    out = sys.stdout
    try:
        dec = CaptureDecoder(path, ports=ports, options=opt, hints=Hints(as_, api_key, api_version), detect=detect)
        if frame is not None and hexdump:
            dec.ctx.spans = lambda: dec.count == frame
        fj = R.FrameJson(encoding)
        problems = 0
        totals = {"frames": 0, "requests": 0, "responses": 0, "records": 0, "findings": 0}
        seen_conns = set()
        table = None
        if not json_ and not hexdump:
            cols = R.RECORD_COLUMNS if records else R.FRAME_COLUMNS
            table = TableStream(out, cols, console)
        found = None
        readers: list = []
        for item in _items(kind, data, path, dec, readers):
            if isinstance(item, StreamNote):
                problems += sum(1 for x in item.findings if x.severity.value != "info")
                totals["findings"] += len(item.findings)
                if frame is not None or records:
                    continue
                if json_:
                    out.write(fj.note(item) + "\n")
                else:
                    where = "" if item.connection is None else f"c{item.connection.id} {item.direction}: "
                    for line in R.findings_lines(item.findings):
                        table.note(f"{where}{line.strip()}", "red")
                continue
            f = item
            fs = f.all_findings()
            problems += sum(1 for x in fs if x.severity.value != "info")
            totals["findings"] += len(fs)
            totals["frames"] += 1
            if f.kind == "request":
                totals["requests"] += 1
            elif f.kind == "response":
                totals["responses"] += 1
            totals["records"] += f.record_count()
            if frame is not None:
                if f.index == frame:
                    found = f
                    break
                continue
            if records:
                if json_:
                    out.write(fj.record_lines(f))
                else:
                    for cells, r in R.record_rows(f):
                        table.row(cells, "cyan" if r.control is not None else None)
                continue
            if json_:
                out.write(fj.frame(f) + "\n")
                continue
            c = f.connection
            if c is not None and c.id not in seen_conns:
                seen_conns.add(c.id)
                table.note(R.connection_line(c), "bold")
            table.row(R.frame_cells(f), R.frame_style(f))
            for line in R.findings_lines(f.all_findings()):
                table.note(line, "yellow")
        if frame is not None:
            if found is None:
                raise UsageError(f"{path}: no frame {frame} (the input has {dec.count} frames)")
            problems = sum(1 for x in found.all_findings() if x.severity.value != "info")
            if hexdump:
                if json_:
                    out.write(R.span_lines(found, "hex" if encoding == "hex" else encoding))
                    for x in found.all_findings():
                        out.write(json.dumps({"type": "finding", **x.to_dict()}) + "\n")
                else:
                    R.render_hexdump(found, expand_records=records, console=console, out=out)
            elif records:
                if json_:
                    out.write(fj.record_lines(found))
                else:
                    for cells, r in R.record_rows(found):
                        table.row(cells, "cyan" if r.control is not None else None)
            elif json_:
                out.write(fj.frame(found) + "\n")
            else:
                table.row(R.frame_cells(found), R.frame_style(found))
                for line in R.tree_lines(found):
                    table.note(line)
                for line in R.findings_lines(found.all_findings()):
                    table.note(line, "yellow")
            return 1 if problems else 0
        reader = readers[0] if readers else None
        summary = {"type": "summary", "file": path, "input": kind, **totals,
                   "connections": sum(1 for c in dec.order if c.state not in (None, False)),
                   "ignoredConnections": dec.ignored,
                   "packets": None if reader is None else reader.packets,
                   "valid": not problems}
        if json_ and not records:
            out.write(json.dumps(summary) + "\n")
        elif not json_ and not records:
            extra = "" if reader is None else f"  packets: {reader.packets}  connections: {summary['connections']}"
            if dec.ignored:
                extra += f" (+{dec.ignored} not Kafka)"
            table.note(f"frames: {totals['frames']}  requests: {totals['requests']}  responses: "
                       f"{totals['responses']}  records: {totals['records']}{extra}  "
                       f"({'no problems' if not problems else str(problems) + ' problems'})")
        return 1 if problems else 0
    finally:
        if closer is not None:
            closer()
