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


S3_CREDENTIALS = ("give them with --conf spark.hadoop.fs.s3a.access.key=... and spark.hadoop.fs.s3a.secret.key=..., "
                  "or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment of the driver and executors")


def _bucket(uri: str) -> str:
    return uri.partition("://")[2].split("/", 1)[0]


def storage_failure(uri: str, text: str) -> str | None:
    """One line for the storage failures a user meets reading ``uri`` (no AWS credentials, a bucket that does
    not exist, access denied, a namenode or endpoint that does not answer), from the JVM's text; None when
    ``text`` is none of them."""
    if "NoAuthWithAWSException" in text or "Unable to load credentials" in text:
        return f"{uri}: no AWS credentials for s3a://: {S3_CREDENTIALS}"
    if "NoSuchBucket" in text or "UnknownStoreException" in text:
        return (f"{uri}: the bucket {_bucket(uri)} does not exist (at the endpoint spark.hadoop.fs.s3a.endpoint "
                "names, or AWS's by default): check its name and the endpoint")
    if uri.startswith("s3a://") and ("AccessDeniedException" in text or "Status Code: 403" in text):
        return (f"{uri}: access denied: the AWS credentials given may not read it (s3:ListBucket and s3:GetObject "
                f"on {_bucket(uri)}), or they are wrong; {S3_CREDENTIALS}")
    m = re.search(r"ConnectException: Call From \S+ to (\S+) failed on connection exception", text)
    if m:
        return (f"{uri}: nothing answers at {m.group(1)} (the HDFS namenode): check the address in the URI, "
                "or fs.defaultFS in the Hadoop configuration (HADOOP_CONF_DIR)")
    m = re.search(r"Unable to execute HTTP request: Connect to (\S+) failed", text)
    if m:
        return f"{uri}: nothing answers at {m.group(1)}: check spark.hadoop.fs.s3a.endpoint"
    return None


def _failed_uri(text: str) -> str:
    m = re.search(r"\b(?:s3a|hdfs|gs|abfss?)://[^\s`'\",;]+", text)
    return m.group(0).rstrip(":.") if m else "the input"


def explain(e: BaseException, log_path: str | None = None) -> str:
    """One line for a Spark failure (no ``kafkadump:`` prefix)."""
    text = _text(e)
    storage = storage_failure(_failed_uri(text), text)
    if storage is not None:
        return f"Spark: {storage}"
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


__all__ = ["explain", "missing_module", "missing_file", "storage_failure"]
