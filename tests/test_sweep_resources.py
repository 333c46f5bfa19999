"""The sweep's resource estimate against Yosys: DSP cells and RAM blocks exactly, LUTs and
flip-flops within a stated error of stored synthesis results."""
from __future__ import annotations

import numpy as np
import pytest
from amaranth.back.verilog import convert

from boards.devices import logic_cells
from boards.yosys import SYNTH, cell_counts, family_sources, retype_command, synthesize
from hwgen.accelerator import Accelerator, load_dma_params
from hwgen.buffers import DoubleBuffer
from hwgen.config import config_from_dict
from hwgen.dma.controller import Dma
from hwgen.dma.units import descriptor_table_params, dma_params
from hwgen.program import Program
from hwgen.spram import SinglePortBank
from hwgen.spram_size import SPRAM_BITS, SPRAM_WORDS
from common.errors import HwgenError
from explore.sweep import resources
from explore.sweep.resources import (CALIBRATION, DSP_RULES, LOGIC_ERROR, STRUCTURE, calibration_points, dsp_count,
                                     estimate, features, fit, memory_counts, mul2dsp_cells)

DSP_CELL = {"ecp5": "MULT18X18D", "ice40": "SB_MAC16"}
RAM_CELLS = {"ecp5": ("DP16KD",), "ice40": ("SB_RAM40_4K",)}
PLATFORM_DEVICE = {"ecp5": "LFE5U-85F", "ice40": "iCE40UP5K"}


class Platform:
    def __init__(self, family: str):
        self.device = PLATFORM_DEVICE[family]


def config(rows: int, cols: int, simd: int, buffer_bytes: int, bus: int, spram: tuple[str, ...] = (),
           template: dict | None = None):
    return config_from_dict({"template": template or {},
        "name": "t", "clock_mhz": 50, "pe": {"rows": rows, "cols": cols, "simd": simd},
        "widths": {"activation": 8, "weight": 8, "accumulator": 32},
        "buffers": {"input_bytes": buffer_bytes, "weight_bytes": buffer_bytes, "output_bytes": buffer_bytes,
                    "spram": list(spram)},
        "dram": {"bus_width_bits": bus, "bandwidth_bytes_per_cycle": 1, "latency_cycles": 4, "burst_beats": 4}})


MULTIPLIERS = [  # (a bits, b bits, product bits, signed): one DSP, splits, slices left to logic
    (9, 8, 17, True), (34, 17, 50, True), (19, 19, 38, False), (3, 12, 10, False), (4, 13, 10, True),
    (1, 8, 9, False), (40, 40, 80, True),
]


@pytest.mark.slow
@pytest.mark.parametrize("family", ["ecp5", "ice40"])
def test_multiplier_splitting_follows_yosys(family):
    for a, b, y, signed in MULTIPLIERS:
        kind = "signed " if signed else ""
        verilog = (f"module top(input clk, input {kind}[{a - 1}:0] a, input {kind}[{b - 1}:0] b, "
                   f"output reg [{y - 1}:0] p); always @(posedge clk) p <= a * b; endmodule\n")
        measured = synthesize(family, verilog).get(DSP_CELL[family], 0)
        assert mul2dsp_cells(a, b, y, signed, signed, DSP_RULES[family]) == measured, (a, b, y, signed)


def coarse_cells(family: str, verilog: str, until: str = "map_ram") -> dict[str, int]:
    """Cells after Yosys' synthesis up to the step `until`: before `map_ram` the DSPs are mapped,
    before `map_ffram` the RAM blocks too (the rest of the flow, mapping gates, flip-flops and
    LUTs, does not add or remove either)."""
    retype = retype_command(family)
    stub = f"read_verilog -lib {family}_cells.v; " if family_sources(family) else ""
    script = (f"{stub}read_verilog top.v; hierarchy -top top; proc; splitnets; {SYNTH[family]} -top top -run :{until}"
              + (f"; {retype}" if retype else ""))
    return cell_counts(script, {"top.v": verilog, **family_sources(family)}, "top")


@pytest.mark.slow
@pytest.mark.parametrize("family, shape", [("ecp5", (4, 2, 4, 16384, 32)), ("ice40", (2, 4, 2, 8192, 8))])
def test_dsp_count_of_the_whole_accelerator_is_exact(family, shape):
    cfg = config(*shape)
    verilog = convert(Accelerator(cfg, Program()), name="top", platform=Platform(family))
    assert dsp_count(cfg, family) == coarse_cells(family, verilog).get(DSP_CELL[family], 0)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["ecp5", "ice40"])
def test_dsp_free_options_leave_only_the_pe_multipliers(family):
    """Serial post-processing, compiler pointer steps and shift-add vector products: Yosys maps
    exactly the `rows * cols * simd` PE multipliers to DSPs, and the estimate counts them."""
    data = config(2, 2, 2, 8192, 8).to_dict()
    data["template"] = {"postprocess": "serial", "address_steps": "compiler", "vector_products": "serial"}
    cfg = config_from_dict(data)
    verilog = convert(Accelerator(cfg, Program()), name="top", platform=Platform(family))
    assert coarse_cells(family, verilog).get(DSP_CELL[family], 0) == 2 * 2 * 2 == dsp_count(cfg, family)


@pytest.mark.slow
@pytest.mark.parametrize("family, shape", [
    ("ecp5", (2, 2, 2, 4096, 16)), ("ecp5", (8, 4, 2, 65536, 32)),
    ("ice40", (2, 4, 2, 32768, 8)),
    ("ice40", (2, 2, 2, 65536, 16, ("input", "weight"))),
    ("ice40", (2, 2, 2, 4096, 8, (), {"merged_banks": ["input", "param"], "param_bank_channels": 64,
                                      "program_memory": "spram"})),
    ("ecp5", (2, 2, 2, 8192, 16, (), {"merged_banks": ["weight"], "program_memory": "spram", "dma": "shared"})),
    ("ice40", (2, 2, 2, 4096, 8, (), {"merged_banks": ["input", "param"], "param_bank_channels": 64,
                                      "program_memory": "spram", "dma": "shared"})),
])
def test_buffer_ram_blocks_are_exact(family, shape):
    cfg = config(*shape)
    blocks = spram = 0
    parts = [(DoubleBuffer.from_config(cfg, kind, halves=halves), copies)
             for kind, halves, copies in (("input", 2, 2), ("weight", 1, 1), ("param", 1, 1), ("acc", 1, 1))]
    parts.append((Dma(load_dma_params(cfg, descriptor_table_params(cfg))), 1))  # hwgen.accelerator's DMAs
    if cfg.template.dma == "separate":
        parts.append((Dma(dma_params(cfg, "acc")), 1))
    if cfg.template.program_memory == "spram":
        parts.append((SinglePortBank(SPRAM_BITS // 8, SPRAM_WORDS), 1))
    for part, copies in parts:
        cells = coarse_cells(family, convert(part, name="top", platform=Platform(family)), until="map_ffram")
        blocks += copies * sum(cell_count for cell, cell_count in cells.items() if cell in RAM_CELLS[family])
        spram += copies * cells.get("SB_SPRAM256KA", 0)
    assert memory_counts(cfg, family) == (blocks, spram)


@pytest.mark.parametrize("family", ["ecp5", "ice40"])
def test_dsp_count_matches_every_stored_synthesis(family):
    # the calibration designs (shapes and template options, bench/calibrate_resources.py) as Yosys mapped them
    for stored, cells in calibration_points(family):
        assert dsp_count(config_from_dict(stored), family) == cells.get(DSP_CELL[family], 0), stored["name"]


def test_dsp_count_follows_the_template_structure():
    # ECP5: each PE lane one MULT18X18D; requantisation two partial products per row; the vector
    # unit one product and two requantisation partial products per lane; seven address products
    for rows, cols, simd in ((2, 2, 2), (4, 2, 4), (8, 4, 4), (16, 8, 8)):
        cfg = config(rows, cols, simd, 4096, 16)
        assert dsp_count(cfg, "ecp5") == rows * cols * simd + 2 * rows + 3 * simd + 7


def determined_by_neighbours(points: list, index: int) -> bool:
    """Whether the features of stored synthesis `index` are a linear combination of those of the
    other syntheses of its template neighbourhood: with template options, the others with
    options too (the compact template's variants); without, the other full-template shapes.
    The calibration measures most of the compact template's options once each (one variant
    without it), so such a variant has no second witness near the compact template: left out,
    its option's term could only be inferred through the full template, whose options do not
    add up, and leave-one-out says nothing about the model there."""
    templated = [bool(features(config)[len(STRUCTURE):].any()) for config, _ in points]
    others = np.array([features(config) for j, (config, _) in enumerate(points)
                       if j != index and templated[j] == templated[index]])
    target = features(points[index][0])
    if not len(others):
        return False
    weights, *_ = np.linalg.lstsq(others.T, target, rcond=None)
    return bool(np.allclose(others.T @ weights, target, atol=1e-6))


@pytest.mark.parametrize("family", ["ecp5", "ice40"])
def test_logic_estimate_predicts_each_stored_synthesis_from_the_others(family):
    """Leave-one-out over every stored synthesis its neighbours determine (all shapes; on iCE40
    the compact template, its variants without its three costliest options and their pairs)."""
    points = [(config_from_dict(c), logic_cells(family, cells)) for c, cells in calibration_points(family)]
    assert len(points) > len(STRUCTURE), f"{CALIBRATION}: too few {family} results; run bench/calibrate_resources.py"
    checked = [i for i in range(len(points)) if determined_by_neighbours(points, i)]
    assert len(checked) >= len(STRUCTURE) + (7 if family == "ice40" else 0), [points[i][0].name for i in checked]
    for i in checked:
        cfg, measured = points[i]
        predicted = fit(points[:i] + points[i + 1:]).predict(features(cfg))
        for name, m, p in zip(("LUT", "FF"), measured, predicted):
            assert abs(p - m) <= LOGIC_ERROR * m, f"{family} {cfg.name} {name}: measured {m}, predicted {p:.0f}"


def test_without_a_vector_unit_the_estimate_drops_as_synthesis_does():
    """iCE40, the compact template with and without a vector unit (`vector_ops: []`): Yosys
    counted hundreds of logic cells fewer without, the estimate drops too and lies within the
    tolerance of that synthesis (its only witness: the term is fitted to it, so this checks
    the term's shape, not a prediction) and of the drop."""
    stored = {c["name"]: (config_from_dict(c), logic_cells("ice40", cells)) for c, cells in calibration_points("ice40")}
    (with_unit, measured_with), (without, measured_without) = (stored["cal-2x2x2-4096-compact"],
                                                               stored["cal-2x2x2-4096-compact-without-vector_unit"])
    assert with_unit.template.vector_unit and not without.template.vector_unit
    assert sum(measured_with) - sum(measured_without) >= 300
    estimated_with, estimated_without = estimate(with_unit, "ice40"), estimate(without, "ice40")
    for name, m, p in zip(("LUT", "FF"), measured_without, (estimated_without.lut, estimated_without.ff)):
        assert abs(p - m) <= LOGIC_ERROR * m, f"{name}: measured {m}, estimated {p}"
    drop = sum(measured_with) - sum(measured_without)
    estimated_drop = estimated_with.lut + estimated_with.ff - estimated_without.lut - estimated_without.ff
    assert abs(estimated_drop - drop) <= LOGIC_ERROR * drop, (estimated_drop, drop)


def test_a_template_option_no_stored_synthesis_uses_is_refused(monkeypatch):
    stored = [(c, cells) for c, cells in calibration_points("ice40") if not c.get("template")]
    monkeypatch.setattr("explore.sweep.resources.calibration_points", lambda family: stored)
    monkeypatch.setattr("explore.sweep.resources._model", resources._model.__wrapped__)
    assert estimate(config(2, 2, 2, 4096, 8), "ice40").lut > 0
    with pytest.raises(HwgenError, match=r"no ice40 synthesis result with template.queue_fields=used .* does not cover"):
        estimate(config(2, 2, 2, 4096, 8, template={"queue_fields": "used"}), "ice40")


def test_estimate_checks_the_family():
    with pytest.raises(HwgenError, match="known: ecp5, ice40"):
        estimate(config(2, 2, 2, 4096, 16), "xilinx")
