"""Simulation speed per engine on the default (ECP5-85F-sized) configuration.

- RTL engines: simulated cycles per second on the digits CNN (one image).
- ISA simulator: wall time for all of ResNet-18 (random weights, one image) and, for
  comparison, the golden model's time for the same image (ratio ISA / golden).

Usage: python bench/bench_sim.py [--engines isa amaranth] [--hw default]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from hwgen.config import load_config
from planner.calibrate import quantize_network
from planner.frontend import load_network
from planner.pipeline import run_flow
from planner.zoo import builtin_calibration, resolve_model
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.engines import ENGINES
from sim.golden import run_quantized


def rtl_speed(engine: str, config_name: str) -> None:
    config = load_config(config_name)
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    compiled = run_flow(net, config).compiled
    x = net.input_quant.quantize(load_digits_split()[2][0])
    start = time.perf_counter()
    run = ENGINES[engine].run(net, compiled, x)
    seconds = time.perf_counter() - start
    print(f"{engine:10s} digits CNN on {config.name}: {run.cycles:,} cycles in {seconds:.1f} s "
          f"= {run.cycles / seconds:,.0f} simulated cycles/s")


def isa_resnet18(config_name: str) -> None:
    config = load_config(config_name)
    float_net = load_network(resolve_model("resnet18"))
    net = quantize_network(float_net, builtin_calibration("resnet18", float_net.input_shape)[:1])
    flow = run_flow(net, config)
    x = net.input_quant.quantize(np.random.default_rng(1).standard_normal(net.input_shape).astype(np.float32))
    start = time.perf_counter()
    run = ENGINES["isa"].run(net, flow.compiled, x)
    isa_seconds = time.perf_counter() - start
    start = time.perf_counter()
    golden = run_quantized(net, x)
    golden_seconds = time.perf_counter() - start
    exact = all(np.array_equal(run.outputs[n], golden[n]) for n in net.outputs)
    print(f"isa        ResNet-18 on {config.name}: {isa_seconds:.1f} s for {len(flow.compiled.program.instructions):,} "
          f"instructions ({flow.plan.cycles:,} predicted cycles = {flow.plan.cycles / isa_seconds:,.0f} cycles/s); "
          f"golden {golden_seconds:.2f} s (ISA / golden = {isa_seconds / golden_seconds:.0f}x); bit-exact: {exact}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", nargs="+", default=[n for n, e in ENGINES.items() if e.needs_program])
    parser.add_argument("--hw", default="default")
    args = parser.parse_args()
    for engine in args.engines:
        if engine == "isa":
            isa_resnet18(args.hw)
        else:
            rtl_speed(engine, args.hw)


if __name__ == "__main__":
    main()
