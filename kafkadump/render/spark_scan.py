"""``spark scan``'s closing line.  (``spark triage`` is drawn by :mod:`kafkadump.render.triage_table`,
the renderer of ``triage``: both give the same report.)"""

from __future__ import annotations


def scan_text(stats: dict) -> str:
    what = {"records": f"{stats['records']:,} records", "batches": f"{stats['batches']:,} batches",
            "findings": f"{stats['rows']:,} findings"}[stats["level"]]
    line = (f"wrote {stats['rows']:,} rows ({what}, {stats['gaps']:,} gaps) from {stats['files']:,} files, "
            f"{stats['bytes']:,} bytes, to {stats['output']} ({stats['format']}, partitioned by topic/partition) "
            f"in {stats['seconds']:.1f} s")
    if stats["problemRows"]:
        line += f"\n{stats['problemRows']:,} rows carry error or warning findings"
    for _f, e in stats.get("errors", ()):
        line += f"\nunreadable: {e}"
    return line


__all__ = ["scan_text"]
