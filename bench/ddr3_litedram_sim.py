"""The OrangeCrab's DDR3 main memory simulated as far as LiteDRAM's own models go
(`boards.ddr3.simulation`): LiteDRAMCore with the ECP5 PHY's settings on LiteDRAM's DFI-level
`SDRAMPHYModel` (its DFI timing checker on where said) in migen, the Amaranth side in the
Amaranth simulator.

1. init: `Ddr3MainMemory` (its init sequencer, the program's waits cut to a few cycles) in
   lockstep with LiteDRAM: the DFI commands the DFI injector issues and its control lines
   (RESET#, CKE, ODT) against litedram.init's sequence (NOPs aside) for the MT41K64M16 at 48 MHz; the
   program's real waits against the datasheet's minimums.
2. traffic: after `init_done`, in the same lockstep (timing checker on), random accelerator
   write bursts (byte masks), read bursts and host byte accesses through the adapter into
   LiteDRAM and back, against a golden memory.
3. figures: read latency and sequential read and write bandwidth through the adapter on
   LiteDRAM (lockstep), for the configuration's `dram` line, and the native port's latencies.
4. digits: the digits CNN on the accelerator (orangecrab configuration) with `Ddr3MainMemory`
   on the native-port model (`sim.litedram_native`, LiteDRAM's native latencies from part 3), outputs against the golden model, its
   native command log then replayed on LiteDRAM, the image placed in the model's banks (timing
   checker off: migen runs at some 40 cycles per second): every read must return the word the
   log has.

Needs the optional dependencies (`pip install -e .[litedram]`). Not a test: nothing imports it.

5. (`--full tiny|digits`, alone) a network on the accelerator with `Ddr3MainMemory` in lockstep
   with LiteDRAM on its model, the image placed in the model's banks: outputs against the golden
   model, cycles against the program model.

Usage: python bench/ddr3_litedram_sim.py [--ops 60] [--kib 1] [--skip-digits] [--replay N] | --full tiny|digits
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import numpy as np  # noqa: E402
from amaranth.sim import Simulator  # noqa: E402

from boards.ddr3.init import CONTROL, RESET_LOW_US, init_program, minimum_waits  # noqa: E402
from boards.ddr3.litedram import generate, litedram_modules  # noqa: E402
from boards.ddr3.memory import Ddr3MainMemory  # noqa: E402
from boards.ddr3.simulation import (LiteDramModel, lockstep, model_bytes, replay, run_on_litedram,  # noqa: E402
                                    run_on_native_port, short_waits)
from hwgen.memory_port import MemoryPort  # noqa: E402
from ddr3_helpers import RandomTraffic  # noqa: E402
from sdram_helpers import Clock  # noqa: E402

CLOCK_HZ = 48e6
NOP = 0b1000  # chip select alone: the controller's idle command as it takes over
REFRESH = 0b1110
ROWS = 4  # rows per bank in the model: 64 KiB


def expected_dfi(sequence) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """From litedram.init's sequence: the commands (~cs ~ras ~cas ~we bits, address, bank) and
    the control states (RESET#, CKE, ODT) in order, starting from all low."""
    commands, controls = [], [(0, 0, 0)]
    for _, address, bank, command, _ in sequence:
        names = command.split("|")
        if command.startswith("DFII_CONTROL"):
            controls.append(tuple(int(f"DFII_CONTROL_{flag}" in names) for flag in ("RESET_N", "CKE", "ODT")))
        else:
            bits = sum(1 << shift for flag, shift in (("CS", 3), ("RAS", 2), ("CAS", 1), ("WE", 0))
                       if f"DFII_COMMAND_{flag}" in names)
            commands.append((bits, address, bank))
    return commands, controls


def init_and_traffic(core, ops: int, seed: int) -> tuple[dict, RandomTraffic]:
    """Parts 1 and 2 in one lockstep run."""
    LiteDramModel.VERBOSITY = 1
    model = LiteDramModel(CLOCK_HZ, ROWS)
    memory = Ddr3MainMemory(MemoryPort(2, 8), model_bytes(ROWS), model.address_bits, model.data_bits,
                            short_waits(init_program(core, CLOCK_HZ)))
    log: list = []
    controls: list = []
    phase = model.dfi.phases[0]
    traffic = RandomTraffic(memory, model_bytes(ROWS), ops, seed)

    async def watch_controls(ctx) -> None:
        while True:
            state = (model.get(phase.reset_n), model.get(phase.cke), model.get(phase.odt))
            if not controls or controls[-1][1] != state:
                controls.append((ctx.get(memory.init_done), state))
            await ctx.tick()

    sim = Simulator(memory)
    sim.add_clock(1 / CLOCK_HZ)
    sim.add_testbench(lockstep(model, memory, log), background=True)
    sim.add_testbench(watch_controls, background=True)
    sim.add_testbench(traffic.consume, background=True)
    sim.add_testbench(traffic.drive)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):  # the DFI timing checker's reports
        sim.run()
    injected = [command[1:] for cycle, commands in log if cycle < traffic.init_cycles for command in commands
                if command[1] != NOP]
    result = dict(injected=injected, controls=controls,
                  violations=[line for line in printed.getvalue().splitlines()
                              if "violation" in line or "Late refresh" in line],
                  refreshes=sum(1 for cycle, commands in log if cycle >= traffic.init_cycles
                                for _, bits, _, _ in commands if bits == REFRESH))
    return result, traffic


def figures(core, size: int) -> dict:
    """Read latency (request taken to first beat: a closed row, then the open row 20 cycles
    after the first burst's last beat) and bytes per cycle of sequential 8-beat read bursts and
    write bursts over `size` bytes, through the adapter on LiteDRAM (lockstep)."""
    LiteDramModel.VERBOSITY = 0
    model = LiteDramModel(CLOCK_HZ, ROWS)
    memory = Ddr3MainMemory(MemoryPort(2, 8), model_bytes(ROWS), model.address_bits, model.data_bits,
                            short_waits(init_program(core, CLOCK_HZ)))
    result: dict = {}

    async def drive(ctx) -> None:
        clock = Clock()
        await clock.until(ctx, memory.init_done, what="init_done")
        ctx.set(memory.port.rd_data.ready, 1)
        latencies = []
        for addr in (0x100, 0x110):
            taken = await clock.send(ctx, memory.port.rd_req, {"addr": addr, "beats": 8})
            await clock.until(ctx, memory.port.rd_data.valid, what="read data")
            latencies.append(clock.cycle - 1 - taken)
            for _ in range(7 + 20):
                await clock.tick(ctx)
        result["latency"] = latencies
        first = None
        for addr in range(0, size, 16):
            for beat in range(8):
                taken = await clock.send(ctx, memory.port.wr, {"addr": addr + 2 * beat, "data": addr + beat,
                                                               "mask": 3, "last": beat == 7})
                first = taken if first is None else first
        result["write"] = size / (clock.cycle - first)
        for _ in range(40):
            await clock.tick(ctx)
        beats, start = [], clock.cycle

        async def collect() -> None:
            while len(beats) < size // 2:
                valid, = await clock.tick(ctx, memory.port.rd_data.valid)
                if valid:
                    beats.append(clock.cycle - 1)
        ctx.set(memory.port.rd_req.valid, 1)
        for addr in range(0, size, 16):
            ctx.set(memory.port.rd_req.payload, {"addr": addr, "beats": 8})
            while True:
                ready, valid = await clock.tick(ctx, memory.port.rd_req.ready, memory.port.rd_data.valid)
                if valid:
                    beats.append(clock.cycle - 1)
                if ready:
                    break
        ctx.set(memory.port.rd_req.valid, 0)
        await collect()
        result["read"] = size / (beats[-1] + 1 - start)

    native: dict = {"read": [], "write": []}

    async def monitor(ctx) -> None:  # native commands taken, and their data
        commands, cycle = [], 0
        dram = memory.dram
        async for _, _, valid, ready, we, rvalid, wready in ctx.tick().sample(
                dram.cmd.valid, dram.cmd.ready, dram.cmd.payload.we, dram.rdata.valid, dram.wdata.ready):
            if valid and ready:
                commands.append((cycle, we))
            for kind, happened in (("read", rvalid), ("write", wready)):
                if happened:
                    taken = next(index for index, (_, we) in enumerate(commands) if we == (kind == "write"))
                    native[kind].append(cycle - commands.pop(taken)[0])
            cycle += 1

    sim = Simulator(memory)
    sim.add_clock(1 / CLOCK_HZ)
    sim.add_testbench(lockstep(model, memory), background=True)
    sim.add_process(monitor)
    sim.add_testbench(drive)
    sim.run()
    result["native"] = {kind: (min(cycles), max(cycles)) for kind, cycles in native.items() if cycles}
    return result


def check_waits(core) -> list[str]:
    """The program's waits after RESET# low, RESET# release and ZQCL against the datasheet."""
    program = init_program(core, CLOCK_HZ)
    lines = [f"  RESET# low: {program[0].wait} cycles = {program[0].wait / CLOCK_HZ * 1e6:.1f} us "
             f"(JEDEC >= {RESET_LOW_US} us)"]
    minimum = minimum_waits(CLOCK_HZ)
    for step in program:
        if step.name == "dfii_control0" and step.value == CONTROL["DFII_CONTROL_ODT"] | CONTROL["DFII_CONTROL_RESET_N"]:
            lines.append(f"  RESET# high to CKE: {step.wait} cycles = {step.wait / CLOCK_HZ * 1e6:.1f} us "
                         f"(JEDEC >= 500 us: {minimum['Release reset']} cycles)")
        if step.name == "dfii_pi0_command_issue" and step.wait >= minimum["ZQ Calibration"]:
            lines.append(f"  after ZQCL: {step.wait} cycles = {2 * step.wait} tCK (tZQinit >= 512 tCK)")
    return lines


def digits(core, replay_count: int | None, latencies: dict) -> None:
    """Part 4, the native-port model with LiteDRAM's shortest native latencies (`latencies`:
    command taken to read data, to write data taken, as part 3 measured them)."""
    from hwgen.config import load_config
    from planner.frontend import load_network
    from planner.pipeline import plan_and_compile
    from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
    from sim.golden import run_quantized
    from sim.golden.calibration import quantize_network
    net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
    compilation = plan_and_compile(net, load_config("orangecrab"))
    x = net.input_quant.quantize(load_digits_split()[2][3])
    start = time.monotonic()
    native = run_on_native_port(compilation.compiled, x, core, read_latency=latencies["read"][0] - 1,
                                write_latency=latencies["write"][0] - 1)
    golden = run_quantized(net, x)
    exact = all(np.array_equal(native.run.outputs[name], golden[name]) for name in net.outputs)
    traffic = native.run.traffic
    print(f"4. digits CNN (orangecrab configuration) on the native-port model: outputs "
          f"{'equal' if exact else 'DIFFER FROM'} the golden model's; {native.run.cycles:,} cycles "
          f"(program model: {compilation.prediction.cycles:,}); {traffic.bytes_read:,} bytes read, "
          f"{traffic.bytes_written:,} written; {len(native.commands):,} native commands "
          f"({time.monotonic() - start:.0f} s)")
    commands = native.commands if replay_count is None else native.commands[:replay_count]
    image = compilation.compiled.dram_with_input(x).tobytes()
    rows = -(-len(image) // model_bytes(1))
    LiteDramModel.VERBOSITY = 0
    start = time.monotonic()
    model = LiteDramModel(CLOCK_HZ, max(rows, 1))
    mismatches, cycles = replay(model, commands, image)
    reads = sum(not write for _, write, _, _, _ in commands)
    print(f"   replayed on LiteDRAM: {len(commands):,} commands ({reads:,} reads) from the {len(image):,}-byte "
          f"image placed in the model, {cycles:,} cycles: {mismatches} reads differ "
          f"({time.monotonic() - start:.0f} s)")


def full_run(core, network: str) -> None:
    """Part 5: `network` ("digits": the digits CNN, orangecrab configuration; "tiny": the tests'
    tiny network, its 16-bit configuration) on the accelerator with `Ddr3MainMemory` in lockstep
    with LiteDRAM."""
    from hwgen.config import load_config
    from planner.pipeline import plan_and_compile
    from sim.golden import run_quantized
    if network == "tiny":
        from soc_helpers import TINY_16, tiny_input, tiny_network
        net, config, x = tiny_network(), TINY_16, tiny_input(0)
    else:
        from planner.frontend import load_network
        from planner.zoo.digits import DIGITS_MODEL_PATH, calibration_inputs, load_digits_split
        from sim.golden.calibration import quantize_network
        net = quantize_network(load_network(DIGITS_MODEL_PATH), calibration_inputs())
        config, x = load_config("orangecrab"), net.input_quant.quantize(load_digits_split()[2][3])
    compilation = plan_and_compile(net, config)
    start = time.monotonic()
    run = run_on_litedram(compilation.compiled, x, core)
    golden = run_quantized(net, x)
    exact = all(np.array_equal(run.outputs[name], golden[name]) for name in net.outputs)
    print(f"5. {network} network ({config.name} configuration) on the accelerator in lockstep with LiteDRAM: "
          f"outputs {'equal' if exact else 'DIFFER FROM'} the golden model's; {run.cycles:,} cycles (program "
          f"model: {compilation.prediction.cycles:,}); {run.traffic.bytes_read:,} bytes read, "
          f"{run.traffic.bytes_written:,} written ({time.monotonic() - start:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=60, help="random accelerator/host operations in part 2")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kib", type=int, default=1, help="KiB per bandwidth run in part 4")
    parser.add_argument("--skip-digits", action="store_true")
    parser.add_argument("--replay", type=int, help="replay only the first N native commands of the digits run")
    parser.add_argument("--full", choices=("tiny", "digits"),
                        help="only part 5: the network on the accelerator in lockstep with LiteDRAM (digits: about "
                             "1,300 s of CPU)")
    args = parser.parse_args()
    litedram_modules()
    core = generate(CLOCK_HZ)
    if args.full:
        full_run(core, args.full)
        return
    start = time.monotonic()
    result, traffic = init_and_traffic(core, args.ops, args.seed)
    commands, controls = expected_dfi(core.init_sequence)
    seen_controls = [state for done, state in result["controls"] if not done]
    print(f"1. init: {len(result['injected'])} DFI commands before init_done "
          f"({traffic.init_cycles} cycles with the waits cut to a few cycles)")
    for bits, address, bank in result["injected"]:
        name = {0b1111: "MRS", 0b1001: "ZQCL"}.get(bits, f"cmd {bits:04b}")
        print(f"     {name} address {address:#06x} bank {bank}")
    print(f"   litedram.init's commands: {'match' if result['injected'] == commands else 'DIFFER'}; "
          f"control (RESET#, CKE, ODT) {seen_controls} vs {controls}: "
          f"{'match' if seen_controls == controls else 'DIFFER'}")
    print("   waits of the real program (48 MHz):")
    print("\n".join(check_waits(core)))
    print(f"2. traffic: {args.ops} operations, {len(traffic.expected)} read beats and {len(traffic.host_expected)} "
          f"host reads: {'all equal' if traffic.exact else 'MISMATCH'} the golden memory; {result['refreshes']} "
          f"refreshes; DFI timing checker: {len(result['violations'])} violations {result['violations'][:3]} "
          f"({traffic.cycles} cycles after init, {time.monotonic() - start:.0f} s)")
    start = time.monotonic()
    measured = figures(core, args.kib * 1024)
    print(f"3. figures through the adapter on LiteDRAM, {args.kib} KiB sequential 8-beat bursts: read "
          f"{measured['read']:.3f} B/cycle, write {measured['write']:.3f} B/cycle (peak 2); read latency "
          f"{measured['latency'][0]} cycles to a closed row, {measured['latency'][1]} to the open row; "
          f"native port, command taken to read data / to write data taken: {measured['native']} cycles (min, max) "
          f"({time.monotonic() - start:.0f} s)")
    if not args.skip_digits:
        digits(core, args.replay, measured["native"])


if __name__ == "__main__":
    main()
