"""Test-only hardware configurations (`tests/data/configs/`): fixed parameters that tests'
expected values were worked out for, independent of what the shipped configurations are.

- `ecp5-85f`: 8x4x4 PEs at 100 MHz, 128 KB buffers, 16-bit DRAM bus (full template).
- `ice40up5k`: 2x2x2 PEs at 24 MHz, 32 / 32 / 64 KB buffers, 8-bit DRAM bus (full template).

Neither fits the device it names; they are not shipped (`tests/test_shipped_configs.py`).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hwgen.config import AcceleratorConfig, load_config

DATA_CONFIGS = Path(__file__).parent / "data" / "configs"


def data_config_path(name: str) -> Path:
    """The YAML file of the test-only configuration `name`."""
    return DATA_CONFIGS / f"{name}.yaml"


def data_config(name: str) -> AcceleratorConfig:
    """The test-only configuration `name`, loaded and validated like a shipped one."""
    return load_config(data_config_path(name))


def any_config(name: str) -> AcceleratorConfig:
    """A test-only configuration if one is called `name`, else the shipped one."""
    return data_config(name) if data_config_path(name).exists() else load_config(name)


def one_memory(config: AcceleratorConfig) -> AcceleratorConfig:
    """`config` with its constants read at the `dram` figures of everything else: the memory of
    `sim.rtl_sim.run_rtl` (the iCEBreaker's flash has figures of its own, `dram.constants_*`,
    which `tests/test_icebreaker_flash.py` runs against the flash model)."""
    return replace(config, dram=replace(config.dram, constants_bandwidth_bytes_per_cycle=0, constants_latency_cycles=0))
