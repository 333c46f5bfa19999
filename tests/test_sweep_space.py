"""Design-space files: values, ranges, points over the base, and one clear error per mistake."""
from __future__ import annotations

import itertools
import math

import pytest

from boards.devices import device
from explore.sweep.evaluate import over_device
from explore.sweep.resources import estimate
from hwgen.config import config_from_dict
from common.errors import ConfigError, HwgenError
from explore.sweep.space import SpaceError, load_space, parse_space, read_base
from hw_configs import data_config_path


def write(tmp_path, text: str):
    path = tmp_path / "space.yaml"
    path.write_text(text)
    return path


def test_lists_ranges_and_scalars_expand_to_the_cartesian_product(tmp_path):
    space = load_space(write(tmp_path, """
base: default
pe:
  rows: [4, 8]
  cols: {min: 2, max: 16, factor: 2}
  simd: 4
buffers:
  input_bytes: {min: 32768, max: 98304, step: 32768}
dram:
  bandwidth_bytes_per_cycle: {min: 0.5, max: 2, step: 0.5}
"""))
    expected_axes = {"pe.rows": [4, 8], "pe.cols": [2, 4, 8, 16], "pe.simd": [4],
                     "buffers.input_bytes": [32768, 65536, 98304],
                     "dram.bandwidth_bytes_per_cycle": [0.5, 1.0, 1.5, 2.0]}
    assert {axis.field: list(axis.values) for axis in space.axes} == expected_axes
    points = list(space.points())
    assert space.size == len(points) == 2 * 4 * 1 * 3 * 4
    combos = list(itertools.product(*expected_axes.values()))
    base = read_base("default")
    for point, combo in zip(points, combos):
        config = config_from_dict(point.config)
        rows, cols, simd, input_bytes, bandwidth = combo
        assert (config.pe.rows, config.pe.cols, config.pe.simd) == (rows, cols, simd)
        assert config.buffers.input_bytes == input_bytes
        assert config.dram.bandwidth_bytes_per_cycle == bandwidth
        # everything not swept comes from the base; energies follow the swept buffer sizes
        assert config.buffers.weight_bytes == base["buffers"]["weight_bytes"]
        assert config.dram.latency_cycles == base["dram"]["latency_cycles"]
        # docs/config.md: 6 pJ per 16 bits at a 32 KB bank, x1.5 per doubling, halved per byte
        bank = input_bytes / 2
        assert config.energy.input_buffer_pj_per_byte == pytest.approx(6 * (bank / 32768) ** math.log2(1.5) / 2)
    assert points[0].label == "r4 c2 s4 in32K bw0.5"
    assert len({p.label for p in points}) == len(points)


def test_template_options_are_swept_by_value(tmp_path):
    space = load_space(write(tmp_path, """
base: icebreaker
pe: {rows: [2, 4]}
template:
  queue_fields: [all, used]
  loops_and_registers: [true, false]
  merged_banks: [[], [input, param]]
  queue_depth: 2
"""))
    points = list(space.points())
    assert space.size == len(points) == 2 * 2 * 2 * 2 * 1
    combos = itertools.product([2, 4], ["all", "used"], [True, False], [(), ("input", "param")])
    for point, (rows, fields, loops, merged) in zip(points, combos):
        template = config_from_dict(point.config).template
        assert (template.queue_fields, template.loops_and_registers, template.merged_banks) == (fields, loops, merged)
        assert template.queue_depth == 2 and template.program_memory == "spram"  # the rest from the base
        assert point.values["template.merged_banks"] == ("+".join(merged) or "none")
    assert points[-1].label == "r4 queue_fields=used loops_and_registers=false merged_banks=input+param queue_depth=2"


def test_hw_overrides_the_space_base(tmp_path):
    space = load_space(write(tmp_path, "base: default\npe: {rows: [2]}\n"), str(data_config_path("ice40up5k")))
    config = config_from_dict(next(space.points()).config)
    assert config.device == "iCE40UP5K" and config.pe.rows == 2 and config.pe.cols == 2


@pytest.mark.parametrize("name, size", [("default", 2 * 3 * 2 * 2 * 2), ("icebreaker", 2 * 2 * 2 * 2 * 2)])
def test_shipped_spaces_generate_only_valid_configurations(name, size):
    space = load_space(name)
    errors = []
    for point in space.points():
        try:
            config_from_dict(point.config)
        except ConfigError as error:
            errors.append(str(error))
    assert space.size == size and errors == []


@pytest.mark.parametrize("text, culprit, allowed", [
    ("pe: {rows: [3, 0]}", "pe.rows", "an integer in [1, 256]"),
    ("pe: {simd: [2, 3]}", "pe.simd", "a power of two"),
    ("pe: {depth: [2]}", "pe.depth", "allowed: clock_mhz, instances, pe.rows"),
    ("widths: {activation: [8]}", "widths", "allowed: clock_mhz"),
    ("pe: {rows: {min: 2, max: 8}}", "pe.rows", "exactly one of step"),
    ("pe: {rows: {min: 2, max: 8, step: 2, factor: 2}}", "pe.rows", "exactly one of step"),
    ("pe: {rows: {min: 8, max: 2, step: 2}}", "pe.rows", "min 8 exceeds max 2"),
    ("pe: {rows: {min: 2, max: 8, step: 0}}", "pe.rows", "expected a positive number"),
    ("pe: {rows: {min: 2, max: 8, factor: 1}}", "pe.rows", "factor > 1"),
    ("pe: {rows: {min: 2, max: 8, by: 2}}", "pe.rows", "unknown range key 'by'"),
    ("pe: {rows: {min: 2, max: 7, factor: 1.5}}", "pe.rows", "an integer"),
    ("pe: {rows: []}", "pe.rows", "at least one value"),
    ("pe: {rows: [4, 4]}", "pe.rows", "each value may appear once"),
    ("pe: {rows: four}", "pe.rows", "a list of numbers"),
    ("pe: {rows: [true]}", "pe.rows", "an integer"),
    ("pe: [4]", "pe", "a mapping of fields"),
    ("dram: {bandwidth_bytes_per_cycle: [0]}", "dram.bandwidth_bytes_per_cycle", "a number in"),
    ("[1, 2]", "space.yaml", "top level must be a mapping"),
    ("pe: {rows: [4", "space.yaml", "not valid YAML"),
    ("base: 3\npe: {rows: [4]}", "base", "expected a config file or shipped config name"),
    ("template: {queue_fields: [all, some]}", "template.queue_fields", "one of: all, used"),
    ("template: {merged_banks: [input]}", "template.merged_banks", "each a list"),
    ("template: {merged_banks: [[input, output]]}", "template.merged_banks", "input, weight, param, acc"),
    ("template: {wide: [true]}", "template.wide", "template.queue_fields"),
])
def test_mistakes_get_one_error_naming_the_field_and_what_is_allowed(tmp_path, text, culprit, allowed):
    with pytest.raises(SpaceError) as error:
        load_space(write(tmp_path, text))
    assert culprit in str(error.value) and allowed in str(error.value)
    assert isinstance(error.value, HwgenError)


def test_a_missing_space_or_base_file_is_an_error(tmp_path):
    with pytest.raises(SpaceError, match="no-such.yaml: cannot read"):
        load_space(tmp_path / "no-such.yaml")
    with pytest.raises(HwgenError, match="nowhere.yaml: cannot read"):
        load_space(write(tmp_path, "base: nowhere.yaml\npe: {rows: [4]}"))


def test_too_many_points_is_an_error():
    base = read_base("default")
    with pytest.raises(SpaceError, match="at most 1000000"):
        parse_space({"pe": {"rows": {"min": 1, "max": 256, "step": 1}, "cols": {"min": 1, "max": 256, "step": 1},
                            "simd": [1, 2, 4, 8, 16, 32, 64, 128]}, "dram": {"latency_cycles": [1, 2]}}, base)


@pytest.mark.parametrize("name, device_name", [("default", "ecp5-85f"), ("icebreaker", "ice40-up5k")])
def test_every_point_of_a_shipped_space_has_a_resource_estimate(name, device_name):
    """The sweep can estimate every point (none stops at a template option without calibration)
    and at least one point fits the space's device."""
    target = device(device_name)
    fits = [not over_device(estimate(config_from_dict(point.config), target.family), target) for point in load_space(name).points()]
    assert any(fits)
