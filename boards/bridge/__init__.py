"""The gateware side of the host protocol (`boards.protocol`): receives request frames from the
UART, checks their CRC, executes them on main memory and the accelerator, and sends one reply
frame per request.

A request is buffered whole (payload up to `MAX_REQUEST_PAYLOAD` bytes) and executed only when
its CRC matches, so a corrupted WRITE never touches memory. Bytes outside a frame are skipped
until a sync byte; a frame that stalls for `FRAME_GAP_BYTE_TIMES` byte times is answered with
TRUNCATED.
"""
from __future__ import annotations

from amaranth.hdl import Module, Shape, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from boards.bridge.checker import RequestChecker
from boards.bridge.executor import RequestExecutor
from boards.bridge.memory_access import MemoryAccess
from boards.bridge.receiver import ARGUMENT_BYTES, RequestReceiver
from boards.bridge.region_crc import SerialRegionCrc
from boards.bridge.reply import INFO_BASE, ReplySender
from boards.bridge.shared import BridgeFormat
from boards.bridge.silence import SilenceTimer
from boards.main_memory import HostPort
from boards.protocol import CHECKSUM_ALIGNMENT, FRAME_CRC, DeviceInfo
from hwgen.buffers import block_ram, block_ram_read_port
from hwgen.sequencer_layouts import COUNTERS_LAYOUT, program_write_signature
from hwgen.spram import SPRAM_BITS, SPRAM_WORDS


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
        self.program_bytes = SPRAM_WORDS * SPRAM_BITS // 8 if program_memory else 0
        self.address_bits = Shape.cast(range(max(info.memory_bytes, self.program_bytes) + 1)).width  # and their ends
        self.format = BridgeFormat(program_memory, self.address_bits)
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
        format, bits, info = self.format, self.address_bits, self.info.pack()
        # One frame CRC unit: requests and replies never overlap.
        m.submodules.frame_crc = frame_crc = FRAME_CRC.create()
        m.submodules.region_crc = region_crc = SerialRegionCrc()
        # Its reads and writes never meet (`block_ram`).
        m.submodules.buffer = buffer = block_ram(8, INFO_BASE + len(info), [0] * INFO_BASE + list(info))
        buffer_write, buffer_read = buffer.write_port(), block_ram_read_port(m, buffer, "buffer")
        m.submodules.silence = silence = SilenceTimer(self.gap_cycles)
        m.submodules.memory_access = access = MemoryAccess(format, self.word_bytes)
        m.submodules.receiver = receiver = RequestReceiver(format, bits, buffer.depth)
        m.submodules.checker = checker = RequestChecker(format, bits, self.info.memory_bytes, self.program_bytes)
        m.submodules.executor = executor = RequestExecutor(format, bits, buffer.depth)
        m.submodules.reply = reply = ReplySender(format, buffer.depth, self.queue_counters)
        current = self._shared_registers(m, [access, receiver, checker, executor, reply])

        # The last payload byte of the request or the reply (or data byte of a copy), registered:
        # `count` and `length` change at least a cycle before every use (bytes come at most one
        # per ten bit times, a copy reads the buffer between writes, a reply fetches between sends).
        last = Signal()
        m.d.sync += last.eq(current.count + 1 == current.length)
        argument = Signal()  # likewise: the payload byte `count` is an argument's
        m.d.sync += argument.eq(current.count < ARGUMENT_BYTES)
        # Bytes are taken from SYNC to the end of the request (CRC, DISCARD or a refusal), in a
        # register: `rx.ready` and `got` do not wait for the state's decoding.
        got = Signal()
        m.d.comb += [self.rx.ready.eq(current.receiving), got.eq(self.rx.valid & current.receiving)]
        m.d.comb += [silence.activity.eq(got | reply.sent), self.link_active.eq(~silence.timed_out)]

        wiring.connect(m, access.memory, wiring.flipped(self.memory))
        m.d.comb += [access.command.eq(receiver.command), access.write_data.eq(buffer_read.data)]
        m.d.comb += [receiver.byte.eq(self.rx.payload), receiver.got.eq(got), receiver.timed_out.eq(silence.timed_out),
                     receiver.argument.eq(argument), receiver.last.eq(last)]
        wiring.connect(m, receiver.buffer_write, buffer_write)
        m.d.comb += [checker.command.eq(receiver.command), checker.size_argument.eq(receiver.size_argument),
                     checker.wide_address.eq(receiver.wide_address), checker.wide_size.eq(receiver.wide_size),
                     checker.crc_match.eq(frame_crc.match_detected), checker.busy.eq(self.busy),
                     region_crc.start.eq(checker.start_region_crc)]
        for part in (executor, reply):  # both read memory and the request buffer
            m.d.comb += [part.command.eq(receiver.command), part.last.eq(last),
                         part.request_ready.eq(self.memory.req.ready), part.read_valid.eq(self.memory.rd_valid),
                         part.fetched.eq(access.fetched), part.buffer_read.data.eq(buffer_read.data)]
        m.d.comb += [buffer_read.addr.eq(executor.buffer_read.addr | reply.buffer_read.addr),
                     buffer_read.en.eq(executor.buffer_read.en | reply.buffer_read.en)]
        m.d.comb += [executor.size.eq(checker.size), executor.request_end.eq(checker.request_end),
                     region_crc.valid.eq(executor.region_crc.valid), region_crc.data.eq(executor.region_crc.data),
                     self.start.eq(executor.start)]
        if "program" in self.signature.members:
            wiring.connect(m, executor.program, wiring.flipped(self.program))
        wiring.connect(m, reply.tx, wiring.flipped(self.tx))
        m.d.comb += [reply.frame_crc.crc.eq(frame_crc.crc), reply.region_crc.low_byte.eq(region_crc.low_byte),
                     region_crc.shift.eq(reply.region_crc.shift), reply.busy.eq(self.busy), reply.done.eq(self.done),
                     reply.counters.eq(self.counters), self.error.eq(reply.error)]
        m.d.comb += [frame_crc.start.eq(receiver.frame_crc.start | reply.frame_crc.start),
                     frame_crc.valid.eq(receiver.frame_crc.valid | reply.frame_crc.valid),
                     frame_crc.data.eq(receiver.frame_crc.data | reply.frame_crc.data)]
        return m

    def _shared_registers(self, m: Module, parts: list[wiring.Component]) -> data.View:
        """The registers the `parts` share (`boards.bridge.shared`), each part passing their next
        values on to the next; returns their values."""
        registers = {name: Signal(member.shape, name=name, init=int(name == "receiving"))
                     for name, member in self.format.shared}  # `receiving` from reset
        current = Signal(self.format.shared)
        m.d.comb += [current[name].eq(register) for name, register in registers.items()]
        pending = current
        for part in parts:
            m.d.comb += [part.current.eq(current), part.pending.eq(pending)]
            pending = part.updated
        m.d.sync += [register.eq(pending[name]) for name, register in registers.items()]
        return current
