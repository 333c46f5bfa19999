"""Held-out accuracy of the digits CNN measured in RTL simulation.

The built-in digits CNN, quantized as `hwgen demo` quantizes it, runs every held-out digit (the
split `hwgen demo` uses, or the first --samples) on the emitted Verilog of the accelerator in
co-simulation (Verilator by default, the fastest RTL engine; the build is made once and cached,
and all images run back to back in one simulation). Every output is checked against the golden
model; the figures are the accuracy, images per second and the total simulated cycles.

Usage: python bench/bench_rtl_accuracy.py [--samples N] [--engine verilator|icarus] [--hw default]
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from hwgen.config import load_config
from sim.golden.calibration import quantize_network
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.cosim.runner import build_design, run_cosim_batch
from sim.cosim.simulators import SIMULATORS
from sim.golden import run_quantized


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, help="the first N held-out images (default: all)")
    parser.add_argument("--engine", choices=SIMULATORS, default="verilator", help="co-simulation engine (default: verilator)")
    parser.add_argument("--hw", default="default", help="hardware configuration (default: default)")
    args = parser.parse_args()

    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    _, _, x_test, y_test = load_digits_split()
    x_test, y_test = x_test[:args.samples], y_test[:args.samples]
    config = load_config(args.hw)
    compiled = plan_and_compile(net, config).compiled
    output = net.outputs[0]
    xs = net.input_quant.quantize(x_test)

    start = time.perf_counter()
    build = build_design(compiled, args.engine)
    print(f"{args.engine} build of the accelerator for {config.name}: {time.perf_counter() - start:.1f} s "
          f"(emission and, unless cached in {build.folder.parent}, compilation)")
    start = time.perf_counter()
    runs = run_cosim_batch(compiled, xs, args.engine)
    seconds = time.perf_counter() - start

    exact = sum(np.array_equal(run.outputs[output], run_quantized(net, x)[output]) for run, x in zip(runs, xs))
    predictions = np.array([int(run.outputs[output].argmax()) for run in runs])
    cycles = [run.cycles for run in runs]
    print(f"{len(runs)} held-out digits on the RTL ({args.engine}): {exact}/{len(runs)} outputs equal the golden model; "
          f"accuracy {np.mean(predictions == y_test):.2%}")
    print(f"{len(runs) / seconds:.1f} images/s ({seconds:.1f} s in one simulation); {sum(cycles):,} cycles in total, "
          f"{min(cycles):,} to {max(cycles):,} per image = {sum(cycles) / seconds:,.0f} simulated cycles/s")
    return 0 if exact == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main())
