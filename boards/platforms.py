"""The boards `hwgen build` targets (amaranth-boards platforms) and bare-device platforms for
`hwgen synth`.

A board names its amaranth-boards platform, the device whose totals its report shows, its
host UART, four status LEDs and its SDRAM chip, if it has one (main memory then lives there). Pins a board lacks come from `constraints/<board>.yaml`
(extra UART pins, for instance). A bare device gets a platform with one clock pin at the
configuration's frequency, a few input pins and one output pin; its pins are those of a
reference board with the same package.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml
from amaranth.build import Attrs, Clock, Pins, Resource, Subsignal
from amaranth.vendor import LatticeECP5Platform, LatticeICE40Platform
from amaranth_boards.icebreaker import ICEBreakerPlatform
from amaranth_boards.orangecrab_r0_2 import OrangeCrabR0_2_25FPlatform
from amaranth_boards.resources import UARTResource
from amaranth_boards.ulx3s import ULX3S_12F_Platform, ULX3S_25F_Platform, ULX3S_45F_Platform, ULX3S_85F_Platform

from boards.devices import Device, device
from common.errors import HwgenError
from sim.sdram.chips import IS42S16160G_7, SdramChip
from sim.spiflash.chips import W25Q128JV_IM, SpiFlashChip

CONSTRAINTS_DIR = Path(__file__).resolve().parent.parent / "constraints"
BARE_INPUTS = 4
"""Input pins of a bare-device platform (`din`)."""


class UnknownBoardError(HwgenError):
    """A board name that is not in `BOARDS`."""


class _IceBreaker(ICEBreakerPlatform):
    """The iCEBreaker with its snap-off LED section (LEDs 2-6 beside the two on the board)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.add_resources(self.break_off_pmod)


class _OrangeCrab(OrangeCrabR0_2_25FPlatform):
    """The OrangeCrab r0.2 (ECP5-25F) without the `dfu-suffix` step: the bitstream is the product,
    and with its DDR3L's pins as LiteDRAM's ECP5 PHY takes them (`ddram`, after the board maker's
    LiteX platform: the differential clock and strobes by their true pin, SSTL135D_I driving the
    pair). amaranth-boards' `ddr3` resource is not used: its bank-address pins (P5 N3 M3) are not
    the board's (M3 is the RGB LED's green; the board wires BA to D6 B7 A6) and its strobe pairs
    are given as (G18, B15) and (H17, A16), each mixing two pairs."""

    required_tools = LatticeECP5Platform.required_tools
    command_templates = LatticeECP5Platform.command_templates

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        sstl, diff = Attrs(IO_TYPE="SSTL135_I", SLEWRATE="FAST"), Attrs(IO_TYPE="SSTL135D_I", SLEWRATE="FAST")
        self.add_resources([Resource(
            "ddram", 0,
            Subsignal("a", Pins("C4 D2 D3 A3 A4 D4 C3 B2 B1 D1 A7 C2 B6 C1 A2 C7", dir="o"), sstl),
            Subsignal("ba", Pins("D6 B7 A6", dir="o"), sstl),
            Subsignal("ras_n", Pins("C12", dir="o"), sstl), Subsignal("cas_n", Pins("D13", dir="o"), sstl),
            Subsignal("we_n", Pins("B12", dir="o"), sstl), Subsignal("cs_n", Pins("A12", dir="o"), sstl),
            Subsignal("dm", Pins("D16 G16", dir="o"), sstl),
            Subsignal("dq", Pins("C17 D15 B17 C16 A15 B13 A17 A13 F17 F16 G15 F15 J16 C18 H16 F18", dir="io"),
                      Attrs(IO_TYPE="SSTL135_I", SLEWRATE="FAST", TERMINATION="75")),
            Subsignal("dqs_p", Pins("B15 G18", dir="io"),
                      Attrs(IO_TYPE="SSTL135D_I", SLEWRATE="FAST", TERMINATION="OFF", DIFFRESISTOR="100")),
            Subsignal("clk_p", Pins("J18", dir="o"), diff),
            Subsignal("cke", Pins("D18", dir="o"), sstl), Subsignal("odt", Pins("C13", dir="o"), sstl),
            Subsignal("reset_n", Pins("L18", dir="o"), sstl))])


DEFAULT_BAUD = 115_200
"""The host link's rate on a board whose USB-serial chip has no faster one named."""


@dataclass(frozen=True)
class Board:
    """A board: `device` is a key of `boards.devices.DEVICES`; `leds` are four
    (resource, number, subsignal or None) outputs: busy, done, link activity, error; `sdram`
    the chip on the platform's "sdram" resource (None: main memory is on chip); `baud` the
    host link's rate: the fastest the board's USB-serial chip runs (the ULX3S's FT231X: 3 Mbaud);
    `flash` the SPI flash on its "spi_flash_4x" resource that holds the model's
    constants after the bitstream (None: they are in main memory); `ddr3_bytes` the DDR3 on the platform's "ddram" resource (main memory then lives there,
    through LiteDRAM: `boards.ddr3`)."""

    name: str
    device: str
    platform: type
    leds: tuple[tuple[str, int, str | None], ...]
    sdram: SdramChip | None = None
    baud: int = DEFAULT_BAUD
    flash: SpiFlashChip | None = None
    ddr3_bytes: int = 0

    def create_platform(self):
        """A platform instance with the board's extra constraints added."""
        platform = self.platform()
        extra = CONSTRAINTS_DIR / f"{self.name}.yaml"
        if extra.exists():
            platform.add_resources(_extra_resources(extra))
        return platform

    @property
    def device_info(self) -> Device:
        return device(self.device)


def _extra_resources(path: Path) -> list[Resource]:
    """Resources from a constraints YAML: `uart: {rx, tx, attrs}`."""
    data = yaml.safe_load(path.read_text()) or {}
    resources = []
    if "uart" in data:
        uart = data["uart"]
        resources.append(UARTResource(0, rx=uart["rx"], tx=uart["tx"], attrs=Attrs(**uart.get("attrs", {}))))
    return resources


ORANGECRAB_DDR3_BYTES = 128 << 20  # MT41K64M16: 64 M x 16 bits
ULX3S_BAUD = 3_000_000  # the FT231X's highest rate
_ULX3S_LEDS = tuple(("led", k, None) for k in range(4))
BOARDS: dict[str, Board] = {board.name: board for board in (
    Board("icebreaker", "ice40-up5k", _IceBreaker, tuple(("led", k, None) for k in range(4)), flash=W25Q128JV_IM),
    Board("ulx3s-12f", "ecp5-12f", ULX3S_12F_Platform, _ULX3S_LEDS, IS42S16160G_7, ULX3S_BAUD),
    Board("ulx3s-25f", "ecp5-25f", ULX3S_25F_Platform, _ULX3S_LEDS, IS42S16160G_7, ULX3S_BAUD),
    Board("ulx3s-45f", "ecp5-45f", ULX3S_45F_Platform, _ULX3S_LEDS, IS42S16160G_7, ULX3S_BAUD),
    Board("ulx3s-85f", "ecp5-85f", ULX3S_85F_Platform, _ULX3S_LEDS, IS42S16160G_7, ULX3S_BAUD),
    Board("orangecrab", "ecp5-25f", _OrangeCrab,
          (("rgb_led", 0, "r"), ("rgb_led", 0, "g"), ("rgb_led", 0, "b")), ddr3_bytes=ORANGECRAB_DDR3_BYTES),
)}


def board(name: str) -> Board:
    """The board called `name` (case-insensitive); an unknown name lists the known ones."""
    key = name.lower()
    if key not in BOARDS:
        raise UnknownBoardError(f"unknown board {name!r}; known boards: {', '.join(BOARDS)}")
    return BOARDS[key]


# Pins of a reference board per package: (clock, inputs, output). iCEBreaker (UP5K SG48),
# iCE40-HX8K breakout board (CT256), ULX3S (ECP5 CABGA381).
_BARE_PINS = {
    "sg48": ("35", "6 2 47 45", "9"),
    "ct256": ("J3", "B10 A1 A2 C3", "B12"),
    "CABGA381": ("G2", "M1 R1 T1 V1", "L4"),
}
_AMARANTH_PACKAGES = {"sg48": "SG48", "ct256": "CT256", "CABGA381": "BG381"}


def bare_platform(dev: Device, clock_mhz: float):
    """An amaranth platform for `dev` alone: `clk` at `clock_mhz`, `din` (`BARE_INPUTS` pins)
    and `dout` (one pin)."""
    clock, inputs, output = _BARE_PINS[dev.package]
    attrs = Attrs(IO_STANDARD="SB_LVCMOS") if dev.family == "ice40" else Attrs(IO_TYPE="LVCMOS33")
    namespace = {
        "device": dev.part, "package": _AMARANTH_PACKAGES[dev.package], "default_clk": "clk",
        "resources": [Resource("clk", 0, Pins(clock, dir="i"), Clock(clock_mhz * 1e6), attrs),
                      Resource("din", 0, Pins(inputs, dir="i"), attrs),
                      Resource("dout", 0, Pins(output, dir="o"), attrs)],
        "connectors": [],
    }
    if dev.family == "ecp5":
        namespace["speed"] = "6"
    base = LatticeICE40Platform if dev.family == "ice40" else LatticeECP5Platform
    return type(f"Bare_{dev.name.replace('-', '_')}", (base,), namespace)()
