"""What a configuration can compile, decided at planning time from the layers' shapes.

`layer_problem` names, for one layer as the compiler will see it (after `planner.split`), the
first quantity outside the instruction fields or the buffers: the layer, the quantity, its value
and the limit. `check_network` raises it as a PlanningError before anything is planned, so no
plan is printed for a network that cannot run (`docs/envelope.md` lists the limits).
"""
from __future__ import annotations

from hwgen.config import AcceleratorConfig
from hwgen.isa import Opcode, field_limit
from common.errors import PlanningError
from hwgen.layout import PARAM_BYTES
from hwgen.serial_shifts import check_shifts, is_serial
from planner.compile.memory_map import tensor_bytes
from planner.compile.vector import check_vector_op, vector_tile
from planner.ir import COMPUTE_OPS, POOL_OPS, Layer, Network, Op
from planner.schedule import DIMS, ConvShape, granule, legal_tiles, tile_candidates, unplannable, whole_reduction
from planner.split import kernel_limit, shape_only, split_layer, stride_limit, window_limit


def map_limit() -> int:
    """Largest row or column of a map a LOAD addresses (`y_offset`, `x_offset`)."""
    return field_limit(Opcode.LOAD, "y_offset")


def _window_problem(layer: Layer) -> str | None:
    (kh, kw), (sh, sw) = layer.kernel, layer.stride
    if sh != sw:
        return f"stride {sh}x{sw}: the hardware needs equal strides"
    if sh > stride_limit():
        return f"stride {sh} exceeds the limit {stride_limit()} (CONVCFG.stride)"
    if layer.op == Op.AVGPOOL:  # left as an average pool: the vector unit's sum (planner.split)
        if max(kh, kw) > window_limit():
            return (f"pooling window {kh}x{kw} exceeds the limit {window_limit()}x{window_limit()} (CONVCFG.kernel_h, "
                    f"kernel_w); larger windows are split only when they cover the whole map with one output")
        return None
    if max(kh, kw) > kernel_limit():
        kind = "pooling window" if layer.op in POOL_OPS else "kernel"
        return (f"{kind} {kh}x{kw} exceeds the limit {kernel_limit()}x{kernel_limit()} (the convolution engine's "
                f"kernels); larger windows are split only for max pools, for average pools on a vector unit with sum "
                f"(windows to {window_limit()}, CONVCFG.kernel_h, kernel_w) and for windows covering the whole map with "
                f"one output")
    return None


def smallest_tiles(shape: ConvShape, config: AcceleratorConfig) -> tuple[int, int, int, int]:
    """The smallest OC, IC, OH, OW tiles the search considers (the whole reduction without
    partial sums)."""
    tiles = [tile_candidates(shape.bound(dim), granule(dim, shape, config))[0] for dim in DIMS]
    if not whole_reduction(shape, tiles[1], config):
        tiles[1] = shape.ic
    return tuple(tiles)


def layer_problem(layer: Layer, config: AcceleratorConfig) -> str | None:
    """Why `layer` (one step of a split, or a layer that needs none) cannot be compiled for
    `config`, or None."""
    for size, what in zip(layer.in_shape[1:], ("height", "width")):
        if size > map_limit():
            return f"input {what} {size} exceeds the limit {map_limit()} (LOAD.y_offset, x_offset)"
    problem = _window_problem(layer) if layer.op in (*COMPUTE_OPS, *POOL_OPS) else None
    if problem:
        return problem
    try:
        if layer.op in COMPUTE_OPS:
            shape = ConvShape.of(layer)
            if not legal_tiles(shape, *smallest_tiles(shape, config), config):  # then no tile fits
                raise unplannable(layer.name, shape, config)
        else:
            check_vector_op(layer, config)
            vector_tile(layer, config, len(layer.inputs))
    except PlanningError as error:
        return str(error)
    return None


def bounds_quantization(config: AcceleratorConfig) -> bool:
    """Whether `config` refuses some requantizations (the serial requantizer's shifts and
    multipliers, `hwgen.serial_shifts.check_shifts`): a float network is checked once calibrated."""
    return is_serial(config)


def network_problems(net: Network, config: AcceleratorConfig) -> dict[str, str]:
    """Per layer of `net` (by name) that cannot be compiled for `config`: the first reason,
    naming the layer, the quantity, its value and the limit (and the split step it concerns)."""
    problems = {}
    for original in net.layers:
        problem = _split_problem(original, config)
        if problem is None and original.quant is not None:
            try:
                check_shifts(config, original.name, original.quant.multiplier, original.quant.shift)
            except PlanningError as error:
                problem = str(error)
        if problem:
            problems[original.name] = problem
    return problems


def _split_problem(original: Layer, config: AcceleratorConfig) -> str | None:
    """The first reason a step of `original`'s split cannot be compiled (its shape alone), or None."""
    shape = shape_only(original)
    for layer in split_layer(shape, config):
        problem = layer_problem(layer, config)
        if not problem:
            continue
        if layer is shape:
            named = problem.startswith(f"layer {layer.name!r}")  # the planner's own errors name it
            return problem if named else f"layer {original.name!r} ({original.op}): {problem}"
        return (f"layer {original.name!r} ({original.op}), split as {layer.name!r} ({layer.op} "
                f"{_shape(layer.in_shape)} -> {_shape(layer.out_shape)}, window "
                f"{_shape(layer.kernel)}, stride {layer.stride[0]}): {problem}")
    return None


def _shape(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def constant_bytes(layer: Layer) -> int:
    """At least the DRAM bytes of a (split) layer's constants: a byte per weight (depthwise: per
    channel and kernel position), the parameter records of its output channels."""
    params = PARAM_BYTES * layer.out_shape[0]
    if layer.op not in COMPUTE_OPS:
        return params
    return params + layer.out_shape[0] * (layer.in_shape[0] // layer.groups) * layer.kernel[0] * layer.kernel[1]


def dram_problem(net: Network, config: AcceleratorConfig) -> str | None:
    """Whether the constants and the input alone exceed the DRAM the configuration addresses."""
    sizes = {original.name: sum(constant_bytes(layer) for layer in split_layer(shape_only(original), config))
             for original in net.layers}
    need = sum(sizes.values()) + tensor_bytes(net.input_shape, config.pe.simd)
    bits = config.template.dram_address_bits
    if need <= 1 << bits:
        return None
    largest = max(sizes, key=sizes.get)
    return (f"network {net.name!r} needs at least {need} bytes of DRAM (input {need - sum(sizes.values())} bytes; "
            f"weights and parameters {sum(sizes.values())} bytes, the most in layer {largest!r}: {sizes[largest]}), "
            f"which exceeds the limit {1 << bits} (template.dram_address_bits: {bits})")


def check_network(net: Network, config: AcceleratorConfig) -> None:
    """Raise a PlanningError naming the first layer of `net` that cannot be compiled for
    `config`, or the DRAM the network needs beyond what the configuration addresses."""
    problems = network_problems(net, config)
    problem = next(iter(problems.values())) if problems else dram_problem(net, config)
    if problem:
        raise PlanningError(problem + f" (configuration {config.name!r})")
