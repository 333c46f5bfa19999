"""Board builds (`hwgen build`): the SoC core (`boards.soc.SocCore`: accelerator, main memory,
UART host bridge) on a board's amaranth-boards platform, with its UART and status LEDs on the
board's pins and the `sync` clock at the configuration's `clock_mhz` (through a PLL when the
board clock differs), synthesized, placed, routed and packed into a bitstream.

Main memory: the board's SDRAM chip where it has one (the ULX3S: `boards.sdram`, its pins
through `boards.sdram.phy.SdramPhy`), or its DDR3 (the OrangeCrab: LiteDRAM generated for the
build, `boards.ddr3`, which also makes the clocks); else the four SPRAMs (128 KiB) on an iCE40UP, block RAM on
ECP5, sized to the device (the largest power of two within a quarter of its block RAM, at least
the memory image). The report itemizes main memory (its controller, queues and ports; on the
OrangeCrab also LiteDRAM's core): each is synthesized as a module of its own. A board with a `flash` (the iCEBreaker) keeps the
model's constants there, after the bitstream (`boards.spiflash`, its pins through
`SpiFlashPhy`): `flash_image` is the file to program.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from amaranth.hdl import Elaboratable, Module
from amaranth.lib import wiring

from boards.clocking import PllClock, pll_output_mhz
from boards.ddr3.core import LiteDramCore
from boards.ddr3.litedram import MODULE_NAME as LITEDRAM_MODULE, generate
from boards.implement import NAME, FlowProducts, Progress, implement
from boards.platforms import Board
from boards.report import BuildReport, parse_reports
from boards.sdram.phy import SdramPhy
from boards.soc import SocCore, SocLoad, image_bytes
from boards.spiflash.image import flash_image
from boards.spiflash.memory import FLASH_OFFSET
from boards.spiflash.phy import SpiFlashPhy
from common.errors import ConfigError
from hwgen.config import AcceleratorConfig, ProgramMemory
from planner.compile.stages import PipelineLayout

SPRAM_BYTES = 4 * 32 * 1024
MAIN_MEMORY_MODULE = f"{NAME}.soc.memory"
"""The main memory's module in the build (`BoardTop`'s `soc`, `SocCore`'s `memory`)."""


@dataclass(frozen=True)
class BoardBuild:
    """A finished board build: its report and the run's files (the bitstream among them); for a
    board with a `flash`, `flash` is the image to program (bitstream and constants)."""

    report: BuildReport
    products: FlowProducts
    flash: bytes | None = None


def memory_bytes(board: Board, image_bytes: int, config: AcceleratorConfig | None = None) -> int:
    """Main memory for `board`: its SDRAM chip, else `on_chip_memory_bytes`. The accelerator
    reaches only `1 << template.dram_address_bits` bytes, so with fewer address bits than the
    chip has bytes (25 for the ULX3S's 32 MiB) only that much of the SDRAM is used (the shipped
    `ulx3s-85f` configuration keeps the default 32 bits: the whole chip)."""
    external = board.sdram.bytes if board.sdram is not None else board.ddr3_bytes
    if not external:
        return on_chip_memory_bytes(board, image_bytes, config)
    if config is None:
        return external
    return min(external, 1 << config.template.dram_address_bits)


def on_chip_memory_bytes(board: Board, image_bytes: int, config: AcceleratorConfig | None = None) -> int:
    """On-chip main memory for `board`: the UP5K's SPRAM (less the one `config`'s program memory
    takes), or block RAM sized to the ECP5 device."""
    dev = board.device_info
    if dev.totals.spram:
        program = config is not None and config.template.program_memory == ProgramMemory.SPRAM
        return SPRAM_BYTES - (SPRAM_BYTES // dev.totals.spram if program else 0)
    size = 1 << ((dev.bram_bytes // 4).bit_length() - 1)
    while size < image_bytes:
        size *= 2
    return size


def memory_capacity(board: Board, config: AcceleratorConfig) -> tuple[int, str]:
    """The most main memory `board` can give `config`, in bytes, and what that memory is."""
    if board.sdram is not None:
        return memory_bytes(board, 0, config), f"its {board.sdram.name} SDRAM within {config.template.dram_address_bits}-bit addresses"
    if board.ddr3_bytes:
        return memory_bytes(board, 0, config), f"its DDR3 within {config.template.dram_address_bits}-bit addresses"
    dev = board.device_info
    if dev.totals.spram:
        return on_chip_memory_bytes(board, 0, config), "SPRAM"
    return 1 << (dev.bram_bytes.bit_length() - 1), f"block RAM: the {dev.part} has {dev.bram_bytes:,} bytes"


def check_image_fits(board: Board, compiled: SocLoad) -> None:
    """A `ConfigError` naming both sizes unless `compiled`'s memory image fits `board`'s main memory
    (with a `flash`: the image less its constants, which go to the flash)."""
    capacity, what = memory_capacity(board, compiled.config)
    if isinstance(compiled, PipelineLayout):
        if compiled.size > capacity:
            raise ConfigError(f"the pipeline of {len(compiled.stages)} instances over {compiled.images} images needs "
                              f"{compiled.size:,} bytes of main memory; board {board.name} has at most {capacity:,} "
                              f"({what}); allowed: fewer images (--images) or a smaller model")
        return
    memory = compiled.memory
    in_flash = memory.constant_bytes if board.flash is not None else 0
    size = memory.size - in_flash
    if size > capacity:
        parts = "activations and scratch; its constants go to the flash" if in_flash else \
            "weights, parameters, activations"
        raise ConfigError(f"model {compiled.network.name!r} needs {size:,} bytes ({size / 1024:.0f} KiB) of main memory "
                          f"({parts}); board {board.name} has at most {capacity:,} bytes "
                          f"({capacity / 1024:.0f} KiB, {what}); use a smaller model or a board with more memory")
    if board.flash is not None and in_flash > board.flash.size_bytes - FLASH_OFFSET:
        raise ConfigError(f"model {compiled.network.name!r} has {in_flash:,} bytes of constants; board {board.name}'s "
                          f"{board.flash.name} holds {board.flash.size_bytes - FLASH_OFFSET:,} after offset "
                          f"{FLASH_OFFSET:#x}")


def board_clocks(board: Board, config: AcceleratorConfig) -> tuple[float, float]:
    """(the board's clock, the `sync` clock its PLL makes for `config.clock_mhz`) in MHz; with
    DDR3 the PLL makes the DDR3 clock, twice `sync`."""
    board_clock_mhz = board.create_platform().default_clk_frequency / 1e6
    if board.ddr3_bytes:
        return board_clock_mhz, pll_output_mhz(board.device_info.family, board_clock_mhz, 2 * config.clock_mhz) / 2
    return board_clock_mhz, pll_output_mhz(board.device_info.family, board_clock_mhz, config.clock_mhz)


def board_soc(board: Board, config: AcceleratorConfig, compiled: SocLoad, baud: int | None = None) -> SocCore:
    """The SoC core `hwgen build` puts on `board`: its main memory (with DDR3, LiteDRAM's core
    generated for the clock), its UART at `baud` (the board's by default) and the `sync` clock
    of `board_clocks` (70 MHz on the ULX3S-85F)."""
    clock_mhz = board_clocks(board, config)[1]
    ddr3 = generate(clock_mhz * 1e6) if board.ddr3_bytes else None
    return SocCore(config, compiled, memory_bytes(board, image_bytes(compiled), config), round(clock_mhz * 1e6),
                   baud or board.baud, board.sdram, ddr3, board.flash)


def main_memory_label(board: Board) -> str:
    """What a build report calls `board`'s main memory block."""
    if board.sdram is not None:
        return f"main memory ({board.sdram.name} controller)"
    return "main memory (LiteDRAM native-port adapter)" if board.ddr3_bytes else "main memory (on chip)"


class BoardTop(Elaboratable):
    """The SoC with its UART, LEDs and SDRAM (if it has the `sdram` port) on `board`'s pins,
    clocked at `clock_mhz`."""

    def __init__(self, board: Board, soc: SocCore, board_clock_mhz: float, clock_mhz: float):
        self.board, self.soc = board, soc
        self.board_clock_mhz, self.clock_mhz = board_clock_mhz, clock_mhz

    def elaborate(self, platform) -> Module:
        m = Module()
        if "dram" in self.soc.signature.members:  # LiteDRAM makes the clocks
            m.submodules.litedram = litedram = LiteDramCore(self.soc.ddr3, self.board_clock_mhz, self.clock_mhz)
            wiring.connect(m, self.soc.dram, litedram.dram)
        elif abs(self.board_clock_mhz - self.clock_mhz) > 1e-6:
            m.submodules.clock = PllClock(self.board.device_info.family, self.board_clock_mhz, self.clock_mhz)
        m.submodules.soc = soc = self.soc
        if "sdram" in soc.signature.members:
            m.submodules.sdram_phy = phy = SdramPhy(platform.request("sdram", 0, dir="-"))
            wiring.connect(m, soc.sdram, phy.pins)
        if "flash" in soc.signature.members:
            m.submodules.flash_phy = phy = SpiFlashPhy(platform.request("spi_flash_4x", 0, dir="-"))
            wiring.connect(m, soc.flash, phy.pins)
        uart = platform.request("uart", 0)
        m.d.comb += [soc.rx.eq(uart.rx.i), uart.tx.o.eq(soc.tx)]
        requested = {}
        for index, (name, number, subsignal) in enumerate(self.board.leds):
            if (name, number) not in requested:
                requested[name, number] = platform.request(name, number)
            led = requested[name, number]
            m.d.comb += (getattr(led, subsignal) if subsignal else led).o.eq(soc.leds[index])
        return m


def build_board(board: Board, config: AcceleratorConfig, compiled: SocLoad, workdir: Path,
                progress: Progress | None = None) -> BoardBuild:
    """Build `board`'s bitstream for `config` running `compiled`, with the build files in `workdir`
    (`progress`: see `boards.implement.implement`)."""
    check_image_fits(board, compiled)
    platform = board.create_platform()
    board_clock_mhz, clock_mhz = board_clocks(board, config)
    soc = board_soc(board, config, compiled)
    blocks = {main_memory_label(board): MAIN_MEMORY_MODULE}
    if board.ddr3_bytes:
        blocks["LiteDRAM (DDR3 controller and PHY)"] = LITEDRAM_MODULE
    products = implement(platform, BoardTop(board, soc, board_clock_mhz, clock_mhz), board.device_info, Path(workdir),
                         kept=tuple(blocks.values()), progress=progress)
    report = parse_reports(products.report, products.stat, board.device_info, clock_mhz, products.seconds, board.name,
                           blocks)
    flash = None
    if board.flash is not None:
        flash = flash_image(products.bitstream.read_bytes(), compiled.image[:compiled.memory.constant_bytes].tobytes())
    return BoardBuild(report, products, flash)
