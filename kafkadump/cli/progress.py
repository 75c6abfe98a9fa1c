"""A progress bar on stderr for long scans: only on a terminal, started at the first update."""

from __future__ import annotations

import os

from ..render.lines import terminal_safe


class Progress:
    """Bytes done of the total, the rate, the time left and the file being read."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.bar = None
        self.task = None

    def update(self, done: int, total: int, path: str) -> None:
        if self.bar is None:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )
            from rich.progress import (
                Progress as RichProgress,
            )

            self.bar = RichProgress(TextColumn(self.label), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                                    TimeRemainingColumn(), TextColumn("{task.description}"),
                                    console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("", total=total)
        self.bar.update(self.task, completed=done, description=terminal_safe(os.path.basename(path)))

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
