"""Per-block resources of the accelerator (or of a board's SoC) from Yosys (prints a table).

Synthesizes with the hierarchy kept (`synth_<family> -noflatten`) and sums each block's cells:
LUTs (iCE40 SB_LUT4; ECP5 LUT4 + 2 per CCU2C + 2 per TRELLIS_DPR16X4, as nextpnr counts logic
cells), carries, flip-flops, block RAMs, DSPs and SPRAMs, per module instance down to `--depth`
levels below the top (deeper instances are added to their ancestor). Totals are a little above a
flattened synthesis (no optimisation across module boundaries). The accelerator holds the
built-in digits CNN's program, as `hwgen synth` builds it, or `--model`'s.

On iCE40 the `lone FF` column counts the flip-flops nextpnr cannot pack with a LUT of their own
block (their D input is not a LUT output used by that flip-flop alone): each takes a logic cell
of its own, so a block costs about LUT + lone FF of the device's logic cells.

`--block NAME` synthesizes one block alone (`compute_unit`, `conv_engine`, `vector_unit`): a
change to it measured in a fraction of the time.

Usage: python bench/resource_breakdown.py --hw icebreaker [--family ice40] [--soc | --block NAME] [--depth 2] [--model X.onnx]
Takes a few minutes.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from amaranth.back import rtlil  # noqa: E402

from boards.build import memory_bytes  # noqa: E402
from boards.devices import logic_cells  # noqa: E402
from boards.platforms import BOARDS  # noqa: E402
from boards.soc import SocCore  # noqa: E402
from boards.synth import default_network  # noqa: E402
from boards.yosys import FAMILY_PARTS, PREPARE, SYNTH, PartPlatform, family_sources, retype_command, run  # noqa: E402
from hwgen.accelerator import Accelerator  # noqa: E402
from hwgen.compute_unit import ComputeUnit  # noqa: E402
from hwgen.conv_engine import ConvEngine  # noqa: E402
from hwgen.vector_unit import VectorUnit  # noqa: E402
from hwgen.config import AcceleratorConfig, load_config  # noqa: E402
from planner.compile.network import CompiledNetwork  # noqa: E402
from planner.frontend import load_network  # noqa: E402
from planner.pipeline import plan_and_compile  # noqa: E402
from planner.zoo import resolve_model, synthetic_calibration  # noqa: E402
from sim.golden.calibration import quantize_network  # noqa: E402

COLUMNS = {"lone FF": ("lone FF",), "BRAM": ("SB_RAM40_4K", "DP16KD"), "DSP": ("SB_MAC16", "MULT18X18D"), "SPRAM": ("SB_SPRAM256KA",),
           "carry": ("SB_CARRY", "CCU2C")}


def compile_model(config: AcceleratorConfig, model: str | None) -> CompiledNetwork:
    """The built-in digits CNN (`model` None), or an ONNX file quantized with seeded random
    inputs (`planner.zoo.synthetic_calibration`), compiled for `config`."""
    if model is None:
        return default_network(config)
    network = load_network(resolve_model(model))
    return plan_and_compile(quantize_network(network, synthetic_calibration(network.input_shape)), config).compiled


BLOCKS = {"compute_unit": ComputeUnit, "conv_engine": ConvEngine, "vector_unit": VectorUnit}
"""Blocks `--block` synthesizes alone (their ports the design's top ports)."""


def design(config_name: str, soc: bool, model: str | None, block: str | None = None):
    """The accelerator running `model`, the iCEBreaker/ULX3S SoC around it, or one of its `BLOCKS`."""
    config = load_config(config_name)
    if block is not None:
        return BLOCKS[block](config)
    compiled = compile_model(config, model)
    if not soc:
        return Accelerator(config, compiled.program)
    board = BOARDS[config.board]
    return SocCore(config, compiled, memory_bytes(board, compiled.memory.size, config), round(config.clock_mhz * 1e6),
                   sdram=board.sdram, flash=board.flash)


def lone_flip_flops(module: dict) -> int:
    """iCE40 flip-flops of a Yosys JSON module whose D input is not driven by an SB_LUT4 output
    that feeds nothing else (those need a logic cell of their own)."""
    lut_outputs, fanout = set(), {}
    for cell in module["cells"].values():
        for port, bits in cell["connections"].items():
            direction = cell["port_directions"].get(port)
            for bit in bits:
                if direction == "input":
                    fanout[bit] = fanout.get(bit, 0) + 1
                elif cell["type"] == "SB_LUT4":
                    lut_outputs.add(bit)
    for port in module["ports"].values():  # a module output also uses the bit
        if port["direction"] == "output":
            for bit in port["bits"]:
                fanout[bit] = fanout.get(bit, 0) + 1
    return sum(1 for cell in module["cells"].values() if cell["type"].startswith("SB_DFF")
               and not (cell["connections"]["D"][0] in lut_outputs and fanout[cell["connections"]["D"][0]] == 1))


def block_cells(family: str, top, depth: int) -> dict[str, dict[str, int]]:
    """Cells by type of each block (instance path cut to `depth` levels below `top`); on iCE40
    also its lone flip-flops (`lone_flip_flops`) as the pseudo cell type `lone FF`."""
    il = rtlil.convert(top, name="top", platform=PartPlatform(FAMILY_PARTS[family]))
    sources = {"top.il": il, **family_sources(family)}
    stub = f"read_verilog -lib {family}_cells.v; " if family_sources(family) else ""
    retype = retype_command(family)
    script = (f"{stub}read_rtlil top.il; hierarchy -top top; {PREPARE[family]}; {SYNTH[family]} -noflatten -top top"
              + (f"; {retype}" if retype else "") + "; tee -q -o stat.json stat -json; write_json netlist.json")
    with tempfile.TemporaryDirectory(prefix="breakdown-") as workdir:
        run(script, sources, Path(workdir))
        modules = json.loads((Path(workdir) / "stat.json").read_text())["modules"]
        netlist = {name.lstrip("\\"): module
                   for name, module in json.loads((Path(workdir) / "netlist.json").read_text())["modules"].items()}
    blocks: dict[str, dict[str, int]] = {}
    for name, module in modules.items():
        block = ".".join(name.lstrip("\\").split(".")[:depth + 1])
        cells = blocks.setdefault(block, {})
        counts = dict(module.get("num_cells_by_type", {}))
        if family == "ice40" and name.lstrip("\\") in netlist:
            counts["lone FF"] = lone_flip_flops(netlist[name.lstrip("\\")])
        for cell, count in counts.items():
            cells[cell] = cells.get(cell, 0) + count
    return blocks


def row(family: str, cells: dict[str, int]) -> list[int]:
    lut, ff = logic_cells(family, cells)
    return [lut, ff, *(sum(cells.get(c, 0) for c in names) for names in COLUMNS.values())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hw", default="icebreaker", help="hardware configuration (file or shipped name)")
    parser.add_argument("--family", choices=list(FAMILY_PARTS), default="ice40", help="FPGA family to synthesize for")
    parser.add_argument("--soc", action="store_true", help="the SoC of the configuration's board, not the accelerator alone")
    parser.add_argument("--depth", type=int, default=2, help="instance levels below the top to keep apart")
    parser.add_argument("--model", help="ONNX file whose program the accelerator holds (default: the built-in digits "
                        "CNN, which a configuration without a vector unit cannot run)")
    parser.add_argument("--block", choices=list(BLOCKS), help="synthesize this block of the accelerator alone")
    args = parser.parse_args()
    start = time.perf_counter()
    blocks = block_cells(args.family, design(args.hw, args.soc, args.model, args.block), args.depth)
    rows = sorted(((name, row(args.family, cells)) for name, cells in blocks.items()), key=lambda r: -r[1][0])
    header = ["LUT", "FF", *COLUMNS]
    print(f"{args.hw} {args.block or ('SoC' if args.soc else 'accelerator')} on {args.family} ({FAMILY_PARTS[args.family]}), "
          f"{time.perf_counter() - start:.0f} s")
    print(f"{'block':48s}" + "".join(f"{h:>8s}" for h in header))
    for name, values in rows:
        if any(values):
            print(f"{name[:48]:48s}" + "".join(f"{v:8d}" for v in values))
    totals = [sum(values[i] for _, values in rows) for i in range(len(header))]
    print(f"{'total':48s}" + "".join(f"{v:8d}" for v in totals))


if __name__ == "__main__":
    main()
