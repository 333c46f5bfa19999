"""The convolution engine: runs one CONV instruction (docs/isa.md) on the PE array.

Semantics are `sim.isa_sim.IsaSimulator._conv` with the buffer layouts of `hwgen.layout`.
Groups are processed in the order (output row, output-column group, oc group), or with a
fused pool of k (`pool`, `template.max_fused_pool`) (block of k output rows, output-column
group, oc group, row of the block), the int8 results max-pooled on their way to the
accumulator bank (`hwgen.conv.write`); each group
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

from amaranth.hdl import Module, unsigned
from amaranth.lib import stream, wiring
from amaranth.lib.memory import ReadPort, WritePort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from hwgen.config import AcceleratorConfig, AddressSteps, PartialSums
from hwgen.conv.command import ConvCommand
from hwgen.conv.drain import ConvDrain
from hwgen.conv.feed import ConvFeed
from hwgen.conv.loops import ConvLoopEnds
from hwgen.conv.params import ConvParams
from hwgen.conv.pointers import ConvPointers
from hwgen.conv.schedule import ConvSchedule
from hwgen.conv.write import ConvWrite
from hwgen.isa_layout import INSTRUCTION_LAYOUT
from hwgen.layout import ACC_BYTES, PARAM_BYTES, bank_bytes
from hwgen.pe_array import PEArray
from hwgen.postprocess import PostProcess
from hwgen.serial_post import post_result_shape, shared_signature
from hwgen.serial_shifts import is_serial
from hwgen.conv_steps import steps_layout
from hwgen.timing import beat_interval, beat_latency



class ConvEngine(wiring.Component):
    """One CONV at a time from `cmd` (an INSTRUCTION_LAYOUT word with a CONV payload), with the
    CONVCFG word held on `convcfg` and its pointer steps (`hwgen.conv_steps`, `pixel_bits` wide) on
    `steps`. See the module docstring for ports and timing.

    Its parts (`hwgen.conv`): `ConvCommand` (the CONV latched on accept), `ConvLoopEnds` (loop
    counters and end flags), `ConvSchedule` (when steps enter the array), `ConvPointers` (input
    pixel and weight word of each step), `ConvFeed` (the reads into the PE array), the `PEArray`,
    `ConvDrain` (drain and parameters into the post-processing), `ConvWrite` (accumulator writes).
    """

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
        self.params = ConvParams(rows=R, cols=C, simd=S, latency=self._array.latency, pixel_bits=self.pixel_bits,
                                 weight_bits=self.weight_bits, acc_bits=self.acc_bits,
                                 group_bits=max(1, len(self.param.addr)), interval=self.interval,
                                 post_latency=self.post_latency, partial_sums=self.partial_sums,
                                 compiler_steps=config.template.address_steps == AddressSteps.COMPILER,
                                 max_pool=config.template.max_fused_pool)

    @property
    def latency(self) -> int:
        """Array latency: cycles from a group's last step reaching the array to its first drain beat."""
        return self._array.latency

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        m.submodules.array = array = self._array
        if self._post is None:
            post = wiring.flipped(self.post)
        else:
            m.submodules.post = post = self._post
        m.submodules.command = command = ConvCommand(p)
        m.submodules.loop_ends = ends = ConvLoopEnds(p)
        m.submodules.schedule = schedule = ConvSchedule(p)
        m.submodules.pointers = pointers = ConvPointers(p)
        m.submodules.feed = feed = ConvFeed(p, wiring.flipped(self.input_even).signature,
                                            wiring.flipped(self.weight).signature, array.signature)
        m.submodules.drain = drain = ConvDrain(p, wiring.flipped(self.param).signature,
                                               array.signature.members["drain"].flip(),
                                               post.signature.members["i"].flip(),
                                               wiring.flipped(self.acc_read).signature if p.partial_sums else None)
        m.submodules.write = write = ConvWrite(p, post.signature.members["o"].flip(),
                                               wiring.flipped(self.acc_write).signature)

        cfg, new, conv, wraps = self.convcfg.payload.convcfg, self.cmd.payload.payload.conv, command.conv, ends.wraps
        accept = self.cmd.valid & self.cmd.ready
        m.d.comb += [
            self.idle.eq(schedule.idle), self.busy.eq(~schedule.idle), self.cmd.ready.eq(schedule.idle),
            self.in_bank.eq(conv.in_bank), self.weight_bank.eq(conv.weight_bank), self.out_bank.eq(conv.out_bank),
            command.start.eq(accept), command.new.eq(new),
            ends.start.eq(accept), ends.new.eq(new), ends.conv.eq(conv), ends.convcfg.eq(cfg),
            ends.idle.eq(schedule.idle), ends.issue.eq(schedule.issue),
            schedule.start.eq(accept), schedule.last_step.eq(ends.last_step), schedule.done.eq(ends.done),
            pointers.start.eq(accept), pointers.issue.eq(schedule.issue), pointers.wraps.eq(wraps),
            pointers.ocg.eq(ends.ocg), pointers.convcfg.eq(cfg), pointers.steps.eq(self.steps), pointers.conv.eq(conv),
            pointers.set_records.eq(command.set_records), pointers.last_records.eq(command.last_records),
            feed.issue.eq(schedule.issue), feed.pixel_ptr.eq(pointers.pixel_ptr),
            feed.weight_row.eq(pointers.weight_row),
            feed.kw.eq(ends.kw), feed.at_first.eq(schedule.at_first), feed.last_step.eq(ends.last_step),
            *(getattr(array, name).eq(getattr(feed, name)) for name in ("pixels", "weights", "valid", "first", "last")),
            array.zx.eq(cfg.in_zero_point),
            drain.issue.eq(schedule.issue), drain.last_step.eq(ends.last_step), drain.loaded.eq(array.loaded),
            drain.ocg.eq(ends.ocg), drain.record.eq(pointers.record), drain.owg_wrap.eq(wraps.owg),
            drain.conv.eq(conv), drain.convcfg.eq(cfg),
            write.beat.eq(drain.beat), write.beat_meta.eq(drain.beat_meta),
        ]
        if p.pools:
            m.d.comb += [drain.top.eq(ends.top), drain.bottom.eq(wraps.sub)]
        if p.partial_sums:
            m.d.comb += [drain.partials.eq(command.partials), write.conv.eq(conv), write.partials.eq(command.partials)]
            wiring.connect(m, wiring.flipped(self.acc_read), drain.acc_read)
        for port, part in ((self.input_even, feed.input_even), (self.input_odd, feed.input_odd),
                           (self.weight, feed.weight), (self.param, drain.param), (self.acc_write, write.acc_write)):
            wiring.connect(m, wiring.flipped(port), part)
        wiring.connect(m, array.drain, drain.drain)
        wiring.connect(m, drain.post, post.i)
        wiring.connect(m, post.o, write.results)
        return m
