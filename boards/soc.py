"""The SoC core a board wraps with its pins and clock: the accelerator with its compiled
program, main memory for the memory image (on chip, or in the board's SDRAM chip), and a UART
host bridge (`docs/host_protocol.md`).
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from boards.bridge import Bridge
from boards.ddr3.init import init_program
from boards.ddr3.litedram import LiteDramDdr3
from boards.ddr3.memory import Ddr3MainMemory
from boards.ddr3.native import LiteDramPort
from boards.main_memory import MainMemory, check_size, word_bytes
from boards.protocol import FRAME_GAP_BYTE_TIMES, DeviceInfo, build_id, pipeline_build_id
from boards.sdram.memory import SdramMainMemory, check_sdram_memory
from boards.spiflash.memory import FLASH_OFFSET, FlashMainMemory, check_flash_memory
from boards.uart import FRAME_BITS, UartRx, UartTx, baud_divisor
from hwgen.accelerator import Accelerator
from hwgen.config import AcceleratorConfig, Counters
from hwgen.memory_port import MemoryPort
from hwgen.pipeline import Pipeline
from planner.compile.network import CompiledNetwork
from planner.compile.stages import PipelineLayout
from common.errors import ConfigError
from sim.sdram.adapter import SDRAM_PINS
from sim.sdram.chips import SdramChip
from sim.spiflash.adapter import SPI_FLASH_PINS
from sim.spiflash.chips import SpiFlashChip


SocLoad = CompiledNetwork | PipelineLayout
"""What a SoC runs: one compiled network on one accelerator, or a network's stages on pipelined
instances (`hwgen.pipeline.Pipeline`)."""


def image_bytes(load: SocLoad) -> int:
    """Bytes of main memory a SoC's load lays out (a pipeline's: every instance's image and the slots)."""
    return load.size if isinstance(load, PipelineLayout) else load.memory.size


def check_soc(config: AcceleratorConfig, compiled: SocLoad, memory_bytes: int,
              sdram: SdramChip | None = None, flash: SpiFlashChip | None = None) -> None:
    """The network must be compiled for `config` and its memory image must fit main memory
    (`memory_bytes` of the `sdram` chip, if given; with `flash`, the image less its constants,
    whose addresses the DRAM addresses must reach too)."""
    if compiled.config != config:
        raise ConfigError(f"the network was compiled for configuration {compiled.config.name!r}, "
                          f"not for {config.name!r}; compile it for the SoC's configuration")
    check_size(MemoryPort.from_config(config.dram), memory_bytes)
    if isinstance(compiled, PipelineLayout):
        check_pipeline_soc(config, compiled, memory_bytes, flash)
        return
    if memory_bytes > 1 << config.template.dram_address_bits:
        raise ConfigError(f"main memory of {memory_bytes} bytes is beyond the {config.template.dram_address_bits}-bit "
                          f"DRAM addresses of configuration {config.name!r}; allowed: at most "
                          f"{1 << config.template.dram_address_bits} bytes (template.dram_address_bits)")
    if flash is not None:
        check_flash_memory(MemoryPort.from_config(config.dram), compiled.memory.constant_bytes, flash, FLASH_OFFSET)
        check_flash_image(config, compiled, memory_bytes)
    elif compiled.memory.size > memory_bytes:
        bits = config.template.dram_address_bits
        limits = f" (the {sdram.name} holds {sdram.bytes}; {bits}-bit DRAM addresses reach {1 << bits})" if sdram else ""
        raise ConfigError(f"the memory image of {compiled.network.name!r} needs {compiled.memory.size} bytes; "
                          f"main memory has {memory_bytes} bytes{limits}")


def check_pipeline_soc(config: AcceleratorConfig, layout: PipelineLayout, memory_bytes: int,
                       flash: SpiFlashChip | None) -> None:
    """Pipelined instances need their constants in main memory and the whole layout (every
    instance's image and the slots) within it and within the DRAM addresses."""
    name = layout.network_name
    if flash is not None:
        raise ConfigError(f"configuration {config.name!r}: {len(layout.stages)} pipelined instances cannot read their "
                          "constants from the SPI flash; allowed: a board whose main memory holds them")
    if layout.size > memory_bytes:
        raise ConfigError(f"the pipeline of {name!r} ({len(layout.stages)} instances, {layout.images} images) needs "
                          f"{layout.size:,} bytes of main memory; the SoC has {memory_bytes:,}; allowed: fewer "
                          "images or a smaller model")


def check_flash_image(config: AcceleratorConfig, compiled: CompiledNetwork, memory_bytes: int) -> None:
    """With the constants in the flash: the rest of the image must fit `memory_bytes` of SPRAM,
    and the DRAM addresses must reach the image's end."""
    memory, bits = compiled.memory, config.template.dram_address_bits
    if memory.size - memory.constant_bytes > memory_bytes:
        raise ConfigError(f"the activations and scratch of {compiled.network.name!r} need "
                          f"{memory.size - memory.constant_bytes:,} bytes; SPRAM main memory has {memory_bytes:,} "
                          f"bytes (its constants, {memory.constant_bytes:,} bytes, are in the flash)")
    if memory.size > 1 << bits:
        raise ConfigError(f"the memory image of {compiled.network.name!r} ends at byte {memory.size:,}, beyond the "
                          f"{bits}-bit DRAM addresses of configuration {config.name!r} (at most {1 << bits:,} bytes; "
                          f"raise template.dram_address_bits)")


class SocCore(wiring.Component):
    """Accelerator + `memory_bytes` of main memory + UART bridge at `baud` for a `clk_hz` clock.

    Main memory is `MainMemory` (on chip, holding the image from the start), or with `sdram`
    `SdramMainMemory` in that chip (empty until the host loads the image); the chip's pins
    are then the `sdram` port (`SDRAM_PINS`, for `boards.sdram.phy.SdramPhy`). With `ddr3` (a
    generated LiteDRAM core) it is `Ddr3MainMemory` in the DDR3, empty too, on the `dram` port
    (the core's native port and CSR bus, for `boards.ddr3.core.LiteDramCore`). With
    `flash`, `FlashMainMemory`: the constants in that chip from `FLASH_OFFSET` (written with the
    bitstream), `memory_bytes` of SPRAM for the rest (the host's addresses start at the end of
    the constants); its pins are the `flash` port (`SPI_FLASH_PINS`, for
    `boards.spiflash.phy.SpiFlashPhy`).

    `leds`: 0 busy, 1 done, 2 host link activity (`FRAME_GAP_BYTE_TIMES` after a byte received or
    sent: the bridge's silence timer), 3 protocol error (a refused request, until the next one is
    served).
    """

    def __init__(self, config: AcceleratorConfig, compiled: SocLoad, memory_bytes: int, clk_hz: int,
                 baud: int = 115200, sdram: SdramChip | None = None, ddr3: LiteDramDdr3 | None = None,
                 flash: SpiFlashChip | None = None):
        try:
            check_soc(config, compiled, memory_bytes, sdram, flash)
            if sdram is not None:
                check_sdram_memory(MemoryPort.from_config(config.dram), memory_bytes, sdram, clk_hz / 1e6)
            self.divisor = baud_divisor(clk_hz, baud)
        except ConfigError:
            self._MustUse__silence = True  # not built, so not "created but never used"
            raise
        self.config, self.compiled, self.sdram_chip, self.ddr3, self.flash_chip = config, compiled, sdram, ddr3, flash
        self.memory_bytes, self.clk_hz, self.baud = memory_bytes, clk_hz, baud
        if isinstance(compiled, PipelineLayout):
            identity = pipeline_build_id(compiled)
        else:
            constants = compiled.image[:compiled.memory.constant_bytes].tobytes() if flash is not None else None
            identity = build_id(compiled.program, config, constants)
        self.info = DeviceInfo(memory_bytes=memory_bytes, clk_hz=clk_hz, build_id=identity)
        members = {"rx": In(1, init=1), "tx": Out(1, init=1), "leds": Out(4)}
        if isinstance(compiled, PipelineLayout):
            members["running"] = Out(len(compiled.stages))  # which instances run (for measurements)
        if sdram is not None:
            members["sdram"] = Out(SDRAM_PINS)
        if ddr3 is not None:
            members["dram"] = Out(LiteDramPort(ddr3.address_bits, ddr3.data_bits))
        if flash is not None:
            members["flash"] = Out(SPI_FLASH_PINS)
        super().__init__(members)

    def _main_memory(self, m: Module, port: MemoryPort) -> MainMemory | SdramMainMemory | Ddr3MainMemory | FlashMainMemory:
        """Main memory on the accelerator's `port`: in the SDRAM chip or the DDR3, split between
        the flash and SPRAM, or on chip with the image."""
        if self.ddr3 is not None:
            memory = Ddr3MainMemory(port, self.memory_bytes, self.ddr3.address_bits, self.ddr3.data_bits,
                                    init_program(self.ddr3, self.clk_hz))
            wiring.connect(m, wiring.flipped(self.dram), memory.dram)
        elif self.flash_chip is not None:
            memory = FlashMainMemory(port, self.memory_bytes, self.compiled.memory.constant_bytes, self.flash_chip,
                                     self.clk_hz / 1e6)
            wiring.connect(m, wiring.flipped(self.flash), memory.flash)
        elif self.sdram_chip is None:
            image = self.compiled.image() if isinstance(self.compiled, PipelineLayout) else self.compiled.image
            memory = MainMemory(port, self.memory_bytes, image.tobytes())
        else:
            memory = SdramMainMemory(port, self.memory_bytes, self.sdram_chip, self.clk_hz / 1e6)
            wiring.connect(m, wiring.flipped(self.sdram), memory.sdram)
        m.submodules.memory = memory
        return memory

    def _compute(self, m: Module) -> Accelerator | Pipeline:
        """The accelerator, or the pipelined instances running the layout's image count per START
        (`running` shows which run; a cycle counter stands in for the accelerator's counters)."""
        if not isinstance(self.compiled, PipelineLayout):
            m.submodules.accelerator = accelerator = Accelerator(self.config, self.compiled.program)
            return accelerator
        m.submodules.pipeline = pipeline = Pipeline(self.config, self.compiled.hardware_stages())
        m.d.comb += [pipeline.images.eq(self.compiled.images), self.running.eq(pipeline.running)]
        return pipeline

    def elaborate(self, platform) -> Module:
        m = Module()
        accelerator = self._compute(m)
        memory = self._main_memory(m, accelerator.port.signature)
        wiring.connect(m, accelerator.port, memory.port)

        m.submodules.uart_rx = uart_rx = UartRx(self.divisor)
        m.submodules.uart_tx = uart_tx = UartTx(self.divisor)
        gap_cycles = FRAME_GAP_BYTE_TIMES * FRAME_BITS * self.divisor
        queue_counters = self.config.template.counters == Counters.ALL and not isinstance(accelerator, Pipeline)
        m.submodules.bridge = bridge = Bridge(self.info, gap_cycles, word_bytes(accelerator.port.signature),
                                              program_memory="program_write" in accelerator.signature.members,
                                              queue_counters=queue_counters, checksum=self.flash_chip is None)
        if "program_write" in accelerator.signature.members:
            wiring.connect(m, bridge.program, accelerator.program_write)
        wiring.connect(m, uart_rx.data, bridge.rx)
        wiring.connect(m, bridge.tx, uart_tx.data)
        wiring.connect(m, bridge.memory, memory.host)
        m.d.comb += [uart_rx.rx.eq(self.rx), self.tx.eq(uart_tx.tx)]
        # START reaches the sequencer through a register: the bridge's command decoding stays out
        # of the sequencer's paths (on a large ECP5 the two also lie far apart). The host cannot
        # tell: its next request comes thousands of cycles later.
        m.d.sync += accelerator.start.eq(bridge.start)
        # The bridge reads the status through registers, and all the counters through registers
        # placed next to it (its 28-byte reply multiplexer need not reach across the chip); they
        # lag the accelerator by a cycle. The cycle counter alone goes straight to its 4-byte
        # multiplexer (the bridge replies 0 for the other counters).
        m.d.sync += [bridge.busy.eq(accelerator.busy), bridge.done.eq(accelerator.done)]
        if isinstance(accelerator, Pipeline):
            with m.If(accelerator.start):
                m.d.sync += bridge.counters.cycles.eq(0)
            with m.Elif(accelerator.busy):
                m.d.sync += bridge.counters.cycles.eq(bridge.counters.cycles + 1)
        elif queue_counters:
            m.d.sync += bridge.counters.eq(accelerator.counters)
        else:
            m.d.comb += bridge.counters.cycles.eq(accelerator.counters.cycles)
        error = bridge.error | memory.write_fault if self.flash_chip is not None else bridge.error
        m.d.comb += self.leds.eq(Cat(accelerator.busy, accelerator.done, bridge.link_active, error))
        return m
