"""The pooling / element-wise unit: executes one VEC instruction (docs/isa.md) on `S` lanes.

Semantics are `sim.isa_sim.IsaSimulator._vec` with the buffer layouts of `hwgen.layout`: per
output pixel `(oh, ow)` and channel group `g`, the `S` lanes of one pixel are reduced over

- MAX / SUM: the CONVCFG kernel window with its stride, read from the phase-decomposed input
  (input row `oh * stride + kh`, phase `kw % stride`, index `ow + kw // stride`), values
  `x - in_zero_point`;
- COPY: the pixel itself (input layout with stride 1), `(x - in_zero_point) * multiplier_a`;
- ADD: COPY plus `(x2 - in2_zero_point) * multiplier_b`, `x2` read `in2_addr` bytes further
  (`in2_addr` must be a multiple of `S`: the unit addresses whole pixels);

then requantized with the multiplier and shift of parameter record `g * S + lane` (bias
ignored), the output zero point and the act_min/act_max clamp (`hwgen.postprocess`), and
written as int8 at byte `acc_element(oh, ow, g * S + lane, width=out_cols,
channels=channel_groups * S)` of the accumulator bank. Kernel sizes must be >= 1, shifts <= 62
(15 to 30 with `template.postprocess: serial`).
The caller connects the buffer ports to the banks `in_bank`, `param_bank` and `out_bank` name.

Schedule: one read of one pixel's `S` lanes per cycle, loops (outer to inner) `oh, ow, g, kh,
kw, operand`, so the results are consecutive `S`-byte chunks of the accumulator bank. Pipeline
(nothing stalls): read issue (with `template.timing_registers` the read address, the sum of the
loops' offsets, first goes into a register: the read a cycle later, `address_latency`) → select
the pixel in the word, the zero point and the coefficient (a register right after the block
RAM's output and the word selection) → subtract the zero point → product → accumulate (max or
sum) and read the parameters (MAX alone: read → select and subtract the zero point →
accumulate, `accumulate_latency`) → post-processing → byte-enabled write. With
`template.postprocess: serial` the post-processing is the lane the engines share (a port,
`post`: the unit fills its first `S` lanes) and an output window starts at least
`hwgen.timing.serial_interval(R)` cycles after the previous one; with
`template.vector_products: serial` the products of COPY and ADD take `DIGITS` cycles each (4
bits of the coefficient per cycle, shift-add: no DSP), so their reads are that many cycles
apart (MAX and SUM, whose coefficient is 1, keep one read per cycle). A VEC keeps `idle` low
for exactly `hwgen.timing.vec_cycles(config, vec, convcfg)` cycles.

`template.vector_ops` generates only the listed operations (`vector_ops`): without ADD and COPY
no coefficient (the product stage only delays), without ADD no operand loop, without MAX and
SUM no kernel-window loops, and an accumulator of `acc_shape` (the listed operations' largest
value); MAX alone subtracts the zero point as it selects the pixel. The post-processing's bias
is always 0. With one kind of op (windows only, or none) the CONVCFG-derived steps are read
from `convcfg` and `steps` throughout the command instead of being copied. A VEC with an operation left out gives undefined results (the compiler never emits one).
"""
from __future__ import annotations

from amaranth.hdl import Module, Shape, signed, unsigned
from amaranth.lib import stream, wiring
from amaranth.lib.memory import ReadPort, WritePort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from hwgen.config import MULTIPLIER_BITS, AcceleratorConfig, VectorProducts
from hwgen.isa import Opcode, VecOp, field_limit
from hwgen.isa_layout import INSTRUCTION_LAYOUT
from hwgen.layout import ACC_BYTES, PARAM_BYTES, bank_bytes
from hwgen.postprocess import PostProcess
from hwgen.serial_post import shared_signature
from hwgen.serial_shifts import is_serial
from hwgen.conv_steps import steps_layout
from hwgen.timing import DIGITS, accumulate_latency, address_latency, beat_interval, beat_latency
from hwgen.vector_ops import vector_ops
from hwgen.vector.arithmetic import VecArithmetic
from hwgen.vector.command import VecCommand
from hwgen.vector.operands import VecOperands
from hwgen.vector.params import VectorParams
from hwgen.vector.read_loops import VecReadAddress, VecReadLoops
from hwgen.vector.write_back import VecWriteBack


MAX_WINDOW = field_limit(Opcode.CONVCFG, "kernel_h")
"""The largest window side of MAX and SUM (CONVCFG's kernel fields)."""
MAX_DIFF = 255  # |x - zero point| for int8 x and zero point
OP_BOUNDS = {VecOp.MAX: MAX_DIFF, VecOp.SUM: MAX_WINDOW * MAX_WINDOW * MAX_DIFF,
             VecOp.ADD: 2 * MAX_DIFF * (2**MULTIPLIER_BITS - 1), VecOp.COPY: MAX_DIFF * (2**MULTIPLIER_BITS - 1)}
"""The largest |accumulated value| of each operation."""


def acc_shape(ops: frozenset[VecOp]) -> Shape:
    """The accumulator lane shape for `ops`."""
    bound = max(OP_BOUNDS[op] for op in ops)
    return Shape.cast(range(-bound, bound + 1))


ACC_SHAPE = acc_shape(frozenset(VecOp))
"""The accumulator lane shape of the full unit."""




class VectorUnit(wiring.Component):
    """Executes VEC commands from `cmd` with the CONVCFG on `convcfg` and its pointer steps
    (`hwgen.conv_steps`, `pixel_bits` wide) on `steps` (both held stable by the caller while a command
    runs). Buffer ports (compute side, synchronous reads):

    - `input_even` / `input_odd`: the input bank's even / odd words (`C * S` bytes) at address
      `word // 2`;
    - `param`: parameter-bank words of `R` records (`R * 8` bytes);
    - `acc`: accumulator-bank words of `R * 4` bytes, with byte enables.

    Its parts (`hwgen.vector`), in pipeline order: `VecCommand` (the command latched on
    accept), `VecReadLoops` and `VecReadAddress` (one read per cycle and its address),
    `VecOperands` (the read, the pixel selected, the zero point subtracted), `VecArithmetic`
    (products, accumulation), `VecWriteBack` (parameters, post-processing, accumulator writes).
    """

    def __init__(self, config: AcceleratorConfig) -> None:
        pe = config.pe
        log_rows, log_cols, log_simd = exact_log2(pe.rows), exact_log2(pe.cols), exact_log2(pe.simd)
        self.simd = pe.simd
        self.config = config
        input_word, param_word, acc_word = pe.cols * pe.simd, pe.rows * PARAM_BYTES, pe.rows * ACC_BYTES
        input_addr = ceil_log2(bank_bytes(config, "input") // (2 * input_word))
        self.pixel_bits = input_addr + 1 + log_cols
        ops = vector_ops(config)
        self.params = VectorParams(simd=pe.simd, log_simd=log_simd, log_cols=log_cols, log_groups=log_rows - log_simd,
                                   pixel_bits=self.pixel_bits, ops=ops, acc_shape=acc_shape(ops),
                                   shift_add=config.template.vector_products == VectorProducts.SERIAL,
                                   interval=beat_interval(config), address_register=bool(address_latency(config)),
                                   post_latency=beat_latency(config))
        members = {"post": Out(shared_signature(config).flip())} if is_serial(config) else {}
        super().__init__({
            **members,
            "cmd": In(stream.Signature(INSTRUCTION_LAYOUT)),
            "convcfg": In(INSTRUCTION_LAYOUT),
            "steps": In(steps_layout(self.pixel_bits)),
            "idle": Out(1),
            "input_even": In(ReadPort.Signature(addr_width=input_addr, shape=unsigned(8 * input_word))),
            "input_odd": In(ReadPort.Signature(addr_width=input_addr, shape=unsigned(8 * input_word))),
            "param": In(ReadPort.Signature(addr_width=ceil_log2(bank_bytes(config, "param") // param_word),
                                           shape=unsigned(8 * param_word))),
            "acc": In(WritePort.Signature(addr_width=ceil_log2(bank_bytes(config, "acc") // acc_word),
                                          shape=unsigned(8 * acc_word), granularity=8)),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p = self.params
        cfg = self.convcfg.payload.convcfg
        m.submodules.command = command = VecCommand(p)
        m.submodules.read_loops = loops = VecReadLoops(p)
        m.submodules.read_address = address = VecReadAddress(p)
        m.submodules.operands = operands = VecOperands(p, wiring.flipped(self.input_even).signature)
        m.submodules.arithmetic = arithmetic = VecArithmetic(p)
        if is_serial(self.config):
            post = wiring.flipped(self.post)
        else:
            m.submodules.postprocess = post = PostProcess(p.simd, p.acc_shape, raw_shape=signed(8))
        m.submodules.write_back = write_back = VecWriteBack(p, wiring.flipped(self.param).signature,
                                                            wiring.flipped(self.acc).signature, post.signature)

        accept = self.cmd.valid & self.cmd.ready
        m.d.comb += [
            self.idle.eq(~write_back.busy), self.cmd.ready.eq(~write_back.busy),
            command.start.eq(accept), command.new.eq(self.cmd.payload.payload.vec), command.convcfg.eq(cfg),
            command.steps.eq(self.steps),
            loops.start.eq(accept), loops.nonempty.eq(command.nonempty), loops.row_count.eq(command.row_count),
            loops.last.eq(command.last), loops.step.eq(command.step), loops.stride.eq(command.stride),
            loops.window.eq(command.window),
            address.terms.eq(loops.terms), address.control.eq(loops.control),
            operands.issue.eq(address.issue), operands.address.eq(address.address),
            operands.zero_point.eq(cfg.in_zero_point), operands.second_zero_point.eq(command.vec.in2_zero_point),
            arithmetic.vec.eq(command.vec), arithmetic.window.eq(command.window), arithmetic.read.eq(operands.read),
            arithmetic.diffs.eq(operands.diffs), arithmetic.control.eq(operands.control),
            write_back.start.eq(accept), write_back.nonempty.eq(command.nonempty), write_back.convcfg.eq(cfg),
            write_back.total.eq(arithmetic.total), write_back.done.eq(arithmetic.done),
        ]
        # windows more than the pipeline apart (the shared lane's interval): the window's last read
        # also reads its parameters (the channel group then need not travel down the pipeline)
        depth = accumulate_latency(self.config) + (DIGITS if p.serial_products else 0)  # from a read to its beat, at most
        m.d.comb += write_back.param_read.eq(address.issue if p.interval > depth else arithmetic.summing)
        for port, part in ((self.input_even, operands.input_even), (self.input_odd, operands.input_odd),
                           (self.param, write_back.param), (self.acc, write_back.acc)):
            wiring.connect(m, wiring.flipped(port), part)
        wiring.connect(m, write_back.post, post)
        return m
