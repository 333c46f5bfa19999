"""The files a sweep writes from its result rows, each atomically: points.csv, points.json,
fronts.json, one PNG and SVG plot per Pareto front, and summary.md."""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

from boards.devices import Device
from common.files import atomic_write_text
from explore.sweep.pareto import applicable
from explore.sweep.plots import plot_fronts
from explore.sweep.summary import markdown

LEADING = ("index", "label", "status")
METRICS = ("cycles", "latency_s", "period_s", "throughput_ips", "stages", "energy_pj", "dram_bytes", "utilization",
           "macs_per_cycle", "clock_mhz", "est_lut", "est_ff", "est_dsp", "est_bram", "est_spram", "synth_lut",
           "synth_ff", "synth_dsp", "synth_bram", "synth_spram", "fmax_mhz", "timing_met", "build_seconds", "area_pct",
           "seconds")
TRAILING = ("key", "reason")


def columns(rows: Sequence[dict], swept: Sequence[str]) -> list[str]:
    """CSV columns: identity, swept fields, the metrics any row has, key and reason."""
    present = {name for row in rows for name in row}
    return [*LEADING, *swept, *(m for m in METRICS if m in present), *TRAILING]


def csv_text(rows: Sequence[dict], swept: Sequence[str]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, columns(rows, swept), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def fronts_document(rows: Sequence[dict]) -> dict:
    """Each front's points (index, label, key and both values)."""
    return {front.name: {"x": front.x_label, "y": front.y_label,
                         "points": [{"index": r["index"], "label": r["label"], "key": r["key"],
                                     "x": front.x(r), "y": front.y(r)} for r in front.front(rows)]}
            for front in applicable(rows)}


def write_outputs(directory: Path, rows: Sequence[dict], configs: Sequence[dict], swept: Sequence[str],
                  title: str, context: Sequence[tuple[str, str]], device: Device | None) -> list[Path]:
    """Every output file of a sweep (`configs[i]` is the configuration of `rows[i]`)."""
    points = [dict(row, config=config) for row, config in zip(rows, configs)]
    paths = [
        atomic_write_text(directory / "points.csv", csv_text(rows, swept)),
        atomic_write_text(directory / "points.json", json.dumps({"title": title, "context": dict(context),
                                                                 "swept": list(swept), "points": points}, indent=1)),
        atomic_write_text(directory / "fronts.json", json.dumps(fronts_document(rows), indent=1)),
    ]
    fronts = applicable(rows)
    paths += plot_fronts(fronts, rows, directory, title, device)
    paths.append(atomic_write_text(directory / "summary.md", markdown(rows, fronts, title, context, swept)))
    return paths
