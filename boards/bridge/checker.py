"""The bridge's request checks: whether a received request can be executed."""
from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from boards.bridge.shared import BridgeFormat, shared_ports
from boards.protocol import (CHECKSUM_ALIGNMENT, CHECKSUM_REQUEST, MAX_DATA, MAX_REQUEST_PAYLOAD, READ_REQUEST,
                             WRITE_ADDRESS, Command, Status)


class RequestChecker(wiring.Component):
    """States CHECK (the frame's CRC; the request's range and shape into registers, so that
    VALIDATE's checks stay short) and VALIDATE (the checks, into `status` and `refused`), on to
    EXECUTE; a request with a bad CRC is answered with BAD_CRC at once. Memory addresses run
    up to `memory_bytes`, program memory addresses (`format.program`) up to `program_bytes`.

    - `current`, `pending`, `updated`: the shared registers (`boards.bridge.shared`).
    - `command`, `size_argument`, `wide_address`, `wide_size`: the request (`RequestReceiver`).
    - `crc_match`: the frame CRC has taken the whole frame and it matches.
    - `busy`: the accelerator is running.
    - `size`: the bytes a READ, WRITE, CHECKSUM or PROGRAM covers.
    - `request_end`: the end of its range (registered in CHECK; it stays put while `pointer`
      moves through the range).
    - `start_region_crc`: starts the region CRC for a CHECKSUM.
    """

    def __init__(self, format: BridgeFormat, address_bits: int, memory_bytes: int, program_bytes: int):
        self.format, self.memory_bytes, self.program_bytes = format, memory_bytes, program_bytes
        super().__init__({
            **shared_ports(format.shared), "command": In(len(format.commands)), "size_argument": In(address_bits),
            "wide_address": In(1), "wide_size": In(1), "crc_match": In(1), "busy": In(1),
            "size": Out(address_bits), "request_end": Out(address_bits + 1), "start_region_crc": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        State, current, updated, size = self.format.State, self.current, self.updated, self.size
        is_command = self._is_command
        bits = len(size)
        m.d.comb += updated.eq(self.pending)
        data_bytes = Signal(range(MAX_REQUEST_PAYLOAD + 1))  # WRITE, PROGRAM: the data after the address
        m.d.comb += data_bytes.eq(current.length - WRITE_ADDRESS.size)
        request_wide = Signal()  # `size` is out of range
        with m.If(is_command(Command.READ, Command.CHECKSUM)):
            m.d.comb += [size.eq(self.size_argument), request_wide.eq(self.wide_size)]
        with m.Else():  # WRITE, PROGRAM
            m.d.comb += [size.eq(data_bytes), request_wide.eq(data_bytes[bits:] != 0)]
        # With the range's end, registered in CHECK: whether the size is not 0 and at most
        # `MAX_DATA` (READ); the payload's length does not suit the command (PROGRAM: or its
        # data is not whole halfwords); the range is not aligned (CHECKSUM to
        # `CHECKSUM_ALIGNMENT`, PROGRAM to halfwords).
        narrow, nonempty, small, bad_length, unaligned = Signal(), Signal(), Signal(), Signal(), Signal()
        with m.Switch(current.state):
            with m.Case(State.CHECK):  # the CRC register has taken the last byte
                m.d.sync += [self.request_end.eq(current.pointer + size),
                             narrow.eq(~self.wide_address & ~request_wide), nonempty.eq(size != 0),
                             small.eq(size <= MAX_DATA)]
                self._check_shape(m, bad_length, unaligned)
                m.d.comb += self.start_region_crc.eq(1)  # for a CHECKSUM (VALIDATE's checks stay short)
                with m.If(self.crc_match):
                    m.d.comb += updated.state.eq(State.VALIDATE)
                with m.Else():
                    self.format.refuse(m, updated, Status.BAD_CRC)
            with m.Case(State.VALIDATE):
                m.d.comb += updated.state.eq(State.EXECUTE)
                self._validate(m, narrow, nonempty, small, bad_length, unaligned)
        return m

    def _is_command(self, *codes: Command):
        return self.format.is_command(self.command, *codes)

    def _check_shape(self, m: Module, bad_length: Signal, unaligned: Signal) -> None:
        """Into `bad_length` and `unaligned`: whether the request's payload length does not suit
        its command, and whether its range is not aligned as the command needs."""
        is_command, length, pointer, size = self._is_command, self.current.length, self.current.pointer, self.size
        with m.If(is_command(Command.READ)):
            m.d.sync += bad_length.eq(length != READ_REQUEST.size)
        with m.Elif(is_command(Command.CHECKSUM)):
            m.d.sync += [bad_length.eq(length != CHECKSUM_REQUEST.size),
                         unaligned.eq((pointer | size)[:exact_log2(CHECKSUM_ALIGNMENT)] != 0)]
        with m.Elif(is_command(Command.WRITE)):
            m.d.sync += bad_length.eq(length <= WRITE_ADDRESS.size)
        if self.format.program:
            with m.Elif(is_command(Command.PROGRAM)):
                m.d.sync += [bad_length.eq((length <= WRITE_ADDRESS.size) | size[0]), unaligned.eq(pointer[0])]
        with m.Else():  # IDENTIFY, STATUS, START, COUNTERS
            m.d.sync += bad_length.eq(length != 0)

    def _validate(self, m: Module, narrow, nonempty, small, bad_length, unaligned) -> None:
        """VALIDATE: the request's checks, one chain into `status` and `refused`."""
        is_command, updated, request_end = self._is_command, self.updated, self.request_end
        in_memory = narrow & nonempty & (request_end <= self.memory_bytes)
        in_program = narrow & (request_end <= self.program_bytes)
        program = (Command.PROGRAM,) if self.format.program else ()

        def reject(code: Status) -> None:
            m.d.comb += [updated.status.eq(code), updated.refused.eq(1)]

        with m.If(~is_command(*self.format.commands)):
            reject(Status.BAD_COMMAND)
        with m.Elif(bad_length):  # every command checks its payload's length first
            reject(Status.BAD_LENGTH)
        with m.Elif(is_command(Command.READ) & (~small | ~in_memory)):
            reject(Status.OUT_OF_RANGE)
        with m.Elif(is_command(Command.WRITE, Command.CHECKSUM) & ~in_memory):
            reject(Status.OUT_OF_RANGE)
        with m.Elif(is_command(Command.CHECKSUM, *program) & unaligned):
            reject(Status.UNALIGNED)
        if self.format.program:
            with m.Elif(is_command(Command.PROGRAM) & ~in_program):
                reject(Status.OUT_OF_RANGE)
        with m.Elif(is_command(Command.START, Command.WRITE, *program) & self.busy):
            reject(Status.BUSY)
