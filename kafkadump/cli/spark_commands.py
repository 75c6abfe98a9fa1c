"""spark scan, spark triage: the shared decoder on Spark.

pyspark is imported only inside the command bodies: without the ``spark``
extra the rest of the CLI works and these commands say what is missing
(exit 2).  Library code is in :mod:`kafkadump.spark`.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from typing import Callable, List, Optional

import typer

from kafkadump.base.errors import UsageError
from kafkadump.base.status import exit_status
from kafkadump.cli.logdir_bodies import show_triage
from kafkadump.cli.logdir_commands import MaxFindingsOpt, NoFilesOpt, ShowAllOpt, TriageShallowOpt
from kafkadump.cli.option_groups import FROM_OPTIONS, MaxDecompOpt, MaxDepthOpt, Output, output_options
from kafkadump.cli.typer_app import app, command_group
from kafkadump.cli.typer_main import run_command
from kafkadump.render.jsontext import dumps

spark_app = command_group(
    "spark",
    "The same decoder on Spark (needs the spark extra: pip install 'kafkadump\\[spark]', and Java 17+). "
    "Exit status: 0 clean, 1 the data has problems, 2 usage or I/O error, or pyspark/Java missing.")
app.add_typer(spark_app, name="spark")


class Level(str, Enum):
    batches = "batches"
    records = "records"
    findings = "findings"


class OutFormat(str, Enum):
    parquet = "parquet"
    json = "json"
    orc = "orc"


class Mode(str, Enum):
    error = "error"
    overwrite = "overwrite"
    append = "append"


PathsArg = typer.Argument(..., show_default=False,
                          help="Log dirs, partition dirs or segment files: local paths, or URIs Spark's "
                               "Hadoop file listing reaches (file:, hdfs://, s3a://, globs).")
TriagePathsArg = typer.Argument(..., show_default=False,
                                help="Log dirs, partition dirs or segment files: local paths (or file: URIs) "
                                     "every executor sees at the same path.")
MasterOpt = typer.Option(None, "--master", metavar="URL",
                         help="Spark master: local[*] (default; needs only Java), local[N], spark://host:7077, "
                              "yarn, k8s://... .  Under spark-submit its own --master applies.")
ConfOpt = typer.Option(None, "--conf", metavar="KEY=VALUE",
                       help="A Spark setting, repeatable (spark.executor.memory=4g, ...).  JVM sizes such as "
                            "spark.driver.memory take effect because the JVM starts after them.")
SplitOpt = typer.Option(128 << 20, "--split-bytes", min=1, metavar="BYTES",
                        help="Files larger than this are read by several tasks, cut at batch boundaries.")
IncludeOpt = typer.Option("*.log", "--include", metavar="GLOBS",
                          help="Comma-separated file-name globs taken from directories "
                               "(e.g. '*.log,*.log.deleted,*.checkpoint').")


def _conf(items: list[str] | None) -> dict[str, str]:
    out = {}
    for item in items or ():
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise UsageError(f"--conf {item!r}: expected KEY=VALUE")
        out[k.strip()] = v
    return out


VerboseOpt = typer.Option(False, "--verbose", help="Spark's own log on stderr (by default it goes to a file, "
                                                   "named when something fails).")
ExecutorWaitOpt = typer.Option(60.0, "--executor-wait", min=0, metavar="SECONDS",
                               help="On a cluster: give up when no executor has joined after this long "
                                    "(0: wait for ever).")


def _spark_run(fn: Callable[[], int]) -> None:
    """:func:`run_command` plus Spark's own failures, as exit 2 with a one-line reason."""

    def body() -> int:
        try:
            return fn()
        except Exception as e:  # noqa: BLE001
            # Spark's own errors (output exists, bad --conf, a cluster that cannot be reached, a task that failed)
            mod = type(e).__module__ or ""
            if mod.startswith(("pyspark", "py4j")):
                from kafkadump.spark.failures import explain

                raise UsageError(explain(e)) from None
            raise

    run_command(body)


def _format(value: str) -> str:
    """--format: one of OutFormat, else a usage error saying what to run instead."""
    names = [f.value for f in OutFormat]
    if value.lower() in names:
        return value.lower()
    raise typer.BadParameter(
        f"{value!r} is not one of {', '.join(names)}; for {value} (Delta Lake, Iceberg, ...) write from Python: "
        f"kafkadump.spark.read(spark, PATHS, 'records').write.format('{value}').save(OUT)")


def _refuse_existing(output: str, mode: Mode) -> None:
    """-o OUTPUT that exists, with --mode error: refused now, before Spark starts (local outputs)."""
    from kafkadump.spark.splits import local_path

    lp = local_path(output)
    if mode is Mode.error and lp is not None and os.path.lexists(lp):
        raise UsageError(f"{output}: exists; give --mode overwrite to replace it or --mode append to add to it")


@spark_app.command("scan")
def scan(
    paths: List[str] = PathsArg,
    output: str = typer.Option(..., "--output", "-o", metavar="DIR",
                               help="Where to write: a directory (local, or any URI Spark can write)."),
    level: Level = typer.Option(Level.records, "--level", "-l", help="records, batches or findings rows."),
    fmt: str = typer.Option(OutFormat.parquet.value, "--format", "-f", callback=_format, metavar="parquet|json|orc",
                            help="Output format."),
    mode: Mode = typer.Option(Mode.error, "--mode", help="If OUTPUT exists: error, overwrite or append."),
    master: Optional[str] = MasterOpt,
    conf: Optional[List[str]] = ConfOpt,
    split_bytes: int = SplitOpt,
    include: str = IncludeOpt,
    shallow: bool = typer.Option(False, "--shallow", help="batches/findings: header and CRC only."),
    max_decompressed: int = MaxDecompOpt,
    max_depth: int = MaxDepthOpt,
    json_: bool = typer.Option(False, "--json", help="The closing summary as one JSON object."),
    verbose: bool = VerboseOpt,
    executor_wait: float = ExecutorWaitOpt,
) -> None:
    """Decode every file and write the rows (Parquet by default), partitioned by topic/partition.

    Exit 0 clean, 1 rows with error or warning findings were written, 2 a file could not be read
    (the rest is still written) or usage / Spark error.
    """

    def body():
        from kafkadump.objects.command_objects import scan_summary_object
        from kafkadump.render import spark_scan as render
        from kafkadump.spark import jobs
        from kafkadump.spark.session import build

        _refuse_existing(output, mode)
        files = _local_listing(paths, include)   # local paths: fail fast, before the JVM starts
        spark = build(master, _conf(conf), quiet=not verbose, executor_wait=executor_wait)
        stats = jobs.scan(spark, paths, level.value, output, fmt=fmt,
                          mode="errorifexists" if mode is Mode.error else mode.value, files=files,
                          split_bytes=split_bytes, include=_globs(include), shallow=shallow,
                          max_decompressed=max_decompressed, max_depth=max_depth)
        if json_:
            sys.stdout.write(dumps(scan_summary_object(stats)) + "\n")
        else:
            sys.stdout.write(render.scan_text(stats) + "\n")
        return exit_status(stats["problemRows"], stats["unreadable"])

    _spark_run(body)


@spark_app.command("triage")
@output_options(encoding=None, json_help="The full report as one JSON object on stdout "
                                         "(the objects of kafkadump triage --json).")
def triage(
    paths: List[str] = TriagePathsArg,
    master: Optional[str] = MasterOpt,
    conf: Optional[List[str]] = ConfOpt,
    shallow: bool = TriageShallowOpt,
    max_findings: int = MaxFindingsOpt,
    no_files: bool = NoFilesOpt,
    show_all: bool = ShowAllOpt,
    verbose: bool = VerboseOpt,
    executor_wait: float = ExecutorWaitOpt,
    output: Output = FROM_OPTIONS,
) -> None:
    """kafkadump triage with the per-file scans in Spark tasks: the same report, partitions and verdict.

    Every file under the paths is scanned (a segment with its indexes in one task), and the driver folds the scans into partitions and the fleet summary with triage's own code.

    Exit 0 clean (info findings only), 1 any warning or error finding, 2 an unreadable file, usage or Spark error.
    """

    def body():
        from kafkadump.spark import jobs
        from kafkadump.spark.session import build, check

        check()  # say what is missing first
        planned = jobs.plan_triage(paths, records=not shallow, max_findings=max_findings)  # before the JVM starts
        spark = build(master, _conf(conf), quiet=not verbose, executor_wait=executor_wait)
        return show_triage(jobs.run_triage(spark, planned), output, files=not no_files, show_all=show_all)

    _spark_run(body)


def _local_listing(paths, include):
    """The file list when every path is local (listed now, so a wrong path fails before Spark
    starts); None when some path is a URI, listed later with Spark's own file listing."""
    from kafkadump.spark import jobs
    from kafkadump.spark.session import check

    check()  # say what is missing first
    return jobs.list_files(None, paths, _globs(include)) if jobs.all_local(paths) else None


def _globs(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip()) or ("*.log",)
