"""Co-simulation of the emitted Verilog with cocotb (Icarus, Verilator): `sim.cosim.runner.run_cosim`
and `run_cosim_batch`. Kept empty so that the testbench, imported inside the simulator, loads only
what it needs."""
