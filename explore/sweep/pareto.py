"""Pareto fronts of sweep results: the points no other point beats on both of two costs.

A point dominates another when it is no worse on both costs and better on at least one; the
front is every point nothing dominates, of equal points only the first by a tie-break (a sweep
keeps the one using the least of the device). Both costs are minimised.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from boards.devices import Resources
from explore.sweep.evaluate import OK

T = TypeVar("T")


def pareto_front(items: Sequence[T], x: Callable[[T], float], y: Callable[[T], float],
                 tie: Callable[[T], tuple] = lambda item: ()) -> list[T]:
    """The non-dominated items, ordered by `x` then `y`; of items equal in both, the one with
    the smallest `tie` (then the first given). O(n log n)."""
    ordered = sorted(items, key=lambda item: (x(item), y(item), tie(item)))
    front: list[T] = []
    best_before = float("inf")  # smallest y among items with a strictly smaller x
    for _, group in itertools.groupby(ordered, key=x):
        lowest = next(group)
        if y(lowest) < best_before:
            front.append(lowest)
        best_before = min(best_before, y(lowest))
    return front


def resource(row: dict, name: str) -> float | None:
    """A resource count of a result row: synthesized if measured, else the estimate."""
    value = row.get(f"synth_{name}")
    return row.get(f"est_{name}") if value is None else value


def scaled(key: str, factor: float = 1.0) -> Callable[[dict], float | None]:
    """The value of `key` in a row times `factor` (None if the row has none)."""
    def value(row: dict) -> float | None:
        return None if row.get(key) is None else row[key] * factor
    return value


@dataclass(frozen=True)
class Front:
    """One trade-off: what is on each axis (name, label with unit, value of a row)."""

    name: str
    title: str
    x_label: str
    y_label: str
    x: Callable[[dict], float | None]
    y: Callable[[dict], float | None]
    limit: Callable[[Resources], float]  # the device's bound on x
    always: bool = True  # False: only in sweeps where some row has both values (`applicable`)

    def eligible(self, rows: Sequence[dict], status: str = OK) -> list[dict]:
        """Rows with `status` that have both values."""
        return [row for row in rows if row["status"] == status and self.x(row) is not None and self.y(row) is not None]

    def front(self, rows: Sequence[dict]) -> list[dict]:
        """The front of the feasible rows; of equal rows, the one using the least of the device."""
        return pareto_front(self.eligible(rows), self.x, self.y, lambda row: (row.get("area_pct") or 0.0,))


FRONTS = (
    Front("latency_vs_dsp", "Latency vs DSP blocks", "DSP blocks", "latency per inference (ms)",
          lambda row: resource(row, "dsp"), scaled("latency_s", 1e3), lambda totals: totals.dsp),
    Front("latency_vs_lut", "Latency vs LUTs", "LUTs", "latency per inference (ms)",
          lambda row: resource(row, "lut"), scaled("latency_s", 1e3), lambda totals: totals.lut),
    Front("period_vs_dsp", "Period vs DSP blocks (pipelined instances)", "DSP blocks", "period per image (ms)",
          lambda row: resource(row, "dsp"), scaled("period_s", 1e3), lambda totals: totals.dsp, always=False),
    Front("energy_vs_area", "Energy vs area", "area: use of the device's most used resource (%)",
          "energy per inference (mJ)", scaled("area_pct"), scaled("energy_pj", 1e-9), lambda totals: 100.0),
)


def applicable(rows: Sequence[dict]) -> tuple[Front, ...]:
    """The fronts a sweep's outputs show: every front that is `always` shown, and the others
    where some row has both values (the period only where instances are explored)."""
    return tuple(front for front in FRONTS
                 if front.always or any(front.x(row) is not None and front.y(row) is not None for row in rows))
