"""Main memory in SDRAM: `SdramMainMemory` has `boards.main_memory.MainMemory`'s ports (the
accelerator's `port`, the bridge's `host`), plus the chip's pins, and serves them through an
`SdramController`, one 16-bit word per cycle.

Accelerator write beats enter a 4-entry write queue (`wr.ready` is its room alone). Each cycle
at most one access goes into a request register in front of the controller (taken when the
register is empty or the controller takes its access): a queued write beat first (no read passes
a write the port has accepted), else a beat of the accelerator's read burst (when its read-data
FIFO has room: room is reserved as the beat issues), else a host byte access. A host read's word
comes back after a variable delay, on `rd_data` with `rd_valid` (the bridge waits for
`rd_valid`).

Latency of an accelerator read burst on an open row: its request accepted at cycle 0, the first
beat enters the request register at cycle 1, the controller issues it at cycle 2, its data
leaves the controller `read_latency` cycles later into the FIFO, whose head is `rd_data` the
cycle after: 3 + `read_latency` cycles (7 at CAS latency 2). A closed bank adds tRCD (its
ACTIVE first); another row open in the bank adds tRP + tRCD at least (its PRECHARGE first, once
tRAS and tWR allow).
"""
from __future__ import annotations

from amaranth.hdl import Module, Signal, Value
from amaranth.lib import data, fifo, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from boards.main_memory import HostPort, ShiftQueue
from boards.sdram.controller import DATA_BITS, SdramController, cas_latency_at
from common.errors import ConfigError
from hwgen.memory_port import MemoryPort
from sim.sdram.adapter import SDRAM_PINS
from sim.sdram.chips import SdramChip

WORD_BYTES = DATA_BITS // 8


def check_sdram_memory(port: MemoryPort, size_bytes: int, chip: SdramChip, clock_mhz: float) -> None:
    """`port` must be 16 bits wide, `size_bytes` a positive multiple of 2, at most the chip's,
    and the chip must run at `clock_mhz`."""
    cas_latency_at(chip, clock_mhz)
    if port.bus_bytes != WORD_BYTES:
        raise ConfigError(f"SDRAM main memory needs a {8 * WORD_BYTES}-bit memory port "
                          f"(dram.bus_width_bits), not {8 * port.bus_bytes} bits")
    if size_bytes <= 0 or size_bytes % WORD_BYTES or size_bytes > chip.bytes:
        raise ConfigError(f"memory size {size_bytes} bytes must be a positive multiple of {WORD_BYTES} "
                          f"bytes, at most the {chip.name}'s {chip.bytes}")


class SdramMainMemory(wiring.Component):
    """`size_bytes` (at most the chip's) of `chip` at `clock_mhz`, serving the accelerator's
    `port` (a 16-bit `MemoryPort`) and the bridge's `host` port (`HostPort(2)`: 16-bit words);
    `sdram` are the chip's pins. The memory starts empty: the host loads the image."""

    def __init__(self, port: MemoryPort, size_bytes: int, chip: SdramChip, clock_mhz: float):
        try:
            check_sdram_memory(port, size_bytes, chip, clock_mhz)
        except ConfigError:
            self._MustUse__silence = True  # not built, so not "created but never used"
            raise
        self.bus, self.size_bytes, self.chip, self.clock_mhz = port, size_bytes, chip, clock_mhz
        super().__init__({"port": In(port), "host": In(HostPort(WORD_BYTES)), "sdram": Out(SDRAM_PINS)})

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.controller = controller = SdramController(self.chip, self.clock_mhz)
        wiring.connect(m, wiring.flipped(self.sdram), controller.sdram)
        # room for every beat between its issue and its pop: the request register, the
        # controller's latency, the FIFO's write; one more as `room` reads registers only
        m.submodules.read_fifo = read_fifo = ShiftQueue(DATA_BITS, controller.read_latency + 3)
        request = Signal(data.StructLayout({"cmd": controller.cmd.payload.shape(), "host": 1}))
        valid = Signal()
        free = ~valid | controller.cmd.ready  # the request register takes an access this cycle
        m.d.comb += [controller.cmd.valid.eq(valid), controller.cmd.payload.eq(request.cmd)]
        with m.If(free):
            m.d.sync += valid.eq(0)
        beat = _Beats(self.bus.addr_width)
        self._read_bursts(m, read_fifo, beat)
        writes = self._write_queue(m)
        self._arbitrate(m, free, beat, writes, request, valid)
        self._read_data(m, controller, read_fifo, request)
        return m

    def _word(self, byte_address: Value) -> Value:
        """The word address of a byte address within the memory."""
        return byte_address[1:1 + ceil_log2(self.size_bytes // WORD_BYTES)]

    def _read_bursts(self, m: Module, fifo: ShiftQueue, beat: _Beats) -> None:
        """The accelerator's read requests, one burst at a time, as `beat`s to issue."""
        port = self.port
        beats_left = Signal(range(self.bus.burst_beats + 1))
        beats_next = Signal.like(beats_left)
        no_beat, one_beat = Signal(init=1), Signal()  # beats_left == 0, == 1
        reserved = Signal(range(fifo.depth + 1))  # FIFO entries held by beats issued and not popped
        popped = fifo.r_rdy & port.rd_data.ready
        m.d.comb += [beat.available.eq(~no_beat & (reserved < fifo.depth)),
                     beats_next.eq(beats_left - beat.issue),
                     port.rd_req.ready.eq(no_beat | (one_beat & beat.issue))]
        in_block = exact_log2(self.bus.burst_beats * WORD_BYTES)  # a burst stays in its block
        with m.If(beat.issue):
            m.d.sync += beat.addr[:in_block].eq(beat.addr[:in_block] + WORD_BYTES)
        with m.If(port.rd_req.valid & port.rd_req.ready):
            m.d.sync += beat.addr.eq(port.rd_req.payload.addr)
            m.d.comb += beats_next.eq(port.rd_req.payload.beats)
        m.d.sync += [beats_left.eq(beats_next), no_beat.eq(beats_next == 0), one_beat.eq(beats_next == 1),
                     reserved.eq(reserved + beat.issue - popped)]

    def _write_queue(self, m: Module) -> fifo.SyncFIFOBuffered:
        """The accelerator's write beats, queued: `wr.ready` is the queue's room, which depends on
        its level alone, not on the controller (on the 85F the controller's `ready` reached the
        store DMA's enables through it at 61.7 MHz). A read beat never passes a queued write
        (`_arbitrate`), so reads see every write accepted before them."""
        wr = self.port.wr
        m.submodules.write_queue = writes = fifo.SyncFIFOBuffered(width=len(wr.payload.as_value()), depth=4)
        m.d.comb += [writes.w_data.eq(wr.payload), writes.w_en.eq(wr.valid), wr.ready.eq(writes.w_rdy)]
        return writes

    def _arbitrate(self, m: Module, free: Value, beat: _Beats, writes: fifo.SyncFIFOBuffered, request,
                   valid: Signal) -> None:
        """Fill the request register when `free`: a queued write beat (always first, so that no
        read passes it), a read beat or a host access."""
        host = self.host.req
        wr = data.View(self.port.wr.payload.shape(), writes.r_data)
        pick_write = writes.r_rdy
        pick_read = beat.available & ~pick_write
        pick_host = host.valid & ~pick_write & ~beat.available
        m.d.comb += [writes.r_en.eq(free & pick_write), beat.issue.eq(free & pick_read),
                     host.ready.eq(free & pick_host)]
        cmd = request.cmd
        with m.If(free & pick_write):
            m.d.sync += [valid.eq(1), cmd.addr.eq(self._word(wr.addr)), cmd.write.eq(1),
                         cmd.data.eq(wr.data), cmd.mask.eq(wr.mask), request.host.eq(0)]
        with m.Elif(free & pick_read):
            m.d.sync += [valid.eq(1), cmd.addr.eq(self._word(beat.addr)), cmd.write.eq(0), request.host.eq(0)]
        with m.Elif(free & pick_host):
            lane = host.payload.addr[0]
            m.d.sync += [valid.eq(1), cmd.addr.eq(self._word(host.payload.addr)), cmd.write.eq(host.payload.write),
                         cmd.data.eq(host.payload.data.replicate(WORD_BYTES)), cmd.mask.eq(1 << lane),
                         request.host.eq(1)]

    def _read_data(self, m: Module, controller: SdramController, fifo: ShiftQueue, request) -> None:
        """Read data in order: a host read's word to `host`, an accelerator beat to the FIFO."""
        port, host = self.port, self.host
        host_read = controller.cmd.valid & controller.cmd.ready & ~request.cmd.write & request.host
        for stage in range(controller.read_latency):  # the tag follows the read through the controller
            tagged = Signal(name=f"host_read_{stage}")
            m.d.sync += tagged.eq(host_read)
            host_read = tagged
        m.d.comb += [host.rd_data.eq(controller.rd.payload), host.rd_valid.eq(controller.rd.valid & host_read),
                     fifo.w_en.eq(controller.rd.valid & ~host_read), fifo.w_data.eq(controller.rd.payload),
                     port.rd_data.valid.eq(fifo.r_rdy), port.rd_data.payload.data.eq(fifo.r_data),
                     fifo.r_en.eq(port.rd_data.ready)]


class _Beats:
    """The read burst's next beat: `addr` (byte address, a register), `available` (a beat left
    and FIFO room), `issue` (set by the arbiter: it goes now)."""

    def __init__(self, addr_width: int):
        self.addr = Signal(addr_width, name="burst_addr")
        self.available, self.issue = Signal(), Signal()
