"""Synthesis and place-and-route reports: resource use against the device's totals, Fmax
per clock against its target, the worst path, build time.

Sources: nextpnr's `--report` JSON (`utilization` per BEL type, `fmax` per clock with its
constraint, `critical_paths`) and Yosys' `stat -json` (flip-flop cells). LUTs are the logic
cells nextpnr placed (ICESTORM_LC on iCE40: a LUT4 with its flip-flop and carry; TRELLIS_COMB
on ECP5: a LUT4 or half a carry cell); FFs are the flip-flop cells Yosys mapped; DSPs are
multiplier blocks (SB_MAC16 / MULT18X18D), BRAMs SB_RAM40_4K / DP16KD, SPRAMs SB_SPRAM256KA.
A block synthesized as a module of its own (`boards.implement`, the main memory of a board's
SoC) is itemized from its Yosys cells (`boards.devices.cell_resources`).
"""
from __future__ import annotations

import io
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from boards.devices import Device, Resources, cell_resources
from common.errors import HwgenError
from common.files import atomic_write_text

REPORT_JSON = "report.json"
REPORT_TEXT = "report.txt"
BELS = {
    "ice40": {"lut": "ICESTORM_LC", "dsp": "ICESTORM_DSP", "bram": "ICESTORM_RAM", "spram": "ICESTORM_SPRAM"},
    "ecp5": {"lut": "TRELLIS_COMB", "dsp": "MULT18X18D", "bram": "DP16KD"},
}
FF_CELLS = {"ice40": "SB_DFF", "ecp5": "TRELLIS_FF"}
"""Yosys cell types (prefixes) of flip-flops."""


class ReportError(HwgenError):
    """A report is missing or unreadable."""


@dataclass(frozen=True)
class PathStep:
    """One step of a timing path: its kind (clk-to-q, routing, logic, setup), where it
    starts and ends (`cell.port`) and its delay."""

    kind: str
    start: str
    end: str
    delay_ns: float


@dataclass(frozen=True)
class WorstPath:
    """The critical path of the slowest clock: from its first cell to its last, total delay."""

    clock: str
    start: str
    end: str
    delay_ns: float
    steps: tuple[PathStep, ...] = ()

    def describe(self) -> str:
        return f"{self.start} -> {self.end} ({self.delay_ns:.2f} ns, clock {self.clock})"


@dataclass(frozen=True)
class BuildReport:
    """What one synthesis + place-and-route run achieved on `device` (a `boards.devices` name)."""

    device: str
    target_mhz: float
    fmax_mhz: dict[str, float]
    timing_met: bool
    resources: Resources
    totals: Resources
    build_seconds: float
    worst_path: WorstPath | None = None
    clock_targets_mhz: dict[str, float] = field(default_factory=dict)
    board: str | None = None
    utilization: dict[str, tuple[int, int]] = field(default_factory=dict)
    blocks: dict[str, Resources] = field(default_factory=dict)
    """Resources of itemized blocks, by a label saying what each is."""

    def to_dict(self) -> dict:
        out = asdict(self)
        out["utilization"] = {bel: list(pair) for bel, pair in self.utilization.items()}
        return out

    @classmethod
    def from_dict(cls, data: dict) -> BuildReport:
        path = data.get("worst_path")
        worst = None if path is None else WorstPath(**{**path, "steps": tuple(PathStep(**s) for s in path["steps"])})
        return cls(**{**data, "resources": Resources(**data["resources"]), "totals": Resources(**data["totals"]),
                      "worst_path": worst, "utilization": {k: tuple(v) for k, v in data["utilization"].items()},
                      "blocks": {label: Resources(**r) for label, r in data.get("blocks", {}).items()}})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_json(cls, text: str) -> BuildReport:
        return cls.from_dict(json.loads(text))

    def table(self) -> Table:
        """The report as a rich table: resources with their use, then clocks."""
        title = f"{self.board} ({self.device})" if self.board else self.device
        table = Table(title=f"{title}: {'timing met' if self.timing_met else 'TIMING FAILED'}, "
                            f"built in {self.build_seconds:.0f} s")
        for column in ("resource", "used", "available", "use"):
            table.add_column(column, justify="left" if column == "resource" else "right")
        for name, label in (("lut", "LUTs (logic cells)"), ("ff", "flip-flops"), ("dsp", "DSP multipliers"),
                            ("bram", "block RAMs"), ("spram", "SPRAMs")):
            used, total = getattr(self.resources, name), getattr(self.totals, name)
            share = f"{100 * used / total:.1f} %" if total else ("-" if not used else "over")
            table.add_row(label, str(used), str(total), share)
        for block, used in self.blocks.items():
            for name, label in (("lut", "LUTs"), ("ff", "flip-flops"), ("dsp", "DSP multipliers"), ("bram", "block RAMs")):
                if getattr(used, name) or name in ("lut", "ff"):
                    table.add_row(f"  {label} in {block}", str(getattr(used, name)), "", "")
        for clock, fmax in self.fmax_mhz.items():
            target = self.clock_targets_mhz.get(clock, self.target_mhz)
            verdict = "met" if fmax >= target else "FAILED"
            table.add_row(f"Fmax {clock}", f"{fmax:.2f} MHz", f"{target:.2f} MHz", verdict)
        if self.worst_path is not None:
            table.caption = f"worst path: {self.worst_path.describe()}"
        return table

    def text(self) -> str:
        """The table rendered as plain text."""
        console = Console(width=100, record=True, file=io.StringIO())
        console.print(self.table())
        return console.export_text()

    def save(self, directory: Path) -> None:
        """Write `report.json` and `report.txt` into `directory` (atomically)."""
        atomic_write_text(directory / REPORT_JSON, self.to_json() + "\n")
        atomic_write_text(directory / REPORT_TEXT, self.text())


def load_report(directory: Path) -> BuildReport:
    """The report saved in `directory`; a missing or unreadable one is a `ReportError`."""
    path = Path(directory) / REPORT_JSON
    if not path.is_file():
        raise ReportError(f"{directory}: no {REPORT_JSON} (write one with `hwgen synth` or `hwgen build`)")
    try:
        return BuildReport.from_json(path.read_text())
    except (ValueError, KeyError, TypeError) as error:
        raise ReportError(f"{path}: not a build report ({error})") from None


def _read_json(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except OSError as error:
        raise ReportError(f"{path}: cannot read ({error.strerror})") from None
    except ValueError as error:
        raise ReportError(f"{path}: not JSON ({error})") from None


def yosys_flip_flops(stat: dict, family: str) -> int:
    """Flip-flop cells in a Yosys `stat -json` document (the design's top module)."""
    top = stat.get("design", stat)
    cells = top.get("num_cells_by_type", {})
    return sum(count for cell, count in cells.items() if cell.startswith(FF_CELLS[family]))


def worst_path(nextpnr: dict) -> WorstPath | None:
    """The longest register-to-register path within one clock among nextpnr's critical paths
    (paths from or to I/O, `<async>`, only when there is none), or None without any path."""
    paths = []
    for entry in nextpnr.get("critical_paths", []):
        steps = tuple(PathStep(step["type"], _endpoint(step["from"]), _endpoint(step["to"]), float(step["delay"]))
                      for step in entry.get("path", []))
        if steps:
            start, end = (_clock(entry[side]) for side in ("from", "to"))
            clock = start if start == end else f"{start} -> {end}"
            paths.append(WorstPath(clock, steps[0].start, steps[-1].end, round(sum(s.delay_ns for s in steps), 3), steps))
    internal = [path for path in paths if "->" not in path.clock and path.clock != "<async>"]
    return max(internal or paths, key=lambda path: path.delay_ns, default=None)


def _clock(edge: str) -> str:
    """`posedge NET` -> the clock domain of NET."""
    return clock_domain(edge.split(" ", 1)[1]) if edge.startswith(("posedge ", "negedge ")) else edge


def clock_domain(net: str) -> str:
    """The Amaranth clock domain a nextpnr clock net carries: `$glbnet$cd_sync.clk` and
    `cd_sync.clk_$glb_clk` (a domain the platform made) -> `sync`; `clk`, `$glbnet$clock.clk`
    (a `sync` domain's clock is named `clk` in the module that makes it) -> `sync`;
    `$glbnet$litedram.init_clk` (another domain's: `<domain>_clk`) -> `init`; any other net
    keeps its name."""
    bare = re.sub(r"^\$glbnet\$|_?\$glb_clk$", "", net)
    named = re.fullmatch(r"(?:.*\.)?cd_(\w+)\.clk", bare) or re.fullmatch(r"(?:[\w.]*\.)?(?:(\w+)_)?clk", bare)
    if named:
        return named[1] or "sync"
    return net


def _endpoint(point: dict) -> str:
    return f"{point['cell']}.{point['port']}"


def parse_reports(nextpnr_path: Path, stat_path: Path, device: Device, target_mhz: float, build_seconds: float,
                  board: str | None = None, blocks: dict[str, str] | None = None) -> BuildReport:
    """A `BuildReport` from nextpnr's JSON report and Yosys' statistics of one run; `blocks`
    maps a label to the name of a module the run kept (`boards.implement.implement`'s `kept`)."""
    nextpnr, stat = _read_json(nextpnr_path), _read_json(stat_path)
    try:
        utilization = {bel: (int(v["used"]), int(v["available"])) for bel, v in nextpnr["utilization"].items()}
        fmax = {clock_domain(net): float(v["achieved"]) for net, v in nextpnr["fmax"].items()}
        targets = {clock_domain(net): float(v["constraint"]) for net, v in nextpnr["fmax"].items()}
    except (KeyError, TypeError, ValueError) as error:
        raise ReportError(f"{nextpnr_path}: not a nextpnr report ({error!r} missing or malformed)") from None
    bels = BELS[device.family]
    used = {name: utilization.get(bel, (0, 0))[0] for name, bel in bels.items()}
    resources = Resources(lut=used["lut"], ff=yosys_flip_flops(stat, device.family), dsp=used["dsp"],
                          bram=used["bram"], spram=used.get("spram", 0))
    met = bool(fmax) and all(fmax[clock] >= targets[clock] for clock in fmax)
    itemized = {label: block_resources(stat, stat_path, module, device.family) for label, module in (blocks or {}).items()}
    return BuildReport(device=device.name, target_mhz=target_mhz, fmax_mhz=fmax, timing_met=met, resources=resources,
                       totals=device.totals, build_seconds=round(build_seconds, 1), worst_path=worst_path(nextpnr),
                       clock_targets_mhz=targets, board=board, utilization=utilization, blocks=itemized)


def block_resources(stat: dict, stat_path: Path, module: str, family: str) -> Resources:
    """The resources of `module`'s own cells in a Yosys `stat -json` document."""
    try:
        return cell_resources(family, stat["modules"][f"\\{module}"]["num_cells_by_type"])
    except (KeyError, TypeError):
        raise ReportError(f"{stat_path}: no statistics of module {module!r} (was it kept as a module?)") from None
