"""A quantized network cut into contiguous stages, one program per accelerator instance, and the
main-memory layout the instances share.

Stage `i` runs layers `starts[i]` to `starts[i + 1] - 1`; its input is the one tensor crossing
the cut. Each instance's memory image (constants, activations, scratch) sits at its own base.
The tensors crossing the pipeline live in slots: the network input and output in one slot per
image, each hand-over tensor in two (double buffering: stage `i` writes image `k + 1` into one
while stage `i + 1` reads image `k` from the other). An instance reaches its slots through
address windows (`hwgen.pipeline.Window`): its own program's address range of a crossing tensor
is mapped to the slot of the image it runs, so the program is the same for every image.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from common.errors import PlanningError
from hwgen.config import AcceleratorConfig
from hwgen.pipeline import CONTROL_GAP_CYCLES, Stage, Window
from planner.compile.memory_map import align, tensor_bytes
from planner.ir import Network
from planner.pipeline import Compilation, plan_and_compile

HANDOFF_SLOTS = 2
"""Slots per hand-over tensor: one written while the other is read."""


def stage_networks(net: Network, starts: Sequence[int]) -> tuple[Network, ...]:
    """The stages of `net` cut before the layers at indices `starts` (the first is 0)."""
    bounds = [*starts, len(net.layers)]
    if not starts or starts[0] != 0 or any(b <= a for a, b in zip(bounds, bounds[1:])):
        raise PlanningError(f"{net.name}: stage starts {list(starts)} must begin at 0 and increase, each below "
                            f"the {len(net.layers)} layers")
    stages = []
    for index, (first, end) in enumerate(zip(bounds, bounds[1:])):
        layers = net.layers[first:end]
        produced = {layer.output for layer in layers}
        crossing_in = list(dict.fromkeys(name for layer in layers for name in layer.inputs if name not in produced))
        later = {name for layer in net.layers[end:] for name in layer.inputs} | set(net.outputs)
        outputs = tuple(name for name in dict.fromkeys(layer.output for layer in layers) if name in later)
        last = end == len(net.layers)
        if len(crossing_in) != 1 or len(outputs) != 1 or (not last and outputs[0] in net.outputs):
            raise PlanningError(f"{net.name}: stage {index} (layers {layers[0].name!r} to {layers[-1].name!r}) must "
                                f"take one tensor and hand one to the next stage; it takes {crossing_in} and hands "
                                f"over {list(outputs)}")
        stages.append(Network(f"{net.name}:stage{index}", crossing_in[0], net.tensor_shapes()[crossing_in[0]],
                              layers, outputs, net.output_quant(crossing_in[0])))
    return tuple(stages)


@dataclass(frozen=True)
class StageLayout:
    """One instance's place in main memory: its image at `base`, windows onto its slots."""

    compilation: Compilation
    base: int
    input_window: Window
    output_window: Window


@dataclass(frozen=True)
class PipelineLayout:
    """Every stage's compilation and the shared main memory: `size` bytes."""

    stages: tuple[StageLayout, ...]
    size: int
    images: int

    @property
    def config(self) -> AcceleratorConfig:
        return self.stages[0].compilation.compiled.config

    @property
    def network_name(self) -> str:
        """The whole network's name (each stage's is `NAME:stageI`)."""
        return self.stages[0].compilation.network.name.rsplit(":stage", 1)[0]

    def image(self) -> np.ndarray:
        """Main memory before a run, the slots empty: every instance's image at its base."""
        memory = np.zeros(self.size, dtype=np.uint8)
        for stage in self.stages:
            image = stage.compilation.compiled.image
            memory[stage.base:stage.base + len(image)] = image
        return memory

    def hardware_stages(self) -> tuple[Stage, ...]:
        """What `hwgen.pipeline.Pipeline` takes: each instance's program, base and windows."""
        return tuple(Stage(s.compilation.compiled.program, s.base, s.input_window, s.output_window)
                     for s in self.stages)

    def input_address(self, image: int) -> int:
        """Where the first stage reads image `image`'s input."""
        window = self.stages[0].input_window
        return window.slot_base + image * window.size

    def output_address(self, image: int) -> int:
        """Where the last stage writes image `image`'s output."""
        window = self.stages[-1].output_window
        return window.slot_base + image * window.size


def _slot_bytes(net: Network, tensor: str, simd: int, block: int) -> int:
    size = align(tensor_bytes(net.tensor_shapes()[tensor], simd) + simd)
    return -(-size // block) * block


def pipeline_layout(net: Network, starts: Sequence[int], config: AcceleratorConfig, images: int) -> PipelineLayout:
    """Compile every stage for `config` and lay out main memory for a run of `images` images."""
    stages = stage_networks(net, starts)
    compilations = [plan_and_compile(stage, config, keep_input=True) for stage in stages]
    block = config.dram.burst_beats * config.dram.bus_width_bits // 8
    cursor, bases = 0, []
    for compilation in compilations:
        bases.append(cursor)
        cursor += -(-compilation.compiled.memory.size // block) * block
    slot_bases = []
    for index, stage in enumerate(stages):
        slots = images if index == 0 else HANDOFF_SLOTS
        slot_bases.append((cursor, _slot_bytes(stage, stage.input_name, config.pe.simd, block), slots))
        cursor += slot_bases[-1][1] * slots
    last = stages[-1]
    output_slot = (cursor, _slot_bytes(last, last.outputs[0], config.pe.simd, block), images)
    cursor += output_slot[1] * images
    layouts = []
    for index, (stage, compilation) in enumerate(zip(stages, compilations)):
        memory = compilation.compiled.memory
        into = slot_bases[index]
        out = slot_bases[index + 1] if index + 1 < len(stages) else output_slot
        windows = [Window(memory.tensors[tensor], slot[1], slot[0], slot[2])
                   for tensor, slot in ((stage.input_name, into), (stage.outputs[0], out))]
        if any(w.low % block for w in windows) or windows[0].overlaps(windows[1]):
            raise PlanningError(f"{stage.name}: its input and output tensors share addresses or are not aligned to "
                                f"the {block}-byte burst block; it cannot hand over through slots")
        layouts.append(StageLayout(compilation, bases[index], *windows))
    return PipelineLayout(tuple(layouts), cursor, images)


def predicted_stream_cycles(layout: PipelineLayout, images: int) -> float:
    """Cycles for `images` images through the pipeline: every stage once (the first image),
    then a period per further image (`predicted_period`)."""
    return sum(s.compilation.prediction.cycles for s in layout.stages) + (images - 1) * predicted_period(layout)


def predicted_period(layout: PipelineLayout) -> float:
    """Cycles between images in the steady state: the slowest stage's program-model cycles with
    memory contention, plus the control's gap between an instance's end and its next start
    (`hwgen.pipeline.CONTROL_GAP_CYCLES`); at least the memory's time for all stages' traffic.

    Contention: stage `i` keeps the memory busy `m_i = bytes_i / bandwidth` of its `c_i` cycles.
    Spread evenly, stages `i` and `j` want the same cycle `m_i m_j / max(c_i, c_j)` times while
    both run (the shorter runs wholly within the longer), and each such collision costs both a cycle.
    """
    config = layout.stages[0].compilation.compiled.config
    cycles = [stage.compilation.prediction.cycles for stage in layout.stages]
    memory = [stage.compilation.prediction.dram_bytes / config.dram.bandwidth for stage in layout.stages]
    contended = [c + sum(memory[i] * memory[j] / max(c, cycles[j]) for j in range(len(cycles)) if j != i)
                 for i, c in enumerate(cycles)]
    return float(max(max(contended), sum(memory)) + CONTROL_GAP_CYCLES)
