"""Golden integer model of the accelerator (numpy)."""
from sim.golden.executor import run_float, run_quantized

__all__ = ["run_float", "run_quantized"]
