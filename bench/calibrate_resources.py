"""Calibrate the sweep's resource estimate against real Yosys synthesis (prints figures).

Synthesizes the whole accelerator for a set of small configurations per FPGA family: shapes of
the PE array and buffers with the full template; the first shape with the compact iCEBreaker
template (every option the `icebreaker` configuration sets), with that template less one
option at a time (and the options that need it), less two of its costliest options at a
time (`PAIRS`) and without a vector unit. The model has no terms for how options change
the cost of the array's shape (the compact template's logic grows far less with rows and lanes
than the full template's), so a compact point on a second shape would not be predicted within
the tests' tolerance from the others; compact configurations of other shapes are estimated
with the full template's shape terms (an overestimate). Each holds the program `hwgen sweep --synth` builds too (the built-in digits CNN,
`boards.synth.default_program`; none without a vector unit, whose program lives in SPRAM). The cell counts go to explore/sweep/calibration.json (the LUT /
flip-flop model is fitted to every stored result of a family, also those of earlier designs,
e.g. each option alone on the full template), and the script prints measured against estimated
LUTs, FFs, DSPs and block RAMs, the LUT / FF figures leave-one-out (each configuration predicted
by a model fitted to the others).

Configurations already measured with the same Yosys version are not synthesized again: stored
results do not follow changes to the hardware template. After such changes, remove a family's
results from calibration.json and measure it again, so that all its results are of one version.

Usage: python bench/calibrate_resources.py [--families ecp5 ice40] [--report-only] [--only NAME ...]
Each configuration takes minutes (a compact one about a third of a full-template one).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import fields
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from amaranth.back.verilog import convert  # noqa: E402

from boards.synth import default_program  # noqa: E402
from boards.toolchain import tool_path  # noqa: E402
from boards.yosys import FAMILY_PARTS, PartPlatform, synthesize  # noqa: E402
from hwgen.accelerator import Accelerator  # noqa: E402
from hwgen.config import AcceleratorConfig, ProgramMemory, Template, config_from_dict, load_config  # noqa: E402
from hwgen.program import Program  # noqa: E402
from common.errors import ConfigError  # noqa: E402
from common.files import atomic_write_text  # noqa: E402
from boards.devices import logic_cells  # noqa: E402
from explore.sweep.resources import (CALIBRATION, STRUCTURE, calibration_points, dsp_count, features, fit,  # noqa: E402
                                     memory_counts)

PROGRAM = "digits"  # the program in the ROM: boards.synth's default
# (rows, cols, simd, buffer bytes each, bus bits, SPRAM buffers)
SHAPES = {
    "ecp5": [(2, 2, 2, 4096, 16, ()), (4, 2, 2, 4096, 16, ()), (2, 4, 2, 4096, 16, ()), (4, 2, 4, 16384, 32, ()),
             (8, 2, 2, 8192, 16, ()), (4, 4, 2, 8192, 16, ()), (2, 2, 2, 32768, 16, ())],
    "ice40": [(2, 2, 2, 4096, 8, ()), (4, 2, 2, 4096, 16, ()), (2, 4, 2, 8192, 8, ()),
              (2, 2, 2, 65536, 16, ("input", "weight")), (4, 4, 2, 8192, 16, ())],
}


# options the configuration check refuses without other options (values as in the compact
# template): leaving one of those out of the compact template leaves out these dependents too
REQUIRES = {"dma_descriptor": ("dma", "program_memory"), "dma_loops": ("dma",), "merged_banks": ("partial_sums",)}


def set_options(config: str) -> dict:
    """Every template option shipped configuration `config` sets (YAML-shaped values)."""
    template = load_config(config).template
    return {option.name: list(value) if isinstance(value := getattr(template, option.name), tuple) else value
            for option in fields(Template) if getattr(template, option.name) != option.default}


def compact_template() -> dict:
    """Every option the compact iCEBreaker configuration sets."""
    return set_options("icebreaker")


ALONE = {"ecp5": "ulx3s-85f"}
"""Per family, the shipped configuration each of whose options is calibrated alone on the full
template."""


# the compact template's costliest options, left out two at a time: each option's cost near the
# compact template then has a second witness besides its `compact-without-OPTION` result, so
# every result is predicted from the others (the leave-one-out figures) without going through
# the full template, where the options do not add up
PAIRS = (("dma", "postprocess"), ("loops_and_registers", "dma"), ("loops_and_registers", "postprocess"))


def without(chosen: dict, left_out: tuple[str, ...]) -> dict:
    """The template `chosen` less the options `left_out` and those that need one of them
    (`REQUIRES`) where the configuration check refuses them alone."""
    template = {option: value for option, value in chosen.items() if option not in left_out}
    try:
        config_from_dict(dict(shape_config(*SHAPES["ice40"][0]), template=template))
    except ConfigError:
        template = {option: value for option, value in template.items()
                    if not set(left_out) & set(REQUIRES.get(option, ()))}
    return template


def variants() -> list[tuple[str, dict]]:
    """(label, template section) calibrated on each family's first shape: the compact template
    (`compact`), the compact template less each of its options (`compact-without-OPTION`), less
    each of the `PAIRS` (`compact-without-OPTION-OPTION`), without a vector unit
    (`compact-without-vector_unit`: `vector_ops: []`) and without one but with 2x2 max pools fused
    (`compact-without-vector_unit-fused_pool`, the shipped iCEBreaker's)."""
    chosen = compact_template()
    return ([("compact", chosen)] + [(f"compact-without-{name}", without(chosen, (name,))) for name in chosen]
            + [(f"compact-without-{'-'.join(pair)}", without(chosen, pair)) for pair in PAIRS]
            + [("compact-without-vector_unit", {**chosen, "vector_ops": []}),
               ("compact-without-vector_unit-fused_pool", {**chosen, "vector_ops": [], "max_fused_pool": 2})])


def calibration_configs(family: str) -> list[dict]:
    """The configurations synthesized for `family`: its shapes, then its first shape with each
    template variant and each option of its `ALONE` configuration."""
    base = [shape_config(*shape) for shape in SHAPES[family]]
    alone = [(name, {name: value}) for name, value in set_options(ALONE[family]).items()] if family in ALONE else []
    return base + [dict(base[0], name=f"{base[0]['name']}-{label}", template=t) for label, t in variants() + alone]


def shape_config(rows: int, cols: int, simd: int, buffer_bytes: int, bus: int, spram: tuple[str, ...]) -> dict:
    return {"name": f"cal-{rows}x{cols}x{simd}-{buffer_bytes}", "clock_mhz": 50,
            "pe": {"rows": rows, "cols": cols, "simd": simd},
            "widths": {"activation": 8, "weight": 8, "accumulator": 32},
            "buffers": {"input_bytes": buffer_bytes, "weight_bytes": buffer_bytes, "output_bytes": buffer_bytes,
                        "spram": list(spram)},
            "dram": {"bus_width_bits": bus, "bandwidth_bytes_per_cycle": 1, "latency_cycles": 4, "burst_beats": 4}}


def yosys_version() -> str:
    output = subprocess.run([tool_path("yosys"), "-V"], capture_output=True, text=True, check=True).stdout
    return output.split(" (")[0].strip()


def program(config: AcceleratorConfig) -> Program:
    """The digits CNN's program (`PROGRAM`); none without a vector unit, which cannot run its max
    pool: the configurations without one keep their program in SPRAM, outside the hardware."""
    if config.template.vector_unit:
        return default_program(config)
    assert config.template.program_memory == ProgramMemory.SPRAM, config.name
    return Program()


def measure(family: str, config: dict) -> dict:
    start = time.perf_counter()
    accelerator = config_from_dict(config)
    verilog = convert(Accelerator(accelerator, program(accelerator)), name="top",
                      platform=PartPlatform(FAMILY_PARTS[family]))
    cells = synthesize(family, verilog)
    cells.pop("$scopeinfo", None)
    return {"family": family, "config": config, "cells": dict(sorted(cells.items())),
            "seconds": round(time.perf_counter() - start, 1)}


def report(family: str) -> None:
    points = [(config_from_dict(c), cells) for c, cells in calibration_points(family)]
    print(f"{family}: {len(points)} configurations   measured / estimated (LUT and FF leave-one-out)")
    print(f"  {'rows x cols x simd-buffer bytes':30s} {'LUT':>13s} {'FF':>13s} {'DSP':>9s} {'BRAM':>9s}")
    for i, (config, cells) in enumerate(points):
        lut, ff = logic_cells(family, cells)
        others = [(c, logic_cells(family, k)) for j, (c, k) in enumerate(points) if j != i]
        loo = fit(others).predict(features(config)) if len(others) >= len(STRUCTURE) else (float("nan"),) * 2
        dsp = cells.get("MULT18X18D", 0) + cells.get("SB_MAC16", 0)
        bram = cells.get("DP16KD", 0) + cells.get("SB_RAM40_4K", 0)
        print(f"  {config.name.removeprefix('cal-'):30s} {lut:6d}/{loo[0]:6.0f} {ff:6d}/{loo[1]:6.0f} {dsp:4d}/{dsp_count(config, family):4d} "
              f"{bram:4d}/{memory_counts(config, family)[0]:4d}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", nargs="+", default=list(SHAPES), choices=list(SHAPES), help="FPGA families")
    parser.add_argument("--report-only", action="store_true", help="print the table without synthesizing")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="synthesize only these configurations (names "
                        "as printed, e.g. 2x2x2-4096-vector_ops); the others keep their stored results")
    args = parser.parse_args()
    version = yosys_version()
    fresh = {"yosys": version, "program": PROGRAM, "results": []}
    store = json.loads(CALIBRATION.read_text()) if CALIBRATION.exists() else fresh
    if (store["yosys"], store.get("program")) != (version, PROGRAM):
        store = fresh
    for family in args.families:
        for config in [] if args.report_only else calibration_configs(family):
            if any(r["family"] == family and r["config"] == config for r in store["results"]):
                continue
            if args.only and config["name"].removeprefix("cal-") not in args.only:
                continue
            store["results"].append(measure(family, config))
            print(f"{family} {config['name']}: {store['results'][-1]['seconds']} s", flush=True)
            atomic_write_text(CALIBRATION, json.dumps(store, indent=1) + "\n")
        report(family)


if __name__ == "__main__":
    main()
