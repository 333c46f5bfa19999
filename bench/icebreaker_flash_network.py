"""Networks on the iCEBreaker's accelerator with their constants in the SPI flash, in the Amaranth
simulator (`boards.spiflash.simulation.run_on_flash`: the quad reader on the W25Q128JV datasheet
model, activations in on-chip memory standing for SPRAM), at 27 MHz.

`digits`: the built-in digits CNN (16 KB of constants). `fc100k`: a bench-local model with more
weights than the SoC's 96 KiB of SPRAM: 16x8x8 input, a 3x3 convolution to 8 channels, flatten,
a fully connected layer 512 -> 200 (102,400 int8 weights; 512 inputs are the most whose whole
reduction fits a weight bank, as `partial_sums: none` asks), ReLU, and 200 -> 10; few MACs, so
the run is mostly the weights streaming from the flash (1,313 instructions with the 2 KB weight
buffer: 1 KB of weights per CONV). Per network: constants and
SPRAM bytes, measured cycles against the program model's prediction (the configuration's single
`dram` figure), bytes read from the flash and from SPRAM, bit-exact against the golden model,
wall time.

Usage: python bench/icebreaker_flash_network.py [--networks digits fc100k]
(digits about 2 minutes, fc100k about 10 on an idle machine)
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from boards.spiflash.simulation import run_on_flash  # noqa: E402
from hwgen.config import load_config  # noqa: E402
from onnx_factory import GraphBuilder  # noqa: E402
from planner.frontend import load_network  # noqa: E402
from planner.ir import Network  # noqa: E402
from planner.pipeline import plan_and_compile  # noqa: E402
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split  # noqa: E402
from sim.golden import run_quantized  # noqa: E402
from sim.golden.calibration import quantize_network  # noqa: E402

CONFIG = "icebreaker"
FC_INPUT = (16, 8, 8)


def digits() -> tuple[Network, np.ndarray]:
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    return net, net.input_quant.quantize(load_digits_split()[2][0])


def fc100k() -> tuple[Network, np.ndarray]:
    g = GraphBuilder((1, *FC_INPUT), seed=4)
    features = g.node("Relu", [g.conv(g.input_name, FC_INPUT[0], 8, k=3, pad=1)])
    flat = g.node("Flatten", [features], axis=1)
    hidden = g.node("Relu", [g.gemm(flat, 8 * FC_INPUT[1] * FC_INPUT[2], 200)])
    model = g.model(g.gemm(hidden, 200, 10))
    samples = np.random.default_rng(0).standard_normal((4, *FC_INPUT)).astype(np.float32)
    net = quantize_network(load_network(model), samples)
    return net, net.input_quant.quantize(samples[0])


NETWORKS = {"digits": digits, "fc100k": fc100k}


def bench(name: str) -> bool:
    net, x = NETWORKS[name]()
    config = load_config(CONFIG)
    compilation = plan_and_compile(net, config)
    compiled = compilation.compiled
    memory = compiled.memory
    print(f"{name} on {config.name} ({compiled.report()['instructions']} instructions): constants (flash) {memory.constant_bytes:,} B, activations and scratch (SPRAM) "
          f"{memory.size - memory.constant_bytes:,} B", flush=True)
    start = time.monotonic()
    run, device = run_on_flash(compiled, x, max_cycles=20_000_000)
    wall = time.monotonic() - start
    golden = run_quantized(net, x)
    exact = all(np.array_equal(run.outputs[n], golden[n]) for n in net.outputs)
    predicted = compilation.prediction.cycles
    reads = sum(1 for _, instruction, _ in device.history if instruction.startswith("FAST READ"))
    print(f"  cycles: measured {run.cycles:,}, predicted {predicted:,} ({(predicted - run.cycles) / run.cycles:+.2%})")
    print(f"  bytes read {run.traffic.bytes_read:,} in {run.traffic.read_requests:,} bursts, written "
          f"{run.traffic.bytes_written:,}; flash reads started (new address) {reads:,}")
    print(f"  bit-exact: {'yes' if exact else 'NO'}; {wall:.0f} s wall, {run.cycles / wall:,.0f} cycles/s", flush=True)
    return exact


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", choices=list(NETWORKS), default=list(NETWORKS))
    args = parser.parse_args()
    results = [bench(name) for name in args.networks]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
