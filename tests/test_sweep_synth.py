"""`hwgen sweep --synth` end to end: the point that fits is synthesized and placed (Yosys +
nextpnr), the point over the device is not; measured resources replace the estimate."""
from __future__ import annotations

import json

import pytest
import yaml

from boards.devices import device
from cli.main import main
from hwgen.config import config_from_dict
from explore.sweep.resources import LOGIC_ERROR, dsp_count

BASE = {"name": "tiny", "device": "LFE5U-25F", "board": "none", "clock_mhz": 25,
        "pe": {"rows": 2, "cols": 2, "simd": 2}, "widths": {"activation": 8, "weight": 8, "accumulator": 32},
        "buffers": {"input_bytes": 4096, "weight_bytes": 4096, "output_bytes": 4096},
        "dram": {"bus_width_bits": 16, "bandwidth_bytes_per_cycle": 2, "latency_cycles": 4, "burst_beats": 4}}


@pytest.mark.slow
def test_synthesized_sweep_measures_the_feasible_point_only(tmp_path, capsys):
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(BASE))
    space = tmp_path / "space.yaml"
    space.write_text("base: tiny.yaml\npe: {rows: [2, 4]}\n")  # 4 x 2 x 2 needs more DSPs than the 25F's 28
    out = tmp_path / "out"
    assert main(["sweep", "digits", "--space", str(space), "--synth", "--jobs", "1", "-o", str(out)]) == 0
    small, large = json.loads((out / "points.json").read_text())["points"]
    totals = device("ecp5-25f").totals

    needed = dsp_count(config_from_dict(large["config"]), "ecp5")
    assert needed > totals.dsp
    assert large["status"] == "infeasible" and large["reason"] == f"exceeds ecp5-25f: dsp {needed} > {totals.dsp}"
    assert not (out / "synth" / large["key"]).exists()

    assert small["status"] == "ok", small["reason"]
    assert small["synth_dsp"] == small["est_dsp"] == dsp_count(config_from_dict(small["config"]), "ecp5")
    for name in ("lut", "ff"):  # the calibrated estimate, against place and route
        assert abs(small[f"est_{name}"] - small[f"synth_{name}"]) <= LOGIC_ERROR * small[f"synth_{name}"]
    for name in ("lut", "ff", "dsp", "bram"):
        assert 0 < small[f"synth_{name}"] <= getattr(totals, name)
    report = json.loads((out / "synth" / small["key"] / "report.json").read_text())
    assert small["synth_lut"] == report["resources"]["lut"] and small["fmax_mhz"] == min(report["fmax_mhz"].values())
    assert small["latency_s"] == pytest.approx(small["cycles"] / (small["fmax_mhz"] * 1e6))
    assert small["throughput_ips"] == pytest.approx(1 / small["latency_s"])
    assert small["area_pct"] == pytest.approx(max(100 * small[f"synth_{n}"] / getattr(totals, n)
                                                  for n in ("lut", "ff", "dsp", "bram")))
