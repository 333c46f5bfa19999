"""Synthesis and place and route of the accelerator alone on a bare device (`hwgen synth`).

The accelerator sits in `boards.shell.AcceleratorShell` on a bare-device platform
(`boards.platforms.bare_platform`): elaborated for the part, so its multipliers are DSP
primitives and its SPRAM banks SB_SPRAM256KA, with the clock constrained to the
configuration's `clock_mhz`.
"""
from __future__ import annotations

from pathlib import Path

from amaranth.hdl import Elaboratable, Module

from boards.devices import device as find_device
from boards.implement import Progress, implement
from boards.platforms import BARE_INPUTS, bare_platform
from boards.report import BuildReport, parse_reports
from boards.shell import AcceleratorShell
from hwgen.accelerator import Accelerator
from hwgen.config import AcceleratorConfig
from hwgen.pipeline import Pipeline
from hwgen.program import Program
from planner.compile.network import CompiledNetwork
from planner.compile.stages import PipelineLayout
from sim.golden.calibration import quantize_network
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from planner.zoo import DEFAULT_MODEL, builtin_calibration, resolve_model


class PinnedShell(Elaboratable):
    """The shell with its `din` and `dout` on the bare platform's pins."""

    def __init__(self, shell: AcceleratorShell):
        self.shell = shell

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.shell = shell = self.shell
        din, dout = platform.request("din"), platform.request("dout")
        m.d.comb += [shell.din.eq(din.i), dout.o.eq(shell.dout)]
        return m


def default_network(config: AcceleratorConfig) -> CompiledNetwork:
    """The built-in digits CNN compiled for `config` (program and memory image)."""
    network = load_network(resolve_model(DEFAULT_MODEL))
    quantized = quantize_network(network, builtin_calibration(DEFAULT_MODEL, network.input_shape))
    return plan_and_compile(quantized, config).compiled


def default_program(config: AcceleratorConfig) -> Program:
    """The built-in digits CNN's program for `config`."""
    return default_network(config).program


def synth_report(device: str, config: AcceleratorConfig, workdir: Path, program: Program | PipelineLayout | None = None,
                 progress: Progress | None = None) -> BuildReport:
    """Synthesize, place and route the accelerator for `config` (running `program`, by default
    the digits CNN compiled for `config`; or a layout's pipelined instances) on the bare `device`
    (a `boards.devices` name), with the build files in `workdir`, telling `progress` the stage;
    the report of the run (timing met or not)."""
    dev = find_device(device)
    program = default_program(config) if program is None else program
    core = Pipeline(config, program.hardware_stages()) if isinstance(program, PipelineLayout) else \
        Accelerator(config, program)
    top = PinnedShell(AcceleratorShell(core, BARE_INPUTS))
    products = implement(bare_platform(dev, config.clock_mhz), top, dev, Path(workdir), progress=progress)
    return parse_reports(products.report, products.stat, dev, config.clock_mhz, products.seconds)
