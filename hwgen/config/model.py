"""The whole configuration: `AcceleratorConfig`, and every field of it (`config_fields`)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from types import MappingProxyType
from typing import Any, Iterator, Mapping, get_type_hints

from hwgen.config.kinds import Number, Text, plain
from hwgen.config.rules import RULES
from hwgen.config.sections import Buffers, Dram, Energy, PEArray, Template, Widths
from hwgen.config.spec import FieldSpec, Section, setting


FULL_TEMPLATE = Template()


@dataclass(frozen=True, kw_only=True)
class AcceleratorConfig(Section):
    """The whole hardware configuration (frozen; build with `load_config` / `config_from_dict`).
    Building one checks every field and every rule across fields (`hwgen.config.rules`): a
    configuration that exists can be generated."""

    name: str = setting(Text(), "the configuration's name (build folders, reports)", default_doc="the file's stem")
    device: str = setting(Text(), "the FPGA part (e.g. `LFE5U-85F`, `iCE40UP5K`)", "generic")
    board: str = setting(Text(), "the board (`boards/`)", "none")
    clock_mhz: float = setting(Number(1, 2000, integer=False), "MHz of the accelerator's clock")
    instances: int = setting(Number(1, 8), "accelerator instances of this configuration sharing main memory, each "
                             "running a stage of the network as a pipeline over images (`hwgen schedule`, "
                             "`hwgen sweep`, `hwgen generate/synth/build/run --images K`; docs/units.md); "
                             "`demo` takes one",
                             1)
    pe: PEArray
    widths: Widths
    buffers: Buffers
    dram: Dram
    energy: Energy
    template: Template = FULL_TEMPLATE

    def __post_init__(self) -> None:
        super().__post_init__()
        for rule in RULES:
            rule.check(self)

    def to_dict(self) -> dict:
        """The YAML-shaped dictionary (round-trips through `config_from_dict`)."""
        out: dict[str, Any] = {spec.name: getattr(self, spec.name) for spec in self.settings()}
        for name, section in sections().items():
            if name != "template" or self.template != FULL_TEMPLATE:  # the full template's configs keep their shape
                values = getattr(self, name)
                out[name] = {spec.name: _yaml(getattr(values, spec.name)) for spec in section.settings()
                             if not (spec.quiet_default and getattr(values, spec.name) == spec.default)}
        return out


def _yaml(value: Any) -> Any:
    value = plain(value)
    return list(value) if isinstance(value, tuple) else value


@cache
def sections() -> Mapping[str, type[Section]]:
    """The sections of a configuration by YAML key, in order."""
    return MappingProxyType({name: kind for name, kind in get_type_hints(AcceleratorConfig).items()
                             if isinstance(kind, type) and issubclass(kind, Section)})


def config_fields() -> Iterator[FieldSpec]:
    """Every field of a configuration, top level first, then section by section, each with the
    rules across fields that name it."""
    docs: dict[str, tuple[str, ...]] = {}
    for rule in RULES:
        docs[rule.field] = (*docs.get(rule.field, ()), rule.doc)
    for section in (AcceleratorConfig, *sections().values()):
        for spec in section.settings():
            yield replace(spec, rules=docs.get(spec.path, ()))


def field_spec(path: str) -> FieldSpec:
    """The field at `path` (e.g. `pe.rows`, `clock_mhz`); KeyError if there is none."""
    return {spec.path: spec for spec in config_fields()}[path]
