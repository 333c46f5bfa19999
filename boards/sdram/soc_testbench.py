"""The cocotb test that `boards.sdram.soc_transport` runs inside the simulator on `hwgen_soc_cosim`
(`boards.sdram.soc_top`): the board's SoC in Verilog, its SDRAM chip the Python datasheet model
(`sim.sdram.device.SdramDevice`), its UART pins carrying the host's bytes bit by bit, all at the
pace the host sets over the job's socket (`boards.sdram.soc_link`).

The chip model sees every rising edge, as in `boards.sdram.cosim_testbench`: at each falling
edge the testbench drives DQ with the model's data for the edge to come, reads the pins and
clocks the model. While the controller sends only NOPs and the model has nothing in flight
(`SdramDevice.quiet`), the testbench waits for the top level's `active` instead and then
applies the NOP edges that passed at once (`SdramDevice.nop_edges`, the same as clocking it
once per edge), without waking the simulator's Python every cycle: the SoC's SDRAM is idle
most of the time while a host loads it.

The host's bytes reach the SoC's `rx` pin through the top level's `HostLine`, which the
testbench hands up to `HOST_CHUNK` bytes at a time; the bytes the SoC sends on `tx` are sampled
in the middle of each bit, at falling edges.
"""
from __future__ import annotations

import time
from functools import cache
from multiprocessing.connection import Client, Connection

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import Event, FallingEdge, First, RisingEdge, Timer
from cocotb.utils import get_sim_time

from boards.sdram.cosim_job import PIN_NAMES, STATUS_LAYOUT
from boards.sdram.soc_link import DONE_FILE, HOST_CHUNK, SOCKET_FILE, Advance, Finish, Reply, SocJob
from sim.cosim.job import CLOCK_PERIOD_NS, Job
from sim.sdram.device import SdramDevice, SdramViolation

PIN_FIELDS = tuple((STATUS_LAYOUT[name].offset, (1 << STATUS_LAYOUT[name].width) - 1) for name in PIN_NAMES)
CHECK_CYCLES = 4096
"""Cycles between looks at the wall clock while the host waits for bytes (the chip model held
on a NOP is brought up to date then, so a missed refresh shows within them)."""


def cycles() -> int:
    """Rising edges so far (edge `e` comes at `(e + 1/2)` periods; this is called at falling edges)."""
    return int(get_sim_time("ns")) // CLOCK_PERIOD_NS


@cache
def wait(count: int) -> Timer:
    """A timer of `count` clock periods (made once: making a `Timer` costs more than awaiting it)."""
    return Timer(count * CLOCK_PERIOD_NS, "ns")


def idle(pins: tuple[int, ...]) -> bool:
    """Pins (in `PIN_NAMES` order) of a NOP or DESELECT with CKE high and DQ not driven."""
    cke, cs_n, ras_n, cas_n, we_n, *_, dq_oe = pins
    return bool(cke) and not dq_oe and (bool(cs_n) or bool(ras_n & cas_n & we_n))


class Chip:
    """The chip model on the top level's pins; `violation` is set when the model raises."""

    def __init__(self, dut, device: SdramDevice):
        self.dut, self.device = dut, device
        self.edge = 0  # the last edge the model was clocked for
        self.idle_pins: tuple[int, ...] | None = None  # the NOP the model is being held on
        self.violation: str | None = None

    def _pins(self) -> tuple[int, ...]:
        value = int(self.dut.status.value)
        return tuple((value >> offset) & mask for offset, mask in PIN_FIELDS)

    def catch_up(self, edge: int) -> None:
        """Clock the model with the held NOP for every edge up to `edge`."""
        if self.idle_pins is not None and edge > self.edge:
            self.device.nop_edges(edge - self.edge, self.idle_pins[PIN_NAMES.index("dqm")])
            self.edge = edge

    def check(self) -> None:
        """Bring a model held on a NOP up to the edge before now; a violation is kept."""
        try:
            self.catch_up(cycles() - 1)
        except SdramViolation as error:
            self.violation = self.violation or str(error)

    async def run(self) -> None:
        try:
            await self._run()
        except SdramViolation as error:
            self.violation = str(error)

    async def _run(self) -> None:
        dq_i, activity, falling = self.dut.dq_i, RisingEdge(self.dut.active), FallingEdge(self.dut.clk)
        dq_i.value = driven = 0
        await Timer(1, "ns")  # the initial values have settled; edge 0 comes at half a period
        pins = self._pins()
        dq, _ = self.device.clock(*pins)
        while True:
            if dq == driven == 0 and idle(pins) and self.device.quiet:
                self.idle_pins = pins
                await activity
                await falling
                self.catch_up(cycles() - 1)
                self.idle_pins = None
            else:
                await falling
            self.edge += 1
            if dq != driven:
                dq_i.value = driven = dq
            pins = self._pins()
            dq, _ = self.device.clock(*pins)


class Uart:
    """The host's end of the SoC's UART: bytes queued go to the top level's `HostLine`, which
    sends them on the SoC's `rx` pin; bytes on `tx` are collected, `enough` set once `want` of
    them have come."""

    def __init__(self, dut, divisor: int):
        self.dut, self.divisor = dut, divisor
        self.outgoing = bytearray()
        self.received = bytearray()
        self.queued, self.enough = Event(), Event()
        self.want = 0

    def send(self, data: bytes) -> None:
        self.outgoing += data
        self.queued.set()

    def expect(self, want: int) -> None:
        self.want = want
        self.enough.clear()

    async def drive_rx(self) -> None:
        """Hand the line driver up to `HOST_CHUNK` bytes each time it has sent the last ones."""
        dut, load, sent = self.dut, 0, RisingEdge(self.dut.host_idle)
        while True:
            if not self.outgoing:
                self.queued.clear()
                await self.queued.wait()
                continue
            chunk = bytes(self.outgoing[:HOST_CHUNK])
            del self.outgoing[:HOST_CHUNK]
            load ^= 1
            dut.host_data.value = int.from_bytes(chunk, "little")
            dut.host_count.value = len(chunk)
            dut.host_load.value = load
            await sent

    async def sample_tx(self) -> None:
        tx = self.dut.tx
        half_bit = Timer((self.divisor // 2) * CLOCK_PERIOD_NS + CLOCK_PERIOD_NS // 2, "ns")
        while True:
            await FallingEdge(tx)  # just after a rising clock edge
            await half_bit  # the middle of the start bit, at a falling clock edge
            byte = 0
            for i in range(8):
                await wait(self.divisor)
                byte |= int(tx.value) << i
            await wait(self.divisor)  # the middle of the stop bit
            if int(tx.value):
                self.received.append(byte)  # (a framing error loses the byte, as a host UART would)
                if len(self.received) >= self.want:
                    self.enough.set()


async def _serve(dut, link: Connection, chip: Chip, uart: Uart) -> None:
    """Answer the host's requests until `Finish` or a violation."""
    while True:
        request = link.recv()
        if isinstance(request, Finish):
            chip.check()
            try:
                chip.device.finish()
            except SdramViolation as error:
                chip.violation = chip.violation or str(error)
        else:
            assert isinstance(request, Advance), request
            uart.send(request.data)
            uart.expect(request.want)
            started = time.monotonic()
            while (chip.violation is None and cycles() < request.until and len(uart.received) < request.want
                   and time.monotonic() - started < request.wall_seconds):
                await First(uart.enough.wait(), wait(min(CHECK_CYCLES, request.until - cycles())))
                chip.check()
        link.send(Reply(cycles(), bytes(uart.received), int(dut.leds.value), chip.violation))
        uart.received.clear()
        if isinstance(request, Finish) or chip.violation is not None:
            return


@cocotb.test()
async def soc_on_sdram(dut) -> None:
    """Serve the host until it finishes; the done file tells it the simulation ended normally."""
    folder = Job.folder()
    job = SocJob.load(folder)
    device = SdramDevice(job.chip, job.clock_mhz)
    device.memory.preload(0, job.contents)
    chip, uart = Chip(dut, device), Uart(dut, job.divisor)
    Clock(dut.clk, CLOCK_PERIOD_NS, unit="ns", impl="gpi").start(start_high=False)
    cocotb.start_soon(chip.run())
    cocotb.start_soon(uart.drive_rx())
    cocotb.start_soon(uart.sample_tx())
    with Client(str(folder / SOCKET_FILE)) as link:
        await _serve(dut, link, chip, uart)
    (folder / DONE_FILE).write_text("done\n")
