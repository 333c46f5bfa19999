"""The bridge's request receiver: a request frame from the host into the request buffer."""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import WritePort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from boards.bridge.shared import BridgeFormat, shared_ports
from boards.protocol import CHECKSUM_REQUEST, MAX_REQUEST_PAYLOAD, REQUEST_SYNC, WRITE_ADDRESS, Status

ARGUMENT_BYTES = CHECKSUM_REQUEST.size  # the longest fixed part of a request payload


class RequestReceiver(wiring.Component):
    """States SYNC (bytes outside a frame are skipped until a sync byte), HEADER, PAYLOAD and
    CRC, on to CHECK; a request longer than `MAX_REQUEST_PAYLOAD` is skipped (DISCARD) and
    answered with BAD_LENGTH, a frame that stalls with TRUNCATED.

    - `current`, `pending`, `updated`: the shared registers (`boards.bridge.shared`).
    - `byte`, `got`: the byte received, and whether one is (while `receiving`).
    - `timed_out`: the link has been silent too long (`SilenceTimer`).
    - `argument`, `last`: the payload byte `count` is an argument's, the payload's last.
    - `frame_crc`: the frame CRC's inputs (`start`, `valid`, `data`).
    - `buffer_write`: a write port of the request buffer (the payload).
    - `command`: the request's command (one-hot, `BridgeFormat.decode`).
    - `size_argument`: its size argument in the width of memory addresses; `wide_address`,
      `wide_size`: a set bit above that width puts the address or size out of range.
    """

    def __init__(self, format: BridgeFormat, address_bits: int, buffer_depth: int):
        self.format = format
        super().__init__({
            **shared_ports(format.shared), "byte": In(8), "got": In(1), "timed_out": In(1),
            "argument": In(1), "last": In(1),
            "frame_crc": Out(wiring.Signature({"start": Out(1), "valid": Out(1), "data": Out(8)})),
            "buffer_write": In(WritePort.Signature(addr_width=ceil_log2(buffer_depth), shape=8)),
            "command": Out(len(format.commands)), "size_argument": Out(address_bits),
            "wide_address": Out(1), "wide_size": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        State, current, updated = self.format.State, self.current, self.updated
        byte, got, step, length = self.byte, self.got, current.step, current.length
        m.d.comb += updated.eq(self.pending)
        with m.Switch(current.state):
            with m.Case(State.SYNC):
                with m.If(got & (byte == REQUEST_SYNC)):
                    m.d.comb += self.frame_crc.start.eq(1)
                    m.d.comb += [updated.status.eq(Status.OK), updated.refused.eq(0), updated.from_memory.eq(0),
                                 updated.count.eq(0), updated.step.eq(0), updated.state.eq(State.HEADER)]
                    m.d.sync += [self.size_argument.eq(0), self.wide_address.eq(0), self.wide_size.eq(0)]
            with m.Case(State.HEADER):  # `step`: the command, the length's low byte, its high byte
                self._receive(m, State.HEADER)
                new_length = Cat(length[:8], byte)
                with m.If(got):
                    m.d.comb += updated.step.eq(step + 1)
                    with m.Switch(step):
                        with m.Case(0):
                            m.d.sync += self.command.eq(self.format.decode(byte))
                        with m.Case(1):
                            m.d.comb += updated.length[:8].eq(byte)
                        with m.Default():
                            m.d.comb += [updated.length[8:].eq(byte), updated.step.eq(0), updated.state.eq(State.PAYLOAD)]
                            with m.If(new_length > MAX_REQUEST_PAYLOAD):
                                m.d.comb += [updated.status.eq(Status.BAD_LENGTH), updated.state.eq(State.DISCARD)]
                            with m.Elif(new_length == 0):
                                m.d.comb += updated.state.eq(State.CRC)
            with m.Case(State.PAYLOAD):
                self._receive(m, State.PAYLOAD)
                with m.If(got):
                    self._payload_byte(m)
            with m.Case(State.CRC):  # `step`: the CRC's high byte, then its low byte
                self._receive(m, State.CRC)
                with m.If(got):
                    m.d.comb += updated.step.eq(~step[0])
                    with m.If(step[0]):
                        m.d.comb += [updated.receiving.eq(0), updated.state.eq(State.CHECK)]
            with m.Case(State.DISCARD):  # an over-long request: skip it to its end
                with m.If(self.timed_out):
                    m.d.comb += [updated.length.eq(0), updated.receiving.eq(0), updated.state.eq(State.REPLY)]
        return m

    def _receive(self, m: Module, state) -> None:
        """A header, payload or CRC byte: into the CRC, then on; abandon the frame on silence."""
        m.d.comb += [self.frame_crc.valid.eq(self.got), self.frame_crc.data.eq(self.byte)]
        with m.If(self.got):
            m.d.comb += self.updated.state.eq(state)
        with m.Elif(self.timed_out):
            self.format.refuse(m, self.updated, Status.TRUNCATED)

    def _payload_byte(self, m: Module) -> None:
        """A payload byte into the buffer and, among the first `ARGUMENT_BYTES`, into its argument."""
        count, updated = self.current.count, self.updated
        m.d.comb += [self.buffer_write.addr.eq(count), self.buffer_write.data.eq(self.byte), self.buffer_write.en.eq(1)]
        m.d.comb += updated.count.eq(count + 1)
        with m.If(self.argument), m.Switch(count[:exact_log2(ARGUMENT_BYTES)]):
            for index in range(ARGUMENT_BYTES):
                with m.Case(index):
                    if index < WRITE_ADDRESS.size:
                        self._capture(m, updated.pointer, "comb", self.wide_address, index)
                    else:
                        self._capture(m, self.size_argument, "sync", self.wide_size, index - WRITE_ADDRESS.size)
        with m.If(self.last):
            m.d.comb += updated.state.eq(self.format.State.CRC)

    def _capture(self, m: Module, target, domain: str, wide: Signal, index: int) -> None:
        """Byte `index` of a little-endian argument into `target` (a shared register's next value
        in `comb`, a register in `sync`); its bits beyond set `wide`."""
        low = 8 * index
        if low < len(target):
            m.d[domain] += target[low:low + 8].eq(self.byte)
        beyond = self.byte[max(len(target) - low, 0):]
        if len(beyond):
            with m.If(beyond != 0):
                m.d.sync += wide.eq(1)
