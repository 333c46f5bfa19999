"""`hwgen plan MODEL --hw CFG`: schedule every layer and print / save the plan."""
from __future__ import annotations

import argparse
import json

from cli.commands.common import add_calibration_argument, add_model_argument, checkable, shape_segments
from common.errors import InputError
from common.files import check_output_file
from hwgen.config import load_config
from planner.envelope import bounds_quantization
from planner.objective import Objective
from planner.pipeline import plan_checked
from planner.plan import Strategy, save_plan


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "plan", description="Choose per-layer tiles and DRAM loop orders and predict traffic, "
                                   "cycles and energy.")
    add_model_argument(parser)
    parser.add_argument("--hw", default=None, metavar="CFG",
                        help="hardware YAML file or shipped config name (default: default, the ulx3s-85f board's)")
    parser.add_argument("--objective", choices=[o.value for o in Objective], default="latency",
                        help="what to minimise per layer (default: latency)")
    parser.add_argument("--strategy", choices=[s.value for s in Strategy], default="search",
                        help="optimal search or the e-PlaNNer baseline heuristic (default: search)")
    add_calibration_argument(parser)
    parser.add_argument("-o", "--output", metavar="PLAN", help="save the plan (.json for JSON, else YAML)")
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead of the table")
    parser.set_defaults(func=run)


def summary(plan, clock_mhz: float) -> dict:
    """The `--json` document."""
    seconds = plan.cycles / (clock_mhz * 1e6)
    return {
        "layers": [{"name": l.name, "tiles": l.tiles, "order": list(l.order), "dram_bytes": l.cost.dram_bytes,
                    "cycles": l.cost.cycles, "utilization": l.cost.utilization, "energy_pj": l.cost.energy_pj}
                   for l in plan.layers],
        "total": {"dram_bytes": plan.dram_bytes, "cycles": plan.cycles, "energy_pj": plan.energy_pj,
                  "clock_mhz": clock_mhz, "latency_ms": seconds * 1e3, "images_per_s": 1 / seconds},
        "planned": plan.planned,
        "reused": plan.reused,
    }


def run_segments(args: argparse.Namespace, segments: list, host_parts: list[dict], config) -> int:
    """A model with host operators inside: each accelerator segment planned, the host parts
    (onnxruntime) listed between them."""
    if args.output:
        raise InputError(f"{args.model} has host operators inside: --output saves one network's plan; allowed: "
                         "no --output (each segment is printed)")
    plans = [plan_checked(net, config, Objective(args.objective), Strategy(args.strategy)) for net in segments]
    cycles = sum(plan.cycles for plan in plans)
    if args.json:
        seconds = cycles / (config.clock_mhz * 1e6)
        print(json.dumps({"segments": [dict(summary(plan, config.clock_mhz), name=net.name)
                                       for net, plan in zip(segments, plans)],
                          "host_parts": host_parts,
                          "total": {"dram_bytes": sum(plan.dram_bytes for plan in plans), "cycles": cycles,
                                    "energy_pj": sum(plan.energy_pj for plan in plans),
                                    "clock_mhz": config.clock_mhz, "latency_ms": seconds * 1e3,
                                    "images_per_s": 1 / seconds, "host_parts_counted": False}}))
        return 0
    from planner.report import print_plan, timing_line

    for index, (net, plan) in enumerate(zip(segments, plans)):
        print(f"accelerator segment {index} ({net.name}):")
        print_plan(plan, config.clock_mhz)
        for host in (h for h in host_parts if h["after_segment"] == index):
            print(f"host part after segment {index}: {', '.join(host['ops'])} (onnxruntime)")
    print(f"{len(segments)} accelerator segments: {timing_line(cycles, config.clock_mhz)}; the host parts and "
          "the moves between host and board are not counted (`hwgen simulate` runs them)")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.output:
        check_output_file(args.output, "--output")
    config = load_config(args.hw)
    # planning reads shapes; weights only where the configuration checks a calibrated network
    segments, host_parts = shape_segments(args, weights=bounds_quantization(config))
    if host_parts:
        return run_segments(args, segments, host_parts, config)
    plan = plan_checked(checkable(segments[0], config, args), config, Objective(args.objective), Strategy(args.strategy))
    if args.output:
        save_plan(plan, args.output)
    if args.json:
        print(json.dumps(summary(plan, config.clock_mhz)))
    else:
        from planner.report import print_plan

        print_plan(plan, config.clock_mhz)
    return 0
