"""The gateware side of the host protocol (`boards.protocol`): receives request frames from the
UART, checks their CRC, executes them on main memory and the accelerator, and sends one reply
frame per request.

A request is buffered whole (payload up to `MAX_REQUEST_PAYLOAD` bytes) and executed only when
its CRC matches, so a corrupted WRITE never touches memory. Bytes outside a frame are skipped
until a sync byte; a frame that stalls for `FRAME_GAP_BYTE_TIMES` byte times is answered with
TRUNCATED.
"""
from __future__ import annotations

import operator
from functools import reduce

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from boards.main_memory import HostPort
from boards.protocol import (CHECKSUM_ALIGNMENT, CHECKSUM_REQUEST, FRAME_CRC, MAX_DATA, MAX_REQUEST_PAYLOAD,
                             READ_REQUEST, REGION_CRC, REPLY_BYTES, REPLY_SYNC, REQUEST_SYNC, STATUS_BUSY, STATUS_DONE,
                             WRITE_ADDRESS, Command, DeviceInfo, Status)
from hwgen.buffers import block_ram, block_ram_read_port
from hwgen.sequencer_layouts import COUNTERS_LAYOUT, program_write_signature
from hwgen.spram import SPRAM_BITS, SPRAM_WORDS

ARGUMENT_BYTES = CHECKSUM_REQUEST.size  # the longest fixed part of a request payload
REPLY_INDEX_BITS = (max(REPLY_BYTES.values()) - 1).bit_length()
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


class Bridge(wiring.Component):
    """Serves the host protocol for a device described by `info` (memory size, clock, build id)
    on a memory of `word_bytes`-byte words. `gap_cycles`: clock cycles of silence (give or take
    the square root of it) that abandon a partly received request; `link_active` is high until
    that long after a byte received or sent (low from reset). `error` is high from a refused
    request until the next request is served. With `program_memory`, PROGRAM requests write
    halfwords into the accelerator's program memory through `program` (`SPRAM_WORDS`
    halfwords). Without `queue_counters` only
    the cycle counter is read from `counters`; COUNTERS replies 0 for the per-queue counters."""

    def __init__(self, info: DeviceInfo, gap_cycles: int, word_bytes: int, *, program_memory: bool = False,
                 queue_counters: bool = True):
        if CHECKSUM_ALIGNMENT % word_bytes:
            raise ValueError(f"a {word_bytes}-byte memory word does not divide CHECKSUM_ALIGNMENT")
        self.info = info
        self.gap_cycles = gap_cycles
        self.word_bytes = word_bytes
        self.queue_counters = queue_counters
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
        m = Module()
        word = self.word_bytes
        # One frame CRC unit: requests and replies never overlap.
        m.submodules.frame_crc = frame_crc = FRAME_CRC.create()
        m.submodules.region_crc = region_crc = SerialRegionCrc()
        info = self.info.pack()
        # Its reads and writes never meet (`block_ram`).
        m.submodules.buffer = buffer = block_ram(8, INFO_BASE + len(info), [0] * INFO_BASE + list(info))
        buffer_write, buffer_read = buffer.write_port(), block_ram_read_port(m, buffer, "buffer")

        payload_range = range(MAX_REQUEST_PAYLOAD + 1)
        program_bytes = SPRAM_WORDS * SPRAM_BITS // 8 if "program" in self.signature.members else 0
        span = range(max(self.info.memory_bytes, program_bytes) + 1)  # memory addresses and their ends
        # The request's command, decoded when received: a bit per command served (none: unknown).
        commands = [code for code in Command if code != Command.PROGRAM or program_bytes]
        command = Signal(len(commands))

        def is_command(*codes: Command):
            return Cat(command[commands.index(code)] for code in codes).any()

        length = Signal(payload_range)   # the request's payload bytes; from EXECUTE on, the reply's
        count = Signal(payload_range)    # payload bytes received / copied; reply bytes sent
        # The last payload byte of the request or the reply (or data byte of a copy), registered:
        # `count` and `length` change at least a cycle before every use (bytes come at most one
        # per ten bit times, a copy reads the buffer between writes, a reply fetches between sends).
        last = Signal()
        m.d.sync += last.eq(count + 1 == length)
        argument = Signal()              # likewise: the payload byte `count` is an argument's
        m.d.sync += argument.eq(count < ARGUMENT_BYTES)
        pointer = Signal(span)           # the address argument, then the next memory access
        bits = len(pointer)
        # The size argument in the width of memory addresses; a set bit above the width puts an
        # argument out of range.
        size_argument = Signal(bits)
        wide_address, wide_size = Signal(), Signal()
        status = Signal(8)
        refused = Signal()               # VALIDATE has refused the request (`status` says why)
        from_memory = Signal()           # READ: the reply payload comes from memory
        out_byte = Signal(8)             # the next reply byte; CHECKSUM: the byte read last; PROGRAM: the low byte
        bit_index = Signal(3)            # CHECKSUM: the bit of `out_byte` going into the region CRC; reply: its shifts
        fetch_lane = Signal(range(word))  # READ, CHECKSUM: the byte of the fetched word
        step = Signal(2)                 # the byte of a frame's header or CRC being received or sent
        # Silence: counts the ticks of a free-running prescaler up from `gap_start` to its top
        # bit, `gap_cycles` cycles after a byte received or sent (within a tick; a reply's bytes
        # restart it too: no request is received meanwhile). Two short carry chains: one
        # over all the bits does not reach 33 MHz on the UP5K.
        tick_bits = self.gap_cycles.bit_length() // 2
        prescaler = Signal(tick_bits)
        m.d.sync += prescaler.eq(prescaler + 1)
        ticks = -(-self.gap_cycles >> tick_bits)
        gap_bits = ticks.bit_length()
        gap_start = (1 << gap_bits) - ticks
        gap = Signal(gap_bits + 1, init=1 << gap_bits)

        rx, tx, memory = self.rx, self.tx, self.memory
        byte = rx.payload
        # Bytes are taken from SYNC to the end of the request (CRC, DISCARD or a refusal), in a
        # register: `rx.ready` and `got` do not wait for the state's decoding.
        receiving = Signal(init=1)
        m.d.comb += rx.ready.eq(receiving)
        got = rx.valid & receiving
        # A memory request, registered: it is set on entering the state that waits for its
        # acceptance (the memory's arbitration does not wait for the state's decoding). All the
        # requests of a WRITE write, all the others read.
        requesting = Signal()
        m.d.comb += [memory.req.valid.eq(requesting), memory.req.payload.addr.eq(pointer),
                     memory.req.payload.data.eq(buffer_read.data),
                     memory.req.payload.write.eq(is_command(Command.WRITE))]
        # An accepted request moves `pointer` on to the next byte whatever the state: only the
        # states that wait for acceptance request, so its enable need not decode them.
        with m.If(requesting & memory.req.ready):
            m.d.sync += [requesting.eq(0), fetch_lane.eq(pointer[:exact_log2(word)]), pointer.eq(pointer + 1)]
        sent = tx.valid & tx.ready
        timed_out = gap[-1]
        m.d.comb += self.link_active.eq(~timed_out)
        with m.If(got | sent):
            m.d.sync += gap.eq(gap_start)
        with m.Elif(prescaler.all() & ~timed_out):
            m.d.sync += gap.eq(gap + 1)

        data_bytes = Signal(payload_range)  # WRITE, PROGRAM: the data after the address
        m.d.comb += data_bytes.eq(length - WRITE_ADDRESS.size)
        size, request_wide = Signal(bits), Signal()  # bytes a READ, WRITE, CHECKSUM or PROGRAM covers
        with m.If(is_command(Command.READ, Command.CHECKSUM)):
            m.d.comb += [size.eq(size_argument), request_wide.eq(wide_size)]
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
        in_memory = narrow & nonempty & (request_end <= self.info.memory_bytes)
        in_program = narrow & (request_end <= program_bytes)
        # CHECKSUM: `pointer` has reached `request_end`, registered (each byte's fetch comes at
        # least nine cycles before its last bit is summed, where it decides whether to fetch on).
        at_end = Signal()
        m.d.sync += at_end.eq(pointer == request_end)

        def refuse(code: Status) -> None:
            m.d.sync += [status.eq(code), length.eq(0), receiving.eq(0)]
            m.next = "REPLY"

        def reject(code: Status) -> None:
            """VALIDATE: refuse the request (EXECUTE replies `code`)."""
            m.d.sync += [status.eq(code), refused.eq(1)]

        def reply(length_value) -> None:
            """A reply of `length_value` payload bytes."""
            m.d.sync += length.eq(length_value)

        def receive(next_state: str) -> None:
            """A header, payload or CRC byte: into the CRC, then on; abandon the frame on silence."""
            m.d.comb += [frame_crc.valid.eq(got), frame_crc.data.eq(byte)]
            with m.If(got):
                m.next = next_state
            with m.Elif(timed_out):
                refuse(Status.TRUNCATED)

        def send(value, next_state: str, checked: bool = True) -> None:
            m.d.comb += [tx.valid.eq(1), tx.payload.eq(value)]
            if checked:
                m.d.comb += [frame_crc.valid.eq(sent), frame_crc.data.eq(value)]
            with m.If(sent):
                m.next = next_state

        def fetch(next_state: str) -> None:
            """Wait for the request of the word holding byte `pointer` (it moves `pointer` on)."""
            with m.If(memory.req.ready):
                m.next = next_state

        fetched = memory.rd_data.word_select(fetch_lane, 8)

        with m.FSM():
            with m.State("SYNC"):
                with m.If(got & (byte == REQUEST_SYNC)):
                    m.d.comb += frame_crc.start.eq(1)
                    m.d.sync += [status.eq(Status.OK), refused.eq(0), from_memory.eq(0), count.eq(0),
                                 size_argument.eq(0), wide_address.eq(0), wide_size.eq(0), step.eq(0)]
                    m.next = "HEADER"
            with m.State("HEADER"):  # `step`: the command, the length's low byte, its high byte
                receive("HEADER")
                new_length = Cat(length[:8], byte)
                with m.If(got):
                    m.d.sync += step.eq(step + 1)
                    with m.Switch(step):
                        with m.Case(0):
                            m.d.sync += command.eq(Cat(byte == code for code in commands))
                        with m.Case(1):
                            m.d.sync += length[:8].eq(byte)
                        with m.Default():
                            m.d.sync += [length[8:].eq(byte), step.eq(0)]
                            m.next = "PAYLOAD"
                            with m.If(new_length > MAX_REQUEST_PAYLOAD):
                                m.d.sync += status.eq(Status.BAD_LENGTH)
                                m.next = "DISCARD"
                            with m.Elif(new_length == 0):
                                m.next = "CRC"
            with m.State("PAYLOAD"):
                receive("PAYLOAD")
                with m.If(got):
                    m.d.comb += [buffer_write.addr.eq(count), buffer_write.data.eq(byte), buffer_write.en.eq(1)]
                    m.d.sync += count.eq(count + 1)
                    with m.If(argument), m.Switch(count[:exact_log2(ARGUMENT_BYTES)]):
                        for index in range(ARGUMENT_BYTES):
                            with m.Case(index):
                                if index < WRITE_ADDRESS.size:
                                    self._capture(m, pointer, wide_address, index, byte)
                                else:
                                    self._capture(m, size_argument, wide_size, index - WRITE_ADDRESS.size, byte)
                    with m.If(last):
                        m.next = "CRC"
            with m.State("CRC"):  # `step`: the CRC's high byte, then its low byte
                receive("CRC")
                with m.If(got):
                    m.d.sync += step.eq(~step[0])
                    with m.If(step[0]):
                        m.d.sync += receiving.eq(0)
                        m.next = "CHECK"
            with m.State("DISCARD"):  # an over-long request: skip it to its end
                with m.If(timed_out):
                    m.d.sync += [length.eq(0), receiving.eq(0)]
                    m.next = "REPLY"
            with m.State("CHECK"):  # the CRC register has taken the last byte
                m.d.sync += [request_end.eq(pointer + size), narrow.eq(~wide_address & ~request_wide),
                             nonempty.eq(size != 0), small.eq(size <= MAX_DATA)]
                self._check_shape(m, is_command, bool(program_bytes), length, pointer, size, bad_length, unaligned)
                m.d.comb += region_crc.start.eq(1)  # for a CHECKSUM (VALIDATE's checks stay short)
                with m.If(frame_crc.match_detected):
                    m.next = "VALIDATE"
                with m.Else():
                    refuse(Status.BAD_CRC)

            with m.State("VALIDATE"):  # the request's checks, into `status` and `refused`
                m.next = "EXECUTE"
                program = (Command.PROGRAM,) if program_bytes else ()
                with m.If(~is_command(*commands)):
                    reject(Status.BAD_COMMAND)
                with m.Elif(bad_length):  # every command checks its payload's length first
                    reject(Status.BAD_LENGTH)
                with m.Elif(is_command(Command.READ) & (~small | ~in_memory)):
                    reject(Status.OUT_OF_RANGE)
                with m.Elif(is_command(Command.WRITE, Command.CHECKSUM) & ~in_memory):
                    reject(Status.OUT_OF_RANGE)
                with m.Elif(is_command(Command.CHECKSUM, *program) & unaligned):
                    reject(Status.UNALIGNED)
                if program_bytes:
                    with m.Elif(is_command(Command.PROGRAM) & ~in_program):
                        reject(Status.OUT_OF_RANGE)
                with m.Elif(is_command(Command.START, Command.WRITE, *program) & self.busy):
                    reject(Status.BUSY)

            with m.State("EXECUTE"):  # `length` becomes the reply's (empty unless set below)
                m.d.sync += [count.eq(0), length.eq(0)]
                m.next = "REPLY"
                with m.If(~refused):
                    with m.If(is_command(Command.READ)):
                        m.d.sync += from_memory.eq(1)
                        reply(size)
                    with m.Elif(is_command(Command.WRITE)):
                        m.d.sync += [count.eq(WRITE_ADDRESS.size), length.eq(length)]  # the copy's end
                        m.next = "COPY_READ"
                    with m.Elif(is_command(Command.CHECKSUM)):
                        m.d.sync += requesting.eq(1)
                        m.next = "SUM"
                    if program_bytes:
                        with m.Elif(is_command(Command.PROGRAM)):
                            m.d.sync += [count.eq(WRITE_ADDRESS.size), length.eq(length)]  # the copy's end
                            m.next = "PROGRAM_LOW"
                    with m.Else():
                        self._execute_without_arguments(m, is_command, reply)

            # WRITE, PROGRAM: `count` runs over the data bytes in the buffer (after the address);
            # the reply is empty.
            with m.State("COPY_READ"):  # WRITE: buffer -> memory, one byte per two cycles
                m.d.comb += [buffer_read.addr.eq(count), buffer_read.en.eq(1)]
                m.d.sync += requesting.eq(1)
                m.next = "COPY_WRITE"
            with m.State("COPY_WRITE"):
                with m.If(memory.req.ready):  # the request moves `pointer` on
                    m.d.sync += count.eq(count + 1)
                    m.next = "COPY_READ"
                    with m.If(last):
                        m.d.sync += length.eq(0)
                        m.next = "REPLY"

            if program_bytes:
                # PROGRAM: buffer -> program memory, a halfword per three cycles; `pointer` and
                # `count` step a byte at a time.
                with m.State("PROGRAM_LOW"):
                    m.d.comb += [buffer_read.addr.eq(count), buffer_read.en.eq(1)]
                    m.d.sync += [pointer.eq(pointer + 1), count.eq(count + 1)]
                    m.next = "PROGRAM_HIGH"
                with m.State("PROGRAM_HIGH"):
                    m.d.comb += [buffer_read.addr.eq(count), buffer_read.en.eq(1)]
                    m.d.sync += out_byte.eq(buffer_read.data)
                    m.next = "PROGRAM_WRITE"
                with m.State("PROGRAM_WRITE"):
                    m.d.comb += [self.program.addr.eq(pointer >> 1), self.program.data.eq(Cat(out_byte, buffer_read.data)),
                                 self.program.en.eq(1)]
                    m.d.sync += [pointer.eq(pointer + 1), count.eq(count + 1)]
                    m.next = "PROGRAM_LOW"
                    with m.If(last):
                        m.d.sync += length.eq(0)
                        m.next = "REPLY"

            # CHECKSUM: a byte per memory read into `out_byte` (the memory's output goes no
            # further in a cycle), then its bits into the CRC, least significant first.
            with m.State("SUM"):
                fetch("SUM_WAIT")
            with m.State("SUM_WAIT"), m.If(memory.rd_valid):
                m.d.sync += out_byte.eq(fetched)
                m.next = "SUM_BITS"
            with m.State("SUM_BITS"):
                m.d.comb += [region_crc.valid.eq(1), region_crc.data.eq(out_byte.bit_select(bit_index, 1))]
                m.d.sync += bit_index.eq(bit_index + 1)
                with m.If(bit_index == 7):
                    with m.If(at_end):
                        reply(REPLY_BYTES[Command.CHECKSUM])
                        m.next = "REPLY"
                    with m.Else():
                        m.d.sync += requesting.eq(1)
                        m.next = "SUM"

            with m.State("REPLY"):
                m.d.sync += self.error.eq(status != Status.OK)
                send(REPLY_SYNC, "REPLY_HEADER", checked=False)
                with m.If(sent):
                    m.d.comb += frame_crc.start.eq(1)
                    m.d.sync += step.eq(0)
            with m.State("REPLY_HEADER"):  # `step`: the status, the length's low byte, its high byte
                send(Mux(step[1], length[8:], Mux(step[0], length[:8], status)), "REPLY_HEADER")
                with m.If(sent):
                    m.d.sync += step.eq(step + 1)
                    with m.If(step[1]):
                        m.d.sync += [step.eq(0), requesting.eq(from_memory)]  # a READ's reply is not empty
                        m.next = "FETCH"
                        with m.If(length == 0):
                            m.next = "REPLY_CRC"
            with m.State("FETCH"):
                with m.If(from_memory):
                    fetch("FETCH_WAIT")
                with m.Else():
                    m.d.comb += [buffer_read.addr.eq(count[:REPLY_INDEX_BITS] | INFO_BASE), buffer_read.en.eq(1)]
                    m.next = "FETCH_LOCAL"
            with m.State("FETCH_LOCAL"):
                local = self._reply_byte(is_command, count[:REPLY_INDEX_BITS], region_crc.low_byte)
                m.d.sync += out_byte.eq(Mux(is_command(Command.IDENTIFY), buffer_read.data, local))
                m.next = "NEXT_CRC_BYTE"
            with m.State("NEXT_CRC_BYTE"):  # eight cycles: the CRC's next byte into `low_byte`
                m.d.comb += region_crc.shift.eq(1)
                m.d.sync += bit_index.eq(bit_index + 1)
                with m.If(bit_index == 7):
                    m.next = "SEND"
            with m.State("FETCH_WAIT"), m.If(memory.rd_valid):
                m.d.sync += out_byte.eq(fetched)
                m.next = "SEND"
            with m.State("SEND"):
                send(out_byte, "FETCH")
                with m.If(sent):
                    m.d.sync += [count.eq(count + 1), requesting.eq(from_memory & ~last)]
                    with m.If(last):
                        m.next = "REPLY_CRC"
            with m.State("REPLY_CRC"):  # `step`: the CRC's high byte, then its low byte
                send(Mux(step[0], frame_crc.crc[:8], frame_crc.crc[8:]), "REPLY_CRC", checked=False)
                with m.If(sent):
                    m.d.sync += step.eq(~step[0])
                    with m.If(step[0]):
                        m.d.sync += receiving.eq(1)
                        m.next = "SYNC"
        return m

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
    def _check_shape(m: Module, is_command, program: bool, length, pointer, size, bad_length, unaligned) -> None:
        """Into `bad_length` and `unaligned`: whether the request's payload length does not suit
        its command, and whether its range is not aligned as the command needs."""
        with m.If(is_command(Command.READ)):
            m.d.sync += bad_length.eq(length != READ_REQUEST.size)
        with m.Elif(is_command(Command.CHECKSUM)):
            m.d.sync += [bad_length.eq(length != CHECKSUM_REQUEST.size),
                         unaligned.eq((pointer | size)[:exact_log2(CHECKSUM_ALIGNMENT)] != 0)]
        with m.Elif(is_command(Command.WRITE)):
            m.d.sync += bad_length.eq(length <= WRITE_ADDRESS.size)
        if program:
            with m.Elif(is_command(Command.PROGRAM)):
                m.d.sync += [bad_length.eq((length <= WRITE_ADDRESS.size) | size[0]), unaligned.eq(pointer[0])]
        with m.Else():  # IDENTIFY, STATUS, START, COUNTERS
            m.d.sync += bad_length.eq(length != 0)

    def _execute_without_arguments(self, m: Module, is_command, reply) -> None:
        """IDENTIFY, STATUS, COUNTERS: set the reply length; START: pulse `start`."""
        for fixed in (Command.IDENTIFY, Command.STATUS, Command.COUNTERS):
            with m.If(is_command(fixed)):
                reply(REPLY_BYTES[fixed])
        with m.If(is_command(Command.START)):
            m.d.comb += self.start.eq(1)

    def _reply_byte(self, is_command, index, region_crc_byte):
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
                   Command.CHECKSUM: region_crc_byte}
        return reduce(operator.or_, (value & is_command(code).replicate(8) for code, value in sources.items()))
