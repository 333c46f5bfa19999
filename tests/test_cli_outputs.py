"""Outputs that explain themselves: plan latency and images/s, tables within 80 columns, plan vs
simulate cycles, n/a for what was not counted."""
from __future__ import annotations

import io
import json

import pytest
import yaml
from rich.console import Console

from cli.commands.inspect import render_table
from cli.main import main
from hwgen.config import config_path
from planner.frontend import load_network
from planner.zoo import resolve_model


def clock_mhz(name: str) -> float:
    """The configuration's clock, read from its YAML file."""
    return float(yaml.safe_load(config_path(name).read_text())["clock_mhz"])


@pytest.mark.parametrize("model", ["digits", "resnet18"])
def test_plan_table_fits_80_columns_with_latency_and_images_per_second(model, capsys):
    assert main(["plan", model, "--json"]) == 0
    cycles = json.loads(capsys.readouterr().out)["total"]["cycles"]
    assert main(["plan", model]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80 and "…" not in out
    seconds = cycles / (clock_mhz("default") * 1e6)
    assert f"{cycles:,} cycles: {seconds * 1e3:.4g} ms, {1 / seconds:,.1f} images/s at 70 MHz" in out


def test_plan_json_gives_latency_and_images_per_second(capsys):
    assert main(["plan", "digits", "--hw", "icebreaker", "--json"]) == 0
    total = json.loads(capsys.readouterr().out)["total"]
    mhz = clock_mhz("icebreaker")
    assert total["clock_mhz"] == mhz
    assert total["latency_ms"] == pytest.approx(total["cycles"] / (mhz * 1e3))
    assert total["images_per_s"] == pytest.approx(mhz * 1e6 / total["cycles"])


def test_simulate_names_the_plan_cycles_and_prints_na_for_uncounted(capsys):
    assert main(["plan", "digits", "--json"]) == 0
    plan_cycles = json.loads(capsys.readouterr().out)["total"]["cycles"]
    assert main(["simulate", "digits", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["plan_cycles"] == plan_cycles
    assert main(["simulate", "digits"]) == 0
    out = capsys.readouterr().out
    difference = plan_cycles - record["predicted_cycles"]
    assert f"`hwgen plan` sums the layers planned alone: {plan_cycles:,} cycles ({difference:+,})" in out
    cycles_row = next(line for line in out.splitlines() if " cycles " in line and "│" in line)
    assert "n/a" in cycles_row and record["cycles"] is None  # the instruction-level simulator counts no cycles


@pytest.mark.parametrize("model", ["resnet50", "mobilenetv2"])
def test_inspect_table_fits_80_columns_without_cutting_a_value(model):
    net = load_network(resolve_model(model))
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(render_table(net))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80 and "…" not in text
    assert f"{net.total_macs:,}" in text and f"{net.total_params:,}" in text
