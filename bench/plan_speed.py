"""Planning speed, this tree against baseline commits, in one run; optionally every plan compared.

    python bench/plan_speed.py                     # baselines: before the planner's speed-up, and main before the plan path's imports
    python bench/plan_speed.py --baseline REV [REV ...] --repeat 5 --plans

All trees run the same scripts in fresh interpreters (`bench_cli`: each baseline exported with
`git archive`, every tree's modules compiled to bytecode first, PYTHONPATH set to each tree;
best of `--repeat` runs). Figures: CPU seconds of `plan_network` alone for ResNet-50 and
ResNet-18 on the default configuration (the network built and loaded first, not timed), and the
wall and CPU time of the whole `hwgen plan resnet18` command. `--plans` also plans every
built-in network on every shipped configuration for every objective in every tree (a tree whose
`resolve_model` takes `weights` plans the reference networks from their shapes alone, as
`hwgen plan` does) and reports whether each layer's tiles, loop order, costs and candidate count
are the same as this tree's.
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from bench_cli import ROOT, best, compiled, export

BASELINES = ("16a4f15", "1fe7cb3")
"""main before the planner's speed-up, and main before `hwgen plan` dropped its HDL imports, the
ONNX checker for built-in models and the reference networks' random weights (issue #22 item 4)."""

PLAN_CPU = """
import sys, time
from hwgen.config import load_config
from planner.frontend import load_network
from planner.plan import plan_network
from planner.zoo.reference import build_reference
net, config = load_network(build_reference(sys.argv[1])), load_config("default")
start = time.process_time()
plan_network(net, config)
print(time.process_time() - start)
"""

ALL_PLANS = """
import inspect, json, sys
from dataclasses import asdict
from common.errors import HwgenError
from hwgen.config import load_config
from hwgen.config.loading import CONFIG_DIR
from planner.frontend import load_network
from planner.objective import Objective
from planner.plan import plan_network
from planner.zoo import BUILTIN_MODELS, resolve_model
shapes_only = "weights" in inspect.signature(resolve_model).parameters
nets = {name: load_network(resolve_model(name, weights=False), check=False) if shapes_only
        else load_network(resolve_model(name)) for name in BUILTIN_MODELS}
plans = {}
for config_name in sorted(p.stem for p in CONFIG_DIR.glob("*.yaml")):
    config = load_config(config_name)
    for name, net in nets.items():
        for objective in Objective:
            try:
                plans[f"{config_name}/{name}/{objective}"] = [
                    [l.name, l.op, l.tiles, list(l.order), asdict(l.cost), l.candidates, l.reused]
                    for l in plan_network(net, config, objective).layers]
            except HwgenError as error:
                plans[f"{config_name}/{name}/{objective}"] = str(error)
with open(sys.argv[1], "w") as file:
    json.dump(plans, file)
"""


def plan_seconds(tree: Path, network: str, repeat: int) -> float:
    """Least CPU seconds of `plan_network` on `network` in a fresh interpreter in `tree`."""
    runs = [best(tree, ["-c", PLAN_CPU, network], 1)[2] for _ in range(repeat)]
    return min(float(out.strip().splitlines()[-1]) for out in runs)


def all_plans(tree: Path, into: Path) -> dict:
    cpu, _, _ = best(tree, ["-c", ALL_PLANS, str(into)], 1)
    if cpu != cpu:
        raise SystemExit(f"planning every network failed in {tree}")
    return json.loads(into.read_text())


def compare_plans(trees: dict[str, Path], tmp: Path) -> None:
    """Every baseline's plans against this tree's (the last of `trees`)."""
    plans = {label: all_plans(tree, tmp / f"plans{i}.json") for i, (label, tree) in enumerate(trees.items())}
    *baselines, (label, after) = plans.items()
    refused = sum(isinstance(plan, str) for plan in after.values())
    print(f"plans of every built-in network x shipped configuration x objective: {len(after)} "
          f"({refused} of them refused with an error)")
    for name, before in baselines:
        differ = sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))
        print(f"  {name} against {label}: {len(after) - len(differ)} identical, {len(differ)} differ"
              + (f": {', '.join(differ[:8])}" if differ else ""))


def row(label: str, values: list[float], unit: str, digits: int) -> str:
    """One line of the table: each tree's figure, then each baseline's ratio to this tree's."""
    cells = "".join(f"{value:{20 - len(unit)}.{digits}f}{unit}" for value in values)
    ratios = "".join(f"{value / values[-1]:11.2f}x" for value in values[:-1])
    return f"{label:30s}{cells}{ratios}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", nargs="+", default=list(BASELINES),
                        help=f"git revisions to compare with (default {' '.join(BASELINES)})")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure, the best is kept (default 5)")
    parser.add_argument("--plans", action="store_true", help="also compare every plan of all trees (about a minute each)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {rev: compiled(export(rev, Path(tmp) / rev)) for rev in args.baseline} | {"this tree": compiled(ROOT)}
        print(f"{'':30s}" + "".join(f"{label:>20s}" for label in trees)
              + "".join(f"{'vs ' + rev:>12s}" for rev in args.baseline))
        for network in ("resnet50", "resnet18"):
            seconds = [plan_seconds(tree, network, args.repeat) for tree in trees.values()]
            print(row(f"{network} plan_network CPU", seconds, " s", 3))
        command = [best(tree, ["-m", "cli", "plan", "resnet18"], args.repeat) for tree in trees.values()]
        print(row("hwgen plan resnet18 wall", [wall for _, wall, _ in command], " s", 2))
        print(row("hwgen plan resnet18 CPU", [cpu for cpu, _, _ in command], " s", 2))
        if args.plans:
            compare_plans(trees, Path(tmp))


if __name__ == "__main__":
    main()
