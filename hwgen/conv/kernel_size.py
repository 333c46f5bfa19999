"""The convolution engine's kernel counters, without HDL imports: the planner and the program
check refuse larger kernels (the engine: `hwgen.conv`)."""
from __future__ import annotations

KERNEL_BITS = 4
"""The engine's kernel counters: kernels up to 15 x 15 (CONVCFG's kernel fields are wider, for the
vector unit's windows; the engine reads their low bits, `hwgen.program_walk.check_conv_kernels`)."""
KERNEL_LIMIT = (1 << KERNEL_BITS) - 1
"""The largest kernel side a CONV runs."""
