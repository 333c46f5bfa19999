"""A fixed delay for values that enter at most once every `spacing` cycles.

A value presented with `put` comes out `latency` cycles later, in the one cycle `valid` is
high. A shift register of `latency` stages would copy every value `latency` times; since at
most `ceil(latency / spacing)` values are in flight, it is enough to keep that many entries
(written in turn when a value enters, read in turn when one comes out) and to delay only the
`put` bit. With `spacing` 1 this is the shift register.
"""
from __future__ import annotations

from amaranth.hdl import Array, Module, Mux, Signal, Value
from amaranth.lib import data

from hwgen.pe import register


def entries(latency: int, spacing: int) -> int:
    """Values in flight at most: `ceil(latency / spacing)`."""
    return -(-latency // spacing)


def delay_queue(m: Module, value: Value | data.View, put: Value, latency: int, spacing: int,
                name: str, valid: Value | None = None) -> tuple[Value, Value | data.View]:
    """(`valid`, value out): `value` as it was when `put` was high `latency` cycles ago, `valid`
    high in that cycle. `put` must be high at most once every `spacing` cycles. A caller that
    already has `put` delayed by `latency` cycles passes it as `valid` (then no copy is made)."""
    assert latency >= 1 and spacing >= 1
    if valid is None:
        valid = put
        for stage in range(latency):
            valid = register(m, valid, f"{name}_valid_{stage}", reset_less=False)
    depth = entries(latency, spacing)
    if depth >= latency:
        for stage in range(latency):
            value = register(m, value, f"{name}_{stage}")
        return valid, value
    bits = Value.cast(value)
    slots = [Signal(bits.shape(), name=f"{name}_entry_{k}", reset_less=True) for k in range(depth)]
    view = (lambda out: data.View(value.shape(), out)) if isinstance(value, data.View) else (lambda out: out)
    if depth == 1:
        with m.If(put):
            m.d.sync += slots[0].eq(bits)
        return valid, view(slots[0])
    write, read = Signal(range(depth), name=f"{name}_write"), Signal(range(depth), name=f"{name}_read")
    for pointer, advance in ((write, put), (read, valid)):
        with m.If(advance):
            m.d.sync += pointer.eq(Mux(pointer == depth - 1, 0, pointer + 1))
    for k, slot in enumerate(slots):
        with m.If(put & (write == k)):
            m.d.sync += slot.eq(bits)
    return valid, view(Array(slots)[read])
