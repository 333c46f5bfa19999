"""Co-simulation of the emitted Verilog with cocotb (Icarus, Verilator): `run_cosim`."""
from sim.cosim.runner import SIMULATORS, CosimError, CosimRun, run_cosim

__all__ = ["SIMULATORS", "CosimError", "CosimRun", "run_cosim"]
