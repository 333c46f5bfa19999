"""The steady state as a Gantt chart (matplotlib, PNG and SVG): one row per unit, a bar per
task, coloured by image, over `PERIODS` periods of a stream paced at its period."""
from __future__ import annotations

import io
from pathlib import Path

from matplotlib.figure import Figure

from common.files import atomic_write_bytes
from scheduler.simulator import Run

PERIODS = 3
LABEL_FRACTION = 0.06  # label a bar when it spans at least this fraction of the window


def steady_window(run: Run, period: float) -> tuple[float, float]:
    """`PERIODS` periods starting at the release of the first steady-state image."""
    start = run.releases[run.steady()[0]]
    return start, start + PERIODS * period


def gantt_figure(run: Run, units: tuple[str, ...], period: float, title: str) -> Figure:
    start, end = steady_window(run, period)
    figure = Figure(figsize=(10, 1.2 + 0.6 * len(units)), layout="constrained")
    ax = figure.subplots()
    colours = [f"C{k}" for k in range(10)]
    for interval in run.intervals:
        left, right = max(interval.start, start), min(interval.end, end)
        if right <= left:
            continue
        transfer = interval.label.endswith("->")
        ax.barh(interval.unit, (right - left) * 1e3, left=(left - start) * 1e3, height=0.6,
                color=colours[interval.image % 10], alpha=0.45 if transfer else 0.9, edgecolor="black",
                linewidth=0.4, hatch="//" if transfer else None)
        if right - left >= LABEL_FRACTION * (end - start):
            ax.text((left + right - 2 * start) / 2 * 1e3, interval.unit, f"{interval.label}\n#{interval.image}",
                    ha="center", va="center", fontsize=7)
    ax.set_yticks(range(len(units)), units)
    ax.invert_yaxis()
    ax.set_xlim(0, (end - start) * 1e3)
    ax.set_xlabel("ms (colour: image; hatched: a tensor moved over the link)")
    ax.set_title(title)
    return figure


def save_gantt(run: Run, units: tuple[str, ...], period: float, title: str, directory: Path) -> list[Path]:
    """gantt.png and gantt.svg in `directory`."""
    figure = gantt_figure(run, units, period, title)
    paths = []
    for suffix in ("png", "svg"):
        buffer = io.BytesIO()
        figure.savefig(buffer, format=suffix, dpi=120)
        paths.append(atomic_write_bytes(Path(directory) / f"gantt.{suffix}", buffer.getvalue()))
    return paths
