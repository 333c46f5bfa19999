"""Main memory of the SoC: one single-ported word memory shared by the accelerator's external
memory port (`hwgen.memory_port.MemoryPort`, bursts and back-pressure) and the host bridge's
byte port.

Storage is `SB_SPRAM256KA` on an iCE40UP platform (16 K x 16 bits each; the UP5K has four, 128
KiB) and an inferred block RAM elsewhere. Block RAM starts with the memory image; SPRAM cannot be
initialised by a bitstream, so there the host loads the image (`boards.runtime.Runtime.load`
finds out by checksum).

Each cycle the one port serves, in this order: an accelerator write beat (always accepted), an
accelerator read beat (when its read-data FIFO has room), a host byte access. Block RAM storage
takes the port's access through a register (`storage_latency`: read data two cycles after the
access is granted, one with SPRAM): on a large ECP5 its slices spread over the chip, and the
bridge's buffer and the accelerator's write data reached them in one cycle only at 63 MHz. Its
read data reach the host through a register too (`host_latency`): from the slices across the
chip, the bridge's reply byte selection missed 75 MHz on the 85F.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from hwgen.memory_port import MemoryPort
from hwgen.spram import SinglePortBank, is_ice40up
from hwgen.spram_size import SPRAM_BITS, SPRAM_WORDS
from common.errors import ConfigError

UP5K_SPRAMS = 4
BLOCK_RAM_DATA_BITS = 16384  # an ECP5 DP16KD without its parity bits


class HostPort(wiring.Signature):
    """Access from the bridge: a request stream (`addr`, a byte address; `data` and `write` for
    a byte write). A read returns the whole `word_bytes`-byte word holding `addr` on `rd_data`,
    with `rd_valid`: `host_latency` cycles after the request is accepted for `MainMemory`, after
    a variable delay for `boards.sdram.memory.SdramMainMemory` (the bridge waits for `rd_valid`)."""

    def __init__(self, word_bytes: int, addr_width: int = 32):
        self.word_bytes = word_bytes
        request = data.StructLayout({"addr": addr_width, "data": 8, "write": 1})
        super().__init__({"req": Out(stream.Signature(request)), "rd_data": In(8 * word_bytes), "rd_valid": In(1)})


def word_bytes(port: MemoryPort) -> int:
    """Bytes per storage word: the bus width, at least 16 bits (the SPRAM word)."""
    return max(port.bus_bytes, SPRAM_BITS // 8)


def check_size(port: MemoryPort, size_bytes: int) -> None:
    """`size_bytes` must be a positive multiple of the storage word."""
    word = word_bytes(port)
    if size_bytes <= 0 or size_bytes % word:
        raise ConfigError(f"memory size {size_bytes} bytes must be a positive multiple of the {word}-byte memory word")


def slice_bits(word: int, depth: int) -> int:
    """Bits of each memory a `depth`-word storage of `word` bytes is split into: the widest power
    of two (at least 1, at most the word) whose `depth` entries fit one block RAM's data bits.
    Each slice then fills block RAMs in their deepest shape (ECP5 DP16KD: 16K x 1 to 1K x 16)
    and a read selects among few of them: 32 K words in one memory would be 1K x 16 block RAMs
    and a 32-way selection from their outputs, as 1-bit slices it is a 2-way one."""
    bits = 1
    while bits < 8 * word and 2 * bits * depth <= BLOCK_RAM_DATA_BITS:
        bits *= 2
    return bits


def storage_latency(platform) -> int:
    """Cycles from a granted access to its read data: SPRAM answers the next cycle; block RAM
    storage adds the access register in front of its slices."""
    return 1 if is_ice40up(platform) else 2


def host_latency(platform) -> int:
    """Cycles from a granted host read to its data: block RAM storage's read data reach the host
    through a register."""
    return storage_latency(platform) + (not is_ice40up(platform))


class WordStorage(wiring.Component):
    """`depth` words of `word` bytes behind one port: a cycle writes (`wr_en`, byte enables) or
    reads (`rd_en`; `rd_data` the next cycle). Block RAM storage is one memory per
    `slice_bits` of the word."""

    def __init__(self, word: int, depth: int, init: bytes):
        self.word, self.depth, self.init = word, depth, init
        super().__init__({
            "addr": In(range(depth)), "wr_data": In(8 * word), "wr_en": In(word),
            "rd_en": In(1), "rd_data": Out(8 * word),
        })

    def elaborate(self, platform) -> Module:
        if is_ice40up(platform):
            return self._spram()
        m = Module()
        words = [int.from_bytes(self.init[i:i + self.word], "little") for i in range(0, len(self.init), self.word)]
        bits = slice_bits(self.word, self.depth)
        mask = (1 << bits) - 1
        for index in range(8 * self.word // bits):
            init = [word >> (index * bits) & mask for word in words]
            memory = m.submodules[f"slice{index}"] = Memory(shape=unsigned(bits), depth=self.depth, init=init)
            write, read = memory.write_port(granularity=min(bits, 8)), memory.read_port()
            m.d.comb += [write.addr.eq(self.addr), write.data.eq(self.wr_data.word_select(index, bits)),
                         write.en.eq(self.wr_en.bit_select(index * bits // 8, max(bits // 8, 1))),
                         read.addr.eq(self.addr), read.en.eq(self.rd_en),
                         self.rd_data.word_select(index, bits).eq(read.data)]
        return m

    def _spram(self) -> Module:
        banks = self.depth // SPRAM_WORDS
        sprams = banks * 8 * self.word // SPRAM_BITS
        if self.depth % SPRAM_WORDS or sprams > UP5K_SPRAMS:
            raise ConfigError(f"main memory of {self.depth * self.word} bytes does not map to SPRAM: it needs a "
                              f"multiple of {SPRAM_WORDS * self.word} bytes and at most {UP5K_SPRAMS} SB_SPRAM256KA "
                              f"({UP5K_SPRAMS * SPRAM_WORDS * SPRAM_BITS // 8} bytes)")
        m = Module()
        low = exact_log2(SPRAM_WORDS)
        bank_of = self.addr[low:] if banks > 1 else 0
        read_bank = Signal(range(banks))
        with m.If(self.rd_en):
            m.d.sync += read_bank.eq(bank_of)
        for index in range(banks):
            bank = m.submodules[f"bank{index}"] = SinglePortBank(self.word, SPRAM_WORDS)
            chosen = bank_of == index
            m.d.comb += [bank.addr.eq(self.addr[:low]), bank.wr_data.eq(self.wr_data),
                         bank.wr_en.eq(Cat(*(bit & chosen for bit in self.wr_en))),
                         bank.rd_en.eq(self.rd_en & chosen)]
            with m.If(read_bank == index):
                m.d.comb += self.rd_data.eq(bank.rd_data)
        return m


class ShiftQueue(wiring.Component):
    """A first-in first-out queue of `depth` entries of `width` bits in registers, its head
    always in the first (read straight from a register, no read multiplexer): a pop moves the
    entries down one, a push fills the first entry free after the pop. The writer pushes only
    when there is room (`level < depth`)."""

    def __init__(self, width: int, depth: int):
        self.width, self.depth = width, depth
        super().__init__({"w_data": In(width), "w_en": In(1), "r_data": Out(width), "r_en": In(1), "r_rdy": Out(1),
                          "level": Out(range(depth + 1))})

    def elaborate(self, platform) -> Module:
        m = Module()
        entries = [Signal(self.width, name=f"entry{k}", reset_less=True) for k in range(self.depth)]
        pop = self.r_en & self.r_rdy
        free = self.level - pop  # the entry a push fills
        for k, entry in enumerate(entries):
            with m.If(self.w_en & (free == k)):
                m.d.sync += entry.eq(self.w_data)
            if k + 1 < self.depth:
                with m.Elif(pop):
                    m.d.sync += entry.eq(entries[k + 1])
        m.d.sync += self.level.eq(self.level + self.w_en - pop)
        m.d.comb += [self.r_rdy.eq(self.level != 0), self.r_data.eq(entries[0])]
        return m


class MainMemory(wiring.Component):
    """`size_bytes` of memory, initialised with `init` (where the storage allows it), serving
    the accelerator's `port` and the bridge's `host` port."""

    def __init__(self, port: MemoryPort, size_bytes: int, init: bytes = b""):
        check_size(port, size_bytes)
        if len(init) > size_bytes:
            raise ConfigError(f"memory image of {len(init)} bytes does not fit {size_bytes} bytes of memory")
        self.bus = port
        self.size_bytes = size_bytes
        self.init = bytes(init)
        super().__init__({"port": In(port), "host": In(HostPort(word_bytes(port)))})

    def elaborate(self, platform) -> Module:
        m = Module()
        bus, word = self.bus.bus_bytes, word_bytes(self.bus)
        depth = self.size_bytes // word
        m.submodules.storage = storage = WordStorage(word, depth, self.init)
        latency = storage_latency(platform)
        access = _access_register(m, storage, latency > 1)
        # two entries more than the read latency: a beat issues when the FIFO and the beats on
        # their way leave an entry free without this cycle's pop (so that `issue` and the port's
        # `rd_req.ready` come from registers alone), and reads still run at one beat per cycle
        m.submodules.read_fifo = read_fifo = ShiftQueue(8 * bus, latency + 2)
        port, host = self.port, self.host
        word_shift = exact_log2(word)
        addr_bits = ceil_log2(depth)

        def word_address(byte_address):
            return byte_address[word_shift:word_shift + addr_bits]

        def lane(byte_address, width: int):
            """Index of the `width`-byte lane of a word that `byte_address` falls in."""
            return byte_address[exact_log2(width):word_shift] if width < word else 0

        # ---- accelerator writes: always accepted, top priority
        write = port.wr.valid
        m.d.comb += port.wr.ready.eq(1)

        # ---- accelerator reads: one burst at a time, one beat per free cycle
        # `issue` and `rd_req.ready` read registers alone: the beats left as flags (none, one)
        # and `room`, set up a cycle ahead from the FIFO's and the beats' next counts
        burst_addr = Signal(word_shift + addr_bits)  # the byte address within the memory
        beats_left = Signal(range(self.bus.burst_beats + 1))
        beats_next = Signal.like(beats_left)
        no_beat, one_beat = Signal(init=1), Signal()  # beats_left == 0, == 1
        room = Signal(init=1)  # the FIFO and the beats on their way leave an entry free
        issue = Signal()
        in_flight = _delayed(m, issue, latency, "in_flight")  # per cycle of latency: a beat on its way
        lanes = _delayed(m, lane(burst_addr, bus), latency, "read_lane")
        popped = read_fifo.r_rdy & port.rd_data.ready
        m.d.comb += [issue.eq(~no_beat & ~write & room), beats_next.eq(beats_left - issue),
                     port.rd_req.ready.eq(no_beat | (one_beat & issue))]
        in_block = exact_log2(self.bus.burst_beats * bus)  # a burst stays in its block: only these bits advance
        with m.If(issue):
            m.d.sync += burst_addr[:in_block].eq(burst_addr[:in_block] + bus)
        with m.If(port.rd_req.valid & port.rd_req.ready):
            m.d.sync += burst_addr.eq(port.rd_req.payload.addr)
            m.d.comb += beats_next.eq(port.rd_req.payload.beats)
        m.d.sync += [beats_left.eq(beats_next), no_beat.eq(beats_next == 0), one_beat.eq(beats_next == 1),
                     room.eq(read_fifo.level + sum(in_flight) + issue - popped < read_fifo.depth)]
        m.d.comb += [read_fifo.w_en.eq(in_flight[-1]), read_fifo.w_data.eq(storage.rd_data.word_select(lanes[-1], 8 * bus)),
                     port.rd_data.valid.eq(read_fifo.r_rdy), port.rd_data.payload.data.eq(read_fifo.r_data),
                     read_fifo.r_en.eq(port.rd_data.ready)]

        # ---- host accesses in the cycles left over
        grant = Signal()
        m.d.comb += [grant.eq(host.req.valid & ~write & ~issue), host.req.ready.eq(grant)]
        m.d.comb += [host.rd_data.eq(_late(m, storage.rd_data, host_latency(platform) - latency, "host_rd_data")),
                     host.rd_valid.eq(_late(m, grant & ~host.req.payload.write, host_latency(platform), "host_read"))]

        # ---- the access of the cycle
        with m.If(write):
            wr = port.wr.payload
            m.d.comb += [access.addr.eq(word_address(wr.addr)), access.wr_data.eq(wr.data.replicate(word // bus)),
                         access.wr_en.eq(wr.mask << (lane(wr.addr, bus) * bus))]
        with m.Elif(issue):
            m.d.comb += [access.addr.eq(word_address(burst_addr)), access.rd_en.eq(1)]
        with m.Elif(grant):
            req = host.req.payload
            m.d.comb += [access.addr.eq(word_address(req.addr)), access.wr_data.eq(req.data.replicate(word)),
                         access.wr_en.eq(Mux(req.write, Const(1, word) << lane(req.addr, 1), 0)),
                         access.rd_en.eq(~req.write)]
        return m


def _access_register(m: Module, storage: WordStorage, registered: bool):
    """The signals an access drives: `storage`'s port itself, or a register in front of it."""
    if not registered:
        return storage
    access = Signal(data.StructLayout({"addr": len(storage.addr), "wr_data": len(storage.wr_data),
                                       "wr_en": len(storage.wr_en), "rd_en": 1}), name="access")
    m.d.sync += [storage.addr.eq(access.addr), storage.wr_data.eq(access.wr_data), storage.wr_en.eq(access.wr_en),
                 storage.rd_en.eq(access.rd_en)]
    return access


def _delayed(m: Module, value, cycles: int, name: str) -> list[Signal]:
    """`value` delayed by 1 .. `cycles` cycles (the last is `cycles` late)."""
    stages = []
    for stage in range(cycles):
        delayed = Signal(Value.cast(value).shape(), name=f"{name}_{stage}")
        m.d.sync += delayed.eq(value)
        stages.append(delayed)
        value = delayed
    return stages


def _late(m: Module, value, cycles: int, name: str):
    """`value` `cycles` cycles late (`value` itself for 0)."""
    return _delayed(m, value, cycles, name)[-1] if cycles else value
