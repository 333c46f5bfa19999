"""Every shipped configuration fits the device it names, and `default` is the fastest of those
naming its device that build.

Fitting: the sweep's resource estimate (`explore.sweep.resources.estimate`, checked by
`explore.sweep.evaluate.over_device` as a sweep point is) within the device's totals
(`boards.devices`), its LUTs and flip-flops raised by the estimate's stated error
(`LOGIC_ERROR`, 25 %: the leave-one-out error over the stored syntheses it is fitted to, none of
which is a shipped configuration); DSPs and RAM blocks are counted exactly. The estimate covers
the accelerator with an empty program ROM; a board's SoC adds main memory, the host bridge and
the program's ROMs, which its build report shows (docs/boards.md).

Building: a configuration builds when its board's SoC placed and routed at its clock or above
(`BOARD_FMAX_MHZ`, nextpnr's figures from docs/boards.md); speed is the planner's images/s on
ResNet-18 at the configured clock.

`setup_a` and `setup_b` are exempt: they are the e-PlaNNer reference's paper configurations
(32x1x32 PEs at 1.2 GHz, `device: generic`), for the planner's comparisons, not for an FPGA.
"""
from __future__ import annotations

import math
from dataclasses import replace

import pytest

from boards.devices import DEVICES, Device, Resources
from explore.sweep.driver import resolve_device
from explore.sweep.evaluate import over_device
from explore.sweep.resources import LOGIC_ERROR, estimate
from hw_configs import data_config
from boards.measured_fmax import BOARD_FMAX_MHZ
from hwgen.config import CONFIG_DIR, AcceleratorConfig, load_config
from planner.frontend import load_network
from planner.plan import plan_network
from planner.zoo import resolve_model

PAPER = ("setup_a", "setup_b")
SHIPPED = sorted(path.stem for path in CONFIG_DIR.glob("*.yaml"))
NOT_YET_DEFAULT = ("ulx3s-85f-128",)
"""Built and faster than `default`, which has not moved to it yet: the tests, the demo and CI's
RTL simulations run `default` (the open item of issue 21 item 7; docs/boards.md)."""


def named_device(config: AcceleratorConfig) -> Device:
    """The device of `config.device` (a part such as LFE5U-85F, or a device name)."""
    name = resolve_device(None, config.device)
    assert name is not None, f"{config.name}: device {config.device!r} is no known device or part"
    return DEVICES[name]


def with_error(used: Resources) -> Resources:
    """`used` with its LUTs and flip-flops raised by the estimate's stated error."""
    return replace(used, lut=math.ceil(used.lut * (1 + LOGIC_ERROR)), ff=math.ceil(used.ff * (1 + LOGIC_ERROR)))


def excess(config: AcceleratorConfig) -> list[str]:
    """What the estimate, at its error bound, needs beyond the device's totals, e.g.
    `dsp 163 > 156` (none: it fits)."""
    device = named_device(config)
    return over_device(with_error(estimate(config, device.family)), device)


def builds(config: AcceleratorConfig) -> bool:
    return BOARD_FMAX_MHZ.get(config.name, 0.0) >= config.clock_mhz


def resnet18_images_per_s(config: AcceleratorConfig) -> float:
    """The planner's images/s of ResNet-18 (224x224) on `config` at its clock."""
    return config.clock_mhz * 1e6 / plan_network(load_network(resolve_model("resnet18")), config).cycles


@pytest.mark.parametrize("name", [name for name in SHIPPED if name not in PAPER])
def test_shipped_configuration_fits_its_device(name):
    assert excess(load_config(name)) == []


def test_the_default_is_a_shipped_configuration_that_fits():
    assert load_config().name in SHIPPED and load_config().name not in PAPER


def test_the_default_is_the_fastest_configuration_of_its_device_that_builds():
    """Among the shipped configurations naming the default's device, the default builds and no
    other that builds is predicted faster."""
    default = load_config()
    rivals = [config for config in map(load_config, SHIPPED) if config.device == default.device]
    speed = {config.name: resnet18_images_per_s(config) for config in rivals}
    built = [config.name for config in rivals if builds(config)]
    assert default.name in built
    assert max((name for name in built if name not in NOT_YET_DEFAULT), key=speed.get) == default.name, speed
    assert all(name in built and speed[name] > speed[default.name] for name in NOT_YET_DEFAULT), speed


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
