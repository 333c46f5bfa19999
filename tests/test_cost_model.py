"""Cost model: the e-PlaNNer IR worked example (WE1), transfer timing, closed forms vs step arrays."""
import numpy as np
import pytest

from hwgen.config import config_from_dict, load_config
from planner import cost
from planner.schedule import DIMS, ORDERS, ConvShape, Schedule, footprint, tensor_tiles

# VGG-16 conv3_1: 128 -> 256 channels, 56x56, 3x3, stride 1, pad 1
CONV3_1 = ConvShape(256, 128, 56, 56, 56, 56, 3, 3, 1, 1, 1, 1, False)
WE1 = Schedule(56, 65, 16, 56)


@pytest.fixture(scope="module")
def setup_b_fp32():
    """Setup B with 32-bit elements everywhere: buffers of 131,072 / 65,536 / 131,072 elements."""
    data = load_config("setup_b").to_dict()
    data["widths"] = {"activation": 32, "weight": 32, "accumulator": 32}
    return config_from_dict(data)


def test_we1_input_tiles(setup_b_fp32):
    tiles = tensor_tiles(CONV3_1, WE1, "input")
    assert [t.offset for t in tiles] == [0, 840, 1736, 2632, 203840, 204680, 205576, 206472]
    assert [t.shape for t in tiles[:4]] == [(65, 17, 56), (65, 18, 56), (65, 18, 56), (65, 9, 56)]
    assert all(t.shape[0] == 63 for t in tiles[4:])


def test_we1_weight_and_output_tiles():
    weights = tensor_tiles(CONV3_1, WE1, "weight")
    assert [t.offset for t in weights] == [0, 585, 64512, 65097, 129024, 129609, 193536, 194121, 258048, 258633]
    assert [t.shape for t in weights[:2]] == [(56, 65, 3, 3), (56, 63, 3, 3)]
    assert [t.shape for t in weights[-2:]] == [(32, 65, 3, 3), (32, 63, 3, 3)]
    outputs = tensor_tiles(CONV3_1, WE1, "output")
    assert [t.offset for t in outputs[:6]] == [0, 896, 1792, 2688, 175616, 176512]
    assert [t.shape for t in outputs[:4]] == [(56, 16, 56)] * 3 + [(56, 8, 56)]
    assert outputs[-1].shape[0] == 32 and len(outputs) == 20


def test_we1_footprint_in_the_hardware_layout(setup_b_fp32):
    """The reference's WE1 tile holds 65520 input, 32760 weight and 50176 output elements; in
    the accelerator's buffers (setup B: 32 rows, 1 column, 32 lanes) the same tile also occupies
    the padding of whole channel groups, whole PE rows and one spare word per phase row."""
    fp = footprint(CONV3_1, WE1, setup_b_fp32)
    rows, cols = (16 - 1) + 3, (56 - 1) + 3  # halo of a 3x3 window
    pitch = cols + 1  # pixels per phase row: whole 1-column words plus one spare word
    ic_groups, oc_padded = 3, 64  # ceil(65 / 32) groups of 32 lanes; 56 channels padded to 2 x 32 rows
    assert (65 * rows * 56, 56 * 65 * 9, 56 * 16 * 56) == (65520, 32760, 50176)
    assert fp.input == ic_groups * rows * pitch * 32 * 4
    assert fp.weight == oc_padded * ic_groups * 32 * 9 * 4
    partial_offset = 4 * 32  # int32 sums start one 32-row int32 word in: room for 1 column x 2 groups of int8
    assert fp.output == 16 * 56 * oc_padded * 4 + partial_offset and fp.channels == oc_padded


def test_we1_access_model_without_halo_matches_the_thesis(setup_b_fp32):
    """Eq. 6.1-6.5 for IS / WS / OS (thesis elements); ours adds the halo to the input term."""
    per = {"IS": ("IC", "OH", "OC"), "WS": ("OC", "IC", "OH"), "OS": ("OC", "OH", "IC")}
    expect = {"IS": (1, 4, 3), "WS": (5, 1, 3), "OS": (5, 4, 1)}
    for name, order in per.items():
        c = cost.evaluate(CONV3_1, Schedule(56, 65, 16, 56, ("OW", *order)), setup_b_fp32, 0)
        r_in, r_w, r_out = expect[name]
        assert c.weight_bytes == 294912 * r_w * 4
        assert c.output_bytes == 802816 * r_out * 4
        halo_input = 128 * (17 + 18 + 18 + 9) * 56  # 444,416 elements per sweep (thesis: with halo)
        assert c.input_bytes == halo_input * r_in * 4


def test_run_cycles_bursts():
    config = load_config("ecp5-85f")  # 16-bit bus, 8-beat bursts (16 B), 2 B / cycle, latency 12
    assert config.dram.burst_bytes == 16
    assert int(cost.run_cycles(16, config.dram)) == 12 + 8
    assert int(cost.run_cycles(17, config.dram)) == 12 + 8 + 12 + 1
    assert int(cost.run_cycles(0, config.dram)) == 0


def test_step_cycles_overlaps_neighbours():
    # load 10 then compute 5 while loading 7, compute 6 while storing 3 then store 4
    assert cost.step_cycles([5, 6], [10, 7], [3, 4]) == 10 + max(5, 7) + max(6, 3) + 4


@pytest.mark.parametrize("config_name", ["ice40up5k", "setup_a"])
def test_closed_forms_equal_the_step_arrays(config_name):
    config = load_config(config_name)
    rng = np.random.default_rng(5)
    shape = ConvShape(37, 19, 23, 17, 12, 9, 3, 3, 2, 2, 1, 1, False)
    for _ in range(30):
        sched = Schedule(*(int(rng.integers(1, shape.bound(d) + 1)) for d in DIMS), ORDERS[rng.integers(24)])
        steps = cost.step_arrays(shape, sched, config)
        c = cost.evaluate(shape, sched, config, 1)
        assert c.dma_cycles == steps.load.sum() + steps.store.sum()
        assert c.compute_cycles == steps.compute.sum()
        assert c.steps == len(steps.compute)
        assert c.cycles == cost.step_cycles(steps.compute, steps.load, steps.store)
