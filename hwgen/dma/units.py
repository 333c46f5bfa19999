"""The load and store units: they execute LOAD / STORE instructions from the sequencer's
queues by looking up the instruction's DMA descriptor in the descriptor table
(`hwgen.dma.table`: a ROM holding `Program.descriptors`, or the part of the SPRAM program memory
after `DESCRIPTOR_BASE`, read by a `DescriptorReader`), filling in the addresses and image origin
the instruction carries, and handing it to the DMA of the target buffer; and the DMA parameters
of a configuration."""
from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from hwgen.buffers import bank_shape
from hwgen.config import AcceleratorConfig, DmaDescriptor, DmaSharing, PartialSums, ProgramMemory
from hwgen.dma.descriptor import DmaParams
from hwgen.dma.transfer import Descriptor
from hwgen.dma.table import DESCRIPTOR_INDEX, descriptor_capacity, descriptor_rom, table_params
from hwgen.isa import Buffer, Opcode
from hwgen.isa_layout import INSTRUCTION_LAYOUT, PAYLOADS

LOAD_TARGETS = {Buffer.INPUT: "input", Buffer.WEIGHT: "weight", Buffer.PARAM: "param", Buffer.ACC: "acc"}
COORD_BITS = dict(PAYLOADS[Opcode.LOAD])["y_offset"].shape.width + 2
"""Coordinates of the `pointer` walker: an instruction's origin plus a descriptor's extent (at
most a quarter of the range, `hwgen.dma.descriptor.pointer_dims`)."""


def dma_params(config: AcceleratorConfig, kind: str) -> DmaParams:
    """The DMA parameters of one buffer: its word and depth, the configuration's bus and DRAM
    address width; with `template.dma: shared` the `pointer` walker, counts one bit wider than
    the buffer's byte addresses, `COORD_BITS` coordinates, narrow segment queues and, with
    `template.dma_descriptor: reader`, no copy of the descriptor; `template.dma_loops` outer loops;
    `template.timing_registers`."""
    word, depth = bank_shape(config, kind)
    template = config.template
    compact = {} if template.dma == DmaSharing.SEPARATE else {
        "walker": "pointer", "count_width": ceil_log2(word * depth) + 1, "coord_width": COORD_BITS,
        "narrow_queues": True, "entry_held": template.dma_descriptor == DmaDescriptor.READER,
        "outer_dims": template.dma_loops}
    return DmaParams(bus_bytes=config.dram.bus_width_bits // 8, burst_beats=config.dram.burst_beats,
                     buf_word_bytes=word, buf_depth=depth, addr_width=template.dram_address_bits,
                     segment_fifos=template.segment_fifos, timing_registers=template.timing_registers,
                     **compact)


def load_targets(config: AcceleratorConfig) -> dict[Buffer, str]:
    """The buffers a LOAD of `config` may fill: without partial sums (`template.partial_sums:
    none`) not the accumulator buffer."""
    if config.template.partial_sums == PartialSums.KEPT:
        return LOAD_TARGETS
    return {target: kind for target, kind in LOAD_TARGETS.items() if target != Buffer.ACC}


def descriptor_table_params(config: AcceleratorConfig) -> DmaParams:
    """The layout of the descriptor table: every DMA's descriptors fit it."""
    return table_params([dma_params(config, kind) for kind in LOAD_TARGETS.values()])


def read_field_bits(config: AcceleratorConfig) -> dict[str, int]:
    """The low bits of the LOAD / STORE fields a transfer unit reads: the DRAM and buffer
    addresses go into the descriptor table's fields (`descriptor_table_params`); the index
    into an SPRAM descriptor table stays below its capacity (a program with more descriptors
    is refused, `hwgen.program_walk.check_program`)."""
    table = descriptor_table_params(config)
    bits = {"dram_offset": table.addr_width, "buf_addr": table.buf_addr_width}
    if config.template.program_memory == ProgramMemory.SPRAM:
        bits["desc"] = ceil_log2(descriptor_capacity(table))
    return bits


def assign_descriptor(m: Module, target: data.View, source: data.View) -> None:
    """Copy a descriptor between layouts that differ only in field widths."""
    for name, member in target.shape():
        if isinstance(member.shape, data.ArrayLayout):
            for index in range(member.shape.length):
                assign_descriptor(m, getattr(target, name)[index], getattr(source, name)[index])
        else:
            m.d.comb += getattr(target, name).eq(getattr(source, name))


class TransferUnit(wiring.Component):
    """Executes the LOAD (or, with `opcode` STORE, the STORE) commands of its queue one at a time
    (its queue carries no other transfer).

    `select` is the command's target (the buffer of a LOAD, 0 for a STORE) and `bank` its bank;
    both stay valid while `active`. `desc` is the filled-in descriptor for the DMAs (in the
    table's layout); the unit offers it to the DMA of `select` via `desc_valid` and waits for
    that DMA's `done`. With `descriptors=None` the table entry comes from a `DescriptorReader`
    (`lookup`, `filled`, `entry`, `release`) instead of a ROM; the unit releases it when the DMA
    takes the descriptor, or with `params.entry_held` (the DMA reads it while busy) at `done`.
    With `in_place` the unit keeps no copy of the command: it runs the one offered on `cmd`
    (the sequencer's queue head, which stays put) and accepts it at `done`.
    """

    def __init__(self, params: DmaParams, descriptors: list[Descriptor] | None, opcode: Opcode,
                 in_place: bool = False):
        assert opcode in (Opcode.LOAD, Opcode.STORE)
        self.params = params
        self.in_place = in_place
        self.descriptors = descriptors
        self.opcode = opcode
        targets = len(LOAD_TARGETS) if opcode == Opcode.LOAD else 1
        reader = {} if descriptors is not None else {
            "lookup": Out(stream.Signature(DESCRIPTOR_INDEX)),
            "filled": In(1), "entry": In(params.entry_layout()), "release": Out(1),
        }
        super().__init__({
            **reader,
            "cmd": In(stream.Signature(INSTRUCTION_LAYOUT)),
            "idle": Out(1),
            "active": Out(1),
            "select": Out(range(max(targets, 2))),
            "bank": Out(1),
            "desc": Out(params.descriptor_layout()),
            "desc_valid": Out(1),
            "desc_ready": In(1),
            "done": In(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        command = self.cmd.payload if self.in_place else Signal(INSTRUCTION_LAYOUT)
        if self.descriptors is None:
            entry = self.entry
        else:
            m.submodules.table = table = descriptor_rom(self.params, self.descriptors)
            read = table.read_port()
            entry = data.View(self.params.descriptor_layout(), read.data)
        is_load = self.opcode == Opcode.LOAD
        load, store = command.payload.load, command.payload.store
        index = load.desc if is_load else store.desc

        m.d.comb += [getattr(self.desc, name).eq(getattr(entry, name)) for name, _ in entry.shape()]
        m.d.comb += self.desc.load.eq(is_load)
        if is_load:
            m.d.comb += [self.desc.dram_addr.eq(load.dram_offset), self.desc.buf_addr.eq(load.buf_addr),
                         self.desc.y0.eq(load.y_offset), self.desc.x0.eq(load.x_offset),
                         self.select.eq(load.buffer), self.bank.eq(load.bank)]
        else:
            m.d.comb += [self.desc.dram_addr.eq(store.dram_offset), self.desc.buf_addr.eq(store.buf_addr),
                         self.bank.eq(store.bank)]
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += [self.idle.eq(1), self.cmd.ready.eq(not self.in_place)]
                if self.descriptors is not None:
                    payload = self.cmd.payload.payload
                    m.d.comb += read.addr.eq(payload.load.desc if is_load else payload.store.desc)
                with m.If(self.cmd.valid):
                    if not self.in_place:
                        m.d.sync += command.eq(self.cmd.payload)
                    m.next = "OFFER" if self.descriptors is not None else "LOOKUP"
            if self.descriptors is None:
                with m.State("LOOKUP"):
                    m.d.comb += [self.active.eq(1), self.lookup.valid.eq(1), self.lookup.payload.eq(index)]
                    with m.If(self.lookup.ready):
                        m.next = "FILL"
                with m.State("FILL"):
                    m.d.comb += self.active.eq(1)
                    with m.If(self.filled):
                        m.next = "OFFER"
            with m.State("OFFER"):
                m.d.comb += [self.active.eq(1), self.desc_valid.eq(1)]
                if self.descriptors is not None:
                    m.d.comb += read.en.eq(0)
                with m.If(self.desc_ready):
                    if self.descriptors is None and not self.params.entry_held:
                        m.d.comb += self.release.eq(1)
                    m.next = "WAIT"
            with m.State("WAIT"):
                m.d.comb += self.active.eq(1)
                if self.descriptors is not None:
                    m.d.comb += read.en.eq(0)
                with m.If(self.done):
                    m.d.comb += self.cmd.ready.eq(self.in_place)
                    if self.params.entry_held:  # the DMA read the entry until now
                        m.d.comb += self.release.eq(1)
                    m.next = "IDLE"
        return m
