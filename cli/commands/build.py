"""`hwgen build --board BOARD --hw CFG`: the SoC (accelerator, main memory, UART host bridge)
for a board, through synthesis, place and route and packing: bitstream and report."""
from __future__ import annotations

import argparse
from pathlib import Path

from boards.build import build_board
from boards.platforms import BOARDS, board
from cli.commands.common import compiled_for_soc, load_model, quantized
from cli.commands.synth import add_output_arguments, finish
from cli.flow_progress import FlowProgress
from hwgen.config import CONFIG_DIR, load_config
from common.files import atomic_write_bytes

FLASH_FILE = "flash.bin"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "build", description="Compile a model (the built-in digits CNN by default) for a hardware configuration, wrap "
        "the accelerator in the SoC (main memory holding the model's memory image, UART host bridge, status "
        "LEDs, a PLL when the board clock differs from clock_mhz) on a board's pins, and build it with Yosys, "
        "nextpnr and icepack/ecppack. Writes <board>.bin (iCE40) or <board>.bit (ECP5), report.json and "
        "report.txt into the output folder (build files under build/); on the iCEBreaker also flash.bin, the "
        "bitstream with the model's constants at 1 MiB, to program with `iceprog flash.bin`. A build that misses "
        "timing leaves no bitstream there unless --allow-timing-fail. The stage and elapsed time show on stderr; on a "
        "2-core machine the iCEBreaker SoC takes 12-55 minutes, the ULX3S-85F SoC about 27.",
    )
    parser.add_argument("--board", required=True, metavar="BOARD", help=f"one of: {', '.join(BOARDS)}")
    add_output_arguments(parser, "the board's shipped configuration (icebreaker, ulx3s-85f), else default")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    target = board(args.board)
    shipped = (CONFIG_DIR / f"{target.name}.yaml").exists()
    config = load_config(args.hw if args.hw is not None or not shipped else target.name)
    compiled = compiled_for_soc(quantized(load_model(args), args, synthetic=True), config, args.images)
    out = args.output or Path("rtl_out") / f"{config.name}-{target.name}"
    with FlowProgress(f"building the {target.name} SoC") as progress:
        result = build_board(target, config, compiled, out / "build", progress)
    bitstream = out / f"{target.name}{result.products.bitstream.suffix}"
    flash = out / FLASH_FILE
    bitstream.unlink(missing_ok=True)
    flash.unlink(missing_ok=True)
    if result.report.timing_met or args.allow_timing_fail:
        atomic_write_bytes(bitstream, result.products.bitstream.read_bytes())
        if result.flash is not None:
            atomic_write_bytes(flash, result.flash)
    status = finish(result.report, out, args)
    if not args.json:
        print(f"bitstream: {bitstream}")
        if result.flash is not None:
            print(f"flash image (bitstream and constants): {flash}")
    return status
