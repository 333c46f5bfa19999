"""Evaluators for sweep tests: count evaluations in files and inject failures (picklable, so
they run in the sweep's worker processes)."""
from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from explore.sweep.evaluate import Task, evaluate_point


@dataclass(frozen=True)
class CountingEvaluator:
    """`evaluate_point`, leaving one file per evaluation in `log_dir`; the point at
    `raise_at` raises, the one at `exit_at` kills its worker, the one at `hang_at` sleeps, and
    so does the evaluation that comes after `hang_after` others in `log_dir` (whatever its point;
    with one worker, once its file is there, the sweep holds exactly `hang_after` records)."""

    log_dir: str
    raise_at: int | None = None
    exit_at: int | None = None
    hang_at: int | None = None
    hang_after: int | None = None

    def __call__(self, task: Task) -> dict:
        earlier = len(list(Path(self.log_dir).iterdir()))
        (Path(self.log_dir) / f"{task.index}-{os.getpid()}-{uuid.uuid4().hex}").touch()
        if earlier == self.hang_after:
            time.sleep(600)
        if task.index == self.raise_at:
            raise RuntimeError("injected failure")
        if task.index == self.exit_at:
            os._exit(3)
        if task.index == self.hang_at:
            time.sleep(600)
        return evaluate_point(task)


def evaluations(log_dir: Path) -> list[int]:
    """Indices of the points evaluated, one entry per evaluation."""
    return sorted(int(path.name.split("-")[0]) for path in log_dir.iterdir())


def evaluating_processes(log_dir: Path) -> set[int]:
    """Process ids that evaluated points."""
    return {int(path.name.split("-")[1]) for path in log_dir.iterdir()}
