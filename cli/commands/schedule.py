"""`hwgen schedule MODEL --hw CFG [--hw CFG2 ...]`: map a network's layers onto the host and
accelerator instances as a pipeline over a stream of images; period, latency, Gantt chart."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from cli.commands.common import add_model_argument, model_segments
from common.errors import InputError

SOLVERS = ("ilp", "ga")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "schedule", description="Map a network's layers onto the host CPU (onnxruntime) and the accelerator "
        "instances of each --hw (its `instances` field), each unit owning a stage of a pipeline over a stream of "
        "images; print each unit's share, the period and the latency, and write a Gantt chart of the steady state "
        "(docs/schedule.md).")
    add_model_argument(parser)
    parser.add_argument("--hw", action="append", metavar="CFG",
                        help="accelerator instances: hardware YAML or shipped name, as many as its `instances` field "
                        "(1 by default); repeat for more (default: one instance of default)")
    parser.add_argument("--fmax-report", action="append", metavar="DIR", default=[],
                        help="a `hwgen synth`/`build` output folder whose post-place-and-route Fmax clocks the "
                        "instance of the same position among the --hw (default: each configuration's clock)")
    parser.add_argument("--solver", choices=SOLVERS, default="ilp",
                        help="ilp: contiguous stages, optimal; ga: any mapping, genetic algorithm (default: ilp)")
    parser.add_argument("--host-threads", type=int, default=1, metavar="N", help="onnxruntime threads (default: 1)")
    parser.add_argument("--cpu-cap", type=float, default=None, metavar="P",
                        help="percent of the period the host may compute (default: no cap)")
    parser.add_argument("--images", type=int, default=None, metavar="K",
                        help="images the simulator streams (default and minimum: 4 x (2 x units + 3))")
    parser.add_argument("--seed", type=int, default=0, help="the genetic algorithm's seed (default: 0)")
    parser.add_argument("-o", "--output", metavar="DIR", help="write gantt.png, gantt.svg and schedule.json here")
    parser.add_argument("--json", action="store_true", help="print the JSON summary instead of the table")
    parser.set_defaults(func=run)


def _units(args: argparse.Namespace) -> list:
    from boards.report import load_report
    from hwgen.config import load_config
    from scheduler.units import accelerator_unit, host_unit

    if args.host_threads < 1:
        raise InputError(f"--host-threads {args.host_threads}: allowed: 1 or more")
    specs = args.hw or ["default"]
    if len(args.fmax_report) > len(specs):
        raise InputError(f"{len(args.fmax_report)} --fmax-report for {len(specs)} --hw; allowed: at most one each")
    units = [host_unit(args.host_threads)]
    for index, spec in enumerate(specs):
        fmax = None
        if index < len(args.fmax_report):
            report = load_report(Path(args.fmax_report[index]))
            fmax = report.fmax_mhz.get("sync", min(report.fmax_mhz.values(), default=None))
        config = load_config(spec)
        for _ in range(config.instances):
            units.append(accelerator_unit(config, f"acc{len(units) - 1}", fmax))
    return units


def _cap(args: argparse.Namespace) -> float | None:
    if args.cpu_cap is None:
        return None
    if not 0 <= args.cpu_cap <= 100:
        raise InputError(f"--cpu-cap {args.cpu_cap}: allowed: a percentage from 0 to 100")
    return args.cpu_cap / 100


def summary(problem, units: list, mapping: tuple[int, ...], period: float, latency: float, solver: str,
            solve_seconds: float) -> dict:
    """The `--json` document (seconds as milliseconds)."""
    from scheduler.problem import host_compute, loads, memory_seconds

    busy = loads(problem, mapping)
    rows = []
    for p, unit in enumerate(units):
        layers = [problem.layers[i] for i, q in enumerate(mapping) if q == p]
        rows.append({"unit": unit.name, "kind": str(unit.kind), "config": unit.config.name if unit.config else None,
                     "clock_mhz": unit.clock_mhz or None, "threads": unit.threads if not unit.config else None,
                     "layers": layers, "busy_ms": busy[p] * 1e3, "utilization": busy[p] / period if period else 0.0})
    return {"solver": solver, "solve_seconds": solve_seconds, "period_ms": period * 1e3, "images_per_s": 1 / period,
            "latency_ms": latency * 1e3, "memory_ms": memory_seconds(problem, mapping) * 1e3,
            "host_compute_ms": host_compute(problem, mapping) * 1e3, "units": rows,
            "mapping": {layer: units[p].name for layer, p in zip(problem.layers, mapping)}}


def _table(record: dict):
    from rich import box
    from rich.table import Table

    table = Table(title=f"schedule ({record['solver']}): period {record['period_ms']:.4g} ms "
                  f"({record['images_per_s']:,.1f} images/s), latency {record['latency_ms']:.4g} ms",
                  box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for column, justify in (("unit", "left"), ("runs", "left"), ("layers", "right"), ("first .. last", "left"),
                            ("busy ms", "right"), ("util", "right")):
        table.add_column(column, justify=justify, overflow="fold")
    for row in record["units"]:
        runs = row["config"] and f"{row['config']} @ {row['clock_mhz']:g} MHz" or f"onnxruntime x{row['threads']}"
        span = f"{row['layers'][0]} .. {row['layers'][-1]}" if row["layers"] else "-"
        table.add_row(row["unit"], runs, str(len(row["layers"])), span, f"{row['busy_ms']:.4g}",
                      f"{row['utilization']:.0%}")
    return table


def run(args: argparse.Namespace) -> int:
    from scheduler import ga, ilp
    from scheduler.costs import build_problem
    from scheduler.simulator import evaluate

    from scheduler.instances import images_for
    from scheduler.units import network_workload, partitioned_workload

    segments, parts = model_segments(args)
    work = network_workload(segments[0]) if not parts else partitioned_workload(args.model, parts, tuple(segments))
    units = _units(args)
    problem = build_problem(work, units, _cap(args))
    least = images_for(problem.m)
    images = args.images or least
    if images < least:
        raise InputError(f"--images {images}: allowed: at least {least} for {problem.m} units "
                         "(the steady state between filling and draining the pipeline)")
    if args.solver == "ilp":
        result = ilp.solve(problem)
    else:
        result = ga.solve(problem, images, seed=args.seed)
    verdict = evaluate(problem, result.mapping, images)
    record = summary(problem, units, result.mapping, verdict.period, verdict.latency, args.solver, result.seconds)
    if args.output:
        from common.files import atomic_write_text
        from scheduler.gantt import save_gantt

        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        save_gantt(verdict.run, problem.units, verdict.period, f"{work.name}: steady state, period "
                   f"{verdict.period * 1e3:.4g} ms", out)
        atomic_write_text(out / "schedule.json", json.dumps(record, indent=1))
    if args.json:
        print(json.dumps(record))
        return 0
    from common.console import make_console

    console = make_console()
    console.print(_table(record))
    console.print(f"shared main memory busy {record['memory_ms']:.4g} ms per image; host computes "
                  f"{record['host_compute_ms']:.4g} ms per image; solved in {record['solve_seconds']:.2f} s")
    if args.output:
        console.print(f"wrote {Path(args.output) / 'gantt.png'}, gantt.svg and schedule.json")
    return 0
