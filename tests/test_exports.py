"""Exported models as PyTorch writes them, shape-only models and float models without calibration.

References: onnxruntime on the same float model and on the host operators alone, and the same
network written with a plain Flatten.
"""
from __future__ import annotations

import json
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

from cli.main import main
from onnx_factory import GraphBuilder
from planner.frontend import load_network
from planner.frontend.model_file import infer_shapes
from planner.frontend.shape_folding import fold_shape_subgraphs
from planner.ir import HostOp, HostStep

INPUT = (1, 3, 8, 8)


def classifier(flatten: str, tail: tuple[str, ...] = (), opset: int = 17, seed: int = 0) -> onnx.ModelProto:
    """Conv-ReLU-(flatten)-Gemm with `flatten` as PyTorch writes it and trailing host ops."""
    g = GraphBuilder(INPUT, seed=seed)
    x = g.node("Relu", [g.conv("input", 3, 4)])
    if flatten == "flatten":
        flat = g.node("Flatten", [x], axis=1)
    else:  # x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape
        batch = g.node("Gather", [g.node("Shape", [x]), g.const(np.array(0, np.int64))], axis=0)
        if opset >= 13:
            batch = g.node("Unsqueeze", [batch, g.const(np.array([0], np.int64))])
        else:
            batch = g.node("Unsqueeze", [batch], axes=[0])
        flat = g.node("Reshape", [x, g.node("Concat", [batch, g.const(np.array([-1], np.int64))], axis=0)])
    y = g.gemm(flat, 4 * 8 * 8, 10)
    for op in tail:
        y = g.node(op, [y], axis=1) if op != "ArgMax" else g.node(op, [y], axis=1, keepdims=0)
    out_shape = [1] if tail[-1:] == ("ArgMax",) else [1, 10]
    out_type = onnx.TensorProto.INT64 if tail[-1:] == ("ArgMax",) else onnx.TensorProto.FLOAT
    graph = helper.make_graph(g.nodes, "classifier", [helper.make_tensor_value_info("input", onnx.TensorProto.FLOAT, list(INPUT))],
                              [helper.make_tensor_value_info(y, out_type, out_shape)], g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _layers(net):
    return [(l.op, l.in_shapes, l.out_shape, l.activation) for l in net.layers]


@pytest.mark.parametrize("opset", [11, 17])
def test_view_pattern_imports_like_flatten(opset):
    plain, exported = load_network(classifier("flatten", opset=opset)), load_network(classifier("view", opset=opset))
    assert _layers(exported) == _layers(plain)
    for a, b in zip(plain.layers, exported.layers):
        np.testing.assert_array_equal(a.weights, b.weights)


def test_shape_folding_folds_only_shape_arithmetic():
    """The Shape chain becomes one initializer; float nodes on constants (a DequantizeLinear of int8 weights) stay."""
    model = classifier("view")
    graph = model.graph
    conv = next(node for node in graph.node if node.op_type == "Conv")
    weights = next(init for init in graph.initializer if init.name == conv.input[1])
    graph.initializer.extend([
        onnx.numpy_helper.from_array(np.ones(weights.dims, np.int8), "wq"),
        onnx.numpy_helper.from_array(np.float32(0.01), "ws"),
    ])
    graph.node.insert(0, helper.make_node("DequantizeLinear", ["wq", "ws"], [conv.input[1]]))
    graph.initializer.remove(weights)
    folded = fold_shape_subgraphs(infer_shapes(model))
    ops = [node.op_type for node in folded.graph.node]
    assert ops == ["DequantizeLinear", "Conv", "Relu", "Reshape", "Gemm"]
    reshape = next(node for node in folded.graph.node if node.op_type == "Reshape")
    shape = next(init for init in folded.graph.initializer if init.name == reshape.input[1])
    assert onnx.numpy_helper.to_array(shape).tolist() == [1, -1]


@pytest.mark.parametrize("step, node", [
    (HostStep(HostOp.SOFTMAX, 1), helper.make_node("Softmax", ["x"], ["y"], axis=1)),
    (HostStep(HostOp.SOFTMAX, 1, coerce_2d=True), helper.make_node("Softmax", ["x"], ["y"], axis=1)),
    (HostStep(HostOp.LOG_SOFTMAX, -1), helper.make_node("LogSoftmax", ["x"], ["y"], axis=-1)),
    (HostStep(HostOp.ARGMAX, 1, keepdims=False), helper.make_node("ArgMax", ["x"], ["y"], axis=1, keepdims=0)),
    (HostStep(HostOp.ARGMAX, 1, select_last_index=True), helper.make_node("ArgMax", ["x"], ["y"], axis=1, select_last_index=1)),
])
def test_host_steps_match_onnxruntime(step, node):
    x = np.random.default_rng(1).integers(-3, 4, (2, 5, 3, 2)).astype(np.float32)  # ties for ArgMax
    opset = 11 if step.coerce_2d else 17
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.INT64 if step.op == HostOp.ARGMAX else onnx.TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(step.apply(x), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("tail", [("Softmax",), ("LogSoftmax",), ("Softmax", "ArgMax")])
def test_trailing_host_ops_through_infer_match_onnxruntime(tmp_path, tail):
    model = classifier("view", tail)
    onnx.save(model, tmp_path / "m.onnx")
    x = np.random.default_rng(2).uniform(0, 1, (8, 3, 8, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    assert main(["infer", str(tmp_path / "m.onnx"), "--input", str(tmp_path / "x.npy"), "--output",
                 str(tmp_path / "y.npy"), "--calibration", str(tmp_path / "x.npy")]) == 0
    ours = np.load(tmp_path / "y.npy")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    reference = np.concatenate([session.run(None, {"input": sample[None]})[0] for sample in x])
    if tail[-1] == "ArgMax":
        assert ours.dtype == np.int64 and np.mean(ours == reference) >= 0.75
    else:
        np.testing.assert_allclose(ours, reference, atol=0.1 if tail == ("Softmax",) else 0.3)


def test_host_op_in_the_middle_is_refused(tmp_path, capsys):
    g = GraphBuilder(INPUT)
    x = g.node("Softmax", [g.conv("input", 3, 4)], axis=1)
    y = g.conv(x, 4, 4)
    graph = helper.make_graph(g.nodes, "g", [helper.make_tensor_value_info("input", 1, list(INPUT))],
                              [helper.make_tensor_value_info(y, 1, [1, 4, 8, 8])], g.initializers)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    assert main(["generate", "--model", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "out")]) == 2  # one network only
    err = capsys.readouterr().err
    assert "computed on the host" in err and "end of the graph" in err and "Traceback" not in err
    assert main(["inspect", str(tmp_path / "m.onnx")]) == 0  # inspect shows the host part between segments
    assert "host part after segment 0: Softmax" in capsys.readouterr().out


@pytest.mark.parametrize("activation, named", [("silu", "SiLU (Sigmoid · Mul)"), ("Sigmoid", "Sigmoid"), ("HardSwish", "HardSwish")])
def test_lookup_activations_are_named_with_what_the_hardware_computes(tmp_path, capsys, activation, named):
    g = GraphBuilder(INPUT)
    x = g.conv("input", 3, 4)
    y = g.node("Mul", [x, g.node("Sigmoid", [x])]) if activation == "silu" else g.node(activation, [x])
    graph = helper.make_graph(g.nodes, "g", [helper.make_tensor_value_info("input", 1, list(INPUT))],
                              [helper.make_tensor_value_info(y, 1, [1, 4, 8, 8])], g.initializers)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    assert main(["generate", "--model", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "out")]) == 2  # one network only
    err = capsys.readouterr().err
    assert f": {named} is not supported" in err and "ReLU, ReLU6" in err and len(err.strip().splitlines()) == 1


def shape_only(tmp_path) -> tuple[str, onnx.ModelProto]:
    """A model saved with external data, the data file then deleted."""
    model = classifier("view", ("Softmax",))
    path = tmp_path / "shapes.onnx"
    onnx.save(onnx.ModelProto.FromString(model.SerializeToString()), path, save_as_external_data=True, all_tensors_to_one_file=True, location="shapes.data", size_threshold=256)
    os.remove(tmp_path / "shapes.data")
    return str(path), model


def test_shape_only_model_inspects_and_plans_like_the_full_model(tmp_path, capsys):
    path, model = shape_only(tmp_path)
    assert main(["inspect", path, "--json"]) == 0
    captured = capsys.readouterr()
    assert "seeded random weights" in captured.err
    full = load_network(model)
    record = json.loads(captured.out)
    assert [(l["output_shape"], l["macs"], l["params"]) for l in record["layers"]] == \
        [(list(l.out_shape), l.macs, l.params) for l in full.layers]
    assert main(["plan", path, "--json"]) == 0
    ours = json.loads(capsys.readouterr().out)
    assert main(["plan", _saved(tmp_path, model), "--json"]) == 0
    assert ours["total"] == json.loads(capsys.readouterr().out)["total"]


def _saved(tmp_path, model) -> str:
    onnx.save(model, tmp_path / "full.onnx")
    return str(tmp_path / "full.onnx")


def test_shape_only_model_simulates_with_stand_in_weights_and_one_warning_each(tmp_path, capsys):
    path, _ = shape_only(tmp_path)
    assert main(["simulate", path, "--json"]) == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if "warning" in line]
    assert len(warnings) == 2 and "seeded random weights" in warnings[0] and "--calibration" in warnings[1]
    assert json.loads(captured.out)["bit_exact"]


def test_infer_on_a_float_model_still_requires_calibration(tmp_path, capsys):
    onnx.save(classifier("view"), tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.zeros(INPUT, np.float32))
    assert main(["infer", str(tmp_path / "m.onnx"), "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npy")]) == 2
    assert "give calibration inputs with --calibration" in capsys.readouterr().err
    assert not (tmp_path / "y.npy").exists()


def test_quantized_model_with_trailing_softmax_matches_onnxruntime(tmp_path):
    """onnxruntime's QDQ quantizer wraps the Softmax in Q/DQ: the graph output is that alias."""
    from ort_quant import ort_quantize, ort_reference_session

    x = np.random.default_rng(3).uniform(0, 1, (8, 3, 8, 8)).astype(np.float32)
    model = ort_quantize(classifier("view", ("Softmax",)), x)
    onnx.save(model, tmp_path / "q.onnx")
    np.save(tmp_path / "x.npy", x)
    assert main(["infer", str(tmp_path / "q.onnx"), "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npy")]) == 0
    session = ort_reference_session(model)
    reference = np.concatenate([session.run(None, {"input": sample[None]})[0] for sample in x])
    # the same int8 logits; onnxruntime requantizes the softmax to int8 (step 1/255), the host does not
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), reference, atol=1 / 255)
