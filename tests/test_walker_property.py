"""The cost model equals the literal loop-nest walker (bytes per tensor, DMA and compute, cycles)."""
from hypothesis import given, settings
from hypothesis import strategies as st

from hwgen.config import config_from_dict, load_config
from planner import cost
from planner.ir import conv_output_size
from planner.schedule import ORDERS, ConvShape, Schedule
from planner.walker import walk


@st.composite
def configs(draw):
    data = load_config("ice40up5k").to_dict()
    data["pe"] = {k: draw(st.sampled_from(v)) for k, v in (("rows", [1, 2, 3]), ("cols", [1, 2, 5]), ("simd", [1, 2, 4]))}
    data["widths"]["activation"] = draw(st.sampled_from([8, 16]))
    data["widths"]["accumulator"] = draw(st.sampled_from([16, 32]))
    bus = draw(st.sampled_from([8, 16, 32]))
    data["dram"] = {"bus_width_bits": bus, "bandwidth_bytes_per_cycle": draw(st.sampled_from([0.5, 1, bus // 8])),
                    "latency_cycles": draw(st.integers(0, 30)), "burst_beats": draw(st.sampled_from([1, 2, 8]))}
    return config_from_dict(data)


@st.composite
def layers_and_schedules(draw):
    kind = draw(st.sampled_from(["conv", "depthwise", "fc"]))
    ih, iw = draw(st.integers(1, 11)), draw(st.integers(1, 11))
    ic = draw(st.integers(1, 9))
    if kind == "fc":
        shape = ConvShape(draw(st.integers(1, 12)), ic, ih, iw, 1, 1, ih, iw, 1, 1, 0, 0, False)
    else:
        kh, kw = draw(st.integers(1, min(4, ih))), draw(st.integers(1, min(4, iw)))
        sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        pads = [draw(st.integers(0, k - 1)) for k in (kh, kw, kh, kw)]
        oh, ow = conv_output_size(ih, kh, sh, pads[0], pads[2]), conv_output_size(iw, kw, sw, pads[1], pads[3])
        dw = kind == "depthwise"
        oc = ic if dw else draw(st.integers(1, 9))
        shape = ConvShape(oc, 1 if dw else ic, ih, iw, oh, ow, kh, kw, sh, sw, pads[0], pads[1], dw)
    sched = Schedule(*(draw(st.integers(1, shape.bound(d))) for d in ("OC", "IC", "OH", "OW")),
                     draw(st.sampled_from(ORDERS)))
    return shape, sched


@settings(max_examples=250, deadline=None)
@given(layers_and_schedules(), configs())
def test_model_equals_walker(case, config):
    shape, sched = case
    model, walked = cost.evaluate(shape, sched, config, 0), walk(shape, sched, config)
    assert (model.input_bytes, model.weight_bytes, model.output_bytes) == (
        walked.input_bytes, walked.weight_bytes, walked.output_bytes)
    assert model.compute_cycles == sum(walked.compute)
    assert model.dma_cycles == sum(walked.load) + sum(walked.store)
    assert model.cycles == walked.cycles
    assert model.steps == len(walked.compute)


@settings(max_examples=60, deadline=None)
@given(layers_and_schedules(), configs())
def test_outputs_written_once_when_reduction_is_innermost(case, config):
    """Invariant from the bandwidth-model reference: no partial sums when IC is inside the output loops."""
    shape, sched = case
    order = (*(d for d in sched.order if d != "IC"), "IC")
    c = cost.evaluate(shape, Schedule(sched.oc, sched.ic, sched.oh, sched.ow, order), config, 0)
    assert c.output_bytes == shape.oc * shape.oh * shape.ow * config.widths.activation_bytes
