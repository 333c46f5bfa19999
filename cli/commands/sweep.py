"""`hwgen sweep MODEL --space SPACE`: evaluate a design space of accelerators for a network."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rich.table import Table

from cli.commands.common import add_model_argument
from common.console import make_console
from common.errors import InputError
from common.files import check_output_folder
from planner.objective import Objective
from explore.sweep.driver import run_sweep
from explore.sweep.space import SPACE_DIR, load_space
from explore.sweep.evaluate import OK, ModelSpec
from explore.sweep.summary import best_points, reason_groups
from planner.zoo import is_builtin


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sweep", description="Plan the network on every configuration of a design space, estimate (or, with --synth, "
        "measure) each one's resources on the device, and write CSV/JSON of all points, the Pareto fronts, "
        "plots and a Markdown summary. Finished points are cached in the output folder: a rerun skips them.")
    add_model_argument(parser)
    shipped = ", ".join(sorted(p.stem for p in SPACE_DIR.glob("*.yaml")))
    parser.add_argument("--space", default="default", metavar="SPACE",
                        help=f"design-space YAML (docs/sweep.md) or shipped space name: {shipped} (default: default)")
    parser.add_argument("--hw", metavar="CFG",
                        help="base hardware configuration the space varies (default: the space's `base`, else default)")
    parser.add_argument("--objective", choices=[o.value for o in Objective], default="latency",
                        help="what the planner minimises per layer (default: latency)")
    parser.add_argument("--device", metavar="DEVICE",
                        help="device whose resources bound the points, e.g. ecp5-85f, ice40-up5k "
                        "(default: the base config's device)")
    parser.add_argument("--synth", action="store_true",
                        help="synthesize and place every feasible point (Yosys + nextpnr) for LUT/FF/DSP/BRAM and Fmax")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="local worker processes (default: the number of cores)")
    parser.add_argument("--dask", metavar="tcp://HOST:PORT",
                        help="run the points on this Dask distributed scheduler instead of local processes")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="record a point as failed when it takes longer than this (default: no limit)")
    parser.add_argument("--retry-failed", action="store_true", help="evaluate points recorded as failed again")
    parser.add_argument("-o", "--output", type=Path, metavar="DIR",
                        help="output folder (default: rtl_out/sweep-<model>)")
    parser.set_defaults(func=run)


def model_spec(args: argparse.Namespace) -> ModelSpec:
    """The model argument as workers load it: a built-in name, or an absolute ONNX path."""
    source = args.model if is_builtin(args.model) else str(Path(args.model).resolve())
    return ModelSpec(source, args.input_shape)


def run(args: argparse.Namespace) -> int:
    if args.jobs < 1:
        raise InputError(f"--jobs {args.jobs}: expected at least 1")
    if args.timeout is not None and args.timeout <= 0:
        raise InputError(f"--timeout {args.timeout}: expected a positive number of seconds")
    space = load_space(args.space, args.hw)
    out = check_output_folder(args.output or Path("rtl_out") / f"sweep-{Path(args.model).stem}", "--output")
    result = run_sweep(model_spec(args), space, out, objective=Objective(args.objective), device=args.device,
                       synth=args.synth, jobs=args.jobs, scheduler=args.dask, timeout=args.timeout,
                       retry_failed=args.retry_failed)
    for problem in result.rejected:
        print(f"hwgen sweep: warning: cache record {problem}: not trusted, evaluated again", file=sys.stderr)
    console = make_console()
    if not any(row["status"] == OK for row in result.rows):
        print(f"hwgen sweep: error: none of the {len(result.rows)} points is feasible (summary in {out}/summary.md):",
              file=sys.stderr)
        for count, reason in reason_groups([row["reason"] for row in result.rows]):
            print(f"  {count} point{'s' if count != 1 else ''}: {reason}", file=sys.stderr)
        return 1
    table = Table(title=f"best of {len(result.rows)} points ({result.evaluated} evaluated, {result.reused} cached)")
    for column in ("objective", "best", "point"):
        table.add_column(column)
    for goal, row in best_points(result.rows):
        table.add_row(goal.name, f"{goal.fmt.format(goal.value(row))} {goal.unit}", row["label"])
    console.print(table)
    console.print(f"wrote {len(result.paths)} files to {out}/ "
                  "(summary.md, points.csv, points.json, fronts.json, plots)")
    return 0
