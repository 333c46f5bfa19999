"""Simulation speed per engine on a hardware configuration (default: `default`, the ulx3s-85f one).

- Simulated cycles per second on the digits CNN for every engine that runs the program: the
  instruction-level simulator (it models no time: the planner's predicted cycles over its run
  time), the Amaranth simulator, and the co-simulation of the emitted Verilog in Icarus and
  Verilator. For co-simulation the one-time build is timed apart (it is cached), one image gives
  the time of a run including the simulator's start-up, and N images back to back in one
  simulation give, less the single run, the steady cycles per second.
- ISA simulator: wall time for all of ResNet-18 (random weights, one image) and, for
  comparison, the golden model's time for the same image (ratio ISA / golden).

Usage: python bench/bench_sim.py [--engines isa amaranth icarus verilator] [--hw default] [--images ENGINE N]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from hwgen.config import load_config
from sim.golden.calibration import quantize_network
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from planner.zoo import builtin_calibration, resolve_model
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
from sim.cosim.runner import build_design, design_sources, run_cosim_batch
from sim.cosim.simulators import SIMULATORS
from sim.engines import ENGINES
from sim.golden import run_quantized


def digits_flow(config_name: str):
    config = load_config(config_name)
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    return config, net, plan_and_compile(net, config)


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def engine_speed(engine: str, config_name: str) -> None:
    """The ISA or Amaranth simulator on one digit."""
    config, net, flow = digits_flow(config_name)
    x = net.input_quant.quantize(load_digits_split()[2][0])
    run, seconds = timed(ENGINES[engine].run, net, flow.compiled, x)
    cycles, what = (run.cycles, "cycles") if run.cycles is not None else (flow.plan.cycles, "predicted cycles")
    print(f"{engine:10s} digits CNN on {config.name}: {cycles:,} {what} in {seconds:.2f} s "
          f"= {cycles / seconds:,.0f} simulated cycles/s")


def cosim_speed(simulator: str, config_name: str, images: int) -> None:
    """A co-simulation engine: build, one digit, then `images` digits back to back; the steady speed
    is the difference between the two runs (which leaves out the simulator's start-up)."""
    config, net, flow = digits_flow(config_name)
    sources, emit_seconds = timed(design_sources, flow.compiled)
    _, build_seconds = timed(build_design, flow.compiled, simulator)
    xs = net.input_quant.quantize(load_digits_split()[2][:images])
    (one,), one_seconds = timed(run_cosim_batch, flow.compiled, xs[:1], simulator)
    runs, batch_seconds = timed(run_cosim_batch, flow.compiled, xs, simulator)
    steady = (sum(run.cycles for run in runs) - one.cycles) / (batch_seconds - one_seconds)
    print(f"{simulator:10s} digits CNN on {config.name}: Verilog emitted in {emit_seconds:.1f} s, built in "
          f"{build_seconds:.1f} s (0 if cached); one image {one.cycles:,} cycles in {one_seconds:.1f} s with "
          f"start-up = {one.cycles / one_seconds:,.0f} cycles/s; {images} images back to back in {batch_seconds:.1f} s: "
          f"{steady:,.0f} simulated cycles/s, {(images - 1) / (batch_seconds - one_seconds):.2f} images/s after start-up")


def isa_resnet18(config_name: str) -> None:
    config = load_config(config_name)
    float_net = load_network(resolve_model("resnet18"))
    net = quantize_network(float_net, builtin_calibration("resnet18", float_net.input_shape)[:1])
    flow = plan_and_compile(net, config)
    x = net.input_quant.quantize(np.random.default_rng(1).standard_normal(net.input_shape).astype(np.float32))
    run, isa_seconds = timed(ENGINES["isa"].run, net, flow.compiled, x)
    golden, golden_seconds = timed(run_quantized, net, x)
    exact = all(np.array_equal(run.outputs[n], golden[n]) for n in net.outputs)
    print(f"isa        ResNet-18 on {config.name}: {isa_seconds:.1f} s for {len(flow.compiled.program.instructions):,} "
          f"instructions ({flow.plan.cycles:,} predicted cycles = {flow.plan.cycles / isa_seconds:,.0f} cycles/s); "
          f"golden {golden_seconds:.2f} s (ISA / golden = {isa_seconds / golden_seconds:.0f}x); bit-exact: {exact}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", nargs="+", default=[n for n, e in ENGINES.items() if e.needs_program],
                        help="engines to measure (default: all that run the program)")
    parser.add_argument("--hw", default="default", help="hardware configuration (default: default)")
    parser.add_argument("--images", nargs=2, action="append", metavar=("ENGINE", "N"),
                        help="images run back to back by a co-simulation engine (default: icarus 3, verilator 50)")
    args = parser.parse_args()
    images = {"icarus": 3, "verilator": 50} | {engine: int(n) for engine, n in args.images or []}
    for engine in args.engines:
        if engine in SIMULATORS:
            cosim_speed(engine, args.hw, images[engine])
        else:
            engine_speed(engine, args.hw)
        if engine == "isa":
            isa_resnet18(args.hw)


if __name__ == "__main__":
    main()
