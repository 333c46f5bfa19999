"""Single-layer models drawn across and beyond the instruction fields' envelope
(docs/envelope.md), and the check each must pass: planned, compiled and run on the ISA
simulator bit-exact to the golden model of the original layer, or refused at planning time
with one error naming the layer, the quantity, its value and the limit. Shared by
tests/test_field_limits.py (small draws) and bench/field_envelope.py (the whole envelope)."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from common.errors import PlanningError
from compile_helpers import run_isa
from hwgen.config import AcceleratorConfig
from hwgen.program_walk import ProgramDoesNotFit
from onnx_factory import GraphBuilder
from planner.frontend import load_network
from planner.ir import Network
from planner.pipeline import plan_and_compile, plan_checked
from planner.split import split_network
from sim.golden import run_quantized
from sim.golden.calibration import quantize_network

CYCLE_RANGE = (0.8, 1.25)
"""Plan cycles over the program timing model's, as tests/test_cost_vs_program.py holds them."""
KINDS = ("conv", "depthwise", "fc", "maxpool", "avgpool", "global_max", "global_avg")
REFUSAL = re.compile(r"layer '(?P<layer>[^']+)'.*(exceeds the limit|needs|no legal tile|does not fit|leaves out|equal strides|"
                     r"implements shifts)|the program has \d+ \w+; the SPRAM program memory of configuration '\w+' holds")
"""What a planning-time refusal says: the layer, and a quantity beyond a limit."""


@dataclass(frozen=True)
class Case:
    kind: str
    channels: int
    out_channels: int
    size: int
    kernel: int
    stride: int
    pad: int
    seed: int

    @property
    def pixels(self) -> int:
        return self.channels * self.size * self.size

    def work(self) -> int:
        """A rough count of the ISA simulator's work (bytes moved plus MACs)."""
        if self.kind in ("conv", "fc", "global_avg"):  # a global average pool may become an FC
            out = 1 if self.kind != "conv" else (self.size // self.stride + 1) ** 2
            reduction = self.channels * self.kernel ** 2 if self.kind == "conv" else self.pixels
            outputs = self.channels if self.kind == "global_avg" else self.out_channels
            return self.pixels + out * outputs * reduction
        return self.pixels * (1 + self.kernel ** 2 // max(1, self.stride ** 2))

    def model(self):
        """The ONNX model of the case: its one layer on an input of `channels x size x size`."""
        g = GraphBuilder((1, self.channels, self.size, self.size), seed=self.seed)
        x, k, s, p = g.input_name, self.kernel, self.stride, self.pad
        if self.kind == "conv":
            y = g.conv(x, self.channels, self.out_channels, k=k, stride=s, pad=p)
        elif self.kind == "depthwise":
            y = g.conv(x, self.channels, self.channels, k=k, stride=s, pad=p, groups=self.channels)
        elif self.kind == "fc":
            y = g.gemm(g.node("Flatten", [x]), self.pixels, self.out_channels)
        elif self.kind in ("maxpool", "avgpool"):
            attrs = dict(kernel_shape=[k, k], strides=[s, s], pads=[p] * 4)
            if self.kind == "avgpool":
                attrs["count_include_pad"] = 1
            y = g.node("MaxPool" if self.kind == "maxpool" else "AveragePool", [x], **attrs)
        else:
            y = g.node("GlobalMaxPool" if self.kind == "global_max" else "GlobalAveragePool", [x])
        return g.model(y)


@st.composite
def cases(draw, max_channels: int = 4096, max_size: int = 512, max_work: int = 10**6) -> Case:
    """A layer across and beyond the envelope: windows to 64 (kernels past the 15 of the
    field), strides to 10, paddings, channels to `max_channels`, maps to `max_size`; drawn
    small enough that the ISA simulator's work stays under `max_work`."""
    kind = draw(st.sampled_from(KINDS))
    size = draw(st.one_of(st.integers(1, 24), st.integers(1, max_size)))
    limit = min(64 if kind in ("maxpool", "avgpool") else 20, size)
    kernel = draw(st.one_of(st.integers(1, min(15, limit)), st.integers(min(16, limit), limit)))  # within, beyond
    stride = draw(st.one_of(st.integers(1, 3), st.integers(4, 10)))
    pad = draw(st.integers(0, kernel - 1)) if kernel > 1 and kind != "fc" else 0
    widest = max(1, min(max_channels, max_work // (size * size * (1 + kernel * kernel // stride ** 2))))
    channels = draw(st.one_of(st.integers(1, min(8, widest)), st.integers(1, widest)))
    out_channels = draw(st.integers(1, min(max_channels, 64)))
    case = Case(kind, channels, out_channels, size, kernel, stride, pad, draw(st.integers(0, 999)))
    assume(case.work() <= max_work)
    return case


def inside_envelope(case: Case) -> bool:
    """Whether docs/envelope.md promises the case compiles on `default` (a sufficient condition,
    written from the table, not from the code): windows within the conv engine's kernels, average
    pool windows (the vector unit's sum, to 127) or windows covering the whole map, strides within
    the stride field, maps to 32x32 and channels to 64."""
    window_ok = case.kernel <= 15 or case.kind in ("fc", "avgpool", "global_max", "global_avg")
    stride_ok = case.stride <= 7 or case.kind in ("fc", "global_max", "global_avg")
    return window_ok and stride_ok and case.size <= 32 and case.channels <= 64


def check(case: Case, config: AcceleratorConfig, promised: bool = False,
          cycle_range: tuple[float, float] | None = CYCLE_RANGE, always_cycles: bool = False) -> str:
    """Run the case; 'exact' or 'refused' (the error checked; never when `promised`),
    AssertionError otherwise. A split network's plan cycles (any network's with `always_cycles`)
    must be within `cycle_range` of the program model's (None: not checked)."""
    net = load_network(case.model())
    qnet = quantize_network(net, np.random.default_rng(case.seed).uniform(-1, 1, (2, *net.input_shape)))
    try:
        plan_checked(qnet, config)  # as `hwgen plan` on the quantized model
    except (PlanningError, ProgramDoesNotFit) as error:
        assert not promised, f"{case}: inside the documented envelope but refused: {error}"
        assert_clear_refusal(str(error), net)
        return "refused"
    flow = plan_and_compile(qnet, config)  # what planning accepted compiles: no error past this point
    program = flow.prediction  # the cost model follows the split: the plan's bytes are the program's
    assert flow.plan.dram_bytes == program.dram_bytes, f"{case}: plan {flow.plan.dram_bytes} B, program {program.dram_bytes} B"
    if cycle_range and (always_cycles or split_network(qnet, config) is not qnet):  # else tests/test_cost_vs_program.py
        assert cycle_range[0] <= flow.plan.cycles / program.cycles <= cycle_range[1], f"{case}: {flow.plan.cycles} vs {program.cycles} cycles"
    x = qnet.input_quant.quantize(np.random.default_rng(case.seed + 1).uniform(-1, 1, net.input_shape))
    got, _ = run_isa(flow.compiled, x)
    want = run_quantized(qnet, x)
    for name in qnet.outputs:
        assert np.array_equal(got[name], want[name]), f"{case}: output {name} differs from the golden model"
    return "exact"


def assert_clear_refusal(message: str, net: Network) -> None:
    """One error naming the network's layer and a quantity beyond its limit."""
    match = REFUSAL.search(message)
    assert match, f"unclear planning error: {message}"
    assert match["layer"] is None or match["layer"] in {layer.name for layer in net.layers}, f"names no layer: {message}"
    assert "\n" not in message and "Traceback" not in message
