"""Double buffers: two banks, one owned by the DMA side and the other by the compute side.

Each bank is a simple dual-port `lib.memory.Memory` (one write port with byte enables, one
synchronous read port), so it maps to block RAM. Each side sees one write and one read port;
a side's accesses go to the bank it owns. `swap` (sampled at a clock edge; the sequencer's
tokens drive it) exchanges the banks from the next cycle on; accesses in the cycle of the swap
still go to the old banks. Read data arrives one cycle after a read with `en` high, from the bank
that read addressed.
"""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory, ReadPort, WritePort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from hwgen.config import AcceleratorConfig


def bank_shape(config: AcceleratorConfig, kind: str) -> tuple[int, int]:
    """(word bytes, depth) of one bank: `input` words are C*S bytes, `weight` R*S, `output` C accumulators."""
    pe, buffers = config.pe, config.buffers
    word_bytes, bank_bytes = {
        "input": (pe.cols * pe.simd, buffers.input_bank),
        "weight": (pe.rows * pe.simd, buffers.weight_bank),
        "output": (pe.cols * config.widths.accumulator_bytes, buffers.output_bank),
    }[kind]
    return word_bytes, bank_bytes // word_bytes


class DoubleBuffer(wiring.Component):
    """Two banks of `depth` words of `word_bytes` bytes.

    `spram` would map each bank onto iCE40UP5K SB_SPRAM256KA (16-bit x 16K, single-ported);
    that needs one port per bank per cycle, so not yet implemented (block RAM only).
    """

    def __init__(self, word_bytes: int, depth: int, *, spram: bool = False):
        if spram:
            raise NotImplementedError("SPRAM banks are not implemented; use block RAM (spram=False)")
        self.word_bytes = word_bytes
        self.depth = depth
        addr, word = ceil_log2(depth), unsigned(8 * word_bytes)
        super().__init__({
            "dma_wr": Out(WritePort.Signature(addr_width=addr, shape=word, granularity=8)),
            "dma_rd": Out(ReadPort.Signature(addr_width=addr, shape=word)),
            "compute_wr": Out(WritePort.Signature(addr_width=addr, shape=word, granularity=8)),
            "compute_rd": Out(ReadPort.Signature(addr_width=addr, shape=word)),
            "swap": In(1),
            "dma_bank": Out(1),
        })

    @classmethod
    def from_config(cls, config: AcceleratorConfig, kind: str) -> DoubleBuffer:
        """The `input`, `weight` or `output` buffer of a configuration."""
        return cls(*bank_shape(config, kind))

    def elaborate(self, platform) -> Module:
        m = Module()
        sides = ((self.dma_wr, self.dma_rd), (self.compute_wr, self.compute_rd))
        with m.If(self.swap):
            m.d.sync += self.dma_bank.eq(~self.dma_bank)
        # Which bank each side's last read addressed (for routing the read data back).
        read_bank = [Signal(name=f"{side}_read_bank") for side in ("dma", "compute")]
        banks = []
        for index in range(2):
            bank = Memory(shape=unsigned(8 * self.word_bytes), depth=self.depth, init=[])
            m.submodules[f"bank{index}"] = bank
            write, read = bank.write_port(granularity=8), bank.read_port()
            owner = self.dma_bank != index  # 0: DMA side, 1: compute side
            for field in ("addr", "data", "en"):
                m.d.comb += getattr(write, field).eq(Mux(owner, getattr(sides[1][0], field), getattr(sides[0][0], field)))
            m.d.comb += [read.addr.eq(Mux(owner, sides[1][1].addr, sides[0][1].addr)),
                         read.en.eq(Mux(owner, sides[1][1].en, sides[0][1].en))]
            banks.append(read)
        for side, (_, read) in enumerate(sides):
            bank_now = self.dma_bank if side == 0 else ~self.dma_bank
            with m.If(read.en):
                m.d.sync += read_bank[side].eq(bank_now)
            m.d.comb += read.data.eq(Mux(read_bank[side], banks[1].data, banks[0].data))
        return m
