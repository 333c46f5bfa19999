"""The serial requantization lane's arithmetic limits (`template.postprocess: serial`), without
HDL imports: the planner refuses the requantizations the lane (`hwgen.serial_post`) cannot apply."""
from __future__ import annotations

from collections.abc import Sequence

from common.errors import PlanningError
from hwgen.config import MULTIPLIER_BITS, AcceleratorConfig, Postprocess, VectorOp

SHIFT_SPAN_BITS = 4
SHIFTS = range(15, 15 + 2**SHIFT_SPAN_BITS)
"""The requantization shifts the lane implements, real multipliers in [2**-15, 2) (the multiplier
in [2**15, 2**16), `planner.quant.fixed_point`; 15: a pooling's 1; the digits CNN, the test
patterns and random convolutions use 15 to 26): `shift - 15` in `SHIFT_SPAN_BITS` bits shifts
the product without its low 15 bits."""
NORMALIZED_MULTIPLIERS = range(2 ** (MULTIPLIER_BITS - 1), 2**MULTIPLIER_BITS)
"""The nonzero multipliers of a lane with `normalized_multipliers`."""
UNNORMALIZED_OPS = frozenset({VectorOp.ADD, VectorOp.COPY})
"""The vector operations whose requantization multiplier is 1 (`planner.quant.layer_quant`)."""


def is_serial(config: AcceleratorConfig) -> bool:
    """Whether the engines share one serial lane (`template.postprocess: serial`)."""
    return config.template.postprocess == Postprocess.SERIAL


def normalized_multipliers(config: AcceleratorConfig) -> bool:
    """Whether the serial lane of `config` only meets normalized multipliers
    (`NORMALIZED_MULTIPLIERS`): its vector unit, if any, has no operation requantized with
    multiplier 1."""
    return is_serial(config) and not UNNORMALIZED_OPS & set(config.template.vector_ops)


def check_shifts(config: AcceleratorConfig, layer: str, multipliers: Sequence[int], shifts: Sequence[int]) -> None:
    """Refuse a layer whose requantization (per channel: `multipliers`, `shifts`) has a nonzero
    multiplier with a shift the serial lane of `config` does not implement (`SHIFTS`), or one
    outside `NORMALIZED_MULTIPLIERS` when the lane has `normalized_multipliers`."""
    if not is_serial(config):
        return
    where = f"the serial requantizer of configuration {config.name!r} (template.postprocess: serial)"
    bad = sorted({int(s) for m, s in zip(multipliers, shifts) if m and s not in SHIFTS})
    if bad:
        raise PlanningError(f"layer {layer!r}: requantization shifts {bad} (real multipliers of 2 or more, or below "
                            f"2**-15); {where} implements shifts {SHIFTS.start}..{SHIFTS.stop - 1}")
    low = sorted({int(m) for m in multipliers if m and m not in NORMALIZED_MULTIPLIERS})
    if low and normalized_multipliers(config):
        why = ("its vector unit has none of " if config.template.vector_unit else "it has no vector unit: none of ")
        raise PlanningError(f"layer {layer!r}: requantization multipliers {low[:4]}; {where} takes 0 or "
                            f"{NORMALIZED_MULTIPLIERS.start}..{NORMALIZED_MULTIPLIERS.stop - 1} ({why}"
                            f"{', '.join(sorted(UNNORMALIZED_OPS))}, whose multiplier is 1)")
