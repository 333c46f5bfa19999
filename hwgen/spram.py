"""Single-ported memory banks for iCE40UP5K SPRAM (SB_SPRAM256KA: 16 K x 16 bits each).

On an iCE40UP platform a bank is built from SB_SPRAM256KA instances side by side (one per 16
bits of the word); elsewhere (simulation, other devices) from an equivalent `lib.memory.Memory`.
Either way it has one port: a cycle either writes (`wr_en` non-zero, byte enables) or reads.
"""
from __future__ import annotations

from amaranth.hdl import Cat, ClockSignal, Instance, Module, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from hwgen.spram_size import SPRAM_BITS, SPRAM_WORDS


def is_ice40up(platform) -> bool:
    return str(getattr(platform, "device", "")).upper().startswith("ICE40UP")


class SinglePortBank(wiring.Component):
    """`depth` words of `word_bytes` bytes behind one port (read data one cycle after a read)."""

    def __init__(self, word_bytes: int, depth: int):
        if depth > SPRAM_WORDS or (8 * word_bytes) % SPRAM_BITS:
            raise ValueError(f"an SPRAM bank holds at most {SPRAM_WORDS} words of a multiple of 16 bits; "
                             f"got {depth} words of {8 * word_bytes} bits")
        self.word_bytes, self.depth = word_bytes, depth
        super().__init__({
            "addr": In(ceil_log2(depth)), "wr_data": In(8 * word_bytes), "wr_en": In(word_bytes),
            "rd_en": In(1), "rd_data": Out(8 * word_bytes),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        if is_ice40up(platform):
            for index in range(8 * self.word_bytes // SPRAM_BITS):
                bits = slice(index * SPRAM_BITS, (index + 1) * SPRAM_BITS)
                enables = self.wr_en[2 * index:2 * index + 2]
                m.submodules[f"spram{index}"] = Instance(
                    "SB_SPRAM256KA",
                    i_ADDRESS=self.addr, i_DATAIN=self.wr_data[bits],
                    i_MASKWREN=Cat(enables[0], enables[0], enables[1], enables[1]),  # one bit per nibble
                    i_WREN=enables.any(), i_CHIPSELECT=1, i_CLOCK=ClockSignal("sync"),
                    i_STANDBY=0, i_SLEEP=0, i_POWEROFF=1, o_DATAOUT=self.rd_data[bits],
                )
            return m
        m.submodules.memory = memory = Memory(shape=unsigned(8 * self.word_bytes), depth=self.depth, init=[])
        write, read = memory.write_port(granularity=8), memory.read_port()
        m.d.comb += [write.addr.eq(self.addr), write.data.eq(self.wr_data), write.en.eq(self.wr_en),
                     read.addr.eq(self.addr), read.en.eq(self.rd_en & ~self.wr_en.any()), self.rd_data.eq(read.data)]
        return m
