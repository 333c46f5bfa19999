"""Execution engines by name (the `--engine` choices): the golden model, the instruction-level
simulator and the RTL in the Amaranth simulator; co-simulation engines register here too.

Every engine runs one int8 `(C, H, W)` input and returns an `EngineRun`; all but the golden
model execute the compiled program (`needs_program`). The RTL engines call `progress`, if given,
with the cycles simulated so far (`shows_progress`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from planner.compile.network import CompiledNetwork
from planner.ir import Network
from sim.golden import run_quantized
from sim.isa_sim import IsaSimulator


@dataclass
class EngineRun:
    """Outputs of one run and, for engines that execute the program, its measurements."""

    outputs: dict[str, np.ndarray]
    cycles: int | None = None
    dram_bytes: int | None = None


@dataclass(frozen=True)
class Engine:
    run: Callable[..., EngineRun]
    needs_program: bool
    description: str
    shows_progress: bool = False
    writes_waves: bool = False


def _golden(net: Network, compiled: CompiledNetwork | None, x: np.ndarray, vcd: str | None = None, progress=None) -> EngineRun:
    values = run_quantized(net, x)
    return EngineRun({name: values[name] for name in net.outputs})


def _isa(net: Network, compiled: CompiledNetwork, x: np.ndarray, vcd: str | None = None, progress=None) -> EngineRun:
    dram = compiled.dram_with_input(x)
    stats = IsaSimulator(compiled.config, compiled.program, dram).run()
    outputs = {name: compiled.read_output(dram, name) for name in net.outputs}
    return EngineRun(outputs, None, stats.traffic.bytes_read + stats.traffic.bytes_written)


def _amaranth(net: Network, compiled: CompiledNetwork, x: np.ndarray, vcd: str | None = None,
              progress: Callable[[int], None] | None = None) -> EngineRun:
    from sim.rtl_sim import run_rtl

    run = run_rtl(compiled, x, vcd=vcd, progress=progress)
    return EngineRun(run.outputs, run.cycles, run.traffic.bytes_read + run.traffic.bytes_written)


def _cosim(simulator: str) -> Callable[..., EngineRun]:
    def run(net: Network, compiled: CompiledNetwork, x: np.ndarray, vcd: str | None = None, progress=None) -> EngineRun:
        from sim.cosim.runner import run_cosim

        result = run_cosim(compiled, x, simulator, waves=vcd, progress=progress)
        return EngineRun(result.outputs, result.cycles, result.traffic.bytes_read + result.traffic.bytes_written)

    return run


ENGINES: dict[str, Engine] = {
    "golden": Engine(_golden, False, "golden integer model (numpy)"),
    "isa": Engine(_isa, True, "instruction-level simulator of the compiled program"),
    "amaranth": Engine(_amaranth, True, "generated RTL in the Amaranth simulator", shows_progress=True,
                       writes_waves=True),
    "icarus": Engine(_cosim("icarus"), True, "emitted Verilog in Icarus Verilog (cocotb co-simulation)",
                     shows_progress=True, writes_waves=True),
    "verilator": Engine(_cosim("verilator"), True, "emitted Verilog in Verilator (cocotb co-simulation; the first "
                        "run of a design compiles it for minutes, then the build is reused from rtl_out/cosim)",
                        shows_progress=True, writes_waves=True),
}
