"""The body of report, without typer.

It takes the command's options (by the names of the parameters of
:func:`.report_command.report`) and returns the exit status.  The typer command
runs it through :func:`.typer_main.run_command`, the fast path
(:mod:`.fast_path`) through :func:`.running.run_body`.
"""

from __future__ import annotations

import os
import sys
import time

from kafkadump.base.errors import InputError, UsageError
from kafkadump.base.status import Tally
from kafkadump.cli.option_values import payload_request
from kafkadump.cli.running import finish, say_error


def report(paths: list[str], output_file: str, jobs: int, redact: str | None, redact_fields: str | None,
           redact_secrets: bool) -> int:
    from kafkadump.cli.progress import Progress
    from kafkadump.reports.incident import incident_report

    _check_output(paths, output_file)
    payloads = payload_request(False, None, None, redact, redact_fields, redact_secrets)
    started = time.time()
    tally = Tally()
    progress = Progress("report") if sys.stderr.isatty() else None
    try:
        inc = incident_report(paths, tally, jobs=jobs, payloads=payloads,
                              progress=progress.update if progress else None)
    finally:
        if progress:
            progress.stop()
    verdict, size = _write(inc, output_file, _run_info(paths, started, redact, redact_fields))
    from kafkadump.render.html_report import summary_line

    say_error(summary_line(inc, verdict, output_file, size), 0)
    return finish(tally)


def _check_output(paths: list[str], output_file: str) -> None:
    for p in paths:
        if not os.path.exists(p) and not os.path.islink(p):
            raise UsageError(f"{p}: no such file or directory")
    out = os.path.realpath(output_file)
    for p in paths:
        real = os.path.realpath(p)
        if out == real:
            raise UsageError(f"{output_file}: is one of the inputs; give another --output")
    parent = os.path.dirname(os.path.abspath(output_file))
    if not os.path.isdir(parent):
        raise UsageError(f"{output_file}: its directory {parent} does not exist")


def _run_info(paths: list[str], started: float, redact: str | None, redact_fields: str | None) -> dict:
    import kafkadump
    from kafkadump.accel import active_path

    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started))
    redacted = ", ".join(x for x in (redact, f"fields {redact_fields}" if redact_fields else None) if x)
    return {"tool": f"kafkadump {kafkadump.__version__}", "tool_path": os.path.dirname(kafkadump.__file__),
            "active_path": active_path(), "command": " ".join(["kafkadump", *sys.argv[1:]]),
            "started": when, "redacted": redacted}


def _write(inc: object, output_file: str, run_info: dict) -> tuple[str, int]:
    """Write the page beside ``output_file`` and rename it into place: (verdict, bytes written)."""
    from kafkadump.render.html_report import write_report_html

    tmp = f"{output_file}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8", errors="surrogateescape", newline="\n") as out:
            verdict = write_report_html(inc, out, run_info)  # type: ignore[arg-type]
        size = os.path.getsize(tmp)
        os.replace(tmp, output_file)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise InputError(f"{output_file}: cannot write: {e.strerror or e}") from e
    return verdict, size
