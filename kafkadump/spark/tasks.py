"""Reading one task's share of a file into row chunks: what an executor runs.

No pyspark here (pyarrow only for non-local files), so the tests can run a
task's work in-process and compare it with the single-process CLI.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence

from kafkadump.base.errors import InputError
from kafkadump.decoders.batches import Options
from kafkadump.reports.query import RecordQuery
from kafkadump.sources.segment import Segment, open_segment
from kafkadump.spark.rows import COLUMNS, Columns, Part, RecordColumns
from kafkadump.spark.splits import iter_task, local_path, log_dir, topic_partition

SPOOL_CHUNK = 8 << 20


class _Spooled:
    """A non-local file copied to executor-local temp space and mapped read-only.

    The copy streams in :data:`SPOOL_CHUNK` pieces (memory stays bounded) and
    is deleted on close.  Opened through ``pyarrow.fs`` (HDFS with libhdfs,
    S3, GCS, ... as pyarrow supports them).
    """

    def __init__(self, uri: str):
        try:
            from pyarrow import fs as pafs
        except ImportError:  # pragma: no cover - pyarrow is in the spark extra
            raise InputError(f"{uri}: not a local path, and pyarrow (pip install 'kafkadump[spark]') "
                             "is needed to open it") from None
        try:
            filesystem, path = pafs.FileSystem.from_uri(uri)
            src = filesystem.open_input_stream(path)
        except Exception as e:  # noqa: BLE001 - any filesystem error is an input error
            raise InputError(f"{uri}: cannot open on this executor ({type(e).__name__}: {e}); give executors "
                             "a mount of the files and pass the mounted path, or configure pyarrow.fs "
                             "for this filesystem") from None
        fd, self.tmp = tempfile.mkstemp(prefix="kafkadump-", suffix=".spool")
        try:
            with os.fdopen(fd, "wb") as out, src:
                while True:
                    chunk = src.read(SPOOL_CHUNK)
                    if not chunk:
                        break
                    out.write(chunk)
            self.seg = open_segment(self.tmp)
        except BaseException:
            os.unlink(self.tmp)
            raise
        self.buf = self.seg.buf

    def close(self):
        self.seg.close()
        try:
            os.unlink(self.tmp)
        except OSError:
            pass


def open_any(path: str) -> tuple[Segment | _Spooled, bool]:
    """``(segment-like with .buf and .close(), local)`` for a local path or any URI."""
    lp = local_path(path)
    if lp is not None:
        return open_segment(lp), True
    return _Spooled(path), False


def options_for(shallow: bool = False, max_decompressed: int | None = None, max_depth: int | None = None,
                level: str = "batches") -> Options:
    o = Options(records=(level == "records") or not shallow)
    if max_decompressed is not None:
        o = o.replace(max_decompressed=max_decompressed)
    if max_depth is not None:
        o = o.replace(max_depth=max_depth)
    return o


def read_task(level: str, path: str, size: int, k: int, n: int, split_bytes: int, opt: Options,
              query: RecordQuery | None = None, names: Sequence[str] | None = None,
              types: Iterable[str] | None = None, counts: dict | None = None) -> Iterator[list[Part]]:
    """Yield chunks of one task's rows, each a list of parts in row order (:mod:`kafkadump.spark.rows`;
    records of plain batches in Arrow buffers built by the compiled loop) (records kept by ``query``, batches
    pruned by it first, as ``kafkadump records`` does; only the columns ``names`` and the row
    types ``types`` when given).  Never raises on bad input: a file that cannot be opened, or
    an unexpected decoder failure, becomes one ``type = "error"`` row saying why.  ``counts``,
    when given, gains ``decoded`` (records decoded), ``values`` (cells built) and ``fast``
    (rows the compiled loop built)."""
    cols = columns_for(level, path, names, types)
    try:
        yield from _read(cols, path, size, k, n, split_bytes, opt, query)
    finally:
        if counts is not None:
            counts["decoded"] = counts.get("decoded", 0) + cols.decoded
            counts["values"] = counts.get("values", 0) + cols.values
            counts["fast"] = counts.get("fast", 0) + getattr(cols, "fast_rows", 0)


def columns_for(level: str, path: str, names: Sequence[str] | None = None, types: Iterable[str] | None = None
                ) -> Columns:
    """The row builder of a task reading ``path`` at ``level`` (records: the compiled loop's buffers for
    plain runs), with the columns ``names`` and the row types ``types`` when given."""
    topic, partition = topic_partition(path)
    if level == "records":
        return RecordColumns(topic, partition, log_dir(path), names, types, fast=True)
    return COLUMNS[level](topic, partition, log_dir(path), names, types)


def _read(cols: Columns, path: str, size: int, k: int, n: int, split_bytes: int, opt: Options,
          query: RecordQuery | None) -> Iterator[list[Part]]:
    if query is not None:
        cols.query = query
        opt = opt.replace(select=query.batch_selector())
    try:
        seg, local = open_any(path)
    except (InputError, OSError) as e:
        if k == 0:
            cols.error(path, str(e) if isinstance(e, InputError) else f"{path}: {e.strerror or e}")
        if cols.rows:
            yield cols.take_parts()
        return
    try:
        buf = seg.buf
        end = len(buf) if size < 0 else min(size, len(buf))
        if not local:
            # a spooled copy is read whole by task 0 (no header replay across the network)
            if k != 0:
                return
            n = 1
        add = cols.add
        try:
            for item in iter_task(buf, end, path, opt, split_bytes, k, n):
                add(item)
                if cols.full():
                    yield cols.take_parts()
        except Exception as e:  # noqa: BLE001 - a decoder bug must not kill the task
            cols.error(path, f"internal error while decoding (task {k} of {n}): {type(e).__name__}: {e}")
        if cols.rows:
            yield cols.take_parts()
    finally:
        seg.close()


__all__ = ["read_task", "options_for", "open_any", "columns_for"]
