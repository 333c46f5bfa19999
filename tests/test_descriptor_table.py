"""The descriptor table counted at planning time (planner.compile.descriptor_table) is the
compiled program's: per layer, the table of the network compiled up to that layer; and a plan
whose program would pass the LOAD / STORE `desc` field is refused by `hwgen plan` and marked by
`hwgen inspect --hw` in the same words (issue #25)."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

import planner.compile.descriptor_table as table
from cli.main import main
from hwgen.config import load_config
from onnx_factory import pattern_models
from planner.compile.network import compile_network
from planner.envelope import smallest_tiles
from planner.frontend import load_network
from planner.ir import COMPUTE_OPS, Network
from planner.pipeline import stand_ins
from planner.plan import plan_network
from planner.schedule import ConvShape, Schedule
from sim.golden.calibration import quantize_network

DEFAULT = load_config("default")
MODELS = pattern_models()


def prefix_tables(net: Network, schedules: dict[str, Schedule]) -> dict[str, int]:
    """The reference: per layer, the descriptors of the program compiled for the layers up to it."""
    tables = {}
    for end, layer in enumerate(net.layers, 1):
        prefix = replace(net, layers=net.layers[:end], outputs=(layer.output,))
        tables[layer.name] = len(compile_network(prefix, schedules, DEFAULT).program.descriptors)
    return tables


def smallest_schedules(net: Network, order: tuple[str, ...]) -> dict[str, Schedule]:
    """The smallest tiles of every conv / fc layer, in `order` (IC first: partial sums spill)."""
    return {layer.name: Schedule(*smallest_tiles(ConvShape.of(layer), DEFAULT), order)
            for layer in net.layers if layer.op in COMPUTE_OPS}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_counted_table_is_the_compiled_programs(name):
    net = load_network(MODELS[name])
    qnet = quantize_network(net, np.random.default_rng(0).uniform(-1, 1, (2, *net.input_shape)))
    planned = {layer.name: layer.schedule for layer in plan_network(qnet, DEFAULT).layers if layer.schedule is not None}
    for schedules in (planned, smallest_schedules(qnet, ("IC", "OC", "OH", "OW")),
                      smallest_schedules(qnet, ("OW", "OH", "OC", "IC"))):
        assert table.descriptor_counts(qnet, schedules, DEFAULT) == prefix_tables(qnet, schedules)


def test_plan_stops_where_the_table_passes_the_desc_field(tmp_path, capsys, monkeypatch):
    """With the limit lowered to 10, the layer named is the first whose compiled prefix (of the
    float model's stand-in, as `plan` checks it) holds more than 10 descriptors; `inspect --hw`
    marks that layer with the error `plan` stops with."""
    model = tmp_path / "m.onnx"
    model.write_bytes(MODELS["residual_add"].SerializeToString())
    net = load_network(str(model))
    schedules = {layer.name: layer.schedule for layer in plan_network(net, DEFAULT).layers if layer.schedule is not None}
    tables = prefix_tables(stand_ins(net), schedules)
    first = next(name for name, count in tables.items() if count > 10)
    monkeypatch.setattr(table, "descriptor_limit", lambda: 10)
    assert main(["plan", str(model), "-o", str(tmp_path / "p.yaml")]) == 2
    error = capsys.readouterr().err
    assert error.count("error:") == 1 and "Traceback" not in error
    assert (f"layer {first!r}: the program's DMA descriptors (distinct transfer shapes) reach {tables[first]} at this "
            f"layer and {tables[net.layers[-1].name]} in all, which exceeds the limit 10") in error
    assert not (tmp_path / "p.yaml").exists()
    words = error.split("error: ", 1)[1].strip()
    assert main(["inspect", str(model), "--hw", "default", "--json"]) == 0  # inspect marks it in the same words
    record = json.loads(capsys.readouterr().out)
    assert [layer["problem"] for layer in record["layers"]] == [words if layer.name == first else None for layer in net.layers]
    assert main(["inspect", str(model), "--hw", "default"]) == 0
    out = capsys.readouterr().out
    assert "not compilable: layer " + repr(first) in out and f"{len(net.layers) - 1}/{len(net.layers)}" in out
