"""Cost model: the e-PlaNNer IR worked example (WE1), the step model, closed forms vs step arrays."""
import numpy as np
import pytest

from hwgen.config import config_from_dict, load_config
from hwgen.timing import DONE_CYCLES
from planner import cost
from planner.schedule import DIMS, ORDERS, TENSORS, ConvShape, Schedule, footprint, tensor_tiles
from hw_configs import any_config

# VGG-16 conv3_1: 128 -> 256 channels, 56x56, 3x3, stride 1, pad 1
CONV3_1 = ConvShape(256, 128, 56, 56, 56, 56, 3, 3, 1, 1, 1, 1, False)
WE1 = Schedule(56, 65, 16, 56)


def test_we1_input_tiles():
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


def test_we1_footprint_in_the_hardware_layout():
    """The reference's WE1 tile holds 65520 input, 32760 weight and 50176 output elements; in
    the accelerator's buffers (setup B: 32 rows, 1 column, 32 lanes; int8 inputs and weights,
    int32 partial sums) the same tile also occupies the padding of whole channel groups, whole PE
    rows and one spare word per phase row."""
    fp = footprint(CONV3_1, WE1, load_config("setup_b"))
    rows, cols = (16 - 1) + 3, (56 - 1) + 3  # halo of a 3x3 window
    pitch = cols + 1  # pixels per phase row: whole 1-column words plus one spare word
    ic_groups, oc_padded = 3, 64  # ceil(65 / 32) groups of 32 lanes; 56 channels padded to 2 x 32 rows
    assert (65 * rows * 56, 56 * 65 * 9, 56 * 16 * 56) == (65520, 32760, 50176)
    assert fp.input == ic_groups * rows * pitch * 32
    assert fp.weight == oc_padded * ic_groups * 32 * 9
    partial_offset = 4 * 32  # int32 sums start one 32-row int32 word in: room for 1 column x 2 groups of int8
    assert fp.output == 16 * 56 * oc_padded * 4 + partial_offset and fp.channels == oc_padded


def test_we1_reload_factors_match_the_thesis():
    """Eq. 6.1-6.5 for IS / WS / OS: how often each tensor's tiles are brought on chip, and the
    elements of one sweep of its tiles (the input with its halo, as the thesis counts it)."""
    per = {"IS": ("IC", "OH", "OC"), "WS": ("OC", "IC", "OH"), "OS": ("OC", "OH", "IC")}
    expect = {"IS": (1, 4, 3), "WS": (5, 1, 3), "OS": (5, 4, 1)}
    trip = {"OC": 5, "IC": 2, "OH": 4, "OW": 1}
    for name, order in per.items():
        order = ("OW", *order)
        got = tuple(int(cost.reload_factor(order, trip, CONV3_1.relevant(t))) for t in ("input", "weight", "output"))
        # outputs: the first visit writes, every further one reads and writes partial sums
        assert (got[0], got[1], 2 * got[2] - 1) == expect[name]
    elements = {t: sum(int(np.prod(tile.shape)) for tile in tensor_tiles(CONV3_1, WE1, t)) for t in TENSORS}
    assert elements == {"input": 128 * (17 + 18 + 18 + 9) * 56, "weight": 294912, "output": 802816}


def test_step_cycles_overlaps_neighbours():
    """Loads of the next step (slowed by the previous store's port use beyond `overlap`) and the
    previous store overlap the current compute; no step is shorter than the dispatch of its
    instructions."""
    steps = cost.Steps(compute=np.array([5, 6, 4]), load=np.array([10, 7, 9]), store=np.array([3, 4, 5]),
                       load_use=np.array([4, 2, 6]), store_use=np.array([5, 2, 3]), issue=np.array([9, 3, 2]),
                       overlap=3)
    # step 0: issue 9 over the loads' 7; step 1: loads 9 + (5 - 3); step 2: the store's 4 (its use 2 < 3)
    assert cost.step_cycles(steps) == cost.START_CYCLES + 10 + 9 + 11 + 4 + 5 + DONE_CYCLES


@pytest.mark.parametrize("config_name", ["ice40up5k", "setup_a", "icebreaker"])
def test_closed_forms_equal_the_step_arrays(config_name):
    """Closed-form totals and the grouped step model equal the enumerated steps; the closed-form
    cycle bound never exceeds the step model (branch and bound relies on it)."""
    config = any_config(config_name)
    rng = np.random.default_rng(5)
    shape = ConvShape(37, 19, 23, 17, 12, 9, 3, 3, 2, 2, 1, 1, False)
    for _ in range(30):
        sched = Schedule(*(int(rng.integers(1, shape.bound(d) + 1)) for d in DIMS), ORDERS[rng.integers(24)])
        steps = cost.step_arrays(shape, sched, config)
        c = cost.evaluate(shape, sched, config, 1)
        assert c.compute_cycles == round(steps.compute.sum())
        assert c.cycles == cost.step_cycles(steps, cost.start_cycles(config))
        tables = cost.sum_tables(shape, config, {d: np.array([sched.tile(d)]) for d in DIMS})
        totals = cost.layer_totals(shape, config, tables, [sched.order], 1)
        assert np.ravel(totals.steps)[0] == len(steps.compute)
        assert totals.cycles_lower_bound[0] <= c.cycles


@pytest.mark.parametrize("config_name", ["setup_a", "icebreaker"])
def test_many_schedules_at_once_equal_their_step_arrays(config_name):
    """The grouped step model of many schedules at once (as the search batches them: mixed
    tilings and orders, repeats) gives each schedule the cycles of its enumerated steps."""
    config = any_config(config_name)
    rng = np.random.default_rng(7)
    for shape in (ConvShape(37, 19, 23, 17, 12, 9, 3, 3, 2, 2, 1, 1, False),
                  ConvShape(24, 1, 15, 15, 15, 15, 3, 3, 1, 1, 1, 1, True)):
        schedules = [Schedule(*(int(rng.integers(1, shape.bound(d) + 1)) for d in DIMS), ORDERS[rng.integers(24)])
                     for _ in range(12)]
        schedules += schedules[:3]
        expected = [cost.step_cycles(cost.step_arrays(shape, s, config), cost.start_cycles(config)) for s in schedules]
        assert cost.grouped_step_cycles(shape, schedules, config) == expected


def test_load_overlap_is_one_loads_fixed_part():
    """`load_overlap`: a LOAD's start-up (8 cycles, `docs/cost_model.md`) plus the memory latency
    on separate DMAs; none on a shared DMA, whose loads wait for the store."""
    data = load_config("setup_a").to_dict()
    data["dram"] = {**data["dram"], "latency_cycles": 3}
    assert cost.load_overlap(config_from_dict(data)) == 8 + 3
    assert cost.load_overlap(config_from_dict({**data, "template": {"dma": "shared"}})) == 0
