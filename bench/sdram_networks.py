"""Images per second of real networks on the ULX3S-85F SoC with its SDRAM main memory.

Each network is planned and compiled for the `ulx3s-85f` configuration, whose `dram` figures are
measured on the SDRAM (`bench/sdram_dram_figures.py`; the program model predicts SDRAM runs
within 2 %). The instruction-level simulator runs the program on one input: its outputs are
checked against the golden model and its DRAM bytes are the traffic per image. Cycles are the
program model's; images/s follow at the configuration's clock and at the Fmax of the board build
(`--fmax`, from `hwgen build --board ulx3s-85f --json`).

Usage: python bench/sdram_networks.py [--networks resnet18 mobilenetv2 resnet20-cifar resnet8-cifar]
                                      [--fmax MHZ] [--no-isa]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hwgen.config import load_config  # noqa: E402
from planner.frontend import load_network  # noqa: E402
from planner.pipeline import plan_and_compile  # noqa: E402
from planner.zoo import builtin_calibration, resolve_model  # noqa: E402
from sim.golden import run_quantized  # noqa: E402
from sim.golden.calibration import quantize_network  # noqa: E402
from sim.isa_sim import IsaSimulator  # noqa: E402

CONFIG = "ulx3s-85f"
NETWORKS = ("resnet18", "mobilenetv2", "resnet20-cifar", "resnet8-cifar")


def measure(name: str, fmax_mhz: float, isa: bool) -> dict:
    """Plan, compile and (with `isa`) check one network; its figures."""
    config = load_config(CONFIG)
    model = load_network(resolve_model(name))
    calibration = builtin_calibration(name, tuple(model.input_shape))
    net = quantize_network(model, calibration)
    start = time.monotonic()
    compilation = plan_and_compile(net, config)
    compiled, cycles = compilation.compiled, compilation.prediction.cycles
    row = {"network": name, "weights_kib": net.total_weights / 1024, "image_mib": compiled.memory.size / 2**20,
           "gmacs": net.total_macs / 1e9, "cycles": cycles,
           "mac_use": net.total_macs / (cycles * config.pe.rows * config.pe.cols * config.pe.simd),
           "fps_clock": config.clock_mhz * 1e6 / cycles, "fps_fmax": fmax_mhz * 1e6 / cycles,
           "compile_s": time.monotonic() - start, "dram_mib": None, "exact": None}
    if isa:
        x = net.input_quant.quantize(calibration[0])
        dram = compiled.dram_with_input(x)
        simulator = IsaSimulator(config, compiled.program, dram)
        simulator.run()
        golden = run_quantized(net, x)
        row["exact"] = all(np.array_equal(compiled.read_output(dram, out), golden[out]) for out in net.outputs)
        traffic = simulator.stats.traffic
        row["dram_mib"] = (traffic.bytes_read + traffic.bytes_written) / 2**20
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS), choices=NETWORKS)
    parser.add_argument("--fmax", type=float, default=75.94, help="MHz: the board build's Fmax")
    parser.add_argument("--no-isa", action="store_true", help="skip the instruction-level simulation")
    args = parser.parse_args()
    clock = load_config(CONFIG).clock_mhz
    print(f"{CONFIG}, SDRAM main memory; images/s at the {clock:g} MHz clock and at the build's {args.fmax} MHz Fmax")
    header = (f"{'network':<16}{'weights KiB':>12}{'image MiB':>10}{'GMAC':>8}{'cycles':>14}{'MAC use':>8}"
              f"{'DRAM MiB':>10}{'img/s@clk':>10}{'img/s@Fmax':>11}{'bit-exact':>10}{'s':>6}")
    print(header)
    for name in args.networks:
        r = measure(name, args.fmax, not args.no_isa)
        dram = "-" if r["dram_mib"] is None else f"{r['dram_mib']:.2f}"
        exact = "-" if r["exact"] is None else ("yes" if r["exact"] else "NO")
        print(f"{r['network']:<16}{r['weights_kib']:>12,.0f}{r['image_mib']:>10.2f}{r['gmacs']:>8.3f}"
              f"{r['cycles']:>14,}{r['mac_use']:>8.1%}{dram:>10}{r['fps_clock']:>10.2f}{r['fps_fmax']:>11.2f}"
              f"{exact:>10}{r['compile_s']:>6.0f}", flush=True)


if __name__ == "__main__":
    main()
