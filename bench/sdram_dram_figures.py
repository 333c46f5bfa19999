"""The ULX3S configurations' `dram` figures, measured on the SDRAM main memory.

The digits CNN runs on the RTL with `boards.sdram.memory.SdramMainMemory` and the datasheet
model of the board's IS42S16160G-7 (`boards.sdram.simulation.run_on_sdram`). Its sustained
bandwidth on the accelerator's own access pattern is the bandwidth at which the program model
predicts that run's cycles (bisection, the other figures fixed: the 16-bit bus, 8-beat bursts,
the 7-cycle read latency to an open row of `bench/sdram_bandwidth.py`). A second network the
figure was not fitted on (the CIFAR-10 ResNet-8 at `--validate-hw`) then checks the prediction.
It prints the `dram:` line for `hwgen/configs/ulx3s-85f.yaml`.

Usage: python bench/sdram_dram_figures.py [--validate-hw 16]   (about 6 minutes)
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from boards.sdram.simulation import run_on_sdram  # noqa: E402
from hwgen.config import AcceleratorConfig, config_from_dict, load_config  # noqa: E402
from planner.frontend import load_network  # noqa: E402
from planner.ir import Network  # noqa: E402
from planner.pipeline import plan_and_compile  # noqa: E402
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split  # noqa: E402
from planner.zoo.reference import build_reference  # noqa: E402
from sim.golden import run_quantized  # noqa: E402
from sim.golden.calibration import quantize_network  # noqa: E402

BASE = "ulx3s-85f"
FIXED = {"bus_width_bits": 16, "latency_cycles": 7, "burst_beats": 8}


def with_bandwidth(bandwidth: float) -> AcceleratorConfig:
    dram = {**FIXED, "bandwidth_bytes_per_cycle": round(bandwidth, 3)}
    return config_from_dict({**load_config(BASE).to_dict(), "dram": dram})


def measured_run(net: Network, x: np.ndarray, config: AcceleratorConfig) -> tuple[int, int]:
    """(cycles on SDRAM, predicted cycles) of `net` planned for `config`; checks the outputs."""
    compilation = plan_and_compile(net, config)
    start = time.monotonic()
    run = run_on_sdram(compilation.compiled, x, max_cycles=50_000_000)
    golden = run_quantized(net, x)
    exact = all(np.array_equal(run.outputs[name], golden[name]) for name in net.outputs)
    print(f"  {run.cycles:,} cycles simulated in {time.monotonic() - start:.0f} s; outputs equal the golden model's: {exact}")
    if not exact:
        raise SystemExit("the SDRAM run's outputs differ from the golden model's")
    return run.cycles, compilation.prediction.cycles


def fitted_bandwidth(net: Network, cycles: int) -> float:
    """The bandwidth (to 0.001 B/cycle) at which the program model predicts `cycles` for `net`."""
    low, high = 0.5, 2.0  # predictions fall as the bandwidth rises
    while high - low > 0.001:
        middle = (low + high) / 2
        if plan_and_compile(net, with_bandwidth(middle)).prediction.cycles > cycles:
            low = middle
        else:
            high = middle
    return round((low + high) / 2, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--validate-hw", type=int, default=16, help="input size of the validation ResNet-8")
    args = parser.parse_args()
    digits = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    print("digits CNN on SDRAM:")
    cycles, _ = measured_run(digits, digits.input_quant.quantize(load_digits_split()[2][3]), load_config(BASE))
    bandwidth = fitted_bandwidth(digits, cycles)
    print(f"  sustained bandwidth on its access pattern: {bandwidth} B/cycle ({bandwidth / 2:.1%} of the bus)")

    samples = np.random.default_rng(0).standard_normal((4, 3, args.validate_hw, args.validate_hw)).astype(np.float32)
    resnet = quantize_network(load_network(build_reference("resnet8-cifar", input_hw=args.validate_hw)), samples)
    print(f"ResNet-8 (CIFAR-10) at {args.validate_hw}x{args.validate_hw} on SDRAM, predicted with {bandwidth} B/cycle:")
    measured, predicted = measured_run(resnet, resnet.input_quant.quantize(samples[0]), with_bandwidth(bandwidth))
    print(f"  predicted {predicted:,} cycles: {(predicted - measured) / measured:+.2%}")
    print(f"dram: {{bus_width_bits: 16, bandwidth_bytes_per_cycle: {bandwidth}, latency_cycles: 7, burst_beats: 8}}")


if __name__ == "__main__":
    main()
