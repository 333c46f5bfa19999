"""The compute unit: executes the compute queue (CONVCFG, CONV, VEC).

CONVCFG is latched into a register both engines read, and its pointer steps are derived from
it (`hwgen.conv_steps`) while the unit stays busy for `hwgen.timing.CONVCFG_CYCLES` in all (a
CONVCFG waits for both engines to be idle, as every command does); CONV goes to the convolution engine, VEC to
the vector unit. The buffer ports of the engine that is running reach the buffers (and with
`template.postprocess: serial`, the one requantization lane both engines share: only the
fields in which their beats differ are selected, `_share_beat`); the bank selects come from
the running instruction. The CONVCFG register keeps only the fields the hardware reads.
With `template.vector_ops: []` there is no vector unit: the conv engine has the ports (and the
lane) to itself, and no VEC reaches the unit.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal, Value, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import ReadPort, WritePort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from hwgen.buffers import bank_shape
from hwgen.config import AcceleratorConfig, AddressSteps, PartialSums
from hwgen.conv_engine import ConvEngine
from hwgen.isa import Opcode
from hwgen.isa_layout import INSTRUCTION_LAYOUT, PAYLOADS
from hwgen.serial_post import SerialPostProcess
from hwgen.serial_shifts import is_serial
from hwgen.conv_steps import ConvSteps
from hwgen.conv_step_fields import unread_fields
from hwgen.timing import STEPS_LATENCY
from hwgen.vector_unit import VectorUnit


def _read(config: AcceleratorConfig, kind: str, halves: int = 1) -> In:
    word, depth = bank_shape(config, kind)
    return In(ReadPort.Signature(addr_width=ceil_log2(depth // halves), shape=unsigned(8 * word)))


def _write(config: AcceleratorConfig, kind: str) -> In:
    word, depth = bank_shape(config, kind)
    return In(WritePort.Signature(addr_width=ceil_log2(depth), shape=unsigned(8 * word), granularity=8))


class ComputeUnit(wiring.Component):
    """CONVCFG register plus the two engines behind one command stream."""

    def __init__(self, config: AcceleratorConfig):
        self.config = config
        partial_sums = {"acc_read": _read(config, "acc")} if config.template.partial_sums == PartialSums.KEPT else {}
        super().__init__({
            "cmd": In(stream.Signature(INSTRUCTION_LAYOUT)),
            "idle": Out(1),
            "in_bank": Out(1), "weight_bank": Out(1), "param_bank": Out(1), "out_bank": Out(1),
            "input_even": _read(config, "input", 2), "input_odd": _read(config, "input", 2),
            "weight": _read(config, "weight"), "param": _read(config, "param"),
            **partial_sums, "acc_write": _write(config, "acc"),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.conv = conv = ConvEngine(self.config)
        compiler_steps = self.config.template.address_steps == AddressSteps.COMPILER
        m.submodules.steps = steps = ConvSteps(conv.pixel_bits, compiler_steps)
        convcfg = Signal(INSTRUCTION_LAYOUT)
        banks = Signal(4)
        settling = Signal(range(STEPS_LATENCY + 1))  # cycles until the steps of the last CONVCFG are ready
        settled = settling == 0
        with m.If(~settled):
            m.d.sync += settling.eq(settling - 1)
        m.d.comb += [steps.convcfg.eq(convcfg), conv.convcfg.eq(convcfg), conv.steps.eq(steps.steps),
                     conv.cmd.payload.eq(self.cmd.payload)]
        vec = VectorUnit(self.config) if self.config.template.vector_unit else None
        running_vec = Signal()
        if vec is not None:
            m.submodules.vec = vec
            assert conv.pixel_bits == vec.pixel_bits
            m.d.comb += [vec.convcfg.eq(convcfg), vec.steps.eq(steps.steps), vec.cmd.payload.eq(self.cmd.payload)]
        opcode = self.cmd.payload.opcode
        with m.Switch(opcode):
            with m.Case(Opcode.CONVCFG):
                m.d.comb += self.cmd.ready.eq(self.idle)
                with m.If(self.cmd.valid & self.idle):
                    m.d.sync += [*self._latch_convcfg(convcfg), settling.eq(STEPS_LATENCY)]
            with m.Case(Opcode.CONV):
                m.d.comb += [conv.cmd.valid.eq(self.cmd.valid & settled), self.cmd.ready.eq(conv.cmd.ready & settled)]
                with m.If(self.cmd.valid & conv.cmd.ready & settled):
                    c = self.cmd.payload.payload.conv
                    m.d.sync += [running_vec.eq(0), banks.eq(Cat(c.in_bank, c.weight_bank, c.weight_bank, c.out_bank))]
            if vec is not None:  # else no VEC reaches the unit (`hwgen.sequencer_layouts.queue_opcodes`)
                with m.Case(Opcode.VEC):
                    m.d.comb += [vec.cmd.valid.eq(self.cmd.valid & settled), self.cmd.ready.eq(vec.cmd.ready & settled)]
                    with m.If(self.cmd.valid & vec.cmd.ready & settled):
                        v = self.cmd.payload.payload.vec
                        m.d.sync += [running_vec.eq(1), banks.eq(Cat(v.in_bank, 0, v.param_bank, v.out_bank))]
            with m.Default():
                m.d.comb += self.cmd.ready.eq(1)  # nothing else is dispatched here
        m.d.comb += [self.idle.eq(conv.idle & (vec.idle if vec is not None else 1) & settled),
                     self.in_bank.eq(banks[0]), self.weight_bank.eq(banks[1]), self.param_bank.eq(banks[2]),
                     self.out_bank.eq(banks[3])]

        wiring.connect(m, wiring.flipped(self.weight), conv.weight)
        if "acc_read" in self.signature.members:
            wiring.connect(m, wiring.flipped(self.acc_read), conv.acc_read)
        if vec is None:
            self._conv_only(m, conv)
        else:
            self._share_ports(m, conv, vec, running_vec)
        return m

    def _conv_only(self, m: Module, conv: ConvEngine) -> None:
        """The conv engine alone on the buffer ports (and the serial lane): no vector unit."""
        for port in ("input_even", "input_odd", "param", "acc_write"):
            wiring.connect(m, wiring.flipped(getattr(self, port)), getattr(conv, port))
        if is_serial(self.config):
            m.submodules.post = post = SerialPostProcess.shared(self.config)
            wiring.connect(m, conv.post, post)

    def _share_ports(self, m: Module, conv: ConvEngine, vec: VectorUnit, running_vec: Signal) -> None:
        """The buffer ports (and the serial lane) of the engine that runs: the vector unit while
        `running_vec`, else the conv engine."""
        for port in ("input_even", "input_odd", "param"):
            outer, conv_port, vec_port = getattr(self, port), getattr(conv, port), getattr(vec, port)
            m.d.comb += [conv_port.data.eq(outer.data), vec_port.data.eq(outer.data)]
            with m.If(running_vec):
                m.d.comb += [outer.addr.eq(vec_port.addr), outer.en.eq(vec_port.en)]
            with m.Else():
                m.d.comb += [outer.addr.eq(conv_port.addr), outer.en.eq(conv_port.en)]
        if is_serial(self.config):  # one requantization lane, driven by the engine that runs
            m.submodules.post = post = SerialPostProcess.shared(self.config)
            m.d.comb += [conv.post.o.payload.eq(post.o.payload), vec.post.o.payload.eq(post.o.payload),
                         conv.post.i.ready.eq(post.i.ready), vec.post.i.ready.eq(post.i.ready)]
            for engine, selected in ((conv, ~running_vec), (vec, running_vec)):
                with m.If(selected):
                    m.d.comb += [post.i.valid.eq(engine.post.i.valid), post.o.ready.eq(engine.post.o.ready),
                                 engine.post.o.valid.eq(post.o.valid)]
            self._share_beat(m, post.i.payload, conv.post.i.payload, vec.post.i.payload, running_vec,
                             same_records=vec.simd == conv.rows)
        with m.If(running_vec):
            m.d.comb += [self.acc_write.addr.eq(vec.acc.addr), self.acc_write.data.eq(vec.acc.data),
                         self.acc_write.en.eq(vec.acc.en)]
        with m.Else():
            m.d.comb += [self.acc_write.addr.eq(conv.acc_write.addr), self.acc_write.data.eq(conv.acc_write.data),
                         self.acc_write.en.eq(conv.acc_write.en)]

    def _latch_convcfg(self, convcfg: data.View) -> list:
        """Assignments copying the CONVCFG fields the hardware reads (`hwgen.conv_step_fields.unread_fields`)
        from the command into `convcfg`; its other bits stay 0."""
        new, kept = self.cmd.payload.payload.convcfg, convcfg.payload.convcfg
        skipped = unread_fields(self.config.template)
        return [kept[name].eq(new[name]) for name, _ in PAYLOADS[Opcode.CONVCFG] if name not in skipped]

    @staticmethod
    def _share_beat(m: Module, beat: data.View, conv: data.View, vec: data.View, running_vec: Value,
                    same_records: bool) -> None:
        """The shared lane's input `beat` from the engine that runs: its `acc + bias` is the conv
        engine's, or while the vector unit runs, the conv engine's drained `acc` (then 0: its PE
        array's `idle_zero`) plus the vector unit's `acc` lanes in place of the bias (no
        multiplexer on `acc`; the vector unit has no bias). Both take the
        layer (output zero point, clamp) from the CONVCFG they share, so the conv engine's serves
        both (`raw` only while it runs), and with one record per lane on both (`same_records`:
        `pe.simd == pe.rows`) both read the multiplier and shift from the same parameter word."""
        m.d.comb += [beat.layer.eq(conv.layer), beat.layer.raw.eq(conv.layer.raw & ~running_vec)]
        if same_records:
            m.d.comb += [beat.multiplier.eq(conv.multiplier), beat.shift.eq(conv.shift)]
        m.d.comb += beat.acc.eq(conv.acc)
        with m.If(running_vec):
            m.d.comb += [beat.bias[lane].eq(vec.acc[lane]) for lane in range(len(beat.bias))]
            if not same_records:
                m.d.comb += [beat.multiplier.eq(vec.multiplier), beat.shift.eq(vec.shift)]
        with m.Else():
            m.d.comb += beat.bias.eq(conv.bias)
            if not same_records:
                m.d.comb += [beat.multiplier.eq(conv.multiplier), beat.shift.eq(conv.shift)]
