"""The generated LiteDRAM core (`boards.ddr3.litedram`) in an Amaranth design, with its clocks.

`LiteDramCore` adds the core's Verilog to the platform, instantiates it on the board's `ddram`
pins and makes the clock domains it needs (the ECP5 DDR clocking network, as LiteX's OrangeCrab
target arranges it):

- `sys2x` (the DDR3 clock, twice `sync`): an EHXPLLL from the board's 48 MHz oscillator, through
  an ECLKBRIDGECS (the DDR3's pins lie on both sides of the device) and an ECLKSYNCB, which the
  PHY's start-up sequence stops while it resets the edge clock dividers;
- `sync` (LiteDRAM's `sys`): `sys2x` divided by two in a CLKDIVF (reset by the same sequence, so
  the DDR I/O gearboxes start aligned), held in reset until the PLL locks and the divider runs;
- `init` (the PHY's DDRDLLA start-up sequence): the 48 MHz oscillator itself, held in reset
  until the PLL locks.
"""
from __future__ import annotations

from amaranth.hdl import ClockDomain, ClockSignal, Elaboratable, Instance, Module, ResetSignal, Signal
from amaranth.lib import io, wiring
from amaranth.lib.cdc import ResetSynchronizer
from amaranth.lib.wiring import In

from boards.clocking import ecp5_pll, ecp5_pll_instance
from boards.ddr3.litedram import MODULE_NAME, PADS, LiteDramDdr3
from boards.ddr3.native import LiteDramPort


class Ddr3Clocking(Elaboratable):
    """The domains `sync` at `clock_mhz`, `sys2x` at twice that and `init` at the board clock
    (`board_clock_mhz`), from the platform's default clock; `stop` and `reset` come from the
    PHY's start-up sequence."""

    def __init__(self, board_clock_mhz: float, clock_mhz: float):
        self.board_clock_mhz, self.clock_mhz = board_clock_mhz, clock_mhz
        self.stop, self.reset = Signal(), Signal()

    def elaborate(self, platform) -> Module:
        m = Module()
        m.domains += [ClockDomain("sync"), ClockDomain("sys2x", reset_less=True), ClockDomain("init")]
        pin = platform.request(platform.default_clk, dir="-")
        m.submodules.clk_buffer = board_clock = io.Buffer("i", pin)
        pll = ecp5_pll(self.board_clock_mhz, 2 * self.clock_mhz)
        locked, sys2x_pll, bridged = Signal(name="pll_locked"), Signal(name="sys2x_pll"), Signal(name="sys2x_bridged")
        sys2x, sync = Signal(name="sys2x_clk"), Signal(name="sync_clk")
        m.submodules.pll = ecp5_pll_instance(pll, board_clock.i, sys2x_pll, locked)
        # the DDR3's pins lie in banks on both sides of the device: the edge clock crosses over
        # through the bridge, as nextpnr requires
        m.submodules.eclk_bridge = Instance("ECLKBRIDGECS", i_CLK0=sys2x_pll, i_SEL=0, o_ECSOUT=bridged)
        m.submodules.eclk = Instance("ECLKSYNCB", i_ECLKI=bridged, i_STOP=self.stop, o_ECLKO=sys2x)
        m.submodules.divider = Instance("CLKDIVF", p_DIV="2.0", i_ALIGNWD=0, i_CLKI=sys2x,
                                        i_RST=self.reset, o_CDIVX=sync)
        m.d.comb += [ClockSignal("sys2x").eq(sys2x), ClockSignal("sync").eq(sync),
                     ClockSignal("init").eq(board_clock.i)]
        platform.add_clock_constraint(sys2x_pll, pll.f_out_mhz * 1e6)  # nextpnr derives the rest (/2: `sync`)
        m.submodules.init_reset = ResetSynchronizer(~locked, domain="init")
        m.submodules.sync_reset = ResetSynchronizer(~locked | self.reset, domain="sync")
        return m


class LiteDramCore(wiring.Component):
    """`core` on the board's `ddram` pins, its native port and CSR bus as `dram`, with the
    clocking (`Ddr3Clocking`) for `clock_mhz` from the board's `board_clock_mhz`."""

    def __init__(self, core: LiteDramDdr3, board_clock_mhz: float, clock_mhz: float):
        self.core, self.board_clock_mhz, self.clock_mhz = core, board_clock_mhz, clock_mhz
        super().__init__({"dram": In(LiteDramPort(core.address_bits, core.data_bits))})

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.clocking = clocking = Ddr3Clocking(self.board_clock_mhz, self.clock_mhz)
        platform.add_file(f"{MODULE_NAME}.v", self.core.verilog)
        pins = platform.request("ddram", 0, dir="-")
        platform.request("ddr3_pseudo_power", 0)  # left at their defaults: VCC pins high, GND pins low
        dram = self.dram
        ports = {f"io_ddram_{name}": getattr(pins, name).io for name in PADS}
        m.submodules.litedram = Instance(
            MODULE_NAME, i_sys_clk=ClockSignal("sync"), i_sys_rst=ResetSignal("sync"),
            i_sys2x_clk=ClockSignal("sys2x"), i_init_clk=ClockSignal("init"), i_init_rst=ResetSignal("init"),
            o_init_stop=clocking.stop, o_init_reset=clocking.reset,
            i_cmd_valid=dram.cmd.valid, o_cmd_ready=dram.cmd.ready, i_cmd_we=dram.cmd.payload.we,
            i_cmd_addr=dram.cmd.payload.addr, i_wdata_valid=dram.wdata.valid, o_wdata_ready=dram.wdata.ready,
            i_wdata_data=dram.wdata.payload.data, i_wdata_we=dram.wdata.payload.we,
            o_rdata_valid=dram.rdata.valid, i_rdata_ready=dram.rdata.ready, o_rdata_data=dram.rdata.payload,
            i_csr_adr=dram.csr.adr, i_csr_we=dram.csr.we, i_csr_dat_w=dram.csr.dat_w, o_csr_dat_r=dram.csr.dat_r,
            **ports)
        return m
