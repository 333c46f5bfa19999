"""The stage of a running `hwgen synth` / `hwgen build` on stderr: a status line with the elapsed
time on a terminal, one line per stage otherwise (logs, CI)."""
from __future__ import annotations

from rich.console import Console
from rich.status import Status


def elapsed_text(seconds: float) -> str:
    """`m:ss` (or `h:mm:ss`)."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class FlowProgress:
    """Context manager and `boards.implement.Progress` callback for a run named `what`."""

    def __init__(self, what: str, console: Console | None = None):
        self.what = what
        self.console = console or Console(stderr=True)
        self._status: Status | None = None
        self._stage = ""

    def __enter__(self) -> FlowProgress:
        if self.console.is_terminal:
            self._status = self.console.status(f"{self.what}: synthesis")
            self._status.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._status is not None:
            self._status.stop()

    def __call__(self, stage: str, seconds: float) -> None:
        if self._status is not None:
            self._status.update(f"{self.what}: {stage}, {elapsed_text(seconds)} elapsed")
        elif stage != self._stage:
            self.console.print(f"{self.what}: {stage} ({elapsed_text(seconds)} elapsed)", highlight=False)
        self._stage = stage
