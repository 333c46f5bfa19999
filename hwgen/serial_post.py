"""One DSP-free requantization lane for `R`-lane beats (`template.postprocess: serial`).

Same arithmetic and ports as `hwgen.postprocess.PostProcess` (`postprocess_signature`), one
lane value at a time. An accepted beat is kept as lane queues, lane 0 at the head: each lane's
`acc + bias` (summed on accept) and shift less 15 (`SHIFTS`); and the lanes' 16-bit
multipliers recoded on accept (`RECODING`) into radix-4 digits in {-2, -1, 0, 1} and an extra
top digit of 0 or 1. Lane `l` then takes the `DIGITS` cycles from the one after the accept
plus `l * DIGITS`: the product of the head sum with the slot's two digits (`digit_term`: one
logic cell per bit, adders only, no DSP) is summed into a register and, the cycle after, added
to the partial product shifted up `DIGIT_BITS` bits (the lane's first digit starts it with the
extra top digit times the sum); after the lane's last digit, the sum queue moves up a lane. The
cycle after a lane's product is complete (two after its last digit), a staged right shift (`narrow_shift`) of the product
without its low 15 bits (the top one the first guard bit, the others sticky) by the head shift
(whose queue then moves up) gives the quotient's low `NARROW_BITS` bits, whether it fits them,
and the guard and sticky bits from the bits it drops (no shifted mask); the cycle after, the
rounding, zero point and clamp (`hwgen.postprocess.clamp`) give the lane's result, which
enters a result shift register at its top lane. A raw lane (the partial-sum spills) enters its
`acc + bias` as it is, at its last digit (its product is not used); a lane with int8 results
(`template.partial_sums: none`: no spills) has no raw mode and ignores the layer's `raw`.

Timing: a new beat is accepted every `serial_interval(R)` cycles at most (`i.ready` is low
until the last of them), its results leave on `o` exactly `serial_latency(R)` cycles after it
was accepted; `o.ready` is not looked at (the consumer must take every beat, as both engines
do). With two lanes or more the last result is written before the next beat can replace the
layer register; a single lane keeps a delayed copy for its clamp. With `held_layer` (the engines'
shared lane: its layer is the compute unit's CONVCFG register, which a new CONVCFG replaces only
once both engines are idle, all their results written) the lane reads the layer input
throughout and keeps no copy.

Normalized multipliers (`normalized_multipliers`: every nonzero multiplier in
`[2**15, 2**16)`, as `planner.quant.fixed_point` makes them): a sum beyond `NORMALIZED_SUM_BITS`
signed bits gives a quotient beyond the clamp's `NARROW_BITS` whatever the shift, so the lane
multiplies only the sum's low `NORMALIZED_SUM_BITS` bits and clamps such a sum by its sign.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Shape, Signal, Value, signed
from amaranth.lib import data, wiring
from amaranth.utils import ceil_log2, exact_log2

from hwgen.accumulator import accumulator_shape
from hwgen.config import AcceleratorConfig, PartialSums
from hwgen.pe import register
from hwgen.postprocess import LAYER, NARROW_BITS, PostProcess, clamp, postprocess_signature
from hwgen.config import MULTIPLIER_BITS
from hwgen.serial_shifts import SHIFT_SPAN_BITS, SHIFTS, normalized_multipliers
from hwgen.timing import DIGIT_BITS, DIGITS, serial_interval, serial_latency

NORMALIZED_SUM_BITS = NARROW_BITS + SHIFTS[-1] - (MULTIPLIER_BITS - 1)
"""The `acc + bias` bits a lane with normalized multipliers multiplies: `|sum| >= 2**23` with
`m >= 2**15` and a shift of at most 30 gives `|quotient| >= 2**8`, beyond the int8 clamp
whatever the zero point."""


def shared_acc_shape(config: AcceleratorConfig) -> Shape:
    """The shared lane's accumulators: as wide as the PE array's, at least int32 (the vector
    unit's sums)."""
    return signed(max(accumulator_shape(config).width, 32))


def post_result_shape(config: AcceleratorConfig) -> Shape:
    """The conv engine's requantization results: int32 for the raw partial sums
    (`template.partial_sums: kept`), else int8."""
    return signed(32) if config.template.partial_sums == PartialSums.KEPT else signed(8)


def shared_signature(config: AcceleratorConfig) -> wiring.Signature:
    """The shared lane's ports: `pe.rows` lanes (the vector unit fills its first `pe.simd`),
    `shared_acc_shape` accumulators, `post_result_shape` results."""
    return postprocess_signature(config.pe.rows, shared_acc_shape(config), post_result_shape(config))


def narrow_shift(value: Value, amount: Value, keep: int, guard: Value = Const(0),
                 sticky: Value = Const(0)) -> tuple[Value, Value, Value, Value]:
    """`value >> amount` (arithmetic) cut to its low `keep` bits, whether the whole quotient fits
    `keep` signed bits, the guard bit (the highest bit shifted out) and the sticky bit (any lower
    one shifted out); `guard` and `sticky` are those of bits already dropped below `value`.
    Stages from the largest shift down keep only the bits the remaining stages can still bring
    into the result; the quotient fits when every bit a stage drops at the top, and the
    result's top bit, equal the sign."""
    sign = value[-1]
    bits = Cat(value, sign.replicate(max(0, keep - len(value))))
    fits = Const(1)
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


RECODING = int("10" * (MULTIPLIER_BITS // 2), 2)
"""Added to a multiplier `m` (`t = m + RECODING`), it gives `m` in radix-4 digits
`t_k - 2` in {-2, -1, 0, 1} (`digit_term`), plus `t`'s carry bit `t_16` times `4**8`."""


def digit_term(value: Value, digit: Value) -> tuple[Value, Value]:
    """`value * (digit - 2)` for a 2-bit digit of a recoded multiplier (`RECODING`) as a term
    and a carry whose sum it is: a negative digit's term is the one's complement of its
    magnitude (each term bit a function of 4 bits: one logic cell)."""
    positive = Mux(digit[0], value, 0)
    return Mux(digit[1], positive, ~Mux(digit[0], value, value << 1)), ~digit[1]


class SerialPostProcess(PostProcess):
    """`lanes` requantizations per beat on one digit-serial lane (see the module docstring);
    `normalized`: every nonzero multiplier is in `NORMALIZED_MULTIPLIERS`."""

    def __init__(self, lanes: int, acc_shape: Shape, raw_shape: Shape = signed(32), normalized: bool = False,
                 held_layer: bool = False) -> None:
        self.normalized = normalized
        self.held_layer = held_layer
        super().__init__(lanes, acc_shape, raw_shape)

    @classmethod
    def shared(cls, config: AcceleratorConfig) -> "SerialPostProcess":
        """The lane both engines of `config` share (`shared_signature`); its layer is the compute
        unit's CONVCFG register, which holds still until both engines are idle (`held_layer`)."""
        return cls(config.pe.rows, shared_acc_shape(config), post_result_shape(config),
                   normalized=normalized_multipliers(config), held_layer=True)

    def elaborate(self, platform) -> Module:
        m = Module()
        accept = self.i.valid & self.i.ready
        active, slot, digit_slot, lane_end = self._schedule(m, accept)
        queues = self._lane_queues(m, accept, digit_slot, lane_end)
        product, huge, sum_negative = self._product(m, slot, digit_slot, queues)
        self._results(m, active, slot, lane_end, queues, product, huge, sum_negative)
        return m

    def _schedule(self, m: Module, accept: Value) -> tuple[Signal, Signal, Value, Value]:
        """`slot` counts the cycles after an accept; the digits of lane `l` take slots
        4l .. 4l + 3, the other `lanes` slots let the tail finish."""
        lanes = self.lanes
        active, slot = Signal(), Signal(range(serial_interval(lanes)))
        m.d.comb += self.i.ready.eq(~active | (slot == serial_interval(lanes) - 1))
        with m.If(active):
            m.d.sync += [slot.eq(slot + 1), active.eq(slot != serial_interval(lanes) - 1)]
        with m.If(accept):
            m.d.sync += [active.eq(1), slot.eq(0)]
        digit_slot = active & (slot < lanes * DIGITS)
        return active, slot, digit_slot, digit_slot & (slot % DIGITS == DIGITS - 1)

    def _lane_queues(self, m: Module, accept: Value, digit_slot: Value, lane_end: Value) -> dict[str, Value]:
        """The beat as lane queues (lane 0 at the head): sums, shifts, multiplier digits, the
        layer, and the flags of the head lane's last digit and finished product."""
        lanes, beat = self.lanes, self.i.payload
        sums = [Signal(signed(max(len(beat.acc[0]), 32) + 1), name=f"sum_{lane}", reset_less=True) for lane in range(lanes)]
        shifts = [Signal(SHIFT_SPAN_BITS, name=f"shift_{lane}", reset_less=True) for lane in range(lanes)]
        # the recoded multipliers (`RECODING`): their `DIGIT_BITS` digits in the order the slots
        # take them (lane 0's top digit first), shifted down a digit per digit slot (no digit
        # multiplexer before the product: timing), and their extra top digits, lane 0 first
        digits = Signal(lanes * MULTIPLIER_BITS, reset_less=True)
        extras = Signal(lanes, reset_less=True)
        layer = beat.layer if self.held_layer else Signal(LAYER, reset_less=True)
        # the lane's product is complete the cycle after its last digit's (`adding`)
        last_digit = register(m, lane_end, "last_digit", reset_less=False)
        finished = register(m, last_digit, "finished", reset_less=False)
        with m.If(accept):
            if not self.held_layer:
                m.d.sync += layer.eq(beat.layer)
            recoded = [beat.multiplier[lane] + RECODING for lane in range(lanes)]
            in_slot_order = (t.word_select(DIGITS - 1 - k, DIGIT_BITS) for t in recoded for k in range(DIGITS))
            m.d.sync += [digits.eq(Cat(*in_slot_order)),
                         extras.eq(Cat(*(t[MULTIPLIER_BITS] for t in recoded))),
                         *(sums[lane].eq(beat.acc[lane] + beat.bias[lane]) for lane in range(lanes)),
                         *(shifts[lane].eq(beat.shift[lane] - SHIFTS.start) for lane in range(lanes))]
        with m.Else():
            with m.If(digit_slot):
                m.d.sync += digits.eq(digits[DIGIT_BITS:])
            with m.If(lane_end):
                m.d.sync += [sums[lane].eq(sums[lane + 1]) for lane in range(lanes - 1)]
            with m.If(finished):  # the shift is used the cycle after the lane's product is complete
                m.d.sync += [shifts[lane].eq(shifts[lane + 1]) for lane in range(lanes - 1)]
        return {"sums": sums, "shifts": shifts, "digits": digits, "extras": extras, "layer": layer,
                "last_digit": last_digit, "finished": finished}

    def _product(self, m: Module, slot: Signal, digit_slot: Value, queues: dict) -> tuple[Signal, Value, Value]:
        """The head lane's product, top digit first: two recoded radix-4 digits per cycle
        (`digit_term`); the recoded multiplier's extra top digit starts the partial product. With
        normalized multipliers (`t_16` set for every nonzero one), a nonzero one times a sum
        beyond the multiplied bits is `huge` (it clamps by the sum's sign)."""
        sums, digits = queues["sums"], queues["digits"]
        restart, top = slot % DIGITS == 0, digits[:DIGIT_BITS]
        extra = queues["extras"].bit_select(slot[exact_log2(DIGITS):ceil_log2(self.lanes * DIGITS)], 1)
        multiplicand = sums[0][:NORMALIZED_SUM_BITS].as_signed() if self.normalized else sums[0]
        product = Signal(signed(len(multiplicand) + MULTIPLIER_BITS), reset_less=True)
        high, carry_high = digit_term(multiplicand, top[2:])
        low, carry_low = digit_term(multiplicand, top[:2])
        # in its digit slot, the digit's terms are summed into a register; the cycle after, they
        # are added to the partial product: no path chains the two carry chains (timing). The
        # head sum moves up only after the lane's last digit, so it is still the lane's then.
        terms = Signal(signed(len(high) + 3), reset_less=True)
        m.d.sync += terms.eq(Cat(carry_low, Const(0, 1), high).as_signed() + low)
        carry_high = register(m, carry_high, "carry_high")
        adding = register(m, digit_slot, "adding", reset_less=False)
        starting = register(m, digit_slot & restart, "starting", reset_less=False)
        extra = register(m, extra, "extra")
        beyond = sums[0][len(multiplicand) - 1:]
        huge = register(m, extra & ~(beyond.all() | ~beyond.any()), "huge", starting)
        sum_negative = register(m, sums[0][-1], "sum_negative", starting)
        start = Mux(starting, Mux(extra, multiplicand, 0), product)
        with m.If(adding):
            m.d.sync += product.eq(Cat(Const(0, 2), carry_high, Const(0, 1), start).as_signed() + terms)
        return product, huge, sum_negative

    def _results(self, m: Module, active: Signal, slot: Signal, lane_end: Value, queues: dict, product: Signal,
                 huge: Value, sum_negative: Value) -> None:
        """The cycle after a lane's last digit: shift and rounding bits (the product's low
        `SHIFTS.start` bits are always dropped); the cycle after, the rounding, zero point and
        clamp. Results enter at the top lane and move down: after `lanes` results, lane 0 is at 0;
        a raw lane's result is its sum, at the lane's last digit (int8 results: no raw lanes),
        never in a cycle a clamped result enters."""
        lanes, raw_width = self.lanes, self.raw_shape.width
        sums, layer, last_digit = queues["sums"], queues["layer"], queues["last_digit"]
        dropped = SHIFTS.start
        shift = queues["shifts"][0]
        if lanes * DIGITS + 2 > serial_interval(lanes):  # one lane: the next beat's shift arrives first
            shift = register(m, shift, "shift_tail", last_digit)
        narrow, fits, guard, sticky = narrow_shift(product[dropped:], shift, NARROW_BITS, product[dropped - 1],
                                                   product[:dropped - 1].any())
        quotient = register(m, narrow, "quotient")
        up = register(m, guard & (sticky | narrow[0]), "round_up")
        # a nonzero multiplier's product has the sum's sign
        fits, negative = register(m, fits & ~huge, "fits"), register(m, sum_negative, "negative")
        rounded = register(m, queues["finished"], "rounded", reset_less=False)
        tail_layer = layer  # the layer of the lane being rounded and clamped
        if lanes * DIGITS + 3 > serial_interval(lanes) and not self.held_layer:  # the tail outlasts its layer
            tail_layer = register(m, layer, "layer_round", last_digit)
        clamped = clamp(quotient, up, fits, negative, tail_layer)
        results = Signal(data.ArrayLayout(self.raw_shape, lanes), reset_less=True)
        result, ready = clamped, rounded
        if raw_width > 8:
            result, ready = Mux(rounded, clamped, sums[0][:raw_width]), Mux(rounded, ~tail_layer.raw, layer.raw & lane_end)
        with m.If(ready):
            m.d.sync += results.eq(Cat(results.as_value()[raw_width:], result[:raw_width]))
        out_valid = active & (slot == serial_interval(lanes) - 1)
        for stage in range(serial_latency(lanes) - serial_interval(lanes)):
            out_valid = register(m, out_valid, f"out_valid_{stage}", reset_less=False)
        m.d.comb += [self.o.payload.eq(results), self.o.valid.eq(out_valid)]
