"""Double buffers: two banks, addressed by the DMA side and the compute side.

Each bank is a simple dual-port `lib.memory.Memory` (one write port with byte enables, one
synchronous read port), so it maps to block RAM. The DMA side's write and read ports each
select a bank while active (`dma_write_bank`/`dma_write_active`, `dma_read_bank`/
`dma_read_active`: a load DMA writes, a store DMA reads, possibly different banks at once);
a bank port not taken by the DMA side belongs to the compute side when `compute_bank` selects
it. The sequencer's semaphores guarantee the sides never use one bank at the same time. A
`one_way` buffer (input, weight, param: `hwgen.config.MERGEABLE_BUFFERS`) has only the DMA
side's write and the compute side's read port, wired to the banks without selection logic
(the write enables select the bank). Read data arrives one cycle after a read with `en` high,
from the bank that read addressed, straight from the block RAM's output register; a read of the word written in the
same cycle returns an undefined value (no user does that).
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory, ReadPort, WritePort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from hwgen.config import MERGEABLE_BUFFERS, AcceleratorConfig
from hwgen.layout import ACC_BYTES, PARAM_BYTES, bank_bytes
from hwgen.spram import SinglePortBank


def bank_shape(config: AcceleratorConfig, kind: str) -> tuple[int, int]:
    """(word bytes, depth) of one bank: `input` words are C*S bytes (one PE-column window),
    `weight` R*S (one weight word per row), `param` R channel records, `acc` R accumulators
    (one pixel's output channels)."""
    pe = config.pe
    word_bytes = {
        "input": pe.cols * pe.simd,
        "weight": pe.rows * pe.simd,
        "param": pe.rows * PARAM_BYTES,
        "acc": pe.rows * ACC_BYTES,
    }[kind]
    return word_bytes, bank_bytes(config, kind) // word_bytes


class DoubleBuffer(wiring.Component):
    """Two banks of `depth` words of `word_bytes` bytes.

    With `spram`, each bank is a single-ported `SinglePortBank` (SB_SPRAM256KA on iCE40UP5K):
    its owner may read or write in a cycle, not both, which suits buffers that one side only
    writes (DMA) and the other only reads (compute): input and weight.

    With `one_way`, the DMA side only writes and the compute side only reads (no `dma_rd`,
    `compute_wr`, `dma_read_*` ports): input, weight and param.

    With `merged` (only `one_way`), both banks live in one simple dual-port memory (the bank
    number is the top address bit): its write port is the DMA side's, its read port the
    compute side's.
    """

    def __init__(self, word_bytes: int, depth: int, *, spram: bool = False, merged: bool = False,
                 one_way: bool = False):
        assert not (spram and merged) and (one_way or not merged)
        self.word_bytes = word_bytes
        self.depth = depth
        self.spram = spram
        self.merged = merged
        self.one_way = one_way
        addr, word = ceil_log2(depth), unsigned(8 * word_bytes)
        write = WritePort.Signature(addr_width=addr, shape=word, granularity=8)
        read = ReadPort.Signature(addr_width=addr, shape=word)
        ports = {"dma_wr": Out(write), "compute_rd": Out(read), "dma_write_bank": In(1), "dma_write_active": In(1),
                 "compute_bank": In(1)}
        if not one_way:
            ports |= {"dma_rd": Out(read), "compute_wr": Out(write), "dma_read_bank": In(1), "dma_read_active": In(1)}
        super().__init__(ports)

    @classmethod
    def from_config(cls, config: AcceleratorConfig, kind: str, halves: int = 1) -> DoubleBuffer:
        """The `input`, `weight`, `param` or `acc` buffer of a configuration (`halves=2`: one
        of the even/odd-word halves of the input buffer)."""
        word, depth = bank_shape(config, kind)
        return cls(word, depth // halves, spram=kind in config.buffers.spram,
                   merged=kind in config.template.merged_banks, one_way=kind in MERGEABLE_BUFFERS)

    def elaborate(self, platform) -> Module:
        m = Module()
        if self.merged:
            return self._merged(m)
        if self.one_way:
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
        """Both banks in one memory: the DMA side writes at `Cat(addr, dma_write_bank)`, the
        compute side reads at `Cat(addr, compute_bank)`."""
        m.submodules.banks = banks = _memory(unsigned(8 * self.word_bytes), 2 << ceil_log2(self.depth))
        write, read = banks.write_port(granularity=8), _read_port(m, banks, "banks")
        m.d.comb += [write.addr.eq(Cat(self.dma_wr.addr, self.dma_write_bank)), write.data.eq(self.dma_wr.data),
                     write.en.eq(Mux(self.dma_write_active, self.dma_wr.en, 0)),
                     read.addr.eq(Cat(self.compute_rd.addr, self.compute_bank)), read.en.eq(self.compute_rd.en),
                     self.compute_rd.data.eq(read.data)]
        return m

    def _one_way(self, m: Module) -> Module:
        """Two memories: both take the DMA side's write address and data (the enables pick the
        bank) and the compute side's read address; its bank picks the read data."""
        read_bank = Signal(name="compute_read_bank")
        reads = []
        for index in range(2):
            write, read = self._bank(m, index)
            writes = self.dma_write_active & (self.dma_write_bank == index)
            m.d.comb += [write.addr.eq(self.dma_wr.addr), write.data.eq(self.dma_wr.data),
                         write.en.eq(Mux(writes, self.dma_wr.en, 0)), read.addr.eq(self.compute_rd.addr),
                         read.en.eq(self.compute_rd.en & (self.compute_bank == index))]
            reads.append(read)
        with m.If(self.compute_rd.en):
            m.d.sync += read_bank.eq(self.compute_bank)
        m.d.comb += self.compute_rd.data.eq(Mux(read_bank, reads[1].data, reads[0].data))
        return m

    def _bank(self, m: Module, index: int):
        """One bank's write and read port (on a dual-port Memory, or sharing an SPRAM port)."""
        shape = unsigned(8 * self.word_bytes)
        if not self.spram:
            bank = m.submodules[f"bank{index}"] = _memory(shape, self.depth)
            return bank.write_port(granularity=8), _read_port(m, bank, f"bank{index}")
        bank = m.submodules[f"bank{index}"] = SinglePortBank(self.word_bytes, self.depth)
        addr = ceil_log2(self.depth)
        write = WritePort.Signature(addr_width=addr, shape=shape, granularity=8).create(path=(f"bank{index}_write",))
        read = ReadPort.Signature(addr_width=addr, shape=shape).create(path=(f"bank{index}_read",))
        m.d.comb += [bank.addr.eq(Mux(write.en.any(), write.addr, read.addr)), bank.wr_data.eq(write.data),
                     bank.wr_en.eq(write.en), bank.rd_en.eq(read.en), read.data.eq(bank.rd_data)]
        return write, read


def _memory(shape, depth: int) -> Memory:
    """A block-RAM memory whose reads may return anything when they hit the word being written
    in the same cycle (Yosys' `no_rw_check`: no write-bypass logic around the block RAM). The
    users never do that: a bank's two sides never share it, and each side's reads and writes
    of one cycle address different words."""
    return Memory(shape=shape, depth=depth, init=[], attrs={"no_rw_check": 1})


def _read_port(m: Module, memory: Memory, name: str) -> ReadPort.Signature:
    """A synchronous read port of `memory` with `en` (data holds while it is low), written as an
    asynchronous read and a register so that Yosys (`memory_dff`) merges the register into the
    port and applies the memory's `no_rw_check` (it does not on a port that is already
    synchronous)."""
    port = memory.read_port(domain="comb")
    read = ReadPort.Signature(addr_width=len(port.addr), shape=memory.shape).create(path=(f"{name}_read",))
    data = Signal.like(port.data, name=f"{name}_data", reset_less=True)  # a reset would be emulated in logic
    m.d.comb += [port.addr.eq(read.addr), read.data.eq(data)]
    with m.If(read.en):
        m.d.sync += data.eq(port.data)
    return read
