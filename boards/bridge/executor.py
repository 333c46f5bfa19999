"""The bridge's request executor: a checked request on main memory, the program memory and the
accelerator."""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import ReadPort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from boards.bridge.shared import BridgeFormat, shared_ports
from boards.protocol import REPLY_BYTES, WRITE_ADDRESS, Command
from hwgen.sequencer_layouts import program_write_signature
from hwgen.spram import SPRAM_BITS, SPRAM_WORDS


class RequestExecutor(wiring.Component):
    """States EXECUTE (sets the reply's length; START pulses `start`), COPY_READ and COPY_WRITE
    (WRITE: buffer -> memory, a byte per two cycles), PROGRAM_LOW, PROGRAM_HIGH and
    PROGRAM_WRITE (PROGRAM, `format.program`: buffer -> program memory, a halfword per three
    cycles), SUM, SUM_WAIT and SUM_BITS (CHECKSUM: a memory byte per read into the region CRC,
    a bit per cycle), on to REPLY. WRITE and PROGRAM run `count` over the data bytes in the
    buffer (after the address); their reply is empty. A refused request goes straight to REPLY.

    - `current`, `pending`, `updated`: the shared registers (`boards.bridge.shared`).
    - `command`, `size`, `request_end`: the request (`RequestChecker`); `last`: `count` is at
      the copy's last byte.
    - `request_ready`, `read_valid`, `fetched`: the memory request is accepted; a read's word
      arrives; its byte at the request's address (`MemoryAccess`).
    - `buffer_read`: a read port of the request buffer.
    - `region_crc`: the CHECKSUM's bits into the region CRC (`valid`, `data`).
    - `program`: writes into the program memory (`format.program` only).
    - `start`: starts the accelerator.
    """

    def __init__(self, format: BridgeFormat, address_bits: int, buffer_depth: int):
        self.format = format
        members = {
            **shared_ports(format.shared), "command": In(len(format.commands)), "size": In(address_bits),
            "request_end": In(address_bits + 1), "last": In(1),
            "request_ready": In(1), "read_valid": In(1), "fetched": In(8),
            "buffer_read": In(ReadPort.Signature(addr_width=ceil_log2(buffer_depth), shape=8)),
            "region_crc": Out(wiring.Signature({"valid": Out(1), "data": Out(1)})), "start": Out(1),
        }
        if format.program:
            members["program"] = Out(program_write_signature(SPRAM_WORDS, SPRAM_BITS))
        super().__init__(members)

    def elaborate(self, platform) -> Module:
        m = Module()
        State, current, updated = self.format.State, self.current, self.updated
        count, last = current.count, self.last
        m.d.comb += updated.eq(self.pending)
        # CHECKSUM: `pointer` has reached `request_end`, registered (each byte's fetch comes at
        # least nine cycles before its last bit is summed, where it decides whether to fetch on).
        at_end = Signal()
        m.d.sync += at_end.eq(current.pointer == self.request_end)
        with m.Switch(current.state):
            with m.Case(State.EXECUTE):  # `length` becomes the reply's (empty unless set below)
                self._execute(m)
            with m.Case(State.COPY_READ):
                m.d.comb += [self.buffer_read.addr.eq(count), self.buffer_read.en.eq(1)]
                m.d.comb += [updated.requesting.eq(1), updated.state.eq(State.COPY_WRITE)]
            with m.Case(State.COPY_WRITE):
                with m.If(self.request_ready):  # the request moves `pointer` on
                    m.d.comb += [updated.count.eq(count + 1), updated.state.eq(State.COPY_READ)]
                    with m.If(last):
                        m.d.comb += [updated.length.eq(0), updated.state.eq(State.REPLY)]
            if self.format.program:
                self._program_states(m)
            self._checksum_states(m, at_end)
        return m

    def _execute(self, m: Module) -> None:
        """EXECUTE: on to the request's states, or to REPLY with the reply's length."""
        State, updated, length = self.format.State, self.updated, self.current.length
        is_command = self._is_command
        m.d.comb += [updated.count.eq(0), updated.length.eq(0), updated.state.eq(State.REPLY)]
        with m.If(~self.current.refused):
            with m.If(is_command(Command.READ)):
                m.d.comb += [updated.from_memory.eq(1), updated.length.eq(self.size)]
            with m.Elif(is_command(Command.WRITE)):
                m.d.comb += [updated.count.eq(WRITE_ADDRESS.size), updated.length.eq(length)]  # the copy's end
                m.d.comb += updated.state.eq(State.COPY_READ)
            with m.Elif(is_command(Command.CHECKSUM)):
                m.d.comb += [updated.requesting.eq(1), updated.state.eq(State.SUM)]
            if self.format.program:
                with m.Elif(is_command(Command.PROGRAM)):
                    m.d.comb += [updated.count.eq(WRITE_ADDRESS.size), updated.length.eq(length)]  # the copy's end
                    m.d.comb += updated.state.eq(State.PROGRAM_LOW)
            with m.Else():  # IDENTIFY, STATUS, COUNTERS: the reply's length; START: pulse `start`
                for fixed in (Command.IDENTIFY, Command.STATUS, Command.COUNTERS):
                    with m.If(is_command(fixed)):
                        m.d.comb += updated.length.eq(REPLY_BYTES[fixed])
                with m.If(is_command(Command.START)):
                    m.d.comb += self.start.eq(1)

    def _program_states(self, m: Module) -> None:
        """PROGRAM: `pointer` and `count` step a byte at a time."""
        State, current, updated, buffer_read = self.format.State, self.current, self.updated, self.buffer_read
        pointer, count = current.pointer, current.count
        with m.Case(State.PROGRAM_LOW):
            m.d.comb += [buffer_read.addr.eq(count), buffer_read.en.eq(1)]
            m.d.comb += [updated.pointer.eq(pointer + 1), updated.count.eq(count + 1),
                         updated.state.eq(State.PROGRAM_HIGH)]
        with m.Case(State.PROGRAM_HIGH):
            m.d.comb += [buffer_read.addr.eq(count), buffer_read.en.eq(1)]
            m.d.comb += [updated.out_byte.eq(self.buffer_read.data), updated.state.eq(State.PROGRAM_WRITE)]
        with m.Case(State.PROGRAM_WRITE):
            m.d.comb += [self.program.addr.eq(pointer >> 1), self.program.data.eq(Cat(current.out_byte, self.buffer_read.data)),
                         self.program.en.eq(1)]
            m.d.comb += [updated.pointer.eq(pointer + 1), updated.count.eq(count + 1),
                         updated.state.eq(State.PROGRAM_LOW)]
            with m.If(self.last):
                m.d.comb += [updated.length.eq(0), updated.state.eq(State.REPLY)]

    def _checksum_states(self, m: Module, at_end: Signal) -> None:
        """CHECKSUM: a byte per memory read into `out_byte` (the memory's output goes no further
        in a cycle), then its bits into the CRC, least significant first, to `at_end`."""
        State, current, updated = self.format.State, self.current, self.updated
        bit_index = current.bit_index
        with m.Case(State.SUM):  # waits for the request of the word holding byte `pointer`
            with m.If(self.request_ready):
                m.d.comb += updated.state.eq(State.SUM_WAIT)
        with m.Case(State.SUM_WAIT), m.If(self.read_valid):
            m.d.comb += [updated.out_byte.eq(self.fetched), updated.state.eq(State.SUM_BITS)]
        with m.Case(State.SUM_BITS):
            m.d.comb += [self.region_crc.valid.eq(1), self.region_crc.data.eq(current.out_byte.bit_select(bit_index, 1))]
            m.d.comb += updated.bit_index.eq(bit_index + 1)
            with m.If(bit_index == 7):
                with m.If(at_end):
                    m.d.comb += [updated.length.eq(REPLY_BYTES[Command.CHECKSUM]), updated.state.eq(State.REPLY)]
                with m.Else():
                    m.d.comb += [updated.requesting.eq(1), updated.state.eq(State.SUM)]

    def _is_command(self, *codes: Command):
        return self.format.is_command(self.command, *codes)
