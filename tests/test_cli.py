"""The command line: documented options, JSON contracts, outputs and clean failures."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest

from cli.main import build_parser, main
from onnx_factory import GraphBuilder
from planner.frontend import load_network
from planner.zoo.digits import load_digits_split
from sim.golden import run_float


def test_every_subcommand_and_option_has_help():
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    assert subparsers.choices
    for name, sub in subparsers.choices.items():
        for action in sub._actions:
            if action.dest != "help":
                assert action.help, f"hwgen {name}: option {action.dest} has no help text"


def test_console_script_help_runs():
    result = subprocess.run([sys.executable, "-m", "cli", "--help"], capture_output=True, text=True, check=True)
    assert "inspect" in result.stdout and "infer" in result.stdout


def test_inspect_json_contract(capsys):
    assert main(["inspect", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert {"layers", "total_macs", "total_params"} <= record.keys()
    for layer in record["layers"]:
        assert {"name", "op", "macs", "params"} <= layer.keys()
    assert record["total_macs"] == sum(layer["macs"] for layer in record["layers"]) > 0


def test_inspect_table_lists_layers(capsys):
    assert main(["inspect", "resnet18"]) == 0
    out = capsys.readouterr().out
    assert "layer1.0.conv1" in out and "1,814,073,344" in out


def test_infer_golden_digits(tmp_path):
    _, _, x_test, y_test = load_digits_split()
    np.save(tmp_path / "x.npy", x_test[:30])
    assert main(["infer", "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npy")]) == 0
    logits = np.load(tmp_path / "y.npy")
    assert logits.shape == (30, 10) and logits.dtype == np.float32
    assert np.mean(logits.argmax(axis=1) == y_test[:30]) >= 0.9


def test_infer_float_model_with_calibration(tmp_path):
    g = GraphBuilder((1, 3, 8, 8), seed=4)
    model = g.model(g.node("Relu", [g.conv(g.input_name, 3, 5)]))
    onnx.save(model, tmp_path / "m.onnx")
    rng = np.random.default_rng(0)
    np.save(tmp_path / "calib.npy", rng.standard_normal((8, 3, 8, 8)).astype(np.float32))
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    args = ["infer", str(tmp_path / "m.onnx"), "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npy")]
    assert main(args + ["--calibration", str(tmp_path / "calib.npy")]) == 0
    y = np.load(tmp_path / "y.npy")
    expected = np.stack([run_float(load_network(model), s)[load_network(model).outputs[0]] for s in x])
    assert y.shape == (2, 5, 8, 8)
    assert np.abs(y - expected).max() < 0.1 * np.abs(expected).max()
    assert main(args) == 2  # a float file model needs --calibration


@pytest.mark.parametrize(
    "argv_tail, message",
    [
        (["--input", "{tmp}/wrong.npy"], "does not match the model input"),
        (["{tmp}/broken.onnx", "--input", "{tmp}/x.npy"], "broken.onnx"),
        (["{tmp}/absent.onnx", "--input", "{tmp}/x.npy"], "no such file"),
    ],
)
def test_infer_errors_exit_nonzero_and_write_nothing(tmp_path, capsys, argv_tail, message):
    np.save(tmp_path / "wrong.npy", np.zeros((2, 3, 8, 8), np.float32))
    np.save(tmp_path / "x.npy", np.zeros((2, 1, 8, 8), np.float32))
    (tmp_path / "broken.onnx").write_bytes(b"\x08\x07garbage")
    out = tmp_path / "y.npy"
    argv = ["infer", *[a.format(tmp=tmp_path) for a in argv_tail], "--output", str(out)]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_demo_reports_accuracy_and_bit_exact_isa(capsys):
    assert main(["demo", "--samples", "30", "--no-rtl"]) == 0
    out = capsys.readouterr().out
    assert "int8 golden accuracy" in out
    assert "30/30 images bit-exact" in out


def test_unsupported_operator_exits_nonzero_naming_node(tmp_path, capsys):
    g = GraphBuilder((1, 3, 8, 8))
    onnx.save(g.model(g.node("Erf", [g.conv(g.input_name, 3, 4)])), tmp_path / "erf.onnx")
    assert main(["inspect", str(tmp_path / "erf.onnx")]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "'Erf'" in err and "erf" in err and "supported operators" in err


def test_symbolic_shape_error_and_input_shape_option(tmp_path, capsys):
    g = GraphBuilder((1, 3, 8, 8))
    model = g.model(g.conv(g.input_name, 3, 4), symbolic_batch=True)
    model.graph.input[0].type.tensor_type.shape.dim[3].dim_param = "W"
    onnx.save(model, tmp_path / "sym.onnx")
    assert main(["inspect", str(tmp_path / "sym.onnx")]) == 2
    assert "--input-shape" in capsys.readouterr().err
    assert main(["inspect", str(tmp_path / "sym.onnx"), "--input-shape", "1x3x8x16", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["layers"][0]["output_shape"] == [4, 8, 16]
