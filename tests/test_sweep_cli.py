"""`hwgen sweep`: every output file, results equal to `hwgen plan`, device limits, clean errors."""
from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ElementTree

import pytest
import yaml

from boards.devices import device
from cli.main import main
from hw_configs import data_config_path

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def plan_cycles(config: dict, tmp_path, capsys) -> int:
    """Total cycles `hwgen plan --json` predicts for a configuration."""
    path = tmp_path / f"{config['name']}.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["plan", "digits", "--hw", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["total"]["cycles"]


def test_sweep_writes_every_output_and_matches_hwgen_plan(tmp_path, capsys):
    space = tmp_path / "space.yaml"
    space.write_text(f"base: {data_config_path('ecp5-85f')}\npe: {{rows: [4, 16], cols: [2, 8], simd: [2]}}\n")
    out = tmp_path / "out"
    assert main(["sweep", "digits", "--space", str(space), "--jobs", "2", "-o", str(out)]) == 0
    assert "4 evaluated, 0 cached" in capsys.readouterr().out

    with open(out / "points.csv") as handle:
        rows = list(csv.DictReader(handle))
    points = json.loads((out / "points.json").read_text())["points"]
    assert [(int(r["pe.rows"]), int(r["pe.cols"])) for r in rows] == [(4, 2), (4, 8), (16, 2), (16, 8)]
    totals = device("ecp5-85f").totals
    for row, point in zip(rows, points):
        assert int(row["cycles"]) == plan_cycles(point["config"], tmp_path, capsys)
        assert float(row["latency_s"]) == pytest.approx(int(row["cycles"]) / 100e6)  # default clock: 100 MHz
        over = any(int(row[f"est_{name}"]) > getattr(totals, name) for name in ("lut", "ff", "dsp", "bram", "spram"))
        assert row["status"] == ("infeasible" if over else "ok")
        if over:
            assert row["reason"].startswith("exceeds ecp5-85f:")
    assert rows[3]["status"] == "infeasible" and "dsp" in rows[3]["reason"]  # 16 x 8 x 2 = 256 PE multipliers

    feasible = [r for r in rows if r["status"] == "ok"]
    fastest = min(feasible, key=lambda r: float(r["latency_s"]))
    summary = (out / "summary.md").read_text()
    assert f"| latency | {float(fastest['latency_s']) * 1e3:.4g} ms per inference | {fastest['label']} |" in summary
    fronts = json.loads((out / "fronts.json").read_text())
    assert set(fronts) == {"latency_vs_dsp", "latency_vs_lut", "energy_vs_area"}
    for name in fronts:
        assert (out / f"{name}.png").read_bytes().startswith(PNG_MAGIC)
        assert ElementTree.parse(out / f"{name}.svg").getroot().tag.endswith("svg")
        assert all(p["label"] in {r["label"] for r in feasible} for p in fronts[name]["points"])
    assert not list(out.glob(".*.tmp"))

    assert main(["sweep", "digits", "--space", str(space), "-o", str(out)]) == 0
    assert "0 evaluated, 4 cached" in capsys.readouterr().out


@pytest.mark.parametrize("arguments, message", [
    (["--jobs", "0"], "--jobs 0: expected at least 1"),
    (["--timeout", "-1"], "--timeout -1.0: expected a positive number"),
    (["--device", "virtex7"], "unknown device 'virtex7'"),
    (["--hw", "setup_a", "--synth"], "--synth needs a device"),
    (["--space", "no-such-space.yaml"], "no-such-space.yaml: cannot read"),
])
def test_bad_options_give_one_clear_error(tmp_path, capsys, arguments, message):
    assert main(["sweep", "digits", "-o", str(tmp_path / "out"), *arguments]) == 2
    error = capsys.readouterr().err
    assert error.startswith("hwgen sweep: error:") and message in error


def test_sweep_where_no_point_is_feasible_exits_nonzero_with_numbered_reasons(tmp_path, capsys):
    """Two arrays beyond the LFE5U-85F's 156 multipliers (datasheet): exit 1, the DSP counts printed."""
    space = tmp_path / "space.yaml"
    space.write_text(f"base: {data_config_path('ecp5-85f')}\npe: {{rows: [16], cols: [8, 16], simd: [2]}}\n")
    out = tmp_path / "out"
    assert main(["sweep", "digits", "--space", str(space), "--jobs", "1", "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert "best of" not in captured.out
    assert "none of the 2 points is feasible" in captured.err
    rows = json.loads((out / "points.json").read_text())["points"]
    dsps = sorted(int(row["est_dsp"]) for row in rows)
    assert all(dsp >= 16 * 8 * 2 > 156 for dsp in dsps)
    line = next(line for line in captured.err.splitlines() if "dsp" in line)
    assert f"dsp {dsps[0]}-{dsps[1]} > 156" in line and "#" not in line
    assert f"dsp {dsps[0]}-{dsps[1]} > 156" in (out / "summary.md").read_text()


def test_reason_groups_keep_names_and_give_varying_numbers_as_ranges():
    from explore.sweep.summary import reason_groups

    reasons = ["plan: layer 'layer1.0.conv1' (64x56x56 -> 64x56x56, kernel 3x3): weight buffer needs >= 2304 B (has 2048)",
               "plan: layer 'layer1.0.conv1' (64x56x56 -> 64x56x56, kernel 3x3): weight buffer needs >= 4608 B (has 2048)",
               "exceeds ice40-up5k: dsp 12 > 8, lut 5280.5 > 5280 {#}"]
    assert reason_groups(reasons) == [
        (2, "plan: layer 'layer1.0.conv1' (64x56x56 -> 64x56x56, kernel 3x3): weight buffer needs >= 2304-4608 B (has 2048)"),
        (1, "exceeds ice40-up5k: dsp 12 > 8, lut 5280.5 > 5280 {#}"),
    ]
