"""The bridge's requests to main memory."""
from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from boards.bridge.shared import BridgeFormat, shared_ports
from boards.main_memory import HostPort
from boards.protocol import Command


class MemoryAccess(wiring.Component):
    """A request for the `word_bytes`-byte word holding byte `pointer` while the shared register
    `requesting` is set (a register: the memory's arbitration does not wait for a state's
    decoding): all the requests of a WRITE write, all the others read. An accepted request
    clears `requesting` and moves `pointer` on to the next byte, whatever the state: only the
    states that wait for acceptance request, so its enable need not decode them.

    - `current`, `pending`, `updated`: the shared registers (`boards.bridge.shared`).
    - `command`: the request's command (one-hot).
    - `write_data`: the byte a WRITE writes.
    - `memory`: the main memory's host port.
    - `fetched`: the byte at `pointer` of the word a read returns (on `memory.rd_valid`).
    """

    def __init__(self, format: BridgeFormat, word_bytes: int):
        self.format, self.word_bytes = format, word_bytes
        super().__init__({
            **shared_ports(format.shared), "command": In(len(format.commands)), "write_data": In(8),
            "memory": Out(HostPort(word_bytes)), "fetched": Out(8),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        current, updated, memory = self.current, self.updated, self.memory
        m.d.comb += updated.eq(self.pending)
        m.d.comb += [memory.req.valid.eq(current.requesting), memory.req.payload.addr.eq(current.pointer),
                     memory.req.payload.data.eq(self.write_data),
                     memory.req.payload.write.eq(self.format.is_command(self.command, Command.WRITE))]
        fetch_lane = Signal(range(self.word_bytes))  # the byte of the word requested last
        with m.If(current.requesting & memory.req.ready):
            m.d.comb += updated.requesting.eq(0)
            m.d.sync += fetch_lane.eq(current.pointer[:exact_log2(self.word_bytes)])
            m.d.comb += updated.pointer.eq(current.pointer + 1)
        m.d.comb += self.fetched.eq(memory.rd_data.word_select(fetch_lane, 8))
        return m
