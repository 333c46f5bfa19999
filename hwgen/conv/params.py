"""What the convolution engine's parts are built for, and the loop-end flags they share."""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.lib import data

WRAPS = data.StructLayout({"q": 1, "phase": 1, "kh": 1, "icg": 1, "ocg": 1, "owg": 1, "row": 1})
"""The loop-end flags: a step's loops (`q`, `phase`, kernel rows `kh`, input channel groups
`icg`: each at its last iteration) and a group's (oc groups `ocg`, ow groups `owg`, the last
output `row`)."""


@dataclass(frozen=True)
class ConvParams:
    """The engine's shape: a PE array of `rows x cols` PEs of `simd` lanes (`latency` cycles from
    a group's last step to its first drain beat), input pixel pointers of `pixel_bits`, weight
    word addresses of `weight_bits`, accumulator records of `acc_bits`, oc groups of `group_bits`
    (no more than one parameter bank holds), drain beats at least `interval` cycles apart through
    a post-processing of `post_latency`, `partial_sums` kept (`template.partial_sums: kept`) and
    `compiler_steps` (`template.address_steps: compiler`)."""

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
