"""Reading a configuration: a YAML file, or a YAML-shaped mapping, into an `AcceleratorConfig`."""
from __future__ import annotations

from collections.abc import Hashable
from dataclasses import MISSING
from pathlib import Path
from typing import Any

import yaml

from common.errors import ConfigError
from hwgen.config.energy import default_energy
from hwgen.config.model import AcceleratorConfig, sections
from hwgen.config.sections import Buffers, Dram, Energy, PEArray, Template, Widths
from hwgen.config.spec import Section

CONFIG_DIR = Path(__file__).parent.parent / "configs"
DEFAULT_NAME = "ulx3s-85f"
"""The shipped configuration `default` (and a missing --hw) stands for: the ULX3S-85F board's."""
DEFAULT_CONFIG = CONFIG_DIR / f"{DEFAULT_NAME}.yaml"


def _settings(data: dict, section: type[Section], computed: dict[str, Any] | None = None) -> dict[str, Any]:
    """The checked values of `section`'s settings in the mapping `data` (the top level, or its
    mapping under the section's key), missing ones from their defaults or `computed`."""
    names = [spec.name for spec in section.settings()]
    if section.key:
        data = data.get(section.key, {})
        if not isinstance(data, dict):
            raise ConfigError(f"{section.key}: missing or not a mapping; expected keys {', '.join(names)}")
        unknown = set(data) - set(names)
        if unknown:
            raise ConfigError(f"{section.key}.{sorted(unknown)[0]}: unknown field; allowed: {', '.join(names)}")
    values = {}
    for spec in section.settings():
        if spec.name in data:
            values[spec.name] = spec.check(data[spec.name])
        elif spec.default is not MISSING:
            values[spec.name] = spec.default
        elif computed and spec.name in computed:
            values[spec.name] = computed[spec.name]
        else:
            raise ConfigError(f"{spec.path}: missing; expected {spec.kind.describe()}")
    return values


def config_from_dict(data: dict, source: str = "<dict>") -> AcceleratorConfig:
    """Validate a YAML-shaped mapping into an `AcceleratorConfig` (ConfigError names the field)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping")
    allowed = [*(spec.name for spec in AcceleratorConfig.settings()), *sections()]
    unknown = set(data) - set(allowed)
    if unknown:
        raise ConfigError(f"{sorted(unknown)[0]}: unknown field; allowed: {', '.join(allowed)}")
    if data.get("name", "") == "":  # no name: the file's
        data = {**data, "name": Path(source).stem}
    top = _settings(data, AcceleratorConfig)
    pe, widths, buffers, dram = (section(**_settings(data, section)) for section in (PEArray, Widths, Buffers, Dram))
    energy = Energy(**_settings(data, Energy, default_energy(buffers.input_bank, buffers.weight_bank,
                                                             buffers.output_bank, widths.accumulator)))
    return AcceleratorConfig(**top, pe=pe, widths=widths, buffers=buffers, dram=dram, energy=energy,
                             template=Template(**_settings(data, Template)))


class _UniqueKeyLoader(yaml.SafeLoader):
    """The safe loader, refusing a mapping that repeats a key (YAML would keep the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def read_yaml(path: Path, error: type[ConfigError] = ConfigError) -> Any:
    """The parsed YAML file at `path`; `error` names the file when it is unreadable, not UTF-8,
    not YAML or repeats a key."""
    try:
        text = path.read_bytes().decode("utf-8")
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except OSError as problem:
        raise error(f"{path}: cannot read ({problem.strerror})") from problem
    except UnicodeDecodeError as problem:
        raise error(f"{path}: not UTF-8 text (byte {problem.object[problem.start]:#04x} at offset {problem.start})") from problem
    except yaml.YAMLError as problem:
        raise error(f"{path}: not valid YAML ({' '.join(str(problem).split())})") from problem


def config_path(spec: str | Path | None) -> Path:
    """The file of a config: a path, a bare shipped name (e.g. `icebreaker`; `default` is
    `DEFAULT_NAME`), or the default."""
    path = DEFAULT_CONFIG if spec is None else Path(spec)
    shipped = CONFIG_DIR / f"{DEFAULT_NAME if str(path) == 'default' else path}.yaml"
    if not path.exists() and shipped.exists():
        path = shipped
    return path


def validated(data: Any, path: Path) -> AcceleratorConfig:
    """`config_from_dict` of a file's contents, errors prefixed with the file."""
    try:
        return config_from_dict(data, str(path))
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from error


def load_config(path: str | Path | None = None) -> AcceleratorConfig:
    """Load and validate a YAML config; a bare name (e.g. `icebreaker`) means a shipped config."""
    path = config_path(path)
    return validated(read_yaml(path), path)
