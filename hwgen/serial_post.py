"""One DSP-free requantization lane for `R`-lane beats (`template.postprocess: serial`).

Same arithmetic and ports as `hwgen.postprocess.PostProcess` (`postprocess_signature`), one
lane value at a time: a beat is taken into holding registers, then each lane in turn spends
`LANE_CYCLES` cycles: `acc + bias` (and the lane's shift) into a register, then the product
with the 16-bit multiplier over `DIGITS` cycles, `DIGIT_BITS` of the multiplier per cycle from
the top (shift-add: adders only, `hwgen.shift_add`). The cycle after a lane's product is
complete, a staged right shift (`narrow_shift`) gives the quotient's low `NARROW_BITS` bits,
whether it fits them, and the guard and sticky bits from the bits it drops (no shifted mask);
the cycle after, the rounding, zero point and clamp (`hwgen.postprocess.clamp`) write the lane's
result. Raw beats (partial-sum spills) take `acc + bias` through the same path with multiplier
1 and shift 0.

Timing: a new beat is accepted every `serial_interval(R)` cycles at most (`i.ready` is low
while the lanes of the previous one are still loading or multiplying), and its results leave
on `o` exactly `serial_latency(R)` cycles after it was accepted; `o.ready` is not looked at
(the consumer must take every beat, as both engines do).
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Shape, Signal, Value, signed
from amaranth.lib import data, wiring

from hwgen.accumulator import accumulator_shape
from hwgen.config import AcceleratorConfig
from hwgen.pe import register
from hwgen.postprocess import LATENCY, LAYER, NARROW_BITS, SHIFT_BITS, PostProcess, clamp, postprocess_signature
from hwgen.shift_add import shift_add
from planner.quant import MULTIPLIER_BITS

DIGIT_BITS = 4
DIGITS = MULTIPLIER_BITS // DIGIT_BITS
LANE_CYCLES = 1 + DIGITS
"""Cycles each lane occupies the multiplier: the sum, then one per multiplier digit."""


def serial_interval(lanes: int) -> int:
    """Cycles between accepted beats at full rate."""
    return lanes * LANE_CYCLES


def serial_latency(lanes: int) -> int:
    """Cycles from an accepted beat to its output beat: the lanes, rounding, clamp."""
    return lanes * LANE_CYCLES + 3


def is_serial(config: AcceleratorConfig) -> bool:
    """Whether the engines share one serial lane (`template.postprocess: serial`)."""
    return config.template.postprocess == "serial"


def beat_interval(config: AcceleratorConfig) -> int:
    """Cycles an engine leaves between the beats it sends to its requantizer (1: every cycle)."""
    return serial_interval(config.pe.rows) if is_serial(config) else 1


def beat_latency(config: AcceleratorConfig) -> int:
    """Cycles from a beat entering an engine's requantizer to its results."""
    return serial_latency(config.pe.rows) if is_serial(config) else LATENCY


def shared_acc_shape(config: AcceleratorConfig) -> Shape:
    """The shared lane's accumulators: as wide as the PE array's, at least int32 (the vector
    unit's sums)."""
    return signed(max(accumulator_shape(config).width, 32))


def shared_signature(config: AcceleratorConfig) -> wiring.Signature:
    """The shared lane's ports: `pe.rows` lanes (the vector unit fills its first `pe.simd`),
    `shared_acc_shape` accumulators, int32 results."""
    return postprocess_signature(config.pe.rows, shared_acc_shape(config), signed(32))


def narrow_shift(value: Value, amount: Value, keep: int) -> tuple[Value, Value, Value, Value]:
    """`value >> amount` (arithmetic) cut to its low `keep` bits, whether the whole quotient fits
    `keep` signed bits, the guard bit (the highest bit shifted out) and the sticky bit (any lower
    one shifted out). Stages from the largest shift down keep only the bits the remaining stages
    can still bring into the result; the quotient fits when every bit a stage drops at the top,
    and the result's top bit, equal the sign."""
    sign = value[-1]
    bits = Cat(value, sign.replicate(max(0, keep - len(value))))
    guard, sticky, fits = Const(0), Const(0), Const(1)
    for level in reversed(range(len(amount))):
        step, width = 1 << level, len(bits)
        extended = Cat(bits, sign.replicate(step))
        shifted = Mux(amount[level], extended[step:step + width], bits)
        guard, sticky = (Mux(amount[level], extended[step - 1], guard),
                         Mux(amount[level], sticky | guard | extended[:step - 1].any(), sticky))
        needed = min(width, keep + step - 1)  # what the smaller stages can still shift down
        fits = fits & ~(shifted[needed:] ^ sign.replicate(width - needed)).any()
        bits = shifted[:needed]
    return bits, fits & ~(bits[keep - 1] ^ sign), guard, sticky


class SerialPostProcess(PostProcess):
    """`lanes` requantizations per beat on one digit-serial lane (see the module docstring)."""

    @classmethod
    def shared(cls, config: AcceleratorConfig) -> "SerialPostProcess":
        """The lane both engines of `config` share (`shared_signature`)."""
        return cls(config.pe.rows, shared_acc_shape(config))

    def elaborate(self, platform) -> Module:
        m = Module()
        lanes, raw_width = self.lanes, self.raw_shape.width

        # ---- the beat and the lane schedule: lane `lane`, cycle `step` of LANE_CYCLES
        hold = Signal(self.i.payload.shape(), reset_less=True)
        active, lane, step = Signal(), Signal(range(lanes)), Signal(range(LANE_CYCLES))
        last_slot = (lane == lanes - 1) & (step == LANE_CYCLES - 1)
        m.d.comb += self.i.ready.eq(~active | last_slot)
        with m.If(active):
            m.d.sync += step.eq(Mux(step == LANE_CYCLES - 1, 0, step + 1))
            with m.If(step == LANE_CYCLES - 1):
                m.d.sync += [lane.eq(Mux(lane == lanes - 1, 0, lane + 1)), active.eq(lane != lanes - 1)]
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [hold.eq(self.i.payload), active.eq(1), lane.eq(0), step.eq(0)]
        # the layer for the rounding and clamp stages, which run up to 2 cycles into the next beat
        layer = Signal(LAYER, reset_less=True)
        with m.If(active & (lane == 0) & (step == 1)):
            m.d.sync += layer.eq(hold.layer)

        # ---- step 0: acc + bias and the shift; steps 1..DIGITS: product, top digit first
        raw = hold.layer.raw
        total = Signal(signed(max(len(hold.acc[0]), 32) + 1), reset_less=True)
        shift = Signal(SHIFT_BITS, reset_less=True)
        with m.If(active & (step == 0)):
            m.d.sync += [total.eq(hold.acc[lane] + hold.bias[lane]), shift.eq(Mux(raw, 0, hold.shift[lane]))]
        multiplier = Mux(raw, 1, hold.multiplier[lane])
        digit = multiplier.word_select((DIGITS - step).as_unsigned(), DIGIT_BITS)
        product = Signal(signed(len(total) + MULTIPLIER_BITS), reset_less=True)
        with m.If(active & (step != 0)):
            m.d.sync += product.eq(Mux(step == 1, 0, product << DIGIT_BITS) + shift_add(total, digit))

        # ---- the cycle after a lane's last digit: shift and rounding bits; then clamp
        finished = register(m, active & (step == LANE_CYCLES - 1), "finished", reset_less=False)
        finished_lane = register(m, lane, "finished_lane")
        narrow, fits, guard, sticky = narrow_shift(product, shift, NARROW_BITS)
        quotient = register(m, Mux(layer.raw, product[:raw_width], narrow), "quotient")
        up = register(m, guard & (sticky | narrow[0]), "round_up")
        fits, negative = register(m, fits, "fits"), register(m, product[-1], "negative")
        rounded = register(m, finished, "rounded", reset_less=False)
        rounded_lane = register(m, finished_lane, "rounded_lane")
        clamped = clamp(quotient[:NARROW_BITS], up, fits, negative, layer)
        results = Signal(data.ArrayLayout(self.raw_shape, lanes), reset_less=True)
        with m.If(rounded):
            m.d.sync += results[rounded_lane].eq(Mux(layer.raw, quotient, clamped))
        m.d.comb += [self.o.payload.eq(results),
                     self.o.valid.eq(register(m, rounded & (rounded_lane == lanes - 1), "out_valid",
                                              reset_less=False))]
        return m
