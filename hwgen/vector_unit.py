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

from amaranth.hdl import Cat, Const, Module, Mux, Shape, Signal, Value, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import ReadPort, WritePort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from hwgen.config import MULTIPLIER_BITS, AcceleratorConfig, VectorProducts
from hwgen.isa import INSTRUCTION_LAYOUT, PAYLOADS, Opcode, VecOp
from hwgen.layout import ACC_BYTES, PARAM_BYTES, bank_bytes
from hwgen.pe import register
from hwgen.postprocess import PostProcess
from hwgen.serial_post import is_serial, shared_signature
from hwgen.shift_add import shift_add
from hwgen.conv_steps import steps_layout
from hwgen.timing import DIGIT_BITS, DIGITS, accumulate_latency, address_latency, beat_interval, beat_latency


MAX_KERNEL = 15
MAX_DIFF = 255  # |x - zero point| for int8 x and zero point
OP_BOUNDS = {VecOp.MAX: MAX_DIFF, VecOp.SUM: MAX_KERNEL * MAX_KERNEL * MAX_DIFF,
             VecOp.ADD: 2 * MAX_DIFF * (2**MULTIPLIER_BITS - 1), VecOp.COPY: MAX_DIFF * (2**MULTIPLIER_BITS - 1)}
"""The largest |accumulated value| of each operation."""
LOOPS = ("oh", "ow", "group", "kh", "kw", "operand")
"""The read loops, outermost first."""
PARAM_RECORD = data.StructLayout({"bias": signed(32), "multiplier": unsigned(MULTIPLIER_BITS),
                                  "shift": unsigned(8), "spare": unsigned(8)})
"""One parameter-bank record (`hwgen.layout`, little-endian)."""
CONTROL = data.StructLayout({"valid": 1, "first": 1, "last": 1, "final": 1, "operand": 1,
                             "group": unsigned(8), "slice": unsigned(8), "odd": 1})
"""What travels with a read through the pipeline: window first/last, last of the command,
operand (ADD's second), channel group, pixel within the input word, odd word."""


def vector_ops(config: AcceleratorConfig) -> frozenset[VecOp]:
    """The VEC operations the unit implements (`template.vector_ops`)."""
    return frozenset(VecOp[name.upper()] for name in config.template.vector_ops)


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
    """

    def __init__(self, config: AcceleratorConfig) -> None:
        pe = config.pe
        self._log_rows, self._log_cols, self._log_simd = exact_log2(pe.rows), exact_log2(pe.cols), exact_log2(pe.simd)
        self.simd = pe.simd
        self.config = config
        input_word, param_word, acc_word = pe.cols * pe.simd, pe.rows * PARAM_BYTES, pe.rows * ACC_BYTES
        input_addr = ceil_log2(bank_bytes(config, "input") // (2 * input_word))
        self.pixel_bits = input_addr + 1 + self._log_cols
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

    @staticmethod
    def _serial_products(m: Module, diffs: list, coefficient: Signal, control: data.View,
                         window: Value) -> tuple[list[Value], data.View]:
        """The products of held `diffs` and `coefficient` over `DIGITS` cycles (top digit
        first, shift-add) from the cycle `control` is valid, with the control delayed to match;
        a window op's coefficient is 1: its `diffs` pass on the next cycle."""
        step = Signal(range(DIGITS))
        now = Mux(control.valid, 0, step)
        m.d.sync += step.eq(Mux(now == DIGITS - 1, now, now + 1))
        digit = coefficient.word_select((DIGITS - 1 - now).as_unsigned(), DIGIT_BITS)
        products = []
        for lane, diff in enumerate(diffs):
            total = Signal((diff * coefficient).shape(), name=f"product_{lane}", reset_less=True)
            m.d.sync += total.eq(Mux(control.valid, 0, total << DIGIT_BITS) + shift_add(diff, digit))
            products.append(Mux(window, register(m, diff, f"window_value_{lane}"), total))
        passed = register(m, control, "control_product", reset_less=False)
        delayed = control
        for stage in range(DIGITS):
            delayed = register(m, delayed, f"control_digit_{stage}", reset_less=False)
        return products, CONTROL(Mux(window, passed.as_value(), delayed.as_value()))

    def elaborate(self, platform) -> Module:
        m = Module()
        S, log_cols = self.simd, self._log_cols
        pixel = unsigned(self.pixel_bits)
        cfg = self.convcfg.payload.convcfg
        ops = vector_ops(self.config)
        windows = bool(ops & {VecOp.MAX, VecOp.SUM})  # ops over a kernel window, coefficient 1
        scaled = bool(ops & {VecOp.ADD, VecOp.COPY})  # ops with a coefficient
        loops = tuple(name for name in LOOPS if (windows or name not in ("kh", "kw"))
                      and (VecOp.ADD in ops or name != "operand"))
        if is_serial(self.config):
            post = self.post
        else:
            m.submodules.postprocess = post = PostProcess(S, acc_shape(ops), raw_shape=signed(8))
        interval = beat_interval(self.config)

        busy, running = Signal(), Signal()  # busy: until the last write; running: reads to issue
        m.d.comb += [self.idle.eq(~busy), self.cmd.ready.eq(~busy)]

        # ---- the command, latched on accept: loop bounds (count of the last iteration) and
        # pointer steps in pixels (modulo the bank: only in-bank reads are meaningful)
        vec = Signal(PAYLOADS[Opcode.VEC])
        new = self.cmd.payload.payload.vec
        window, new_window = (~vec.op[1], ~new.op[1]) if windows and scaled else (Const(windows), Const(windows))
        # `ow` steps a pixel per iteration: a VEC reading inside the bank has at most as many
        # columns as the bank has pixels; `oh`, the outermost loop, counts down to 0 (no bound kept)
        bound_shapes = {"oh": 10, "ow": min(12, self.pixel_bits), "group": 8, "kh": 4, "kw": 4, "operand": 1}
        last = {name: Signal(bound_shapes[name], name=f"{name}_last") for name in loops[1:]}
        step = {name: Signal(pixel, name=f"{name}_step") for name in loops}
        stride = Signal(3)
        # Steps from CONVCFG alone (`hwgen.conv_steps`, registers), chosen by the command. A window op
        # (MAX, SUM) strides by cfg.stride, others by 1.
        steps = self.steps
        row_step = Mux(new_window, steps.row, cfg.in_row_pitch)
        oh_step = Mux(new_window, steps.oh, cfg.in_row_pitch)
        group_step = Mux(new_window, steps.plane, steps.flat_plane)
        latched = {"oh": (new.out_rows - 1, oh_step), "ow": (new.out_cols - 1, Const(1)),
                   "group": (new.channel_groups - 1, group_step),
                   "kh": (Mux(new_window, cfg.kernel_h - 1, 0), row_step),
                   "kw": (Mux(new_window, cfg.kernel_w - 1, 0), cfg.in_row_pitch),
                   "operand": (new.op == VecOp.ADD, new.in2_addr >> self._log_simd)}
        # With one kind of op (`new_window` constant), the steps from CONVCFG alone (held stable
        # while the command runs) are used as is: no copy; `ow` steps by 1. The kernel bounds are
        # copied all the same: the loop-end compares then start at registers (timing).
        fixed = isinstance(new_window, Const)
        copied = {"oh": (True, not fixed), "ow": (True, False), "group": (True, not fixed),
                  "kh": (True, not fixed), "kw": (True, not fixed), "operand": (True, True)}
        kept = [(name, index, signals) for name in loops for index, signals in enumerate((last, step)) if name in signals]
        for name, index, signals in kept:
            if not copied[name][index]:
                signals[name] = latched[name][index][:len(signals[name])]
        with m.If(self.cmd.valid & self.cmd.ready):
            nonempty = (new.out_rows != 0) & (new.out_cols != 0) & (new.channel_groups != 0)
            m.d.sync += [busy.eq(nonempty), running.eq(nonempty), vec.eq(new),
                         *(signals[name].eq(latched[name][index]) for name, index, signals in kept if copied[name][index])]
            if windows and not fixed:
                m.d.sync += stride.eq(Mux(new_window, cfg.stride, 1))
        if windows and fixed:
            stride = cfg.stride

        # ---- read issue: nested counters and each loop's `offset` (its count times its step,
        # summed as it advances, 0 when it restarts; `ow` steps by 1: its count, and `operand`
        # runs twice: 0 or its step); the read address is the sum of the offsets
        # (a loop the configured ops never run has count 0 and is always at its last iteration)
        count = {name: Signal(bound_shapes[name], name=f"{name}_count") for name in loops}
        offset = {name: Signal(pixel, name=f"{name}_offset") for name in loops if name not in ("ow", "operand")}
        # `kw` takes phase `kw % stride` (its offset: phase times the pitch) and column `kw // stride`
        phase, column = Signal(3), Signal(bound_shapes["kw"])
        at_last = {name: count[name] == last[name] if name in last else Const(1) for name in LOOPS}
        at_last[loops[0]] = count[loops[0]] == 0
        # the next read is a window's first (its `kh`, `kw`, `operand` counts at 0): a register,
        # set on accept and after a window's last read (timing)
        first = Signal(init=1)
        window_last = at_last["kh"] & at_last["kw"] & at_last["operand"]
        go = running  # a read this cycle
        serial_products = self.config.template.vector_products == VectorProducts.SERIAL and scaled
        # serial products: COPY / ADD reads DIGITS cycles apart; the shared lane: windows start
        # at least `interval` cycles apart
        pauses = ([(Signal(range(DIGITS), name="read_pause"), Const(1), Mux(window, 0, DIGITS - 1))]
                  if serial_products else [])
        if interval > 1:
            pauses.append((Signal(range(interval), name="window_pause"), first, interval - 1))
        for pause, applies, _ in pauses:
            go = go & (~applies | (pause == 0))
        for pause, applies, length in pauses:
            with m.If(go & applies):
                m.d.sync += pause.eq(length)
            with m.Elif(pause != 0):
                m.d.sync += pause.eq(pause - 1)
        with m.If(self.cmd.valid & self.cmd.ready):
            m.d.sync += [first.eq(1), phase.eq(0), column.eq(0), *(count[name].eq(0) for name in loops[1:]),
                         count[loops[0]].eq(latched[loops[0]][0]), *(o.eq(0) for o in offset.values())]
        with m.Elif(go):
            m.d.sync += first.eq(window_last)
            # a loop moves when every inner one is at its last iteration: it advances, or restarts
            # from 0 at its own last (the outermost one then ends the command). Each loop's enable
            # is its inner loops' compares alone, in one AND (timing).
            for level, name in enumerate(loops):
                inner_last = Cat(Const(1), *(at_last[inner] for inner in loops[level + 1:])).all()
                with m.If(inner_last & ~at_last[name]):
                    m.d.sync += count[name].eq(count[name] + (-1 if level == 0 else 1))
                    if name == "kw":
                        next_column = (phase + 1)[:len(phase)] == stride
                        m.d.sync += [phase.eq(Mux(next_column, 0, phase + 1)), column.eq(column + next_column),
                                     offset[name].eq(Mux(next_column, 0, offset[name] + step[name]))]
                    elif name in offset:
                        m.d.sync += offset[name].eq(offset[name] + step[name])
                with m.If(inner_last & at_last[name]):
                    if level == 0:
                        m.d.sync += running.eq(0)
                    else:
                        m.d.sync += count[name].eq(0)
                        if name in offset:
                            m.d.sync += offset[name].eq(0)
                        if name == "kw":
                            m.d.sync += [phase.eq(0), column.eq(0)]

        terms = [offset.get(name, count[name]) for name in loops if name != "operand"] + ([column] if windows else [])
        if "operand" in loops:
            terms.append(Mux(count["operand"], step["operand"], 0))
        while len(terms) > 1:  # a balanced tree of adders
            terms = [(a + b)[:self.pixel_bits] for a, b in zip(terms[::2], terms[1::2])] + terms[len(terms) & ~1:]
        pointer = terms[0]
        word = pointer[log_cols:]
        issue = Signal(CONTROL)
        m.d.comb += [
            issue.valid.eq(go), issue.first.eq(first),
            issue.last.eq(window_last),
            issue.final.eq(Cat(*at_last.values()).all()),
            issue.operand.eq(count.get("operand", 0)), issue.group.eq(count["group"]),
            issue.slice.eq(pointer[:log_cols]), issue.odd.eq(word[0]),
        ]
        address = word[1:]
        if address_latency(self.config):  # the adder tree ends in flip-flops, the read comes a cycle later
            issue, address = register(m, issue, "control_address", reset_less=False), register(m, address, "address")
        for port, odd in ((self.input_even, 0), (self.input_odd, 1)):
            m.d.comb += [port.addr.eq(address), port.en.eq(issue.valid & (issue.odd == odd))]

        # ---- select the pixel, pick the zero point and the coefficient; subtract the zero point
        read = register(m, issue, "control_read", reset_less=False)
        words = Mux(read.odd, self.input_odd.data, self.input_even.data)
        lanes = data.ArrayLayout(signed(8), S)
        pixels = lanes(words.word_select(read.slice[:log_cols], lanes.size))
        control = register(m, read, "control_select", reset_less=False)
        # MAX alone: the zero point is subtracted as the pixel is selected (no coefficient, no
        # product stage); the post-processing's bias stays 0 as for every VEC
        max_only = ops == {VecOp.MAX}
        if max_only:
            diffs = [register(m, pixels[lane] - cfg.in_zero_point, f"diff_{lane}") for lane in range(S)]
        else:
            x = register(m, pixels, "pixel")
            second = vec.in2_zero_point if VecOp.ADD in ops else cfg.in_zero_point
            zero_point = register(m, Mux(read.operand, second, cfg.in_zero_point), "zero_point")
            held = control.valid if serial_products else 1  # serial: the operands stay for the digits
            diffs = [register(m, x[lane] - zero_point, f"diff_{lane}", held) for lane in range(S)]

        # ---- product, then accumulate; a window's last value reads the channels' parameters
        # The product registers keep a reset (the ice40_dsp workaround of `hwgen.pe`). Without
        # COPY and ADD the coefficient is 1: the product stage only delays.
        if scaled:
            coefficient = register(m, Mux(window, 1, Mux(read.operand, vec.multiplier_b, vec.multiplier_a)),
                                   "coefficient_select")
            coefficient = register(m, coefficient, "coefficient", held)
        if not max_only:
            control = register(m, control, "control_diff", reset_less=False)
        if max_only:  # no subtraction, no product: the maximum of the selected pixels
            products = diffs
        elif serial_products:
            products, control = self._serial_products(m, diffs, coefficient, control, window)
        else:
            products = [register(m, diff * coefficient if scaled else diff, f"product_{lane}", reset_less=False)
                        for lane, diff in enumerate(diffs)]
            control = register(m, control, "control_product", reset_less=False)
        total = Signal(data.ArrayLayout(acc_shape(ops), S), reset_less=True)
        for lane, product in enumerate(products):
            larger = Mux(product > total[lane], product, total[lane])
            if ops == {VecOp.MAX}:
                combined = larger
            elif VecOp.MAX in ops:
                combined = Mux(vec.op == VecOp.MAX, larger, total[lane] + product)
            else:
                combined = total[lane] + product
            with m.If(control.valid):
                m.d.sync += total[lane].eq(Mux(control.first, product, combined))
        log_groups_per_word = self._log_rows - self._log_simd  # channel groups per parameter word
        # windows more than the pipeline apart (the shared lane's interval): the window's last
        # read also reads its parameters, held in the port until the next window's (the channel
        # group then need not travel down the pipeline)
        depth = accumulate_latency(self.config) + (DIGITS if serial_products else 0)  # from a read to its beat, at most
        param_read = issue if interval > depth else control
        m.d.comb += [self.param.addr.eq(param_read.group >> log_groups_per_word),
                     self.param.en.eq(param_read.valid & param_read.last)]
        done = register(m, control, "control_total", reset_less=False)

        records = data.ArrayLayout(PARAM_RECORD, S)
        params = records(self.param.data.word_select(done.group[:log_groups_per_word], records.size))
        m.d.comb += [
            post.i.valid.eq(done.valid & done.last),
            post.o.ready.eq(1),
            post.i.payload.layer.zero_point.eq(cfg.out_zero_point),
            post.i.payload.layer.low.eq(cfg.act_min), post.i.payload.layer.high.eq(cfg.act_max),
            *(post.i.payload.acc[lane].eq(total[lane]) for lane in range(S)),
            *(post.i.payload.multiplier[lane].eq(params[lane].multiplier) for lane in range(S)),
            *(post.i.payload.shift[lane].eq(params[lane].shift) for lane in range(S)),
        ]

        # ---- write the S results as the next S-byte chunk of the accumulator bank
        # the command's last output leaves the post-processing `beat_latency` cycles after its input
        latency = beat_latency(self.config)
        ending = Signal(range(latency + 1))  # cycles until the last output, from its input on
        with m.If(done.valid & done.last & done.final):
            m.d.sync += ending.eq(latency)
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
        with m.If(self.cmd.valid & self.cmd.ready):
            m.d.sync += out_chunk.eq(0)
        with m.Elif(post.o.valid):
            m.d.sync += out_chunk.eq(out_chunk + 1)
            with m.If(ending == 1):
                m.d.sync += busy.eq(0)
        return m
