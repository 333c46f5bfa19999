"""Plots of the Pareto fronts (matplotlib, PNG and SVG): every feasible point in grey, points
that exceed the device as red crosses, the front as a blue staircase with its points labelled,
the device's limit as a dashed line."""
from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from boards.devices import Device
from common.files import atomic_write_bytes
from explore.sweep.evaluate import INFEASIBLE, OK
from explore.sweep.pareto import Front

LOG_SPAN = 30.0  # use a log axis when the values span more than this factor
MAX_LABELS = 8  # label the front's points when it has at most this many


def _axis_scale(values: Sequence[float]) -> str:
    positive = [v for v in values if v > 0]
    return "log" if positive and len(positive) == len(values) and max(positive) / min(positive) > LOG_SPAN else "linear"


def front_figure(front: Front, rows: Sequence[dict], subtitle: str, device: Device | None = None) -> Figure:
    """The figure of one front over all result rows, with the device's limit if known."""
    feasible, over = front.eligible(rows, OK), front.eligible(rows, INFEASIBLE)
    best = front.front(rows)
    figure = Figure(figsize=(8, 5.2), layout="constrained")
    ax = figure.subplots()
    if feasible:
        ax.scatter([front.x(r) for r in feasible], [front.y(r) for r in feasible], s=16, color="#a0a8b0",
                   label=f"feasible points ({len(feasible)})", zorder=2)
    if over:
        ax.scatter([front.x(r) for r in over], [front.y(r) for r in over], s=22, marker="x", color="#d62728",
                   label=f"exceed the device ({len(over)})", zorder=2)
    if best:
        xs, ys = [front.x(r) for r in best], [front.y(r) for r in best]
        ax.plot(xs, ys, drawstyle="steps-post", color="#1f5fbf", linewidth=1.8, zorder=3)
        ax.scatter(xs, ys, s=46, color="#1f5fbf", edgecolor="white", label=f"Pareto front ({len(best)})", zorder=4)
        labels: dict[tuple[float, float], list[str]] = {}
        for row, x, y in zip(best, xs, ys):
            labels.setdefault((x, y), []).append(row["label"])
        if len(labels) <= MAX_LABELS:
            for i, ((x, y), names) in enumerate(labels.items()):  # alternately above and below
                text = names[0] + (f" (+{len(names) - 1} equal)" if len(names) > 1 else "")
                ax.annotate(text, (x, y), textcoords="offset points", xytext=(7, 5 if i % 2 == 0 else -13),
                            fontsize=8, color="#1f5fbf")
    if device is not None and (feasible or over):
        ax.axvline(front.limit(device.totals), color="#d62728", linestyle="--", linewidth=1,
                   label=f"{device.name} limit ({front.limit(device.totals):g})", zorder=1)
    every = feasible + over
    if every:
        ax.set_xscale(_axis_scale([front.x(r) for r in every]))
        ax.set_yscale(_axis_scale([front.y(r) for r in every]))
    else:
        ax.text(0.5, 0.5, "no point has both values", transform=ax.transAxes, ha="center", va="center")
    ax.set_xlabel(front.x_label, fontsize=11)
    ax.set_ylabel(front.y_label, fontsize=11)
    ax.set_title(f"{front.title} — {subtitle}", fontsize=12)
    ax.grid(True, which="major", alpha=0.35)
    ax.grid(True, which="minor", alpha=0.12)
    if every:
        ax.legend(loc="upper right", fontsize=9)
    return figure


def save_figure(figure: Figure, stem: Path) -> list[Path]:
    """Write `stem.png` and `stem.svg` atomically."""
    paths = []
    for fmt in ("png", "svg"):
        buffer = io.BytesIO()
        figure.savefig(buffer, format=fmt, dpi=150)
        paths.append(atomic_write_bytes(stem.with_suffix(f".{fmt}"), buffer.getvalue()))
    return paths


def plot_fronts(fronts: Sequence[Front], rows: Sequence[dict], directory: Path, subtitle: str,
                device: Device | None = None) -> list[Path]:
    """One PNG and one SVG per front in `directory`."""
    return [path for front in fronts
            for path in save_figure(front_figure(front, rows, subtitle, device), directory / front.name)]
