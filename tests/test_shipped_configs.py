"""Every shipped configuration fits the device it names: the sweep's resource estimate
(`explore.sweep.resources.estimate`, checked by `explore.sweep.evaluate.over_device` as a
sweep point is) within the device's totals (`boards.devices`).

The estimate covers the accelerator with an empty program ROM; a board's SoC adds main memory,
the host bridge and the program's ROMs, which its build report shows (docs/boards.md).
`setup_a` and `setup_b` are exempt: they are the e-PlaNNer reference's paper configurations
(32x1x32 PEs at 1.2 GHz, `device: generic`), for the planner's comparisons, not for an FPGA.
"""
from __future__ import annotations

import pytest

from boards.devices import DEVICES, Device
from explore.sweep.driver import resolve_device
from explore.sweep.evaluate import over_device
from explore.sweep.resources import estimate
from hw_configs import data_config
from hwgen.config import CONFIG_DIR, AcceleratorConfig, load_config

PAPER = ("setup_a", "setup_b")
SHIPPED = sorted(path.stem for path in CONFIG_DIR.glob("*.yaml"))


def named_device(config: AcceleratorConfig) -> Device:
    """The device of `config.device` (a part such as LFE5U-85F, or a device name)."""
    name = resolve_device(None, config.device)
    assert name is not None, f"{config.name}: device {config.device!r} is no known device or part"
    return DEVICES[name]


def excess(config: AcceleratorConfig) -> list[str]:
    """What the estimate needs beyond the device's totals, e.g. `dsp 163 > 156` (none: it fits)."""
    device = named_device(config)
    return over_device(estimate(config, device.family), device)


@pytest.mark.parametrize("name", [name for name in SHIPPED if name not in PAPER])
def test_shipped_configuration_fits_its_device(name):
    assert excess(load_config(name)) == []


def test_the_default_is_a_shipped_configuration_that_fits():
    assert load_config().name in SHIPPED and load_config().name not in PAPER


@pytest.mark.parametrize("name", PAPER)
def test_paper_configurations_name_no_device(name):
    config = load_config(name)
    assert config.device == "generic" and resolve_device(None, config.device) is None


def test_a_configuration_beyond_its_device_is_refused():
    """The same check refuses the former default (8x4x4 at 100 MHz, 128 KB buffers on the
    LFE5U-85F) and the full template at 2x2x2 on the iCE40UP5K."""
    ecp5 = excess(data_config("ecp5-85f"))
    assert [item.split()[0] for item in ecp5] == ["dsp", "bram"] and "dsp 163 > 156" in ecp5
    assert {item.split()[0] for item in excess(data_config("ice40up5k"))} >= {"dsp", "bram"}
