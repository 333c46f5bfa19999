"""The realigner: moves byte ranges from words aligned in their source to words aligned in their
destination, with byte masks."""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hwgen.dma.descriptor import DmaParams


def realign_command_layout(params: DmaParams) -> data.StructLayout:
    """A realigner command: `n` bytes from byte `src_off` of the first source word to `dst`."""
    return data.StructLayout({"src_off": params.lb, "dst": params.dst_width, "n": params.count_width, "fill": 1})


def realigned_layout(params: DmaParams) -> data.StructLayout:
    """A destination word: its bus-aligned byte address, data, byte mask and whether it is the
    command's last."""
    return data.StructLayout({"addr": params.dst_width, "data": 8 * params.bus_bytes, "mask": params.bus_bytes,
                              "last": 1})


class WordCounts(wiring.Component):
    """The realigner's counts of the source words it still takes and the destination words it
    still emits (`params.count_width + 1` bits), and their tests. On a one-byte bus there is no
    source count.

    - `step`: the realigner moves this cycle; `need_in`: it takes a source word (with `step`);
      `emit`: it emits a destination word (with `step`);
    - `start`: a command starts: the counts become `in_words` and `out_words`;
    - `in_any`: source words are left; `out_last`: one destination word is left. With
      `params.timing_registers` both are registers (no wide comparison before the handshakes).
    """

    def __init__(self, params: DmaParams):
        self.params = params
        words = params.count_width + 1
        super().__init__({
            "step": In(1), "need_in": In(1), "emit": In(1),
            "start": In(1), "in_words": In(words), "out_words": In(words),
            "in_any": Out(1), "out_last": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        bytewise = p.bus_bytes == 1
        words = p.count_width + 1
        in_left, out_left = Signal(words, name="in_left"), Signal(words, name="out_left")
        in_next, out_next = Signal(words), Signal(words)  # their values in the next cycle
        m.d.comb += [in_next.eq(in_left), out_next.eq(out_left)]
        m.d.sync += [in_left.eq(in_next), out_left.eq(out_next)]
        if p.timing_registers:  # the tests in flip-flops, no wide comparison before the handshakes
            m.d.sync += [self.in_any.eq(in_next != 0), self.out_last.eq(out_next == 1)]
        else:
            m.d.comb += [self.in_any.eq(in_left != 0), self.out_last.eq(out_left == 1)]
        with m.If(self.step):
            if not bytewise:
                with m.If(self.need_in):
                    m.d.comb += in_next.eq(in_left - 1)
            with m.If(self.emit):
                m.d.comb += out_next.eq(out_left - 1)
        with m.If(self.start):
            m.d.comb += out_next.eq(self.out_words)
            if not bytewise:
                m.d.comb += in_next.eq(self.in_words)
        return m


class Realigner(wiring.Component):
    """Shifts a byte range from source-aligned words to destination-aligned words with masks.

    A command moves `n` bytes starting at byte `src_off` of the first source word to destination
    byte address `dst`; it consumes `ceil((src_off + n) / B)` source words (none for a fill
    command, whose bytes are `fill_byte`) and emits `ceil((dst % B + n) / B)` destination words,
    `last` on the final one. Up to one word per cycle in each direction. On a one-byte bus
    every source word pairs with a destination word, whose one byte is always enabled, so the
    source count and the masks' state are left out.

    - `cmd`: the commands (`realign_command_layout`);
    - `src`: the source words; `dst`: the destination words (`realigned_layout`);
    - `fill_byte`: the byte of fill commands;
    - `busy`: a command is under way.
    """

    def __init__(self, params: DmaParams):
        self.params = params
        super().__init__({
            "cmd": In(stream.Signature(realign_command_layout(params))),
            "src": In(stream.Signature(8 * params.bus_bytes)),
            "dst": Out(stream.Signature(realigned_layout(params))),
            "fill_byte": In(8),
            "busy": Out(1),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        B, lb = p.bus_bytes, p.lb
        m.submodules.counts = counts = WordCounts(p)
        skip = Signal()  # the first source word completes no destination word
        shift = Signal(lb)  # (dst - src) mod B: destination lane of source lane 0
        fill = Signal()
        first = Signal()
        start = Signal(lb)  # first enabled lane of the first destination word
        remaining = Signal(p.count_width + 1 + lb)  # dst % B + n - (emitted words) * B
        addr = Signal(p.dst_width)
        prev = Signal(8 * B)

        bytewise = B == 1
        need_in = ~fill if bytewise else counts.in_any
        emit = ~skip
        src_ok = ~need_in | self.src.valid
        dst_ok = ~emit | self.dst.ready
        step = self.busy & src_ok & dst_ok
        final = step & emit & counts.out_last
        m.d.comb += [
            self.src.ready.eq(self.busy & need_in & dst_ok),
            self.dst.valid.eq(self.busy & emit & src_ok),
            self.dst.payload.addr.eq(addr),
            self.dst.payload.last.eq(counts.out_last),
            self.cmd.ready.eq(~self.busy | final),
            counts.step.eq(step), counts.need_in.eq(need_in), counts.emit.eq(emit),
        ]
        window = (Cat(prev, self.src.payload) << (shift * 8))[8 * B:16 * B]
        m.d.comb += self.dst.payload.data.eq(Mux(fill, Cat(*[self.fill_byte] * B), window))
        for lane in range(B):
            m.d.comb += self.dst.payload.mask[lane].eq(1 if bytewise else (~first | (lane >= start)) & (lane < remaining))

        with m.If(step):
            if not bytewise:
                with m.If(need_in):
                    m.d.sync += prev.eq(self.src.payload)
            with m.If(emit):
                m.d.sync += addr.eq(addr + B)
                if not bytewise:
                    m.d.sync += [remaining.eq(remaining - B), first.eq(0)]
            with m.Else():
                m.d.sync += skip.eq(0)
        with m.If(final):
            m.d.sync += self.busy.eq(0)
        cmd = self.cmd.payload
        accept = self.cmd.valid & self.cmd.ready
        dst_off = cmd.dst[:lb]
        m.d.comb += [counts.start.eq(accept), counts.out_words.eq((dst_off + cmd.n + B - 1) >> lb)]
        if not bytewise:
            m.d.comb += counts.in_words.eq(Mux(cmd.fill, 0, (cmd.src_off + cmd.n + B - 1) >> lb))
        with m.If(accept):
            m.d.sync += [
                self.busy.eq(1),
                fill.eq(cmd.fill),
                skip.eq(~cmd.fill & (cmd.src_off > dst_off)),
                shift.eq(dst_off - cmd.src_off),
                addr.eq(cmd.dst >> lb << lb),
            ]
            if not bytewise:
                m.d.sync += [first.eq(1), start.eq(dst_off), remaining.eq(dst_off + cmd.n)]
        return m
