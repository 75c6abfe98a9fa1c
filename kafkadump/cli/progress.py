"""A progress bar on stderr for long scans: only on a terminal, started at the first update.

It moves by bytes read (also inside a large segment) and names the partition being read."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

from kafkadump.decoders.logfiles.names import partition_label
from kafkadump.render.lines import terminal_safe


class Progress:
    """Bytes done of the total, the rate, the time left and the partition being read."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.bar: RichProgress | None = None   # both set at the first update
        self.task: TaskID | None = None

    def update(self, done: int, total: int, path: str) -> None:
        bar, task = self.bar, self.task
        if bar is None or task is None:
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

            bar = self.bar = RichProgress(TextColumn(self.label), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                                    TimeRemainingColumn(), TextColumn("{task.description}"),
                                    console=Console(stderr=True), transient=True)
            bar.start()
            task = self.task = bar.add_task("", total=total)
        bar.update(task, completed=done, description=terminal_safe(partition_label(path)))

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
