"""The bridge's reply sender: a reply frame to the host."""
from __future__ import annotations

import operator
from functools import reduce

from amaranth.hdl import Module, Mux
from amaranth.lib import stream, wiring
from amaranth.lib.memory import ReadPort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from boards.bridge.shared import BridgeFormat, shared_ports
from boards.protocol import MAX_REQUEST_PAYLOAD, REPLY_BYTES, REPLY_SYNC, STATUS_BUSY, STATUS_DONE, Command, Status
from hwgen.sequencer_layouts import COUNTERS_LAYOUT

REPLY_INDEX_BITS = (max(REPLY_BYTES.values()) - 1).bit_length()
INFO_BASE = -(-MAX_REQUEST_PAYLOAD >> REPLY_INDEX_BITS) << REPLY_INDEX_BITS
"""The IDENTIFY reply sits in the request buffer after the payload, from this address (its low
`REPLY_INDEX_BITS` zero: the reply byte's index is the low part of its address)."""


class ReplySender(wiring.Component):
    """States REPLY (the sync byte), REPLY_HEADER, then per payload byte FETCH, its source's
    state (FETCH_WAIT: memory; FETCH_LOCAL and NEXT_CRC_BYTE: the request buffer, the status,
    the counters or the region CRC) and SEND, then REPLY_CRC, back to SYNC. Without
    `queue_counters` only the cycle counter is read from `counters`.

    - `current`, `pending`, `updated`: the shared registers (`boards.bridge.shared`).
    - `command`: the request's command (one-hot); `last`: `count` is at the reply's last byte.
    - `tx`, `sent`: the bytes to the host, and whether one is taken.
    - `frame_crc`: the frame CRC's inputs (`start`, `valid`, `data`) and value (`crc`).
    - `request_ready`, `read_valid`, `fetched`: the memory request is accepted; a read's word
      arrives; its byte at the request's address (`MemoryAccess`).
    - `buffer_read`: a read port of the request buffer (the IDENTIFY reply).
    - `region_crc`: the CHECKSUM's CRC (`low_byte`) and its `shift` to the next byte.
    - `busy`, `done`, `counters`: the accelerator's status and counters.
    - `error`: the reply's status is not OK (set as the reply starts).
    """

    def __init__(self, format: BridgeFormat, buffer_depth: int, queue_counters: bool):
        self.format, self.queue_counters = format, queue_counters
        super().__init__({
            **shared_ports(format.shared), "command": In(len(format.commands)), "last": In(1),
            "tx": Out(stream.Signature(8)), "sent": Out(1),
            "frame_crc": Out(wiring.Signature({"start": Out(1), "valid": Out(1), "data": Out(8), "crc": In(16)})),
            "request_ready": In(1), "read_valid": In(1), "fetched": In(8),
            "buffer_read": In(ReadPort.Signature(addr_width=ceil_log2(buffer_depth), shape=8)),
            "region_crc": Out(wiring.Signature({"shift": Out(1), "low_byte": In(8)})),
            "busy": In(1), "done": In(1), "counters": In(COUNTERS_LAYOUT), "error": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        State, current, updated = self.format.State, self.current, self.updated
        step, length, from_memory = current.step, current.length, current.from_memory
        m.d.comb += [updated.eq(self.pending), self.sent.eq(self.tx.valid & self.tx.ready)]
        with m.Switch(current.state):
            with m.Case(State.REPLY):
                m.d.sync += self.error.eq(current.status != Status.OK)
                self._send(m, REPLY_SYNC, State.REPLY_HEADER, checked=False)
                with m.If(self.sent):
                    m.d.comb += [self.frame_crc.start.eq(1), updated.step.eq(0)]
            with m.Case(State.REPLY_HEADER):  # `step`: the status, the length's low byte, its high byte
                self._send(m, Mux(step[1], length[8:], Mux(step[0], length[:8], current.status)), State.REPLY_HEADER)
                with m.If(self.sent):
                    m.d.comb += updated.step.eq(step + 1)
                    with m.If(step[1]):  # a READ's reply is not empty
                        m.d.comb += [updated.step.eq(0), updated.requesting.eq(from_memory), updated.state.eq(State.FETCH)]
                        with m.If(length == 0):
                            m.d.comb += updated.state.eq(State.REPLY_CRC)
            self._payload_states(m)
            with m.Case(State.REPLY_CRC):  # `step`: the CRC's high byte, then its low byte
                crc = self.frame_crc.crc
                self._send(m, Mux(step[0], crc[:8], crc[8:]), State.REPLY_CRC, checked=False)
                with m.If(self.sent):
                    m.d.comb += updated.step.eq(~step[0])
                    with m.If(step[0]):
                        m.d.comb += [updated.receiving.eq(1), updated.state.eq(State.SYNC)]
        return m

    def _payload_states(self, m: Module) -> None:
        """A payload byte: fetched from memory or the request buffer, or taken from the status,
        the counters or the region CRC (eight cycles bring the CRC's next byte into its
        `low_byte`), then sent."""
        State, current, updated = self.format.State, self.current, self.updated
        count, bit_index, index = current.count, current.bit_index, current.count[:REPLY_INDEX_BITS]
        with m.Case(State.FETCH):
            with m.If(current.from_memory):  # waits for the request of the word holding byte `pointer`
                with m.If(self.request_ready):
                    m.d.comb += updated.state.eq(State.FETCH_WAIT)
            with m.Else():
                m.d.comb += [self.buffer_read.addr.eq(index | INFO_BASE), self.buffer_read.en.eq(1)]
                m.d.comb += updated.state.eq(State.FETCH_LOCAL)
        with m.Case(State.FETCH_LOCAL):
            identify = self.format.is_command(self.command, Command.IDENTIFY)
            m.d.comb += [updated.out_byte.eq(Mux(identify, self.buffer_read.data, self._reply_byte(index))),
                         updated.state.eq(State.NEXT_CRC_BYTE)]
        with m.Case(State.NEXT_CRC_BYTE):  # eight cycles: the CRC's next byte into `low_byte`
            m.d.comb += [self.region_crc.shift.eq(1), updated.bit_index.eq(bit_index + 1)]
            with m.If(bit_index == 7):
                m.d.comb += updated.state.eq(State.SEND)
        with m.Case(State.FETCH_WAIT), m.If(self.read_valid):
            m.d.comb += [updated.out_byte.eq(self.fetched), updated.state.eq(State.SEND)]
        with m.Case(State.SEND):
            self._send(m, current.out_byte, State.FETCH)
            with m.If(self.sent):
                m.d.comb += [updated.count.eq(count + 1), updated.requesting.eq(current.from_memory & ~self.last)]
                with m.If(self.last):
                    m.d.comb += updated.state.eq(State.REPLY_CRC)

    def _send(self, m: Module, value, next_state, checked: bool = True) -> None:
        """`value` to the host (and into the frame CRC if `checked`); once sent, on to `next_state`."""
        m.d.comb += [self.tx.valid.eq(1), self.tx.payload.eq(value)]
        if checked:
            m.d.comb += [self.frame_crc.valid.eq(self.sent), self.frame_crc.data.eq(value)]
        with m.If(self.sent):
            m.d.comb += self.updated.state.eq(next_state)

    def _reply_byte(self, index):
        """Byte `index` of a STATUS, COUNTERS or CHECKSUM reply, read when it is sent: the
        counters only change while the accelerator runs. The STATUS reply is one byte (`index`
        0); a CHECKSUM reply sends the CRC's `low_byte`, which moves on to the next byte after
        each one. Without `queue_counters` the COUNTERS reply is the cycle counter's bytes,
        then zeros (a 4-byte multiplexer)."""
        counters = self.counters.as_value() if self.queue_counters else self.counters.cycles
        select_bits = ceil_log2(len(counters) // 8)
        counter_byte = Mux(index[select_bits:] == 0, counters.word_select(index[:select_bits], 8), 0)
        flags = Mux(self.busy, STATUS_BUSY, 0) | Mux(self.done, STATUS_DONE, 0)
        sources = {Command.STATUS: flags.as_unsigned(), Command.COUNTERS: counter_byte,
                   Command.CHECKSUM: self.region_crc.low_byte}
        return reduce(operator.or_, (value & self.format.is_command(self.command, code).replicate(8)
                                     for code, value in sources.items()))
