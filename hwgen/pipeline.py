"""Several accelerator instances running a network as a pipeline over a stream of images.

Instance `i` runs stage `i`'s program (its own PE array, buffers, sequencer and ROM); all share
one memory port through `hwgen.memory_arbiter.MemoryArbiter`. Each instance's addresses are
relocated: its own image lies at `bases[i]`, and two address windows (`Window`: the program's
addresses of its input and of its output tensor) lead to the slot of the image it runs.

Tokens are a small hardware semaphore: one `full` flag per hand-over slot. Instance `i` starts
image `k` when image `k`'s input slot is full (always, for the first stage: the host placed
every input) and its output slot is empty (always, for the last stage); when it is done, it
empties its input slot and fills its output slot. So image `k + 1` runs on one stage while image
`k` runs on the next. `start` runs `images` images; `done` rises when the last stage has
finished them all and stays high until the next `start`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from amaranth.hdl import Array, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hwgen.accelerator import Accelerator
from common.errors import ConfigError
from hwgen.config import AcceleratorConfig, ProgramMemory
from hwgen.memory_arbiter import MemoryArbiter
from hwgen.memory_port import MemoryPort
from hwgen.program import Program

IMAGE_COUNT_BITS = 16
ADDRESS_BITS = 32
CONTROL_GAP_CYCLES = 1
"""Cycles from an instance's end (its `done` seen) to its next start, its tokens allowing."""


@dataclass(frozen=True)
class Window:
    """Program addresses `[low, low + size)` mapped to slot `s` at `slot_base + s * size`."""

    low: int
    size: int
    slot_base: int
    slots: int

    def overlaps(self, other: Window) -> bool:
        return self.low < other.low + other.size and other.low < self.low + self.size

    def translate(self, address: Value, slot: Value) -> Value:
        return self.slot_base + slot * self.size + (address - self.low)

    def contains(self, address: Value) -> Value:
        return (address >= self.low) & (address < self.low + self.size)


@dataclass(frozen=True)
class Stage:
    """One instance: its program, where its own image lies, its input and output windows."""

    program: Program
    base: int
    input_window: Window
    output_window: Window


class Pipeline(wiring.Component):
    """`len(stages)` accelerator instances of `config` pipelined over `images` images."""

    def __init__(self, config: AcceleratorConfig, stages: Sequence[Stage]):
        if config.template.program_memory == ProgramMemory.SPRAM:
            raise ConfigError(f"configuration {config.name!r}: pipelined instances run programs from ROM; "
                              "template.program_memory must not be spram")
        self.config = config
        self.stages = tuple(stages)
        super().__init__({
            "port": Out(MemoryPort.from_config(config.dram, ADDRESS_BITS)),
            "start": In(1), "images": In(IMAGE_COUNT_BITS), "done": Out(1), "busy": Out(1),
            "running": Out(len(self.stages)),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        count = len(self.stages)
        m.submodules.arbiter = arbiter = MemoryArbiter(self.port.signature, count)
        wiring.connect(m, arbiter.port, wiring.flipped(self.port))
        full = [[Signal(name=f"full_{i}_{s}") for s in range(stage.output_window.slots)]
                for i, stage in enumerate(self.stages[:-1])]
        finished = []
        for index, stage in enumerate(self.stages):
            accelerator = Accelerator(self.config, stage.program)
            m.submodules[f"instance{index}"] = accelerator
            in_slot = Signal(range(stage.input_window.slots), name=f"in_slot_{index}")
            out_slot = Signal(range(stage.output_window.slots), name=f"out_slot_{index}")
            self._relocate(m, accelerator.port, arbiter.clients[index], stage, in_slot, out_slot)
            image = Signal(IMAGE_COUNT_BITS, name=f"image_{index}")
            finished.append(image == self.images)
            ready = self.busy & (image < self.images)
            if index > 0:
                ready &= Array(full[index - 1])[in_slot]
            if index < count - 1:
                ready &= ~Array(full[index])[out_slot]
            self._control(m, accelerator, index, ready, image, in_slot, out_slot, stage,
                          full[index - 1] if index > 0 else [], full[index] if index < count - 1 else [])
        with m.If(self.start):
            m.d.sync += [self.busy.eq(1), self.done.eq(0)]
        with m.Elif(self.busy & finished[-1]):
            m.d.sync += [self.busy.eq(0), self.done.eq(1)]
        return m

    def _control(self, m: Module, accelerator: Accelerator, index: int, ready, image: Signal, in_slot: Signal,
                 out_slot: Signal, stage: Stage, inputs: list[Signal], outputs: list[Signal]) -> None:
        """Start the instance on its next image when its tokens allow; at its end, pass them on."""
        with m.If(self.start):
            m.d.sync += [image.eq(0), in_slot.eq(0), out_slot.eq(0)]
        with m.FSM(name=f"control_{index}"):
            with m.State("IDLE"):
                with m.If(~self.start & ready):
                    m.d.comb += accelerator.start.eq(1)
                    m.next = "STARTED"
            with m.State("STARTED"):  # `done` falls the cycle after `start`
                m.d.comb += self.running[index].eq(1)
                m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += self.running[index].eq(1)
                with m.If(accelerator.done):
                    m.d.sync += [image.eq(image + 1),
                                 in_slot.eq(Mux(in_slot == stage.input_window.slots - 1, 0, in_slot + 1)),
                                 out_slot.eq(Mux(out_slot == stage.output_window.slots - 1, 0, out_slot + 1))]
                    for slot, flag in enumerate(inputs):
                        with m.If(in_slot == slot):
                            m.d.sync += flag.eq(0)
                    for slot, flag in enumerate(outputs):
                        with m.If(out_slot == slot):
                            m.d.sync += flag.eq(1)
                    m.next = "IDLE"

    @staticmethod
    def _relocate(m: Module, inner, outer, stage: Stage, in_slot: Signal, out_slot: Signal) -> None:
        """`inner` (the instance's port) onto `outer` (an arbiter client) with every address relocated."""

        def moved(address: Value) -> Value:
            return Mux(stage.input_window.contains(address), stage.input_window.translate(address, in_slot),
                       Mux(stage.output_window.contains(address), stage.output_window.translate(address, out_slot),
                           stage.base + address))

        m.d.comb += [outer.rd_req.valid.eq(inner.rd_req.valid), inner.rd_req.ready.eq(outer.rd_req.ready),
                     outer.rd_req.payload.beats.eq(inner.rd_req.payload.beats),
                     outer.rd_req.payload.addr.eq(moved(inner.rd_req.payload.addr)),
                     inner.rd_data.valid.eq(outer.rd_data.valid), outer.rd_data.ready.eq(inner.rd_data.ready),
                     inner.rd_data.payload.eq(outer.rd_data.payload),
                     outer.wr.valid.eq(inner.wr.valid), inner.wr.ready.eq(outer.wr.ready),
                     outer.wr.payload.data.eq(inner.wr.payload.data), outer.wr.payload.mask.eq(inner.wr.payload.mask),
                     outer.wr.payload.last.eq(inner.wr.payload.last),
                     outer.wr.payload.addr.eq(moved(inner.wr.payload.addr))]
