"""The convolution engine's accumulator writes: the post-processing's results into the
accumulator bank."""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.memory import WritePort
from amaranth.lib.wiring import In

from hwgen.conv.drain import beat_layout
from hwgen.conv.params import ConvParams
from hwgen.delay_queue import delay_queue
from hwgen.isa import Opcode
from hwgen.isa_layout import PAYLOADS
from hwgen.layout import ACC_BYTES


class ConvWrite(wiring.Component):
    """Writes each beat's results: its address and byte enables follow it through the
    post-processing (beats are accepted at least `interval` cycles apart; their results are
    `results.valid`); the `R` int8 results of record `L` are bytes `(L % 4) * R ...` of word
    `L // 4`. With `partial_sums`, a CONV without `requantize` writes them whole, as int32
    partial sums, at word `partials + L`.

    - `beat`, `beat_meta`: a drain beat enters the post-processing, and its record and columns;
    - `results`: the post-processing's results;
    - `acc_write`: accumulator-bank words of `R * 4` bytes (byte enables);
    - `conv`, `partials`: the CONV payload and the partial sums' offset (with `partial_sums`).
    """

    def __init__(self, params: ConvParams, results: wiring.Member, acc_port: WritePort.Signature):
        self.params = params
        partial_sums = ({"conv": In(PAYLOADS[Opcode.CONV]), "partials": In(params.acc_bits)}
                        if params.partial_sums else {})
        super().__init__({
            "beat": In(1),
            "beat_meta": In(beat_layout(params)),
            "results": results,
            "acc_write": In(acc_port),
            **partial_sums,
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p, results, acc_write = self.params, self.results, self.acc_write
        R = p.rows
        m.d.comb += results.ready.eq(1)
        out, written = delay_queue(m, self.beat_meta, self.beat, p.post_latency, p.interval, "write",
                                   valid=results.valid)
        record_bytes = Const((1 << R) - 1, ACC_BYTES * R) << (written.record[:2] * R)
        int8 = Cat(*(results.payload[r][:8] for r in range(R)))
        if p.pools:
            int8 = self._running_max(m, out, written, [results.payload[r][:8] for r in range(R)])
        writes = out & written.write
        m.d.comb += [acc_write.addr.eq(written.record >> 2), acc_write.en.eq(Mux(writes, record_bytes, 0)),
                     acc_write.data.eq(Cat(*[int8] * ACC_BYTES))]
        if p.partial_sums:
            with m.If(~self.conv.requantize):
                m.d.comb += [acc_write.addr.eq(written.record + self.partials),
                             acc_write.en.eq(Mux(writes, (1 << (ACC_BYTES * R)) - 1, 0)),
                             acc_write.data.eq(Cat(*results.payload))]
        return m

    def _running_max(self, m: Module, out, written, results: list) -> Value:
        """A fused pool's running maximum: one register of `R` int8 values per window slot of a
        group (`C / 2`), started by a window's first beat and raised by each of its others (the
        window's beats of the block's rows come in consecutive groups, its columns in one); the
        result is the updated maximum."""
        p = self.params
        slots = [Signal(8 * p.rows, name=f"pool_max{i}") for i in range(p.cols // 2)]
        held = slots[0]
        for index, slot in enumerate(slots[1:], 1):
            held = Mux(written.slot == index, slot, held)
        maxima = []
        for r, value in enumerate(results):
            value, kept = value.as_signed(), held[8 * r:8 * r + 8].as_signed()
            maxima.append(Mux(written.first | (value > kept), value, kept))
        updated = Cat(*maxima)
        for index, slot in enumerate(slots):
            with m.If(out & ((written.slot == index) if len(slots) > 1 else 1)):
                m.d.sync += slot.eq(updated)
        return updated
