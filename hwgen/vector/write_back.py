"""The vector unit's results: each window's total through the post-processing, with its
channels' parameters, into the accumulator bank."""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import ReadPort, WritePort
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from hwgen.isa import Opcode
from hwgen.isa_layout import PAYLOADS
from hwgen.vector.params import CONTROL, PARAM_RECORD, VectorParams


class VecWriteBack(wiring.Component):
    """Reads a window's parameters (multiplier and shift of record `g * S + lane`; the bias is
    always 0) when its last read is at `param_read`, holding them in the port; requantizes the
    window's total with them, the output zero point and the act_min/act_max clamp; writes the
    `S` results as the next `S`-byte chunk of the accumulator bank. The command's last output
    leaves the post-processing `post_latency` cycles after its input; `busy` falls with its write.

    - `start`: a command is accepted; `nonempty`: it has outputs; `busy`: it is under way;
    - `convcfg`: the CONVCFG payload;
    - `param_read`: the read whose window's parameters to read (at its `last`);
    - `param`: parameter-bank words of `R` records;
    - `total`, `done`: the accumulated window and its control;
    - `post`: the post-processing (the unit's own, or the shared lane);
    - `acc`: accumulator-bank words of `R * 4` bytes, with byte enables.
    """

    def __init__(self, params: VectorParams, param_port: ReadPort.Signature, acc_port: WritePort.Signature,
                 post: wiring.Signature):
        self.params = params
        super().__init__({
            "start": In(1),
            "nonempty": In(1),
            "busy": Out(1),
            "convcfg": In(PAYLOADS[Opcode.CONVCFG]),
            "param_read": In(CONTROL),
            "param": In(param_port),
            "total": In(data.ArrayLayout(params.acc_shape, params.simd)),
            "done": In(CONTROL),
            "post": Out(post.flip()),
            "acc": In(acc_port),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        S, cfg, post, done, param_read = p.simd, self.convcfg, self.post, self.done, self.param_read
        with m.If(self.start):
            m.d.sync += self.busy.eq(self.nonempty)
        # windows more than the pipeline apart (the shared lane's interval): the window's last
        # read also reads its parameters, held in the port until the next window's (the channel
        # group then need not travel down the pipeline)
        m.d.comb += [self.param.addr.eq(param_read.group >> p.log_groups),
                     self.param.en.eq(param_read.valid & param_read.last)]
        records = data.ArrayLayout(PARAM_RECORD, S)
        params = records(self.param.data.word_select(done.group[:p.log_groups], records.size))
        m.d.comb += [
            post.i.valid.eq(done.valid & done.last),
            post.o.ready.eq(1),
            post.i.payload.layer.zero_point.eq(cfg.out_zero_point),
            post.i.payload.layer.low.eq(cfg.act_min), post.i.payload.layer.high.eq(cfg.act_max),
            *(post.i.payload.acc[lane].eq(self.total[lane]) for lane in range(S)),
            *(post.i.payload.multiplier[lane].eq(params[lane].multiplier) for lane in range(S)),
            *(post.i.payload.shift[lane].eq(params[lane].shift) for lane in range(S)),
        ]

        ending = Signal(range(p.post_latency + 1))  # cycles until the last output, from its input on
        with m.If(done.valid & done.last & done.final):
            m.d.sync += ending.eq(p.post_latency)
        with m.Elif(ending != 0):
            m.d.sync += ending.eq(ending - 1)
        chunk_bits = exact_log2(len(self.acc.en) // S)
        out_chunk = Signal(len(self.acc.addr) + chunk_bits)
        result = Cat(*(post.o.payload[lane][:8] for lane in range(S)))
        m.d.comb += [
            self.acc.addr.eq(out_chunk[chunk_bits:]),
            self.acc.data.eq(result.replicate(1 << chunk_bits)),
            self.acc.en.eq(Cat(*((post.o.valid & (out_chunk[:chunk_bits] == k)).replicate(S)
                                 for k in range(1 << chunk_bits)))),
        ]
        with m.If(self.start):
            m.d.sync += out_chunk.eq(0)
        with m.Elif(post.o.valid):
            m.d.sync += out_chunk.eq(out_chunk + 1)
            with m.If(ending == 1):
                m.d.sync += self.busy.eq(0)
        return m
