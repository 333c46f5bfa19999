"""The convolution engine's input pointers: the input pixel and the weight word of each step."""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from hwgen.conv.params import WRAPS, ConvParams
from hwgen.conv.kernel_size import KERNEL_BITS
from hwgen.conv_steps import steps_layout
from hwgen.isa import Opcode
from hwgen.isa_layout import PAYLOADS


class ConvPointers(wiring.Component):
    """The pointers of a step, advanced as its loops move: the input pixel of (ic group, kernel
    row, phase, q) and the weight word of (oc group, ic group, kernel row, 0); and the bases of
    the groups (output row, ow group, first input group, accumulator record). Depthwise, a group's
    first input group `(ocg * R) // S` moves by `R // S` per oc group, or by one every `S // R`
    oc groups. With a fused pool (`pool` k > 1) the groups run as (row block of k output rows, ow
    group, oc group, row of the block).

    - `start`: a command is accepted; `issue`: a step enters the array;
    - `wraps`, `ocg`: the loop-end flags and the oc group;
    - `convcfg`, `steps`: the CONVCFG payload and its pointer steps; `conv`: the CONV payload;
    - `set_records`, `last_records`: records of a full pixel set and of a row's last one;
    - `pixel_ptr`: the step's input pixel; `weight_row`: the weight word of its kernel row;
    - `record`: accumulator record `L` of (the group's first pixel, its oc group).
    """

    def __init__(self, params: ConvParams):
        self.params = params
        super().__init__({
            "start": In(1),
            "issue": In(1),
            "wraps": In(WRAPS),
            "ocg": In(params.group_bits),
            "convcfg": In(PAYLOADS[Opcode.CONVCFG]),
            "steps": In(steps_layout(params.pixel_bits)),
            "conv": In(PAYLOADS[Opcode.CONV]),
            "set_records": In(params.acc_bits),
            "last_records": In(params.acc_bits),
            "pixel_ptr": Out(params.pixel_bits),
            "weight_row": Out(params.weight_bits),
            "record": Out(params.acc_bits),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        p, cfg, conv, wraps, ocg = self.params, self.convcfg, self.conv, self.wraps, self.ocg
        R, C, S = p.rows, p.cols, p.simd
        rowstep, ohstep, plane = self.steps.row, self.steps.oh, self.steps.plane  # an input row, output row, ic group
        # input pixels: of (oh, ow group 0), of (oh, ow group), of the group's first input group
        row_base, cell, group_start = Signal(p.pixel_bits), Signal(p.pixel_bits), Signal(p.pixel_bits)
        set_record = Signal(p.acc_bits)  # record L of (first pixel of the group, oc group 0)
        # with a fused pool, groups move through a row block's rows before the next oc group: the
        # input pixel and weight word of the block's first row (`block_start`, `weight_base`)
        block_start = Signal(p.pixel_bits) if p.pools else group_start
        weight_base = Signal(p.weight_bits) if p.pools else None
        pool_log = p.pool_log(conv.pool)
        cell_ends = wraps.ocg & wraps.sub if p.pools else wraps.ocg  # the group ends its (row block, ow group)
        next_ocg = Mux(wraps.ocg, 0, ocg + 1)
        next_row = row_base + (ohstep << pool_log if p.pools else ohstep)
        next_cell = Mux(wraps.owg, next_row, cell + C)
        base_moves = conv.depthwise if R >= S else conv.depthwise & ((next_ocg * R) % S == 0)
        depthwise_step = plane << exact_log2(R // S) if R >= S else plane
        next_set_record = Mux(cell_ends, set_record + Mux(wraps.owg, self.last_records, self.set_records), set_record)
        next_input = Signal(p.pixel_bits)  # the next group's `group_start`
        next_block = Mux(wraps.ocg, next_cell, block_start + Mux(base_moves, depthwise_step, 0))
        m.d.comb += [next_input.eq(Mux(wraps.sub, next_block, group_start + ohstep) if p.pools else next_block),
                     self.record.eq(set_record + ocg)]
        group_ptr, row_ptr = Signal(p.pixel_bits), Signal(p.pixel_bits)  # input pixel of (icg, kh = 0), of (icg, kh)
        phase_ptr, pixel_ptr = Signal(p.pixel_bits), self.pixel_ptr  # of (icg, kh, phase, q = 0), of the step
        weight_row = self.weight_row  # weight word of (ocg, icg, kh, 0)
        with m.If(self.start):
            m.d.sync += [
                row_base.eq(0), cell.eq(0), group_start.eq(0), set_record.eq(0),
                group_ptr.eq(0), row_ptr.eq(0), phase_ptr.eq(0), pixel_ptr.eq(0), weight_row.eq(0),
            ]
        with m.If(self.issue):
            with m.If(~wraps.q):
                m.d.sync += pixel_ptr.eq(pixel_ptr + 1)
            with m.Elif(~wraps.phase):
                m.d.sync += [phase_ptr.eq(phase_ptr + cfg.in_row_pitch), pixel_ptr.eq(phase_ptr + cfg.in_row_pitch)]
            with m.Else():
                m.d.sync += weight_row.eq(weight_row + cfg.kernel_w[:KERNEL_BITS])
                with m.If(~wraps.kh):
                    start = row_ptr + rowstep
                    m.d.sync += [row_ptr.eq(start), phase_ptr.eq(start), pixel_ptr.eq(start)]
                with m.Elif(~wraps.icg):
                    start = group_ptr + plane
                    m.d.sync += [group_ptr.eq(start), row_ptr.eq(start), phase_ptr.eq(start), pixel_ptr.eq(start)]
                with m.Else():
                    m.d.sync += [
                        group_ptr.eq(next_input), row_ptr.eq(next_input), phase_ptr.eq(next_input),
                        pixel_ptr.eq(next_input), row_base.eq(Mux(cell_ends & wraps.owg, next_row, row_base)),
                        group_start.eq(next_input), set_record.eq(next_set_record),
                    ]
                    if p.pools:
                        self._block_bases(m, block_start, weight_base, next_input)
                    with m.If(cell_ends):
                        m.d.sync += [cell.eq(next_cell), weight_row.eq(0)]
        if p.pools:
            with m.If(self.start):
                m.d.sync += [block_start.eq(0), weight_base.eq(0)]
        return m

    def _block_bases(self, m: Module, block_start: Signal, weight_base: Signal, next_input: Signal) -> None:
        """At a group's end with a fused pool: the block's next row starts again at the block's
        weights; after its last row the next block's bases are the next group's pointers."""
        wraps, weight_row = self.wraps, self.weight_row
        with m.If(~wraps.sub):
            m.d.sync += weight_row.eq(weight_base)
        with m.Else():
            m.d.sync += [block_start.eq(next_input),
                         weight_base.eq(Mux(wraps.ocg, 0, weight_row + self.convcfg.kernel_w[:KERNEL_BITS]))]
