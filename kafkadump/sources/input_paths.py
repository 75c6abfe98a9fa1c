"""The files a segment command reads, as people name them: files, globs, partition dirs, log dirs.

:func:`expand` turns the paths given to ``batches``, ``records`` and
``verify-crc`` into the files to read, in order:

- a partition directory gives its segments (``*.log``) in base-offset order;
- a log dir (or any directory above partition directories) gives each
  partition's segments, partitions in name order;
- among several paths (a shell glob), files whose names say they are not
  segments (``.index``, ``.timeindex``, checkpoints, ...) are skipped, and
  one note says which; a single such file is kept, so that the command can
  say what it is and which command reads it;
- a path that does not exist is kept: opening it is what reports it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from kafkadump.base.values import Value
from kafkadump.decoders.logfiles import names

_SEGMENT_KINDS = (names.SEGMENT, names.KRAFT_SNAPSHOT, names.UNKNOWN)


class Inputs(Value):
    """The files to read, and what was left out of what was given (for one note on stderr)."""

    __match_args__ = ("files", "skipped", "empty_directories")

    def __init__(self, files: list[str] | None = None, skipped: list[str] | None = None,
                 empty_directories: list[str] | None = None) -> None:
        self.files = [] if files is None else files
        self.skipped = [] if skipped is None else skipped
        self.empty_directories = [] if empty_directories is None else empty_directories

    def note(self) -> str | None:
        """One line about the files left out, or None."""
        if not self.skipped:
            return None
        shown = ", ".join(self.skipped[:5]) + (f" and {len(self.skipped) - 5} more" if len(self.skipped) > 5 else "")
        what = "file that is not a segment" if len(self.skipped) == 1 else "files that are not segments"
        return f"skipped {len(self.skipped)} {what}: {shown}"


def _segments_in(directory: str) -> list[str]:
    """The segment files of one directory, in base-offset order (then by name)."""
    try:
        entries = sorted(os.listdir(directory))
    except OSError:
        return []
    found = []
    for name in entries:
        fn = names.classify(name)
        if fn.kind == names.SEGMENT and fn.suffix is None:
            found.append((fn.offset if fn.offset is not None else -1, name))
    return [os.path.join(directory, name) for _, name in sorted(found)]


def _expand_directory(directory: str) -> list[str]:
    own = _segments_in(directory)
    if own:
        return own
    out: list[str] = []
    try:
        children = sorted(os.listdir(directory))
    except OSError:
        return [directory]  # opening it says what is wrong
    for child in children:
        path = os.path.join(directory, child)
        if os.path.isdir(path):
            out += _segments_in(path)
    return out


def expand(paths: Iterable[str]) -> Inputs:
    """The files ``paths`` name, directories expanded, non-segments of a list skipped."""
    paths = list(paths)
    inputs = Inputs()
    for p in paths:
        if os.path.isdir(p):
            found = _expand_directory(p)
            inputs.files += found
            if not found:
                inputs.empty_directories.append(p)
        elif len(paths) > 1 and os.path.exists(p) and names.classify(p).kind not in _SEGMENT_KINDS:
            inputs.skipped.append(p)
        else:
            inputs.files.append(p)
    return inputs


__all__ = ["Inputs", "expand"]
