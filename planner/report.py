"""Readable tables of network plans (rich)."""
from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table

from planner.plan import NetworkPlan


def _tiles(tiles: dict[str, int]) -> str:
    return " ".join(f"{k}{v}" for k, v in tiles.items())


def plan_table(plan: NetworkPlan) -> Table:
    """Per-layer table with a totals row."""
    table = Table(title=f"{plan.network} on {plan.config} ({plan.strategy}, objective {plan.objective})")
    for column in ("layer", "op", "tiles", "order", "in B", "wt B", "out B", "cycles", "util", "bound", "energy uJ", "reused"):
        table.add_column(column, justify="left" if column in ("layer", "op", "tiles", "order", "bound") else "right")
    for layer in plan.layers:
        c = layer.cost
        table.add_row(layer.name, layer.op, _tiles(layer.tiles), ">".join(layer.order), f"{c.input_bytes:,}",
                      f"{c.weight_bytes:,}", f"{c.output_bytes:,}", f"{c.cycles:,}",
                      f"{c.utilization:.1%}", c.bound, f"{c.energy_pj / 1e6:,.1f}", "yes" if layer.reused else "")
    table.add_section()
    table.add_row("total", "", "", "", f"{sum(l.cost.input_bytes for l in plan.layers):,}",
                  f"{sum(l.cost.weight_bytes for l in plan.layers):,}", f"{sum(l.cost.output_bytes for l in plan.layers):,}",
                  f"{plan.cycles:,}", "", "", f"{plan.energy_pj / 1e6:,.1f}", f"{plan.reused} of {len(plan.layers)}")
    return table


def print_plan(plan: NetworkPlan, console: Console | None = None) -> None:
    """Print the table (wide enough for every column when not writing to a terminal)."""
    (console or Console(width=None if sys.stdout.isatty() else 200)).print(plan_table(plan))
