"""The gateware side of the host protocol (`boards.protocol`): receives request frames from the
UART, checks their CRC, executes them on main memory and the accelerator, and sends one reply
frame per request.

A request's header (command and length) is checked by its own CRC before the length is used,
then the request is buffered whole (payload up to `MAX_REQUEST_PAYLOAD` bytes) and executed
only when the frame's CRC matches, so a corrupted WRITE never touches memory and a corrupted
length never passes as another request. One CRC unit runs over the whole frame: after the
header's CRC bytes its register holds the residue, and the frame's CRC continues from there. Bytes outside a frame are skipped
until a sync byte; a frame that stalls for `FRAME_GAP_BYTE_TIMES` byte times is answered with
TRUNCATED.
"""
from __future__ import annotations

import operator
from functools import reduce

from amaranth.hdl import Cat, Module, Mux, Signal, Value, ValueLike
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from boards.main_memory import HostPort
from boards.protocol import (CHECKSUM_ALIGNMENT, CHECKSUM_REQUEST, FRAME_CRC, MAX_DATA, MAX_REQUEST_PAYLOAD,
                             READ_REQUEST, REGION_CRC, REPLY_BYTES, REPLY_SYNC, REQUEST_SYNC, STATUS_BUSY, STATUS_DONE,
                             WRITE_ADDRESS, Command, DeviceInfo, Status)
from hwgen.buffers import block_ram, block_ram_read_port
from hwgen.sequencer_layouts import COUNTERS_LAYOUT, program_write_signature
from hwgen.spram_size import SPRAM_BITS, SPRAM_WORDS

ARGUMENT_BYTES = CHECKSUM_REQUEST.size  # the longest fixed part of a request payload
REPLY_INDEX_BITS = (max(REPLY_BYTES.values()) - 1).bit_length()
PAYLOAD_RANGE = range(MAX_REQUEST_PAYLOAD + 1)  # a payload's length, or a count of its bytes
INFO_BASE = -(-MAX_REQUEST_PAYLOAD >> REPLY_INDEX_BITS) << REPLY_INDEX_BITS
"""The IDENTIFY reply sits in the request buffer after the payload, from this address (its low
`REPLY_INDEX_BITS` zero: the reply byte's index is the low part of its address)."""


class SerialRegionCrc(wiring.Component):
    """`REGION_CRC` a bit per cycle, each byte least significant bit first (the CRC is
    bit-reflected: its register shifts right): `start` sets the initial value, `valid` takes
    `data`. `low_byte` is the CRC's least significant byte; `shift` moves the register a bit
    right (feeding it its own low bit: no feedback), so eight shifts bring the CRC's next byte
    into `low_byte`. About a quarter of the logic of a byte-wide CRC, and no byte multiplexer
    to send it."""

    def __init__(self):
        super().__init__({"start": In(1), "valid": In(1), "data": In(1), "shift": In(1), "low_byte": Out(8)})

    def elaborate(self, platform) -> Module:
        m = Module()
        algorithm = REGION_CRC.algorithm
        assert algorithm.reflect_input and algorithm.reflect_output
        width = algorithm.crc_width
        polynomial = int(f"{algorithm.polynomial:0{width}b}"[::-1], 2)  # bit-reflected
        register = Signal(width, init=algorithm.initial_crc)
        feedback = self.valid & (register[0] ^ self.data)
        with m.If(self.start):
            m.d.sync += register.eq(algorithm.initial_crc)
        with m.Elif(self.valid | self.shift):
            m.d.sync += register.eq((register >> 1) ^ Mux(feedback, polynomial, 0))
        m.d.comb += self.low_byte.eq(register[:8] ^ (algorithm.xor_output & 0xFF))
        return m


class _Request:
    """What the phases of `Bridge`'s one FSM share, in module `m`: the request's registers and
    checks, the handshakes with the UART and memory, and the helpers the states drive them with.
    Signals created together in one tuple assignment go through locals: Amaranth names only the
    last of such a tuple (the others are `$signal`), and the netlist keeps the names it had."""

    def __init__(self, m: Module, bridge: Bridge):
        self.m = m
        self._units(bridge.info, bridge.checksum)
        self._registers(bridge)
        self._silence_timer(bridge.gap_cycles)
        self._handshakes(bridge)
        self._range_checks(bridge.info.memory_bytes)

    def _units(self, info: DeviceInfo, checksum: bool) -> None:
        """The frame CRC unit, the region CRC unit (with `checksum`) and the request buffer (the
        IDENTIFY reply after it)."""
        m = self.m
        # One frame CRC unit: requests and replies never overlap.
        m.submodules.frame_crc = self.frame_crc = FRAME_CRC.create()
        self.region_crc = None
        if checksum:
            m.submodules.region_crc = self.region_crc = SerialRegionCrc()
        packed = info.pack()
        # Its reads and writes never meet (`block_ram`).
        m.submodules.buffer = buffer = block_ram(8, INFO_BASE + len(packed), [0] * INFO_BASE + list(packed))
        self.buffer_write, self.buffer_read = buffer.write_port(), block_ram_read_port(m, buffer, "buffer")

    def _registers(self, bridge: Bridge) -> None:
        """The request's command, length, arguments and progress; the reply's status and bytes."""
        m = self.m
        self.program_bytes = SPRAM_WORDS * SPRAM_BITS // 8 if "program" in bridge.signature.members else 0
        span = range(max(bridge.info.memory_bytes, self.program_bytes) + 1)  # memory addresses and their ends
        # The request's command, decoded when received: a bit per command served (none: unknown).
        self.commands = [code for code in Command if (code != Command.PROGRAM or self.program_bytes)
                         and (code != Command.CHECKSUM or bridge.checksum)]
        self.command = Signal(len(self.commands))
        self.length = Signal(PAYLOAD_RANGE)  # the request's payload bytes; from EXECUTE on, the reply's
        self.count = Signal(PAYLOAD_RANGE)   # payload bytes received / copied; reply bytes sent
        # The last payload byte of the request or the reply (or data byte of a copy), registered:
        # `count` and `length` change at least a cycle before every use (bytes come at most one
        # per ten bit times, a copy reads the buffer between writes, a reply fetches between sends).
        self.last = Signal()
        m.d.sync += self.last.eq(self.count + 1 == self.length)
        self.argument = Signal()             # likewise: the payload byte `count` is an argument's
        m.d.sync += self.argument.eq(self.count < ARGUMENT_BYTES)
        self.pointer = Signal(span)          # the address argument, then the next memory access
        # The size argument in the width of memory addresses; a set bit above the width puts an
        # argument out of range.
        self.size_argument = Signal(len(self.pointer))
        wide_address, wide_size = Signal(), Signal()
        self.wide_address, self.wide_size = wide_address, wide_size
        self.status = Signal(8)
        self.refused = Signal()              # VALIDATE has refused the request (`status` says why)
        self.from_memory = Signal()          # READ: the reply payload comes from memory
        self.out_byte = Signal(8)            # the next reply byte; CHECKSUM: the byte read last; PROGRAM: the low byte
        # CHECKSUM: the bit of `out_byte` going into the region CRC; reply: its shifts.
        self.bit_index = Signal(3)
        self.fetch_lane = Signal(range(bridge.word_bytes))  # READ, CHECKSUM: the byte of the fetched word
        self.step = Signal(2)                # the byte of a frame's header or CRC being received or sent
        self.header_checked = Signal()       # the request's header CRC matched (its second CRC is the frame's)

    def _silence_timer(self, gap_cycles: int) -> None:
        """The prescaler and `gap`, the count of its ticks since a byte received or sent."""
        m = self.m
        # Silence: counts the ticks of a free-running prescaler up from `gap_start` to its top
        # bit, `gap_cycles` cycles after a byte received or sent (within a tick; a reply's bytes
        # restart it too: no request is received meanwhile). Two short carry chains: one
        # over all the bits does not reach 33 MHz on the UP5K.
        tick_bits = gap_cycles.bit_length() // 2
        self.prescaler = Signal(tick_bits)
        m.d.sync += self.prescaler.eq(self.prescaler + 1)
        ticks = -(-gap_cycles >> tick_bits)
        gap_bits = ticks.bit_length()
        self.gap_start = (1 << gap_bits) - ticks
        self.gap = Signal(gap_bits + 1, init=1 << gap_bits)

    def _handshakes(self, bridge: Bridge) -> None:
        """Bytes from and to the UART, memory requests and the count of the silence timer."""
        m = self.m
        rx, tx, memory = bridge.rx, bridge.tx, bridge.memory
        self.tx, self.memory = tx, memory
        self.byte = rx.payload
        # Bytes are taken from SYNC to the end of the request (CRC, DISCARD or a refusal), in a
        # register: `rx.ready` and `got` do not wait for the state's decoding.
        self.receiving = Signal(init=1)
        m.d.comb += rx.ready.eq(self.receiving)
        self.got = rx.valid & self.receiving
        # A memory request, registered: it is set on entering the state that waits for its
        # acceptance (the memory's arbitration does not wait for the state's decoding). All the
        # requests of a WRITE write, all the others read.
        self.requesting = Signal()
        m.d.comb += [memory.req.valid.eq(self.requesting), memory.req.payload.addr.eq(self.pointer),
                     memory.req.payload.data.eq(self.buffer_read.data),
                     memory.req.payload.write.eq(self.is_command(Command.WRITE))]
        # An accepted request moves `pointer` on to the next byte whatever the state: only the
        # states that wait for acceptance request, so its enable need not decode them.
        with m.If(self.requesting & memory.req.ready):
            m.d.sync += [self.requesting.eq(0), self.fetch_lane.eq(self.pointer[:exact_log2(bridge.word_bytes)]),
                         self.pointer.eq(self.pointer + 1)]
        self.sent = tx.valid & tx.ready
        self.timed_out = self.gap[-1]
        m.d.comb += bridge.link_active.eq(~self.timed_out)
        with m.If(self.got | self.sent):
            m.d.sync += self.gap.eq(self.gap_start)
        with m.Elif(self.prescaler.all() & ~self.timed_out):
            m.d.sync += self.gap.eq(self.gap + 1)
        self.fetched = memory.rd_data.word_select(self.fetch_lane, 8)  # the requested byte of the word read

    def _range_checks(self, memory_bytes: int) -> None:
        """The range a READ, WRITE, CHECKSUM or PROGRAM covers and the checks on it."""
        m = self.m
        bits = len(self.pointer)
        data_bytes = Signal(PAYLOAD_RANGE)  # WRITE, PROGRAM: the data after the address
        m.d.comb += data_bytes.eq(self.length - WRITE_ADDRESS.size)
        size, request_wide = Signal(bits), Signal()  # bytes a READ, WRITE, CHECKSUM or PROGRAM covers
        with m.If(self.is_command(Command.READ, Command.CHECKSUM)):
            m.d.comb += [size.eq(self.size_argument), request_wide.eq(self.wide_size)]
        with m.Else():  # WRITE, PROGRAM
            m.d.comb += [size.eq(data_bytes), request_wide.eq(data_bytes[bits:] != 0)]
        # The end of the range, registered in CHECK (EXECUTE's checks stay short); it stays put
        # while `pointer` moves through the range.
        # With it, whether the size is not 0 and at most `MAX_DATA` (READ).
        request_end, narrow, nonempty, small = Signal(bits + 1), Signal(), Signal(), Signal()
        # Also registered in CHECK: the payload's length does not suit the command (PROGRAM:
        # or its data is not whole halfwords); the range is not aligned (CHECKSUM to
        # `CHECKSUM_ALIGNMENT`, PROGRAM to halfwords).
        bad_length, unaligned = Signal(), Signal()
        self.in_memory = narrow & nonempty & (request_end <= memory_bytes)
        self.in_program = narrow & (request_end <= self.program_bytes)
        # CHECKSUM: `pointer` has reached `request_end`, registered (each byte's fetch comes at
        # least nine cycles before its last bit is summed, where it decides whether to fetch on).
        self.at_end = Signal()
        if self.region_crc is not None:
            m.d.sync += self.at_end.eq(self.pointer == request_end)
        self.size, self.request_wide = size, request_wide
        self.request_end, self.narrow, self.nonempty, self.small = request_end, narrow, nonempty, small
        self.bad_length, self.unaligned = bad_length, unaligned

    def is_command(self, *codes: Command) -> Value:
        """Whether the request's command is one of `codes` (never one this bridge does not serve)."""
        return Cat(self.command[self.commands.index(code)] for code in codes if code in self.commands).any()

    def refuse(self, code: Status) -> None:
        """Before VALIDATE: refuse the request with an empty reply of status `code` at once."""
        self.m.d.sync += [self.status.eq(code), self.length.eq(0), self.receiving.eq(0)]
        self.m.next = "REPLY"

    def reject(self, code: Status) -> None:
        """VALIDATE: refuse the request (EXECUTE replies `code`)."""
        self.m.d.sync += [self.status.eq(code), self.refused.eq(1)]

    def reply(self, length_value: ValueLike) -> None:
        """A reply of `length_value` payload bytes."""
        self.m.d.sync += self.length.eq(length_value)

    def receive(self, next_state: str) -> None:
        """A header, payload or CRC byte: into the CRC, then on; abandon the frame on silence."""
        m = self.m
        m.d.comb += [self.frame_crc.valid.eq(self.got), self.frame_crc.data.eq(self.byte)]
        with m.If(self.got):
            m.next = next_state
        with m.Elif(self.timed_out):
            self.refuse(Status.TRUNCATED)

    def send(self, value: ValueLike, next_state: str, checked: bool = True) -> None:
        """A reply byte: out to the UART (and into the CRC if `checked`), then on."""
        m = self.m
        m.d.comb += [self.tx.valid.eq(1), self.tx.payload.eq(value)]
        if checked:
            m.d.comb += [self.frame_crc.valid.eq(self.sent), self.frame_crc.data.eq(value)]
        with m.If(self.sent):
            m.next = next_state

    def fetch(self, next_state: str) -> None:
        """Wait for the request of the word holding byte `pointer` (it moves `pointer` on)."""
        with self.m.If(self.memory.req.ready):
            self.m.next = next_state


class Bridge(wiring.Component):
    """Serves the host protocol for a device described by `info` (memory size, clock, build id)
    on a memory of `word_bytes`-byte words. `gap_cycles`: clock cycles of silence (give or take
    the square root of it) that abandon a partly received request; `link_active` is high until
    that long after a byte received or sent (low from reset). `error` is high from a refused
    request until the next request is served. With `program_memory`, PROGRAM requests write
    halfwords into the accelerator's program memory through `program` (`SPRAM_WORDS`
    halfwords). Without `checksum`, CHECKSUM is refused as an unknown command (a device whose
    constants are not in main memory has nothing to check). Without `queue_counters` only
    the cycle counter is read from `counters`; COUNTERS replies 0 for the per-queue counters.

    One FSM serves the requests in three phases: receive (`_receive_states`), execute
    (`_execute_states`) and reply (`_reply_states`), on the registers of a `_Request`."""

    def __init__(self, info: DeviceInfo, gap_cycles: int, word_bytes: int, *, program_memory: bool = False,
                 queue_counters: bool = True, checksum: bool = True):
        if CHECKSUM_ALIGNMENT % word_bytes:
            raise ValueError(f"a {word_bytes}-byte memory word does not divide CHECKSUM_ALIGNMENT")
        self.info = info
        self.gap_cycles = gap_cycles
        self.word_bytes = word_bytes
        self.queue_counters = queue_counters
        self.checksum = checksum
        members = {
            "rx": In(stream.Signature(8)), "tx": Out(stream.Signature(8)),
            "memory": Out(HostPort(word_bytes)),
            "start": Out(1), "busy": In(1), "done": In(1), "counters": In(COUNTERS_LAYOUT),
            "error": Out(1), "link_active": Out(1),
        }
        if program_memory:
            members["program"] = Out(program_write_signature(SPRAM_WORDS, SPRAM_BITS))
        super().__init__(members)

    def elaborate(self, platform) -> Module:
        """One FSM: receive a request, execute it, reply."""
        m = Module()
        r = _Request(m, self)
        with m.FSM():
            self._receive_states(m, r)
            self._execute_states(m, r)
            self._reply_states(m, r)
        return m

    def _receive_states(self, m: Module, r: _Request) -> None:
        """SYNC to CHECK: a request frame into the buffer and registers, its CRC checked."""
        with m.State("SYNC"):
            with m.If(r.got & (r.byte == REQUEST_SYNC)):
                m.d.comb += r.frame_crc.start.eq(1)
                m.d.sync += [r.status.eq(Status.OK), r.refused.eq(0), r.from_memory.eq(0), r.count.eq(0),
                             r.size_argument.eq(0), r.wide_address.eq(0), r.wide_size.eq(0), r.step.eq(0),
                             r.header_checked.eq(0)]
                m.next = "HEADER"
        with m.State("HEADER"):  # `step`: the command, the length's low byte, its high byte
            r.receive("HEADER")
            with m.If(r.got):
                m.d.sync += r.step.eq(r.step + 1)
                with m.Switch(r.step):
                    with m.Case(0):
                        m.d.sync += r.command.eq(Cat(r.byte == code for code in r.commands))
                    with m.Case(1):
                        m.d.sync += r.length[:8].eq(r.byte)
                    with m.Default():  # the header's CRC follows: nothing acts on the length before it
                        m.d.sync += [r.length[8:].eq(r.byte), r.step.eq(0)]
                        m.next = "CRC"
        with m.State("PAYLOAD"):
            r.receive("PAYLOAD")
            with m.If(r.got):
                m.d.comb += [r.buffer_write.addr.eq(r.count), r.buffer_write.data.eq(r.byte), r.buffer_write.en.eq(1)]
                m.d.sync += r.count.eq(r.count + 1)
                with m.If(r.argument), m.Switch(r.count[:exact_log2(ARGUMENT_BYTES)]):
                    for index in range(ARGUMENT_BYTES):
                        with m.Case(index):
                            if index < WRITE_ADDRESS.size:
                                self._capture(m, r.pointer, r.wide_address, index, r.byte)
                            else:
                                self._capture(m, r.size_argument, r.wide_size, index - WRITE_ADDRESS.size, r.byte)
                with m.If(r.last):
                    m.next = "CRC"
        with m.State("CRC"):  # `step`: the CRC's high byte, then its low byte (the header's, then the frame's)
            r.receive("CRC")
            with m.If(r.got):
                m.d.sync += r.step.eq(~r.step[0])
                with m.If(r.step[0]):
                    m.d.sync += r.receiving.eq(~r.header_checked)
                    m.next = "CHECK"
        with m.State("DISCARD"):  # an over-long request: skip it to its end
            with m.If(r.timed_out):
                m.d.sync += [r.length.eq(0), r.receiving.eq(0)]
                m.next = "REPLY"
        with m.State("CHECK"):  # the CRC register has taken the last byte of the header or of the frame
            m.d.sync += [r.request_end.eq(r.pointer + r.size), r.narrow.eq(~r.wide_address & ~r.request_wide),
                         r.nonempty.eq(r.size != 0), r.small.eq(r.size <= MAX_DATA)]
            self._check_shape(m, r)
            if r.region_crc is not None:
                m.d.comb += r.region_crc.start.eq(1)  # for a CHECKSUM (VALIDATE's checks stay short)
            with m.If(~r.frame_crc.match_detected):  # a bad header: skip the frame to its end
                m.d.sync += r.status.eq(Status.BAD_CRC)
                m.next = "DISCARD"
                with m.If(r.header_checked):
                    r.refuse(Status.BAD_CRC)
            with m.Elif(r.header_checked):
                m.next = "VALIDATE"
            with m.Else():  # the header is sound: its length may be trusted
                m.d.sync += r.header_checked.eq(1)
                m.next = "PAYLOAD"
                with m.If(r.length > MAX_REQUEST_PAYLOAD):
                    m.d.sync += r.status.eq(Status.BAD_LENGTH)
                    m.next = "DISCARD"
                with m.Elif(r.length == 0):
                    m.next = "CRC"

    def _execute_states(self, m: Module, r: _Request) -> None:
        """VALIDATE and EXECUTE, then the states of the requests that take more than a cycle."""
        with m.State("VALIDATE"):  # the request's checks, into `status` and `refused`
            m.next = "EXECUTE"
            program = (Command.PROGRAM,) if r.program_bytes else ()
            with m.If(~r.is_command(*r.commands)):
                r.reject(Status.BAD_COMMAND)
            with m.Elif(r.bad_length):  # every command checks its payload's length first
                r.reject(Status.BAD_LENGTH)
            with m.Elif(r.is_command(Command.READ) & (~r.small | ~r.in_memory)):
                r.reject(Status.OUT_OF_RANGE)
            with m.Elif(r.is_command(Command.WRITE, Command.CHECKSUM) & ~r.in_memory):
                r.reject(Status.OUT_OF_RANGE)
            with m.Elif(r.is_command(Command.CHECKSUM, *program) & r.unaligned):
                r.reject(Status.UNALIGNED)
            if r.program_bytes:
                with m.Elif(r.is_command(Command.PROGRAM) & ~r.in_program):
                    r.reject(Status.OUT_OF_RANGE)
            with m.Elif(r.is_command(Command.START, Command.WRITE, *program) & self.busy):
                r.reject(Status.BUSY)

        with m.State("EXECUTE"):  # `length` becomes the reply's (empty unless set below)
            m.d.sync += [r.count.eq(0), r.length.eq(0)]
            m.next = "REPLY"
            with m.If(~r.refused):
                with m.If(r.is_command(Command.READ)):
                    m.d.sync += r.from_memory.eq(1)
                    r.reply(r.size)
                with m.Elif(r.is_command(Command.WRITE)):
                    m.d.sync += [r.count.eq(WRITE_ADDRESS.size), r.length.eq(r.length)]  # the copy's end
                    m.next = "COPY_READ"
                if r.region_crc is not None:
                    with m.Elif(r.is_command(Command.CHECKSUM)):
                        m.d.sync += r.requesting.eq(1)
                        m.next = "SUM"
                if r.program_bytes:
                    with m.Elif(r.is_command(Command.PROGRAM)):
                        m.d.sync += [r.count.eq(WRITE_ADDRESS.size), r.length.eq(r.length)]  # the copy's end
                        m.next = "PROGRAM_LOW"
                with m.Else():
                    self._execute_without_arguments(m, r)

        self._copy_states(m, r)
        if r.region_crc is not None:
            self._checksum_states(m, r)

    def _copy_states(self, m: Module, r: _Request) -> None:
        """WRITE: COPY_READ, COPY_WRITE; PROGRAM: PROGRAM_LOW, PROGRAM_HIGH, PROGRAM_WRITE."""
        # WRITE, PROGRAM: `count` runs over the data bytes in the buffer (after the address);
        # the reply is empty.
        with m.State("COPY_READ"):  # WRITE: buffer -> memory, one byte per two cycles
            m.d.comb += [r.buffer_read.addr.eq(r.count), r.buffer_read.en.eq(1)]
            m.d.sync += r.requesting.eq(1)
            m.next = "COPY_WRITE"
        with m.State("COPY_WRITE"):  # the byte read holds while the memory stalls the request
            m.d.comb += r.buffer_read.en.eq(0)
            with m.If(self.memory.req.ready):  # the request moves `pointer` on
                m.d.sync += r.count.eq(r.count + 1)
                m.next = "COPY_READ"
                with m.If(r.last):
                    m.d.sync += r.length.eq(0)
                    m.next = "REPLY"

        if r.program_bytes:
            # PROGRAM: buffer -> program memory, a halfword per three cycles; `pointer` and
            # `count` step a byte at a time.
            with m.State("PROGRAM_LOW"):
                m.d.comb += [r.buffer_read.addr.eq(r.count), r.buffer_read.en.eq(1)]
                m.d.sync += [r.pointer.eq(r.pointer + 1), r.count.eq(r.count + 1)]
                m.next = "PROGRAM_HIGH"
            with m.State("PROGRAM_HIGH"):
                m.d.comb += [r.buffer_read.addr.eq(r.count), r.buffer_read.en.eq(1)]
                m.d.sync += r.out_byte.eq(r.buffer_read.data)
                m.next = "PROGRAM_WRITE"
            with m.State("PROGRAM_WRITE"):
                m.d.comb += [self.program.addr.eq(r.pointer >> 1),
                             self.program.data.eq(Cat(r.out_byte, r.buffer_read.data)), self.program.en.eq(1)]
                m.d.sync += [r.pointer.eq(r.pointer + 1), r.count.eq(r.count + 1)]
                m.next = "PROGRAM_LOW"
                with m.If(r.last):
                    m.d.sync += r.length.eq(0)
                    m.next = "REPLY"

    def _checksum_states(self, m: Module, r: _Request) -> None:
        """CHECKSUM: SUM, SUM_WAIT, SUM_BITS over the range, then the reply."""
        # CHECKSUM: a byte per memory read into `out_byte` (the memory's output goes no
        # further in a cycle), then its bits into the CRC, least significant first.
        with m.State("SUM"):
            r.fetch("SUM_WAIT")
        with m.State("SUM_WAIT"), m.If(self.memory.rd_valid):
            m.d.sync += r.out_byte.eq(r.fetched)
            m.next = "SUM_BITS"
        with m.State("SUM_BITS"):
            m.d.comb += [r.region_crc.valid.eq(1), r.region_crc.data.eq(r.out_byte.bit_select(r.bit_index, 1))]
            m.d.sync += r.bit_index.eq(r.bit_index + 1)
            with m.If(r.bit_index == 7):
                with m.If(r.at_end):
                    r.reply(REPLY_BYTES[Command.CHECKSUM])
                    m.next = "REPLY"
                with m.Else():
                    m.d.sync += r.requesting.eq(1)
                    m.next = "SUM"

    def _reply_states(self, m: Module, r: _Request) -> None:
        """REPLY to REPLY_CRC: the reply frame, its payload from memory, registers or the buffer."""
        with m.State("REPLY"):
            m.d.sync += self.error.eq(r.status != Status.OK)
            r.send(REPLY_SYNC, "REPLY_HEADER", checked=False)
            with m.If(r.sent):
                m.d.comb += r.frame_crc.start.eq(1)
                m.d.sync += r.step.eq(0)
        with m.State("REPLY_HEADER"):  # `step`: the status, the length's low byte, its high byte
            r.send(Mux(r.step[1], r.length[8:], Mux(r.step[0], r.length[:8], r.status)), "REPLY_HEADER")
            with m.If(r.sent):
                m.d.sync += r.step.eq(r.step + 1)
                with m.If(r.step[1]):
                    m.d.sync += [r.step.eq(0), r.requesting.eq(r.from_memory)]  # a READ's reply is not empty
                    m.next = "FETCH"
                    with m.If(r.length == 0):
                        m.next = "REPLY_CRC"
        with m.State("FETCH"):
            with m.If(r.from_memory):
                r.fetch("FETCH_WAIT")
            with m.Else():
                m.d.comb += [r.buffer_read.addr.eq(r.count[:REPLY_INDEX_BITS] | INFO_BASE), r.buffer_read.en.eq(1)]
                m.next = "FETCH_LOCAL"
        with m.State("FETCH_LOCAL"):
            local = self._reply_byte(r.is_command, r.count[:REPLY_INDEX_BITS], r.region_crc)
            m.d.sync += r.out_byte.eq(Mux(r.is_command(Command.IDENTIFY), r.buffer_read.data, local))
            m.next = "SEND" if r.region_crc is None else "NEXT_CRC_BYTE"
        if r.region_crc is not None:
            with m.State("NEXT_CRC_BYTE"):  # eight cycles: the CRC's next byte into `low_byte`
                m.d.comb += r.region_crc.shift.eq(1)
                m.d.sync += r.bit_index.eq(r.bit_index + 1)
                with m.If(r.bit_index == 7):
                    m.next = "SEND"
        with m.State("FETCH_WAIT"), m.If(self.memory.rd_valid):
            m.d.sync += r.out_byte.eq(r.fetched)
            m.next = "SEND"
        with m.State("SEND"):
            r.send(r.out_byte, "FETCH")
            with m.If(r.sent):
                m.d.sync += [r.count.eq(r.count + 1), r.requesting.eq(r.from_memory & ~r.last)]
                with m.If(r.last):
                    m.next = "REPLY_CRC"
        with m.State("REPLY_CRC"):  # `step`: the CRC's high byte, then its low byte
            r.send(Mux(r.step[0], r.frame_crc.crc[:8], r.frame_crc.crc[8:]), "REPLY_CRC", checked=False)
            with m.If(r.sent):
                m.d.sync += r.step.eq(~r.step[0])
                with m.If(r.step[0]):
                    m.d.sync += r.receiving.eq(1)
                    m.next = "SYNC"

    @staticmethod
    def _capture(m: Module, target: Signal, wide: Signal, index: int, byte) -> None:
        """Byte `index` of a little-endian argument into `target`; its bits beyond set `wide`."""
        low = 8 * index
        if low < len(target):
            m.d.sync += target[low:low + 8].eq(byte)
        beyond = byte[max(len(target) - low, 0):]
        if len(beyond):
            with m.If(beyond != 0):
                m.d.sync += wide.eq(1)

    @staticmethod
    def _check_shape(m: Module, r: _Request) -> None:
        """Into `bad_length` and `unaligned`: whether the request's payload length does not suit
        its command, and whether its range is not aligned as the command needs."""
        with m.If(r.is_command(Command.READ)):
            m.d.sync += r.bad_length.eq(r.length != READ_REQUEST.size)
        with m.Elif(r.is_command(Command.CHECKSUM)):
            m.d.sync += [r.bad_length.eq(r.length != CHECKSUM_REQUEST.size),
                         r.unaligned.eq((r.pointer | r.size)[:exact_log2(CHECKSUM_ALIGNMENT)] != 0)]
        with m.Elif(r.is_command(Command.WRITE)):
            m.d.sync += r.bad_length.eq(r.length <= WRITE_ADDRESS.size)
        if r.program_bytes:
            with m.Elif(r.is_command(Command.PROGRAM)):
                m.d.sync += [r.bad_length.eq((r.length <= WRITE_ADDRESS.size) | r.size[0]),
                             r.unaligned.eq(r.pointer[0])]
        with m.Else():  # IDENTIFY, STATUS, START, COUNTERS
            m.d.sync += r.bad_length.eq(r.length != 0)

    def _execute_without_arguments(self, m: Module, r: _Request) -> None:
        """IDENTIFY, STATUS, COUNTERS: set the reply length; START: pulse `start`."""
        for fixed in (Command.IDENTIFY, Command.STATUS, Command.COUNTERS):
            with m.If(r.is_command(fixed)):
                r.reply(REPLY_BYTES[fixed])
        with m.If(r.is_command(Command.START)):
            m.d.comb += self.start.eq(1)

    def _reply_byte(self, is_command, index, region_crc: SerialRegionCrc | None):
        """Byte `index` of a STATUS, COUNTERS or CHECKSUM reply, read when it is sent: the
        counters only change while the accelerator runs. The STATUS reply is one byte (`index`
        0); a CHECKSUM reply sends the CRC's `low_byte`, which moves on to the next byte after
        each one. Without `queue_counters` the COUNTERS reply is the cycle counter's bytes,
        then zeros (a 4-byte multiplexer)."""
        counters = self.counters.as_value() if self.queue_counters else self.counters.cycles
        select_bits = ceil_log2(len(counters) // 8)
        counter_byte = Mux(index[select_bits:] == 0, counters.word_select(index[:select_bits], 8), 0)
        flags = Mux(self.busy, STATUS_BUSY, 0) | Mux(self.done, STATUS_DONE, 0)
        sources = {Command.STATUS: flags.as_unsigned(), Command.COUNTERS: counter_byte}
        if region_crc is not None:
            sources[Command.CHECKSUM] = region_crc.low_byte
        return reduce(operator.or_, (value & is_command(code).replicate(8) for code, value in sources.items()))
