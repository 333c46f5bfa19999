"""A network with a Sigmoid inside and a trailing Softmax (the model of tests/test_host_partition.py)
through `hwgen infer`, `simulate --engine amaranth` and `run --board icebreaker --port sim`: prints
each segment's bit-exactness and cycles, and the outputs' largest difference from the float model
in onnxruntime. Writes its files to rtl_out/host_operators/."""
from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import numpy as np
import onnx
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from soc_helpers import TINY  # noqa: E402
from test_host_partition import calibration, float_model, host_inside_model, inputs  # noqa: E402

from cli.main import main  # noqa: E402


def hwgen(*argv: str) -> dict | str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    if code != 0:
        raise SystemExit(f"hwgen {' '.join(argv)}: exit {code}")
    text = out.getvalue()
    return json.loads(text) if "--json" in argv else text.strip()


def main_bench() -> None:
    folder = ROOT / "rtl_out" / "host_operators"
    folder.mkdir(parents=True, exist_ok=True)
    model, cal, x, hw = (folder / name for name in ("model.onnx", "calibration.npy", "x.npy", "tiny.yaml"))
    onnx.save(host_inside_model(), model)
    np.save(cal, calibration())
    np.save(x, inputs(2))
    hw.write_text(yaml.safe_dump(TINY.to_dict()))
    common = ("--input", str(x), "--hw", str(hw), "--calibration", str(cal))
    print(hwgen("infer", str(model), "--output", str(folder / "y.npy"), "--engine", "isa", *common))
    infer_error = np.abs(np.load(folder / "y.npy") - float_model(inputs(2))).max()
    print(f"infer (isa): largest difference from the float model {infer_error:.4f}")
    record = hwgen("simulate", str(model), "--engine", "amaranth", *common, "--json")
    for segment in record["segments"]:
        print(f"simulate (amaranth) {segment['network']}: bit-exact {segment['bit_exact']}, "
              f"{segment['cycles']} cycles measured, {segment['predicted_cycles']} predicted")
    print(f"simulate: largest difference from the float model {record['float_reference_max_abs_error']:.4f}")
    record = hwgen("run", "--board", "icebreaker", "--port", "sim", str(model), *common, "--json")
    for segment in record["segments"]:
        cycles = [sample["counters"]["cycles"] for sample in segment["samples"]]
        print(f"run --port sim {segment['network']}: bit-exact {segment['bit_exact']}, cycles per sample {cycles}")
    print(f"run: largest difference from the float model {record['float_reference_max_abs_error']:.4f}")


if __name__ == "__main__":
    main_bench()
