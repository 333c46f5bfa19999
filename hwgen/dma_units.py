"""The load and store units: they execute LOAD / STORE instructions from the sequencer's
queues by looking up the instruction's DMA descriptor in the descriptor table (a ROM holding
`Program.descriptors`, or the part of the SPRAM program memory after `DESCRIPTOR_BASE`, read
by a `DescriptorReader`), filling in the addresses and image origin the instruction carries,
and handing it to the DMA of the target buffer."""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from hwgen.dma import Descriptor, DmaParams
from hwgen.dma_descriptor import FILLED_FIELDS
from hwgen.buffers import bank_shape
from hwgen.config import AcceleratorConfig
from hwgen.isa import INSTRUCTION_LAYOUT, PAYLOADS, Buffer, Opcode, field_limit
from hwgen.sequencer import DESCRIPTOR_BASE
from hwgen.sequencer_layouts import MEMORY_READ_SIGNATURE
from hwgen.spram import SPRAM_BITS, SPRAM_WORDS


def table_params(all_params: list[DmaParams]) -> DmaParams:
    """Parameters whose descriptor layout holds every DMA's descriptors (widest buffer address)."""
    return max(all_params, key=lambda p: p.buf_addr_width)


def descriptor_rom(params: DmaParams, descriptors: list[Descriptor]) -> Memory:
    """The descriptor table: one entry per distinct transfer shape."""
    layout = params.descriptor_layout()
    init = [layout.const(params.encode(d)).as_bits() for d in descriptors] or [0]
    return Memory(shape=layout.size, depth=len(init), init=init)


LOAD_TARGETS = {Buffer.INPUT: "input", Buffer.WEIGHT: "weight", Buffer.PARAM: "param", Buffer.ACC: "acc"}
DESCRIPTOR_INDEX = unsigned(ceil_log2(field_limit(Opcode.LOAD, "desc") + 1))
"""The `desc` field of LOAD and STORE: an index into the descriptor table."""


COORD_BITS = dict(PAYLOADS[Opcode.LOAD])["y_offset"].shape.width + 2
"""Coordinates of the `pointer` walker: an instruction's origin plus a descriptor's extent (at
most a quarter of the range, `hwgen.dma_descriptor.pointer_dims`)."""


def dma_params(config: AcceleratorConfig, kind: str) -> DmaParams:
    """The DMA parameters of one buffer: its word and depth, the configuration's bus and DRAM
    address width; with `template.dma: shared` the `pointer` walker, counts one bit wider than
    the buffer's byte addresses, `COORD_BITS` coordinates, narrow segment queues and, with
    `template.dma_descriptor: reader`, no copy of the descriptor; `template.dma_loops` outer loops;
    `template.timing_registers`."""
    word, depth = bank_shape(config, kind)
    template = config.template
    compact = {} if template.dma == "separate" else {
        "walker": "pointer", "count_width": ceil_log2(word * depth) + 1, "coord_width": COORD_BITS,
        "narrow_queues": True, "entry_held": template.dma_descriptor == "reader", "outer_dims": template.dma_loops}
    return DmaParams(bus_bytes=config.dram.bus_width_bits // 8, burst_beats=config.dram.burst_beats,
                     buf_word_bytes=word, buf_depth=depth, addr_width=template.dram_address_bits,
                     segment_fifos=template.segment_fifos, timing_registers=template.timing_registers,
                     **compact)


def load_targets(config: AcceleratorConfig) -> dict[Buffer, str]:
    """The buffers a LOAD of `config` may fill: without partial sums (`template.partial_sums:
    none`) not the accumulator buffer."""
    if config.template.partial_sums == "kept":
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
    if config.template.program_memory == "spram":
        bits["desc"] = ceil_log2(descriptor_capacity(table))
    return bits


def entry_halfwords(params: DmaParams) -> int:
    """Halfwords of one descriptor-table entry in the SPRAM program memory."""
    return -(-params.entry_layout().size // SPRAM_BITS)


def descriptor_capacity(params: DmaParams) -> int:
    """Descriptors the SPRAM program memory holds after `DESCRIPTOR_BASE`."""
    return min((SPRAM_WORDS - DESCRIPTOR_BASE) // entry_halfwords(params), field_limit(Opcode.LOAD, "desc") + 1)


def descriptor_halfwords(params: DmaParams, descriptors: list[Descriptor]) -> list[int]:
    """The descriptor table as SPRAM contents from `DESCRIPTOR_BASE`: entry `i` (its
    `entry_layout` bits) at halfwords `i * E .. i * E + E - 1`, least significant first."""
    count = entry_halfwords(params)
    mask = (1 << SPRAM_BITS) - 1
    words = []
    for desc in descriptors:
        bits = params.encode_entry(desc)
        words += [(bits >> (SPRAM_BITS * k)) & mask for k in range(count)]
    return words


class DescriptorReader(wiring.Component):
    """Reads descriptor-table entries from the SPRAM program memory for `clients` transfer
    units, one entry at a time: a client's `lookup` (the entry's index) is taken when the reader
    is free (client 0 first); the entry's halfwords are read through `memory`, and `entry` is
    the client's (`filled[client]` high) until it pulses `release[client]`."""

    def __init__(self, params: DmaParams, clients: int):
        self.params, self.clients = params, clients
        self.halfwords = entry_halfwords(params)
        super().__init__({
            "lookup": In(stream.Signature(DESCRIPTOR_INDEX)).array(clients),
            "release": In(1).array(clients),
            "filled": Out(1).array(clients),
            "entry": Out(params.entry_layout()),
            "memory": Out(MEMORY_READ_SIGNATURE),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        count = self.halfwords
        owner = Signal(range(max(self.clients, 2)))
        index = Signal(ceil_log2(descriptor_capacity(self.params)))  # of the entry being read
        requested = Signal(range(count + 1))
        arrived = Signal(range(count + 1))
        bits = Signal(count * SPRAM_BITS)
        arriving = Signal()
        m.d.sync += arriving.eq(self.memory.grant)
        m.d.comb += self.entry.eq(bits)
        with m.If(arriving):
            m.d.sync += [bits.eq(Cat(bits[SPRAM_BITS:], self.memory.data)), arrived.eq(arrived + 1)]
        # DESCRIPTOR_BASE + index * count + requested as (index * 2**k + requested) - index * (2**k
        # - count) with 2**k >= count: side by side, less shifts and adds (a constant product, kept
        # out of the DSPs), none for a power-of-two `count`; the table lies below the next power
        # of two above DESCRIPTOR_BASE, which is one itself
        k = ceil_log2(count)
        spare = (1 << k) - count
        offset = Cat(requested[:k], index)
        if spare:
            offset = offset - sum(index << bit for bit in range(spare.bit_length()) if spare >> bit & 1)
        assert DESCRIPTOR_BASE & (DESCRIPTOR_BASE - 1) == 0 and descriptor_capacity(self.params) * count <= DESCRIPTOR_BASE
        with m.FSM():
            with m.State("IDLE"):
                for client in reversed(range(self.clients)):  # the last assignment wins: client 0 first
                    lookup = self.lookup[client]
                    with m.If(lookup.valid):
                        m.d.comb += [*[other.ready.eq(0) for other in self.lookup], lookup.ready.eq(1)]
                        m.d.sync += [owner.eq(client), index.eq(lookup.payload), requested.eq(0), arrived.eq(0)]
                        m.next = "READ"
            with m.State("READ"):
                m.d.comb += [self.memory.req.eq(requested != count), self.memory.addr.eq(DESCRIPTOR_BASE | offset)]
                with m.If(self.memory.grant):
                    m.d.sync += requested.eq(requested + 1)
                with m.If(arriving & (arrived == count - 1)):
                    m.next = "HOLD"
            with m.State("HOLD"):
                for client in range(self.clients):
                    with m.If(owner == client):
                        m.d.comb += self.filled[client].eq(1)
                        with m.If(self.release[client]):
                            m.next = "IDLE"
        return m


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


class DmaArbiter(wiring.Component):
    """Lets `clients` transfer units take turns on one DMA (`template.dma: shared`): a client's
    offered descriptor (`desc`, `desc_valid`) goes to the DMA when it is idle, client 0 first;
    `done` goes back to the client whose descriptor the DMA ran (`owner`). With `common_entry`
    the clients' table entries come from one `DescriptorReader`, which holds only the offering
    client's, so only the `FILLED_FIELDS` are selected."""

    def __init__(self, params: DmaParams, clients: int, common_entry: bool = False):
        self.clients, self.common_entry = clients, common_entry
        layout = params.descriptor_layout()
        super().__init__({
            "desc": In(layout).array(clients),
            "desc_valid": In(1).array(clients),
            "desc_ready": Out(1).array(clients),
            "done": Out(1).array(clients),
            "dma_desc": Out(stream.Signature(layout)),
            "dma_done": In(1),
            "owner": Out(range(max(clients, 2))),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        chosen = Signal.like(self.owner)
        payload = self.dma_desc.payload
        if self.common_entry:
            m.d.comb += payload.eq(self.desc[0])
        for client in reversed(range(self.clients)):  # the last assignment wins: client 0 first
            with m.If(self.desc_valid[client]):
                m.d.comb += [chosen.eq(client), self.dma_desc.valid.eq(1)]
                if self.common_entry:
                    m.d.comb += [getattr(payload, name).eq(getattr(self.desc[client], name)) for name in FILLED_FIELDS]
                else:
                    m.d.comb += payload.eq(self.desc[client])
        for client in range(self.clients):
            m.d.comb += [self.desc_ready[client].eq(self.dma_desc.ready & self.desc_valid[client] & (chosen == client)),
                         self.done[client].eq(self.dma_done & (self.owner == client))]
        with m.If(self.dma_desc.valid & self.dma_desc.ready):
            m.d.sync += self.owner.eq(chosen)
        return m
