"""Double buffers: two banks, addressed by the DMA side and the compute side.

Each bank is a simple dual-port `lib.memory.Memory` (one write port with byte enables, one
synchronous read port), so it maps to block RAM. The DMA side's write and read ports each
select a bank while active (`dma_write_bank`/`dma_write_active`, `dma_read_bank`/
`dma_read_active`: a load DMA writes, a store DMA reads, possibly different banks at once);
a bank port not taken by the DMA side belongs to the compute side when `compute_bank` selects
it. The sequencer's semaphores guarantee the sides never use one bank at the same time. A
buffer's `flow` may leave out one direction: a `load` buffer (input, weight, param:
`hwgen.config.FILLED_BUFFERS`) has only the DMA side's write and the compute side's read
port, a `store` buffer (the accumulator buffer with `template.partial_sums: none`) only the
compute side's write and the DMA side's read port; both are wired to the banks without
selection logic (the write enables and the read data's bank register pick the bank). Read data
arrives one cycle after a read with `en` high, from the bank that read addressed, straight from
the block RAM's output register; a read of the word written in the same cycle returns an
undefined value (no user does that).
"""
from __future__ import annotations

from collections.abc import Sequence

from amaranth.back.rtlil import Undef
from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory, ReadPort, WritePort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from hwgen.config import FILLED_BUFFERS, AcceleratorConfig, PartialSums
from hwgen.layout import bank_bytes, word_bytes
from hwgen.spram import SinglePortBank


FLOWS = ("both", "load", "store")
"""What each side of a `DoubleBuffer` does: both read and write, or (`load`) the DMA writes and
the compute side reads, or (`store`) the compute side writes and the DMA reads."""


def buffer_flow(config: AcceleratorConfig, kind: str) -> str:
    """The flow of the `input`, `weight`, `param` or `acc` buffer: `load` for the ones the DMA
    only fills (`FILLED_BUFFERS`), `store` for the accumulator buffer without partial sums
    (`template.partial_sums: none`), else `both`."""
    if kind in FILLED_BUFFERS:
        return "load"
    return "store" if config.template.partial_sums == PartialSums.NONE else "both"


def bank_shape(config: AcceleratorConfig, kind: str) -> tuple[int, int]:
    """(word bytes, depth) of one bank (`hwgen.layout.word_bytes`)."""
    word = word_bytes(config.pe, kind)
    return word, bank_bytes(config, kind) // word


class DoubleBuffer(wiring.Component):
    """Two banks of `depth` words of `word_bytes` bytes.

    With `spram`, each bank is a single-ported `SinglePortBank` (SB_SPRAM256KA on iCE40UP5K):
    its owner may read or write in a cycle, not both, which suits buffers that one side only
    writes (DMA) and the other only reads (compute): input and weight.

    `flow` `both`: each side reads and writes. `load`: the DMA side only writes and the compute
    side only reads (no `dma_rd`, `compute_wr`, `dma_read_*` ports): input, weight and param.
    `store`: the compute side only writes and the DMA side only reads (no `dma_wr`,
    `compute_rd`, `dma_write_*`, `dma_read_active` ports): the accumulator buffer without
    partial sums.

    With `merged` (only `load` or `store`), both banks live in one simple dual-port memory (the
    bank number is the top address bit): its write port is the writing side's, its read port the
    reading side's.
    """

    def __init__(self, word_bytes: int, depth: int, *, spram: bool = False, merged: bool = False,
                 flow: str = "both"):
        assert flow in FLOWS and not (spram and merged) and (flow != "both" or not merged)
        self.word_bytes = word_bytes
        self.depth = depth
        self.spram = spram
        self.merged = merged
        self.flow = flow
        addr, word = ceil_log2(depth), unsigned(8 * word_bytes)
        write = WritePort.Signature(addr_width=addr, shape=word, granularity=8)
        read = ReadPort.Signature(addr_width=addr, shape=word)
        ports = {"compute_bank": In(1)}
        if flow != "store":
            ports |= {"dma_wr": Out(write), "compute_rd": Out(read), "dma_write_bank": In(1), "dma_write_active": In(1)}
        if flow != "load":
            ports |= {"dma_rd": Out(read), "compute_wr": Out(write), "dma_read_bank": In(1)}
        if flow == "both":
            ports["dma_read_active"] = In(1)
        super().__init__(ports)

    @classmethod
    def from_config(cls, config: AcceleratorConfig, kind: str, halves: int = 1) -> DoubleBuffer:
        """The `input`, `weight`, `param` or `acc` buffer of a configuration (`halves=2`: one
        of the even/odd-word halves of the input buffer)."""
        word, depth = bank_shape(config, kind)
        return cls(word, depth // halves, spram=kind in config.buffers.spram,
                   merged=kind in config.template.merged_banks, flow=buffer_flow(config, kind))

    def elaborate(self, platform) -> Module:
        m = Module()
        if self.merged:
            return self._merged(m)
        if self.flow != "both":
            return self._one_way(m)
        read_selects = (self.dma_read_bank, self.compute_bank)
        read_bank = [Signal(name=f"{side}_read_bank") for side in ("dma", "compute")]
        reads = []
        for index in range(2):
            write, read = self._bank(m, index)
            dma_writes = self.dma_write_active & (self.dma_write_bank == index)
            dma_reads = self.dma_read_active & (self.dma_read_bank == index)
            compute_here = self.compute_bank == index
            for owns, port in ((dma_writes, self.dma_wr), (~dma_writes & compute_here, self.compute_wr)):
                with m.If(owns):
                    m.d.comb += [write.addr.eq(port.addr), write.data.eq(port.data), write.en.eq(port.en)]
            for owns, port in ((dma_reads, self.dma_rd), (~dma_reads & compute_here, self.compute_rd)):
                with m.If(owns):
                    m.d.comb += [read.addr.eq(port.addr), read.en.eq(port.en)]
            reads.append(read)
        for side, read in enumerate((self.dma_rd, self.compute_rd)):
            with m.If(read.en):
                m.d.sync += read_bank[side].eq(read_selects[side])
            m.d.comb += read.data.eq(Mux(read_bank[side], reads[1].data, reads[0].data))
        return m

    def _merged(self, m: Module) -> Module:
        """Both banks in one memory: the writing side writes at `Cat(addr, its bank)`, the
        reading side reads at `Cat(addr, its bank)` (`_sides`)."""
        write, write_bank, writing, read, read_bank = self._sides()
        m.submodules.banks = banks = block_ram(unsigned(8 * self.word_bytes), 2 << ceil_log2(self.depth))
        bank_write, bank_read = banks.write_port(granularity=8), block_ram_read_port(m, banks, "banks")
        m.d.comb += [bank_write.addr.eq(Cat(write.addr, write_bank)), bank_write.data.eq(write.data),
                     bank_write.en.eq(Mux(writing, write.en, 0)),
                     bank_read.addr.eq(Cat(read.addr, read_bank)), bank_read.en.eq(read.en),
                     read.data.eq(bank_read.data)]
        return m

    def _sides(self) -> tuple:
        """A one-way buffer's write port, its bank and whether it is writing, its read port and
        its bank: the DMA side writes (while `dma_write_active`) and the compute side reads
        (`load`), or the compute side writes and the DMA side reads (`store`)."""
        if self.flow == "load":
            return self.dma_wr, self.dma_write_bank, self.dma_write_active, self.compute_rd, self.compute_bank
        return self.compute_wr, self.compute_bank, Const(1), self.dma_rd, self.dma_read_bank

    def _one_way(self, m: Module) -> Module:
        """Two memories: both take the writing side's address and data (the enables pick the
        bank) and the reading side's address; the reading side's bank picks the read data."""
        write, write_bank, writing, read, read_select = self._sides()
        read_bank = Signal(name="read_bank")
        reads = []
        for index in range(2):
            bank_write, bank_read = self._bank(m, index)
            m.d.comb += [bank_write.addr.eq(write.addr), bank_write.data.eq(write.data),
                         bank_write.en.eq(Mux(writing & (write_bank == index), write.en, 0)),
                         bank_read.addr.eq(read.addr), bank_read.en.eq(read.en & (read_select == index))]
            reads.append(bank_read)
        with m.If(read.en):
            m.d.sync += read_bank.eq(read_select)
        m.d.comb += read.data.eq(Mux(read_bank, reads[1].data, reads[0].data))
        return m

    def _bank(self, m: Module, index: int):
        """One bank's write and read port (on a dual-port Memory, or sharing an SPRAM port)."""
        shape = unsigned(8 * self.word_bytes)
        if not self.spram:
            bank = m.submodules[f"bank{index}"] = block_ram(shape, self.depth)
            return bank.write_port(granularity=8), block_ram_read_port(m, bank, f"bank{index}")
        bank = m.submodules[f"bank{index}"] = SinglePortBank(self.word_bytes, self.depth)
        addr = ceil_log2(self.depth)
        write = WritePort.Signature(addr_width=addr, shape=shape, granularity=8).create(path=(f"bank{index}_write",))
        read = ReadPort.Signature(addr_width=addr, shape=shape).create(path=(f"bank{index}_read",))
        m.d.comb += [bank.addr.eq(Mux(write.en.any(), write.addr, read.addr)), bank.wr_data.eq(write.data),
                     bank.wr_en.eq(write.en), bank.rd_en.eq(read.en), read.data.eq(bank.rd_data)]
        return write, read


def block_ram(shape, depth: int, init: Sequence[int] = ()) -> Memory:
    """A block-RAM memory (contents `init`, the rest 0) whose reads may return anything when
    they hit the word being written in the same cycle (Yosys' `no_rw_check`: no write-bypass
    logic around the block RAM). The users never do that: a bank's two sides never share it,
    and each side's reads and writes of one cycle address different words."""
    return Memory(shape=shape, depth=depth, init=init, attrs={"no_rw_check": 1})


def block_ram_read_port(m: Module, memory: Memory, name: str) -> ReadPort.Signature:
    """A synchronous read port of `memory` with `en` (data holds while it is low), written as an
    asynchronous read and a register so that Yosys (`memory_dff`) merges the register into the
    port and applies the memory's `no_rw_check` (it does not on a port that is already
    synchronous). The register has no reset and an undefined initial value, as the block RAM's
    own output register (a defined one, even 0, costs a gate per read-data bit that Yosys adds
    to emulate it): its `init` attribute, which Amaranth emits from the signal's attributes
    over its `init`, is all x (the simulator starts it at 0)."""
    port = memory.read_port(domain="comb")
    read = ReadPort.Signature(addr_width=len(port.addr), shape=memory.shape).create(path=(f"{name}_read",))
    data = Signal.like(port.data, name=f"{name}_data", reset_less=True, attrs={"init": Undef(len(port.data))})
    m.d.comb += [port.addr.eq(read.addr), read.data.eq(data)]
    with m.If(read.en):
        m.d.sync += data.eq(port.data)
    return read
