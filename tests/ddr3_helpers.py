"""A stand-in for the generated LiteDRAM core (`STAND_IN`), and random traffic on
`boards.ddr3.memory.Ddr3MainMemory` against a golden memory, shared by
`tests/test_ddr3_memory.py` (on the native-port model) and `bench/ddr3_litedram_sim.py` (on
LiteDRAM): write bursts with random byte masks, read bursts, host byte writes and reads, in
program order over a few native words; every read beat and host read is compared with the
golden memory as of its request (no read may pass an accepted write)."""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from boards.ddr3.litedram import MODULE_NAME, LiteDramDdr3
from sdram_helpers import Clock

WORD_BYTES = 16  # a native word: one BL8 burst of the 16-bit DDR3
CSR_NAMES = ("dfii_control0", "dfii_pi0_command0", "dfii_pi0_command_issue", "dfii_pi0_address0",
             "dfii_pi0_baddress0", "dly_sel0", "rdly_dq_rst", "rdly_dq_inc", "rdly_dq_bitslip_rst", "rdly_dq_bitslip")
STAND_IN = LiteDramDdr3(  # a stand-in for the generated core (no LiteDRAM needed), its register names real
    verilog=f"module {MODULE_NAME}(); endmodule\n", csrs={name: index for index, name in enumerate(CSR_NAMES)},
    init_sequence=(("Release reset", 0, 0, "DFII_CONTROL_ODT|DFII_CONTROL_RESET_N", 50000),
                   ("ZQ Calibration", 1024, 0, "DFII_COMMAND_WE|DFII_COMMAND_CS", 200)),
    address_bits=23, data_bits=128, bitslips=4, delays=8)


@dataclass
class RandomTraffic:
    """`ops` random operations on `dut` over `size` bytes (seeded by `seed`); `drive` starts
    after `init_done`; `consume` takes read beats with probability `ready` per cycle."""

    dut: object
    size: int
    ops: int
    seed: int = 0
    ready: float = 0.7
    golden: bytearray = field(init=False)
    expected: list[int] = field(default_factory=list)  # read beats, as the golden memory had them
    got: list[int] = field(default_factory=list)
    host_expected: list[int] = field(default_factory=list)
    host_got: list[int] = field(default_factory=list)
    init_cycles: int = 0
    cycles: int = 0

    def __post_init__(self):
        self.golden = bytearray(self.size)
        self.rng = random.Random(self.seed)

    @property
    def exact(self) -> bool:
        return self.got == self.expected and self.host_got == self.host_expected

    async def drive(self, ctx) -> None:
        dut, rng, golden, clock = self.dut, self.rng, self.golden, Clock()
        await clock.until(ctx, dut.init_done, what="init_done")
        self.init_cycles = clock.cycle
        blocks = [rng.randrange(self.size // WORD_BYTES) * WORD_BYTES for _ in range(12)]  # few words, often reused
        for _ in range(self.ops):
            block, first = rng.choice(blocks), rng.randrange(8)
            beats, kind = rng.randint(1, 8 - first), rng.random()
            if kind < 0.45:
                for index in range(beats):
                    addr = block + 2 * (first + index)
                    value, mask = rng.randrange(1 << 16), rng.choice([1, 2, 3, 3, 3])
                    await clock.send(ctx, dut.port.wr, {"addr": addr, "data": value, "mask": mask,
                                                        "last": index == beats - 1})
                    for byte in range(2):
                        if mask >> byte & 1:
                            golden[addr + byte] = value >> (8 * byte) & 0xFF
            elif kind < 0.85:
                addr = block + 2 * first
                self.expected.extend(int.from_bytes(golden[addr + 2 * i:addr + 2 * i + 2], "little")
                                     for i in range(beats))
                await clock.send(ctx, dut.port.rd_req, {"addr": addr, "beats": beats})
            else:
                await self._host(ctx, clock, block + rng.randrange(WORD_BYTES))
        while len(self.got) < len(self.expected):
            await clock.tick(ctx)
        self.cycles = clock.cycle - self.init_cycles

    async def _host(self, ctx, clock: Clock, addr: int) -> None:
        """A host byte write or read at `addr` (a read waits for the reads before it, then for
        its word, as the bridge does)."""
        dut, golden = self.dut, self.golden
        if self.rng.random() < 0.5:
            golden[addr] = value = self.rng.randrange(256)
            await clock.send(ctx, dut.host.req, {"addr": addr, "data": value, "write": 1})
            return
        while len(self.got) < len(self.expected):
            await clock.tick(ctx)
        self.host_expected.append(int.from_bytes(golden[addr & ~1:(addr & ~1) + 2], "little"))
        await clock.send(ctx, dut.host.req, {"addr": addr, "data": 0, "write": 0})
        _, word = await clock.until(ctx, dut.host.rd_valid, dut.host.rd_data, what="rd_valid")
        self.host_got.append(word)

    async def consume(self, ctx) -> None:
        rd, clock = self.dut.port.rd_data, Clock()
        while True:
            taking = self.rng.random() < self.ready
            ctx.set(rd.ready, taking)
            valid, value = await clock.tick(ctx, rd.valid, rd.payload.data)
            if taking and valid:
                self.got.append(value)
