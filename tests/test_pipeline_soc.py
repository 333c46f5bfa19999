"""The board SoC with pipelined instances (`boards.soc.SocCore` on a `PipelineLayout`) through
`hwgen run --port sim`: the host runtime writes four inputs into the first stage's slots over
the simulated UART, starts one stream and reads the last stage's slots; every image equals the
golden model of the whole network, and the stages overlap: the period between the last
stage's starts lies between the slower stage's program-model cycles and the two stages' sum."""
from __future__ import annotations

import json

import numpy as np
import onnx
import yaml
from onnx_factory import GraphBuilder
from soc_helpers import TINY

from cli.main import main
from planner.compile.stages import pipeline_layout, predicted_period
from planner.frontend import load_network
from sim.golden import run_quantized
from sim.golden.calibration import quantize_network

IMAGES = 4
INPUT = (2, 4, 4)


def test_run_streams_images_through_the_instances_of_the_soc(tmp_path, capsys):
    g = GraphBuilder((1, *INPUT), seed=4)
    model = g.model(g.conv(g.node("Relu", [g.conv(g.input_name, 2, 4)]), 4, 2))
    onnx.save(model, tmp_path / "two.onnx")
    config = tmp_path / "tiny-x2.yaml"
    config.write_text(yaml.safe_dump(dict(TINY.to_dict(), name="tiny-x2", instances=2)))
    x = np.random.default_rng(1).standard_normal((IMAGES + 1, *INPUT)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    argv = ["run", "--board", "orangecrab", "--hw", str(config), "--port", "sim", str(tmp_path / "two.onnx"),
            "--input", str(tmp_path / "x.npy"), "--calibration", str(tmp_path / "x.npy")]
    assert main([*argv, "--images", "1"]) == 2
    assert "allowed: 2 to 5" in capsys.readouterr().err
    assert main([*argv, "--images", str(IMAGES), "--json", "--output", str(tmp_path / "y.npy")]) == 0
    record = json.loads(capsys.readouterr().out)

    net = quantize_network(load_network(model), x)
    golden = [run_quantized(net, net.input_quant.quantize(sample))[net.outputs[0]] for sample in x[:IMAGES]]
    assert record["bit_exact_images"] == IMAGES and record["images"] == IMAGES
    assert [stage["layers"] for stage in record["stages"]] == [[net.layers[0].name], [net.layers[1].name]]
    layout = pipeline_layout(net, [0, 1], TINY, IMAGES)
    cycles = [stage.compilation.prediction.cycles for stage in layout.stages]
    assert record["predicted_period_cycles"] == predicted_period(layout)
    assert max(cycles) < record["period_cycles"] < sum(cycles)
    outputs = np.load(tmp_path / "y.npy")
    assert len(outputs) == IMAGES
    for y, expected in zip(outputs, golden):
        assert np.array_equal(y.reshape(expected.shape), expected)
