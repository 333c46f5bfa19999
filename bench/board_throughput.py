"""Images per second of networks on a board configuration, beside the physical limits.

Each network is planned and compiled for the configuration (`--hw`: `ulx3s-85f`, `icebreaker`,
`orangecrab`), whose `dram` figures are the board's main memory as measured (the ULX3S's SDRAM,
`bench/sdram_dram_figures.py`; the OrangeCrab's DDR3 through LiteDRAM, docs/ddr3.md; the
iCEBreaker's SPRAM). The instruction-level simulator runs the program on one input: its outputs
are checked against the golden model and its DRAM bytes are the traffic per image. Cycles are the
program model's; images/s follow at the configuration's clock and at the Fmax of the board build
(`--fmax`, default the latest `hwgen build --board B --hw B --json` of docs/boards.md).

The limits at the Fmax: compute, the PE array's MACs per cycle over the network's MACs; memory,
the sustained `dram` bandwidth over the DRAM bytes per image. A network the configuration cannot
plan prints why.

Usage: python bench/board_throughput.py [--hw ulx3s-85f] [--networks NAME ...] [--fmax MHZ] [--no-isa]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from boards.measured_fmax import BOARD_FMAX_MHZ  # noqa: E402
from common.errors import HwgenError  # noqa: E402
from hwgen.config import load_config  # noqa: E402
from planner.frontend import load_network  # noqa: E402
from planner.pipeline import plan_and_compile  # noqa: E402
from planner.zoo import builtin_calibration, resolve_model  # noqa: E402
from sim.golden import run_quantized  # noqa: E402
from sim.golden.calibration import quantize_network  # noqa: E402
from sim.isa_sim import IsaSimulator  # noqa: E402

NETWORKS = ("resnet18", "mobilenetv2", "resnet20-cifar", "resnet8-cifar", "digits")
"""The `sync` Fmax of each shipped board configuration's latest build (docs/boards.md)."""


def measure(name: str, config_name: str, fmax_mhz: float, isa: bool) -> dict:
    """Plan, compile and (with `isa`) check one network; its figures."""
    config = load_config(config_name)
    model = load_network(resolve_model(name))
    net = quantize_network(model, builtin_calibration(name, tuple(model.input_shape)))
    row = {"network": name, "weights_kib": net.total_weights / 1024, "mmacs": net.total_macs / 1e6}
    start = time.monotonic()
    try:
        compilation = plan_and_compile(net, config)
    except HwgenError as error:
        return {**row, "error": str(error)}
    compiled, cycles = compilation.compiled, compilation.prediction.cycles
    macs_per_cycle = config.pe.rows * config.pe.cols * config.pe.simd
    dram_bytes = compilation.prediction.dram_bytes
    row.update(image_mib=compiled.memory.size / 2**20, cycles=cycles, mac_use=net.total_macs / (cycles * macs_per_cycle),
               fps_clock=config.clock_mhz * 1e6 / cycles, fps_fmax=fmax_mhz * 1e6 / cycles,
               compute_limit=fmax_mhz * 1e6 * macs_per_cycle / net.total_macs, exact=None,
               compile_s=time.monotonic() - start)
    if isa:
        calibration = builtin_calibration(name, tuple(model.input_shape))
        x = net.input_quant.quantize(calibration[0])
        dram = compiled.dram_with_input(x)
        simulator = IsaSimulator(config, compiled.program, dram)
        simulator.run()
        golden = run_quantized(net, x)
        row["exact"] = all(np.array_equal(compiled.read_output(dram, out), golden[out]) for out in net.outputs)
        traffic = simulator.stats.traffic
        dram_bytes = traffic.bytes_read + traffic.bytes_written
    row["dram_mib"] = dram_bytes / 2**20
    row["memory_limit"] = config.dram.bandwidth_bytes_per_cycle * fmax_mhz * 1e6 / dram_bytes
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hw", default="ulx3s-85f", choices=sorted(BOARD_FMAX_MHZ), help="board configuration")
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS), choices=NETWORKS)
    parser.add_argument("--fmax", type=float, help="MHz: the board build's Fmax (default: the latest build's)")
    parser.add_argument("--no-isa", action="store_true", help="skip the instruction-level simulation")
    args = parser.parse_args()
    fmax = args.fmax or BOARD_FMAX_MHZ[args.hw]
    config = load_config(args.hw)
    print(f"{args.hw}: {config.pe.rows}x{config.pe.cols}x{config.pe.simd} PEs, dram "
          f"{config.dram.bandwidth_bytes_per_cycle:g} B/cycle; images/s at the {config.clock_mhz:g} MHz clock and "
          f"at the build's {fmax:g} MHz Fmax, with the compute and memory limits at the Fmax")
    print(f"{'network':<16}{'weights KiB':>12}{'MMAC':>9}{'cycles':>14}{'MAC use':>8}{'DRAM MiB':>10}"
          f"{'img/s@clk':>10}{'img/s@Fmax':>11}{'compute lim':>12}{'memory lim':>11}{'bit-exact':>10}")
    for name in args.networks:
        r = measure(name, args.hw, fmax, not args.no_isa)
        if "error" in r:
            print(f"{r['network']:<16}{r['weights_kib']:>12,.0f}{r['mmacs']:>9,.1f}  does not plan: {r['error']}",
                  flush=True)
            continue
        exact = "-" if r["exact"] is None else ("yes" if r["exact"] else "NO")
        print(f"{r['network']:<16}{r['weights_kib']:>12,.0f}{r['mmacs']:>9,.1f}{r['cycles']:>14,}{r['mac_use']:>8.1%}"
              f"{r['dram_mib']:>10.2f}{r['fps_clock']:>10.2f}{r['fps_fmax']:>11.2f}{r['compute_limit']:>12.2f}"
              f"{r['memory_limit']:>11.2f}{exact:>10}", flush=True)


if __name__ == "__main__":
    main()
