"""Getting a SparkSession: what must be installed, and the settings kafkadump needs.

Checks come first and say exactly what is missing and how to get it
(:class:`SparkUnavailable`), instead of a py4j stack trace.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

from kafkadump.base.errors import KafkadumpError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MIN_PYSPARK = (4, 0)
MIN_JAVA = 17
INSTALL = "pip install 'kafkadump[spark]'"


class SparkUnavailable(KafkadumpError):
    """Spark cannot run here; the message says what is missing and how to get it."""


def in_spark_submit() -> bool:
    """True when this process was started by ``spark-submit`` (the JVM is already up)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:2])


def java_version(java: str) -> int | None:
    try:
        p = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', p.stderr + p.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def find_java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        j = os.path.join(home, "bin", "java")
        return j if os.access(j, os.X_OK) else None
    return shutil.which("java")


def check() -> None:
    """Raise :class:`SparkUnavailable` unless pyspark (>= 4.0), pyarrow and Java (>= 17) are here."""
    try:
        import pyspark
    except ImportError:
        raise SparkUnavailable(f"pyspark is not installed: {INSTALL} (brings pyspark>=4.0 and pyarrow)") from None
    if _version_tuple(pyspark.__version__) < MIN_PYSPARK:
        raise SparkUnavailable(f"pyspark {pyspark.__version__} has no Python Data Source API; kafkadump needs "
                               f"pyspark>=4.0: {INSTALL}")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise SparkUnavailable(f"pyarrow is not installed (Spark's Python data sources need it): {INSTALL}") \
            from None
    if in_spark_submit():
        return  # spark-submit started the JVM already
    java = find_java()
    if java is None:
        where = f"JAVA_HOME={os.environ['JAVA_HOME']} has no bin/java" if os.environ.get("JAVA_HOME") \
            else "no java on PATH and JAVA_HOME is not set"
        raise SparkUnavailable(f"Java not found ({where}): Spark needs a Java {MIN_JAVA} or 21 runtime; install "
                               "one (Debian/Ubuntu: apt-get install openjdk-17-jre-headless) or set JAVA_HOME")
    v = java_version(java)
    if v is not None and v < MIN_JAVA:
        raise SparkUnavailable(f"{java} is Java {v}; Spark 4 needs Java {MIN_JAVA} or 21: install one and put it "
                               "on PATH or in JAVA_HOME")


def local_conf(master: str) -> dict:
    """Settings for local mode: everything on the loopback interface, no UI."""
    if not master.startswith("local"):
        return {}
    return {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
    }


# Arrow's Java library checks every buffer access against its bounds and every value read for
# null; Spark's Arrow reader checks nulls itself, and the data source validates each batch it
# builds (pyarrow's validation) before it reaches the JVM.  About 7 % of the JVM's CPU
# per row, measured with bench/spark_bench.py.  Set on the JVMs kafkadump starts (``conf``
# given to :func:`build` replaces it).
ARROW_JAVA_OPTIONS = "-Darrow.enable_unsafe_memory_access=true -Darrow.enable_null_check_for_get=false"

# A local session's JVM is its only executor and runs batch scans: the throughput collector, not
# G1 (Java's default on 2 or more CPUs), whose write barriers and concurrent threads cost 10-20 %
# of a local[2] scan's CPU (bench/spark_bench.py; on one CPU the JVM picks the serial collector
# itself).  Not added when the user's own options choose a collector.
LOCAL_GC_OPTION = "-XX:+UseParallelGC"
_CHOOSES_GC = re.compile(r"-XX:[+-]Use\w*GC\b")


def spark_defaults() -> dict[str, str]:
    """The settings of the ``spark-defaults.conf`` that ``spark-submit`` reads here (``$SPARK_CONF_DIR``,
    else ``$SPARK_HOME/conf``, else PySpark's own ``conf``); empty when there is none."""
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if not conf_dir:
        home = os.environ.get("SPARK_HOME")
        if not home:
            try:
                from pyspark.find_spark_home import _find_spark_home

                home = _find_spark_home()
            except Exception:  # noqa: BLE001 - no Spark home: no defaults file
                return {}
        conf_dir = os.path.join(home, "conf")
    out = {}
    try:
        with open(os.path.join(conf_dir, "spark-defaults.conf"), encoding="utf-8") as f:
            for line in f:
                parts = line.strip().split(None, 1)
                if parts and not parts[0].startswith("#"):
                    out[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    except OSError:
        return {}
    return out


def jvm_conf(master: str | None = None, defaults: dict[str, str] | None = None) -> dict:
    """Settings for the driver and executor JVMs of a session kafkadump starts: kafkadump's options,
    then the user's own from ``spark-defaults.conf`` (``defaults``; read when None) after them, so
    theirs win (the JVM takes the last of a repeated option; a setting given on the command line
    would otherwise replace the file's).  ``master`` local: the collector too (:data:`LOCAL_GC_OPTION`)."""
    if defaults is None:
        defaults = spark_defaults()
    out = {}
    for role in ("driver", "executor"):
        key = f"spark.{role}.extraJavaOptions"
        theirs = defaults.get(key, "")
        ours = ARROW_JAVA_OPTIONS
        chosen = theirs + " " + defaults.get(f"spark.{role}.defaultJavaOptions", "")
        if role == "driver" and (master or "").startswith("local") and not _CHOOSES_GC.search(chosen):
            ours += " " + LOCAL_GC_OPTION
        out[key] = f"{ours} {theirs}".strip()
    return out


# where Spark's own log goes when kafkadump starts the JVM quietly (None: on stderr)
log_path: str | None = None


def _get_or_create(builder, quiet: bool) -> SparkSession:
    """``builder.getOrCreate()``; quiet, a JVM started here writes its log (start-up banner, warnings,
    the Python workers' errors in local mode) to a file in the temp directory, not to stderr."""
    global log_path
    from pyspark import SparkContext

    if not quiet or SparkContext._active_spark_context is not None:
        return builder.getOrCreate()
    import tempfile

    path = os.path.join(tempfile.gettempdir(), f"kafkadump-spark-{os.getpid()}.log")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    saved = os.dup(2)
    sys.stderr.flush()
    os.dup2(fd, 2)       # the JVM inherits this descriptor as its stderr
    try:
        spark = builder.getOrCreate()
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)
    log_path = path
    return spark


def build(master: str | None = None, conf: dict | None = None, app_name: str = "kafkadump",
          quiet: bool = True, executor_wait: float = 0) -> SparkSession:
    """A SparkSession with the ``kafkadump`` format registered.

    ``master`` None means ``local[*]``, or whatever ``spark-submit`` chose when
    run under it.  ``conf`` is applied last, so it overrides kafkadump's
    defaults.  ``quiet``: Spark's log goes to a file (:data:`log_path`), not
    to stderr.  ``executor_wait``: on a cluster, seconds to wait for a first
    executor before giving up with :class:`NoExecutors` (0: do not wait).  Settings that size the driver JVM (``spark.driver.memory``)
    only take effect here, before the JVM starts.
    """
    check()
    from pyspark.sql import SparkSession

    from kafkadump.spark.datasource import register

    conf = dict(conf or {})
    submitted = in_spark_submit()
    if not submitted:
        master = master or conf.get("spark.master") or "local[*]"
        if master.startswith("local"):
            # Spark's Python workers run `python3` from PATH unless told otherwise: in local mode use
            # this interpreter, the one kafkadump is installed in.  (On a cluster the executors'
            # interpreter is PYSPARK_PYTHON / spark.pyspark.python, and it needs kafkadump too.)
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        if conf.get("spark.pyspark.python"):
            # PySpark takes the workers' Python from PYSPARK_PYTHON (spark-submit sets it from this
            # setting; a session started here must do the same, or --conf spark.pyspark.python is ignored)
            os.environ["PYSPARK_PYTHON"] = conf["spark.pyspark.python"]
    builder = SparkSession.builder.appName(app_name)
    settings = {}
    if not submitted:
        settings.update(jvm_conf(master))
    if master is not None:
        builder = builder.master(master)
        settings.update(local_conf(master))
    if not sys.stderr.isatty():
        settings["spark.ui.showConsoleProgress"] = "false"
    settings.update(conf)
    for k, v in settings.items():
        builder = builder.config(k, v)
    spark = _get_or_create(builder, quiet and not submitted)
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
    if executor_wait > 0:
        wait_for_executors(spark, executor_wait)
    register(spark)
    return spark


class NoExecutors(KafkadumpError):
    """The cluster gave the application no executor: nothing would ever run."""


def executor_count(spark: SparkSession) -> int:
    """Executors registered with the application now (the driver not counted)."""
    return max(0, spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1)


def wait_for_executors(spark: SparkSession, seconds: float, poll: float = 0.5) -> None:
    """Return once an executor has joined; else stop the session and raise :class:`NoExecutors` after
    ``seconds`` (Spark itself would wait for ever).  Local mode and dynamic allocation are not waited for."""
    import time

    sc = spark.sparkContext
    conf = sc.getConf()
    if (sc.master or "local").startswith("local") or conf.get("spark.dynamicAllocation.enabled", "false") == "true":
        return
    deadline = time.monotonic() + seconds
    while executor_count(spark) == 0:
        if time.monotonic() >= deadline:
            master = sc.master
            asked = f"spark.executor.memory={conf.get('spark.executor.memory', '1g')}, " \
                    f"spark.executor.cores={conf.get('spark.executor.cores', 'all of a worker')}"
            spark.stop()
            raise NoExecutors(f"the cluster at {master} gave no executor in {seconds:g} s: no worker has joined it, or "
                              f"none has the free cores and memory asked ({asked}); start a worker "
                              f"(start-worker.sh {master}), ask for less with --conf, or wait longer "
                              "(--executor-wait SECONDS)")
        time.sleep(poll)


__all__ = ["SparkUnavailable", "NoExecutors", "wait_for_executors", "executor_count", "log_path", "check", "build", "local_conf", "in_spark_submit", "find_java",
           "jvm_conf"]
