"""Whole-network compilation: DRAM image, memory map and one program for all layers."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hwgen.config import AcceleratorConfig
from hwgen.isa import AssemblyError
from hwgen.program_walk import check_program
from hwgen.program import Program
from hwgen.serial_shifts import check_shifts
from planner.compile.conv import ConvTiling, lower_conv, scratch_bytes, spills, weight_constants
from planner.compile.queue_sync import Emitter
from planner.compile.memory_map import MemoryMap, plan_memory
from planner.compile.packing import activation_from_image, activation_image
from planner.compile.vector import VecSource, check_vector_op, lower_vector, source_fill, vector_constants
from common.errors import PlanningError
from planner.envelope import check_network
from planner.fusion import fuse_planned
from planner.ir import COMPUTE_OPS, Layer, Network, Op
from planner.split import split_network
from planner.schedule import ConvShape, Schedule


@dataclass
class CompiledNetwork:
    """A program, the DRAM image holding the constants, and where every tensor lives."""

    network: Network
    config: AcceleratorConfig
    program: Program
    image: np.ndarray
    memory: MemoryMap

    def dram_with_input(self, x: np.ndarray) -> np.ndarray:
        """A fresh DRAM image with the int8 `(C, H, W)` input written in place."""
        dram = self.image.copy()
        data = activation_image(x, self.config.pe.simd)
        start = self.memory.tensors[self.network.input_name]
        dram[start:start + len(data)] = data
        return dram

    def read_output(self, dram: np.ndarray, name: str) -> np.ndarray:
        """The int8 `(C, H, W)` tensor `name` from a DRAM image after the run."""
        shape = self.network.tensor_shapes()[name]
        start = self.memory.tensors[name]
        size = shape[1] * shape[2] * -(-shape[0] // self.config.pe.simd) * self.config.pe.simd
        return activation_from_image(dram[start:start + size], shape, self.config.pe.simd)

    def report(self) -> dict[str, int]:
        """Program size and memory footprint."""
        return {
            "instructions": len(self.program.instructions),
            "descriptors": len(self.program.descriptors),
            "constant_bytes": self.memory.constant_bytes,
            "activation_bytes": self.memory.activation_bytes,
            "scratch_bytes": self.memory.scratch_bytes,
            "dram_bytes": self.memory.size,
        }


def compile_network(net: Network, schedules: dict[str, Schedule], config: AcceleratorConfig,
                    keep_input: bool = False) -> CompiledNetwork:
    """Lower every layer of a quantized network; conv/fc layers follow `schedules[name]`, with
    the max pool their schedule fuses (`planner.fusion`; `keep_input`: see
    `planner.compile.memory_map.plan_memory`)."""
    if not net.quantized:
        raise PlanningError(f"network {net.name!r} is not quantized; quantize it before compiling")
    net = fuse_planned(net, schedules, config)
    check_network(net, config)
    net = split_network(net, config)
    tilings, constants, scratch = {}, {}, {}
    for layer in net.layers:
        check_shifts(config, layer.name, layer.quant.multiplier, layer.quant.shift)
        if layer.op in COMPUTE_OPS:
            if layer.name not in schedules:
                raise PlanningError(f"layer {layer.name!r} has no schedule in the plan")
            tiling = ConvTiling(layer, ConvShape.of(layer), schedules[layer.name], config)
            tiling.check_fits()
            tilings[layer.name] = tiling
            constants[layer.name] = weight_constants(tiling)
            if spills(tiling):
                scratch[layer.name] = scratch_bytes(tiling)
        else:
            check_vector_op(layer, config)
            constants[layer.name] = (vector_constants(layer, config.pe.rows), {})
    memory = plan_memory(net, config.pe.simd, {name: len(data) for name, (data, _) in constants.items()}, scratch, keep_input)
    if memory.size > 1 << config.template.dram_address_bits:
        raise PlanningError(f"network {net.name!r} needs {memory.size} bytes of DRAM; configuration {config.name!r} "
                            f"addresses {1 << config.template.dram_address_bits} (template.dram_address_bits: "
                            f"{config.template.dram_address_bits})")
    image = np.zeros(memory.size, dtype=np.uint8)
    for name, (data, _) in constants.items():
        start = memory.constants[name]
        image[start:start + len(data)] = data

    em = Emitter()
    for layer in net.layers:
        try:
            _lower_layer(em, net, layer, config, memory, tilings, constants)
        except AssemblyError as error:
            raise PlanningError(f"layer {layer.name!r} ({layer.op}): {error} (docs/envelope.md)") from None
    program = em.finish()
    check_program(program, config)
    return CompiledNetwork(net, config, program, image, memory)


def _lower_layer(em: Emitter, net: Network, layer: Layer, config: AcceleratorConfig, memory: MemoryMap, tilings: dict,
                 constants: dict) -> None:
    """Emit one layer's instructions."""
    reads_stored = any(name != net.input_name for name in layer.inputs)
    target = memory.tensors[layer.output]
    if layer.op in COMPUTE_OPS:
        lower_conv(em, tilings[layer.name], memory.constants[layer.name], constants[layer.name][1],
                   memory.tensors[layer.inputs[0]], target, memory.scratch.get(layer.name), reads_stored)
        return
    sources = [VecSource(memory.tensors[name], shape, q.zero_point, source_fill(layer, q.zero_point))
               for name, shape, q in zip(layer.inputs, layer.in_shapes, layer.quant.inputs)]
    offsets = None
    if layer.op == Op.CONCAT:
        offsets = [sum(shape[0] for shape in layer.in_shapes[:i]) for i in range(len(layer.in_shapes))]
    lower_vector(em, layer, config, sources, target, memory.constants[layer.name], offsets, reads_stored)
