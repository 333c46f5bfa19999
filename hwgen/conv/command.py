"""The convolution engine's command: the CONV it runs and its per-instruction constants."""
from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from hwgen.conv.params import ConvParams
from hwgen.isa import Opcode
from hwgen.isa_layout import PAYLOADS
from hwgen.layout import ACC_BYTES
from hwgen.shift_add import shift_add


class ConvCommand(wiring.Component):
    """The CONV and its per-instruction constants, latched when the command is accepted.

    - `start`: a command is accepted, `new` its CONV payload;
    - `conv`: the command's CONV payload;
    - `set_records`: records of a full pixel set (`C` pixels); `last_records`: of the last pixel
      set of a row (with `compiler_steps`, `last_group_cols <= C`: a few adders, no multiplier);
      with a fused pool of k, of the pooled pixels (`C / k`, `last_group_cols / k`);
    - `partials`: with `partial_sums`, the word offset of the int32 partial sums (`hwgen.layout`).
    """

    def __init__(self, params: ConvParams):
        self.params = params
        partials = {"partials": Out(params.acc_bits)} if params.partial_sums else {}
        super().__init__({
            "start": In(1),
            "new": In(PAYLOADS[Opcode.CONV]),
            "conv": Out(PAYLOADS[Opcode.CONV]),
            "set_records": Out(params.acc_bits),
            "last_records": Out(params.acc_bits),
            **partials,
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p, new = self.params, self.new
        log_c = exact_log2(p.cols)
        pool_log = p.pool_log(new.pool)
        set_records = new.oc_groups << log_c
        last_cols = new.last_group_cols
        if p.pools:  # records of pooled pixels: C / k and last_group_cols / k a set
            set_records, last_cols = set_records >> pool_log, last_cols >> pool_log
        if p.compiler_steps:  # last_group_cols <= C: a few adders
            last_records_product = shift_add(new.oc_groups, last_cols[:ceil_log2(p.cols + 1)])
        else:
            last_records_product = last_cols * new.oc_groups
        with m.If(self.start):
            m.d.sync += [
                self.conv.eq(new),
                self.set_records.eq(set_records),
                self.last_records.eq(last_records_product),
            ]
        if p.partial_sums:
            with m.If(self.start):
                m.d.sync += self.partials.eq(((new.oc_groups << log_c) + ACC_BYTES - 1) >> exact_log2(ACC_BYTES))
        return m
