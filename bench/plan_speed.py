"""Planning speed, this tree against a baseline commit, in one run; optionally every plan compared.

    python bench/plan_speed.py                     # baseline: main before the planner's speed-up
    python bench/plan_speed.py --baseline REV --repeat 5 --plans

Both trees run the same scripts in fresh interpreters (`bench_cli`: the baseline exported with
`git archive`, PYTHONPATH set to each tree; best of `--repeat` runs). Figures: CPU seconds of
`plan_network` alone for ResNet-50 and ResNet-18 on the default configuration (the network
built and loaded first, not timed), and the wall and CPU time of the whole `hwgen plan
resnet18` command. `--plans` also plans every built-in network on every shipped configuration
for every objective in both trees and reports whether each layer's tiles, loop order, costs and
candidate count are the same.
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from bench_cli import ROOT, best, export

BASELINE = "16a4f15"
"""main before the planner's speed-up (issue #22 item 4)."""

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
import json, sys
from dataclasses import asdict
from common.errors import HwgenError
from hwgen.config import load_config
from hwgen.config.loading import CONFIG_DIR
from planner.frontend import load_network
from planner.objective import Objective
from planner.plan import plan_network
from planner.zoo import BUILTIN_MODELS, resolve_model
nets = {name: load_network(resolve_model(name)) for name in BUILTIN_MODELS}
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
    (before, after) = (all_plans(tree, tmp / f"plans{i}.json") for i, tree in enumerate(trees.values()))
    differ = sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))
    refused = sum(isinstance(plan, str) for plan in after.values())
    print(f"plans of every built-in network x shipped configuration x objective: {len(after)} "
          f"({refused} of them refused with an error), {len(after) - len(differ)} identical, {len(differ)} differ"
          + (f": {', '.join(differ[:8])}" if differ else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help=f"git revision to compare with (default {BASELINE})")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure, the best is kept (default 5)")
    parser.add_argument("--plans", action="store_true", help="also compare every plan of both trees (about a minute)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {f"baseline {args.baseline}": export(args.baseline, Path(tmp) / "baseline"), "this tree": ROOT}
        print(f"{'':30s}" + "".join(f"{label:>26s}" for label in trees) + f"{'ratio':>10s}")
        for network in ("resnet50", "resnet18"):
            before, after = (plan_seconds(tree, network, args.repeat) for tree in trees.values())
            print(f"{network + ' plan_network CPU':30s}{before:24.3f} s{after:24.3f} s{before / after:9.2f}x")
        (cpu0, wall0, _), (cpu1, wall1, _) = (best(tree, ["-m", "cli", "plan", "resnet18"], args.repeat)
                                              for tree in trees.values())
        print(f"{'hwgen plan resnet18 wall':30s}{wall0:24.2f} s{wall1:24.2f} s{wall0 / wall1:9.2f}x")
        print(f"{'hwgen plan resnet18 CPU':30s}{cpu0:24.2f} s{cpu1:24.2f} s{cpu0 / cpu1:9.2f}x")
        if args.plans:
            compare_plans(trees, Path(tmp))


if __name__ == "__main__":
    main()
