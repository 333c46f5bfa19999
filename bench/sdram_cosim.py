"""CIFAR-10 ResNets on the accelerator with SDRAM main memory, in Verilator.

Each network (the reference zoo's, random weights, quantized on four random samples) is
planned for the ULX3S-85F and run on its first sample through the Verilog of the accelerator
and `SdramMainMemory`, the chip being the Python datasheet model (`boards.sdram.cosim`). Per
network it prints the weights and image bytes, the measured cycles against the program model's
prediction, the DRAM bytes read and written against the instruction-level simulator's, whether
the outputs equal the golden model's, the wall time and the simulated cycles per second.
`--compare-amaranth` also runs the digits CNN both in Verilator and in the Amaranth simulator
(`boards.sdram.simulation.run_on_sdram`, about a minute) and checks they agree cycle for cycle.

Usage: python bench/sdram_cosim.py [--networks resnet8-cifar resnet20-cifar] [--hw 32] [--compare-amaranth]
(about 3 minutes per design for the Verilog and the Verilator build, cached, then the runs)
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from boards.sdram.cosim import build_sdram_design, run_cosim_on_sdram  # noqa: E402
from boards.sdram.simulation import run_on_sdram  # noqa: E402
from compile_helpers import run_isa  # noqa: E402
from hwgen.config import load_config  # noqa: E402
from planner.frontend import load_network  # noqa: E402
from planner.ir import Network  # noqa: E402
from planner.pipeline import plan_and_compile  # noqa: E402
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split  # noqa: E402
from planner.zoo.reference import build_reference  # noqa: E402
from sim.golden import run_quantized  # noqa: E402
from sim.golden.calibration import quantize_network  # noqa: E402
from sim.rtl_sim import RtlRun  # noqa: E402

CONFIG = "ulx3s-85f"
NETWORKS = ("resnet8-cifar", "resnet20-cifar")


def bit_exact(net: Network, x: np.ndarray, run: RtlRun) -> bool:
    golden = run_quantized(net, x)
    return all(np.array_equal(run.outputs[name], golden[name]) for name in net.outputs)


def bench_network(name: str, hw: int, simulator: str) -> bool:
    """Run one reference network and print its figures; whether it was bit-exact."""
    samples = np.random.default_rng(0).standard_normal((4, 3, hw, hw)).astype(np.float32)
    net = quantize_network(load_network(build_reference(name, input_hw=hw)), samples)
    x = net.input_quant.quantize(samples[0])
    compilation = plan_and_compile(net, load_config(CONFIG))
    compiled = compilation.compiled
    print(f"{name} at {hw}x{hw} on {CONFIG}: weights {compiled.memory.constant_bytes:,} B, "
          f"image {len(compiled.image):,} B", flush=True)
    start = time.monotonic()
    build_sdram_design(compiled, simulator)
    print(f"  Verilog and {simulator} build (cached): {time.monotonic() - start:.0f} s", flush=True)
    start = time.monotonic()
    run = run_cosim_on_sdram(compiled, x, simulator=simulator, max_cycles=50_000_000)
    wall = time.monotonic() - start
    predicted = compilation.prediction.cycles
    _, isa = run_isa(compiled, x)
    expected = isa.stats.traffic
    exact = bit_exact(net, x, run)
    print(f"  cycles: measured {run.cycles:,}, predicted {predicted:,} ({(predicted - run.cycles) / run.cycles:+.2%})")
    print(f"  DRAM bytes read {run.traffic.bytes_read:,} (ISA simulator {expected.bytes_read:,}), "
          f"written {run.traffic.bytes_written:,} (ISA simulator {expected.bytes_written:,})")
    print(f"  bit-exact: {'yes' if exact else 'NO'}; {wall:.0f} s wall, {run.cycles / wall:,.0f} cycles/s", flush=True)
    return exact


def compare_amaranth(simulator: str) -> bool:
    """The digits CNN in `simulator` and in the Amaranth simulator: same outputs, cycles, traffic."""
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    compiled = plan_and_compile(net, load_config(CONFIG)).compiled
    x = net.input_quant.quantize(load_digits_split()[2][3])
    start = time.monotonic()
    rtl = run_cosim_on_sdram(compiled, x, simulator=simulator)
    print(f"digits CNN in {simulator} (build included): {rtl.cycles:,} cycles, {time.monotonic() - start:.0f} s",
          flush=True)
    start = time.monotonic()
    reference = run_on_sdram(compiled, x)
    print(f"digits CNN in Amaranth: {reference.cycles:,} cycles, {time.monotonic() - start:.0f} s")
    same = (rtl.cycles == reference.cycles and rtl.traffic == reference.traffic
            and all(np.array_equal(rtl.outputs[name], reference.outputs[name]) for name in net.outputs))
    print(f"  same cycles, traffic and outputs: {'yes' if same else 'NO'}; bit-exact: "
          f"{'yes' if bit_exact(net, x, rtl) else 'NO'}", flush=True)
    return same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS), choices=NETWORKS)
    parser.add_argument("--hw", type=int, default=32, help="input height and width")
    parser.add_argument("--simulator", default="verilator", choices=("verilator", "icarus"))
    parser.add_argument("--compare-amaranth", action="store_true",
                        help="also check the digits CNN against the Amaranth simulation")
    args = parser.parse_args()
    ok = True
    if args.compare_amaranth:
        ok &= compare_amaranth(args.simulator)
    for name in args.networks:
        ok &= bench_network(name, args.hw, args.simulator)
    if not ok:
        raise SystemExit("a run differed")


if __name__ == "__main__":
    main()
