"""The multipliers of a PE and of a post-processing lane land in DSP cells (Yosys via yowasp)."""
from __future__ import annotations

import pytest
from amaranth.back.verilog import convert
from amaranth.lib import wiring

from boards.yosys import synthesize
from hwgen.accumulator import accumulator_shape
from hwgen.pe import PE
from hwgen.postprocess import PostProcess
from hw_configs import data_config

DSP_CELL = {"ecp5": "MULT18X18D", "ice40": "SB_MAC16"}


def dsp_cells(component: wiring.Component, family: str) -> int:
    cells = synthesize(family, convert(component, name="top"))
    return cells.get(DSP_CELL[family], 0)


@pytest.mark.slow
@pytest.mark.parametrize("family, config_name", [("ecp5", "ecp5-85f"), ("ice40", "ice40up5k"), ("ice40", "ecp5-85f")])
def test_pe_multipliers_map_to_dsps(family: str, config_name: str) -> None:
    config = data_config(config_name)
    assert dsp_cells(PE(config.pe.simd, accumulator_shape(config)), family) >= config.pe.simd


@pytest.mark.slow
@pytest.mark.parametrize("family", ["ecp5", "ice40"])
def test_postprocess_multiplier_maps_to_dsps(family: str) -> None:
    assert dsp_cells(PostProcess(1, accumulator_shape(data_config("ecp5-85f"))), family) >= 1
