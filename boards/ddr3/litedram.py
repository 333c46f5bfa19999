"""LiteDRAM for the OrangeCrab's DDR3L, generated to Verilog with migen at build time:
`ECP5DDRPHY` (16-bit DQ, two DFI phases: the DDR3 clock is twice `sys`) + `LiteDRAMCore` for
the MT41K64M16 (128 MiB) with one native user port and a CSR bank holding the DFI injector's and
the PHY's registers (`litedram_ddr3`). An Amaranth design instantiates the module by
`MODULE_NAME` (`boards.ddr3.core.LiteDramCore`).

The PHY settings follow the board's maker (litex-boards' OrangeCrab target): the data-mask pins
swapped between the two byte lanes (`DM_REMAPPING`), no nominal on-die termination, and a 100-tap
delay on the command pins below 64 MHz (`cmd_delay`). The I/O primitives come from LiteX's
trellis overrides (TRELLIS_IO for the tristate DQ and DQS pins).

migen, litex and litedram are the optional extra `[litedram]`: only `generate` and the helpers
that build migen modules import them (`litedram_modules`), so the rest of `boards` loads without.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from common.errors import ConfigError

MODULE_NAME = "litedram_ddr3"
DM_REMAPPING = {0: 1, 1: 0}  # the OrangeCrab's DM pins are swapped against its DQ byte lanes
CSR_DATA_BITS = 32
CSR_ADDRESS_BITS = 14
PADS = {"a": 16, "ba": 3, "ras_n": 1, "cas_n": 1, "we_n": 1, "cs_n": 1, "dm": 2, "dq": 16, "dqs_p": 2, "clk_p": 1,
        "cke": 1, "odt": 1, "reset_n": 1}
"""The DDR3 pins as the PHY names them (Verilog ports `ddram_<name>`); the differential clock
and strobes by their true pin alone (SSTL135D_I I/O buffers drive the pair)."""


def litedram_modules():
    """The migen, LiteX and LiteDRAM names this module builds with (a `ConfigError` naming the
    extra to install when they are missing)."""
    try:
        import migen
        from litedram.core import LiteDRAMCore
        from litedram.init import get_sdram_phy_init_sequence
        from litedram.modules import MT41K64M16
        from litedram.phy.ecp5ddrphy import ECP5DDRPHY
        from litex.build.lattice.common import lattice_ecp5_trellis_special_overrides
        from litex.soc.interconnect import csr_bus
    except ImportError as missing:
        raise ConfigError(f"{missing}: DDR3 main memory is LiteDRAM's; install it with `pip install -e .[litedram]` "
                          "(litedram, litex, migen)") from missing
    return SimpleNamespace(migen=migen, LiteDRAMCore=LiteDRAMCore, init_sequence=get_sdram_phy_init_sequence,
                           MT41K64M16=MT41K64M16, ECP5DDRPHY=ECP5DDRPHY, csr_bus=csr_bus,
                           overrides=lattice_ecp5_trellis_special_overrides)


def litedram_core(phy, module):
    """`LiteDRAMCore` for `module` behind `phy` (a PHY or the PHY model) and its native port."""
    core = litedram_modules().LiteDRAMCore(phy, module.geom_settings, module.timing_settings, clk_freq=module.clk_freq)
    return core, core.crossbar.get_port()


def ddr3_module(clock_hz: float):
    """The OrangeCrab r0.2's DDR3L, MT41K64M16, at a `clock_hz` system clock (DDR3 clock 2x)."""
    return litedram_modules().MT41K64M16(clock_hz, "1:2")


def ddr3_phy(pads, clock_hz: float):
    """The ECP5 DDR3 PHY on `pads` with the OrangeCrab's settings."""
    phy = litedram_modules().ECP5DDRPHY(pads, sys_clk_freq=clock_hz, dm_remapping=DM_REMAPPING,
                     cmd_delay=0 if clock_hz > 64e6 else 100)
    phy.settings.rtt_nom = "disabled"
    return phy


@dataclass(frozen=True)
class LiteDramDdr3:
    """The generated core: its Verilog (module `MODULE_NAME`), its CSRs' word addresses by name
    (`dfii_control`, `dfii_pi0_address`, `rdly_dq_inc`, ...), litedram.init's sequence for the
    module (comment, address, bank, command, delay), the native port's address and data bits
    (a native word is one BL8 burst: 16 bytes) and the PHY's read-leveling ranges."""

    verilog: str
    csrs: dict[str, int]
    init_sequence: tuple[tuple[str, int, int, str, int], ...]
    address_bits: int
    data_bits: int
    bitslips: int
    delays: int


def csr_addresses(bank) -> dict[str, int]:
    """Word addresses of `bank`'s CSR words by migen's names: a plain CSR by its name
    (`dfii_pi0_command_issue`), a CSR storage or status by its name and word index, its most
    significant word first (`dfii_control0`; `dfii_pi0_wrdata1`, then `dfii_pi0_wrdata0`)."""
    return {csr.name: address for address, csr in enumerate(bank.simple_csrs)}


def _top(clock_hz: float):
    """PHY + core + CSR bank with named top-level signals (a migen module)."""
    lib = litedram_modules()
    migen = lib.migen

    class Top(migen.Module):
        def __init__(self):
            self.clock_domains.cd_sys = migen.ClockDomain("sys")
            self.clock_domains.cd_sys2x = migen.ClockDomain("sys2x", reset_less=True)
            self.clock_domains.cd_init = migen.ClockDomain("init")
            for domain in (self.cd_sys, self.cd_sys2x, self.cd_init):
                domain.clk.name_override = f"{domain.name}_clk"
                if domain.rst is not None:
                    domain.rst.name_override = f"{domain.name}_rst"
            self.pads = migen.Record(list(PADS.items()), name="ddram")
            self.submodules.phy = phy = ddr3_phy(self.pads, clock_hz)
            self.module = ddr3_module(clock_hz)
            self.submodules.core, port = litedram_core(phy, self.module)
            self.bus = lib.csr_bus.Interface(data_width=CSR_DATA_BITS, address_width=CSR_ADDRESS_BITS)
            self.submodules.csr_bank = lib.csr_bus.CSRBank(self.core.get_csrs() + phy.get_csrs(), bus=self.bus)
            self.ports = {"init_stop": phy.init.stop, "init_reset": phy.init.reset}
            for name, signal in [("cmd_valid", port.cmd.valid), ("cmd_ready", port.cmd.ready), ("cmd_we", port.cmd.we),
                                 ("cmd_addr", port.cmd.addr), ("wdata_valid", port.wdata.valid),
                                 ("wdata_ready", port.wdata.ready), ("wdata_data", port.wdata.data),
                                 ("wdata_we", port.wdata.we), ("rdata_valid", port.rdata.valid),
                                 ("rdata_ready", port.rdata.ready), ("rdata_data", port.rdata.data),
                                 ("csr_adr", self.bus.adr), ("csr_we", self.bus.we), ("csr_dat_w", self.bus.dat_w),
                                 ("csr_dat_r", self.bus.dat_r)]:
                self.ports[name] = signal
            for name, signal in self.ports.items():
                signal.name_override = name
            self.port = port

    return Top()


def generate(clock_hz: float) -> LiteDramDdr3:
    """The core for a `clock_hz` system clock, as Verilog and its register map."""
    top = _top(clock_hz)  # a ConfigError naming the extra to install when LiteDRAM is missing
    from migen.fhdl import verilog
    ios = set(top.ports.values()) | set(top.pads.flatten())
    ios |= {top.cd_sys.clk, top.cd_sys.rst, top.cd_sys2x.clk, top.cd_init.clk, top.cd_init.rst}
    text = str(verilog.convert(top, ios=ios, name=MODULE_NAME,
                               special_overrides=litedram_modules().overrides))
    for name in ("dq", "dqs_p"):  # LiteX's TRELLIS_IO takes the pad as an input; it is the pin's inout
        text = text.replace(f"input [{PADS[name] - 1}:0] ddram_{name},", f"inout [{PADS[name] - 1}:0] ddram_{name},")
    sequence, _ = litedram_modules().init_sequence(top.phy.settings, top.module.timing_settings)
    settings = top.phy.settings
    return LiteDramDdr3(text, csr_addresses(top.csr_bank), tuple(sequence), len(top.port.cmd.addr),
                        len(top.port.wdata.data), settings.bitslips, settings.delays)
