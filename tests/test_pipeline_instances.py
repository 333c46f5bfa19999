"""Two accelerator instances sharing main memory run a network as a two-stage pipeline over four
images (`hwgen.pipeline`, Amaranth simulation): outputs bit-exact against the golden model of the
whole network, stages overlapping across images, the double-buffered slots never overrun, and the
steady-state period within 5% of `planner.compile.stages.predicted_period`."""
from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from common.errors import PlanningError
from onnx_factory import GraphBuilder
from planner.compile.stages import pipeline_layout, predicted_period, stage_networks
from planner.frontend import load_network
from sim.golden import run_quantized
from sim.golden.calibration import quantize_network
from sim.pipeline_sim import run_pipeline
from soc_helpers import TINY

IMAGES = 4
INPUT = (2, 4, 4)


@cache
def network():
    g = GraphBuilder((1, *INPUT), seed=4)
    x = g.conv(g.node("Relu", [g.conv(g.input_name, 2, 4)]), 4, 2)
    calibration = np.random.default_rng(0).standard_normal((4, *INPUT)).astype(np.float32)
    return quantize_network(load_network(g.model(x)), calibration)


@cache
def pipelined():
    net = network()
    layout = pipeline_layout(net, [0, 1], TINY, IMAGES)
    rng = np.random.default_rng(2)
    inputs = [net.input_quant.quantize(rng.standard_normal(INPUT)) for _ in range(IMAGES)]
    return layout, inputs, run_pipeline(layout, inputs)


def test_every_image_is_bit_exact_against_the_golden_model():
    net = network()
    _, inputs, run = pipelined()
    for x, y in zip(inputs, run.outputs, strict=True):
        assert np.array_equal(y, run_quantized(net, x)[net.outputs[0]])


def test_the_stages_overlap_and_the_slots_are_never_overrun():
    _, _, run = pipelined()
    first, second = run.starts, run.ends
    for k in range(IMAGES - 1):
        assert first[0][k + 1] < second[1][k]  # image k + 1 on stage 0 while image k is on stage 1
        assert run.starts[1][k] >= run.ends[0][k]  # stage 1 waits for its input
    for k in range(IMAGES - 2):
        assert run.starts[0][k + 2] >= run.ends[1][k]  # two slots: image k + 2 waits for image k's to empty


def test_the_measured_period_is_the_predicted_one():
    layout, _, run = pipelined()
    assert run.period() == pytest.approx(predicted_period(layout), rel=0.05)
    alone = max(stage.compilation.prediction.cycles for stage in layout.stages)
    assert run.period() > alone  # the shared memory slows the stages down: contention is measured


def test_random_memory_stalls_change_the_timing_not_the_results():
    """Two images with the shared memory withholding a third of its handshakes: the arbiter keeps
    grants and bursts together under back-pressure (the memory model checks the port protocol)."""
    net = network()
    layout = pipeline_layout(net, [0, 1], TINY, 2)
    rng = np.random.default_rng(3)
    inputs = [net.input_quant.quantize(rng.standard_normal(INPUT)) for _ in range(2)]
    run = run_pipeline(layout, inputs, stall=0.3, seed=1)
    for x, y in zip(inputs, run.outputs, strict=True):
        assert np.array_equal(y, run_quantized(net, x)[net.outputs[0]])
    assert run.starts[0][1] < run.ends[1][0]


def test_a_cut_crossed_by_two_tensors_is_refused():
    g = GraphBuilder((1, *INPUT), seed=4)
    x = g.node("Relu", [g.conv(g.input_name, 2, 2)])
    model = g.model(g.node("Add", [g.conv(x, 2, 2), x]))
    net = quantize_network(load_network(model), np.random.default_rng(0).standard_normal((4, *INPUT)).astype(np.float32))
    with pytest.raises(PlanningError, match="must take one tensor and hand one to the next stage"):
        stage_networks(net, [0, 2])
