"""Global average pools: the form each configuration compiles them in (`planner.split`), its
constant bytes and cycles, planned and compiled.

Per case `CxHxW` on each configuration: the layers the pool becomes (`avgpool`: the vector
unit's SUM; `conv g=C`: a depthwise convolution with weights 1; `fc`: a fully connected layer
over the flattened map, C x H*W*Cp weights), the compiled constant bytes (weights and
parameters), the plan's cycles and DRAM bytes against the program model's, or the planning-time
refusal (`plan_checked`, as `hwgen plan`). Run it on another tree (`PYTHONPATH=OTHER python bench/gap_forms.py`) for the figures
before a change.

Usage: python bench/gap_forms.py [--hw CFG ...] [--cases CxHxW ...]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[1] / "tests")]

import numpy as np  # noqa: E402

from common.errors import PlanningError  # noqa: E402
from field_cases import Case  # noqa: E402
from hwgen.config import load_config  # noqa: E402
from planner.frontend import load_network  # noqa: E402
from hwgen.program_walk import ProgramDoesNotFit  # noqa: E402
from planner.pipeline import plan_and_compile, plan_checked  # noqa: E402
from planner.split import split_network  # noqa: E402
from sim.golden.calibration import quantize_network  # noqa: E402

CASES = ("16x7x7", "1024x7x7", "1280x7x7", "64x16x16", "1024x16x16", "1280x16x16")


def form(net, config) -> str:
    """The layers the split makes of the pool."""
    return " + ".join(layer.op.value + (f" g={layer.groups}" if layer.groups > 1 else "")
                      for layer in split_network(net, config).layers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hw", nargs="+", default=["default", "icebreaker"], help="configurations")
    parser.add_argument("--cases", nargs="+", default=list(CASES), help="pools as CxHxW (square maps)")
    args = parser.parse_args()
    print(f"{'config':<11} {'case':<11} {'form':<12} {'constant B':>12} {'plan cycles':>12} {'program':>12} "
          f"{'ratio':>6} {'DRAM B plan = program':>22} {'s':>5}")
    for name in args.hw:
        config = load_config(name)
        for case in args.cases:
            channels, size, _ = (int(v) for v in case.split("x"))
            net = load_network(Case("global_avg", channels, channels, size, size, 1, 0, 0).model())
            qnet = quantize_network(net, np.random.default_rng(0).uniform(-1, 1, (2, *net.input_shape)))
            start = time.perf_counter()
            try:
                plan_checked(qnet, config)  # as `hwgen plan`: what it accepts compiles
            except (PlanningError, ProgramDoesNotFit) as error:
                print(f"{name:<11} {case:<11} {form(qnet, config):<12} refused: {error}")
                continue
            flow = plan_and_compile(qnet, config)
            plan, program = flow.plan, flow.prediction
            print(f"{name:<11} {case:<11} {form(qnet, config):<12} {flow.compiled.memory.constant_bytes:>12,} "
                  f"{plan.cycles:>12,} {program.cycles:>12,} {plan.cycles / program.cycles:>6.3f} "
                  f"{f'{plan.dram_bytes:,} = {program.dram_bytes:,}' if plan.dram_bytes == program.dram_bytes else f'{plan.dram_bytes:,} != {program.dram_bytes:,}':>22} "
                  f"{time.perf_counter() - start:>5.1f}")


if __name__ == "__main__":
    main()
