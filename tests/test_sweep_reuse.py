"""Layer plans reused across sweep points give exactly what planning each point afresh gives."""
from __future__ import annotations

import dataclasses

import pytest

from hwgen.config import AcceleratorConfig, config_from_dict
from planner.frontend import load_network
from planner.objective import Objective
from planner.plan import plan_network
from explore.sweep.reuse import LayerMemo, RecordingView, network_totals
from explore.sweep.space import parse_space, read_base
from planner.zoo import resolve_model
from hw_configs import data_config


def test_recording_view_reads_like_the_config_and_records_each_read():
    config = data_config("ecp5-85f")
    reads = {}
    view = RecordingView(config, "", reads)
    assert isinstance(view, AcceleratorConfig)
    assert view.pe.rows == 8 and view.pe.macs_per_cycle == config.pe.macs_per_cycle
    assert view.dram.bandwidth == config.dram.bandwidth
    assert reads == {"pe.rows": 8, "pe.macs_per_cycle": config.pe.macs_per_cycle, "dram.bandwidth": config.dram.bandwidth}
    assert view.pe == config.pe and view == config and view != data_config("ice40up5k")
    assert {f"buffers.{f.name}" for f in dataclasses.fields(config.buffers)} <= set(reads)  # == read every field
    assert hash(view) != hash(RecordingView(config, "", {}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.pe.rows = 4


@pytest.mark.slow
def test_reused_plans_equal_fresh_plans():
    net = load_network(resolve_model("resnet18"))
    space = parse_space({"pe": {"rows": [8, 16]}, "dram": {"bandwidth_bytes_per_cycle": [1, 2]},
                         "clock_mhz": [50, 100]}, read_base("default"))
    memo = LayerMemo()
    for point in space.points():
        config = config_from_dict(point.config)
        reused = network_totals(net, config, Objective.ENERGY, memo)
        fresh = plan_network(net, config, Objective.ENERGY)
        assert (reused.cycles, reused.dram_bytes, reused.energy_pj) == (fresh.cycles, fresh.dram_bytes, fresh.energy_pj)
        assert reused.macs == net.total_macs
    # plans count cycles, not seconds: the second clock of each pair reuses every layer's plan
    unique = fresh.planned
    assert memo.hits >= unique * space.size // 2
