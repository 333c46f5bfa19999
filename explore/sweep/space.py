"""The design space of a sweep: a base hardware configuration and, per swept field, its values.

A space file (YAML) names fields of the hardware configuration (`docs/config.md`) by section and
gives each a scalar, a list, or a range::

    base: default                         # optional: a config file or shipped name (--hw overrides)
    pe:
      rows: [4, 8, 16]                    # a list
      cols: {min: 2, max: 16, factor: 2}  # a geometric range: 2, 4, 8, 16 (powers of two)
      simd: 4                             # a single value
    buffers:
      input_bytes: {min: 32768, max: 131072, step: 32768}   # an arithmetic range
    dram:
      bandwidth_bytes_per_cycle: [1, 2, 4]

Template options (`template:` in `docs/config.md`) are swept by listing their values; a value of
`merged_banks` is itself a list, so its axis is a list of lists::

    template:
      queue_fields: [all, used]
      loops_and_registers: [true, false]
      merged_banks: [[], [input, param]]

The points are the cartesian product of the swept values over the base, in file order (first
field outermost). Every value must be allowed for its field; whether a whole point is a valid,
generatable configuration is decided per point (`explore.sweep.evaluate`).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from hwgen.config import config_fields, config_path, field_spec, plain, read_yaml, validated
from common.errors import ConfigError

SPACE_DIR = Path(__file__).parent.parent / "spaces"
"""Shipped space files (`explore/spaces/*.yaml`), usable by name."""
SWEEPABLE: dict[str, tuple[str, ...]] = {
    "pe": ("rows", "cols", "simd"),
    "buffers": ("input_bytes", "weight_bytes", "output_bytes"),
    "dram": ("bus_width_bits", "bandwidth_bytes_per_cycle", "latency_cycles", "burst_beats"),
    "template": tuple(spec.name for spec in config_fields() if spec.section == "template"),
}
"""Fields a space may sweep, by config section; `clock_mhz` and `instances` at the top level too."""
TOP_LEVEL = ("clock_mhz", "instances")
RANGE_KEYS = ("min", "max", "step", "factor")
MAX_POINTS = 1_000_000
SHORT = {"pe.rows": "r", "pe.cols": "c", "pe.simd": "s", "buffers.input_bytes": "in", "buffers.weight_bytes": "w",
         "buffers.output_bytes": "out", "dram.bus_width_bits": "bus", "dram.bandwidth_bytes_per_cycle": "bw",
         "dram.latency_cycles": "lat", "dram.burst_beats": "burst", "clock_mhz": "f",
         "instances": "k"}
"""Short names of the fields in point labels (template options appear as `name=value`)."""
Value = float | int | bool | str | tuple[str, ...]


class SpaceError(ConfigError):
    """A space file is unreadable or names a field or value that is not allowed."""


@dataclass(frozen=True)
class Axis:
    """One swept field (`section.name`, or a top-level name) and its values in sweep order."""

    field: str
    values: tuple[Value, ...]


@dataclass(frozen=True)
class Point:
    """One configuration of the space: its position, swept values as shown in tables (a list
    value as `a+b`, an empty one as `none`) and YAML-shaped config."""

    index: int
    values: dict[str, float | int | bool | str]
    config: dict

    @property
    def label(self) -> str:
        """A short readable name, e.g. `r8 c4 s4 in128K queue_fields=used`."""
        return " ".join(f"{SHORT[field]}{_compact(value)}" if field in SHORT else f"{field.split('.')[-1]}={value}"
                        for field, value in self.values.items())


@dataclass(frozen=True)
class Space:
    """A base configuration (YAML mapping) and the swept axes."""

    base: dict
    axes: tuple[Axis, ...]
    source: str = "<space>"

    @property
    def size(self) -> int:
        return math.prod(len(axis.values) for axis in self.axes)

    def points(self) -> Iterator[Point]:
        """Every point, first axis outermost."""
        fields = [axis.field for axis in self.axes]
        for index, combo in enumerate(itertools.product(*(axis.values for axis in self.axes))):
            values = dict(zip(fields, combo))
            yield Point(index, {field: _shown(value) for field, value in values.items()}, _with_values(self.base, values))


def _shown(value: Value) -> float | int | bool | str:
    if isinstance(value, tuple):
        return "+".join(value) or "none"
    return str(value).lower() if isinstance(value, bool) else value


def _compact(value: float | int) -> str:
    if isinstance(value, int) and value >= 1024 and value % 1024 == 0:
        return f"{value // 1024}K"
    return f"{value:g}"


def _with_values(base: dict, values: dict[str, Value]) -> dict:
    config = {key: dict(value) if isinstance(value, dict) else value for key, value in base.items()}
    for field, value in values.items():
        if "." in field:
            section, name = field.split(".")
            config.setdefault(section, {})[name] = list(value) if isinstance(value, tuple) else value
        else:
            config[field] = value
    return config


def _allowed_fields() -> str:
    return ", ".join([*TOP_LEVEL, *(f"{s}.{n}" for s, names in SWEEPABLE.items() for n in names)])


def _check_value(field: str, value: Any) -> Value:
    """`value` (a list as a tuple) if the config's field allows it; SpaceError names both otherwise."""
    try:
        return plain(field_spec(field).check(value))
    except ConfigError as error:
        raise SpaceError(str(error)) from None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


MIN_FACTOR = 1.001
"""The smallest factor of a geometric range (closer to 1, the values are numerically the same)."""


def _range_count(field: str, spec: dict) -> int:
    """How many values the range `spec` holds, from its arithmetic (nothing is expanded); the
    range's keys, numbers and bounds are checked here."""
    unknown = set(spec) - set(RANGE_KEYS)
    if unknown:
        raise SpaceError(f"{field}: unknown range key {sorted(unknown)[0]!r}; a range is "
                         "{min, max, step} (arithmetic) or {min, max, factor} (geometric)")
    if "min" not in spec or "max" not in spec or ("step" in spec) == ("factor" in spec):
        raise SpaceError(f"{field}: a range needs min, max and exactly one of step (arithmetic) or factor (geometric)")
    low, high = spec["min"], spec["max"]
    increment = spec.get("step", spec.get("factor"))
    if not all(_is_number(v) and math.isfinite(v) for v in (low, high, increment)):
        raise SpaceError(f"{field}: range min, max, step and factor must be finite numbers, got {spec!r}")
    if low > high:
        raise SpaceError(f"{field}: range min {low} exceeds max {high}")
    if "step" in spec:
        if increment <= 0:
            raise SpaceError(f"{field}: step {increment} is not allowed; expected a positive number")
        return _bounded_count((high - low) / increment)
    if increment < MIN_FACTOR or low <= 0:
        raise SpaceError(f"{field}: factor {increment} from min {low} is not allowed; "
                         f"expected factor > 1 (at least {MIN_FACTOR}) and min > 0")
    return _bounded_count(math.log(high / low) / math.log(increment) if math.isfinite(high / low) else math.inf)


def _bounded_count(steps: float) -> int:
    """The values of a range spanning `steps` steps; above MAX_POINTS (or infinite): MAX_POINTS + 1."""
    return math.floor(steps + 1e-9) + 1 if steps < MAX_POINTS else MAX_POINTS + 1


def _expand_range(field: str, spec: dict) -> list[float | int]:
    """The values of a range whose count `_range_count` has bounded."""
    low, count = spec["min"], _range_count(field, spec)
    if "step" in spec:
        values = [low + k * spec["step"] for k in range(count)]
    else:
        values = [low * spec["factor"] ** k for k in range(count)]
    return [int(round(v)) if isinstance(low, int) and abs(v - round(v)) < 1e-9 * max(1.0, abs(v)) else v
            for v in values]


def _axis_count(field: str, spec: Any) -> int:
    """The number of values of a field's axis before it is expanded (ranges by arithmetic)."""
    if isinstance(spec, dict) and not field_spec(field).is_list:
        return _range_count(field, spec)
    return len(spec) if isinstance(spec, list) and spec else 1


def _axis(field: str, spec: Any) -> Axis:
    if field_spec(field).is_list:  # each value is itself a list
        if not isinstance(spec, list) or not spec or not all(isinstance(value, list) for value in spec):
            raise SpaceError(f"{field}: {spec!r} is not allowed; expected a list of values, each a list "
                             f"(e.g. [[], [input, param]])")
        raw = spec
    elif _is_number(spec) or (field.startswith("template.") and isinstance(spec, (str, bool))):
        raw = [spec]
    elif isinstance(spec, list):
        if not spec:
            raise SpaceError(f"{field}: an empty list; expected at least one value")
        raw = spec
    elif isinstance(spec, dict):
        raw = _expand_range(field, spec)
    else:
        raise SpaceError(f"{field}: {spec!r} is not allowed; expected a number, a list of numbers, "
                         "{min, max, step} or {min, max, factor}")
    values = tuple(_check_value(field, value) for value in raw)
    if len(set(values)) != len(values):
        raise SpaceError(f"{field}: values {list(values)} repeat; each value may appear once")
    return Axis(field, values)


def read_base(spec: str | Path | None, relative_to: Path | None = None) -> dict:
    """The YAML mapping of a base config file or shipped name (validated; energies left to default)."""
    if spec is not None and relative_to is not None and not Path(spec).is_absolute() and (relative_to / spec).exists():
        spec = relative_to / spec
    path = config_path(spec)
    data = read_yaml(path)
    validated(data, path)
    return data


def parse_space(data: Any, base: dict, source: str = "<space>") -> Space:
    """A space from its YAML mapping (without `base`) over the config mapping `base`."""
    if not isinstance(data, dict):
        raise SpaceError(f"{source}: top level must be a mapping of config sections to swept fields")
    _check_size(data, source)
    axes = []
    for key, value in data.items():
        if key in TOP_LEVEL:
            try:
                axes.append(_axis(key, value))
            except SpaceError as error:
                raise SpaceError(f"{source}: {error}") from None
            continue
        if key not in SWEEPABLE:
            raise SpaceError(f"{source}: {key}: not a sweepable section or field; allowed: {_allowed_fields()}")
        if not isinstance(value, dict):
            raise SpaceError(f"{source}: {key}: expected a mapping of fields ({', '.join(SWEEPABLE[key])})")
        for name, spec in value.items():
            if name not in SWEEPABLE[key]:
                raise SpaceError(f"{source}: {key}.{name}: not a sweepable field; allowed: {_allowed_fields()}")
            try:
                axes.append(_axis(f"{key}.{name}", spec))
            except SpaceError as error:
                raise SpaceError(f"{source}: {error}") from None
    space = Space(base, tuple(axes), source)
    if space.size > MAX_POINTS:
        raise SpaceError(f"{source}: {space.size} points; at most {MAX_POINTS} are allowed")
    return space


def _check_size(data: dict, source: str) -> None:
    """Refuse a space of more than MAX_POINTS points, counted from its lists and range
    arithmetic before any axis is expanded."""
    total = 1
    for key, value in data.items():
        specs = {key: value} if key in TOP_LEVEL else value if key in SWEEPABLE and isinstance(value, dict) else {}
        for name, spec in specs.items():
            field = key if key in TOP_LEVEL else f"{key}.{name}"
            if key in TOP_LEVEL or name in SWEEPABLE[key]:
                try:
                    total *= _axis_count(field, spec)
                except SpaceError as error:
                    raise SpaceError(f"{source}: {error}") from None
            if total > MAX_POINTS:
                raise SpaceError(f"{source}: more than {MAX_POINTS} points ({total} counted up to {field}); "
                                 f"at most {MAX_POINTS} are allowed")


def load_space(path: str | Path, base: str | Path | None = None) -> Space:
    """Read a space file; `base` (e.g. --hw) overrides the file's own `base` entry."""
    path = Path(path)
    if not path.exists() and (SPACE_DIR / f"{path}.yaml").exists():
        path = SPACE_DIR / f"{path}.yaml"
    data = read_yaml(path, SpaceError)
    if not isinstance(data, dict):
        raise SpaceError(f"{path}: top level must be a mapping of config sections to swept fields")
    data = dict(data)
    file_base = data.pop("base", None)
    if file_base is not None and not isinstance(file_base, str):
        raise SpaceError(f"{path}: base: {file_base!r} is not allowed; expected a config file or shipped config name")
    try:
        base_config = read_base(base if base is not None else file_base, path.parent)
    except ConfigError as error:
        if base is not None:
            raise
        raise SpaceError(f"{path}: base: {error}") from None
    return parse_space(data, base_config, str(path))

