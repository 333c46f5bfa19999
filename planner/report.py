"""Readable tables of network plans (rich), 80 columns wide at most."""
from __future__ import annotations

import sys

from rich import box
from rich.console import Console
from rich.table import Table

from planner.plan import NetworkPlan

LAYER_SUM_NOTE = ("cycles sum the layers, each planned alone from an idle accelerator; the compiled program "
                  "(`hwgen simulate`) runs them back to back, so its prediction differs")


def _tiles(tiles: dict[str, int]) -> str:
    return " ".join(f"{k}{v}" for k, v in tiles.items())


def timing_line(cycles: int, clock_mhz: float) -> str:
    """Cycles as latency and images per second at the configuration's clock."""
    seconds = cycles / (clock_mhz * 1e6)
    return f"{cycles:,} cycles: {seconds * 1e3:.4g} ms, {1 / seconds:,.1f} images/s at {clock_mhz:g} MHz"


def plan_table(plan: NetworkPlan) -> Table:
    """Per-layer table with a totals row, 80 columns wide at most (energy per layer: `--json`);
    layers whose schedule was reused are marked `*`."""
    table = Table(title=f"{plan.network} on {plan.config} ({plan.strategy}, objective {plan.objective})",
                  box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True,
                  caption="* schedule reused from an identical earlier layer" if plan.reused else None)
    table.add_column("layer", min_width=9, overflow="fold")
    table.add_column("op", no_wrap=True)
    table.add_column("tiles", min_width=9)
    table.add_column("order", no_wrap=True)
    for column in ("DRAM kB", "cycles"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("util, bound", no_wrap=True)
    for layer in plan.layers:
        c = layer.cost
        op = layer.op + (f"+pool{layer.pool}" if layer.pool > 1 else "")  # a fused max pool
        table.add_row(layer.name + (" *" if layer.reused else ""), op, _tiles(layer.tiles), ">".join(layer.order),
                      f"{c.dram_bytes / 1e3:,.1f}", f"{c.cycles:,}", f"{c.utilization:4.0%} {c.bound}")
    table.add_section()
    table.add_row("total", "", "", "", f"{plan.dram_bytes / 1e3:,.1f}", f"{plan.cycles:,}", "")
    return table


def print_plan(plan: NetworkPlan, clock_mhz: float, console: Console | None = None) -> None:
    """Print the table, the latency and images/s at `clock_mhz`, and what the cycles count."""
    console = console or Console(width=None if sys.stdout.isatty() else 80)
    console.print(plan_table(plan))
    console.print(f"total: {timing_line(plan.cycles, clock_mhz)}; {plan.energy_pj / 1e6:,.1f} µJ/image")
    console.print(LAYER_SUM_NOTE, style="dim")
