"""Instruction-field limits are met at planning time (issue #25): layers beyond a field are
split exactly (planner.split) or refused before a plan is printed (planner.envelope), and
calibration arrays are checked against the model input."""
from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cli.main import main
from field_cases import Case, cases, check, inside_envelope
from onnx_factory import GraphBuilder
from common.errors import PlanningError
from hwgen.config import config_from_dict, load_config
from planner.frontend import load_network
from planner.pipeline import plan_and_compile
from planner.plan import plan_network
from planner.split import split_network
from sim.golden import run_quantized
from sim.golden.kernels import conv2d
from sim.golden.executor import run_layer_quantized
from sim.golden.calibration import quantize_network
from sim.rtl_sim import run_rtl
from hw_configs import one_memory

DEFAULT = load_config("default")
EXAMPLES = int(os.environ.get("FIELD_EXAMPLES", "30"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(cases(max_work=2 * 10**5))
def test_layers_across_the_envelope_run_exact_or_are_refused_at_planning(case):
    event(f"{case.kind}: {check(case, DEFAULT, promised=inside_envelope(case))}")


@settings(max_examples=max(1, EXAMPLES // 5), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(cases(max_channels=256, max_size=64, max_work=2 * 10**4))
def test_layers_across_the_envelope_on_icebreaker(case):
    """No partial sums, no vector `sum`, 17 DRAM address bits, an SPRAM program memory (cycles
    unchecked: docs/envelope.md)."""
    event(f"{case.kind}: {check(case, load_config('icebreaker'), cycle_range=None)}")


def case_id(case: Case) -> str:
    return f"{case.kind}-{case.size}-k{case.kernel}-s{case.stride}"


ISSUE_CASES = [  # failed on main (91bb51a) at compile time with "CONVCFG.kernel_h/stride ... out of range"
    Case("global_avg", 8, 8, 16, 16, 1, 0, 1),
    Case("global_max", 4, 4, 16, 16, 1, 0, 2),
    Case("maxpool", 4, 4, 32, 16, 16, 0, 3),
    Case("fc", 8, 10, 16, 16, 1, 0, 4),
    Case("conv", 4, 4, 32, 1, 8, 0, 5),
    Case("maxpool", 4, 4, 32, 2, 8, 0, 6),
]


@pytest.mark.parametrize("case", ISSUE_CASES, ids=case_id)
def test_cases_that_failed_at_run_time_now_run_exact(case):
    assert check(case, DEFAULT, promised=True) == "exact"


@settings(max_examples=max(1, EXAMPLES // 5), deadline=None)
@given(st.integers(1, 96), st.integers(16, 64), st.integers(0, 999))
def test_global_average_pools_beyond_the_kernels_are_one_vector_sum(channels, size, seed):
    """A global average pool over a map beyond the conv engine's kernels is the vector unit's sum
    over the whole map (C parameter records, no flattened FC's C x H*W*Cp weights) while a map of
    one 4-channel group fits `default`'s 16 KiB input bank (side <= 64), bit-exact in the ISA
    simulator with the plan's DRAM bytes the program's and its cycles within 2 %."""
    case = Case("global_avg", channels, channels, size, size, 1, 0, seed)
    net = load_network(case.model())
    qnet = quantize_network(net, np.random.default_rng(seed).uniform(-1, 1, (2, *net.input_shape)))
    assert [layer.op.value for layer in split_network(qnet, DEFAULT).layers] == ["avgpool"]
    assert check(case, DEFAULT, promised=True, cycle_range=(0.98, 1.02), always_cycles=True) == "exact"


@pytest.mark.parametrize("case", [Case("global_max", 5, 5, 40, 40, 1, 0, 7), Case("maxpool", 3, 3, 40, 20, 3, 2, 8),
                                  Case("global_avg", 5, 5, 70, 70, 1, 0, 9), Case("conv", 3, 3, 24, 3, 9, 1, 10)])
def test_split_networks_compute_what_the_golden_model_computes(case):
    """The rewrite alone, in the golden model: the split network's outputs equal the original's."""
    net = load_network(case.model())
    qnet = quantize_network(net, np.random.default_rng(0).uniform(-1, 1, (2, *net.input_shape)))
    split = split_network(qnet, DEFAULT)
    assert len(split.layers) > len(qnet.layers) or split.layers[0].op != qnet.layers[0].op
    for seed in range(3):
        x = qnet.input_quant.quantize(np.random.default_rng(seed).uniform(-1, 1, qnet.input_shape))
        y = x
        for layer in split.layers:  # a chain; a flattened layer reads its input as DRAM holds it
            y = run_layer_quantized(layer, [as_read(y, layer.in_shape)])
        assert np.array_equal(y, run_quantized(qnet, x)[qnet.outputs[0]])


def as_read(x: np.ndarray, shape: tuple[int, int, int]) -> np.ndarray:
    """`x (C, H, W)` as a layer of input `shape` reads it: itself, or its DRAM bytes (pixels in
    order, channels padded with zeros to the lanes) as one pixel."""
    if x.shape == shape:
        return x
    channels, height, width = x.shape
    padded = np.zeros((shape[0] // (height * width), height, width), x.dtype)
    padded[:channels] = x
    return padded.transpose(1, 2, 0).reshape(shape)


SMALL_INPUT = config_from_dict({**DEFAULT.to_dict(), "buffers": {**DEFAULT.to_dict()["buffers"], "input_bytes": 2048}})
"""`default` with 1 KiB input banks: a 16x16 map of 4 channels fills one only without the spare word."""


@pytest.mark.parametrize("case, config", [(Case("global_avg", 4, 4, 16, 16, 1, 0, 11), SMALL_INPUT),
                                          (Case("global_max", 4, 4, 16, 16, 1, 0, 12), DEFAULT),
                                          (Case("conv", 4, 4, 16, 3, 8, 1, 13), DEFAULT),
                                          (Case("global_avg", 6, 6, 7, 7, 1, 0, 21), load_config("icebreaker"))],
                         ids=["global-avg-16-vector-sum", "global-max-16", "conv-stride-8", "icebreaker-window-sum-7"])
def test_split_layers_run_exact_on_the_rtl(case, config):
    """Split layers, and a global average pool over a map beyond the conv engine's kernels as one
    16x16 window of the vector unit's sum (filling the input bank, rows without the spare word),
    bit-exact on the RTL in the Amaranth simulator."""
    net = load_network(case.model())
    qnet = quantize_network(net, np.random.default_rng(0).uniform(-1, 1, (2, *net.input_shape)))
    flow = plan_and_compile(qnet, one_memory(config))
    x = qnet.input_quant.quantize(np.random.default_rng(1).uniform(-1, 1, qnet.input_shape))
    run = run_rtl(flow.compiled, x)
    assert np.array_equal(run.outputs[qnet.outputs[0]], run_quantized(qnet, x)[qnet.outputs[0]])


ICEBREAKER = one_memory(load_config("icebreaker"))
WINDOW_SUMS = [  # refused on main (16a4f15): global pools as a flattened FC ("no legal tile"), the others "need the
    # vector operation sum, which configuration 'icebreaker' leaves out"
    Case("global_avg", 16, 16, 7, 7, 1, 0, 14),
    Case("avgpool", 8, 8, 12, 3, 1, 1, 15),
    Case("avgpool", 5, 5, 13, 5, 2, 2, 16),
    Case("global_avg", 3, 3, 15, 15, 1, 0, 17),
]


@pytest.mark.parametrize("case", WINDOW_SUMS, ids=case_id)
def test_average_pools_without_a_vector_sum_run_as_depthwise_window_sums(case):
    """icebreaker has no vector unit (so no `sum`): an average pool within the kernel fields becomes
    a depthwise conv with weights 1, C * K * K of them, not a flattened FC (C * H * W * Cp)."""
    net = load_network(case.model())
    qnet = quantize_network(net, np.random.default_rng(0).uniform(-1, 1, (2, *net.input_shape)))
    (layer,) = split_network(qnet, ICEBREAKER).layers
    assert layer.is_depthwise and layer.kernel == (case.kernel, case.kernel)
    assert check(case, ICEBREAKER, promised=True) == "exact"


@pytest.mark.parametrize("case, config, quantity", [
    (Case("avgpool", 4, 4, 130, 128, 1, 0, 0), "default", "pooling window 128x128 exceeds the limit 127x127"),
    (Case("avgpool", 4, 4, 110, 100, 1, 0, 0), "default", "does not fit the input (16384 B)"),
    (Case("conv", 2, 4, 20, 17, 1, 0, 0), "default", "kernel 17x17 exceeds the limit 15x15"),
    (Case("maxpool", 4, 4, 64, 2, 11, 0, 0), "default", "stride 11 exceeds the limit 7"),
    (Case("conv", 1, 1, 2048, 1, 1, 0, 0), "default", "input height 2048 exceeds the limit 2047"),
    (Case("global_avg", 16, 16, 16, 16, 1, 0, 0), "icebreaker", "no legal tile"),
    (Case("conv", 4, 4, 256, 3, 1, 1, 0), "icebreaker", "exceeds the limit 262144 (template.dram_address_bits: 18)"),
], ids=["avg-window-128", "avg-window-bank", "conv-kernel-17", "stride-11", "map-2048", "icebreaker-gap-fc", "icebreaker-dram"])
def test_layers_beyond_the_envelope_are_refused_at_planning(case, config, quantity):
    """Rows of docs/envelope.md's refusals: planning stops, naming the layer and the limit."""
    net = load_network(case.model())
    with pytest.raises(PlanningError) as error:
        plan_network(net, load_config(config))
    assert quantity in str(error.value) and f"layer '{net.layers[0].name}'" in str(error.value)


def _save(tmp_path, case: Case) -> str:
    path = tmp_path / "m.onnx"
    onnx.save(case.model(), path)
    np.save(tmp_path / "x.npy", np.random.default_rng(0).uniform(0, 1, (1, case.channels, case.size, case.size)).astype(np.float32))
    return str(path)


def test_plan_stops_and_inspect_marks_a_layer_beyond_the_fields(tmp_path, capsys):
    model = _save(tmp_path, Case("conv", 2, 4, 20, 17, 1, 0, 0))
    assert main(["plan", model, "-o", str(tmp_path / "plan.yaml")]) == 2
    error = capsys.readouterr().err
    assert "layer 'conv3'" in error and "kernel 17x17 exceeds the limit 15x15" in error
    assert not (tmp_path / "plan.yaml").exists()
    assert main(["inspect", model]) == 0  # the model alone: nothing to check it against
    assert "not compilable" not in capsys.readouterr().out
    assert main(["inspect", model, "--hw", "default"]) == 0
    out = capsys.readouterr().out
    assert "not compilable: layer 'conv3' (conv): kernel 17x17 exceeds the limit 15x15" in out
    assert "0/1" in out
    assert main(["inspect", model, "--hw", "default", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["config"] == "ulx3s-85f" and "kernel 17x17 exceeds the limit 15x15" in record["layers"][0]["problem"]
    assert main(["inspect", model, "--hw", "icebreaker", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"] == "icebreaker"


def test_issue_model_infers_on_the_isa_engine(tmp_path, capsys):
    """The issue's example: a 3x3 convolution then GlobalAveragePool over 16x16."""
    model = _save(tmp_path, Case("global_avg", 3, 3, 16, 16, 1, 0, 0))
    np.save(tmp_path / "cal.npy", np.random.default_rng(1).uniform(0, 1, (4, 3, 16, 16)).astype(np.float32))
    args = ["infer", model, "--calibration", str(tmp_path / "cal.npy"), "--input", str(tmp_path / "x.npy")]
    for engine in ("golden", "isa"):
        assert main([*args, "--engine", engine, "--raw", "--output", str(tmp_path / f"{engine}.npy")]) == 0
    assert np.array_equal(np.load(tmp_path / "golden.npy"), np.load(tmp_path / "isa.npy"))


@pytest.mark.parametrize("shape", [(1, 3, 8, 8), (2, 1, 8, 4), (64,), (0, 1, 8, 8)])
def test_calibration_of_another_shape_is_refused(tmp_path, capsys, shape):
    """A 1-channel 8x8 model: a 1x3x8x8 array is not three samples."""
    model = _save(tmp_path, Case("conv", 1, 4, 8, 3, 1, 1, 0))
    np.save(tmp_path / "cal.npy", np.zeros(shape, np.float32))
    argv = ["infer", model, "--calibration", str(tmp_path / "cal.npy"), "--input", str(tmp_path / "x.npy"),
            "--output", str(tmp_path / "y.npy")]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert f"shape {shape}" in error and "does not match the model input 1x8x8" in error and "(N, 1, 8, 8)" in error


@pytest.mark.parametrize("shape", [(5, 1, 8, 8), (1, 8, 8), (5, 64)])
def test_calibration_in_an_accepted_form_is_read(tmp_path, shape):
    model = _save(tmp_path, Case("conv", 1, 4, 8, 3, 1, 1, 0))
    np.save(tmp_path / "cal.npy", np.random.default_rng(0).uniform(0, 1, shape).astype(np.float32))
    assert main(["infer", model, "--calibration", str(tmp_path / "cal.npy"), "--input", str(tmp_path / "x.npy"),
                 "--output", str(tmp_path / "y.npy")]) == 0


def _tiny_weight_model(tmp_path) -> tuple[str, list[int]]:
    """A float conv whose weights (~1e-6) are tiny beside its bias (+-1), and the shifts of its
    requantization multipliers in_scale * weight_scale / out_scale (about 2**-40, beyond the
    serial requantizer's 15..30), computed from the scheme of planner/quant.py's docstring."""
    g = GraphBuilder((1, 4, 8, 8), seed=0)
    weights = (np.random.default_rng(0).standard_normal((4, 4, 3, 3)) * 1e-6).astype(np.float32)
    bias = np.linspace(-1, 1, 4).astype(np.float32)
    y = g.node("Conv", [g.input_name, g.const(weights, "w"), g.const(bias, "b")], pads=[1] * 4)
    path = tmp_path / "tiny.onnx"
    onnx.save(g.model(y), path)
    cal = np.random.default_rng(1).uniform(-1, 1, (4, 4, 8, 8)).astype(np.float32)
    np.save(tmp_path / "cal.npy", cal)
    outputs = np.concatenate([conv2d(x.astype(np.float64), weights, (1, 1), (1,) * 4) + bias[:, None, None] for x in cal])
    scale = lambda low, high: (max(high, 0) - min(low, 0)) / 255  # noqa: E731 (asymmetric int8 over the range)
    real = scale(cal.min(), cal.max()) * np.abs(weights).max(axis=(1, 2, 3)) / 127 / scale(outputs.min(), outputs.max())
    return str(path), sorted({15 - int(np.floor(np.log2(m))) for m in real})


def test_float_model_with_a_shift_the_serial_requantizer_lacks_is_refused_at_planning(tmp_path, capsys):
    """Before, `plan` and `inspect --hw icebreaker` accepted the float model and `infer` refused it."""
    (model, shifts), cal = _tiny_weight_model(tmp_path), str(tmp_path / "cal.npy")
    assert main(["plan", model, "--hw", "icebreaker", "--calibration", cal, "-o", str(tmp_path / "p.yaml")]) == 2
    error = capsys.readouterr().err
    assert error.count("error:") == 1 and f"layer 'conv3': requantization shifts {shifts}" in error and "15..30" in error
    assert not (tmp_path / "p.yaml").exists()
    assert main(["infer", model, "--hw", "icebreaker", "--engine", "isa", "--calibration", cal, "--input", cal,
                 "--output", str(tmp_path / "y.npy")]) == 2  # the same refusal where the program would run
    assert error.split("error: ")[1] == capsys.readouterr().err.split("error: ")[1]
    assert main(["inspect", model, "--hw", "icebreaker", "--calibration", cal, "--json"]) == 0
    assert "requantization shifts" in json.loads(capsys.readouterr().out)["layers"][0]["problem"]
    assert main(["plan", model, "--hw", "default", "--calibration", cal]) == 0  # its requantizer has every shift
