"""`hwgen simulate` and `hwgen infer` with program-executing engines."""
from __future__ import annotations

import json

import numpy as np

from cli.main import main
from planner.zoo.digits import load_digits_split


def simulate(capsys, *argv: str) -> dict:
    code = main(["simulate", *argv, "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == (0 if record["bit_exact"] else 1)
    return record


def test_json_contract_and_rtl_agrees_with_isa_traffic(capsys):
    isa = simulate(capsys, "--layer", "conv2", "--engine", "isa")
    rtl = simulate(capsys, "--layer", "conv2", "--engine", "amaranth")
    for record in (isa, rtl):
        assert {"bit_exact", "cycles", "predicted_cycles", "dram_bytes", "predicted_dram_bytes", "utilization"} <= record.keys()
        assert record["bit_exact"] is True and record["predicted_cycles"] > 0
    assert rtl["dram_bytes"] == isa["dram_bytes"] > 0
    assert rtl["cycles"] > 0 and 0 < rtl["utilization"] <= 1
    assert isa["cycles"] is None  # the ISA simulator does not model time


def test_unknown_layer_is_a_clear_error(capsys):
    assert main(["simulate", "--layer", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no layer named 'nope'" in err and "conv1" in err


def test_infer_with_the_isa_engine_matches_golden(tmp_path):
    np.save(tmp_path / "x.npy", load_digits_split()[2][:4])
    for engine in ("golden", "isa"):
        assert main(["infer", "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / f"{engine}.npy"),
                     "--engine", engine]) == 0
    assert np.array_equal(np.load(tmp_path / "golden.npy"), np.load(tmp_path / "isa.npy"))
