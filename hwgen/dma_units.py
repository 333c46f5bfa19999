"""The load and store units: they execute LOAD / STORE instructions from the sequencer's
queues by looking up the instruction's DMA descriptor in the descriptor table (a ROM holding
`Program.descriptors`), filling in the addresses and image origin the instruction carries, and
handing it to the DMA of the target buffer."""
from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from hwgen.dma import Descriptor, DmaParams
from hwgen.isa import INSTRUCTION_LAYOUT, Opcode


def table_params(all_params: list[DmaParams]) -> DmaParams:
    """Parameters whose descriptor layout holds every DMA's descriptors (widest buffer address)."""
    return max(all_params, key=lambda p: p.buf_addr_width)


def descriptor_rom(params: DmaParams, descriptors: list[Descriptor]) -> Memory:
    """The descriptor table: one entry per distinct transfer shape."""
    layout = params.descriptor_layout()
    init = [layout.const(params.encode(d)).as_bits() for d in descriptors] or [0]
    return Memory(shape=layout.size, depth=len(init), init=init)


def assign_descriptor(m: Module, target: data.View, source: data.View) -> None:
    """Copy a descriptor between layouts that differ only in field widths."""
    for name, member in target.shape():
        if isinstance(member.shape, data.ArrayLayout):
            for index in range(member.shape.length):
                assign_descriptor(m, getattr(target, name)[index], getattr(source, name)[index])
        else:
            m.d.comb += getattr(target, name).eq(getattr(source, name))


class TransferUnit(wiring.Component):
    """Executes LOAD (or STORE) commands one at a time.

    `select` is the command's target (the buffer of a LOAD, 0 for a STORE) and `bank` its bank;
    both stay valid while `active`. `desc` is the filled-in descriptor for the DMAs (in the
    table's layout); the unit offers it to the DMA of `select` via `desc_valid` and waits for
    that DMA's `done`.
    """

    def __init__(self, params: DmaParams, descriptors: list[Descriptor], targets: int):
        self.params = params
        self.descriptors = descriptors
        self.targets = targets
        super().__init__({
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
        m.submodules.table = table = descriptor_rom(self.params, self.descriptors)
        read = table.read_port()
        command = Signal(INSTRUCTION_LAYOUT)
        entry = data.View(self.params.descriptor_layout(), read.data)
        load = command.payload.load
        store = command.payload.store
        is_load = command.opcode == Opcode.LOAD

        m.d.comb += [self.desc.eq(entry), self.desc.load.eq(is_load)]
        with m.If(is_load):
            m.d.comb += [self.desc.dram_addr.eq(load.dram_offset), self.desc.buf_addr.eq(load.buf_addr),
                         self.desc.y0.eq(load.y_offset), self.desc.x0.eq(load.x_offset),
                         self.select.eq(load.buffer), self.bank.eq(load.bank)]
        with m.Else():
            m.d.comb += [self.desc.dram_addr.eq(store.dram_offset), self.desc.buf_addr.eq(store.buf_addr),
                         self.bank.eq(store.bank)]
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += [self.idle.eq(1), self.cmd.ready.eq(1),
                             read.addr.eq(self.cmd.payload.payload.load.desc)]
                with m.If(self.cmd.payload.opcode == Opcode.STORE):
                    m.d.comb += read.addr.eq(self.cmd.payload.payload.store.desc)
                with m.If(self.cmd.valid):
                    m.d.sync += command.eq(self.cmd.payload)
                    m.next = "OFFER"
            with m.State("OFFER"):
                m.d.comb += [self.active.eq(1), self.desc_valid.eq(1), read.en.eq(0)]
                with m.If(self.desc_ready):
                    m.next = "WAIT"
            with m.State("WAIT"):
                m.d.comb += [self.active.eq(1), read.en.eq(0)]
                with m.If(self.done):
                    m.next = "IDLE"
        return m
