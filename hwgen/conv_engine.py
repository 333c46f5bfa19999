"""The convolution engine: runs one CONV instruction (docs/isa.md) on the PE array.

Semantics are `sim.isa_sim.IsaSimulator._conv` with the buffer layouts of `hwgen.layout`.
Groups are processed in the order (output row, output-column group, oc group); each group
streams its reduction (ic group, kh, phase, q) with `kw = q * stride + phase`, one
(weight word, input window) per cycle, into the PE array, whose drain stream goes through
the post-processing (`R` lanes, one pixel's channels per beat) into the accumulator bank.

Ports (compute side of the buffers; the caller muxes the banks with the `*_bank` outputs):

- `input_even`, `input_odd`: the input bank as two memories of `C * S`-byte words, even and
  odd word indices, each addressed by `word // 2`. A window of `C` pixels starting at pixel
  `p` reads words `w = p // C` and `w + 1` (even address `(w + 1) // 2`, odd `w // 2`).
  Bank: `in_bank`.
- `weight`: words of `R * S` bytes. Bank: `weight_bank`.
- `param`: words of `R * 8` bytes, word `g` = oc group `g`'s `R` channel records. Bank:
  `weight_bank` (the parameters travel with the weights, as in the ISA simulator).
- `acc_read`, `acc_write`: words of `R * 4` bytes (byte enables): word `D + L`, `L = pixel * G + g`,
  holds the `R` int32 partial sums of oc group `g` (`G = oc_groups`, `D = ceil(C * G / 4)`
  words: `hwgen.layout.partial_sums_offset`); the int8 results of that record are bytes
  `(L % 4) * R ...` of word `L // 4`. Bank: `out_bank`. With `template.partial_sums: none`
  there is no `acc_read` port: every CONV is taken as `init_from_acc = 0`, `requantize = 1`
  (the program check refuses others, `hwgen.program_walk.check_program`), so the engine has no
  partial-sum read and no raw int32 result path.

Read ports are used with `en`; their data holds while `en` is low. With `init_from_acc`, the
PE sums start from 0 as always and the partial sums enter where the bias does: the
post-processing's `bias` of a beat is its record's partial-sum word (else the parameter bias),
read from `acc_read` the cycle before the beat is on the drain (at the group's drain metadata
for its first beat, when a beat is accepted for the next one) and held in the read port until
the beat is accepted. Timing: the cycle after a command is accepted, group 0 starts.
Successive groups start `P = max(T, C * I)` cycles apart (`T = ic_groups * kernel_h * kernel_w`
reduction steps; the drain bank sends its `C` beats one every `I` cycles: `I = 1` with a
requantizer per engine, `I = hwgen.timing.serial_interval(R)` with the shared serial lane
of `template.postprocess: serial`, which is then a port, `post`). The command takes

    cycles = 1 + (N - 1) * P + T + array latency + (C - 1) * I + 1 + post latency

from the accepting cycle to the first cycle `idle` is high again (all results written), with
`N = out_rows * ow_groups * oc_groups`, array latency `5 + log2 S`
(`hwgen.timing.array_latency`), post latency `hwgen.timing.beat_latency`
(`hwgen.timing.conv_cycles`). Fields are assumed non-zero, `stride >= 1`, `last_group_cols` in
`1..C`.

In-place requantisation (`init_from_acc` and `requantize`): a beat's partial sums are read
before it is accepted and its results written after it, so when a record of the pixel set
starting at pixel `p` is read, every result written so far belongs to that set or an earlier
one and ends below byte `(p + C) * G * R`, while the partial sums not yet read start at byte
`4 * R * (D + p * G)` or later; `4 * D >= C * G` covers the difference, so no sum is
overwritten before it is read.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import ReadPort, WritePort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from hwgen.config import AcceleratorConfig, AddressSteps, PartialSums
from hwgen.delay_queue import delay_queue
from hwgen.isa import INSTRUCTION_LAYOUT, PAYLOADS, Opcode
from hwgen.layout import ACC_BYTES, PARAM_BYTES, bank_bytes
from hwgen.pe import register
from hwgen.pe_array import PEArray
from hwgen.postprocess import SHIFT_BITS, PostProcess
from hwgen.serial_post import is_serial, post_result_shape, shared_signature
from hwgen.shift_add import shift_add
from hwgen.conv_steps import steps_layout
from hwgen.timing import beat_interval, beat_latency

PARAM_RECORD = data.StructLayout({"bias": signed(32), "multiplier": unsigned(16), "shift": unsigned(8), "spare": 8})




class ConvEngine(wiring.Component):
    """One CONV at a time from `cmd` (an INSTRUCTION_LAYOUT word with a CONV payload), with the
    CONVCFG word held on `convcfg` and its pointer steps (`hwgen.conv_steps`, `pixel_bits` wide) on
    `steps`. See the module docstring for ports and timing."""

    def __init__(self, config: AcceleratorConfig) -> None:
        self.config = config
        self.rows, self.cols, self.simd = config.pe.rows, config.pe.cols, config.pe.simd
        self._array = PEArray(config, idle_zero=is_serial(config))
        self._post = None if is_serial(config) else PostProcess(self.rows, self._array.acc_shape,
                                                                   post_result_shape(config))
        self.interval, self.post_latency = beat_interval(config), beat_latency(config)
        R, C, S = self.rows, self.cols, self.simd
        input_words = bank_bytes(config, "input") // (C * S)
        self.pixel_bits = ceil_log2(bank_bytes(config, "input") // S)
        self.weight_bits = ceil_log2(bank_bytes(config, "weight") // (R * S))
        self.acc_bits = ceil_log2(bank_bytes(config, "acc") // (ACC_BYTES * R))

        def read(depth: int, word_bytes: int) -> In:
            return In(ReadPort.Signature(addr_width=ceil_log2(depth), shape=unsigned(8 * word_bytes)))

        self.partial_sums = config.template.partial_sums == PartialSums.KEPT
        members = {"post": Out(shared_signature(config).flip())} if self._post is None else {}
        if self.partial_sums:
            members["acc_read"] = read(bank_bytes(config, "acc") // (ACC_BYTES * R), ACC_BYTES * R)
        super().__init__({
            **members,
            "cmd": In(stream.Signature(INSTRUCTION_LAYOUT)),
            "convcfg": In(INSTRUCTION_LAYOUT),
            "steps": In(steps_layout(self.pixel_bits)),
            "idle": Out(1),
            "busy": Out(1),
            "in_bank": Out(1),
            "weight_bank": Out(1),
            "out_bank": Out(1),
            "input_even": read(input_words // 2, C * S),
            "input_odd": read(input_words // 2, C * S),
            "weight": read(bank_bytes(config, "weight") // (R * S), R * S),
            "param": read(bank_bytes(config, "param") // (PARAM_BYTES * R), PARAM_BYTES * R),
            "acc_write": In(WritePort.Signature(addr_width=self.acc_bits, shape=unsigned(8 * ACC_BYTES * R),
                                                granularity=8)),
        })

    @property
    def latency(self) -> int:
        """Array latency: cycles from a group's last step reaching the array to its first drain beat."""
        return self._array.latency

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.array = array = self._array
        if self._post is None:
            post = self.post
        else:
            m.submodules.post = post = self._post
        interval, post_latency = self.interval, self.post_latency
        R, C, S = self.rows, self.cols, self.simd
        log_c = exact_log2(C)
        cfg = self.convcfg.payload.convcfg
        conv = Signal(PAYLOADS[Opcode.CONV])
        pixel = unsigned(self.pixel_bits)

        # ---- per-instruction constants, latched when the command is accepted
        accept = self.cmd.valid & self.cmd.ready
        new = self.cmd.payload.payload.conv
        rowstep = self.steps.row  # pixels of one input row (all phases)
        ohstep = self.steps.oh    # input rows of one output row
        plane = self.steps.plane  # one input channel group
        set_records = Signal(self.acc_bits)   # records of a full pixel set (C pixels)
        last_records = Signal(self.acc_bits)  # records of the last pixel set of a row
        if self.config.template.address_steps == AddressSteps.COMPILER:  # last_group_cols <= C: a few adders
            last_records_product = shift_add(new.oc_groups, new.last_group_cols[:ceil_log2(C + 1)])
        else:
            last_records_product = new.last_group_cols * new.oc_groups
        with m.If(accept):
            m.d.sync += [
                conv.eq(new),
                set_records.eq(new.oc_groups << log_c),
                last_records.eq(last_records_product),
            ]
        depthwise_step = plane << exact_log2(R // S) if R >= S else plane
        m.d.comb += [self.in_bank.eq(conv.in_bank), self.weight_bank.eq(conv.weight_bank),
                     self.out_bank.eq(conv.out_bank)]

        # ---- group counters (output rows left, ow groups left, oc group) and their bases
        # (an oc group indexes a parameter word: no more of them than one bank holds)
        rows_left, owg_left, ocg = Signal(10), Signal(8), Signal(max(1, len(self.param.addr)))
        # input pixels: of (oh, ow group 0), of (oh, ow group), of the group's first input group
        row_base, cell, group_start = Signal(pixel), Signal(pixel), Signal(pixel)
        set_record = Signal(self.acc_bits)  # record L of (first pixel of the group, oc group 0)
        # the loop-end tests are registers (`_loop_ends`)
        ocg_wrap, owg_wrap, last_row = Signal(), Signal(), Signal()
        done = ocg_wrap & owg_wrap & last_row
        next_ocg = Mux(ocg_wrap, 0, ocg + 1)
        next_row = row_base + ohstep
        next_cell = Mux(owg_wrap, next_row, cell + C)
        # depthwise: the first input group (ocg * R) // S moves by R // S per oc group, or by
        # one every S // R oc groups
        base_moves = conv.depthwise if R >= S else conv.depthwise & ((next_ocg * R) % S == 0)
        next_set_record = Mux(ocg_wrap, set_record + Mux(owg_wrap, last_records, set_records), set_record)
        next_input = Signal(pixel)  # the next group's `group_start`
        m.d.comb += next_input.eq(Mux(ocg_wrap, next_cell, group_start + Mux(base_moves, depthwise_step, 0)))
        record = set_record + ocg

        # ---- reduction counters (ic groups left, kernel rows left, phase, kw = q * stride + phase)
        # and pointers
        icg_left, kh_left, phase, kw = Signal(8), Signal(4), Signal(3), Signal(4)
        group_ptr, row_ptr = Signal(pixel), Signal(pixel)      # input pixel of (icg, kh = 0), of (icg, kh)
        phase_ptr, pixel_ptr = Signal(pixel), Signal(pixel)    # of (icg, kh, phase, q = 0), of the step
        weight_row = Signal(self.weight_bits)  # weight word of (ocg, icg, kh, 0)
        running, at_first = Signal(), Signal()
        gap = Signal(range(C * interval))  # cycles until the next group may start
        drain = (C - 1) * interval + 1 + post_latency  # from a group's first drain beat to its last write
        flush = Signal(range(self.latency + drain + 1))
        q_wrap, phase_wrap, kh_wrap, icg_wrap = Signal(), Signal(), Signal(), Signal()
        last_step = q_wrap & phase_wrap & kh_wrap & icg_wrap
        issue = Signal()  # a step enters the array: running & (~at_first | gap == 0), registered
        idle = Signal(init=1)
        self._loop_ends(m, accept, idle, issue, cfg, conv, new,
                        reduction=(q_wrap, phase_wrap, kh_wrap, icg_wrap, kw, phase, kh_left, icg_left),
                        groups=(ocg_wrap, owg_wrap, last_row, ocg, owg_left, rows_left))

        # `issue` and `idle` are registers, computed from the next running state (timing)
        m.d.comb += [self.idle.eq(idle), self.busy.eq(~idle), self.cmd.ready.eq(idle)]
        ends = issue & last_step & done
        next_running, next_at_first, next_gap, next_flush = Signal(), Signal(), Signal.like(gap), Signal.like(flush)
        m.d.comb += [next_running.eq(Mux(accept, 1, running & ~ends)),
                     next_at_first.eq(Mux(accept, 1, Mux(issue, last_step, at_first))),
                     next_gap.eq(Mux(issue & at_first, C * interval - 1, Mux(gap != 0, gap - 1, 0))),
                     next_flush.eq(Mux(ends, self.latency + drain, Mux(flush != 0, flush - 1, 0)))]
        m.d.sync += [running.eq(next_running), at_first.eq(next_at_first), gap.eq(next_gap), flush.eq(next_flush),
                     issue.eq(next_running & (~next_at_first | (next_gap == 0))),
                     idle.eq(~next_running & (next_flush == 0))]
        with m.If(accept):
            m.d.sync += [
                row_base.eq(0), cell.eq(0), group_start.eq(0), set_record.eq(0),
                group_ptr.eq(0), row_ptr.eq(0), phase_ptr.eq(0), pixel_ptr.eq(0), weight_row.eq(0),
            ]
        with m.If(issue):
            with m.If(~q_wrap):
                m.d.sync += pixel_ptr.eq(pixel_ptr + 1)
            with m.Elif(~phase_wrap):
                m.d.sync += [phase_ptr.eq(phase_ptr + cfg.in_row_pitch), pixel_ptr.eq(phase_ptr + cfg.in_row_pitch)]
            with m.Else():
                m.d.sync += weight_row.eq(weight_row + cfg.kernel_w)
                with m.If(~kh_wrap):
                    start = row_ptr + rowstep
                    m.d.sync += [row_ptr.eq(start), phase_ptr.eq(start), pixel_ptr.eq(start)]
                with m.Elif(~icg_wrap):
                    start = group_ptr + plane
                    m.d.sync += [group_ptr.eq(start), row_ptr.eq(start), phase_ptr.eq(start), pixel_ptr.eq(start)]
                with m.Else():
                    m.d.sync += [
                        group_ptr.eq(next_input), row_ptr.eq(next_input), phase_ptr.eq(next_input),
                        pixel_ptr.eq(next_input), row_base.eq(Mux(ocg_wrap & owg_wrap, next_row, row_base)),
                        group_start.eq(next_input), set_record.eq(next_set_record),
                    ]
                    with m.If(ocg_wrap):
                        m.d.sync += [cell.eq(next_cell), weight_row.eq(0)]

        # ---- stage 0: input reads; stage 1: funnel shift into the PE array and the weight read,
        # whose data enters the array a cycle after the pixels (`hwgen.pe_array`)
        word = pixel_ptr >> log_c
        valid = register(m, issue, "step_valid", reset_less=False)
        m.d.comb += [
            self.input_even.addr.eq((word + 1) >> 1), self.input_odd.addr.eq(word >> 1),
            self.input_even.en.eq(issue), self.input_odd.en.eq(issue),
            self.weight.addr.eq(register(m, weight_row + kw, "step_weight")), self.weight.en.eq(valid),
        ]
        first = register(m, at_first, "step_first")
        last = register(m, last_step, "step_last")
        shift = register(m, pixel_ptr[:log_c], "step_shift")
        odd = register(m, word[0], "step_odd")
        low = Mux(odd, self.input_odd.data, self.input_even.data)
        high = Mux(odd, self.input_even.data, self.input_odd.data)
        m.d.comb += [
            array.pixels.eq(Cat(low, high).bit_select(shift * (8 * S), 8 * C * S)),
            array.weights.eq(self.weight.data), array.zx.eq(cfg.in_zero_point),
            array.valid.eq(valid), array.first.eq(first), array.last.eq(last),
        ]

        # ---- drain: the group's metadata follows its last step by the array latency
        group_meta = Signal(data.StructLayout({"ocg": 8, "record": self.acc_bits, "cols": range(C + 1)}))
        m.d.comb += [group_meta.ocg.eq(ocg), group_meta.record.eq(record),
                     group_meta.cols.eq(Mux(owg_wrap, conv.last_group_cols, C))]
        # groups' last steps are at least C * interval cycles apart (the group period)
        meta_valid, meta = delay_queue(m, group_meta, issue & last_step, self.latency, C * interval, "meta",
                                       valid=array.loaded)
        drain_record = Signal(self.acc_bits)
        drain_col, drain_cols = Signal(range(C + 1)), Signal(range(C + 1))
        beat = array.drain.valid & array.drain.ready
        with m.If(beat):
            m.d.sync += [drain_record.eq(drain_record + conv.oc_groups), drain_col.eq(drain_col + 1)]
        with m.If(meta_valid):
            m.d.sync += [drain_record.eq(meta.record), drain_col.eq(0), drain_cols.eq(meta.cols)]
        m.d.comb += [self.param.addr.eq(meta.ocg), self.param.en.eq(meta_valid)]
        params = data.View(data.ArrayLayout(PARAM_RECORD, R), self.param.data)
        layer = post.i.payload.layer
        m.d.comb += [
            post.i.valid.eq(array.drain.valid), array.drain.ready.eq(post.i.ready), post.o.ready.eq(1),
            layer.zero_point.eq(cfg.out_zero_point), layer.low.eq(cfg.act_min), layer.high.eq(cfg.act_max),
        ]
        for r in range(R):
            m.d.comb += [post.i.payload.acc[r].eq(array.drain.payload.acc[r]),  # sign-extended to the post's width
                         post.i.payload.bias[r].eq(params[r].bias),
                         post.i.payload.multiplier[r].eq(params[r].multiplier),
                         post.i.payload.shift[r].eq(params[r].shift[:SHIFT_BITS])]

        # ---- write: the beat's address and byte enables follow it through the post-processing
        # (beats are accepted at least `interval` cycles apart; their results are `post.o.valid`)
        beat_meta = Signal(data.StructLayout({"record": self.acc_bits, "write": 1}))
        m.d.comb += [beat_meta.record.eq(drain_record), beat_meta.write.eq(drain_col < drain_cols)]
        out, written = delay_queue(m, beat_meta, beat, post_latency, interval, "write", valid=post.o.valid)
        record_bytes = Const((1 << R) - 1, ACC_BYTES * R) << (written.record[:2] * R)
        int8 = Cat(*(post.o.payload[r][:8] for r in range(R)))
        writes = out & written.write
        m.d.comb += [self.acc_write.addr.eq(written.record >> 2), self.acc_write.en.eq(Mux(writes, record_bytes, 0)),
                     self.acc_write.data.eq(Cat(*[int8] * ACC_BYTES))]
        if self.partial_sums:  # the beat's record is read the cycle before it is on the drain
            next_record = Mux(meta_valid, meta.record, drain_record + conv.oc_groups)
            self._partial_sums(m, conv, post, next_record, meta_valid | beat, writes, written.record)
        return m

    @staticmethod
    def _loop_ends(m: Module, accept: Value, idle: Value, issue: Value, cfg: data.View, conv: data.View, new: data.View,
                   reduction: tuple, groups: tuple) -> None:
        """The loop counters and their loop-end flags. Each flag is a register set from compares
        of registers, so no compare lies between a counter and the pointer muxes (timing).
        `reduction`: flags (q, phase, kh, icg) and counters (kw, phase, kernel rows left, ic groups
        left); `groups`: flags (ocg, owg, last row) and counters (ocg, ow groups left, rows left)."""
        q_wrap, phase_wrap, kh_wrap, icg_wrap, kw, phase, kh_left, icg_left = reduction
        ocg_wrap, owg_wrap, last_row, ocg, owg_left, rows_left = groups
        phase_step = issue & q_wrap       # the loops each step ends: q, then phase, kh, ...
        kh_step = phase_step & phase_wrap
        icg_step = kh_step & kh_wrap
        group_step = icg_step & icg_wrap
        owg_step = group_step & ocg_wrap
        # kw and phase are 0 while the engine is idle (its last step ends every loop), their flags
        # those of the CONVCFG held then: no compare waits for the command's accept (timing)
        next_kw, next_phase = Signal.like(kw), Signal.like(phase)
        m.d.comb += [next_kw.eq(kw), next_phase.eq(phase)]
        with m.If(idle | kh_step):
            m.d.comb += [next_kw.eq(0), next_phase.eq(0)]
        with m.Elif(phase_step):
            m.d.comb += [next_kw.eq(phase + 1), next_phase.eq(phase + 1)]
        with m.Elif(issue):
            m.d.comb += next_kw.eq(kw + cfg.stride)
        m.d.sync += [kw.eq(next_kw), phase.eq(next_phase), q_wrap.eq(next_kw + cfg.stride >= cfg.kernel_w),
                     phase_wrap.eq((next_phase + 1 >= cfg.stride) | (next_phase + 1 >= cfg.kernel_w))]
        _count_down(m, kh_left, kh_wrap, accept, cfg.kernel_h, kh_step)
        _count_down(m, icg_left, icg_wrap, accept, Mux(accept, new.ic_groups, conv.ic_groups), icg_step)
        _count_down(m, owg_left, owg_wrap, accept, Mux(accept, new.ow_groups, conv.ow_groups), owg_step)
        _count_down(m, rows_left, last_row, accept, new.out_rows, owg_step & owg_wrap, restarts=False)
        with m.If(accept | group_step & ocg_wrap):
            m.d.sync += [ocg.eq(0), ocg_wrap.eq(Mux(accept, new.oc_groups, conv.oc_groups) == 1)]
        with m.Elif(group_step):
            m.d.sync += [ocg.eq(ocg + 1), ocg_wrap.eq(ocg + 2 == conv.oc_groups)]

    def _partial_sums(self, m: Module, conv: Value, post, next_record: Value, next_beat: Value, writes: Value,
                      written_record: Value) -> None:
        """With `init_from_acc`, a beat's bias is its record's partial sums, read when the next
        beat's record is known (`next_beat`: the group's first record at its drain metadata,
        the next one whenever a beat is accepted); without `requantize`, the results (`writes`
        of `written_record`) are written whole, as int32 partial sums."""
        R = self.rows
        partials = Signal(self.acc_bits)  # word offset of the int32 partial sums (hwgen.layout)
        with m.If(self.cmd.valid & self.cmd.ready):
            new = self.cmd.payload.payload.conv
            m.d.sync += partials.eq(((new.oc_groups << exact_log2(self.cols)) + ACC_BYTES - 1) >> exact_log2(ACC_BYTES))
        m.d.comb += [self.acc_read.addr.eq(next_record + partials),
                     self.acc_read.en.eq(conv.init_from_acc & next_beat)]
        partial_sums = data.View(data.ArrayLayout(signed(32), R), self.acc_read.data)
        m.d.comb += post.i.payload.layer.raw.eq(~conv.requantize)
        with m.If(conv.init_from_acc):
            m.d.comb += [post.i.payload.bias[r].eq(partial_sums[r]) for r in range(R)]
        with m.If(~conv.requantize):
            m.d.comb += [self.acc_write.addr.eq(written_record + partials),
                         self.acc_write.en.eq(Mux(writes, (1 << (ACC_BYTES * R)) - 1, 0)),
                         self.acc_write.data.eq(Cat(*post.o.payload))]


def _count_down(m: Module, left: Signal, last: Signal, load: Value, count: Value, step: Value,
                restarts: bool = True) -> None:
    """A loop counter: `left` iterations to go, `last` registered as `left == 1`; `load` starts
    it at `count`, `step` counts down or, after the last iteration of a loop that `restarts`,
    starts it again at `count` as loaded (which then must hold still)."""
    single = count == 1
    with m.If(load):
        m.d.sync += [left.eq(count), last.eq(single)]
    with m.Elif(step):
        with m.If(~last):
            m.d.sync += [left.eq(left - 1), last.eq(left == 2)]
        if restarts:
            with m.Else():
                m.d.sync += [left.eq(count), last.eq(single)]
