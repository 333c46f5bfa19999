"""Instruction-level simulator: executes a Program on numpy memories, one instruction at a
time in program order (the order in which every valid program completes).

Semantics per instruction are those of docs/isa.md with the buffer layouts of
`hwgen.layout`; arithmetic is the golden model's (`sim.golden.kernels`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hwgen.config import AcceleratorConfig
from hwgen.dma import Descriptor
from hwgen.program_walk import Dispatched, ProgramError, check_program, dispatched
from hwgen.isa import SEMAPHORES, Buffer, Instruction, Opcode, VecOp
from hwgen.layout import ACC_BYTES, PARAM_BYTES, acc_element, bank_bytes, input_offset, partial_sums_offset, weight_word
from hwgen.program import Program
from sim.dma_model import DmaTraffic, run_descriptor
from sim.golden import kernels


@dataclass
class IsaStats:
    instructions: int = 0
    traffic: DmaTraffic = field(default_factory=DmaTraffic)
    macs: int = 0


BUFFER_NAMES = {Buffer.INPUT: "input", Buffer.WEIGHT: "weight", Buffer.PARAM: "param", Buffer.ACC: "acc"}


class IsaSimulator:
    """Holds DRAM (bytes) and both banks of every buffer; `run()` executes the program."""

    def __init__(self, config: AcceleratorConfig, program: Program, dram: np.ndarray):
        self.config = config
        self.program = program
        self.dram = dram
        self.banks = {b: [np.zeros(bank_bytes(config, name), np.uint8) for _ in range(2)] for b, name in BUFFER_NAMES.items()}
        self.sems = [0] * SEMAPHORES
        self.convcfg: Instruction | None = None
        self.stats = IsaStats()

    def run(self, max_instructions: int = 10**8) -> IsaStats:
        check_program(self.program, self.config)
        for step in dispatched(self.program, max_instructions):
            self.stats.instructions += 1
            self._execute(step)
        return self.stats

    # ------------------------------------------------------------------ per opcode
    def _execute(self, step: Dispatched) -> None:
        ins = step.instruction
        op = ins.opcode
        if op == Opcode.WAIT:
            if self.sems[ins["sem"]] == 0:
                raise ProgramError(f"instruction {step.pc}: {ins} would block forever in program order")
            self.sems[ins["sem"]] -= 1
        elif op == Opcode.SIGNAL:
            if self.sems[ins["sem"]] == (1 << self.config.template.semaphore_bits) - 1:
                raise ProgramError(f"instruction {step.pc}: {ins} overflows the {self.config.template.semaphore_bits}-bit "
                                   f"semaphore {ins['sem']} (template.semaphore_bits)")
            self.sems[ins["sem"]] += 1
        elif op in (Opcode.LOAD, Opcode.STORE):
            self._dma(ins, step.desc)
        elif op == Opcode.CONVCFG:
            self.convcfg = ins
        elif op == Opcode.CONV:
            self._conv(ins)
        elif op == Opcode.VEC:
            self._vec(ins)

    def _dma(self, ins: Instruction, desc: Descriptor) -> None:
        load = ins.opcode == Opcode.LOAD
        bank = self.banks[Buffer(ins["buffer"]) if load else Buffer.ACC][ins["bank"]]
        try:
            run_descriptor(desc, self.dram, bank, self.config.dram.bus_width_bits // 8, self.stats.traffic)
        except (IndexError, ValueError) as error:
            raise ProgramError(f"{ins}: transfer outside DRAM or the buffer ({error})") from None

    def _params(self, bank: int, channels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raw = self.banks[Buffer.PARAM][bank]
        base = channels * PARAM_BYTES
        bias = _gather(raw, base[..., None] + np.arange(4)).view(np.int32)[..., 0]
        multiplier = _gather(raw, base[..., None] + np.arange(4, 6)).view(np.uint16)[..., 0].astype(np.int64)
        shift = _gather(raw, base + 6).astype(np.int64)
        return bias.astype(np.int64), multiplier, shift

    def _input_windows(self, bank: int, groups: np.ndarray, rows: int, cols: int, kernel, stride: int,
                       base: int = 0, zero_point: int | None = None):
        """int64 (x - zx) gathered as [group..., kh, kw, out_row, out_col, lane] from the tensor at
        byte `base` (`zx` the CONVCFG's input zero point unless `zero_point` is given)."""
        cfg, simd = self.convcfg, self.config.pe.simd
        kh = np.arange(kernel[0]).reshape(-1, 1, 1, 1, 1)
        kw = np.arange(kernel[1]).reshape(1, -1, 1, 1, 1)
        oh = np.arange(rows).reshape(1, 1, -1, 1, 1)
        ow = np.arange(cols).reshape(1, 1, 1, -1, 1)
        lane = np.arange(simd).reshape(1, 1, 1, 1, -1)
        g = groups.reshape(groups.shape + (1,) * 5)
        offsets = base + input_offset(g, oh * stride + kh, kw % stride, ow + kw // stride, lane,
                                      rows=cfg["in_rows"], stride=stride, row_pitch=cfg["in_row_pitch"], simd=simd)
        raw = self.banks[Buffer.INPUT][bank].view(np.int8)
        return _gather(raw, offsets).astype(np.int64) - (cfg["in_zero_point"] if zero_point is None else zero_point)

    def _write_outputs(self, bank: int, acc: np.ndarray, channels: np.ndarray, width: int, padded: int,
                       requantize: bool, params: tuple[np.ndarray, ...], partials: int = 0, pool: int = 1) -> None:
        """acc is [channel, row, col] (int64, bias included); written as int8 (max-pooled k x k / k
        with `pool` k > 1, a map `width / k` wide), or as int32 at byte offset `partials`."""
        cfg = self.convcfg
        raw = self.banks[Buffer.ACC][bank]
        if requantize:
            _, multiplier, shift = params
            y = kernels.requantize(acc, multiplier, shift, cfg["out_zero_point"], cfg["act_min"], cfg["act_max"])
            if pool > 1:
                c, h, w = y.shape
                y = y.reshape(c, h // pool, pool, w // pool, pool).max(axis=(2, 4))
                width //= pool
            element = acc_element(np.arange(y.shape[1]).reshape(1, -1, 1), np.arange(y.shape[2]).reshape(1, 1, -1),
                                  channels.reshape(-1, 1, 1), width=width, channels=padded)
            _scatter(raw, element, y.view(np.uint8))
        else:
            element = acc_element(np.arange(acc.shape[1]).reshape(1, -1, 1), np.arange(acc.shape[2]).reshape(1, 1, -1),
                                  channels.reshape(-1, 1, 1), width=width, channels=padded)
            values = np.clip(acc, -(2**31), 2**31 - 1).astype(np.int32)
            _scatter(raw, partials + element[..., None] * ACC_BYTES + np.arange(ACC_BYTES),
                     values.view(np.uint8).reshape(values.shape + (4,)))

    def _conv(self, ins: Instruction) -> None:
        cfg = self._require_convcfg(ins)
        pe = self.config.pe
        kernel, stride = (cfg["kernel_h"], cfg["kernel_w"]), cfg["stride"]
        rows = ins["out_rows"]
        cols = (ins["ow_groups"] - 1) * pe.cols + ins["last_group_cols"]
        oc_groups, ic_groups = ins["oc_groups"], ins["ic_groups"]
        padded = oc_groups * pe.rows
        weights = self.banks[Buffer.WEIGHT][ins["weight_bank"]].view(np.int8)
        channels = np.arange(padded)
        params = self._params(ins["weight_bank"], channels)
        partials = partial_sums_offset(pe.cols, oc_groups, pe.rows)
        if ins["init_from_acc"]:
            # all partial sums are read before any result is written (the partial-sum offset
            # makes the RTL's in-place int32 -> int8 rewrite safe; see hwgen.layout)
            element = acc_element(np.arange(rows).reshape(1, -1, 1), np.arange(cols).reshape(1, 1, -1),
                                  channels.reshape(-1, 1, 1), width=cols, channels=padded)
            raw = self.banks[Buffer.ACC][ins["out_bank"]]
            acc = _gather(raw, partials + element[..., None] * ACC_BYTES + np.arange(ACC_BYTES)).view(np.int32)[..., 0].astype(np.int64)
        else:
            acc = np.repeat(np.repeat(params[0].reshape(-1, 1, 1), rows, axis=1), cols, axis=2)
        for ocg in range(oc_groups):
            base = (ocg * pe.rows) // pe.simd if ins["depthwise"] else 0
            groups = base + np.arange(ic_groups)
            x = self._input_windows(ins["in_bank"], groups, rows, cols, kernel, stride)  # [g,kh,kw,oh,ow,l]
            word = weight_word(ocg, np.arange(ic_groups).reshape(-1, 1, 1), np.arange(kernel[0]).reshape(1, -1, 1),
                               np.arange(kernel[1]).reshape(1, 1, -1), ic_groups=ic_groups, kernel=kernel)
            offsets = word[..., None, None] * pe.rows * pe.simd + np.arange(pe.rows).reshape(-1, 1) * pe.simd + np.arange(pe.simd)
            w = _gather(weights, offsets).astype(np.float64)  # [g,kh,kw,r,l]
            block = slice(ocg * pe.rows, (ocg + 1) * pe.rows)
            acc[block] += np.rint(np.einsum("gabhwl,gabrl->rhw", x.astype(np.float64), w)).astype(np.int64)
            self.stats.macs += int(np.prod(x.shape)) * pe.rows
        self._write_outputs(ins["out_bank"], acc, channels, cols, padded, bool(ins["requantize"]), params, partials,
                            max(1, ins["pool"]))

    def _vec(self, ins: Instruction) -> None:
        cfg = self._require_convcfg(ins)
        simd = self.config.pe.simd
        rows, cols, groups = ins["out_rows"], ins["out_cols"], ins["channel_groups"]
        op = VecOp(ins["op"])
        if op in (VecOp.MAX, VecOp.SUM):
            x = self._input_windows(ins["in_bank"], np.arange(groups), rows, cols,
                                    (cfg["kernel_h"], cfg["kernel_w"]), cfg["stride"])
            acc = x.max(axis=(1, 2)) if op == VecOp.MAX else x.sum(axis=(1, 2))  # [g, oh, ow, l]
        else:
            a = self._input_windows(ins["in_bank"], np.arange(groups), rows, cols, (1, 1), 1)[:, 0, 0]
            acc = a * ins["multiplier_a"]
            if op == VecOp.ADD:
                b = self._input_windows(ins["in_bank"], np.arange(groups), rows, cols, (1, 1), 1,
                                        base=ins["in2_addr"], zero_point=ins["in2_zero_point"])[:, 0, 0]
                acc = acc + b * ins["multiplier_b"]
        acc = acc.transpose(0, 3, 1, 2).reshape(groups * simd, rows, cols)  # [channel, oh, ow]
        channels = np.arange(groups * simd)
        params = self._params(ins["param_bank"], channels)
        self._write_outputs(ins["out_bank"], acc, channels, cols, groups * simd, True, params)

    def _require_convcfg(self, ins: Instruction) -> Instruction:
        if self.convcfg is None:
            raise ProgramError(f"{ins.opcode.name} before any CONVCFG")
        return self.convcfg


def _gather(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    if offsets.size and (offsets.min() < 0 or offsets.max() >= raw.size):
        raise ProgramError(f"buffer access at byte {int(offsets.max())} outside a bank of {raw.size} bytes")
    return raw[offsets]


def _scatter(raw: np.ndarray, offsets: np.ndarray, values: np.ndarray) -> None:
    if offsets.size and (offsets.min() < 0 or offsets.max() >= raw.size):
        raise ProgramError(f"buffer write at byte {int(offsets.max())} outside a bank of {raw.size} bytes")
    raw[offsets] = values
