"""The VEC operations a configuration's vector unit implements, without HDL imports (the unit:
`hwgen.vector_unit`)."""
from __future__ import annotations

from hwgen.config import AcceleratorConfig
from hwgen.isa import VecOp


def vector_ops(config: AcceleratorConfig) -> frozenset[VecOp]:
    """The VEC operations the unit implements (`template.vector_ops`)."""
    return frozenset(VecOp[name.upper()] for name in config.template.vector_ops)
