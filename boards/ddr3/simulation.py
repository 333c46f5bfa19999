"""DDR3 main memory in simulation, as far as LiteDRAM's own models go: the Amaranth design (the
accelerator, `Ddr3MainMemory` with its init sequencer) in the Amaranth simulator, in lockstep
with LiteDRAM's `LiteDRAMCore` on its DFI-level DRAM model (`litedram.phy.model.SDRAMPHYModel`,
the ECP5 PHY's settings: two phases, CL 6, CWL 5, read latency 13, write latency 3; its DFI
timing checker on with `LiteDramModel.VERBOSITY` 1) in migen's simulator (`LiteDramModel`,
`lockstep`, `run_on_litedram`). The ECP5 PHY itself (DDR I/O primitives, DQS delays) has no
simulation model and is not simulated. migen runs the core at some 40 cycles per second, so a
long run goes on the native-port model instead (`run_on_native_port`, `sim.litedram_native`,
no LiteDRAM needed), whose command log `replay` issues on LiteDRAM afterwards.

Lockstep: at each cycle the design's native-port and CSR outputs (all registers) are set on the
migen side, migen's combinational logic settles, its outputs (`cmd.ready`, `wdata.ready`,
`rdata`, `csr dat_r`) are set on the Amaranth side, then both take the clock edge.

The model holds `rows` rows per bank instead of the chip's 8192 (migen keeps it as Python
lists: the full 128 MiB would not fit), so `model_bytes` = 8 banks x `rows` x 1024 columns x
2 bytes; an image goes straight into its bank memories (`LiteDramModel.poke`: its own `init=`
assumes two beats per DFI phase, the ECP5 PHY's settings have four). It needs no initialization
timing; the sequencer's waits are cut to `INIT_WAIT` cycles (the DFI injector's commands are the
same, their spacing is not modelled).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace

import numpy as np
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from boards.ddr3.init import CsrWrite, init_program
from boards.ddr3.litedram import (CSR_ADDRESS_BITS, CSR_DATA_BITS, PADS, LiteDramDdr3, ddr3_phy, litedram_core,
                                  litedram_modules)
from boards.ddr3.memory import Ddr3MainMemory
from hwgen.accelerator import Accelerator
from hwgen.memory_port import MemoryPort
from planner.compile.network import CompiledNetwork
from sim.litedram_native import NativePortModel
from sim.memory_model import MemoryStats
from sim.rtl_sim import RtlRun, start_and_wait, write_program

INIT_WAIT = 16
COLUMNS, BANKS, WORD_BYTES = 1024, 8, 2


def model_bytes(rows: int) -> int:
    """Bytes the model holds with `rows` rows per bank."""
    return BANKS * rows * COLUMNS * WORD_BYTES


class LiteDramModel:
    """LiteDRAMCore with one native port and its CSR bank on SDRAMPHYModel, stepped by hand; the
    model's DFI timing checker on with `VERBOSITY` 1 (it prints each violation)."""

    VERBOSITY = 0

    def __init__(self, clock_hz: float, rows: int):
        lib = litedram_modules()
        migen = lib.migen
        module = type("SimulatedMT41K64M16", (lib.MT41K64M16,), {"nrows": rows})(clock_hz, "1:2")
        module.geom_settings.addressbits = 13  # A12..0 as on the chip (A10: precharge all, ZQCL long)
        self.rows = rows
        settings = ddr3_phy(migen.Record(list(PADS.items())), clock_hz).settings
        from litedram.phy.model import SDRAMPHYModel
        top = migen.Module()
        top.submodules.model = SDRAMPHYModel(module, settings, clk_freq=clock_hz, verbosity=self.VERBOSITY)
        top.submodules.core, self.port = litedram_core(top.model, module)
        self.bus = lib.csr_bus.Interface(data_width=CSR_DATA_BITS, address_width=CSR_ADDRESS_BITS)
        top.submodules.csr_bank = lib.csr_bus.CSRBank(top.core.get_csrs(), bus=self.bus)
        self.dfi = top.model.dfi
        from migen.sim.core import Simulator as MigenSimulator
        self.sim = MigenSimulator(top, [])
        self.sim.evaluator.execute(self.sim.fragment.comb)
        self.sim._commit_and_comb_propagate()
        self.address_bits, self.data_bits = len(self.port.cmd.addr), len(self.port.wdata.data)

    def settle(self, inputs: dict) -> None:
        """Set the migen `inputs` (signal -> value) and settle the combinational logic."""
        for signal, value in inputs.items():
            self.sim.evaluator.assign(signal, value)
        self.sim._commit_and_comb_propagate()

    def get(self, signal) -> int:
        return self.sim.evaluator.eval(signal)

    def edge(self) -> None:
        """The `sys` clock edge."""
        self.sim.evaluator.execute(self.sim.fragment.sync["sys"])
        self.sim._commit_and_comb_propagate()

    def _banks(self) -> list[list]:
        """The model's bank memories (migen's signals, a word per 4 columns of a row: the model
        stores two beats per DFI phase, so a native word, 8 columns, takes every other one)."""
        memories = [words for memory, words in self.sim.evaluator.replaced_memories.items()
                    if memory.width == self.data_bits and memory.depth == self.rows * COLUMNS // 4]
        return memories[:BANKS]

    def _place(self, word: int) -> tuple[int, int]:
        """Bank and index in the bank memory of native word `word` (ROW_BANK_COL)."""
        columns = COLUMNS // 8  # native words per row
        return word // columns % BANKS, word // (columns * BANKS) * (COLUMNS // 4) + 2 * (word % columns)

    def poke(self, image: bytes) -> None:
        """Place `image` from address 0 straight into the bank memories."""
        word_bytes, banks = self.data_bits // 8, self._banks()
        padded = image + bytes(-len(image) % word_bytes)
        values = {}
        for word in range(len(padded) // word_bytes):
            bank, index = self._place(word)
            values[banks[bank][index]] = int.from_bytes(padded[word * word_bytes:(word + 1) * word_bytes], "little")
        self.settle(values)

    def peek(self, size: int) -> bytes:
        """The first `size` bytes, from the bank memories."""
        word_bytes, banks = self.data_bits // 8, self._banks()
        words = []
        for word in range(-(-size // word_bytes)):
            bank, index = self._place(word)
            words.append(self.get(banks[bank][index]).to_bytes(word_bytes, "little"))
        return b"".join(words)[:size]


def dfi_commands(model: LiteDramModel) -> list[tuple[int, int, int, int]]:
    """The commands on the model's DFI this cycle: (phase, ~cs ~ras ~cas ~we as bits 3..0, address,
    bank), for each phase whose chip select is active."""
    commands = []
    for index, phase in enumerate(model.dfi.phases):
        if not model.get(phase.cs_n):
            bits = (1 << 3) | (1 - model.get(phase.ras_n)) << 2 | (1 - model.get(phase.cas_n)) << 1 | \
                (1 - model.get(phase.we_n))
            commands.append((index, bits, model.get(phase.address), model.get(phase.bank)))
    return commands


def lockstep(model: LiteDramModel, memory: Ddr3MainMemory, log: list | None = None):
    """An Amaranth testbench linking `memory.dram` to `model` cycle by cycle (`log` collects
    (cycle, DFI commands) of each cycle with any)."""
    dram, port, bus = memory.dram, model.port, model.bus

    async def link(ctx) -> None:
        cycle = 0
        while True:
            model.settle({port.cmd.valid: ctx.get(dram.cmd.valid), port.cmd.we: ctx.get(dram.cmd.payload.we),
                          port.cmd.addr: ctx.get(dram.cmd.payload.addr), port.wdata.valid: ctx.get(dram.wdata.valid),
                          port.wdata.data: ctx.get(dram.wdata.payload.data),
                          port.wdata.we: ctx.get(dram.wdata.payload.we), port.rdata.ready: ctx.get(dram.rdata.ready),
                          bus.adr: ctx.get(dram.csr.adr), bus.we: ctx.get(dram.csr.we),
                          bus.dat_w: ctx.get(dram.csr.dat_w)})
            ctx.set(dram.cmd.ready, model.get(port.cmd.ready))
            ctx.set(dram.wdata.ready, model.get(port.wdata.ready))
            ctx.set(dram.rdata.valid, model.get(port.rdata.valid))
            ctx.set(dram.rdata.payload, model.get(port.rdata.data))
            ctx.set(dram.csr.dat_r, model.get(bus.dat_r))
            if log is not None:
                commands = dfi_commands(model)
                if commands:
                    log.append((cycle, commands))
            model.edge()
            await ctx.tick()
            cycle += 1

    return link


def short_waits(program: tuple[CsrWrite, ...]) -> tuple[CsrWrite, ...]:
    """`program` with every wait cut to `INIT_WAIT` cycles."""
    return tuple(replace(step, wait=min(step.wait, INIT_WAIT)) for step in program)


@dataclass
class NativeRun:
    """A network's run with `Ddr3MainMemory` on the native-port model: the RTL run and the
    native commands (`sim.litedram_native.NativePortModel.commands`)."""

    run: RtlRun
    commands: list[tuple[int, bool, int, int, int]]


def run_on_native_port(compiled: CompiledNetwork, x: np.ndarray, core: LiteDramDdr3, *, ready: float = 1.0,
                       read_latency: int = 9, write_latency: int = 4, max_cycles: int = 5_000_000) -> NativeRun:
    """Run the int8 `(C, H, W)` input through the RTL with `Ddr3MainMemory` (its native port
    `core`'s widths, its init program `core`'s with the waits cut) on the native-port model
    holding the memory image, with its `ready`, `read_latency` and `write_latency`. The run
    starts once `init_done`; its cycles are the accelerator's cycle counter."""
    config = compiled.config
    image = compiled.dram_with_input(x)
    size = min((core.data_bits // 8) << core.address_bits, 1 << config.template.dram_address_bits)
    memory = _memory(compiled, core, size, core.address_bits, core.data_bits)
    contents = bytearray(image.tobytes()) + bytes(-image.size % (core.data_bits // 8))
    model = NativePortModel(memory, contents, word_bytes=core.data_bits // 8, ready=ready,
                            read_latency=read_latency, write_latency=write_latency)
    cycles, traffic = _run(compiled, memory, model.testbench, max_cycles)
    final = np.frombuffer(bytes(contents[:image.size]), dtype=np.uint8)
    outputs = {name: compiled.read_output(final, name) for name in compiled.network.outputs}
    return NativeRun(RtlRun(outputs, cycles, traffic, {}), model.commands)


def _memory(compiled: CompiledNetwork, core: LiteDramDdr3, size: int, address_bits: int,
            data_bits: int) -> Ddr3MainMemory:
    """`Ddr3MainMemory` of `size` bytes for `compiled`'s configuration, `core`'s init program
    with the waits cut."""
    config = compiled.config
    return Ddr3MainMemory(MemoryPort.from_config(config.dram), size, address_bits, data_bits,
                          short_waits(init_program(core, config.clock_mhz * 1e6)))


def _run(compiled: CompiledNetwork, memory: Ddr3MainMemory, link, max_cycles: int) -> tuple[int, MemoryStats]:
    """Simulate `compiled` on the accelerator with `memory` as main memory, its `dram` port
    served by the testbench `link`, from `init_done` to `done` and `DRAIN_CYCLES` more: the
    accelerator's cycles and the traffic on its port."""
    from boards.sdram.simulation import DRAIN_CYCLES, count_traffic
    config = compiled.config
    accelerator = Accelerator(config, compiled.program)
    top = Module()
    top.submodules.accelerator, top.submodules.memory = accelerator, memory
    wiring.connect(top, accelerator.port, memory.port)
    result: dict = {}

    async def bench(ctx) -> None:
        await write_program(ctx, accelerator, compiled)
        while not ctx.get(memory.init_done):
            await ctx.tick()
        result["cycles"] = await start_and_wait(ctx, accelerator, max_cycles)
        for _ in range(DRAIN_CYCLES):
            await ctx.tick()

    sim = Simulator(top)
    sim.add_clock(1e-6 / config.clock_mhz)
    sim.add_testbench(link, background=True)
    traffic = MemoryStats()
    sim.add_process(count_traffic(accelerator.port, traffic))
    sim.add_testbench(bench)
    sim.run()
    return result["cycles"], traffic


def run_on_litedram(compiled: CompiledNetwork, x: np.ndarray, core: LiteDramDdr3, *, rows: int = 2,
                    max_cycles: int = 5_000_000) -> RtlRun:
    """Run the int8 `(C, H, W)` input through the RTL with `Ddr3MainMemory` in lockstep with
    LiteDRAM on its model (`rows` rows per bank; the memory image placed in the model's banks);
    the outputs read from the model's banks. The run starts once `init_done`."""
    image = compiled.dram_with_input(x).tobytes()
    model = LiteDramModel(compiled.config.clock_mhz * 1e6, rows)
    model.poke(image)
    memory = _memory(compiled, core, model_bytes(rows), model.address_bits, model.data_bits)
    cycles, traffic = _run(compiled, memory, lockstep(model, memory), max_cycles)
    final = np.frombuffer(model.peek(len(image)), dtype=np.uint8)
    outputs = {name: compiled.read_output(final, name) for name in compiled.network.outputs}
    return RtlRun(outputs, cycles, traffic, {})


def replay(model: LiteDramModel, commands: list[tuple[int, bool, int, int, int]], image: bytes) -> tuple[int, int]:
    """Place `image` in `model`'s banks, then issue `commands` (a native command log) on its
    native port in order, back to back; the reads whose word differs from the log's, and the
    cycles taken."""
    port = model.port
    model.poke(image)
    issued = deque((write, addr, data, mask) for _, write, addr, data, mask in commands)
    writes, reads = deque(), deque()  # data to offer; words expected back
    mismatches = cycles = 0
    while issued or writes or reads:
        command = issued[0] if issued else None
        inputs = {port.cmd.valid: command is not None, port.rdata.ready: 1, port.wdata.valid: bool(writes)}
        if command is not None:
            inputs.update({port.cmd.we: command[0], port.cmd.addr: command[1]})
        if writes:
            inputs.update({port.wdata.data: writes[0][0], port.wdata.we: writes[0][1]})
        model.settle(inputs)
        if command is not None and model.get(port.cmd.ready):
            issued.popleft()
            (writes if command[0] else reads).append((command[2], command[3]))
        if writes and model.get(port.wdata.ready):
            writes.popleft()
        if model.get(port.rdata.valid):
            expected, _ = reads.popleft()
            mismatches += model.get(port.rdata.data) != expected
        model.edge()
        cycles += 1
    return mismatches, cycles
