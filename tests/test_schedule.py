"""The layer scheduler (`scheduler/`): the ILP against exhaustive search and the simulator,
lower bounds, monotonicity, the genetic algorithm, hand-computed pipelines, the costs of a
network, and `hwgen schedule`."""
from __future__ import annotations

import json
import math
import time
from dataclasses import replace

import numpy as np
import onnx
import pytest
from hypothesis import given, settings, strategies as st

from cli.main import main
from schedule_helpers import random_problem
from scheduler import exhaustive, ga, ilp
from scheduler.problem import Problem, contiguous, stage_period
from scheduler.simulator import evaluate, judged_period, simulate

INSTANCE = st.tuples(st.integers(0, 10_000), st.integers(1, 8), st.integers(1, 3))


def images(problem: Problem) -> int:
    return 4 * (2 * problem.m + 3)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)


@settings(max_examples=40, deadline=None)
@given(INSTANCE, st.sampled_from([None, 0.3, 0.7]), st.sampled_from([None, 6.0]), st.sampled_from([math.inf, 8.0]))
def test_ilp_period_equals_exhaustive_search_over_contiguous_mappings(instance, cap, budget, bandwidth):
    problem = random_problem(*instance, cpu_cap=cap, budget=budget, bandwidth=bandwidth)
    best, period = exhaustive.best_contiguous(problem)
    if best is None:
        with pytest.raises(Exception, match="no contiguous schedule"):
            ilp.solve(problem)
        return
    result = ilp.solve(problem)
    assert contiguous(result.mapping) and close(result.period, period)


@settings(max_examples=25, deadline=None)
@given(INSTANCE, st.sampled_from([None, 0.5]))
def test_ilp_period_equals_the_simulated_period_of_its_mapping(instance, cap):
    problem = random_problem(*instance, cpu_cap=cap)
    result = ilp.solve(problem)
    assert close(judged_period(problem, result.mapping, images(problem)), result.period)


@settings(max_examples=25, deadline=None)
@given(INSTANCE, st.integers(0, 2**32 - 1))
def test_lower_bounds_hold_for_any_mapping_the_simulator_judges(instance, pick):
    problem = random_problem(*instance, bandwidth=12.0)
    rng = np.random.default_rng(pick)
    mapping = tuple(int(rng.choice(problem.allowed(i))) for i in range(problem.n))
    fastest = [min(problem.time[i, p] for p in problem.allowed(i)) for i in range(problem.n)]
    period = judged_period(problem, mapping, images(problem))
    assert period >= max(fastest) * (1 - 1e-9)
    assert period >= sum(fastest) / problem.m * (1 - 1e-9)
    assert period >= sum(problem.dram[i, p] for i, p in enumerate(mapping)) / problem.bandwidth * (1 - 1e-9)
    assert ilp.solve(problem).period >= sum(fastest) / problem.m * (1 - 1e-9)


def _without_last_unit(problem: Problem) -> Problem:
    m = problem.m - 1
    return replace(problem, units=problem.units[:m], time=problem.time[:, :m], send=problem.send[:, :m, :m],
                   input_send=problem.input_send[:m], dram=problem.dram[:, :m])


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 8), st.integers(2, 3))
def test_a_looser_cap_or_another_unit_never_worsens_the_period(seed, layers, units):
    problem = random_problem(seed, layers, units)
    periods = [ilp.solve(replace(problem, cpu_cap=cap)).period for cap in (0.2, 0.4, 0.8, None)]
    assert all(a >= b * (1 - 1e-9) for a, b in zip(periods, periods[1:]))
    assert ilp.solve(_without_last_unit(problem)).period >= periods[-1] * (1 - 1e-9)


GA_INSTANCES = [(seed, 2 + seed % 7, 1 + seed % 3) for seed in range(24)]


def test_ga_never_beats_the_ilp_on_contiguous_mappings_and_reaches_it_with_seed_0():
    for instance in GA_INSTANCES:
        problem = random_problem(*instance)
        optimum = ilp.solve(problem).period
        found = ga.solve(problem, images(problem), seed=0, only_contiguous=True)
        assert contiguous(found.mapping) and close(found.period, optimum), instance


@pytest.mark.parametrize("instance", [(3, 5, 3), (8, 4, 3), (13, 5, 2)])
def test_ga_over_any_mapping_never_beats_exhaustive_simulation(instance):
    problem = random_problem(*instance)
    best = min(judged_period(problem, m, images(problem)) for m in exhaustive.mappings(problem, False))
    found = ga.solve(problem, images(problem), seed=0)
    assert found.period >= best * (1 - 1e-9)
    assert close(found.period, judged_period(problem, found.mapping, images(problem)))


def _chain(times: list[list[float]], dram: list[list[float]] | None = None, bandwidth: float = math.inf,
           link: float = 0.0) -> Problem:
    """A chain of layers; unit 0 the host; every link move costs `link` seconds."""
    t = np.array(times, dtype=float)
    n, m = t.shape
    send = np.zeros((n, m, m))
    send[:, 0, 1:] = send[:, 1:, 0] = link
    return Problem(tuple(f"L{i}" for i in range(n)), tuple(f"u{p}" for p in range(m)), 0, t,
                   tuple((i - 1, i) for i in range(1, n)), (0,), (n - 1,), send,
                   np.array([0.0] + [link] * (m - 1)), np.array(dram if dram else np.zeros((n, m))), bandwidth)


def test_a_hand_computed_pipeline():
    """host runs L0 (3 s), acc1 L1 (2 s), acc2 L2 (4 s); every move over the link takes 1 s and
    occupies the accelerator end."""
    problem = _chain([[3, 9, 9], [9, 2, 9], [9, 9, 4]], link=1.0)
    mapping = (0, 1, 2)
    # acc1 receives L0's output (1) and runs L1 (2); acc2 runs L2 (4) and sends it to the host (1)
    assert list(problem.time[[0, 1, 2], [0, 1, 2]]) == [3, 2, 4]
    evaluation = evaluate(problem, mapping, images(problem))
    assert close(evaluation.period, 5.0)  # acc2: 4 + 1
    assert close(evaluation.latency, 3 + 1 + 2 + 4 + 1)  # paced at the period, nothing waits
    assert ilp.solve(problem).mapping == mapping and close(ilp.solve(problem).period, 5.0)


def test_shared_memory_slows_concurrent_accelerators():
    """Two instances, each alone using the whole bandwidth for its 1 s layer: side by side each
    layer takes 2 s, so an image leaves every 2 s (bytes of both layers over the bandwidth)."""
    problem = _chain([[math.inf, 1, 1], [math.inf, 1, 1]], dram=[[0, 5, 5], [0, 5, 5]], bandwidth=5.0)
    assert close(judged_period(problem, (1, 2), images(problem)), 2.0)
    assert close(stage_period(problem, (1, 2)), 2.0)
    unshared = replace(problem, bandwidth=math.inf)
    assert close(judged_period(unshared, (1, 2), images(problem)), 1.0)


def test_port_collisions_slow_concurrent_accelerators_below_saturation():
    """Two instances, each alone keeping the port busy half of its 1 s layer: side by side they
    collide in a quarter of their cycles, each losing those, so an image leaves every 1.25 s
    (1 + 0.5 * 0.5 / 1 by hand), though together they need only the whole bandwidth."""
    problem = _chain([[math.inf, 1, 1], [math.inf, 1, 1]], dram=[[0, 2.5, 2.5], [0, 2.5, 2.5]], bandwidth=5.0)
    assert close(judged_period(problem, (1, 2), images(problem)), 1.25)
    alone = _chain([[math.inf, 1, 1], [math.inf, 1, 1]], dram=[[0, 2.5, 0], [0, 0, 0]], bandwidth=5.0)
    assert close(judged_period(alone, (1, 2), images(alone)), 1.0)  # nobody to collide with


@pytest.mark.parametrize("instance", [(5, 8, 3), (6, 7, 2)])
def test_simulated_intervals_never_overlap_on_a_unit_and_follow_the_data(instance):
    problem = random_problem(*instance)
    mapping = tuple(int(np.random.default_rng(1).choice(problem.allowed(i))) for i in range(problem.n))
    run = simulate(problem, mapping, images(problem))
    for unit in range(problem.m):
        spans = sorted((iv.start, iv.end) for iv in run.intervals if iv.unit == unit)
        assert all(a_end <= b_start + 1e-12 for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
    ends = {(iv.label, iv.image): iv.end for iv in run.intervals}
    starts = {(iv.label, iv.image): iv.start for iv in run.intervals}
    for j, i in problem.edges:
        for k in range(images(problem)):
            assert starts[(problem.layers[i], k)] >= ends[(problem.layers[j], k)] - 1e-12
    assert sum(iv.end - iv.start for iv in run.intervals) == pytest.approx(
        images(problem) * sum(problem.time[i, p] for i, p in enumerate(mapping))
        + images(problem) * sum(t for t in _moves(problem, mapping)))


def _moves(problem: Problem, mapping) -> list[float]:
    from scheduler.problem import received, transfer_time

    return [transfer_time(problem, *move) for move in received(problem, mapping)]


# --- a network's costs and the command line --------------------------------------------------

def test_link_time_is_the_serial_frame_time_of_the_int8_tensor(tmp_path, monkeypatch):
    """docs/host_protocol.md at the ULX3S's 3 Mbaud, 10 bits a byte: the digits input (1x8x8,
    padded to 4 lanes: 4x8x8 = 256 bytes) in one WRITE (request: 4 header + 4 address + data + 2
    CRC; reply: 4 + 2); the 10 logits (12 with the padding) in one READ (request 4 + 6 + 2,
    reply 4 + data + 2)."""
    monkeypatch.setenv("HWGEN_HOST_TIMES", str(tmp_path / "times.json"))
    from hwgen.config import load_config
    from planner.frontend import load_network
    from planner.zoo import resolve_model
    from scheduler.costs import build_problem
    from scheduler.units import accelerator_unit, host_unit

    net = load_network(resolve_model("digits"))
    problem = build_problem(net, [host_unit(1), accelerator_unit(load_config("ulx3s-85f"), "acc0")])
    assert problem.input_send[1] == pytest.approx((4 + 4 + 256 + 2 + 4 + 2) * 10 / 3_000_000)
    assert problem.send[4, 1, 0] == pytest.approx((4 + 6 + 2 + 4 + 12 + 2) * 10 / 3_000_000)
    assert (tmp_path / "times.json").is_file()


def test_host_times_come_from_the_profiler_and_stay_within_the_wall_clock():
    import onnxruntime
    from onnx import TensorProto, helper

    from scheduler.host_profile import RUNS, profile_seconds

    w = onnx.numpy_helper.from_array(np.random.default_rng(0).standard_normal((32, 16, 3, 3), np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 32, 32])], [w])
    measured = profile_seconds(graph, [(1, 16, 32, 32)], 1)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    x = np.zeros((1, 16, 32, 32), np.float32)
    session.run(None, {"x": x})
    walls = []
    for _ in range(RUNS):
        start = time.perf_counter()
        session.run(None, {"x": x})
        walls.append(time.perf_counter() - start)
    assert 0 < measured <= 2 * max(walls)


def _digits_with_softmax(path):
    from planner.zoo.digits import DIGITS_MODEL_PATH

    model = onnx.load(DIGITS_MODEL_PATH)
    output = model.graph.output[0]
    model.graph.node.append(onnx.helper.make_node("Softmax", [output.name], ["probs"], axis=1))
    output.name = "probs"
    onnx.save(model, path)
    return str(path)


def test_schedule_command_puts_the_softmax_on_the_host_and_writes_the_gantt_chart(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HWGEN_HOST_TIMES", str(tmp_path / "times.json"))
    model = _digits_with_softmax(tmp_path / "m.onnx")
    assert main(["inspect", model, "--hw", "default", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["host_tails"][0]["units"] == ["host"] and record["layers"][0]["units"] == ["host", "ulx3s-85f"]
    assert main(["schedule", model, "--hw", "default", "--hw", "default", "--cpu-cap", "0", "-o", str(tmp_path / "out"),
                 "--json"]) == 2  # the softmax must run on the host
    assert "layer 'probs (Softmax)' runs only on the host, whose CPU cap is 0" in capsys.readouterr().err
    assert main(["schedule", model, "--hw", "default", "--hw", "default", "-o", str(tmp_path / "out"), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["mapping"]["probs (Softmax)"] == "host"
    assert record["period_ms"] >= max(unit["busy_ms"] for unit in record["units"]) * (1 - 1e-6)
    assert (tmp_path / "out" / "gantt.png").stat().st_size > 0 and (tmp_path / "out" / "gantt.svg").is_file()
    assert main(["schedule", model, "--solver", "ga", "--images", "36"]) == 0
    assert "period" in capsys.readouterr().out


def test_schedule_maps_a_model_with_host_operators_inside(tmp_path, capsys, monkeypatch):
    """The Sigmoid between the two segments is a host part: only the host runs it, its time is
    its own model's profile; the segments' layers may go to the instance."""
    from test_host_partition import host_inside_model

    monkeypatch.setenv("HWGEN_HOST_TIMES", str(tmp_path / "times.json"))
    model = tmp_path / "host_inside.onnx"
    onnx.save(host_inside_model(), model)
    assert main(["schedule", str(model), "--hw", "default", "--cpu-cap", "0"]) == 2
    assert "(Sigmoid)' runs only on the host, whose CPU cap is 0" in capsys.readouterr().err
    assert main(["schedule", str(model), "--hw", "default", "--cpu-cap", "5", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    sigmoid = next(name for name in record["mapping"] if name.endswith("(Sigmoid)"))
    assert record["mapping"][sigmoid] == "host" and record["mapping"]["softmax14_out (Softmax)"] == "host"
    assert set(record["mapping"]) == {"conv3", sigmoid, "conv8", "gemm13", "softmax14_out (Softmax)"}
    times = json.loads((tmp_path / "times.json").read_text())
    assert any("'part'" in key and 0 < value < 1 for key, value in times.items())
    assert record["host_compute_ms"] <= 0.05 * record["period_ms"] * (1 + 1e-6)


@pytest.mark.parametrize("argv, message", [(["--cpu-cap", "150"], "--cpu-cap 150"), (["--images", "3"], "--images 3"),
                                           (["--host-threads", "0"], "--host-threads 0")])
def test_schedule_refuses_bad_options_in_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HWGEN_HOST_TIMES", str(tmp_path / "times.json"))
    assert main(["schedule", "digits", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_fmax_report_clocks_its_instance_and_scales_its_times(tmp_path, capsys, monkeypatch):
    """An instance clocked at a build's 35 MHz Fmax takes twice the 70 MHz instance's time."""
    from boards.devices import Resources
    from boards.report import BuildReport

    monkeypatch.setenv("HWGEN_HOST_TIMES", str(tmp_path / "times.json"))
    none = Resources(0, 0, 0, 0)
    BuildReport("ecp5-85f", 70.0, {"sync": 35.0}, False, none, none, 1.0).save(tmp_path)
    assert main(["schedule", "digits", "--hw", "default", "--hw", "default", "--fmax-report", str(tmp_path),
                 "--cpu-cap", "0", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert [u["clock_mhz"] for u in record["units"][1:]] == [35.0, 70.0]
    from hwgen.config import load_config
    from planner.frontend import load_network
    from planner.zoo import resolve_model
    from scheduler.costs import build_problem
    from scheduler.units import accelerator_unit, host_unit

    config = load_config("default")
    problem = build_problem(load_network(resolve_model("digits")),
                            [host_unit(1), accelerator_unit(config, "slow", 35.0), accelerator_unit(config, "fast")])
    assert np.allclose(problem.time[:, 1], 2 * problem.time[:, 2])


@pytest.mark.parametrize("layer, index", [("conv2", 1), ("pool", 3)])
def test_an_instance_takes_the_cycles_hwgen_simulate_predicts_for_the_layer(layer, index, tmp_path, capsys,
                                                                             monkeypatch):
    """The program model of the layer compiled alone, as `hwgen simulate --layer` predicts it
    with the model's real weights (timing depends on shapes alone)."""
    monkeypatch.setenv("HWGEN_HOST_TIMES", str(tmp_path / "times.json"))
    from hwgen.config import load_config
    from planner.frontend import load_network
    from planner.zoo import resolve_model
    from scheduler.costs import build_problem
    from scheduler.units import accelerator_unit, host_unit

    assert main(["simulate", "digits", "--layer", layer, "--engine", "isa", "--json"]) == 0
    predicted = json.loads(capsys.readouterr().out)["predicted_cycles"]
    problem = build_problem(load_network(resolve_model("digits")),
                            [host_unit(1), accelerator_unit(load_config("default"), "acc0")])
    assert problem.layers[index] == layer
    assert problem.time[index, 1] * 70e6 == pytest.approx(predicted, abs=1e-6)
