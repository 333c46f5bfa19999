"""A progress bar on stderr while an RTL engine simulates a network: simulated cycles against
the program model's prediction, the simulator's speed and the time left. On a terminal only (a
log gets the result, not a redrawn bar)."""
from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


class CycleProgress:
    """Context manager and progress callback (`sim.engines`: cycles so far) for a simulation
    expected to take `predicted_cycles`; `enabled` False (an engine that reports no progress)
    makes it do nothing."""

    def __init__(self, what: str, predicted_cycles: int, enabled: bool = True, console: Console | None = None):
        console = console or Console(stderr=True)
        self._progress = None
        if enabled and console.is_terminal:
            self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                      TextColumn("{task.completed:,.0f} / ~{task.total:,.0f} cycles"),
                                      TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                                      console=console, transient=True)
            self._task = self._progress.add_task(what, total=max(predicted_cycles, 1))

    def __enter__(self) -> CycleProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()

    def __call__(self, cycles: int) -> None:
        if self._progress is not None:
            task = self._progress.tasks[0]
            # past the prediction, the bar stays nearly full and its total follows the count
            self._progress.update(self._task, completed=cycles, total=max(task.total, cycles * 1.01))
