"""`hwgen synth --device DEVICE --hw CFG`: the accelerator alone through synthesis and place
and route on a bare device, with its report."""
from __future__ import annotations

import argparse
from pathlib import Path

from boards.devices import DEVICES, device
from boards.report import BuildReport
from boards.synth import synth_report
from cli.commands.common import add_calibration_argument, add_images_argument, compiled_for_soc, load_model, quantized
from cli.flow_progress import FlowProgress
from hwgen.config import load_config
from common.console import make_console
from common.errors import HwgenError
from planner.compile.stages import PipelineLayout
from planner.zoo import DEFAULT_MODEL


class TimingError(HwgenError):
    """A design missed its clock target."""


def add_output_arguments(parser: argparse.ArgumentParser,
                         hw_default: str = "default, the ulx3s-85f board's") -> None:
    """Options `synth` and `build` share: configuration, model, output folder, timing policy."""
    parser.add_argument("--hw", metavar="CFG", help=f"hardware configuration YAML or shipped name (default: {hw_default})")
    parser.add_argument("--model", default=DEFAULT_MODEL, metavar="MODEL",
                        help=f"ONNX file or built-in model whose program the accelerator runs (default: {DEFAULT_MODEL})")
    add_calibration_argument(parser)
    parser.add_argument("-o", "--output", type=Path, metavar="DIR",
                        help="output folder for the report and build files (default: rtl_out/<config>-<target>)")
    parser.add_argument("--allow-timing-fail", action="store_true",
                        help="exit 0 even when Fmax is below the configured clock")
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    add_images_argument(parser)
    parser.set_defaults(input_shape=None)


def finish(report: BuildReport, out: Path, args: argparse.Namespace) -> int:
    """Save and print the report; a timing miss is an error unless allowed."""
    report.save(out)
    console = make_console()
    if args.json:
        print(report.to_json())
    else:
        console.print(report.table())
        console.print(f"report: {out}/report.json")
    if not report.timing_met and not args.allow_timing_fail:
        worst = report.worst_path.describe() if report.worst_path else "no path reported"
        fmax = ", ".join(f"{clock} {mhz:.2f} MHz" for clock, mhz in report.fmax_mhz.items()) or "no clock"
        raise TimingError(f"timing not met at {report.target_mhz:.2f} MHz (Fmax {fmax}); worst path: {worst} "
                          "(--allow-timing-fail to accept)")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "synth", description="Synthesize, place and route the accelerator (with the program of a model, the built-in "
        "digits CNN by default) on a bare FPGA device with Yosys and nextpnr, and report LUT/FF/DSP/BRAM/SPRAM "
        "use and Fmax against the configuration's clock. Writes report.json and report.txt (and the build "
        "files under build/) into the output folder. The stage and elapsed time show on stderr; a few "
        "minutes for small configurations, 10-25 on a large ECP5 on a 2-core machine.",
    )
    parser.add_argument("--device", required=True, metavar="DEVICE", help=f"one of: {', '.join(DEVICES)}")
    add_output_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    dev = device(args.device)
    config = load_config(args.hw)
    compiled = compiled_for_soc(quantized(load_model(args), args, synthetic=True), config, args.images)
    program = compiled if isinstance(compiled, PipelineLayout) else compiled.program
    out = args.output or Path("rtl_out") / f"{config.name}-{dev.name}"
    with FlowProgress(f"synthesizing {config.name} on {dev.name}") as progress:
        report = synth_report(dev.name, config, out / "build", program, progress)
    return finish(report, out, args)
