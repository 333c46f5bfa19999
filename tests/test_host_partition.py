"""A network with a host operator inside (a Sigmoid) and a trailing Softmax: cut into accelerator
segments and a host part, run with int8 at the boundaries by `hwgen infer`, `simulate` and
`run --port sim`. The reference is written here from the golden model and numpy (sigmoid and
softmax by hand), and the float model in onnxruntime within quantization tolerance."""
from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime
import pytest
import yaml

from cli.main import main
from common.errors import UnsupportedModelError
from onnx_factory import GraphBuilder
from ort_quant import ort_quantize
from planner.frontend import load_network, load_parts
from planner.ir import HostOp
from sim.golden import run_quantized
from sim.golden.calibration import quantize_network
from soc_helpers import TINY

INPUT = (1, 2, 3, 3)


def host_inside_model() -> onnx.ModelProto:
    """Conv+ReLU -> Sigmoid (host) -> Conv+ReLU -> Flatten -> Gemm -> Softmax (trailing, host)."""
    g = GraphBuilder(INPUT, seed=5)
    x = g.node("Sigmoid", [g.node("Relu", [g.conv(g.input_name, 2, 3)])])
    x = g.node("Flatten", [g.node("Relu", [g.conv(x, 3, 2, k=1, pad=0)])], axis=1)
    return g.model(g.node("Softmax", [g.gemm(x, 18, 4)], axis=1))


def calibration() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((8, *INPUT[1:])).astype(np.float32)


def inputs(count: int) -> np.ndarray:
    return np.random.default_rng(1).standard_normal((count, *INPUT[1:])).astype(np.float32)


def reference(x: np.ndarray) -> np.ndarray:
    """Segment 1 golden, sigmoid in numpy on its dequantized output, segment 2 golden, softmax in numpy;
    each segment calibrated on the float values reaching it (the float model's in onnxruntime)."""
    first, _, second = load_parts(host_inside_model())
    net1 = quantize_network(load_network(first.model), calibration())
    session = onnxruntime.InferenceSession(first.model.SerializeToString(), providers=["CPUExecutionProvider"])
    reached = np.concatenate([session.run(None, {first.input: s[None]})[0] for s in calibration()])
    net2 = quantize_network(load_network(second.model), 1 / (1 + np.exp(-reached.astype(np.float64))))
    results = []
    for sample in x:
        y1 = run_quantized(net1, net1.input_quant.quantize(sample))[net1.outputs[0]]
        hidden = 1 / (1 + np.exp(-net1.output_quant(net1.outputs[0]).dequantize(y1).astype(np.float64)))
        y2 = run_quantized(net2, net2.input_quant.quantize(hidden))[net2.outputs[0]]
        logits = net2.output_quant(net2.outputs[0]).dequantize(y2).reshape(-1).astype(np.float64)
        results.append(np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum())
    return np.stack(results)


def float_model(x: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(host_inside_model().SerializeToString(), providers=["CPUExecutionProvider"])
    return np.concatenate([session.run(None, {"input": s[None]})[0] for s in x])


@pytest.fixture
def files(tmp_path):
    onnx.save(host_inside_model(), tmp_path / "model.onnx")
    np.save(tmp_path / "calibration.npy", calibration())
    np.save(tmp_path / "x.npy", inputs(2))
    np.save(tmp_path / "x1.npy", inputs(1))
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY.to_dict()))
    return tmp_path


def test_the_graph_is_cut_at_the_sigmoid_and_the_softmax_stays_a_tail():
    parts = load_parts(host_inside_model())
    assert [part.on_host for part in parts] == [False, True, False]
    assert [node.op_type for node in parts[1].model.graph.node] == ["Sigmoid"]
    assert parts[1].input == parts[0].outputs[0] and parts[2].input == parts[1].outputs[0]
    tail = load_network(parts[2].model).host_tails
    assert [step.op for step in tail[0].steps] == [HostOp.SOFTMAX]


def test_silu_runs_on_the_host_as_one_part_with_its_mul():
    """SiLU as exporters write it, `x * Sigmoid(x)`: the Mul reads the tensor before the Sigmoid,
    so it joins the Sigmoid's host part (before, that tensor 'skipped over' the Sigmoid); the host
    part computes SiLU (checked in numpy)."""
    g = GraphBuilder(INPUT, seed=3)
    x = g.conv(g.input_name, 2, 3)
    x = g.node("Mul", [x, g.node("Sigmoid", [x])])
    parts = load_parts(g.model(g.gemm(g.node("Flatten", [g.node("Relu", [g.conv(x, 3, 2, k=1, pad=0)])], axis=1), 18, 4)))
    assert [part.on_host for part in parts] == [False, True, False]
    host = parts[1].model
    assert [node.op_type for node in host.graph.node] == ["Sigmoid", "Mul"]
    value = np.linspace(-4, 4, 27, dtype=np.float32).reshape(1, 3, 3, 3)
    session = onnxruntime.InferenceSession(host.SerializeToString(), providers=["CPUExecutionProvider"])
    (silu,) = session.run(None, {parts[1].input: value})
    np.testing.assert_allclose(silu, value / (1 + np.exp(-value.astype(np.float64))), rtol=1e-5)


def test_a_tensor_skipping_over_a_host_operator_is_one_clear_error():
    g = GraphBuilder(INPUT, seed=2)
    x = g.node("Relu", [g.conv(g.input_name, 2, 2)])
    model = g.model(g.node("Add", [g.node("Sigmoid", [x]), x]))
    with pytest.raises(UnsupportedModelError, match=r"add\d+.*'relu\d+_out' skips over a host operator"):
        load_parts(model)


@pytest.mark.parametrize("engine", ["golden", "isa"])
def test_hwgen_infer_equals_the_reference(files, engine, capsys):
    code = main(["infer", str(files / "model.onnx"), "--input", str(files / "x.npy"), "--output",
                 str(files / "y.npy"), "--engine", engine, "--hw", str(files / "tiny.yaml"),
                 "--calibration", str(files / "calibration.npy")])
    assert code == 0 and "2 accelerator segment(s) and 1 host part(s)" in capsys.readouterr().out
    y = np.load(files / "y.npy")
    np.testing.assert_allclose(y, reference(inputs(2)), rtol=0, atol=1e-6)
    np.testing.assert_allclose(y, float_model(inputs(2)), rtol=0, atol=0.03)


def test_hwgen_infer_without_calibration_is_one_clear_error(files, capsys):
    code = main(["infer", str(files / "model.onnx"), "--input", str(files / "x.npy"), "--output", str(files / "y.npy")])
    error = capsys.readouterr().err
    assert code != 0 and "Traceback" not in error and "calibration inputs" in error
    assert not (files / "y.npy").exists()


def test_hwgen_simulate_runs_every_segment_on_the_rtl(files, capsys):
    code = main(["simulate", str(files / "model.onnx"), "--engine", "amaranth", "--hw", str(files / "tiny.yaml"),
                 "--input", str(files / "x.npy"), "--calibration", str(files / "calibration.npy"), "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == 0 and record["bit_exact"] and record["host_parts"] == 1
    assert [segment["network"] for segment in record["segments"]] == ["model_part0", "model_part2"]
    for segment in record["segments"]:
        assert segment["cycles"] == pytest.approx(segment["predicted_cycles"], rel=0.05)
    expected = np.abs(reference(inputs(1)) - float_model(inputs(1))).max()
    assert record["float_reference_max_abs_error"] == pytest.approx(expected, abs=1e-6)


def test_hwgen_run_on_the_simulated_soc(files, capsys):
    code = main(["run", "--board", "icebreaker", "--port", "sim", str(files / "model.onnx"), "--input",
                 str(files / "x1.npy"), "--hw", str(files / "tiny.yaml"), "--calibration",
                 str(files / "calibration.npy"), "--output", str(files / "y.npy"), "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == 0 and record["bit_exact"] and len(record["segments"]) == 2
    assert all(sample["counters"]["cycles"] > 0 for segment in record["segments"] for sample in segment["samples"])
    np.testing.assert_allclose(np.load(files / "y.npy"), reference(inputs(1)), rtol=0, atol=1e-6)


def test_a_qdq_model_runs_with_its_own_quantization(files, capsys):
    """onnxruntime's QDQ form of the model: weight DequantizeLinear nodes are copied to the segment
    using them, no calibration is needed; the outputs are onnxruntime's on the QDQ model up to its
    quantized Softmax (steps of 1/256) and a rounding step."""
    quantized = ort_quantize(host_inside_model(), calibration())
    onnx.save(quantized, files / "qdq.onnx")
    code = main(["infer", str(files / "qdq.onnx"), "--input", str(files / "x.npy"), "--output", str(files / "y.npy")])
    assert code == 0
    session = onnxruntime.InferenceSession(quantized.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = np.concatenate([session.run(None, {"input": x[None]})[0] for x in inputs(2)])
    np.testing.assert_allclose(np.load(files / "y.npy"), expected, rtol=0, atol=2 / 256)


def test_plan_plans_each_segment_and_lists_the_host_parts(tmp_path, capsys):
    """Each segment's plan equals `hwgen plan` of that segment's model alone; the Sigmoid is a
    host part between them; --output (one network's plan) is refused in one line."""
    model = tmp_path / "model.onnx"
    onnx.save(host_inside_model(), model)
    assert main(["plan", str(model), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["host_parts"] == [{"after_segment": 0, "ops": ["Sigmoid"]}]
    first, _, second = load_parts(host_inside_model())
    for index, part in enumerate((first, second)):
        alone = tmp_path / f"segment{index}.onnx"
        onnx.save(part.model, alone)
        assert main(["plan", str(alone), "--json"]) == 0
        expected = json.loads(capsys.readouterr().out)
        assert record["segments"][index]["total"]["cycles"] == expected["total"]["cycles"]
        assert record["segments"][index]["total"]["dram_bytes"] == expected["total"]["dram_bytes"]
    assert record["total"]["cycles"] == sum(s["total"]["cycles"] for s in record["segments"])
    assert main(["plan", str(model), "-o", str(tmp_path / "plan.json")]) == 2
    assert capsys.readouterr().err.count("error:") == 1 and not (tmp_path / "plan.json").exists()


def test_inspect_shows_the_segments_layers_and_the_host_parts(tmp_path, capsys):
    model = tmp_path / "model.onnx"
    onnx.save(host_inside_model(), model)
    assert main(["inspect", str(model), "--hw", "default", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    first, _, second = load_parts(host_inside_model())
    assert [[layer["name"] for layer in segment["layers"]] for segment in record["segments"]] == [
        [layer.name for layer in load_network(part.model).layers] for part in (first, second)]
    assert all(layer["units"] == ["host", "ulx3s-85f"] for s in record["segments"] for layer in s["layers"])
    assert record["host_parts"] == [{"after_segment": 0, "ops": ["Sigmoid"]}]
    assert [tail["ops"] for tail in record["segments"][1]["host_tails"]] == [["Softmax"]]
