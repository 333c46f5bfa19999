"""A configuration without a vector unit (`template.vector_ops: []`): it generates no VectorUnit,
runs a conv + FC network bit-exact to the golden model with the same cycles as the same
template with a vector unit, refuses at planning time every layer that needs a VEC, and its
sequencer's compute queue carries no VEC fields."""
from __future__ import annotations

import re

import numpy as np
import pytest
from amaranth.back import rtlil
from onnx_factory import GraphBuilder
from soc_helpers import COMPACT, TINY

from common.errors import PlanningError
from hwgen.accelerator import Accelerator
from hwgen.conv_step_fields import unread_fields
from hwgen.config import config_from_dict
from hwgen.isa import OPCODE_BITS, Opcode
from hwgen.isa_layout import PAYLOADS
from hwgen.sequencer import used_bits
from hwgen.serial_shifts import check_shifts
from planner.envelope import check_network, network_problems
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from sim.golden import run_quantized
from sim.golden.calibration import quantize_network
from sim.rtl_sim import run_rtl

INPUT = (2, 4, 4)
TEMPLATE = {**COMPACT, "postprocess": "serial", "vector_products": "serial", "timing_registers": False,
            "address_steps": "compiler"}


def tiny_config(vector_ops: list[str], postprocess: str = "serial"):
    return config_from_dict({**TINY.to_dict(), "name": f"tiny-vec-{'-'.join(vector_ops) or 'none'}",
                             "template": {**TEMPLATE, "vector_ops": vector_ops, "postprocess": postprocess}})


NO_VEC = tiny_config([])


def network(pool: bool = False):
    """Conv 3x3 (2 -> 4 channels) + ReLU, [MaxPool 2x2,] Flatten, FC to 5."""
    g = GraphBuilder((1, *INPUT), seed=3)
    x = g.node("Relu", [g.conv(g.input_name, 2, 4, k=3, pad=1)])
    if pool:
        x = g.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    side = INPUT[1] // 2 if pool else INPUT[1]
    model = g.model(g.gemm(g.node("Flatten", [x], axis=1), 4 * side * side, 5))
    samples = np.random.default_rng(0).standard_normal((4, *INPUT)).astype(np.float32)
    return quantize_network(load_network(model), samples)


def test_the_accelerator_generates_no_vector_unit():
    """The RTLIL of the whole accelerator has no module of the vector unit (`hwgen.vector`'s
    parts: `vec`, `read_loops`, `write_back`); with `[max]` it does."""
    def modules(config) -> set[str]:
        text = rtlil.convert(Accelerator(config, plan_and_compile(network(), config).compiled.program))
        return {name.split(".")[-1] for name in re.findall(r"^module \\(\S+)", text, re.M)}

    assert {"vec", "read_loops", "write_back"} <= modules(tiny_config(["max"]))
    assert not {"vec", "read_loops", "write_back"} & modules(NO_VEC)


@pytest.mark.parametrize("postprocess", ["serial", "lanes"])
def test_a_conv_and_fc_network_runs_bit_exact_with_the_cycles_of_the_unit_with_a_vector_unit(postprocess):
    """Golden model outputs; DRAM bytes equal to the prediction, cycles within 2 % of it and equal
    to those of the same program on the template with a vector unit (which a conv + FC network
    never uses); with the shared serial requantization lane and with the engines' own lanes."""
    net = network()
    x = net.input_quant.quantize(np.random.default_rng(7).standard_normal(INPUT).astype(np.float32))
    flow = plan_and_compile(net, tiny_config([], postprocess))
    run = run_rtl(flow.compiled, x)
    golden = run_quantized(net, x)
    assert all(np.array_equal(run.outputs[name], golden[name]) for name in net.outputs)
    assert flow.prediction.dram_bytes == run.traffic.bytes_read + run.traffic.bytes_written
    assert abs(flow.prediction.cycles / run.cycles - 1) <= 0.02, (flow.prediction.cycles, run.cycles)
    with_unit = plan_and_compile(net, tiny_config(["max"], postprocess))
    assert with_unit.compiled.program == flow.compiled.program
    assert run_rtl(with_unit.compiled, x).cycles == run.cycles


def test_a_layer_that_needs_a_vec_is_refused_at_planning_time():
    net = network(pool=True)
    message = ("needs the vector operation max, and configuration 'tiny-vec-none' has no vector unit "
               "(template.vector_ops lists none)")
    problems = network_problems(net, NO_VEC)
    assert list(problems) == [layer.name for layer in net.layers if layer.op == "maxpool"]
    assert message in next(iter(problems.values()))
    with pytest.raises(PlanningError, match=re.escape(message)):
        check_network(net, NO_VEC)
    with pytest.raises(PlanningError, match=re.escape(message)):
        plan_and_compile(net, NO_VEC)


def test_a_residual_add_is_refused_for_the_missing_vector_unit_not_its_multiplier():
    """The quantized add's multiplier of 1 would also fail the serial requantizer's range: the
    error names what the layer needs (the vector unit's add), not the multiplier."""
    g = GraphBuilder((1, *INPUT), seed=3)
    x = g.node("Relu", [g.conv(g.input_name, 2, 2, k=3, pad=1)])
    y = g.node("Add", [g.input_name, x])
    samples = np.random.default_rng(0).standard_normal((4, *INPUT)).astype(np.float32)
    net = quantize_network(load_network(g.model(y)), samples)
    (add,) = [layer for layer in net.layers if layer.op == "add"]
    assert network_problems(net, NO_VEC) == {
        add.name: f"layer {add.name!r} (add) needs the vector operation add, and configuration 'tiny-vec-none' has "
                  f"no vector unit (template.vector_ops lists none); list add in template.vector_ops"}


def test_the_serial_lane_takes_only_normalized_multipliers():
    """No vector unit: no ADD or COPY, whose multiplier is 1, so a multiplier below 2**15 is refused."""
    check_shifts(NO_VEC, "conv", [2**15, 0], [20, 20])
    with pytest.raises(PlanningError, match=r"layer 'conv': requantization multipliers \[16384\]; .* takes 0 or "
                                            r"32768\.\.65535 \(it has no vector unit: none of add, copy"):
        check_shifts(NO_VEC, "conv", [2**14], [20])


def test_the_compute_queue_carries_no_vec_fields():
    """With queue_fields: used, the compute queue of the template without a vector unit holds
    those of the template with one less the bits that only VEC reads (from the instruction
    layout: the CONVCFG fields the compiler's pointer steps leave unread are VEC's alone)."""
    def queued(config) -> set[int]:
        return {bit for start, stop in used_bits("compute", config.template) for bit in range(start, stop)}

    def payload_bits(opcode: Opcode, skipped: frozenset[str] = frozenset()) -> set[int]:
        return {OPCODE_BITS + member.offset + i for name, member in PAYLOADS[opcode] if name not in skipped
                for i in range(member.shape.width)}

    without, with_unit = queued(NO_VEC), queued(tiny_config(["max"]))
    unpooled = frozenset() if NO_VEC.template.max_fused_pool > 1 else frozenset({"pool"})  # fused pools' field
    others = (payload_bits(Opcode.CONVCFG, unread_fields(NO_VEC.template)) | payload_bits(Opcode.CONV, unpooled)
              | payload_bits(Opcode.WAIT))
    vec_only = payload_bits(Opcode.VEC) - others
    assert vec_only and with_unit - without == vec_only
