"""Whole-network planning: schedule caching, streamed layers, YAML / JSON round trip."""
import json

import pytest

from common.errors import PlanningError
from planner.ir import Layer, Network, Op
from planner.plan import SCHEMA_VERSION, Strategy, load_plan, plan_network, save_plan
from hw_configs import data_config


def small_network() -> Network:
    conv = dict(op=Op.CONV, kernel=(3, 3), pads=(1, 1, 1, 1))
    layers = (
        Layer("c1", inputs=("x",), output="a", in_shapes=((3, 16, 16),), out_shape=(8, 16, 16), **conv),
        Layer("c2", inputs=("a",), output="b", in_shapes=((8, 16, 16),), out_shape=(8, 16, 16), **conv),
        Layer("c3", inputs=("b",), output="c", in_shapes=((8, 16, 16),), out_shape=(8, 16, 16), **conv),
        Layer("add", Op.ADD, ("a", "c"), "d", ((8, 16, 16), (8, 16, 16)), (8, 16, 16)),
        Layer("pool", Op.MAXPOOL, ("d",), "e", ((8, 16, 16),), (8, 8, 8), kernel=(2, 2), stride=(2, 2)),
        Layer("cat", Op.CONCAT, ("e", "e"), "f", ((8, 8, 8), (8, 8, 8)), (16, 8, 8)),
        Layer("fc", Op.FC, ("f",), "y", ((16, 8, 8),), (10, 1, 1), kernel=(8, 8)),
    )
    return Network("small", "x", (3, 16, 16), layers, ("y",))


def test_identical_layers_are_planned_once():
    plan = plan_network(small_network(), data_config("ice40up5k"))
    assert (plan.planned, plan.reused) == (6, 1)
    c2, c3 = plan.layers[1], plan.layers[2]
    assert c3.reused and (c3.tiles, c3.order, c3.cost.cycles) == (c2.tiles, c2.order, c2.cost.cycles)


def test_streamed_layers_move_inputs_outputs_and_parameter_records():
    """ice40up5k: 8-bit bus, simd 2; every vector pass also loads 8-byte records per channel."""
    plan = plan_network(small_network(), data_config("ice40up5k"))
    add, pool, cat = (layer.cost for layer in plan.layers[3:6])
    assert (add.input_bytes, add.output_bytes, add.weight_bytes) == (2 * 8 * 256, 8 * 256, 8 * 8)
    assert (pool.input_bytes, pool.output_bytes, pool.weight_bytes) == (8 * 256, 8 * 64, 8 * 8)
    assert (cat.input_bytes, cat.output_bytes, cat.weight_bytes) == (2 * 8 * 64, 16 * 64, 2 * 8 * 8)
    assert all(l.cost.cycles >= l.cost.compute_cycles for l in plan.layers)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_round_trip(tmp_path, suffix):
    plan = plan_network(small_network(), data_config("ecp5-85f"), strategy=Strategy.EPLANNER)
    path = save_plan(plan, tmp_path / f"plan{suffix}")
    assert load_plan(path) == plan
    assert [p.name for p in tmp_path.iterdir()] == [f"plan{suffix}"]  # no temp file left behind
    if suffix == ".json":
        assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION


def test_wrong_schema_version_is_rejected(tmp_path):
    path = save_plan(plan_network(small_network(), data_config("ecp5-85f")), tmp_path / "p.json")
    data = json.loads(path.read_text())
    data["schema_version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(PlanningError, match="schema_version 99 is not supported; expected 1"):
        load_plan(path)
