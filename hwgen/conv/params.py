"""What the convolution engine's parts are built for, and the loop-end flags they share."""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Value
from amaranth.lib import data

WRAPS = data.StructLayout({"q": 1, "phase": 1, "kh": 1, "icg": 1, "ocg": 1, "owg": 1, "row": 1, "sub": 1})
"""The loop-end flags: a step's loops (`q`, `phase`, kernel rows `kh`, input channel groups
`icg`: each at its last iteration) and a group's (oc groups `ocg`, ow groups `owg`, the last
output `row`, or row block with a fused pool; `sub`: the last row of a fused pool's block, always
1 without)."""


@dataclass(frozen=True)
class ConvParams:
    """The engine's shape: a PE array of `rows x cols` PEs of `simd` lanes (`latency` cycles from
    a group's last step to its first drain beat), input pixel pointers of `pixel_bits`, weight
    word addresses of `weight_bits`, accumulator records of `acc_bits`, oc groups of `group_bits`
    (no more than one parameter bank holds), drain beats at least `interval` cycles apart through
    a post-processing of `post_latency`, `partial_sums` kept (`template.partial_sums: kept`),
    `compiler_steps` (`template.address_steps: compiler`) and fused k x k / k max pools up to
    `max_pool` (`template.max_fused_pool`)."""

    rows: int
    cols: int
    simd: int
    latency: int
    pixel_bits: int
    weight_bits: int
    acc_bits: int
    group_bits: int
    interval: int
    post_latency: int
    partial_sums: bool
    compiler_steps: bool
    max_pool: int = 1

    @property
    def pools(self) -> bool:
        """Whether the engine pools its results (`template.max_fused_pool` > 1)."""
        return self.max_pool > 1

    def pool_log(self, pool: Value) -> Value:
        """log2 of a CONV's pool size from its `pool` field (0, 1 or a power of two up to
        `max_pool`, at most 4): bit 1 for 2, bit 2 for 4."""
        return Const(0, 1) if not self.pools else pool[1] if self.max_pool == 2 else Cat(pool[1], pool[2])
