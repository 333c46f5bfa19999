"""`hwgen generate`: the accelerator's Verilog and RTLIL, with its program in the ROM."""
from __future__ import annotations

import argparse
from pathlib import Path

from common.errors import InputError
from hwgen.accelerator import Accelerator
from hwgen.pipeline import Pipeline
from cli.commands.common import add_calibration_argument, add_images_argument, compiled_for_soc, load_model, quantized
from hwgen.config import load_config
from hwgen.verilog import TOP, emit
from hwgen.program import Program
from common.files import atomic_write_text, check_output_folder
from planner.compile.stages import PipelineLayout
from planner.zoo import DEFAULT_MODEL

def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "generate", description="Elaborate the accelerator for a hardware configuration with a program in its ROM "
        "(a program file, or a model compiled on the fly: the built-in digits CNN by default) and write "
        f"{TOP}.v, {TOP}.il, program.json and program.asm into the output folder. A configuration of several "
        "instances: the pipelined instances (`hwgen.pipeline.Pipeline`) running the scheduler's stages of the model, "
        "program<i>.json and program<i>.asm per instance.",
    )
    parser.add_argument("--hw", metavar="CFG", help="hardware configuration YAML or shipped name (default: default, the ulx3s-85f board's)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--program", type=Path, metavar="PROG", help="program file (program.json written by a previous generate)")
    source.add_argument("--model", default=DEFAULT_MODEL, metavar="MODEL", help=f"compile this model (default: {DEFAULT_MODEL})")
    add_calibration_argument(parser)
    add_images_argument(parser)
    parser.add_argument("-o", "--output", type=Path, metavar="DIR", help="output folder (default: rtl_out/<config name>)")
    parser.set_defaults(func=run, input_shape=None)


def run(args: argparse.Namespace) -> int:
    config = load_config(args.hw)
    if args.program is not None and config.instances > 1:
        raise InputError(f"--program with configuration {config.name!r} of {config.instances} instances: each instance "
                         "runs its stage's program; allowed: --model (the scheduler cuts it into stages)")
    if args.program is not None:
        compiled: Program | PipelineLayout = Program.load(args.program)
    else:
        compiled = compiled_for_soc(quantized(load_model(args), args, synthetic=True), config, args.images)
        compiled = compiled if isinstance(compiled, PipelineLayout) else compiled.program
    out = check_output_folder(args.output or Path("rtl_out") / config.name, "--output")
    if isinstance(compiled, PipelineLayout):
        programs = [stage.program for stage in compiled.hardware_stages()]
        names = [f"program{index}" for index in range(len(programs))]
        verilog_text, rtlil_text = emit(Pipeline(config, compiled.hardware_stages()))
    else:
        programs, names = [compiled], ["program"]
        verilog_text, rtlil_text = emit(Accelerator(config, compiled))
    atomic_write_text(out / f"{TOP}.v", verilog_text)
    atomic_write_text(out / f"{TOP}.il", rtlil_text)
    for program, name in zip(programs, names):
        program.save(out / f"{name}.json")
        atomic_write_text(out / f"{name}.asm", program.listing() + "\n")
    print(f"wrote {out}/{TOP}.v ({len(verilog_text.splitlines())} lines), {TOP}.il, "
          + ", ".join(f"{name}.json, {name}.asm ({len(program.instructions)} instructions, {len(program.descriptors)} "
                      "descriptors)" for program, name in zip(programs, names)))
    return 0
