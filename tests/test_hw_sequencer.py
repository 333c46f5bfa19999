"""Sequencer RTL against a sequential reference interpreter, with fake units of random speed."""
from __future__ import annotations

import random
from dataclasses import replace

from amaranth.sim import Simulator

import pytest

from hwgen.config import Template
from hwgen.isa import Instruction, Opcode, assemble
from hwgen.sequencer import Sequencer, opcode_constants, used_bits
from hwgen.queue_options import runs_in_place
from hwgen.sequencer_layouts import QUEUES


def reference_dispatch(program: list[int]) -> dict[str, list[Instruction]]:
    """Execute the fetch stage one instruction at a time: per queue, the resolved commands."""
    regs = [0] * 16
    stack: list[list[int]] = []  # [start, end, left]
    out: dict[str, list[Instruction]] = {q: [] for q in QUEUES}
    pc = 0
    while pc < len(program):
        ins = Instruction.decode(program[pc])
        next_pc = pc + 1
        if ins.opcode == Opcode.END:
            break
        if ins.opcode == Opcode.LOOP:
            if ins["count"] and ins["body"]:
                stack.append([pc + 1, pc + ins["body"], ins["count"] - 1])
            else:
                next_pc = pc + 1 + ins["body"]
        elif ins.opcode in (Opcode.SETR, Opcode.ADDR) and ins["rd"]:
            regs[ins["rd"]] = (ins["imm"] if ins.opcode == Opcode.SETR else regs[ins["rd"]] + ins["imm"]) & 0xFFFFFFFF
        elif ins.queue is not None and ins.opcode not in (Opcode.WAIT, Opcode.SIGNAL):
            fields = dict(ins.fields)
            if ins.opcode in (Opcode.LOAD, Opcode.STORE):
                fields["dram_offset"] = _signed((regs[fields["dram_reg"]] + fields["dram_offset"]) & 0xFFFFFFFF, 32)
                fields["dram_reg"] = 0
            if ins.opcode == Opcode.LOAD:
                for axis in ("y", "x"):
                    fields[f"{axis}_offset"] = _signed((regs[fields[f"{axis}_reg"]] + fields[f"{axis}_offset"]) & 0xFFF, 12)
                    fields[f"{axis}_reg"] = 0
            out[ins.queue.name.lower()].append(Instruction.make(ins.opcode, **fields))
        if ins.opcode != Opcode.LOOP and stack and stack[-1][1] == pc:
            if stack[-1][2]:
                stack[-1][2] -= 1
                next_pc = stack[-1][0]
            else:
                stack.pop()
        pc = next_pc
    return out


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) else value


def run_sequencer(program: list[int], seed: int, max_cycles: int = 20000, template: Template = Template(),
                  field_bits: dict[str, int] | None = None):
    """Simulate with one fake unit per queue; returns per-queue (command, start, end) and counters.
    An SPRAM program memory is written halfword by halfword first. A unit that runs its
    queue's head in place (`runs_in_place`) pops it when done; the head must not change meanwhile."""
    dut = Sequencer(program, template=template, field_bits=field_bits or {})
    rng = random.Random(seed)
    log: dict[str, list] = {q: [] for q in QUEUES}
    result = {}

    def in_place_unit(q: str):
        async def testbench(ctx):
            stream, idle = getattr(dut, q), getattr(dut, f"{q}_idle")
            ctx.set(idle, 1)
            while True:
                _, _, valid, word = await ctx.tick().sample(stream.valid, stream.payload.as_value())
                if not valid:
                    continue
                ctx.set(idle, 0)
                start = ctx.get(dut.counters.cycles)
                await ctx.tick().repeat(rng.randint(1, 6))
                assert ctx.get(stream.valid) and ctx.get(stream.payload.as_value()) == word
                ctx.set(stream.ready, 1)
                await ctx.tick()
                ctx.set(stream.ready, 0)
                ctx.set(idle, 1)
                log[q].append((Instruction.decode(int(word)), start, ctx.get(dut.counters.cycles)))
        return testbench

    def unit(q: str):
        async def testbench(ctx):
            stream, idle = getattr(dut, q), getattr(dut, f"{q}_idle")
            ctx.set(idle, 1)
            while True:
                ready = rng.random() < 0.6
                ctx.set(stream.ready, ready)
                _, _, valid, word = await ctx.tick().sample(stream.valid, stream.payload.as_value())
                if not (valid and ready):
                    continue
                command = Instruction.decode(int(word))
                ctx.set(stream.ready, 0)
                ctx.set(idle, 0)
                start = ctx.get(dut.counters.cycles)
                await ctx.tick().repeat(rng.randint(1, 6))
                log[q].append((command, start, ctx.get(dut.counters.cycles)))
                ctx.set(idle, 1)
        return testbench

    async def bench(ctx):
        if template.program_memory == "spram":
            ctx.set(dut.program_write.en, 1)
            for address in range(8 * len(program)):
                ctx.set(dut.program_write.addr, address)
                ctx.set(dut.program_write.data, (program[address // 8] >> (16 * (address % 8))) & 0xFFFF)
                await ctx.tick()
            ctx.set(dut.program_write.en, 0)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        for _ in range(max_cycles):
            await ctx.tick()
            if ctx.get(dut.done):
                break
        result["done"] = ctx.get(dut.done)
        result["cycles"] = ctx.get(dut.counters.cycles)
        result["waiting"] = {q: ctx.get(getattr(dut.counters, q).waiting) for q in QUEUES}

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    for q in QUEUES:
        sim.add_testbench((in_place_unit if runs_in_place(template, q) else unit)(q), background=True)
    sim.add_testbench(bench)
    sim.run_until(1e-6 * (max_cycles + 10 + 8 * len(program)))
    return log, result


PROGRAM = assemble([
    "SETR rd=1 imm=4096",
    "SETR rd=2 imm=-2",
    "SIGNAL queue=load sem=1",           # two free input banks
    "SIGNAL queue=load sem=1",
    "LOOP count=3 body=9",
    "WAIT queue=load sem=1",
    "LOAD buffer=input bank=0 desc=5 dram_reg=1 dram_offset=8 y_reg=2 y_offset=1 x_offset=-3",
    "SIGNAL queue=load sem=0",
    "WAIT queue=compute sem=0",
    "CONV in_bank=0 oc_groups=2 out_rows=3 ow_groups=1 ic_groups=4",
    "SIGNAL queue=compute sem=1",
    "SIGNAL queue=compute sem=2",
    "WAIT queue=store sem=2",
    "ADDR rd=1 imm=256",                  # last of the loop body
    "STORE bank=1 desc=7 dram_reg=1 dram_offset=-4",
    "END",
])


@pytest.mark.parametrize("template", [Template(), Template(queue_fields="used"), Template(program_memory="spram"),
                                      Template(queue_depth=1), Template(queue_depth=2, counters="cycles"),
                                      Template(queue_depth=2, load_command="queue", compute_queue_depth=1),
                                      Template(queue_depth=2, store_command="queue", program_memory="spram"),
                                      Template(semaphore_bits=2, queue_depth=2, store_queue_depth=1,
                                               store_command="queue"),
                                      Template(queue_kinds="registered", queue_fields="used", queue_depth=3,
                                               compute_queue_depth=1, load_command="queue")],
                         ids=["full", "used-queue-fields", "spram-program", "1-deep-queues", "2-deep-cycles-only",
                              "in-place-load-1-deep-compute", "in-place-store-spram",
                              "2-bit-semaphores-1-deep-in-place-store",
                              "registered-kinds-used-fields"])
def test_dispatch_matches_reference_and_semaphores_order_units(template):
    expected = reference_dispatch(PROGRAM)
    assert [len(expected[q]) for q in QUEUES] == [3, 3, 1]
    for seed in range(2):
        log, result = run_sequencer(PROGRAM, seed, template=template)
        assert result["done"]
        for q in QUEUES:
            assert [command for command, _, _ in log[q]] == expected[q], q
        loads, convs = log["load"], log["compute"]
        for (_, _, load_end), (_, conv_start, _) in zip(loads, convs):
            assert conv_start >= load_end  # each CONV waited for its LOAD's SIGNAL
        (_, store_start, _), = log["store"]
        assert store_start >= convs[0][2]
        if template.program_memory == "rom" and template.counters == "all":  # a 9-cycle fetch lets the LOAD finish first
            assert result["waiting"]["compute"] > 0  # the first CONV waited for its LOAD
        busy_load = sum(end - start for _, start, end in loads)
        assert result["cycles"] >= busy_load


def test_nested_loops_and_skipped_loop():
    program = assemble([
        "LOOP count=2 body=4",
        "LOOP count=3 body=2",
        "ADDR rd=3 imm=10",
        "STORE dram_reg=3",
        "ADDR rd=3 imm=1000",                 # ends the outer loop, not the inner one
        "LOOP count=0 body=1",
        "STORE dram_offset=99",               # skipped
        "STORE dram_offset=7",
    ])
    expected = reference_dispatch(program)
    assert [c["dram_offset"] for c in expected["store"]] == [10, 20, 30, 1040, 1050, 1060, 7]
    log, result = run_sequencer(program, seed=5)
    assert result["done"]
    assert [command for command, _, _ in log["store"]] == expected["store"]


def test_writable_program_memory():
    program = assemble(["SETR rd=4 imm=12", "STORE dram_reg=4 dram_offset=1", "END"])
    dut = Sequencer([], writable_depth=8)
    seen = []

    async def bench(ctx):
        ctx.set(dut.store_idle, 1)
        ctx.set(dut.load_idle, 1)
        ctx.set(dut.compute_idle, 1)
        for address, word in enumerate(program):
            ctx.set(dut.program_write.addr, address)
            ctx.set(dut.program_write.data, word)
            ctx.set(dut.program_write.en, 1)
            await ctx.tick()
        ctx.set(dut.program_write.en, 0)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        ctx.set(dut.store.ready, 1)
        for _ in range(50):
            _, _, valid, word = await ctx.tick().sample(dut.store.valid, dut.store.payload.as_value())
            if valid:
                seen.append(Instruction.decode(int(word)))
            if ctx.get(dut.done):
                break
        assert ctx.get(dut.done)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert [command["dram_offset"] for command in seen] == [13]


COMPACT = Template(loops_and_registers=False, queue_fields="used", program_memory="spram", queue_kinds="registered")
STRAIGHT = assemble([  # no LOOP, SETR, ADDR or register operand: the compiler's kind of program
    "SIGNAL queue=load sem=1",
    "WAIT queue=load sem=1",
    "LOAD buffer=weight bank=1 desc=1000 dram_offset=-123456 buf_addr=65535 y_offset=-2048 x_offset=2047",
    "SIGNAL queue=load sem=0",
    "WAIT queue=compute sem=0",
    "CONVCFG in_zero_point=-128 out_zero_point=127 act_min=-100 act_max=99 kernel_h=15 kernel_w=3 stride=7 in_rows=1023 in_row_pitch=4095",
    "VEC op=copy in_bank=1 out_bank=1 in2_addr=65535 in2_zero_point=-1 channel_groups=255 out_rows=1023 out_cols=4095 multiplier_a=65535 multiplier_b=1 param_bank=1",
    "CONV in_bank=1 weight_bank=1 out_bank=1 oc_groups=255 out_rows=1023 ow_groups=255 last_group_cols=255 ic_groups=255 depthwise=1 init_from_acc=1 requantize=1",
    "SIGNAL queue=compute sem=2",
    "WAIT queue=store sem=2",
    "STORE bank=1 desc=1023 dram_offset=2147483647 buf_addr=4660",
    "END",
])


def test_cycles_only_counters_count_the_same_cycles_and_leave_the_rest_zero():
    """The same run (same random unit speeds) with all counters and with the cycle counter alone."""
    _, full = run_sequencer(PROGRAM, seed=1)
    _, lean = run_sequencer(PROGRAM, seed=1, template=Template(counters="cycles"))
    assert full["done"] and lean["done"]
    assert lean["cycles"] == full["cycles"]
    assert any(full["waiting"].values()) and not any(lean["waiting"].values())


def test_compact_sequencer_dispatches_every_field_its_units_read():
    """Without registers and loops, with used-only queue fields and the SPRAM program memory:
    every command reaches its unit with all of its fields (extreme values) intact."""
    expected = reference_dispatch(STRAIGHT)
    log, result = run_sequencer(STRAIGHT, seed=3, template=COMPACT)
    assert result["done"]
    for q in QUEUES:
        assert [command for command, _, _ in log[q]] == expected[q], q


NARROW = {"dram_offset": 17, "buf_addr": 11, "desc": 9}  # the iCEBreaker's transfer units


def test_narrowed_transfer_fields_reach_their_units_as_their_low_bits():
    """With `field_bits`, a LOAD's or STORE's DRAM offset, buffer address and descriptor index
    arrive as their low 17, 11 and 9 bits (the rest reads 0); every other field is intact."""
    expected = reference_dispatch(STRAIGHT)
    for q in ("load", "store"):
        expected[q] = [Instruction.make(ins.opcode, **{name: value & ((1 << NARROW[name]) - 1) if name in NARROW
                                                       else value for name, value in ins.fields.items()})
                       for ins in expected[q]]
    log, result = run_sequencer(STRAIGHT, seed=5, template=COMPACT, field_bits=NARROW)
    assert result["done"]
    for q in QUEUES:
        assert [command for command, _, _ in log[q]] == expected[q], q
    assert log["load"][0][0]["dram_offset"] == -123456 % (1 << 17)


def test_used_queue_bits_cover_each_units_fields_and_drop_the_rest():
    """Against the field lists of docs/isa.md: the load queue needs the opcode bits that tell
    WAIT, SIGNAL and LOAD apart (00101, 00110, 00111: 2 bits) and the LOAD fields without
    register numbers (2+1+10+32+16+12+12; WAIT/SIGNAL's semaphore number lies inside
    buffer/bank/desc), the store queue 4 opcode bits (WAIT, SIGNAL, STORE: 01000) and bank, desc,
    dram_offset, buf_addr (1+10+32+16), the compute queue 4 opcode bits (WAIT, SIGNAL, 01001,
    01010, 01011) and the widest payload, VEC's (91). With registered kinds (WAIT, SIGNAL or
    command beside each entry) only the bits that tell the command opcodes apart: none for LOAD
    or STORE alone, 2 for the compute queue."""
    registered = Template(queue_kinds="registered")
    assert {q: opcode_constants(q) for q in QUEUES} == {"load": {2: 1, 3: 0, 4: 0}, "store": {4: 0},
                                                       "compute": {4: 0}}
    assert {q: opcode_constants(q, registered) for q in QUEUES} == {
        "load": {0: 1, 1: 1, 2: 1, 3: 0, 4: 0}, "store": {0: 0, 1: 0, 2: 0, 3: 1, 4: 0}, "compute": {2: 0, 3: 1, 4: 0}}
    for template, opcode_bits in ((Template(), {"load": 2, "store": 4, "compute": 4}),
                                  (registered, {"load": 0, "store": 0, "compute": 2})):
        widths = {q: sum(stop - start for start, stop in used_bits(q, template)) for q in QUEUES}
        assert widths == {"load": opcode_bits["load"] + 85, "store": opcode_bits["store"] + 59,
                          "compute": opcode_bits["compute"] + 91}
        # compiler pointer steps: CONVCFG's step fields (16 + 16 bits after its first 71) are read,
        # in_rows is not (it lies inside VEC's fields anyway)
        compiler = replace(template, address_steps="compiler")
        assert sum(stop - start for start, stop in used_bits("compute", compiler)) == opcode_bits["compute"] + 71 + 32
        # narrowed transfer fields: 15 + 5 + 1 bits fewer in LOAD and in STORE entries
        narrow = {q: sum(stop - start for start, stop in used_bits(q, compiler, NARROW)) for q in QUEUES}
        assert narrow == {"load": opcode_bits["load"] + 85 - 21, "store": opcode_bits["store"] + 59 - 21,
                          "compute": opcode_bits["compute"] + 71 + 32}
