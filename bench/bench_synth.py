"""Synthesis smoke figures (Yosys from PyPI): cells of a PE, a post-processing lane and, with
--full, the whole accelerator for a small configuration, per FPGA family; with --pnr DEVICE,
place and route (nextpnr) of the accelerator for each --hw configuration on a bare device:
LUT/FF/DSP/BRAM/SPRAM use and Fmax against the target (`boards.synth.synth_report`).

Usage: python bench/bench_synth.py [--families ecp5 ice40] [--full]
       python bench/bench_synth.py --pnr ecp5-85f --hw ulx3s-85f [--hw CFG ...]
The whole accelerator takes minutes per family; place and route tens of minutes per design.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from amaranth.back.verilog import convert

from boards.synth import synth_report
from boards.yosys import synthesize
from hwgen.accelerator import Accelerator
from hwgen.accumulator import accumulator_shape
from hwgen.config import config_from_dict, load_config
from hwgen.pe import PE
from hwgen.postprocess import PostProcess
from sim.golden.calibration import quantize_network
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs

SMALL = {
    "name": "small", "clock_mhz": 50, "pe": {"rows": 4, "cols": 2, "simd": 2},
    "widths": {"activation": 8, "weight": 8, "accumulator": 32},
    "buffers": {"input_bytes": 4096, "weight_bytes": 4096, "output_bytes": 4096},
    "dram": {"bus_width_bits": 16, "bandwidth_bytes_per_cycle": 2, "latency_cycles": 4, "burst_beats": 4},
}
DEVICES = {"ecp5": "LFE5U-85F", "ice40": "iCE40UP5K"}


class Device:
    def __init__(self, device: str):
        self.device = device


def report(label: str, family: str, component) -> None:
    start = time.perf_counter()
    verilog = convert(component, name="top", platform=Device(DEVICES[family]))
    cells = synthesize(family, verilog)
    cells.pop("$scopeinfo", None)
    print(f"{family:6s} {label:34s} {time.perf_counter() - start:6.0f} s  {json.dumps(dict(sorted(cells.items())))}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", nargs="+", default=["ecp5", "ice40"], choices=sorted(DEVICES))
    parser.add_argument("--full", action="store_true", help="also the whole accelerator (small config, digits program)")
    parser.add_argument("--pnr", metavar="DEVICE", help="place and route each --hw configuration on this bare device")
    parser.add_argument("--hw", action="append", default=[], metavar="CFG", help="configuration for --pnr (repeatable)")
    args = parser.parse_args()
    if args.pnr:
        for name in args.hw or ["default"]:
            config = load_config(name)
            with tempfile.TemporaryDirectory(prefix="bench-pnr-") as workdir:
                result = synth_report(args.pnr, config, Path(workdir))
            fmax = ", ".join(f"{mhz:.1f}" for mhz in result.fmax_mhz.values())
            print(f"{config.name:12s} on {args.pnr}: Fmax {fmax} MHz (target {result.target_mhz:g}, "
                  f"{'met' if result.timing_met else 'FAILED'}), {json.dumps(vars(result.resources))}, "
                  f"{result.build_seconds:.0f} s", flush=True)
        return
    default = load_config("default")
    for family in args.families:
        report(f"PE (simd {default.pe.simd})", family, PE(default.pe.simd, accumulator_shape(default)))
        report("post-processing, 1 lane", family, PostProcess(1, accumulator_shape(default)))
        if args.full:
            config = config_from_dict(SMALL)
            net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
            program = plan_and_compile(net, config).compiled.program
            pe = config.pe
            report(f"accelerator {pe.rows}x{pe.cols}x{pe.simd}, 4 KB buffers", family, Accelerator(config, program))


if __name__ == "__main__":
    main()
