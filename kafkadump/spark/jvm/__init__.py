"""kafkadump's one JVM class, shipped as source: ``KafkaSegmentInputFormat.java``.

A Hadoop ``InputFormat`` that cuts Kafka segments at batch boundaries and reads
each task's byte ranges through Spark's own Hadoop FileSystem (``hdfs://``,
``s3a://``, ``gs://``, ``file:``, ... whatever the session's Hadoop can open);
see the Java file's opening comment for the cut rule.  Python tasks have no JVM
to call, so the ranges must be read on the JVM side of the task.

It is compiled on first use with the JDK's ``javac`` against the jars PySpark
ships, into a per-user cache directory keyed by the source's hash and the
PySpark version (``$XDG_CACHE_HOME/kafkadump`` or ``~/.cache/kafkadump``;
``KAFKADUMP_JVM_CACHE`` overrides it): never into the package or next to the
input.  :func:`load` adds the jar to a session (``ADD JAR``: the driver and the
executors get it).  Without ``javac`` (a JRE only), :func:`load` says why once
on stderr and returns False; the caller then reads whole files instead.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CLASS = "kafkadump.spark.jvm.KafkaSegmentInputFormat"
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "KafkaSegmentInputFormat.java")
JAR_NAME = "kafkadump-jvm.jar"

_said: set[str] = set()          # reasons already said on stderr (once each)
_loaded: set[str] = set()        # the applications (Spark application ids) the jar was added to


class JarUnavailable(Exception):
    """The class cannot be built here; the message says why."""


def cache_dir() -> str:
    given = os.environ.get("KAFKADUMP_JVM_CACHE")
    if given:
        return given
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kafkadump")


def find_javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        j = os.path.join(home, "bin", "javac")
        if os.access(j, os.X_OK):
            return j
    return shutil.which("javac")


def spark_jars() -> str:
    """The directory of the jars PySpark ships (Spark's and Hadoop's client API)."""
    import pyspark

    home = os.environ.get("SPARK_HOME")
    jars = os.path.join(home, "jars") if home else ""
    if not os.path.isdir(jars):
        jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    return jars


def jar_path() -> str:
    """Where the jar for this source and this PySpark lives (built or not)."""
    import pyspark

    with open(SOURCE, "rb") as f:
        digest = hashlib.sha256(f.read() + pyspark.__version__.encode()).hexdigest()[:16]
    return os.path.join(cache_dir(), f"jvm-{digest}", JAR_NAME)


def build() -> str:
    """The jar's path, compiling it first when it is not in the cache; :class:`JarUnavailable` when it cannot."""
    jar = jar_path()
    if os.path.isfile(jar):
        return jar
    javac = find_javac()
    if javac is None:
        raise JarUnavailable("no javac here (a JDK's compiler; a JRE has none)")
    os.makedirs(os.path.dirname(jar), mode=0o700, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kafkadump-javac-", dir=os.path.dirname(jar)) as work:
        classes = os.path.join(work, "classes")
        cmd = [javac, "-nowarn", "-proc:none", "--release", "17", "-encoding", "UTF-8", "-d", classes,
               "-cp", os.path.join(spark_jars(), "*"), SOURCE]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as e:
            raise JarUnavailable(f"javac failed to run: {e}") from None
        if p.returncode != 0:
            first = next((ln for ln in (p.stderr + p.stdout).splitlines() if ln.strip()), "no output")
            raise JarUnavailable(f"javac failed: {first.strip()}")
        tmp = os.path.join(work, JAR_NAME)
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nCreated-By: kafkadump\r\n\r\n")
            for root, _, files in os.walk(classes):
                for name in sorted(files):
                    full = os.path.join(root, name)
                    z.write(full, os.path.relpath(full, classes))
        os.replace(tmp, jar)   # atomic: a concurrent build finds a whole jar or none
    return jar


def say_once(reason: str) -> None:
    if reason not in _said:
        _said.add(reason)
        print(f"kafkadump: {reason}", file=sys.stderr)


def load(spark: SparkSession) -> bool:
    """Make :data:`CLASS` usable in ``spark`` (driver and executors); False, said once on stderr, when not."""
    key = spark.sparkContext.applicationId
    if key in _loaded:
        return True
    try:
        jar = build()
    except (JarUnavailable, OSError) as e:
        say_once(f"{e}: hdfs://, s3a://, gs:// files are read whole, one task each (Spark's binaryFile "
                 "source), not in byte ranges")
        return False
    try:
        spark.sql(f"ADD JAR '{jar}'")
        jvm = spark._jvm
        assert jvm is not None
        jvm.java.lang.Class.forName(CLASS, True, jvm.java.lang.Thread.currentThread().getContextClassLoader())
    except Exception as e:  # noqa: BLE001 - py4j wraps whatever the JVM says
        say_once(f"the session cannot load {jar} ({type(e).__name__}): hdfs://, s3a://, gs:// files are read "
                 "whole, one task each")
        return False
    _loaded.add(key)
    return True


def format_class(spark: SparkSession) -> Any:
    """The py4j view of :data:`CLASS` in ``spark`` (after :func:`load`), or None when it cannot be had.

    py4j finds classes through the calling JVM thread's context class loader, which ``ADD JAR`` sets
    for its own thread only; PySpark pins each Python thread to a JVM thread, so a Python thread
    other than the one that loaded the jar adds it again for itself."""
    from py4j.java_gateway import JavaClass

    if not load(spark):
        return None
    for again in (False, True):
        if again:
            spark.sql(f"ADD JAR '{jar_path()}'")
        view = spark._jvm
        for part in CLASS.split("."):
            view = getattr(view, part)
        if isinstance(view, JavaClass):
            return view
    return None


__all__ = ["CLASS", "format_class", "SOURCE", "JarUnavailable", "build", "load", "jar_path", "cache_dir", "find_javac"]
