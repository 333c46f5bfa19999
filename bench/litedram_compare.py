"""Our SDRAM controller against LiteDRAM on the ULX3S board's 32 MB x16 SDR SDRAM (ISSI
IS42S16160G-7) at 75 MHz: resources and Fmax out of context on the LFE5U-85F (CABGA381, speed
grade 6), bandwidth and read latency in simulation.

Cores:
- ours, `SdramMainMemory`: the accelerator's memory port and the host port in front of the
  controller (`boards.sdram.memory`);
- ours, `SdramController` alone, its native command port (`boards.sdram.controller`);
- LiteDRAM: `GENSDRPHY` + `LiteDRAMCore` (module `IS42S16160`, CAS latency 2) with one native
  port, generated to Verilog with migen; with its CSR bank (the only way to initialize the chip
  is software writing the DFI injector's CSRs), and without it (the CSRs then keep their reset
  values and Yosys folds them, as a lower bound).

Implementation: each core in a harness whose user-port inputs come from a shift chain fed by one
pin and whose user-port outputs go through registers to pins (the chain and the output registers
are `keep`, and their flip-flops are subtracted from the FF column); the SDRAM pins are top-level
ports at the ULX3S board's sites, the clock pin at G2. The SDRAM clock is an ODDRX1F sending
(0, 1): `sync` inverted, as `boards.sdram.phy` does, for all cores. The same Yosys script as
`boards.implement` (`proc; splitnets`, `synth_ecp5`) and nextpnr-ecp5 `--85k --package CABGA381
--speed 6 --freq 75`. LUT = TRELLIS_COMB placed (a LUT4 or half a carry cell), FF = TRELLIS_FF
cells, BRAM = DP16KD.

Bandwidth: sequential 8-beat bursts, refreshes included, bytes per cycle from the first command
taken to the last beat against the 16-bit bus's peak of 2 B/cycle, in four runs: read only,
write only, alternating (one port: 8 reads, then 8 writes in the next bank, and so on) and
concurrent (a read stream and a write stream at once, in different banks). Ours through
`tests/sdram_helpers.py` against our datasheet chip model (`sim.sdram`), as
`bench/sdram_bandwidth.py` does (its accelerator port has separate read and write streams, so no
alternating run); LiteDRAM's native ports (the concurrent run: a second port) in migen simulation
against `litedram.phy.model.SDRAMPHYModel` with the IS42S16160's timings and 64 rows instead of
8192 (the full model memory takes over 20 GB in migen's simulator). Read latency: command taken
to the first read data, to a closed row (the first access) and to the open row (the next burst,
20 idle cycles after the first one's last beat); ours from `rd_req` to `rd_data` of
`SdramMainMemory` (its request register and read FIFO included), LiteDRAM's from `cmd` to `rdata`
of the native port. The default 4 KiB per run takes migen about a minute per run.

Needs the optional dependencies (`pip install -e .[litedram]`: litedram, litex, migen) and the
yowasp tools. Not a test: nothing imports it.

Usage: python bench/litedram_compare.py [--mhz 75] [--kib 4] [--workdir DIR] [--skip-pnr] [--skip-sim]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

try:
    import migen
    from litedram.modules import IS42S16160
    from litedram.phy.gensdrphy import GENSDRPHY
    from litedram.phy.model import SDRAMPHYModel
    from litex.soc.interconnect import csr_bus
except ImportError as missing:
    sys.exit(f"{missing}: this benchmark needs LiteDRAM; install it with `pip install -e .[litedram]` "
             "(litedram, litex, migen)")

from amaranth.back import verilog as amaranth_verilog  # noqa: E402
from amaranth.hdl import Cat, ClockSignal, Const, Elaboratable, Instance, IOPort, Module, Signal, Value  # noqa: E402
from amaranth.lib import io, wiring  # noqa: E402
from amaranth_boards.ulx3s import ULX3S_85F_Platform  # noqa: E402

from boards.ddr3.litedram import litedram_core  # noqa: E402
from boards.devices import device  # noqa: E402
from boards.report import BuildReport, parse_reports  # noqa: E402
from boards.sdram.controller import SdramController  # noqa: E402
from boards.sdram.phy import CLOCK_PHASES  # noqa: E402
from boards.toolchain import run_script  # noqa: E402
from boards.yosys import PREPARE, SYNTH  # noqa: E402
from sdram_helpers import (BURST_BEATS, Throughput, measure_mixed, measure_reads, measure_writes,  # noqa: E402
                           memory, read_latency)
from sim.sdram.chips import IS42S16160G_7  # noqa: E402

DEVICE = device("ecp5-85f")
PEAK = 2  # bytes per cycle: one 16-bit word
OTHER_BANK = 1 << 10  # byte offset of the same row in the next bank (both cores: 512 columns, row-bank-column)
LITEDRAM_START = 100  # cycles before the first command (the model needs no initialization)
CLOCK_PIN = "G2"  # the ULX3S board's oscillator pin, a primary clock input
ADDRESS_BITS = 25  # a byte address in 32 MB: the used bits of the 32-bit memory-port addresses
BOARD_PADS = {"clk_en": "cke", "cs": "cs_n", "we": "we_n", "ras": "ras_n", "cas": "cas_n", "dqm": "dm"}
"""The board's SDRAM subsignals named otherwise in `SDRAM_PADS`."""
SDRAM_PADS = {"a": 13, "ba": 2, "cs_n": 1, "cke": 1, "ras_n": 1, "cas_n": 1, "we_n": 1, "dq": 16, "dm": 2}
"""The chip's pins but its clock (LiteDRAM's pad names): top-level ports `sdram_<name>`."""
HARNESS_NETS = ("chain", "dout")  # the harness' registers: the input shift chain, the output registers


# ---- the harness around our cores (Amaranth) --------------------------------------------------

class AmaranthHarness(Elaboratable):
    """`core` (with `sdram`: `SDRAM_PINS`) with its other inputs from a shift chain fed by `din`
    and its other outputs registered to `dout`; the SDRAM pins are top-level ports."""

    def __init__(self, core: wiring.Component):
        self.core = core
        self.din = Signal()
        self.inputs, self.outputs = [], []
        for path, member, value in core.signature.flatten(core):
            value = Value.cast(value)
            if path[0] != "sdram" and not isinstance(value, Const):  # a Const: an always-ready stream
                bits = value[:ADDRESS_BITS] if path[-1] == "addr" and len(value) > ADDRESS_BITS else value
                (self.inputs if member.flow == wiring.In else self.outputs).append(bits)
        self.dout = Signal(sum(len(value) for value in self.outputs))
        self.pins = {name: IOPort(width, name=f"sdram_{name}") for name, width in {**SDRAM_PADS, "clk": 1}.items()}

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.core = core = self.core
        chain = Signal(sum(len(value) for value in self.inputs), attrs={"keep": 1})
        m.d.sync += [chain.eq(Cat(self.din, chain[:-1])), self.dout.eq(Cat(*self.outputs))]
        m.d.comb += Cat(*self.inputs).eq(chain)
        m.submodules.clock = Instance("ODDRX1F", i_SCLK=ClockSignal(), i_RST=0, i_D0=CLOCK_PHASES[0],
                                      i_D1=CLOCK_PHASES[1], o_Q=self.pins["clk"])
        sdram = core.sdram
        for name in SDRAM_PADS.keys() - {"dq"}:
            m.submodules[f"sdram_{name}"] = buffer = io.Buffer("o", io.SingleEndedPort(self.pins[name]))
            m.d.comb += buffer.o.eq(getattr(sdram, "dqm" if name == "dm" else name))
        m.submodules.sdram_dq = dq = io.Buffer("io", io.SingleEndedPort(self.pins["dq"]))
        m.d.comb += [dq.o.eq(sdram.dq_o), dq.oe.eq(sdram.dq_oe), sdram.dq_i.eq(dq.i)]
        return m


def amaranth_design(core: wiring.Component) -> str:
    """`core` in its harness as Verilog (top module `top`)."""
    harness = AmaranthHarness(core)
    return amaranth_verilog.convert(harness, name="top", ports=[harness.din, harness.dout])


# ---- LiteDRAM (migen) -------------------------------------------------------------------------

class LiteDramHarness(migen.Module):
    """GENSDRPHY + LiteDRAMCore with one native port (and the CSR bank if `csr`) in the same
    harness as `AmaranthHarness`."""

    def __init__(self, mhz: float, csr: bool):
        self.clock_domains.cd_sys = migen.ClockDomain("sys")
        self.cd_sys.clk.name_override, self.cd_sys.rst.name_override = "clk", "rst"
        self.pads = migen.Record(list(SDRAM_PADS.items()), name="sdram")
        self.sdram_clk = migen.Signal(name_override="sdram_clk")
        self.specials += migen.Instance("ODDRX1F", i_SCLK=migen.ClockSignal("sys"), i_RST=0, i_D0=CLOCK_PHASES[0],
                                        i_D1=CLOCK_PHASES[1], o_Q=self.sdram_clk)
        self.submodules.phy = GENSDRPHY(self.pads, mhz * 1e6)
        core, port = litedram_core(self.phy, IS42S16160(mhz * 1e6, "1:1"))
        self.submodules.core = core
        inputs = [port.cmd.valid, port.cmd.we, port.cmd.addr, port.wdata.valid, port.wdata.data, port.wdata.we,
                  port.rdata.ready]
        outputs = [port.cmd.ready, port.wdata.ready, port.rdata.valid, port.rdata.data]
        if csr:
            bus = csr_bus.Interface(data_width=32, address_width=14)
            self.submodules.csr_bank = csr_bus.CSRBank(core.get_csrs(), bus=bus)
            inputs += [bus.adr, bus.we, bus.re, bus.dat_w]
            outputs += [bus.dat_r]
        self.din = migen.Signal(name_override="din")
        chain = migen.Signal(sum(len(value) for value in inputs), attr={("keep", 1)}, name_override="chain")
        self.dout = migen.Signal(sum(len(value) for value in outputs), name_override="dout")
        self.sync += [chain.eq(migen.Cat(self.din, chain[:-1])), self.dout.eq(migen.Cat(*outputs))]
        self.comb += migen.Cat(*inputs).eq(chain)


def litedram_design(mhz: float, csr: bool) -> str:
    """LiteDRAM in its harness as Verilog (top module `top`)."""
    from migen.fhdl import verilog
    top = LiteDramHarness(mhz, csr)
    ios = {top.cd_sys.clk, top.cd_sys.rst, top.din, top.dout, top.sdram_clk, *top.pads.flatten()}
    return str(verilog.convert(top, ios=ios, name="top"))


# ---- implementation ---------------------------------------------------------------------------

def constraints(mhz: float) -> str:
    """The LPF: the clock pin and its frequency, the SDRAM pins at the ULX3S board's sites (the
    user-port pins `din`, `dout` are left to nextpnr)."""
    resource = ULX3S_85F_Platform().lookup("sdram", 0)
    lines = ["BLOCK ASYNCPATHS;", "BLOCK RESETPATHS;", f'LOCATE COMP "clk" SITE "{CLOCK_PIN}";',
             'IOBUF PORT "clk" IO_TYPE=LVCMOS33;', f'FREQUENCY PORT "clk" {mhz * 1e6:.0f} HZ;']
    attrs = " ".join(f"{key}={value}" for key, value in resource.attrs.items())
    for subsignal in resource.ios:
        port = f"sdram_{BOARD_PADS.get(subsignal.name, subsignal.name)}"
        sites = subsignal.ios[0].names
        for index, site in enumerate(sites):
            name = port if len(sites) == 1 else f"{port}[{index}]"
            lines += [f'LOCATE COMP "{name}" SITE "{site}";', f'IOBUF PORT "{name}" {attrs};']
    return "\n".join(lines) + "\n"


def harness_flip_flops(netlist: Path) -> int:
    """Flip-flops of the synthesized `netlist` (Yosys JSON) whose output is a harness register."""
    top = json.loads(netlist.read_text())["modules"]["top"]
    bits = {bit for name, net in top["netnames"].items() if name.split("[")[0] in HARNESS_NETS  # split by splitnets
            for bit in net["bits"]}
    return sum(cell["type"] == "TRELLIS_FF" and cell["connections"]["Q"][0] in bits
               for cell in top["cells"].values())


def place_and_route(verilog: str, mhz: float, workdir: Path) -> BuildReport:
    """Synthesize and place and route `verilog` (top module `top`) in `workdir` with the project's
    Yosys script and nextpnr-ecp5 options; the report with the harness' flip-flops taken off."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "top.v").write_text(verilog)
    (workdir / "top.lpf").write_text(constraints(mhz))
    (workdir / "top.ys").write_text(f"read_verilog top.v\n{PREPARE['ecp5']}\n{SYNTH['ecp5']} -top top\n"
                                    "tee -q -o top.stat.json stat -json\nwrite_json top.json\n")
    nextpnr = " ".join(["\"$NEXTPNR_ECP5\" --quiet --log top.tim", *DEVICE.nextpnr_args, "--speed 6",
                        f"--freq {mhz:g}", "--json top.json --lpf top.lpf --lpf-allow-unconstrained",
                        "--report top.report.json",
                        "--timing-allow-fail"])
    (workdir / "build.sh").write_text(f"set -e\n\"$YOSYS\" -q -l top.rpt top.ys\n{nextpnr}\n")
    start = time.monotonic()
    run_script(workdir / "build.sh", "ecp5", (workdir / "top.rpt", workdir / "top.tim"))
    report = parse_reports(workdir / "top.report.json", workdir / "top.stat.json", DEVICE, mhz,
                           time.monotonic() - start)
    core_ffs = report.resources.ff - harness_flip_flops(workdir / "top.json")
    return replace(report, resources=replace(report.resources, ff=core_ffs))


# ---- LiteDRAM bandwidth in migen simulation ---------------------------------------------------

class SimulatedIS42S16160(IS42S16160):
    """The IS42S16160 with 64 rows instead of 8192: the same timings, but a model memory that
    migen's simulator can hold (the full one takes over 20 GB); the runs use a few rows."""

    nrows = 64

    def __init__(self, clk_freq: float, rate: str):
        super().__init__(clk_freq, rate)
        self.geom_settings.addressbits = 13  # A12..0 as on the chip (A10 selects PRECHARGE ALL)


class LiteDramModelTop(migen.Module):
    """LiteDRAMCore on `SDRAMPHYModel` (the settings of GENSDRPHY at `mhz`) with `ports` native ports."""

    def __init__(self, mhz: float, ports: int):
        settings = GENSDRPHY(migen.Record(list(SDRAM_PADS.items())), mhz * 1e6).settings
        module = SimulatedIS42S16160(mhz * 1e6, "1:1")
        self.submodules.model = SDRAMPHYModel(module, settings, clk_freq=mhz * 1e6)
        self.submodules.core, port = litedram_core(self.model, module)
        self.ports = [port] + [self.core.crossbar.get_port() for _ in range(ports - 1)]
        self.dfi = self.model.dfi.p0


@dataclass
class NativeLog:
    """Cycles of one native port's handshakes."""

    commands: list[int] = field(default_factory=list)
    write_beats: list[int] = field(default_factory=list)
    read_beats: list[int] = field(default_factory=list)


Commands = list[tuple[int, bool]]  # (word address, write)


def port_processes(port, commands: Commands, start: int, waits: dict[int, tuple[int, int]], log: NativeLog
                   ) -> list[Iterator]:
    """migen generators running `commands` on native `port` from cycle `start`, back to back but
    for `waits` (command index -> read beats to wait for, then idle cycles, before it); write
    data offered for every write, read data always taken. Each counts its own cycles."""
    writes = sum(write for _, write in commands)

    def drive() -> Iterator:
        cycle = 0
        for index, (addr, write) in enumerate(commands):
            beats, idle = waits.get(index, (0, start if index == 0 else 0))
            if beats or idle:
                yield port.cmd.valid.eq(0)
            while len(log.read_beats) < beats:
                yield
                cycle += 1
            for _ in range(idle):
                yield
                cycle += 1
            yield port.cmd.valid.eq(1)
            yield port.cmd.addr.eq(addr)
            yield port.cmd.we.eq(write)
            yield
            cycle += 1
            while not (yield port.cmd.ready):
                yield
                cycle += 1
            log.commands.append(cycle)
        yield port.cmd.valid.eq(0)
        while len(log.read_beats) < len(commands) - writes:
            yield

    def write_data() -> Iterator:
        cycle = 0
        yield port.wdata.we.eq(0b11)
        while len(log.write_beats) < writes:
            yield port.wdata.valid.eq(1)
            yield port.wdata.data.eq(len(log.write_beats))
            yield
            cycle += 1
            if (yield port.wdata.ready):
                log.write_beats.append(cycle)
        yield port.wdata.valid.eq(0)

    @migen.passive
    def read_data() -> Iterator:
        cycle = 0
        yield port.rdata.ready.eq(1)
        while True:
            yield
            cycle += 1
            if (yield port.rdata.valid):
                log.read_beats.append(cycle)

    return [drive(), write_data(), read_data()]


def litedram_run(mhz: float, streams: list[Commands], start: int,
                 waits: dict[int, tuple[int, int]] | None = None) -> tuple[list[NativeLog], list[int]]:
    """Simulate each of `streams` on its own native port at once (`port_processes`; `waits` for
    the first); the ports' logs and the cycles of the AUTO REFRESH commands on the DFI."""
    top = LiteDramModelTop(mhz, len(streams))
    logs, refreshes = [NativeLog() for _ in streams], []
    processes = [process for index, (port, commands, log) in enumerate(zip(top.ports, streams, logs))
                 for process in port_processes(port, commands, start, waits or {} if index == 0 else {}, log)]

    @migen.passive
    def monitor() -> Iterator:
        cycle, dfi = 0, top.dfi
        while True:
            yield
            cycle += 1
            if not ((yield dfi.cs_n) or (yield dfi.ras_n) or (yield dfi.cas_n)) and (yield dfi.we_n):
                refreshes.append(cycle)

    migen.run_simulation(top, processes + [monitor()])
    return logs, refreshes


def throughput(run: tuple[list[NativeLog], list[int]], size: int) -> Throughput:
    """Bytes per cycle of a run moving `size` bytes: first command taken to last beat."""
    logs, refreshes = run
    first = min(log.commands[0] for log in logs)
    last = max(max(log.commands + log.write_beats + log.read_beats) for log in logs)
    return Throughput(size, last + 1 - first, sum(first <= cycle <= last for cycle in refreshes))


def litedram_bandwidth(mhz: float, size: int) -> dict[str, Throughput]:
    """Runs over `size` bytes: read-only, write-only, and mixed (half read, half written, the
    writes in the next bank) on one port in alternating 8-beat bursts and on two ports at once."""
    words = size // 2
    other = OTHER_BANK // 2
    reads = [(addr, False) for addr in range(words // 2)]
    writes = [(other + addr, True) for addr in range(words // 2)]
    alternating = [command for burst in range(0, words // 2, BURST_BEATS)
                   for stream in (reads, writes) for command in stream[burst:burst + BURST_BEATS]]
    runs = {"read": [[(addr, False) for addr in range(words)]], "write": [[(addr, True) for addr in range(words)]],
            "alternating": [alternating], "concurrent": [reads, writes]}
    return {name: throughput(litedram_run(mhz, streams, LITEDRAM_START), size) for name, streams in runs.items()}


def litedram_latency(mhz: float) -> tuple[int, int]:
    """Cycles from a read command taken to its data: to a closed row (the first access) and to
    the open row (the next burst, 20 cycles after the first burst's last beat)."""
    burst = [(addr, False) for addr in range(2 * BURST_BEATS)]
    (log,), _ = litedram_run(mhz, [burst], LITEDRAM_START, {BURST_BEATS: (BURST_BEATS, 20)})
    return (log.read_beats[0] - log.commands[0], log.read_beats[BURST_BEATS] - log.commands[BURST_BEATS])


# ---- the table --------------------------------------------------------------------------------

@dataclass
class Row:
    """One core's figures (None: not measured)."""

    core: str
    report: BuildReport | None = None
    bandwidth: dict[str, Throughput] = field(default_factory=dict)  # by `RUNS` name
    latency: tuple[int, int] | None = None

    def cells(self) -> list[str]:
        res = self.report.resources if self.report else None
        fmax = f"{min(self.report.fmax_mhz.values()):.1f}" if self.report and self.report.fmax_mhz else "-"
        rates = [f"{self.bandwidth[run].bytes_per_cycle:.3f}" if run in self.bandwidth else "-" for run in RUNS]
        latency = f"{self.latency[0]} / {self.latency[1]}" if self.latency else "-"
        return [self.core, *(str(getattr(res, name)) if res else "-" for name in ("lut", "ff", "bram")), fmax,
                *rates, latency]


RUNS = ("read", "write", "alternating", "concurrent")  # the bandwidth runs (`litedram_bandwidth`)
HEADERS = ["core", "LUT", "FF", "BRAM", "Fmax MHz", "read B/c", "write B/c", "alt. r/w B/c", "conc. r+w B/c",
           "rd lat closed/open"]


def table(rows: list[Row]) -> str:
    cells = [HEADERS] + [row.cells() for row in rows]
    widths = [max(len(line[column]) for line in cells) for column in range(len(HEADERS))]
    return "\n".join("  ".join(cell.ljust(width) if column == 0 else cell.rjust(width)
                               for column, (cell, width) in enumerate(zip(line, widths))) for line in cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mhz", type=float, default=75)
    parser.add_argument("--kib", type=int, default=4,
                        help="KiB moved per bandwidth run (mixed runs: half read, half written)")
    parser.add_argument("--workdir", type=Path, help="keep the build files here (default: a temporary folder)")
    parser.add_argument("--skip-pnr", action="store_true", help="no synthesis or place and route")
    parser.add_argument("--skip-sim", action="store_true", help="no bandwidth or latency simulation")
    args = parser.parse_args()
    mhz, size = args.mhz, args.kib * 1024
    start = time.monotonic()
    designs: dict[str, Callable[[], str]] = {
        "ours: SdramMainMemory": lambda: amaranth_design(memory(IS42S16160G_7, mhz)),
        "ours: SdramController": lambda: amaranth_design(SdramController(IS42S16160G_7, mhz)),
        "LiteDRAM + CSR bank": lambda: litedram_design(mhz, csr=True),
        "LiteDRAM, no CSR bank": lambda: litedram_design(mhz, csr=False),
    }
    rows = {name: Row(name) for name in designs}
    if not args.skip_pnr:
        with tempfile.TemporaryDirectory(prefix="litedram-compare-") as scratch:
            base = args.workdir or Path(scratch)
            for index, (name, build) in enumerate(designs.items()):
                rows[name].report = place_and_route(build(), mhz, base / f"core{index}")
                print(f"{name}: placed and routed in {rows[name].report.build_seconds:.0f} s", file=sys.stderr)
    if not args.skip_sim:
        chip = replace(IS42S16160G_7, power_up_ns=300)
        ours = rows["ours: SdramMainMemory"]
        ours.bandwidth = {"read": measure_reads(chip, mhz, size), "write": measure_writes(chip, mhz, size),
                          "concurrent": measure_mixed(chip, mhz, size // 2, 0, OTHER_BANK)}
        ours.latency = read_latency(chip, mhz)
        bandwidth, latency = litedram_bandwidth(mhz, size), litedram_latency(mhz)
        for name in ("LiteDRAM + CSR bank", "LiteDRAM, no CSR bank"):
            rows[name].bandwidth, rows[name].latency = bandwidth, latency
    print(f"IS42S16160G-7 at {mhz:g} MHz on the LFE5U-85F (CABGA381, speed 6); sequential {BURST_BEATS}-beat "
          f"bursts, {args.kib} KiB per run, peak {PEAK} B/cycle; FF without the harness' registers")
    print(table(list(rows.values())))
    for row in rows.values():
        if row.bandwidth:
            counts = ", ".join(f"{name} {run.refreshes}" for name, run in row.bandwidth.items())
            print(f"refreshes within the runs, {row.core}: {counts}")
    print(f"({time.monotonic() - start:.0f} s)")


if __name__ == "__main__":
    main()
