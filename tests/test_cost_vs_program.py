"""The planner's cost model against the program it plans for: for random conv / FC / depthwise
layers, searched tile sizes, loop orders and hardware configurations, the DRAM bytes per
direction equal the compiled program's (counted from its descriptors) and the cycles stay close
to the program timing model's (itself held within 5% of the RTL by test_program_model)."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hwgen.accelerator import check_generatable
from hwgen.config import config_from_dict, load_config
from planner import cost
from planner.compile.network import compile_network
from planner.errors import ConfigError
from planner.plan import plan_network
from planner.program_model import predict
from planner.schedule import DIMS, ORDERS, ConvShape, Schedule, granule, is_legal, tile_candidates
from test_rtl_property import conv_network

CYCLE_RANGE = (0.8, 1.25)  # cost-model cycles / program-model cycles


@st.composite
def configs(draw):
    data = load_config("setup_a").to_dict()
    rows = draw(st.sampled_from([2, 4, 8]))
    data["pe"] = {"rows": rows, "cols": draw(st.sampled_from([1, 2, 4])), "simd": draw(st.sampled_from([1, 2, 4]).filter(lambda s: s <= rows))}
    data["buffers"] = {k: draw(st.sampled_from([4096, 16384])) for k in ("input_bytes", "weight_bytes", "output_bytes")}
    bus = draw(st.sampled_from([8, 16]))
    data["dram"] = {"bus_width_bits": bus, "bandwidth_bytes_per_cycle": draw(st.sampled_from([0.5, bus // 8])),
                    "latency_cycles": draw(st.integers(1, 20)), "burst_beats": draw(st.sampled_from([2, 8]))}
    data["template"] = {"postprocess": draw(st.sampled_from(["lanes", "serial"]))}
    return config_from_dict(data)


@st.composite
def layers(draw):
    depthwise = draw(st.booleans())
    in_c = draw(st.integers(1, 24))
    kernel = draw(st.integers(1, 3))
    return dict(in_c=in_c, out_c=in_c if depthwise else draw(st.integers(1, 24)), kernel=kernel,
                stride=draw(st.integers(1, 2)), pad=draw(st.integers(0, kernel - 1)),
                size=draw(st.integers(max(kernel, 2), 12)), groups=in_c if depthwise else 1, relu=True,
                seed=draw(st.integers(0, 999)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(layers(), configs(), st.data())
def test_cost_model_bytes_equal_and_cycles_near_the_program(spec, config, data):
    check_cost_against_program(spec, config, data)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(layers(), configs(), st.data())
def test_cost_model_with_a_shared_dma_near_the_program(spec, config, data):
    """The same with `template.dma: shared` (loads and stores one after another), on the
    configurations hardware can be generated for; also with the DMA reading the SPRAM
    descriptor reader's entry (`dma_descriptor: reader`: a lookup waits for the DMA)."""
    template = data.draw(st.sampled_from([{}, {"program_memory": "spram", "dma_descriptor": "reader"}]))
    shared = config_from_dict({**config.to_dict(), "template": {"dma": "shared", **template}})
    try:
        check_generatable(shared)
    except ConfigError:
        return
    check_cost_against_program(spec, shared, data)


def check_cost_against_program(spec, config, data) -> None:
    """Bytes per direction equal and cycles in `CYCLE_RANGE` for a drawn legal schedule."""
    net, _ = conv_network(spec)
    layer = net.layers[0]
    shape = ConvShape.of(layer)
    tiles = [data.draw(st.sampled_from(tile_candidates(shape.bound(d), granule(d, shape, config)))) for d in DIMS]
    schedule = Schedule(*tiles, data.draw(st.sampled_from(ORDERS)))
    if not is_legal(shape, schedule, config):
        return
    c = cost.evaluate(shape, schedule, config, layer.macs)
    program = predict(compile_network(net, {layer.name: schedule}, config).program, config)
    visits = cost.reload_factor(schedule.order, {d: -(-shape.bound(d) // schedule.tile(d)) for d in DIMS},
                                shape.relevant("output"))
    reloads = (c.output_bytes - shape.oc * shape.oh * shape.ow) // 2
    assert c.input_bytes + c.weight_bytes + reloads == program.bytes_read
    assert c.output_bytes - reloads == program.bytes_written
    assert (visits > 1) == (reloads > 0)
    assert CYCLE_RANGE[0] <= c.cycles / program.cycles <= CYCLE_RANGE[1], (c.cycles, program.cycles)


def test_network_plan_bytes_equal_the_compiled_program():
    """Whole networks, vector layers included: the plan's DRAM bytes are the program's (also on the
    compact icebreaker template, whose descriptor lookups both models count)."""
    from planner.calibrate import quantize_network
    from planner.frontend import load_network
    from planner.zoo import builtin_calibration, resolve_model

    for model, config_name in (("digits", "default"), ("digits", "ice40up5k"), ("digits", "icebreaker"),
                               ("mobilenetv2", "default")):
        net = load_network(resolve_model(model))
        net = quantize_network(net, builtin_calibration(model, net.input_shape))
        config = load_config(config_name)
        plan = plan_network(net, config)
        schedules = {layer.name: layer.schedule for layer in plan.layers if layer.schedule is not None}
        program = predict(compile_network(net, schedules, config).program, config)
        assert plan.dram_bytes == program.dram_bytes, model
        assert CYCLE_RANGE[0] <= plan.cycles / program.cycles <= CYCLE_RANGE[1], (model, plan.cycles, program.cycles)


@settings(max_examples=40, deadline=None)
@given(layers(), configs(), st.data())
def test_outputs_written_once_when_reduction_is_innermost(spec, config, data):
    """Invariant from the bandwidth-model reference: no partial sums when IC is inside the output loops."""
    net, _ = conv_network(spec)
    shape = ConvShape.of(net.layers[0])
    tiles = [data.draw(st.sampled_from(tile_candidates(shape.bound(d), granule(d, shape, config)))) for d in DIMS]
    order = (*data.draw(st.permutations(["OC", "OH", "OW"])), "IC")
    c = cost.evaluate(shape, Schedule(*tiles, tuple(order)), config, 0)
    assert c.output_bytes == shape.oc * shape.oh * shape.ow * config.widths.activation_bytes
    assert np.isfinite(c.energy_pj)
