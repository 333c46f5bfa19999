"""`sim.memory_model.MemoryModel` serving the accelerator's memory port in a cocotb simulation.

The model is not re-implemented: its Amaranth-simulator process runs unchanged against
`CocotbContext`, which offers the two calls it makes (`ctx.tick().sample(...)` and
`ctx.set(...)`) on cocotb handles, with the same timing:

- `sample` returns, for each rising clock edge, the values the design sees at that edge. They
  are read in the `ReadOnly` phase before the edge (the design only changes on rising edges and
  the model writes right after them, so these values hold until the edge). What a read at the
  edge itself returns (before or after the design's nonblocking updates) depends on the simulator.
- `set` writes right after the edge, like the registered outputs of the Amaranth model.

Given the same seed, latency, bandwidth and stall probability, the model therefore accepts and
delivers every beat at the same edge in both simulators. Reading an undefined (`x`/`z`) bit
raises `ValueError`: Amaranth has none, so one would mean the Verilog diverged.
"""
from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from types import SimpleNamespace

from amaranth.hdl import Shape
from amaranth.lib import data, wiring
from cocotb.handle import LogicObject
from cocotb.triggers import ReadOnly, RisingEdge


@dataclass(frozen=True)
class Bits:
    """`width` bits at `offset` of a flattened Verilog port (a member or a struct field)."""

    handle: LogicObject
    offset: int
    width: int

    def get(self, value: int) -> int:
        """These bits of the whole port's `value`."""
        return (value >> self.offset) & ((1 << self.width) - 1)


def port_view(dut, name: str, shape) -> Bits | SimpleNamespace:
    """The Verilog port `name` as `Bits`, or, for a struct layout, a namespace of its fields."""
    handle = getattr(dut, name)

    def fields(shape, offset: int) -> Bits | SimpleNamespace:
        if isinstance(shape, data.StructLayout):
            return SimpleNamespace(**{key: fields(field.shape, offset + field.offset) for key, field in shape})
        return Bits(handle, offset, Shape.cast(shape).width)

    return fields(shape, 0)


def interface_view(dut, signature: wiring.Signature, prefix: str = "") -> SimpleNamespace:
    """A signature's members as nested namespaces of `Bits`, on the Verilog ports Amaranth
    flattens them into (`port__rd_req__payload`)."""
    members = {}
    for key, member in signature.members.items():
        name = f"{prefix}{key}"
        members[key] = (interface_view(dut, member.signature, f"{name}__") if member.is_signature
                        else port_view(dut, name, member.shape))
    return SimpleNamespace(**members)


def read(view: Bits | SimpleNamespace) -> int | dict:
    """The current value of a view (settled values: call in the `ReadOnly` phase)."""
    if isinstance(view, Bits):
        return view.get(int(view.handle.value))
    return {key: read(member) for key, member in vars(view).items()}


class _Sampler:
    """The async iterator of `ctx.tick().sample(*bits)`: one tuple per rising edge."""

    def __init__(self, clock: LogicObject, bits: tuple[Bits, ...]):
        self.clock = clock
        self.bits = bits

    def __aiter__(self) -> AsyncIterator[tuple]:
        return self

    async def __anext__(self) -> tuple:
        await ReadOnly()
        ports = {id(b.handle): int(b.handle.value) for b in self.bits}
        values = [b.get(ports[id(b.handle)]) for b in self.bits]
        await RisingEdge(self.clock)
        return (True, False, *values)  # (clock edge, reset asserted, sampled values...)


class _Tick:
    def __init__(self, clock: LogicObject):
        self.clock = clock

    def sample(self, *bits: Bits) -> _Sampler:
        return _Sampler(self.clock, bits)


class CocotbContext:
    """The subset of Amaranth's simulator context that `MemoryModel.process` uses."""

    def __init__(self, clock: LogicObject):
        self.clock = clock

    def tick(self) -> _Tick:
        return _Tick(self.clock)

    @staticmethod
    def set(bits: Bits, value: int) -> None:
        assert bits.offset == 0 and bits.width == len(bits.handle), "only whole ports are driven"
        bits.handle.value = int(value)
