"""Spark's failures as one line: the cause and the fix, not a Python-worker stack.

A task that fails on an executor comes back to the driver as a Py4J or PySpark
exception whose text holds the executor's whole traceback; the cause is somewhere
inside.  :func:`explain` finds the causes a kafkadump user meets on a cluster and
says what to do; anything else is Spark's first line, with where Spark's log is.
"""

from __future__ import annotations

import re

PYTHON_CONF = "spark.pyspark.python"
INSTALL = "pip install 'kafkadump[spark]'"


def _text(e: BaseException) -> str:
    parts = [str(e)]
    java = getattr(e, "java_exception", None)
    if java is not None:
        try:
            parts.append(str(java))
        except Exception:  # noqa: BLE001 - the JVM may be gone
            pass
    return "\n".join(parts)


def missing_module(text: str) -> str | None:
    """The module an executor's Python could not import (``kafkadump``, ``pyarrow``, ...), or None."""
    m = re.search(r"No module named '([A-Za-z0-9_]+)", text)
    return m.group(1) if m else None


def missing_file(text: str) -> str | None:
    """The path an executor could not find, or None."""
    for pattern in (r"\[PATH_NOT_FOUND\] Path does not exist: (\S+?)\.?(?:\s|$)",
                    r"FileNotFoundException: (?:File )?(\S+?) does not exist",
                    r"FileNotFoundException: (\S+)",
                    r"\[FAILED_READ_FILE[^\]]*\][^\n]*?file (\S+?)\.?\s"):
        m = re.search(pattern, text)
        if m:
            return m.group(1).rstrip(".")
    return None


def explain(e: BaseException, log_path: str | None = None) -> str:
    """One line for a Spark failure (no ``kafkadump:`` prefix)."""
    text = _text(e)
    module = missing_module(text)
    if module is not None:
        what = "kafkadump" if module == "kafkadump" else f"{module} (kafkadump's Spark extra needs it)"
        return (f"Spark: the executors' Python has no {what}: {INSTALL} in the Python the executors run, "
                f"or point them at one that has it (--conf {PYTHON_CONF}=/path/to/bin/python, or PYSPARK_PYTHON)")
    path = missing_file(text)
    if path is not None:
        return (f"Spark: {path} does not exist on an executor: every executor needs the files at the path the "
                "driver lists (a shared mount at the same path), or give hdfs://, s3a:// or gs:// URIs")
    first = next((line.strip() for line in str(e).splitlines() if line.strip()), type(e).__name__)
    if log_path is None:
        from kafkadump.spark.session import log_path as session_log

        log_path = session_log
    where = f" (Spark's log: {log_path})" if log_path else ""
    return f"Spark: {first}{where}"


__all__ = ["explain", "missing_module", "missing_file"]
