"""The bit-serial region CRC of a CHECKSUM reply (`boards.protocol.REGION_CRC`)."""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from boards.protocol import REGION_CRC


class SerialRegionCrc(wiring.Component):
    """`REGION_CRC` a bit per cycle, each byte least significant bit first (the CRC is
    bit-reflected: its register shifts right): `start` sets the initial value, `valid` takes
    `data`. `low_byte` is the CRC's least significant byte; `shift` moves the register a bit
    right (feeding it its own low bit: no feedback), so eight shifts bring the CRC's next byte
    into `low_byte`. About a quarter of the logic of a byte-wide CRC, and no byte multiplexer
    to send it."""

    def __init__(self):
        super().__init__({"start": In(1), "valid": In(1), "data": In(1), "shift": In(1), "low_byte": Out(8)})

    def elaborate(self, platform) -> Module:
        m = Module()
        algorithm = REGION_CRC.algorithm
        assert algorithm.reflect_input and algorithm.reflect_output
        width = algorithm.crc_width
        polynomial = int(f"{algorithm.polynomial:0{width}b}"[::-1], 2)  # bit-reflected
        register = Signal(width, init=algorithm.initial_crc)
        feedback = self.valid & (register[0] ^ self.data)
        with m.If(self.start):
            m.d.sync += register.eq(algorithm.initial_crc)
        with m.Elif(self.valid | self.shift):
            m.d.sync += register.eq((register >> 1) ^ Mux(feedback, polynomial, 0))
        m.d.comb += self.low_byte.eq(register[:8] ^ (algorithm.xor_output & 0xFF))
        return m
