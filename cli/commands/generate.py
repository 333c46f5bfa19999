"""`hwgen generate`: the accelerator's Verilog and RTLIL, with its program in the ROM."""
from __future__ import annotations

import argparse
from pathlib import Path

from hwgen.accelerator import Accelerator
from cli.commands.common import add_calibration_argument, load_model, quantized, one_instance
from hwgen.config import load_config
from hwgen.verilog import TOP, emit
from hwgen.program import Program
from common.files import atomic_write_text, check_output_folder
from planner.pipeline import plan_and_compile
from planner.zoo import DEFAULT_MODEL

def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "generate", description="Elaborate the accelerator for a hardware configuration with a program in its ROM "
        "(a program file, or a model compiled on the fly: the built-in digits CNN by default) and write "
        f"{TOP}.v, {TOP}.il, program.json and program.asm into the output folder.",
    )
    parser.add_argument("--hw", metavar="CFG", help="hardware configuration YAML or shipped name (default: default, the ulx3s-85f board's)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--program", type=Path, metavar="PROG", help="program file (program.json written by a previous generate)")
    source.add_argument("--model", default=DEFAULT_MODEL, metavar="MODEL", help=f"compile this model (default: {DEFAULT_MODEL})")
    add_calibration_argument(parser)
    parser.add_argument("-o", "--output", type=Path, metavar="DIR", help="output folder (default: rtl_out/<config name>)")
    parser.set_defaults(func=run, input_shape=None)


def run(args: argparse.Namespace) -> int:
    config = one_instance(load_config(args.hw), "generate")
    out = check_output_folder(args.output or Path("rtl_out") / config.name, "--output")
    if args.program is not None:
        program = Program.load(args.program)
    else:
        program = plan_and_compile(quantized(load_model(args), args, synthetic=True), config).compiled.program
    verilog_text, rtlil_text = emit(Accelerator(config, program))
    atomic_write_text(out / f"{TOP}.v", verilog_text)
    atomic_write_text(out / f"{TOP}.il", rtlil_text)
    program.save(out / "program.json")
    atomic_write_text(out / "program.asm", program.listing() + "\n")
    print(f"wrote {out}/{TOP}.v ({len(verilog_text.splitlines())} lines), {TOP}.il, program.json, program.asm "
          f"({len(program.instructions)} instructions, {len(program.descriptors)} descriptors)")
    return 0
