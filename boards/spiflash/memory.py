"""Main memory split between the SPI flash and SPRAM (the iCEBreaker): `FlashMainMemory` has
`boards.main_memory.MainMemory`'s ports (the accelerator's `port`, the bridge's `host`) plus the
flash's pins.

The compiled memory image puts the constants (weights and parameters of every layer) first, at
[0, `constant_bytes`), then activations and scratch (`planner.compile.memory_map`). Reads below
`constant_bytes` go to the flash (`SpiFlashReader`, quad I/O) at flash address `flash_offset` +
address; every other access goes to `MainMemory` (SPRAM) at address - `constant_bytes`. The
host's port is SPRAM's alone: host address 0 is image address `constant_bytes`.

A read burst stays in its `burst_beats`-beat block (`hwgen.memory_port`), and `constant_bytes` is
a multiple of that block (`check_flash_memory`), so no burst straddles the two. Read data come
back in request order: a request for the other memory waits until every beat of the last one
has been taken. A write below `constant_bytes` (the compiler never emits one) is dropped and
sets `write_fault` until reset.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from boards.main_memory import HostPort, MainMemory, word_bytes
from boards.spiflash.reader import SpiFlashReader
from common.errors import ConfigError
from hwgen.memory_port import MemoryPort
from sim.spiflash.adapter import SPI_FLASH_PINS
from sim.spiflash.chips import SpiFlashChip

FLASH_OFFSET = 1 << 20
"""Where the constants start in the flash: a 64 KiB-aligned address far past the UP5K's
bitstream (about 100 KB; the flash's first MiB is left to it, `flash_image` checks)."""
ERASE_BLOCK = 64 * 1024


def check_flash_memory(port: MemoryPort, constant_bytes: int, chip: SpiFlashChip, flash_offset: int) -> None:
    """`constant_bytes` must end on a burst block and fit the chip after `flash_offset` (a
    64 KiB-aligned address)."""
    block = port.bus_bytes * port.burst_beats
    if constant_bytes % block:
        raise ConfigError(f"the constants ({constant_bytes} bytes) must end on a {block}-byte burst block, so that "
                          f"no read burst straddles flash and SPRAM")
    if flash_offset % ERASE_BLOCK or flash_offset < 0:
        raise ConfigError(f"flash offset {flash_offset:#x} must be a multiple of {ERASE_BLOCK:#x} (a 64 KiB block)")
    room = chip.size_bytes - flash_offset
    if constant_bytes > room:
        raise ConfigError(f"the constants ({constant_bytes:,} bytes) do not fit the {chip.name} after offset "
                          f"{flash_offset:#x}: at most {room:,} bytes")


class FlashMainMemory(wiring.Component):
    """Constants (`constant_bytes`) in the flash `chip` from `flash_offset`, the rest of the image
    in `spram_bytes` of SPRAM (`spram_init` where the storage is block RAM: in simulation), for a
    `clock_mhz` system clock."""

    def __init__(self, port: MemoryPort, spram_bytes: int, constant_bytes: int, chip: SpiFlashChip,
                 clock_mhz: float, flash_offset: int = FLASH_OFFSET, spram_init: bytes = b""):
        try:
            check_flash_memory(port, constant_bytes, chip, flash_offset)
            self.reader = SpiFlashReader(port.bus_bytes, port.burst_beats, chip=chip, clock_mhz=clock_mhz,
                                         base=flash_offset, addr_width=port.addr_width)
        except ConfigError:
            self._MustUse__silence = True  # not built, so not "created but never used"
            raise
        self.spram = MainMemory(port, spram_bytes, spram_init)
        self.bus, self.constant_bytes = port, constant_bytes
        super().__init__({"port": In(port), "host": In(HostPort(word_bytes(port))), "flash": Out(SPI_FLASH_PINS),
                          "write_fault": Out(1)})

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.reader, m.submodules.spram = reader, spram = self.reader, self.spram
        wiring.connect(m, wiring.flipped(self.flash), reader.flash)
        wiring.connect(m, wiring.flipped(self.host), spram.host)
        port = self.port

        # ---- reads: routed by address, in order
        request = port.rd_req.payload
        to_flash = self._below_constants_end(request.addr)
        from_flash = Signal()  # the memory whose beats are on their way
        pending = Signal(range(4 * self.bus.burst_beats + 1))  # beats requested, not yet taken
        allowed = (pending == 0) | (from_flash == to_flash)
        m.d.comb += [reader.rd_req.payload.addr.eq(request.addr), reader.rd_req.payload.beats.eq(request.beats),
                     spram.port.rd_req.payload.addr.eq(self._past_constants(request.addr)),
                     spram.port.rd_req.payload.beats.eq(request.beats),
                     reader.rd_req.valid.eq(port.rd_req.valid & allowed & to_flash),
                     spram.port.rd_req.valid.eq(port.rd_req.valid & allowed & ~to_flash),
                     port.rd_req.ready.eq(allowed & Mux(to_flash, reader.rd_req.ready, spram.port.rd_req.ready))]
        accepted = port.rd_req.valid & port.rd_req.ready
        taken = port.rd_data.valid & port.rd_data.ready
        m.d.sync += pending.eq(pending + Mux(accepted, request.beats, 0) - taken)
        with m.If(accepted):
            m.d.sync += from_flash.eq(to_flash)
        m.d.comb += [port.rd_data.valid.eq(Mux(from_flash, reader.rd_data.valid, spram.port.rd_data.valid)),
                     port.rd_data.payload.eq(Mux(from_flash, reader.rd_data.payload, spram.port.rd_data.payload)),
                     reader.rd_data.ready.eq(from_flash & port.rd_data.ready),
                     spram.port.rd_data.ready.eq(~from_flash & port.rd_data.ready)]

        # ---- writes: to SPRAM; one below the boundary is dropped and flagged
        wr = port.wr.payload
        into_flash = self._below_constants_end(wr.addr)
        m.d.comb += [spram.port.wr.payload.eq(wr), spram.port.wr.payload.addr.eq(self._past_constants(wr.addr)),
                     spram.port.wr.valid.eq(port.wr.valid & ~into_flash), port.wr.ready.eq(1)]
        with m.If(port.wr.valid & into_flash):
            m.d.sync += self.write_fault.eq(1)
        return m

    def _zero_bits(self) -> int:
        """The low address bits that are 0 in `constant_bytes` (a multiple of the compiler's
        64-byte alignment): comparisons and subtractions skip them."""
        ones = self.constant_bytes & -self.constant_bytes
        return min(ones.bit_length() - 1 if ones else self.bus.addr_width, self.bus.addr_width)

    def _below_constants_end(self, addr: Value) -> Value:
        low = self._zero_bits()
        return addr[low:] < (self.constant_bytes >> low)

    def _past_constants(self, addr: Value) -> Value:
        """`addr` - `constant_bytes`, the subtraction on the bits above `_zero_bits`."""
        low = self._zero_bits()
        return Cat(addr[:low], addr[low:] - (self.constant_bytes >> low))
