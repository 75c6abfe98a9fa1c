"""The body of capture, without typer.

It takes the command's options (by the names of the parameters of
:func:`.capture_command.capture`, the option groups built: ``output``,
``limits``) and returns the exit status.  The typer command runs it through
:func:`.typer_main.run_command`, the fast path (:mod:`.fast_path`) through
:func:`.running.run_body`: one body whichever parsed the options.
"""

from __future__ import annotations

import sys

from kafkadump.base.errors import UsageError
from kafkadump.base.status import Tally
from kafkadump.cli.option_values import As, InputLimits, Output, hex_cols, payload_request, terminal_width
from kafkadump.cli.running import finish


def capture(path: str, records: bool, frame: int | None, hexdump: bool, cols: int | None, as_: As | None, api_key: int | None,
            api_version: int | None, port: list[int], no_detect: bool, api: list[str] | None,
            topic: list[str] | None, client: list[str] | None, detect: bool, schemas: list[str] | None,
            where: str | None, redact: str | None, redact_fields: str | None, redact_secrets: bool,
            output: Output, limits: InputLimits) -> int:
    from kafkadump.render import frame_views as render
    from kafkadump.reports.capture import CaptureRequest, capture_report
    from kafkadump.reports.query import FrameFilter

    if hexdump and frame is None:
        raise UsageError("--hexdump needs --frame N")
    if hex_cols(cols) is not None and not hexdump:
        raise UsageError("--cols is for --hexdump (bytes per row)")
    payloads = payload_request(detect, schemas, where, redact, redact_fields, redact_secrets)
    request = CaptureRequest(as_.value if as_ else None, api_key, api_version, port, not no_detect,
                             limits.options(), FrameFilter.parse(api, topic, client), payloads)
    tally = Tally()
    json_, encoding, console = output.json, output.encoding, output.console()
    listing = not (hexdump or records or json_ or frame is not None)
    items = capture_report(path, request, tally, frame=frame, spans=hexdump, time_span=listing)
    if hexdump and json_:
        render.write_hexdump_json(items, sys.stdout, encoding)
    elif hexdump:
        from kafkadump.render.hexdump import HexLayout

        render.write_hexdump_text(items, sys.stdout, console, expand_records=records,
                                  layout=HexLayout(terminal_width(console), cols))
    elif records:
        (render.write_records_json(items, sys.stdout, encoding) if json_
         else render.write_records_table(items, sys.stdout, console, output.layout(console)))
    elif json_:
        render.write_frames_json(items, sys.stdout, encoding)
    elif frame is not None:
        render.write_frame_table(items, sys.stdout, console, output.layout(console))
    else:
        render.write_frames_table(items, sys.stdout, console, output.layout(console))
    return finish(tally)
