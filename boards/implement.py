"""One implementation run: an Amaranth build plan (bare device or board) through Yosys,
nextpnr and the bitstream packer, with the project's additions to the platform's scripts:

- Yosys: `-dsp` on iCE40 and the preserved-cell stubs (`boards.yosys`), `PREPARE` before
  synthesis (an abc9 name clash on Amaranth output; area mapping on iCE40), the hierarchy of
  the blocks a report itemizes kept (`keep_hierarchy`: their own cells in the statistics),
  cell statistics as JSON;
- nextpnr: a JSON report (`--report`) and `--timing-allow-fail`, so a design that misses
  timing still yields its report and bitstream and the caller decides what a miss means.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from boards.devices import Device
from boards.toolchain import ToolchainError, run_script
from boards.yosys import PREPARE, SYNTH_OPTIONS, family_sources, retype_command

NAME = "top"
STAT_FILE = f"{NAME}.stat.json"
REPORT_FILE = f"{NAME}.report.json"
BITSTREAM = {"ice40": f"{NAME}.bin", "ecp5": f"{NAME}.bit"}
NEXTPNR_STAGES = (("Program finished normally", "writing the bitstream"), ("Routing..", "routing"),
                  ("Creating initial", "placement"), ("Packing", "packing cells"))
"""Markers in nextpnr's log, latest stage first, and the stage each begins."""

Progress = Callable[[str, float], None]
"""Called with the flow's stage (`flow_stage`) and the seconds since it started."""


@dataclass(frozen=True)
class FlowProducts:
    """Files of a finished run (in `workdir`) and its wall-clock time."""

    workdir: Path
    family: str
    seconds: float

    @property
    def stat(self) -> Path:
        return self.workdir / STAT_FILE

    @property
    def report(self) -> Path:
        return self.workdir / REPORT_FILE

    @property
    def bitstream(self) -> Path:
        return self.workdir / BITSTREAM[self.family]

    @property
    def logs(self) -> tuple[Path, Path]:
        """Yosys' and nextpnr's logs."""
        return self.workdir / f"{NAME}.rpt", self.workdir / f"{NAME}.tim"


def overrides(device: Device, kept: tuple[str, ...] = ()) -> dict[str, str]:
    """Template overrides of the Amaranth Lattice platforms for `device` (DSP mapping only on
    a part that has DSPs), keeping the modules named `kept` (Amaranth's hierarchical names,
    `top.soc.memory`) as modules of their own."""
    family = device.family
    after_synth = "; ".join(filter(None, [retype_command(family), f"tee -q -o {STAT_FILE} stat -json"]))
    keep = [f"setattr -mod -set keep_hierarchy 1 {name}" for name in kept]
    return {
        "synth_opts": SYNTH_OPTIONS[family] if device.totals.dsp else "",
        "script_after_read": "; ".join([PREPARE[family], *keep]),
        "script_after_synth": after_synth,
        "nextpnr_opts": f"--report {REPORT_FILE} --timing-allow-fail",
    }


def flow_stage(workdir: Path) -> str:
    """What a run in `workdir` is doing: "synthesis" until nextpnr's log appears, then the stage
    its log has reached (`NEXTPNR_STAGES`)."""
    log = workdir / f"{NAME}.tim"
    if not log.exists():
        return "synthesis"
    text = log.read_text(errors="replace")
    return next((stage for marker, stage in NEXTPNR_STAGES if marker in text), "reading the netlist")


def implement(platform, top, device: Device, workdir: Path, kept: tuple[str, ...] = (),
              progress: Progress | None = None) -> FlowProducts:
    """Elaborate `top` on `platform` (an Amaranth Lattice platform for `device`), write the
    build files into `workdir` and run synthesis (the modules named `kept` not flattened),
    place and route and packing there, telling `progress` the stage as it runs."""
    for file_name, text in family_sources(device.family).items():
        platform.add_file(file_name, text)
    plan = platform.prepare(top, name=NAME, **overrides(device, kept))
    plan.extract(workdir)
    products = FlowProducts(workdir, device.family, 0.0)
    start = time.monotonic()
    poll = None if progress is None else lambda: progress(flow_stage(workdir), time.monotonic() - start)
    try:
        run_script(workdir / f"{plan.script}.sh", device.family, products.logs, poll)
    except ToolchainError as error:
        overflow = overflowing_bels(products.logs[1])
        if overflow:
            raise FitError(f"the design does not fit {device.name}: needs {overflow}") from error
        raise
    return FlowProducts(workdir, device.family, time.monotonic() - start)


class FitError(ToolchainError):
    """The design needs more of a resource than the device has."""


def overflowing_bels(nextpnr_log: Path) -> str:
    """The BEL types nextpnr's utilisation table shows over 100 %, as `used/available TYPE`
    (empty when none or without a log)."""
    if not nextpnr_log.exists():
        return ""
    rows = re.findall(r"Info:\s+(\w+):\s+(\d+)/\s*(\d+)", nextpnr_log.read_text())
    return ", ".join(f"{used}/{total} {bel}" for bel, used, total in rows if int(used) > int(total))
