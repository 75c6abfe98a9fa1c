"""The files of ``spark.read.format("kafkadump").load(paths)``, listed where the data source plans:
in a Spark Python worker, which has no JVM (so not through Spark's Hadoop FileSystem, as
:func:`kafkadump.spark.read` lists and reads URIs).  No pyspark here.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafkadump.spark.splits import ListingError, list_local, local_path


def list_for_workers(paths: Iterable[str], include: Iterable[str]) -> list[tuple[str, int]]:
    """The files of ``spark.read.format("kafkadump").load(paths)``, listed where the data source runs: in
    a Spark Python worker, which has no JVM, so not through Spark's Hadoop FileSystem.  Local paths
    (``file:`` URIs included) as :func:`.splits.list_local`; other URIs through ``pyarrow.fs`` where it
    can open them here (HDFS with libhdfs, ``s3://``, ``gs://``, ...; their tasks then read each file
    whole, :func:`.tasks.open_any`), else :class:`.splits.ListingError`, one line naming
    ``kafkadump.spark.read``, which reads them in byte ranges through Spark's Hadoop FileSystem."""
    include = tuple(include)
    given = list(paths)
    out = dict(list_local([p for p in given if local_path(p) is not None], include))
    for uri in given:
        if local_path(uri) is None:
            out.update(_list_pyarrow(uri, include))
    return sorted(out.items())


def _list_pyarrow(uri: str, include: tuple[str, ...]) -> dict[str, int]:
    import fnmatch

    try:
        from pyarrow import fs as pafs

        filesystem, path = pafs.FileSystem.from_uri(uri)
        info = filesystem.get_file_info(path)
        if info.type == pafs.FileType.Directory:
            infos = filesystem.get_file_info(pafs.FileSelector(path, recursive=True))
        else:
            infos = [info]
    except Exception as e:  # noqa: BLE001 - pyarrow's errors (no libhdfs, unknown scheme, ...) say why
        why = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ListingError(
            f"{uri}: the kafkadump data source runs in Spark's Python workers, which cannot use Spark's Hadoop "
            f"FileSystem, and pyarrow.fs cannot open it here ({why}): read it with kafkadump.spark.read(spark, "
            f"[{uri!r}], LEVEL) (byte ranges through Spark's Hadoop FileSystem)") from None
    if info.type == pafs.FileType.NotFound:
        raise ListingError(f"{uri}: no such file or directory")
    head = uri.split("://", 1)[0] + "://"
    netloc = uri[len(head):].split("/", 1)[0]
    found = {}
    for i in infos:
        if i.type == pafs.FileType.File and (i is info or any(fnmatch.fnmatchcase(i.base_name, p) for p in include)):
            found[head + (netloc + i.path if i.path.startswith("/") else i.path)] = i.size
    return found


__all__ = ["list_for_workers"]
