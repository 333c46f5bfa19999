"""The convolution engine's drain: the PE array's results into the post-processing, with their
channels' parameters (or partial sums) as the bias."""
from __future__ import annotations

from amaranth.hdl import Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.memory import ReadPort
from amaranth.lib.wiring import In, Out

from hwgen.conv.params import ConvParams
from hwgen.delay_queue import delay_queue
from hwgen.isa import Opcode
from hwgen.isa_layout import PAYLOADS
from hwgen.postprocess import SHIFT_BITS

PARAM_RECORD = data.StructLayout({"bias": signed(32), "multiplier": unsigned(16), "shift": unsigned(8), "spare": 8})


def beat_layout(params: ConvParams) -> data.StructLayout:
    """What follows a drain beat through the post-processing: its record and whether it is written
    (a column of the group; with a fused pool, the last of its pooled pixel's window), and with
    fused pools whether it starts its window (`first`) and the window's `slot` in the group."""
    pool = {"first": 1, "slot": range(params.cols // 2)} if params.pools else {}
    return data.StructLayout({"record": params.acc_bits, "write": 1, **pool})


class ConvDrain(wiring.Component):
    """The group's metadata (oc group, record, columns) follows its last step by the array latency
    (groups' last steps are at least `C * interval` cycles apart, the group period); the drain
    sends the group's `C` beats, one pixel's `R` channels each, into the post-processing, with the
    parameters of its oc group (read at the metadata). With `partial_sums` and `init_from_acc` a
    beat's bias is its record's partial sums, read the cycle before the beat is on the drain (at
    the group's metadata for its first beat, when a beat is accepted for the next one) and held
    in the read port until the beat is accepted; without `requantize` the results are raw.

    - `issue`, `last_step`: a group's last step enters the array; `loaded`: the array's `loaded`
      (a group's last step, the array latency later);
    - `ocg`, `record`, `owg_wrap`: the group's oc group, first record, and whether it is the last
      of its row;
    - `conv`, `convcfg`: the CONV and CONVCFG payloads; `partials`: the partial sums' offset;
    - `drain`: the PE array's drain; `post`: the post-processing's input;
    - `param`: parameter-bank words of `R` records; `acc_read`: the partial sums' reads;
    - `beat`, `beat_meta`: a drain beat enters the post-processing, and its record and columns.
    """

    def __init__(self, params: ConvParams, param_port: ReadPort.Signature, drain: wiring.Member,
                 post: wiring.Member, acc_port: ReadPort.Signature | None = None):
        self.params = params
        partial_sums = {"partials": In(params.acc_bits), "acc_read": In(acc_port)} if params.partial_sums else {}
        super().__init__({
            "issue": In(1),
            "last_step": In(1),
            "loaded": In(1),
            "ocg": In(params.group_bits),
            "record": In(params.acc_bits),
            "owg_wrap": In(1),
            **({"top": In(1), "bottom": In(1)} if params.pools else {}),
            "conv": In(PAYLOADS[Opcode.CONV]),
            "convcfg": In(PAYLOADS[Opcode.CONVCFG]),
            "drain": drain,
            "post": post,
            "param": In(param_port),
            **partial_sums,
            "beat": Out(1),
            "beat_meta": Out(beat_layout(params)),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p, conv, cfg, drain, post = self.params, self.conv, self.convcfg, self.drain, self.post
        R, C = p.rows, p.cols
        rows = {"top": 1, "bottom": 1} if p.pools else {}  # the group is its row block's first, last row
        group_meta = Signal(data.StructLayout({"ocg": 8, "record": p.acc_bits, "cols": range(C + 1), **rows}))
        m.d.comb += [group_meta.ocg.eq(self.ocg), group_meta.record.eq(self.record),
                     group_meta.cols.eq(Mux(self.owg_wrap, conv.last_group_cols, C))]
        if p.pools:
            m.d.comb += [group_meta.top.eq(self.top), group_meta.bottom.eq(self.bottom)]
        meta_valid, meta = delay_queue(m, group_meta, self.issue & self.last_step, p.latency, C * p.interval, "meta",
                                       valid=self.loaded)
        drain_record = Signal(p.acc_bits)
        drain_col, drain_cols = Signal(range(C + 1)), Signal(range(C + 1))
        beat = self.beat
        m.d.comb += beat.eq(drain.valid & drain.ready)
        record_step = conv.oc_groups
        m.d.comb += [self.param.addr.eq(meta.ocg), self.param.en.eq(meta_valid),
                     self.beat_meta.record.eq(drain_record), self.beat_meta.write.eq(drain_col < drain_cols)]
        if p.pools:
            record_step = self._pool_beat(m, meta_valid, meta, drain_col, drain_cols)
        with m.If(beat):
            m.d.sync += [drain_record.eq(drain_record + record_step), drain_col.eq(drain_col + 1)]
        with m.If(meta_valid):
            m.d.sync += [drain_record.eq(meta.record), drain_col.eq(0), drain_cols.eq(meta.cols)]
        params = data.View(data.ArrayLayout(PARAM_RECORD, R), self.param.data)
        layer = post.payload.layer
        m.d.comb += [
            post.valid.eq(drain.valid), drain.ready.eq(post.ready),
            layer.zero_point.eq(cfg.out_zero_point), layer.low.eq(cfg.act_min), layer.high.eq(cfg.act_max),
        ]
        for r in range(R):
            m.d.comb += [post.payload.acc[r].eq(drain.payload.acc[r]),  # sign-extended to the post's width
                         post.payload.bias[r].eq(params[r].bias),
                         post.payload.multiplier[r].eq(params[r].multiplier),
                         post.payload.shift[r].eq(params[r].shift[:SHIFT_BITS])]
        if p.partial_sums:  # the beat's record is read the cycle before it is on the drain
            next_record = Mux(meta_valid, meta.record, drain_record + conv.oc_groups)
            m.d.comb += [self.acc_read.addr.eq(next_record + self.partials),
                         self.acc_read.en.eq(conv.init_from_acc & (meta_valid | beat))]
            partial_sums = data.View(data.ArrayLayout(signed(32), R), self.acc_read.data)
            m.d.comb += layer.raw.eq(~conv.requantize)
            with m.If(conv.init_from_acc):
                m.d.comb += [post.payload.bias[r].eq(partial_sums[r]) for r in range(R)]
        return m

    def _pool_beat(self, m: Module, meta_valid, meta, drain_col: Signal, drain_cols: Signal):
        """A fused pool's beat: its window's slot, whether it starts the window (the block's top
        row, the window's first column) and is written (bottom row, last column); the record
        moves to the next pooled pixel after a window's last column (returned: the step)."""
        p, conv, out = self.params, self.conv, self.beat_meta
        pool_log = p.pool_log(conv.pool)
        mask = (Const(1, 3) << pool_log) - 1
        top, bottom = Signal(), Signal()
        with m.If(meta_valid):
            m.d.sync += [top.eq(meta.top), bottom.eq(meta.bottom)]
        column = drain_col & mask
        window_end = column == mask
        m.d.comb += [out.first.eq(top & (column == 0)), out.slot.eq(drain_col >> pool_log),
                     out.write.eq((drain_col < drain_cols) & bottom & window_end)]
        return Mux(window_end, conv.oc_groups, 0)
