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
from planner.compile.vector import check_vector_op, vector_tile
from planner.ir import COMPUTE_OPS, POOL_OPS, Layer, Network, Op
from planner.schedule import DIMS, ConvShape, granule, legal_tiles, tile_candidates, unplannable, whole_reduction
from planner.split import kernel_limit, split_layer, stride_limit


def map_limit() -> int:
    """Largest row or column of a map a LOAD addresses (`y_offset`, `x_offset`)."""
    return field_limit(Opcode.LOAD, "y_offset")


def _window_problem(layer: Layer) -> str | None:
    (kh, kw), (sh, sw) = layer.kernel, layer.stride
    if sh != sw:
        return f"stride {sh}x{sw}: the hardware needs equal strides"
    if sh > stride_limit():
        return f"stride {sh} exceeds the limit {stride_limit()} (CONVCFG.stride)"
    if max(kh, kw) > kernel_limit():
        kind = "pooling window" if layer.op in POOL_OPS else "kernel"
        return (f"{kind} {kh}x{kw} exceeds the limit {kernel_limit()}x{kernel_limit()} (CONVCFG.kernel_h, kernel_w); "
                f"larger windows are split only for max pools and for windows covering the whole map with one output")
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


def network_problems(net: Network, config: AcceleratorConfig) -> dict[str, str]:
    """Per layer of `net` (by name) that cannot be compiled for `config`: the first reason,
    naming the layer, the quantity, its value and the limit."""
    problems = {}
    for original in net.layers:
        for layer in split_layer(original, config):
            problem = layer_problem(layer, config)
            if problem:
                step = f" (its split step {layer.name!r}, {layer.op} {layer.kernel[0]}x{layer.kernel[1]}/{layer.stride[0]})" \
                    if layer.name != original.name else ""
                named = problem.startswith(f"layer {layer.name!r}")  # the planner's own errors name it
                problems[original.name] = problem if named and not step else f"layer {original.name!r} ({original.op}){step}: {problem}"
                break
    return problems


def check_network(net: Network, config: AcceleratorConfig) -> None:
    """Raise a PlanningError naming the first layer of `net` that cannot be compiled for `config`."""
    problems = network_problems(net, config)
    if problems:
        raise PlanningError(next(iter(problems.values())) + f" (configuration {config.name!r})")
