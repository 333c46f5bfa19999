"""The top-level accelerator: sequencer, load/store units with a load DMA and a store DMA (or
one DMA they share, `template.dma: shared`), double buffers, compute unit, and the external memory port. Parameterized by an AcceleratorConfig and
a Program (instructions in the ROM, DMA descriptors in the descriptor table). With
`template.program_memory == "spram"` the program is not part of the hardware: the host writes
its instructions and descriptor table into the SPRAM program memory through `program_write`
(`program_regions` gives the contents)."""
from __future__ import annotations

from dataclasses import replace

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from hwgen.buffers import DoubleBuffer
from hwgen.compute_unit import ComputeUnit
from hwgen.config import AcceleratorConfig, DmaSharing, ProgramMemory
from hwgen.dma.descriptor import DmaParams
from hwgen.dma.controller import Dma
from hwgen.dma.shared import DmaArbiter
from hwgen.dma.table import DescriptorReader, descriptor_halfwords
from hwgen.dma.units import TransferUnit, assign_descriptor, descriptor_table_params, dma_params, load_targets, read_field_bits
from hwgen.program_walk import check_program
from hwgen.isa import Opcode
from hwgen.memory_port import MemoryPort
from hwgen.program import Program
from hwgen.sequencer import DESCRIPTOR_BASE, Sequencer
from hwgen.queue_options import runs_in_place
from hwgen.sequencer_layouts import COUNTERS_LAYOUT, program_write_signature
from hwgen.spram_size import SPRAM_BITS, SPRAM_WORDS
from hwgen.timing import HALFWORDS


def load_dma_params(config: AcceleratorConfig, table: DmaParams) -> DmaParams:
    """The load DMA (with `template.dma: shared` the only DMA): bus-word buffer words over the
    widest buffer address (`table`), so one DMA serves every buffer, each taking the bus words
    of its own words."""
    bus = config.dram.bus_width_bits // 8
    return replace(table, buf_word_bytes=bus, buf_depth=(1 << table.buf_addr_width) // bus)


def dma_units(config: AcceleratorConfig) -> list[DmaParams]:
    """The parameters of the accelerator's DMAs: the load DMA, and the store DMA unless
    `template.dma` is shared."""
    loads = load_dma_params(config, descriptor_table_params(config))
    return [loads] if config.template.dma == DmaSharing.SHARED else [loads, dma_params(config, "acc")]


def program_regions(program: Program, config: AcceleratorConfig) -> list[tuple[int, list[int]]]:
    """The SPRAM program memory's contents as (first halfword, halfwords): the instructions
    from halfword 0 (instruction `i` at `8i..8i+7`, least significant first) and the
    descriptor table from `DESCRIPTOR_BASE` (`hwgen.dma.table.descriptor_halfwords`)."""
    mask = (1 << SPRAM_BITS) - 1
    words = [(word >> (SPRAM_BITS * part)) & mask for word in program.instructions for part in range(HALFWORDS)]
    return [(0, words), (DESCRIPTOR_BASE, descriptor_halfwords(descriptor_table_params(config), program.descriptors))]


class Accelerator(wiring.Component):
    """Runs its program when `start` pulses; `done` rises when the program has finished."""

    def __init__(self, config: AcceleratorConfig, program: Program):
        check_program(program, config)
        self.config = config
        self.program = program
        members = {
            "port": Out(MemoryPort.from_config(config.dram, config.template.dram_address_bits)),
            "start": In(1), "done": Out(1), "busy": Out(1),
            "counters": Out(COUNTERS_LAYOUT),
        }
        if config.template.program_memory == ProgramMemory.SPRAM:
            members["program_write"] = In(program_write_signature(SPRAM_WORDS, SPRAM_BITS))
        super().__init__(members)

    def elaborate(self, platform) -> Module:
        m = Module()
        seq = self._sequencer(m)
        load_unit, store_unit, compute = self._units(m, seq)
        buffers = {}
        for kind in ("weight", "param", "acc"):
            buffers[kind] = [DoubleBuffer.from_config(self.config, kind)]
            m.submodules[f"{kind}_buffer"] = buffers[kind][0]
        buffers["input"] = [DoubleBuffer.from_config(self.config, "input", halves=2) for _ in range(2)]
        m.submodules.input_even, m.submodules.input_odd = buffers["input"]
        load = self._load_path(m, load_unit, store_unit, buffers)
        self._store_path(m, load, store_unit, buffers["acc"][0])
        self._compute_path(m, compute, buffers)
        return m

    def _sequencer(self, m: Module) -> Sequencer:
        """The sequencer, its start/done/counters on the accelerator's ports."""
        config = self.config
        m.submodules.sequencer = seq = Sequencer(self.program.instructions, template=config.template,
                                                 field_bits=read_field_bits(config))
        m.d.comb += [seq.start.eq(self.start), self.done.eq(seq.done), self.busy.eq(seq.busy),
                     self.counters.eq(seq.counters)]
        if "program_write" in self.signature.members:
            wiring.connect(m, wiring.flipped(self.program_write), seq.program_write)
        return seq

    def _units(self, m: Module, seq: Sequencer) -> tuple[TransferUnit, TransferUnit, ComputeUnit]:
        """The load, store and compute units on the sequencer's queues (with the SPRAM program
        memory, a descriptor reader serving the transfer units, stores first)."""
        config = self.config
        table = descriptor_table_params(config)
        spram = config.template.program_memory == ProgramMemory.SPRAM
        descriptors = None if spram else self.program.descriptors
        m.submodules.load_unit = load_unit = TransferUnit(table, descriptors, Opcode.LOAD,
                                                          in_place=runs_in_place(config.template, "load"))
        m.submodules.store_unit = store_unit = TransferUnit(table, descriptors, Opcode.STORE,
                                                            in_place=runs_in_place(config.template, "store"))
        if spram:
            m.submodules.descriptors = reader = DescriptorReader(table, 2)
            wiring.connect(m, reader.memory, seq.memory_read)
            for client, unit in enumerate((store_unit, load_unit)):
                wiring.connect(m, unit.lookup, reader.lookup[client])
                m.d.comb += [unit.filled.eq(reader.filled[client]), unit.entry.eq(reader.entry),
                             reader.release[client].eq(unit.release)]
        m.submodules.compute = compute = ComputeUnit(config)
        for queue, unit in (("load", load_unit), ("store", store_unit), ("compute", compute)):
            wiring.connect(m, getattr(seq, queue), unit.cmd)
            m.d.comb += getattr(seq, f"{queue}_idle").eq(unit.idle)
        return load_unit, store_unit, compute

    def _load_path(self, m: Module, load_unit: TransferUnit, store_unit: TransferUnit,
                   buffers: dict[str, list[DoubleBuffer]]) -> Dma:
        """One load DMA for every buffer (the load unit runs one LOAD at a time), on the port's
        read streams; it writes bus words at bus-word addresses, which each buffer maps onto its
        own (wider) words. With `template.dma: shared` it runs the stores too, the units taking
        turns (stores first)."""
        config = self.config
        table = descriptor_table_params(config)
        m.submodules.load_dma = load = Dma(dma_units(config)[0])
        if config.template.dma == DmaSharing.SHARED:
            spram = config.template.program_memory == ProgramMemory.SPRAM
            m.submodules.dma_arbiter = arbiter = DmaArbiter(table, 2, common_entry=spram)
            for client, unit in enumerate((store_unit, load_unit)):
                m.d.comb += [arbiter.desc[client].eq(unit.desc), arbiter.desc_valid[client].eq(unit.desc_valid),
                             unit.desc_ready.eq(arbiter.desc_ready[client]), unit.done.eq(arbiter.done[client])]
            assign_descriptor(m, load.desc.payload, arbiter.dma_desc.payload)
            m.d.comb += [load.desc.valid.eq(arbiter.dma_desc.valid), arbiter.dma_desc.ready.eq(load.desc.ready),
                         arbiter.dma_done.eq(load.done)]
        else:
            assign_descriptor(m, load.desc.payload, load_unit.desc)
            m.d.comb += [load.desc.valid.eq(load_unit.desc_valid), load_unit.desc_ready.eq(load.desc.ready),
                         load_unit.done.eq(load.done)]
        wiring.connect(m, wiring.flipped(self.port.rd_req), load.port.rd_req)
        wiring.connect(m, load.port.rd_data, wiring.flipped(self.port.rd_data))
        bus = config.dram.bus_width_bits // 8
        for target, kind in load_targets(config).items():
            writing = load_unit.active & (load_unit.select == target)
            lanes = exact_log2(dma_params(config, kind).buf_word_bytes // bus)  # log2 of bus words per buffer word
            word, lane = load.buf_wr.addr >> lanes, load.buf_wr.addr[:lanes]
            enables = load.buf_wr.en << (lane * bus) if lanes else load.buf_wr.en
            data = load.buf_wr.data.replicate(1 << lanes)
            for parity, buffer in enumerate(buffers[kind]):
                m.d.comb += [buffer.dma_write_bank.eq(load_unit.bank), buffer.dma_write_active.eq(writing)]
                if kind == "input":
                    m.d.comb += [buffer.dma_wr.addr.eq(word >> 1), buffer.dma_wr.data.eq(data),
                                 buffer.dma_wr.en.eq(Mux(word[0] == parity, enables, 0))]
                else:
                    m.d.comb += [buffer.dma_wr.addr.eq(word), buffer.dma_wr.data.eq(data),
                                 buffer.dma_wr.en.eq(enables)]
        return load

    def _store_path(self, m: Module, load: Dma, store_unit: TransferUnit, acc: DoubleBuffer) -> None:
        """The store DMA (or the shared one) reads the accumulator buffer and owns the port's
        write stream."""
        config = self.config
        m.d.comb += acc.dma_read_bank.eq(store_unit.bank)
        if acc.flow == "both":
            m.d.comb += acc.dma_read_active.eq(store_unit.active)
        if config.template.dma == DmaSharing.SHARED:
            store = load
            bus = config.dram.bus_width_bits // 8
            lanes = exact_log2(dma_params(config, "acc").buf_word_bytes // bus)
            lane = Signal(max(lanes, 1))  # the bus word of the acc word being read
            with m.If(store.buf_rd.en):
                m.d.sync += lane.eq(store.buf_rd.addr[:lanes])
            m.d.comb += [acc.dma_rd.addr.eq(store.buf_rd.addr >> lanes), acc.dma_rd.en.eq(store.buf_rd.en),
                         store.buf_rd.data.eq(acc.dma_rd.data.word_select(lane, 8 * bus) if lanes else acc.dma_rd.data)]
        else:
            m.submodules.store_dma = store = Dma(*dma_units(config)[1:])
            assign_descriptor(m, store.desc.payload, store_unit.desc)
            m.d.comb += [store.desc.valid.eq(store_unit.desc_valid), store_unit.desc_ready.eq(store.desc.ready),
                         store_unit.done.eq(store.done)]
            m.d.comb += [acc.dma_rd.addr.eq(store.buf_rd.addr), acc.dma_rd.en.eq(store.buf_rd.en),
                         store.buf_rd.data.eq(acc.dma_rd.data)]
        wiring.connect(m, wiring.flipped(self.port.wr), store.port.wr)

    @staticmethod
    def _compute_path(m: Module, compute: ComputeUnit, buffers: dict[str, list[DoubleBuffer]]) -> None:
        """The compute unit's bank selects, reads and accumulator writes (the accumulator buffer
        is read only for partial sums)."""
        (even, odd), (weight,), (param,), (acc,) = (buffers[kind] for kind in ("input", "weight", "param", "acc"))
        for buffer, bank in ((even, compute.in_bank), (odd, compute.in_bank), (weight, compute.weight_bank),
                             (param, compute.param_bank), (acc, compute.out_bank)):
            m.d.comb += buffer.compute_bank.eq(bank)
        reads = [(even, compute.input_even), (odd, compute.input_odd), (weight, compute.weight), (param, compute.param)]
        if acc.flow == "both":
            reads.append((acc, compute.acc_read))
        for buffer, port in reads:
            m.d.comb += [buffer.compute_rd.addr.eq(port.addr), buffer.compute_rd.en.eq(port.en),
                         port.data.eq(buffer.compute_rd.data)]
        m.d.comb += [acc.compute_wr.addr.eq(compute.acc_write.addr), acc.compute_wr.data.eq(compute.acc_write.data),
                     acc.compute_wr.en.eq(compute.acc_write.en)]
