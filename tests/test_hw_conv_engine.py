"""The convolution engine against the ISA simulator: whole accumulator banks, byte for byte,
and the documented cycle count of every CONV."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.sim import Simulator

from hwgen.config import AcceleratorConfig, PartialSums, config_from_dict
from hwgen.conv_engine import ConvEngine
from hwgen.isa import Buffer, Instruction, Opcode
from hwgen.layout import ACC_BYTES, PARAM_BYTES, bank_bytes, input_offset, partial_sums_offset, phase_row_pitch
from hwgen.program import Program
from hwgen.serial_post import SerialPostProcess
from hwgen.serial_shifts import SHIFTS, is_serial
from hwgen.conv_steps import convcfg_steps
from hwgen.timing import conv_cycles
from planner.compile.packing import expand_depthwise, param_block, weight_block
from sim.golden import kernels
from sim.isa_sim import IsaSimulator

BUFFERS = {"input": Buffer.INPUT, "weight": Buffer.WEIGHT, "param": Buffer.PARAM, "acc": Buffer.ACC}


def make_config(rows: int, cols: int, simd: int, template: dict | None = None, **widths: int) -> AcceleratorConfig:
    return config_from_dict({
        "clock_mhz": 10, "pe": {"rows": rows, "cols": cols, "simd": simd},
        "widths": {"activation": 8, "weight": 8, "accumulator": 32, **widths},
        "buffers": {"input_bytes": 8192, "weight_bytes": 4096, "output_bytes": 4096},
        "dram": {"bus_width_bits": 8, "bandwidth_bytes_per_cycle": 1, "latency_cycles": 1, "burst_beats": 1},
        "template": template or {},
    })


@dataclass
class Case:
    """One CONVCFG + CONV with the contents of the banks it uses."""

    convcfg: Instruction
    conv: Instruction
    banks: dict[str, np.ndarray]

    def bank_index(self, buffer: str) -> int:
        return self.conv[{"input": "in_bank", "weight": "weight_bank", "param": "weight_bank", "acc": "out_bank"}[buffer]]


def reference(config: AcceleratorConfig, case: Case) -> np.ndarray:
    """The accumulator bank after the ISA simulator's CONV."""
    sim = IsaSimulator(config, Program(), np.zeros(16, np.uint8))
    for buffer, content in case.banks.items():
        sim.banks[BUFFERS[buffer]][case.bank_index(buffer)][:] = content
    sim.convcfg = case.convcfg
    sim._conv(case.conv)
    return sim.banks[Buffer.ACC][case.conv["out_bank"]]


def words(content: np.ndarray, word_bytes: int) -> list[int]:
    return [int.from_bytes(content[i:i + word_bytes].tobytes(), "little") for i in range(0, len(content), word_bytes)]


def run_engine(config: AcceleratorConfig, cases: list[Case]) -> list[tuple[np.ndarray, int]]:
    """Run the cases one after the other on one engine with one bank per buffer; per case the
    accumulator bank when `idle` rises again and the cycles from acceptance to that cycle."""
    R, C, S = config.pe.rows, config.pe.cols, config.pe.simd
    word_bytes = {"input": C * S, "weight": R * S, "param": PARAM_BYTES * R, "acc": ACC_BYTES * R}
    m = Module()
    m.submodules.dut = dut = ConvEngine(config)
    if is_serial(config):  # the lane the compute unit would share with the vector unit
        m.submodules.post = post = SerialPostProcess.shared(config)
        wiring.connect(m, dut.post, post)
    mems = {}
    for name, port in (("input_even", dut.input_even), ("input_odd", dut.input_odd), ("weight", dut.weight),
                       ("param", dut.param), ("acc", getattr(dut, "acc_read", None))):  # none without partial sums
        buffer = name.split("_")[0]
        depth = bank_bytes(config, buffer) // word_bytes[buffer] // (2 if buffer == "input" else 1)
        mems[name] = m.submodules[name] = mem = Memory(shape=8 * word_bytes[buffer], depth=depth, init=[])
        if port is not None:
            read = mem.read_port()
            m.d.comb += [read.addr.eq(port.addr), read.en.eq(port.en), port.data.eq(read.data)]
    write = mems["acc"].write_port(granularity=8)
    m.d.comb += [write.addr.eq(dut.acc_write.addr), write.data.eq(dut.acc_write.data), write.en.eq(dut.acc_write.en)]
    results = []

    async def testbench(ctx):
        for case in cases:
            for buffer, content in case.banks.items():
                values = words(content, word_bytes[buffer])
                targets = [("input_even", values[0::2]), ("input_odd", values[1::2])] if buffer == "input" else [(buffer, values)]
                for name, part in targets:
                    for index, value in enumerate(part):
                        ctx.set(mems[name].data[index], value)
            ctx.set(dut.convcfg.as_value(), case.convcfg.encode())
            ctx.set(dut.steps, convcfg_steps(case.convcfg.fields, dut.pixel_bits))
            ctx.set(dut.cmd.payload.as_value(), case.conv.encode())
            ctx.set(dut.cmd.valid, 1)
            while not (await ctx.tick().sample(dut.cmd.ready))[2]:
                pass
            ctx.set(dut.cmd.valid, 0)
            cycles = 0
            while True:
                cycles += 1
                _, _, idle, *banks = await ctx.tick().sample(dut.idle, dut.in_bank, dut.weight_bank, dut.out_bank)
                assert banks == [case.conv["in_bank"], case.conv["weight_bank"], case.conv["out_bank"]]
                if idle:
                    break
            acc = b"".join(ctx.get(mems["acc"].data[i]).to_bytes(word_bytes["acc"], "little")
                           for i in range(mems["acc"].depth))
            results.append((np.frombuffer(acc, np.uint8), cycles))

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return results


def check(config: AcceleratorConfig, cases: list[Case]) -> list[int]:
    """Each case's accumulator bank equals the ISA simulator's and its cycles the formula."""
    measured = []
    for case, (acc, cycles) in zip(cases, run_engine(config, cases)):
        expected = reference(config, case)
        assert np.array_equal(acc, expected), f"{case.convcfg} {case.conv}: bytes {np.flatnonzero(acc != expected)[:8]} differ"
        assert cycles == conv_cycles(config, case.conv, case.convcfg), f"{case.conv}: {cycles} cycles"
        measured.append(cycles)
    return measured


def random_banks(config: AcceleratorConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random bytes; parameters with shifts < 48 (within the parallel post-processing's range),
    15..46 with the serial lane (`hwgen.serial_shifts.SHIFTS`), and partial sums far from the int32
    limits (the post-processing's raw mode wraps, the ISA simulator saturates)."""
    R = config.pe.rows
    records = bank_bytes(config, "param") // PARAM_BYTES
    shifts = SHIFTS if is_serial(config) else range(48)
    params = param_block(rng.integers(-2**20, 2**20, records), rng.integers(0, 2**16, records),
                         rng.integers(shifts.start, shifts.stop, records), R)
    return {
        "input": rng.integers(0, 256, bank_bytes(config, "input"), dtype=np.uint8),
        "weight": rng.integers(0, 256, bank_bytes(config, "weight"), dtype=np.uint8),
        "param": params,
        "acc": rng.integers(-2**24, 2**24, bank_bytes(config, "acc") // ACC_BYTES).astype(np.int32).view(np.uint8),
    }


def random_case(config: AcceleratorConfig, rng: np.random.Generator, **fixed: int) -> Case:
    """A random CONVCFG + CONV that fits the banks (`fixed` overrides fields)."""
    R, C, S = config.pe.rows, config.pe.cols, config.pe.simd
    while True:
        kernel = int(rng.integers(1, 4))
        f = {"kernel_h": kernel, "kernel_w": int(rng.integers(1, 4)), "stride": int(rng.integers(1, 3)),
             "oc_groups": int(rng.integers(1, 4)), "ic_groups": int(rng.integers(1, 4)),
             "out_rows": int(rng.integers(1, 4)), "ow_groups": int(rng.integers(1, 4)),
             "last_group_cols": int(rng.integers(1, C + 1)), "depthwise": int(rng.random() < 0.25),
             "init_from_acc": int(rng.random() < 0.5), "requantize": int(rng.random() < 0.5),
             "in_bank": int(rng.integers(2)), "weight_bank": int(rng.integers(2)), "out_bank": int(rng.integers(2)),
             "extra_rows": int(rng.integers(2)), "extra_pitch": int(rng.integers(2)), "pool": 0, **fixed}
        width = (f["ow_groups"] - 1) * C + f["last_group_cols"]
        in_rows = (f["out_rows"] - 1) * f["stride"] + f["kernel_h"] + f["extra_rows"]
        pitch = phase_row_pitch((width - 1) * f["stride"] + f["kernel_w"], f["stride"], C) + C * f["extra_pitch"]
        input_groups = ((f["oc_groups"] - 1) * R // S if f["depthwise"] else 0) + f["ic_groups"]
        fits = (input_groups * in_rows * f["stride"] * pitch * S <= bank_bytes(config, "input")
                and f["oc_groups"] * f["ic_groups"] * f["kernel_h"] * f["kernel_w"] * R * S <= bank_bytes(config, "weight")
                and partial_sums_offset(C, f["oc_groups"], R) + f["out_rows"] * width * f["oc_groups"] * R * ACC_BYTES
                <= bank_bytes(config, "acc")
                and in_rows < 1024 and pitch < 4096)
        conv = Instruction.make(Opcode.CONV, **{k: f[k] for k in (
            "in_bank", "weight_bank", "out_bank", "oc_groups", "out_rows", "ow_groups", "last_group_cols",
            "ic_groups", "depthwise", "init_from_acc", "requantize", "pool")})
        if fits:
            break
    low, high = sorted(int(v) for v in rng.integers(-128, 128, 2))
    convcfg = Instruction.make(Opcode.CONVCFG, in_zero_point=int(rng.integers(-128, 128)),
                               out_zero_point=int(rng.integers(-128, 128)), act_min=low, act_max=high,
                               kernel_h=f["kernel_h"], kernel_w=f["kernel_w"], stride=f["stride"],
                               in_rows=in_rows, in_row_pitch=pitch)
    return Case(convcfg, conv, random_banks(config, rng))


SMALL = make_config(2, 2, 2)
SERIAL = {"postprocess": "serial"}


@pytest.mark.parametrize("rows, cols, simd, count", [(2, 2, 2, 40), (4, 4, 4, 20), (4, 2, 2, 20), (4, 1, 4, 10)])
def test_random_convolutions(rows: int, cols: int, simd: int, count: int) -> None:
    config = make_config(rows, cols, simd)
    rng = np.random.default_rng(rows * 100 + cols * 10 + simd)
    check(config, [random_case(config, rng) for _ in range(count)])


@pytest.mark.parametrize("template", [{}, SERIAL])
def test_modes_and_edges(template: dict) -> None:
    """Every (init_from_acc, requantize) pair, stride 2 with 1x1 and with kernels wider than the
    stride, depthwise, a single column, and one group per oc group shorter than the drain; with
    a requantizer per engine and with the serial lane (groups then paced by its beats)."""
    config = make_config(2, 2, 2, template)
    rng = np.random.default_rng(7)
    cases = [random_case(config, rng, init_from_acc=init, requantize=requant, oc_groups=3)
             for init in (0, 1) for requant in (0, 1)]
    cases += [random_case(config, rng, kernel_h=1, kernel_w=1, stride=2, ic_groups=1),
              random_case(config, rng, kernel_h=3, kernel_w=3, stride=2, depthwise=1),
              random_case(config, rng, ow_groups=1, last_group_cols=1, init_from_acc=1),
              random_case(config, rng, kernel_h=2, kernel_w=3, stride=1, depthwise=1, requantize=1)]
    check(config, cases)


@pytest.mark.parametrize("rows, cols, simd", [(2, 2, 2), (4, 2, 2), (2, 4, 2)])
def test_serial_lane_random_convolutions(rows: int, cols: int, simd: int) -> None:
    """Random CONVs through the shared serial lane, against the ISA simulator and the cycle formula."""
    config = make_config(rows, cols, simd, SERIAL)
    rng = np.random.default_rng(rows * 100 + cols * 10 + simd + 5)
    check(config, [random_case(config, rng) for _ in range(12)])


@pytest.mark.parametrize("template", [{}, SERIAL], ids=["lanes", "serial"])
def test_without_partial_sums(template: dict) -> None:
    """`template.partial_sums: none`: no partial-sum read port; random whole-reduction CONVs
    (requantized, not continued) against the ISA simulator and the cycle formula."""
    config = make_config(2, 2, 2, {**template, "partial_sums": "none"})
    assert "acc_read" not in ConvEngine(config).signature.members
    rng = np.random.default_rng(31)
    check(config, [random_case(config, rng, init_from_acc=0, requantize=1) for _ in range(12)]
          + [random_case(config, rng, init_from_acc=0, requantize=1, depthwise=1, stride=2)])


def packed_case(config: AcceleratorConfig, rng: np.random.Generator, ic: int, oc: int, size: int, kernel: int,
                stride: int, pad: int, depthwise: bool = False) -> tuple[Case, np.ndarray, tuple]:
    """A layer packed into the banks as the compiler does (the whole map is one tile); also
    returns the golden int8 output and the output geometry."""
    R, C, S = config.pe.rows, config.pe.cols, config.pe.simd
    groups = ic if depthwise else 1
    x = rng.integers(-128, 128, (ic, size, size)).astype(np.int8)
    w = rng.integers(-127, 128, (oc, ic // groups, kernel, kernel)).astype(np.int8)
    bias = rng.integers(-1000, 1000, oc)
    multiplier, shift = rng.integers(2**15, 2**16, oc), rng.integers(14, 22, oc)
    zx, zy = int(rng.integers(-20, 20)), int(rng.integers(-20, 20))
    acc = kernels.conv2d(x.astype(np.int64) - zx, w.astype(np.int64), (stride, stride), (pad,) * 4, groups)
    golden = kernels.requantize(acc + bias[:, None, None], multiplier, shift, zy, -128, 127)
    padded = size + 2 * pad
    pitch = phase_row_pitch(padded, stride, C)
    banks = random_banks(config, rng)
    image = np.pad(x, ((0, 0), (pad, pad), (pad, pad)), constant_values=zx)
    c, r, col = np.meshgrid(np.arange(ic), np.arange(padded), np.arange(padded), indexing="ij")
    banks["input"][input_offset(c // S, r, col % stride, col // stride, c % S, rows=padded, stride=stride,
                                row_pitch=pitch, simd=S)] = image.view(np.uint8)
    block = weight_block(expand_depthwise(w, R, S) if depthwise else w, R, S)
    banks["weight"][:len(block)] = block
    params = param_block(bias, multiplier, shift, R)
    banks["param"][:len(params)] = params
    out_h, out_w = acc.shape[1:]
    ow_groups = -(-out_w // C)
    conv = Instruction.make(Opcode.CONV, oc_groups=-(-oc // R), out_rows=out_h, ow_groups=ow_groups,
                            last_group_cols=out_w - (ow_groups - 1) * C,
                            ic_groups=max(1, -(-R // S)) if depthwise else -(-ic // S),
                            depthwise=int(depthwise), requantize=1)
    convcfg = Instruction.make(Opcode.CONVCFG, in_zero_point=zx, out_zero_point=zy, act_min=-128, act_max=127,
                               kernel_h=kernel, kernel_w=kernel, stride=stride, in_rows=padded, in_row_pitch=pitch)
    return Case(convcfg, conv, banks), golden, (oc, out_h, out_w)


def test_packed_layers() -> None:
    """Compiler-packed tiles: 3x3 with padding, strided, depthwise, 1x1, FC-like (kernel = input),
    and an accumulation over two input-channel tiles (int32 pass, then in-place requantisation)."""
    rng = np.random.default_rng(3)
    layers = [dict(ic=5, oc=5, size=5, kernel=3, stride=1, pad=1), dict(ic=3, oc=4, size=7, kernel=3, stride=2, pad=1),
              dict(ic=4, oc=4, size=6, kernel=3, stride=1, pad=1, depthwise=True),
              dict(ic=4, oc=4, size=7, kernel=3, stride=2, pad=1, depthwise=True),
              dict(ic=6, oc=3, size=4, kernel=1, stride=1, pad=0), dict(ic=6, oc=6, size=4, kernel=4, stride=1, pad=0)]
    cases, goldens = [], []
    for layer in layers:
        case, golden, shape = packed_case(SMALL, rng, **layer)
        cases.append(case)
        goldens.append((golden, shape))
    # two input-channel tiles of the first layer's shape: int32 partial sums, then init_from_acc + requantize
    first, _, _ = packed_case(SMALL, rng, ic=4, oc=6, size=5, kernel=3, stride=1, pad=1)
    second = Case(first.convcfg, Instruction.make(Opcode.CONV, **{**first.conv.fields, "init_from_acc": 1}),
                  {**random_banks(SMALL, rng), "param": first.banks["param"]})
    first.conv = Instruction.make(Opcode.CONV, **{**first.conv.fields, "requantize": 0})
    second.banks["acc"] = reference(SMALL, first).copy()
    check(SMALL, cases + [first, second])
    for case, (golden, (oc, out_h, out_w)) in zip(cases, goldens):  # the reference itself is the golden model
        out = reference(SMALL, case).view(np.int8)[:out_h * out_w * case.conv["oc_groups"] * SMALL.pe.rows]
        assert np.array_equal(out.reshape(out_h, out_w, -1)[..., :oc].transpose(2, 0, 1), golden)


def test_steady_state_throughput(capsys) -> None:
    """With at least C reduction steps per group, groups follow each other without bubbles:
    MAC cycles / total cycles tends to 1 (only fill and drain are extra)."""
    rng = np.random.default_rng(11)
    case = random_case(SMALL, rng, kernel_h=3, kernel_w=3, stride=1, oc_groups=2, ic_groups=2, out_rows=2,
                       ow_groups=3, init_from_acc=1, requantize=1, depthwise=0)
    short = random_case(SMALL, rng, kernel_h=1, kernel_w=1, stride=1, oc_groups=3, ic_groups=1, out_rows=2,
                        ow_groups=2, init_from_acc=0, depthwise=0)
    cycles, short_cycles = check(SMALL, [case, short])
    steps = 2 * 9 * (2 * 3 * 2)
    assert cycles - steps == 1 + 5 + 1 + SMALL.pe.cols + 6  # fill + drain only, even with init_from_acc
    with capsys.disabled():
        print(f"\nconv engine: {steps} reduction steps in {cycles} cycles ({steps / cycles:.1%}); "
              f"1x1 with T=1 < C=2: {2 * 2 * 3} steps in {short_cycles} cycles (one group per C cycles)")


def test_in_place_requantization_with_many_oc_groups() -> None:
    """Four columns and up to sixteen oc groups, partial sums rewritten as int8 in place: the
    partial-sum offset keeps every sum intact until it is read."""
    config = make_config(2, 4, 2)
    rng = np.random.default_rng(21)
    cases = [random_case(config, rng, kernel_h=1, kernel_w=1, stride=1, oc_groups=groups, ic_groups=1, out_rows=2,
                         ow_groups=2, init_from_acc=1, requantize=1, depthwise=0) for groups in (3, 8, 12, 16)]
    check(config, cases)


@pytest.mark.parametrize("rows, cols, simd, template, pool", [
    (2, 2, 2, {"max_fused_pool": 2, "postprocess": "serial", "partial_sums": "none"}, 2),
    (4, 4, 4, {"max_fused_pool": 4}, 2), (2, 4, 2, {"max_fused_pool": 4}, 4)], ids=["serial", "lanes-2", "lanes-4"])
def test_fused_pool(rows: int, cols: int, simd: int, template: dict, pool: int) -> None:
    """CONVs with a fused k x k / k max pool (the groups run by row blocks, the running maximum
    written once per pooled pixel): the accumulator bank equals the ISA simulator's, which pools
    the requantized map, and the cycles are the unfused CONV's formula; unpooled CONVs between
    them run as on an engine without the option."""
    config = make_config(rows, cols, simd, template)
    rng = np.random.default_rng(rows + cols + pool)
    pooled = [random_case(config, rng, pool=pool, init_from_acc=0, requantize=1, out_rows=pool * int(rng.integers(1, 3)),
                          last_group_cols=pool * int(rng.integers(1, cols // pool + 1))) for _ in range(4)]
    plain = random_case(config, rng, **({} if config.template.partial_sums == PartialSums.KEPT else
                                        {"init_from_acc": 0, "requantize": 1}))
    check(config, pooled[:2] + [plain] + pooled[2:])
