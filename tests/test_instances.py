"""A configuration's `instances`: validated, scheduled as a pipeline by `hwgen schedule` and
explored by `hwgen sweep` (against a brute-force search of the stages and the single-instance
resource estimate), refused with one error by `hwgen demo`, which makes one instance."""
from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import onnx
import pytest
import yaml

from cli.main import main
from common.errors import ConfigError
from explore.sweep.resources import estimate
from hwgen.config import config_from_dict, load_config
from planner.frontend import load_network
from planner.ir import Network
from planner.zoo import resolve_model
from scheduler.exhaustive import best_contiguous
from scheduler.instances import images_for, instances_problem
from scheduler.simulator import judged_period


def with_instances(name: str, count: int, **pe) -> dict:
    data = load_config(name).to_dict()
    data.update(name=f"{name}-x{count}", instances=count)
    data["pe"] = {**data["pe"], **pe}
    return data


def written(tmp_path, data: dict):
    path = tmp_path / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_field_is_checked():
    assert load_config("default").instances == 1
    assert config_from_dict(with_instances("default", 3)).instances == 3
    for bad in (0, 9, 1.5):
        with pytest.raises(ConfigError, match="instances: .* not allowed; expected an integer in \\[1, 8\\]"):
            config_from_dict(with_instances("default", bad))
    with pytest.raises(ConfigError, match="instances: 2 instances need their programs in ROM"):
        config_from_dict(with_instances("icebreaker", 2))  # its program lives in SPRAM


def test_demo_makes_one_instance_and_images_need_several(tmp_path, capsys):
    path = written(tmp_path, with_instances("ulx3s-85f", 2))
    assert main(["demo", "--hw", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "instances: 2" in err and "allowed: instances: 1" in err
    assert main(["generate", "--hw", "ulx3s-85f", "--images", "4", "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "allowed: --images with a configuration of several instances" in err
    assert main(["generate", "--hw", str(path), "--images", "1", "-o", str(tmp_path / "out")]) == 2
    assert "--images 1: allowed: at least 2" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_schedule_gives_each_instance_a_unit(tmp_path, capsys):
    path = written(tmp_path, with_instances("ulx3s-85f", 2))
    assert main(["schedule", "digits", "--hw", str(path), "--hw", "icebreaker", "--json"]) == 0
    units = json.loads(capsys.readouterr().out)["units"]
    assert [(u["unit"], u["config"]) for u in units] == [("host", None), ("acc0", "ulx3s-85f-x2"),
                                                          ("acc1", "ulx3s-85f-x2"), ("acc2", "icebreaker")]


def test_the_sweep_explores_instances(tmp_path, capsys):
    """Each point's period is the simulator's for the brute-force best contiguous stages of
    its instances (input in main memory, no link); its resources are its instances' count times
    one instance's estimate."""
    space = tmp_path / "space.yaml"
    space.write_text("base: ulx3s-85f\ninstances: [1, 2, 3]\npe: {rows: 4, cols: 2}\n")
    out = tmp_path / "out"
    assert main(["sweep", "digits", "--space", str(space), "--device", "ecp5-85f", "-o", str(out)]) == 0
    capsys.readouterr()
    with open(out / "points.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(r["instances"]) for r in rows] == [1, 2, 3]
    net = load_network(resolve_model("digits"))
    one = config_from_dict(with_instances("ulx3s-85f", 1, rows=4, cols=2))
    single = estimate(one, "ecp5")
    for row in rows:
        k = int(row["instances"])
        assert int(row["est_dsp"]) == k * single.dsp and int(row["est_lut"]) == k * single.lut
        if row["status"] != "ok":
            assert row["reason"].startswith("exceeds ecp5-85f:")
            continue
        problem = instances_problem(net, replace(one, instances=k))
        mapping, _ = best_contiguous(problem)
        assert float(row["period_s"]) == pytest.approx(judged_period(problem, mapping, images_for(problem.m)))
        assert float(row["throughput_ips"]) == pytest.approx(1 / float(row["period_s"]))
        assert float(row["latency_s"]) >= float(row["period_s"]) * (1 - 1e-9)
    assert rows[0]["status"] == "ok" and float(rows[0]["period_s"]) == pytest.approx(float(rows[0]["latency_s"]))
    fronts = json.loads((out / "fronts.json").read_text())
    assert "period_vs_dsp" in fronts and fronts["period_vs_dsp"]["points"]
    assert "| period |" in (out / "summary.md").read_text()


def test_simulate_runs_the_scheduled_stages_on_the_instances(tmp_path, capsys):
    """Two instances of the tiny configuration: the stages are the brute-force best contiguous
    ones, every image equals the golden model, the measured period is within 5 % of the program
    model's (`predicted_period`)."""
    from onnx_factory import GraphBuilder
    from soc_helpers import TINY

    g = GraphBuilder((1, 2, 4, 4), seed=4)
    model = tmp_path / "two_convs.onnx"
    onnx.save(g.model(g.conv(g.node("Relu", [g.conv(g.input_name, 2, 4)]), 4, 2)), model)
    data = dict(TINY.to_dict(), name="tiny-x2", instances=2)
    config = written(tmp_path, data)
    assert main(["simulate", str(model), "--hw", str(config), "--engine", "isa"]) == 2
    assert "allowed: --engine amaranth" in capsys.readouterr().err
    assert main(["simulate", str(model), "--hw", str(config), "--engine", "amaranth", "--images", "4",
                 "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["bit_exact_images"] == 4 and len(record["stages"]) == 2
    assert all(len(stage["measured_cycles"]) == 4 for stage in record["stages"])
    assert record["period_cycles"] == pytest.approx(record["predicted_period_cycles"], rel=0.05)
    assert record["period_cycles"] == pytest.approx(record["scheduler_period_cycles"], rel=0.05)
    net = quantized_like_simulate(model)
    problem = instances_problem(net, config_from_dict(data))
    mapping, _ = best_contiguous(problem)
    stages = sorted(([layer for layer, unit in zip(problem.layers, mapping) if unit == p] for p in (1, 2)),
                    key=lambda stage: problem.layers.index(stage[0]) if stage else -1)
    assert [stage["layers"] for stage in record["stages"]] == [s for s in stages if s]


def quantized_like_simulate(model: Path) -> Network:
    """The float model quantized as `hwgen simulate` does without --calibration."""
    from planner.zoo import synthetic_calibration
    from sim.golden.calibration import quantize_network

    net = load_network(str(model))
    return quantize_network(net, synthetic_calibration(net.input_shape))
