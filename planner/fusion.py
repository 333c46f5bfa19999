"""Max pools fused into the producing convolution's output path (`template.max_fused_pool`).

A MaxPool whose window equals its stride (k x k / k, no padding, floor mode) right after a
convolution whose output nothing else reads runs in the convolution engine: it pools the
CONV's int8 results (docs/hardware.md). That equals the golden model's MaxPool of the conv's
output when the pool's own requantization is the identity on the conv's output range and the
conv's multipliers are >= 0 (the requantization is then non-decreasing in the sum, so it
commutes with the maximum). A fused layer is the conv with `pool` = k and the pool's output.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from common.errors import PlanningError
from hwgen.config import AcceleratorConfig
from planner.ir import Layer, Network, Op
from planner.schedule import Schedule
from planner.split import stride_limit


def fusable_pools(net: Network, config: AcceleratorConfig) -> dict[str, int]:
    """Per conv layer name, the size k of the max pool after it that the configuration's
    convolution engine can compute in its output path."""
    producers = {layer.output: layer for layer in net.layers}
    readers = Counter(name for layer in net.layers for name in layer.inputs)
    fusable = {}
    for pool in net.layers:
        conv = producers.get(pool.inputs[0]) if pool.op == Op.MAXPOOL else None
        if conv is not None and _fusable(conv, pool, config) and readers[conv.output] == 1 \
                and conv.output not in net.outputs:
            fusable[conv.name] = pool.kernel[0]
    return fusable


def _fusable(conv: Layer, pool: Layer, config: AcceleratorConfig) -> bool:
    k = pool.kernel[0]
    shape_ok = (conv.op == Op.CONV and conv.pool == 1 and conv.stride[0] <= stride_limit()  # not split
                and pool.kernel == pool.stride == (k, k)
                and not any(pool.pads) and 2 <= k <= config.template.max_fused_pool and not k & (k - 1)
                and pool.out_shape == (conv.out_shape[0], conv.out_shape[1] // k, conv.out_shape[2] // k))
    return shape_ok and (conv.quant is None or pool.quant is None or _identity_pool(conv, pool))


def _identity_pool(conv: Layer, pool: Layer) -> bool:
    """The pool's requantization maps every value of the conv's output range to itself and the
    conv's multipliers are >= 0."""
    q, c = pool.quant, conv.quant
    return bool(np.all(c.multiplier >= 0) and np.all(q.multiplier == np.left_shift(1, q.shift))
                and q.output.zero_point == q.inputs[0].zero_point and q.act_min <= c.act_min
                and q.act_max >= c.act_max)


def fuse_planned(net: Network, schedules: Mapping[str, Schedule], config: AcceleratorConfig) -> Network:
    """`net` with the pools its conv layers' `schedules` fuse (`Schedule.pool`)."""
    return fuse_pools(net, {name: s.pool for name, s in schedules.items() if s.pool > 1}, config)


def pool_after(net: Network, conv: Layer) -> Layer:
    """The max pool reading `conv`'s output (of a fusable conv: its only reader)."""
    return next(layer for layer in net.layers if layer.op == Op.MAXPOOL and layer.inputs == (conv.output,))


def fused_layer(conv: Layer, pool: Layer) -> Layer:
    """`conv` computing `pool` in its output path."""
    return replace(conv, output=pool.output, out_shape=pool.out_shape, pool=pool.kernel[0])


def fuse_pools(net: Network, pools: Mapping[str, int], config: AcceleratorConfig) -> Network:
    """`net` with each conv named in `pools` merged with the max pool after it (`pools[name]` its
    size); PlanningError if one is not fusable there."""
    if not pools:
        return net
    allowed = fusable_pools(net, config)
    for name, k in pools.items():
        if allowed.get(name) != k:
            raise PlanningError(f"layer {name!r}: the plan fuses a {k}x{k} max pool into it, which network "
                                f"{net.name!r} on configuration {config.name!r} does not allow there; allowed: "
                                f"{f'pool {allowed[name]}' if name in allowed else 'no fused pool'} "
                                f"(template.max_fused_pool: {config.template.max_fused_pool}, docs/hardware.md)")
    pooled = {layer.name: pool_after(net, layer) for layer in net.layers if layer.name in pools}
    layers = [fused_layer(layer, pooled[layer.name]) if layer.name in pooled else layer
              for layer in net.layers if not any(layer is pool for pool in pooled.values())]
    return replace(net, layers=tuple(layers))
