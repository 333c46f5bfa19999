"""The descriptor table: the DMA descriptors a program's LOAD and STORE instructions index, in
a ROM (`Program.descriptors`) or in the SPRAM program memory after `DESCRIPTOR_BASE`, read by a
`DescriptorReader`."""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal, unsigned
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from hwgen.dma.descriptor import DmaParams
from hwgen.dma.transfer import Descriptor
from hwgen.isa import Opcode, field_limit
from hwgen.sequencer import DESCRIPTOR_BASE
from hwgen.sequencer_layouts import MEMORY_READ_SIGNATURE
from hwgen.spram_size import SPRAM_BITS, SPRAM_WORDS


def table_params(all_params: list[DmaParams]) -> DmaParams:
    """Parameters whose descriptor layout holds every DMA's descriptors (widest buffer address)."""
    return max(all_params, key=lambda p: p.buf_addr_width)


def descriptor_rom(params: DmaParams, descriptors: list[Descriptor]) -> Memory:
    """The descriptor table: one entry per distinct transfer shape."""
    layout = params.descriptor_layout()
    init = [layout.const(params.encode(d)).as_bits() for d in descriptors] or [0]
    return Memory(shape=layout.size, depth=len(init), init=init)


DESCRIPTOR_INDEX = unsigned(ceil_log2(field_limit(Opcode.LOAD, "desc") + 1))
"""The `desc` field of LOAD and STORE: an index into the descriptor table."""


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
        # out of the DSPs), none for a power-of-two `count`; DESCRIPTOR_BASE is a multiple of the
        # power of two that holds the whole table, so the sum is an OR
        k = ceil_log2(count)
        spare = (1 << k) - count
        offset = Cat(requested[:k], index)
        if spare:
            offset = offset - sum(index << bit for bit in range(spare.bit_length()) if spare >> bit & 1)
        assert DESCRIPTOR_BASE % (1 << ceil_log2(descriptor_capacity(self.params) * count)) == 0
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
