"""The Markdown summary of a sweep: counts, the best point per objective, the Pareto fronts and
why points were infeasible or failed."""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from explore.sweep.evaluate import FAILED, INFEASIBLE, OK
from explore.sweep.pareto import Front, resource, scaled


@dataclass(frozen=True)
class Goal:
    """A figure of merit to minimise, with its unit and how it is printed."""

    name: str
    unit: str
    value: Callable[[dict], float | None]
    fmt: str = "{:.4g}"


def _edp(row: dict) -> float | None:
    if row.get("energy_pj") is None or row.get("latency_s") is None:
        return None
    return row["energy_pj"] * 1e-9 * row["latency_s"] * 1e3


GOALS = (
    Goal("latency", "ms per inference", scaled("latency_s", 1e3)),
    Goal("period", "ms per image of a stream (pipelined instances)", scaled("period_s", 1e3)),
    Goal("energy", "mJ per inference", scaled("energy_pj", 1e-9)),
    Goal("DRAM traffic", "MB per inference", scaled("dram_bytes", 1e-6)),
    Goal("energy-delay product", "mJ x ms", _edp),
    Goal("DSP blocks", "DSPs", lambda row: resource(row, "dsp"), "{:.0f}"),
    Goal("LUTs", "LUTs", lambda row: resource(row, "lut"), "{:.0f}"),
    Goal("area", "% of the device", scaled("area_pct"), "{:.1f}"),
)


def best_points(rows: Sequence[dict]) -> list[tuple[Goal, dict]]:
    """Per objective, the feasible row that minimises it (ties: the earlier point)."""
    out = []
    for objective in GOALS:
        candidates = [row for row in rows if row["status"] == OK and objective.value(row) is not None]
        if candidates:
            out.append((objective, min(candidates, key=lambda row: (objective.value(row), row["index"]))))
    return out


NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
"""A number standing alone (not part of a name such as `layer1.0` or a shape such as `3x3`)."""
SLOT = "\x00"


def _first_line(reason: str) -> str:
    return (reason.splitlines()[0] if reason else "(none)")[:400]


def reason_groups(reasons: Sequence[str]) -> list[tuple[int, str]]:
    """Reasons grouped by their first line with the numbers set aside (points failing alike
    group together), most frequent first, each with its numbers back: a number that varies
    within the group as its range, e.g. `exceeds ecp5-85f: dsp 160-288 > 156`."""
    groups: dict[str, list[list[str]]] = {}
    for reason in reasons:
        line = _first_line(reason)
        groups.setdefault(NUMBER.sub(SLOT, line), []).append(NUMBER.findall(line))
    out = []
    for kind, numbers in sorted(groups.items(), key=lambda item: -len(item[1])):
        pieces = kind.split(SLOT)
        spans = [_span(column) for column in zip(*numbers)] + [""]
        out.append((len(numbers), "".join(piece + span for piece, span in zip(pieces, spans))))
    return out


def _span(numbers: Sequence[str]) -> str:
    low, high = min(numbers, key=float), max(numbers, key=float)
    return low if float(low) == float(high) else f"{low}-{high}"


def _cell(value) -> str:
    """A number as text: integers whole, other numbers to 4 significant digits."""
    if value is None:
        return ""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.4g}"
    return str(int(value)) if isinstance(value, (int, float)) else str(value)


def markdown(rows: Sequence[dict], fronts: Sequence[Front], title: str, context: Sequence[tuple[str, str]],
             swept: Sequence[str]) -> str:
    """The summary document; `context` lists (what, value) lines such as model and device."""
    status = Counter(row["status"] for row in rows)
    lines = [f"# {title}", ""]
    lines += [f"- {what}: {value}" for what, value in context]
    lines += [f"- points: {len(rows)} ({status[OK]} feasible, {status[INFEASIBLE]} infeasible, "
              f"{status[FAILED]} failed)",
              "", "## Best point per objective", ""]
    best = best_points(rows)
    if best:
        lines += ["| objective | best | point | " + " | ".join(swept) + " |",
                  "|---|---|---|" + "---|" * len(swept)]
        for objective, row in best:
            value = objective.fmt.format(objective.value(row))
            lines.append(f"| {objective.name} | {value} {objective.unit} | {row['label']} | "
                         + " | ".join(_cell(row.get(f)) for f in swept) + " |")
    else:
        lines.append("No feasible point.")
    for front in fronts:
        points = front.front(rows)
        lines += ["", f"## Pareto front: {front.title} ({len(points)} point{'s' if len(points) != 1 else ''})", ""]
        if not points:
            lines.append("No feasible point has both values.")
            continue
        lines += [f"| point | {front.x_label} | {front.y_label} |", "|---|---|---|"]
        lines += [f"| {row['label']} | {_cell(front.x(row))} | {_cell(front.y(row))} |" for row in points]
    for kind in (INFEASIBLE, FAILED):
        groups = reason_groups([row["reason"] for row in rows if row["status"] == kind])
        if groups:
            lines += ["", f"## {kind.capitalize()} points", "", "| points | reason |", "|---|---|"]
            lines += [f"| {n} | {reason.replace('|', '/')} |" for n, reason in groups]
    return "\n".join(lines) + "\n"
