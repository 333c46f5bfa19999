"""The search finds the brute-force optimum of the same space; errors for unplannable layers."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwgen.config import config_from_dict
from common.errors import PlanningError
from planner.ir import Layer, Op, conv_output_size
from planner.objective import Objective
from planner.schedule import ConvShape, is_legal
from planner.search import COST_SECTIONS, brute_force, ranking, search
from explore.sweep.reuse import RecordingView
from hw_configs import any_config, data_config


@st.composite
def shapes(draw):
    dw = draw(st.booleans())
    ic = draw(st.integers(1, 24))
    size = draw(st.integers(1, 14))
    k = draw(st.sampled_from([1, 3, 5]).filter(lambda k: k <= size))
    s, p = draw(st.integers(1, 2)), draw(st.integers(0, k // 2))
    out = conv_output_size(size, k, s, p, p)
    oc = ic if dw else draw(st.integers(1, 32))
    return ConvShape(oc, 1 if dw else ic, size, size, out, out, k, k, s, s, p, p, dw)


@settings(max_examples=12, deadline=None)
@given(shapes(), st.sampled_from(["ice40up5k", "ecp5-85f"]), st.sampled_from(list(Objective)))
def test_search_equals_brute_force(shape, config_name, objective):
    config = data_config(config_name)
    macs = shape.oc * shape.ic * shape.oh * shape.ow * shape.kh * shape.kw
    found, oracle = search(shape, config, macs, objective), brute_force(shape, config, macs, objective)
    assert found.schedule == oracle.schedule and found.cost == oracle.cost
    assert found.candidates == oracle.candidates
    assert is_legal(shape, found.schedule, config)


def test_reference_layer_sample_agrees():
    """ResNet-18 shapes (the 1x1 stride-2 shortcut, the FC) on the ECP5 config; the bench runs all."""
    config = data_config("ecp5-85f")
    for shape in (ConvShape(512, 256, 14, 14, 7, 7, 1, 1, 2, 2, 0, 0, False),
                  ConvShape(1000, 512, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, False)):
        macs = shape.oc * shape.ic * shape.oh * shape.ow * shape.kh * shape.kw
        assert search(shape, config, macs).schedule == brute_force(shape, config, macs).schedule


def test_objectives_are_optimal_for_their_metric():
    config = data_config("ecp5-85f")
    shape = ConvShape(64, 32, 28, 28, 28, 28, 3, 3, 1, 1, 1, 1, False)
    macs = 64 * 32 * 28 * 28 * 9
    by = {o: search(shape, config, macs, o).cost for o in Objective}
    assert by[Objective.LATENCY].cycles == min(c.cycles for c in by.values())
    assert by[Objective.TRAFFIC].dram_bytes == min(c.dram_bytes for c in by.values())
    assert by[Objective.ENERGY].energy_pj == min(c.energy_pj for c in by.values())


def test_kernel_larger_than_buffers_names_layer_shape_and_minimum():
    data = data_config("ice40up5k").to_dict()
    data["buffers"] = {"input_bytes": 64, "weight_bytes": 64, "output_bytes": 1024}
    config = config_from_dict(data)
    layer = Layer("fc6", Op.FC, ("x",), "y", ((4, 7, 7),), (10, 1, 1), kernel=(7, 7))
    with pytest.raises(PlanningError) as error:
        search(ConvShape.of(layer), config, layer.macs, name=layer.name)
    message = str(error.value)
    assert "'fc6'" in message and "4x7x7 -> 10x1x1" in message
    # smallest tile in the hardware layout (2 rows, 2 columns, 2 lanes), two banks each:
    # input: one 2-lane group x 7 rows x a 10-pixel phase row (4 words of 2 + a spare word)
    assert f"input buffer needs >= {2 * (2 * 7 * 10)} B (has 64)" in message
    # weights: one output channel padded to 2 rows x one 2-lane group x 7 x 7
    assert f"weight buffer needs >= {2 * (2 * 2 * 49)} B (has 64)" in message


def with_partial_sums(name: str, partial_sums: str):
    """The config `name` (shipped or test-only) with `template.partial_sums` set (and no merged accumulator banks)."""
    data = any_config(name).to_dict()
    merged = [kind for kind in data.get("template", {}).get("merged_banks", []) if kind != "acc"]
    data["template"] = {**data.get("template", {}), "partial_sums": partial_sums, "merged_banks": merged}
    return config_from_dict(data)


@settings(max_examples=10, deadline=None)
@given(shapes(), st.sampled_from(list(Objective)))
def test_without_partial_sums_schedules_cover_the_whole_reduction(shape, objective):
    """`template.partial_sums: none`: the search still equals the brute force of the same space,
    and every schedule it finds has one IC tile."""
    config = with_partial_sums("ice40up5k", "none")
    macs = shape.oc * shape.ic * shape.oh * shape.ow * shape.kh * shape.kw
    try:
        found = search(shape, config, macs, objective)
    except PlanningError:
        with pytest.raises(PlanningError):
            brute_force(shape, config, macs, objective)
        return
    oracle = brute_force(shape, config, macs, objective)
    assert found.schedule == oracle.schedule and found.cost == oracle.cost
    assert found.schedule.ic >= shape.ic


def test_a_reduction_too_large_without_partial_sums_names_layer_bytes_and_option():
    """64 input channels of 3x3 weights: one output-channel pair needs 2 x 1152 weight bytes,
    more than the iCEBreaker's 2048; with partial sums the layer tiles its input channels."""
    layer = Layer("wide", Op.CONV, ("x",), "y", ((64, 8, 8),), (8, 8, 8), kernel=(3, 3), pads=(1, 1, 1, 1))
    shape = ConvShape.of(layer)
    kept = search(shape, with_partial_sums("icebreaker", "kept"), layer.macs, name=layer.name)
    assert kept.schedule.ic < 64
    with pytest.raises(PlanningError) as error:
        search(shape, with_partial_sums("icebreaker", "none"), layer.macs, name=layer.name)
    message = str(error.value)
    assert "'wide'" in message and "template.partial_sums: none" in message and "all 64 input channels" in message
    assert f"weight buffer needs >= {2 * (2 * 32 * 2 * 9)} B (has 2048)" in message


@settings(max_examples=10, deadline=None)
@given(shapes(), st.sampled_from(list(Objective)), st.lists(st.sampled_from([1024, 2048, 8192, 65536]), min_size=3,
                                                            max_size=3), st.floats(0.5, 4.0))
def test_search_shared_across_buffer_and_energy_variants_equals_brute_force(shape, objective, sizes, scale):
    """Configurations differing only in buffer sizes and per-access energies share one ranking
    (`planner.search.ranking`); each still gets its own brute-force optimum."""
    base = data_config("ecp5-85f")
    data = base.to_dict()
    data["buffers"] = dict(data["buffers"], input_bytes=sizes[0], weight_bytes=sizes[1], output_bytes=sizes[2])
    data["energy"] = {name: value * scale for name, value in data["energy"].items()}
    variant = config_from_dict(data)
    macs = shape.oc * shape.ic * shape.oh * shape.ow * shape.kh * shape.kw
    search(shape, base, macs, objective)  # warms the shared ranking
    assert ranking(shape, variant, macs) is ranking(shape, base, macs)
    try:
        oracle = brute_force(shape, variant, macs, objective)
    except PlanningError:
        with pytest.raises(PlanningError):
            search(shape, variant, macs, objective)
        return
    found = search(shape, variant, macs, objective)
    assert found.schedule == oracle.schedule and found.cost == oracle.cost
    assert found.candidates == oracle.candidates


def test_the_cost_model_reads_only_the_shared_sections_buffers_and_energies():
    """Guard of `COST_SECTIONS`: a search reads no other part of the configuration."""
    reads: dict = {}
    view = RecordingView(data_config("ice40up5k"), "", reads)
    shape = ConvShape(24, 16, 14, 14, 7, 7, 3, 3, 2, 2, 1, 1, False)
    for objective in Objective:
        search(shape, view, 24 * 16 * 49 * 9, objective)
    assert reads and {path.split(".")[0] for path in reads} <= {*COST_SECTIONS, "buffers", "energy"}
