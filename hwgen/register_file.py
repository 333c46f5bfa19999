"""The sequencer's registers: SETR and ADDR write them, LOAD and STORE read them."""
from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hwgen.isa import REGISTERS, Opcode
from hwgen.isa_layout import INSTRUCTION_LAYOUT


class RegisterFile(wiring.Component):
    """`REGISTERS` 32-bit registers (R0 reads 0) for the fetch stage (`hwgen.fetch_stage`).

    - `instr`: the instruction being executed.
    - `clear`: a run starts (zeroes the registers).
    - `write`: `instr` is a SETR or ADDR being executed.
    - `load`, `store`: `instr` with the register operands of a LOAD (`store`: a STORE) resolved,
      whatever its opcode (no opcode mux between the adders and the queue): the fields resolved
      lie beyond a WAIT / SIGNAL's, the queue's only other opcodes. The register fields read 0:
      the queues do not store them (`hwgen.sequencer.resolved_bits`).
    """

    def __init__(self):
        super().__init__({
            "instr": In(INSTRUCTION_LAYOUT), "clear": In(1), "write": In(1),
            "load": Out(INSTRUCTION_LAYOUT), "store": Out(INSTRUCTION_LAYOUT),
        })

    def elaborate(self, platform) -> Module:
        m = Module()
        instr = self.instr
        regs = Array(Signal(32, name=f"r{i}") for i in range(REGISTERS))
        m.d.comb += [self.load.eq(instr), self.store.eq(instr)]
        load, store = instr.payload.load, instr.payload.store
        m.d.comb += [
            self.load.payload.load.dram_offset.eq(regs[load.dram_reg] + load.dram_offset),
            self.load.payload.load.y_offset.eq(regs[load.y_reg] + load.y_offset),
            self.load.payload.load.x_offset.eq(regs[load.x_reg] + load.x_offset),
            self.store.payload.store.dram_offset.eq(regs[store.dram_reg] + store.dram_offset),
        ]
        reg_write, reg_base, reg_imm = self._pending_register_write(m, regs)
        with m.If(self.clear):
            m.d.sync += [reg.eq(0) for reg in regs]
        with m.If(self.write):
            setr = instr.payload.setr
            base = Mux(instr.opcode == Opcode.SETR, 0, regs[setr.rd])
            writes = Cat(Const(0, 1), *(setr.rd == i for i in range(1, REGISTERS)))  # not R0
            m.d.sync += [reg_write.eq(writes), reg_base.eq(base), reg_imm.eq(setr.imm)]
        return m

    @staticmethod
    def _pending_register_write(m: Module, regs) -> tuple[Signal, Signal, Signal]:
        """A SETR / ADDR writes its register a cycle late: EXECUTE sets `reg_write` (one-hot; R0
        is never written), `reg_base` (0 or the register) and `reg_imm`, and the next cycle,
        always a FETCH, adds them and writes the sum, so the next EXECUTE reads the new value
        while neither the register read nor the decode lies before the adder or the enables."""
        reg_write = Signal(len(regs), name="reg_write")
        reg_base, reg_imm = Signal(32, name="reg_base"), Signal(32, name="reg_imm")
        m.d.sync += reg_write.eq(0)
        for index, reg in enumerate(regs):
            with m.If(reg_write[index]):
                m.d.sync += reg.eq(reg_base + reg_imm)
        return reg_write, reg_base, reg_imm
