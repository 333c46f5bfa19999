"""Main memory in the OrangeCrab's DDR3L: `Ddr3MainMemory` has `boards.main_memory.MainMemory`'s
ports (the accelerator's `port`, the bridge's `host`) and serves them through LiteDRAM's native
port (`dram`, `boards.ddr3.native.LiteDramPort`), after `InitSequencer` has initialized the chip
through the core's CSRs (`init_done`; no access before).

A native word is 16 bytes (one BL8 burst of the 16-bit DDR3); an accelerator burst stays inside
one (`check_ddr3_memory`), so it is one native command:

- writes: the accelerator's beats enter a 4-entry queue (`wr.ready` is its room alone), then a
  combining register that gathers the beats of one native word (data and byte enables); it is
  written as one native write when its burst's last beat is in, when the next beat is for
  another word, or when no beat waits;
- reads: a request becomes one native read; a tag (host or accelerator, first byte, beats)
  follows it through a queue; the native word returns into a 4-word FIFO (a read is commanded
  only with room reserved there: the core does not wait for `rdata.ready`) and leaves as beats
  on `rd_data`, or as the host's word on `host.rd_data` with `rd_valid`;
- host byte writes are native writes with one byte enabled.

One command at a time: a new one is loaded when the previous was taken and its write data (if
any) too. Order: a pending combined write or queued write beat goes first (no read passes a
write the port has accepted), then an accelerator read, then a host access.
"""
from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import data, fifo, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from boards.ddr3.init import CsrWrite, InitSequencer
from boards.ddr3.native import LiteDramPort
from boards.main_memory import HostPort, word_bytes
from common.errors import ConfigError
from hwgen.memory_port import MemoryPort

READ_WORDS = 4  # native read words in flight or waiting in the read FIFO


def check_ddr3_memory(port: MemoryPort, size_bytes: int, native_bytes: int, capacity: int) -> None:
    """An accelerator burst must fit one `native_bytes` word and `size_bytes` must be a positive
    multiple of it, at most the chip's `capacity`."""
    if port.bus_bytes * port.burst_beats > native_bytes:
        raise ConfigError(f"DDR3 main memory serves a burst as one {native_bytes}-byte native word: "
                          f"dram.burst_beats x bus width must be at most {native_bytes} bytes, not "
                          f"{port.burst_beats} x {port.bus_bytes}")
    if size_bytes <= 0 or size_bytes % native_bytes or size_bytes > capacity:
        raise ConfigError(f"memory size {size_bytes} bytes must be a positive multiple of {native_bytes} bytes, "
                          f"at most the DDR3's {capacity}")


class Ddr3MainMemory(wiring.Component):
    """`size_bytes` of the DDR3 behind a LiteDRAM core with `address_bits`-bit native word
    addresses and `data_bits`-bit words, initialized by `program` (`boards.ddr3.init`)."""

    def __init__(self, port: MemoryPort, size_bytes: int, address_bits: int, data_bits: int,
                 program: tuple[CsrWrite, ...]):
        try:
            check_ddr3_memory(port, size_bytes, data_bits // 8, (data_bits // 8) << address_bits)
        except ConfigError:
            self._MustUse__silence = True  # not built, so not "created but never used"
            raise
        self.bus, self.size_bytes, self.program = port, size_bytes, program
        self.native_bytes = data_bits // 8
        super().__init__({"port": In(port), "host": In(HostPort(word_bytes(port))),
                          "dram": Out(LiteDramPort(address_bits, data_bits)), "init_done": Out(1)})

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.init = init = InitSequencer(self.program)
        wiring.connect(m, init.csr, wiring.flipped(self.dram.csr))
        m.d.comb += self.init_done.eq(init.done)
        cmd, wdata = self.dram.cmd, self.dram.wdata
        with m.If(cmd.ready):
            m.d.sync += cmd.valid.eq(0)
        with m.If(wdata.ready):
            m.d.sync += wdata.valid.eq(0)
        free = init.done & ~cmd.valid & ~wdata.valid  # a command may be loaded this cycle
        tags, words = self._read_path(m)
        tag = data.View(self._tag_layout(), tags.w_data)  # the tag of a read commanded now
        reserved = Signal(range(READ_WORDS + 1))  # FIFO words held by reads commanded and not popped
        room = reserved < READ_WORDS
        writes, combined = self._write_path(m)
        head = data.View(self.port.wr.payload.shape(), writes.r_data)  # the queue's head beat
        flush = combined.valid & (combined.last | ~writes.r_rdy | (self._native(head.addr) != combined.word))
        req, host = self.port.rd_req, self.host.req
        read_now = free & ~flush & ~combined.valid & ~writes.r_rdy & room & req.valid
        host_now = free & ~flush & ~combined.valid & ~writes.r_rdy & ~req.valid & host.valid & \
            (host.payload.write | room)
        m.d.comb += [req.ready.eq(read_now), host.ready.eq(host_now)]
        self._merge(m, writes, head, combined, free & flush)
        with m.If(free & flush):
            m.d.sync += [cmd.valid.eq(1), cmd.payload.we.eq(1), cmd.payload.addr.eq(combined.word),
                         wdata.valid.eq(1), wdata.payload.data.eq(combined.data), wdata.payload.we.eq(combined.mask)]
        with m.Elif(read_now):
            m.d.sync += [cmd.valid.eq(1), cmd.payload.we.eq(0), cmd.payload.addr.eq(self._native(req.payload.addr))]
            m.d.comb += [tags.w_en.eq(1), tag.byte.eq(req.payload.addr), tag.beats.eq(req.payload.beats)]
        with m.Elif(host_now):
            byte = host.payload.addr[:exact_log2(self.native_bytes)]
            m.d.sync += [cmd.valid.eq(1), cmd.payload.we.eq(host.payload.write),
                         cmd.payload.addr.eq(self._native(host.payload.addr))]
            with m.If(host.payload.write):
                m.d.sync += [wdata.valid.eq(1), wdata.payload.data.eq(host.payload.data.replicate(self.native_bytes)),
                             wdata.payload.we.eq(1 << byte)]
            with m.Else():
                m.d.comb += [tags.w_en.eq(1), tag.byte.eq(host.payload.addr), tag.host.eq(1)]
        m.d.sync += reserved.eq(reserved + tags.w_en - (words.r_en & words.r_rdy))
        return m

    def _native(self, byte_address):
        """The native word address of a byte address within the memory."""
        low = exact_log2(self.native_bytes)
        return byte_address[low:low + ceil_log2(self.size_bytes // self.native_bytes)]

    def _write_path(self, m: Module):
        """The write queue and the combining register (`valid`, `word`, `data`, `mask`, `last`)."""
        wr = self.port.wr
        m.submodules.write_queue = writes = fifo.SyncFIFOBuffered(width=len(wr.payload.as_value()), depth=4)
        m.d.comb += [writes.w_data.eq(wr.payload), writes.w_en.eq(wr.valid), wr.ready.eq(writes.w_rdy)]
        layout = data.StructLayout({"valid": 1, "word": len(self.dram.cmd.payload.addr), "data": 8 * self.native_bytes,
                                    "mask": self.native_bytes, "last": 1})
        return writes, Signal(layout, name="combined")

    def _merge(self, m: Module, writes: fifo.SyncFIFOBuffered, beat, combined, flushing) -> None:
        """Move the queue's head `beat` into `combined` when it is empty (or being written out)
        or holds the beat's word and is not being written out."""
        addr = beat.addr
        bus = self.bus.bus_bytes
        lane = addr[exact_log2(bus):exact_log2(self.native_bytes)] if bus < self.native_bytes else 0
        same = combined.valid & ~flushing & (self._native(addr) == combined.word) & ~combined.last
        fresh = ~combined.valid | flushing
        take = writes.r_rdy & (fresh | same)
        m.d.comb += writes.r_en.eq(take)
        with m.If(flushing):
            m.d.sync += combined.valid.eq(0)
        with m.If(take):
            shifted_mask = beat.mask << (lane * bus)
            lanes = self.native_bytes // bus
            m.d.sync += [combined.valid.eq(1), combined.word.eq(self._native(addr)), combined.last.eq(beat.last)]
            for index in range(lanes):
                with m.If(lane == index):
                    m.d.sync += combined.data.word_select(index, 8 * bus).eq(beat.data)
            with m.If(fresh):
                m.d.sync += combined.mask.eq(shifted_mask)
            with m.Else():
                m.d.sync += combined.mask.eq(combined.mask | shifted_mask)

    def _tag_layout(self) -> data.StructLayout:
        """A read's tag: its first byte in the native word, its beats, whether the host's."""
        return data.StructLayout({"byte": exact_log2(self.native_bytes), "beats": self.bus.burst_beats.bit_length(),
                                  "host": 1})

    def _read_path(self, m: Module):
        """The tag queue and the read-word FIFO, and the beats (or host word) leaving them."""
        layout = self._tag_layout()
        m.submodules.read_tags = tags = fifo.SyncFIFOBuffered(width=layout.size, depth=READ_WORDS)
        m.submodules.read_words = words = fifo.SyncFIFOBuffered(width=8 * self.native_bytes, depth=READ_WORDS)
        rdata = self.dram.rdata
        m.d.comb += [rdata.ready.eq(1), words.w_en.eq(rdata.valid), words.w_data.eq(rdata.payload)]
        tag = data.View(layout, tags.r_data)
        bus, host_word = self.bus.bus_bytes, self.host.signature.word_bytes
        beat = Signal(range(self.bus.burst_beats))  # beats of the head burst already sent
        byte = tag.byte + beat * bus
        ready = tags.r_rdy & words.r_rdy
        rd_data = self.port.rd_data
        m.d.comb += [rd_data.valid.eq(ready & ~tag.host),
                     rd_data.payload.data.eq(words.r_data.word_select(byte[exact_log2(bus):], 8 * bus)),
                     self.host.rd_data.eq(words.r_data.word_select(tag.byte[exact_log2(host_word):], 8 * host_word)),
                     self.host.rd_valid.eq(ready & tag.host)]
        last = tag.host | (beat == tag.beats - 1)
        with m.If(ready & (tag.host | rd_data.ready)):
            m.d.sync += beat.eq(beat + 1)
            with m.If(last):
                m.d.sync += beat.eq(0)
                m.d.comb += [tags.r_en.eq(1), words.r_en.eq(1)]
        return tags, words
