"""The vector unit against the ISA simulator's VEC (`IsaSimulator._vec`): random bank contents
and random CONVCFG + VEC fields; the whole accumulator bank must match byte for byte and each
VEC must take exactly `hwgen.timing.vec_cycles` cycles."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.sim import Simulator

from hwgen.config import AcceleratorConfig, config_from_dict
from hwgen.isa import Buffer, Instruction, Opcode, VecOp, field_limit
from hwgen.layout import PARAM_BYTES, bank_bytes, phase_row_pitch
from hwgen.program import Program
from hwgen.serial_post import SerialPostProcess
from hwgen.serial_shifts import NORMALIZED_MULTIPLIERS, SHIFTS, is_serial, normalized_multipliers
from hwgen.conv_steps import convcfg_steps
from hwgen.timing import vec_cycles
from hwgen.vector_unit import VectorUnit
from hwgen.vector_ops import vector_ops
from planner.quant import MAX_SHIFT
from sim.isa_sim import IsaSimulator


def make_config(rows: int, cols: int, simd: int, template: dict | None = None, input_bytes: int = 4096) -> AcceleratorConfig:
    """A small configuration: 2 KB input banks (unless `input_bytes` says), 1 KB accumulator banks."""
    return config_from_dict({
        "clock_mhz": 10, "pe": {"rows": rows, "cols": cols, "simd": simd},
        "widths": {"activation": 8, "weight": 8, "accumulator": 32},
        "buffers": {"input_bytes": input_bytes, "weight_bytes": 64, "output_bytes": 2048},
        "dram": {"bus_width_bits": 8, "bandwidth_bytes_per_cycle": 1, "latency_cycles": 1, "burst_beats": 1},
        "template": template or {}})


COMPACT = {"postprocess": "serial", "vector_products": "serial"}
"""The DSP-free vector unit: the shared serial lane, digit-serial products."""
MAX_ONLY = {**COMPACT, "vector_ops": ["max"], "timing_registers": False}
"""The iCEBreaker's vector unit: MAX alone, the read address straight from the adders."""


@dataclass
class Case:
    """One CONVCFG + VEC with the bank contents it starts from."""

    convcfg: Instruction
    vec: Instruction
    input: np.ndarray
    param: np.ndarray
    acc: np.ndarray


def random_case(config: AcceleratorConfig, rng: np.random.Generator) -> Case:
    """Random fields (the tensors fit the input bank; `in2_addr` a multiple of S) and bytes; the
    parameter records get multipliers and shifts that keep many results inside the clamp."""
    simd, input_bank = config.pe.simd, bank_bytes(config, "input")
    ops = sorted(vector_ops(config))
    while True:
        op = ops[int(rng.integers(len(ops)))]
        rows, cols, groups = (int(v) for v in rng.integers(1, [5, 6, 4]))
        if rng.random() < 0.05:
            groups = 0
        kernel_h, kernel_w, stride = (int(v) for v in rng.integers(1, [4, 4, 3]))
        window = op in (VecOp.MAX, VecOp.SUM)
        layout_stride = stride if window else 1
        in_rows = ((rows - 1) * stride + kernel_h if window else rows) + int(rng.integers(2))
        columns = (cols - 1) * stride + kernel_w if window else cols
        pitch = phase_row_pitch(columns, layout_stride, config.pe.cols) + int(rng.integers(3))
        footprint = groups * in_rows * layout_stride * pitch * simd
        if footprint <= input_bank // 2:
            break
    in2_addr = int(rng.integers(0, (input_bank - footprint) // simd + 1)) * simd if op == VecOp.ADD else 0
    multipliers = [int(rng.choice([0, 1, int(rng.integers(1, 256)), int(rng.integers(2**15, 2**16))])) for _ in range(2)]
    out_zero_point = int(rng.integers(-128, 128))
    act_min, act_max = sorted(int(v) for v in rng.choice([[-128, 127], [out_zero_point, 127], rng.integers(-128, 128, 2)]))
    convcfg = Instruction.make(
        Opcode.CONVCFG, in_zero_point=int(rng.integers(-128, 128)), out_zero_point=out_zero_point,
        act_min=act_min, act_max=act_max, kernel_h=kernel_h, kernel_w=kernel_w, stride=stride,
        in_rows=in_rows, in_row_pitch=pitch)
    vec = Instruction.make(
        Opcode.VEC, op=op, in_bank=int(rng.integers(2)), out_bank=int(rng.integers(2)), in2_addr=in2_addr,
        in2_zero_point=int(rng.integers(-128, 128)), channel_groups=groups, out_rows=rows, out_cols=cols,
        multiplier_a=multipliers[0], multiplier_b=multipliers[1], param_bank=int(rng.integers(2)))

    return Case(convcfg, vec, rng.integers(0, 256, input_bank, dtype=np.uint8), random_params(config, rng, vec, convcfg),
                rng.integers(0, 256, bank_bytes(config, "acc"), dtype=np.uint8))


def random_params(config: AcceleratorConfig, rng: np.random.Generator, vec: Instruction, convcfg: Instruction) -> np.ndarray:
    """A random parameter bank whose shifts scale the largest possible `|acc * m|` to 7 to 10 bits
    (so both clamped and unclamped results occur) within the shifts and multipliers the
    requantizer implements (with normalized multipliers, 0 for a smaller one)."""
    op = VecOp(vec["op"])
    largest = 255 * {VecOp.MAX: 1, VecOp.SUM: convcfg["kernel_h"] * convcfg["kernel_w"],
                     VecOp.ADD: vec["multiplier_a"] + vec["multiplier_b"], VecOp.COPY: vec["multiplier_a"]}[op]
    param = rng.integers(0, 256, bank_bytes(config, "param"), dtype=np.uint8)
    records = param.reshape(-1, PARAM_BYTES)
    m = np.where(rng.random(len(records)) < 0.8, rng.integers(2**15, 2**16, len(records)), rng.integers(0, 2**16, len(records)))
    if normalized_multipliers(config):
        m[m < NORMALIZED_MULTIPLIERS.start] = 0
    records[:, 4:6] = m.astype("<u2").view(np.uint8).reshape(-1, 2)
    shifts = SHIFTS if is_serial(config) else range(MAX_SHIFT + 1)  # those the requantizer implements
    records[:, 6] = [min(max((largest * int(v)).bit_length() - 7 - int(rng.integers(0, 4)), shifts[0]), shifts[-1])
                     for v in m]
    return param


def isa_result(config: AcceleratorConfig, case: Case) -> np.ndarray:
    """The accumulator bank after the ISA simulator's VEC (the banks it names hold the case's bytes)."""
    sim = IsaSimulator(config, Program(), np.zeros(0, np.uint8))
    sim.banks[Buffer.INPUT][case.vec["in_bank"]][:] = case.input
    sim.banks[Buffer.PARAM][case.vec["param_bank"]][:] = case.param
    sim.banks[Buffer.ACC][case.vec["out_bank"]][:] = case.acc
    sim.convcfg = case.convcfg
    sim._vec(case.vec)
    return sim.banks[Buffer.ACC][case.vec["out_bank"]]


def words(raw: np.ndarray, word_bytes: int) -> list[int]:
    return [int.from_bytes(raw[i:i + word_bytes].tobytes(), "little") for i in range(0, raw.size, word_bytes)]


def run_rtl(config: AcceleratorConfig, cases: list[Case]) -> list[tuple[np.ndarray, int]]:
    """Each case on one `VectorUnit` with `lib.memory` banks loaded from the case's bytes: the
    accumulator bank afterwards and the cycles `idle` was low."""
    pe = config.pe
    dut = VectorUnit(config)
    word = {"input": pe.cols * pe.simd, "param": pe.rows * PARAM_BYTES, "acc": pe.rows * 4}
    depth = {"input": bank_bytes(config, "input") // (2 * word["input"]),
             "param": bank_bytes(config, "param") // word["param"], "acc": bank_bytes(config, "acc") // word["acc"]}
    m = Module()
    m.submodules.dut = dut
    if is_serial(config):  # the lane the compute unit would share with the conv engine
        m.submodules.post = post = SerialPostProcess.shared(config)
        wiring.connect(m, dut.post, post)
    memories = {}
    for name, kind in (("input_even", "input"), ("input_odd", "input"), ("param", "param"), ("acc", "acc")):
        memories[name] = m.submodules[name] = Memory(shape=8 * word[kind], depth=depth[kind], init=[])
        port = memories[name].write_port(granularity=8) if name == "acc" else memories[name].read_port()
        wiring.connect(m, getattr(dut, name), port)
    results = []

    async def testbench(ctx):
        for case in cases:
            inputs = words(case.input, word["input"])
            contents = {"input_even": inputs[0::2], "input_odd": inputs[1::2],
                        "param": words(case.param, word["param"]), "acc": words(case.acc, word["acc"])}
            for name, values in contents.items():
                for index, value in enumerate(values):
                    ctx.set(memories[name].data[index], value)
            ctx.set(dut.convcfg.as_value(), case.convcfg.encode())
            ctx.set(dut.steps, convcfg_steps(case.convcfg.fields, dut.pixel_bits))
            ctx.set(dut.cmd.payload.as_value(), case.vec.encode())
            ctx.set(dut.cmd.valid, 1)
            await ctx.tick().until(dut.cmd.ready)
            ctx.set(dut.cmd.valid, 0)
            cycles = 0
            while not ctx.get(dut.idle):
                cycles += 1
                await ctx.tick()
            acc = b"".join(ctx.get(memories["acc"].data[i]).to_bytes(word["acc"], "little") for i in range(depth["acc"]))
            results.append((np.frombuffer(acc, np.uint8), cycles))

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return results


def check(config: AcceleratorConfig, cases: list[Case]) -> None:
    for case, (acc, cycles) in zip(cases, run_rtl(config, cases)):
        assert acc.tobytes() == isa_result(config, case).tobytes(), f"{case.convcfg} / {case.vec}"
        assert cycles == vec_cycles(config, case.vec, case.convcfg), f"{case.convcfg} / {case.vec}"


@pytest.mark.parametrize("rows, cols, simd, seed, template", [(4, 2, 2, 0, {}), (4, 2, 4, 1, {}), (2, 1, 2, 2, {}),
                                                              (8, 4, 2, 3, {}), (2, 2, 2, 4, COMPACT),
                                                              (4, 2, 2, 5, COMPACT), (2, 2, 2, 6, MAX_ONLY),
                                                              (4, 2, 4, 7, {"vector_ops": ["max"]}),
                                                              (4, 2, 2, 8, {"vector_ops": ["sum", "copy"]}),
                                                              (2, 2, 2, 9, {**COMPACT, "vector_ops": ["max", "add"]}),
                                                              (4, 2, 2, 10, {"timing_registers": False})])
def test_matches_isa_simulator(rows: int, cols: int, simd: int, seed: int, template: dict) -> None:
    """Random ops (those `template.vector_ops` lists), windows, strides, shapes, zero points,
    multipliers, shifts and clamps; with the engine's own requantizer and DSP products, and
    DSP-free (`COMPACT`); with and without the read-address register (`timing_registers`)."""
    config = make_config(rows, cols, simd, template)
    rng = np.random.default_rng(seed)
    cases = [random_case(config, rng) for _ in range(30)]
    ops = {VecOp(case.vec["op"]) for case in cases}
    strides = {case.convcfg["stride"] for case in cases if case.vec["op"] in (VecOp.MAX, VecOp.SUM)}
    assert ops == {VecOp[name.upper()] for name in template.get("vector_ops", [op.name for op in VecOp])}
    assert strides == ({1, 2} if ops & {VecOp.MAX, VecOp.SUM} else set())
    check(config, cases)


@pytest.mark.parametrize("template", [{}, COMPACT])
@pytest.mark.parametrize("x, zero_point", [(-128, 127), (127, -128)])
def test_extreme_sums(x: int, zero_point: int, template: dict) -> None:
    """The widest accumulator values: ADD of two `x - zp = -+255` tensors with multipliers of
    2**16 - 1 (the full unit's widest), and a 15 x 15 SUM window of them."""
    config = make_config(4, 2, 4, template)
    rng = np.random.default_rng(4)
    base = {"in_zero_point": zero_point, "out_zero_point": 0, "act_min": -128, "act_max": 127, "stride": 1}
    add = (Instruction.make(Opcode.CONVCFG, **base, kernel_h=1, kernel_w=1, in_rows=2, in_row_pitch=4),
           Instruction.make(Opcode.VEC, op=VecOp.ADD, in2_addr=64, in2_zero_point=zero_point, channel_groups=2,
                            out_rows=2, out_cols=3, multiplier_a=2**16 - 1, multiplier_b=2**16 - 1))
    total = (Instruction.make(Opcode.CONVCFG, **base, kernel_h=15, kernel_w=15, in_rows=16, in_row_pitch=16),
             Instruction.make(Opcode.VEC, op=VecOp.SUM, channel_groups=1, out_rows=2, out_cols=2))
    cases = [Case(convcfg, vec, np.full(bank_bytes(config, "input"), x & 0xFF, np.uint8),
                  random_params(config, rng, vec, convcfg), rng.integers(0, 256, bank_bytes(config, "acc"), dtype=np.uint8))
             for convcfg, vec in (add, total)]
    check(config, cases)


def test_widest_window_sum(x: int = 127, zero_point: int = -128) -> None:
    """SUM alone, whose accumulator is as wide as its widest sum needs: a 127 x 127 window (the
    largest CONVCFG encodes, in an input bank that holds it) of `x - zp = 255` (the bound is
    symmetric)."""
    window = field_limit(Opcode.CONVCFG, "kernel_h")
    config = make_config(4, 2, 4, {"vector_ops": ["sum"]}, input_bytes=2 * 4 * (window + 1) ** 2)
    convcfg = Instruction.make(Opcode.CONVCFG, in_zero_point=zero_point, out_zero_point=0, act_min=-128, act_max=127,
                               stride=1, kernel_h=window, kernel_w=window, in_rows=window, in_row_pitch=window + 1)
    vec = Instruction.make(Opcode.VEC, op=VecOp.SUM, channel_groups=1, out_rows=1, out_cols=1)
    rng = np.random.default_rng(6)
    check(config, [Case(convcfg, vec, np.full(bank_bytes(config, "input"), x & 0xFF, np.uint8),
                        random_params(config, rng, vec, convcfg),
                        rng.integers(0, 256, bank_bytes(config, "acc"), dtype=np.uint8))])


@pytest.mark.parametrize("x, zero_point", [(-128, 127), (127, -128)])
def test_extreme_max(x: int, zero_point: int) -> None:
    """MAX alone (the narrowest accumulator): windows of `x - zp = -+255` everywhere."""
    config = make_config(2, 2, 2, MAX_ONLY)
    rng = np.random.default_rng(5)
    convcfg = Instruction.make(Opcode.CONVCFG, in_zero_point=zero_point, out_zero_point=0, act_min=-128, act_max=127,
                               stride=2, kernel_h=2, kernel_w=2, in_rows=4, in_row_pitch=4)
    vec = Instruction.make(Opcode.VEC, op=VecOp.MAX, channel_groups=2, out_rows=2, out_cols=3)
    check(config, [Case(convcfg, vec, np.full(bank_bytes(config, "input"), x & 0xFF, np.uint8),
                        random_params(config, rng, vec, convcfg),
                        rng.integers(0, 256, bank_bytes(config, "acc"), dtype=np.uint8))])
