"""How a configuration field is declared: once, as a dataclass field of a `Section` whose
metadata is its `FieldSpec` (kind, one-line doc, default). The YAML loader, the checks on
construction, the design-space sweeps and `docs/config.md` all read these declarations."""
from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, replace
from functools import cache, cached_property
from typing import Any, ClassVar

from hwgen.config.kinds import Choice, Kind, Names, OneOf

SPEC = "spec"
"""The metadata key of a field's `FieldSpec`."""


@dataclass(frozen=True)
class FieldSpec:
    """One field: its YAML `path` (`pe.rows`, or `clock_mhz` at the top level), what it may
    hold (`kind`), what it means (`doc`, one line, with its unit), its `default` (`MISSING`:
    required, or computed as `default_doc` says) and, in words, the `rules` across fields
    that also constrain it (`hwgen.config.rules`)."""

    path: str
    kind: Kind
    doc: str
    default: Any = MISSING
    default_doc: str = ""
    rules: tuple[str, ...] = ()
    quiet_default: bool = False
    """At its default the field is left out of `AcceleratorConfig.to_dict` (a field added
    later: older configurations keep their dictionaries, hence their build ids and cache keys)."""

    @cached_property
    def section(self) -> str:
        """The YAML section (`pe`, ..., `template`), empty at the top level."""
        return self.path.rpartition(".")[0]

    @cached_property
    def name(self) -> str:
        return self.path.rpartition(".")[2]

    @property
    def choices(self) -> tuple | None:
        """The values a field of one of a few values may hold, else None."""
        return self.kind.choices if isinstance(self.kind, (Choice, OneOf)) else None

    @property
    def is_list(self) -> bool:
        """Whether a value is a list of names."""
        return isinstance(self.kind, Names)

    def check(self, value: Any) -> Any:
        """`value` typed (names as enumeration members, lists as tuples) if the field's kind
        allows it; `ConfigError` naming the field, the value and what is allowed otherwise.
        Rules across fields are checked when a whole `AcceleratorConfig` is built."""
        return self.kind.check(self.path, value)

    def allowed(self) -> str:
        """What the field may hold, its rules included."""
        return "; ".join((self.kind.describe(), *self.rules))


def setting(kind: Kind, doc: str, default: Any = MISSING, default_doc: str = "", quiet_default: bool = False) -> Any:
    """A dataclass field of a `Section`, declared with its kind, doc and default."""
    return field(default=default, metadata={SPEC: FieldSpec("", kind, doc, default, default_doc,
                                                            quiet_default=quiet_default)})


class Section:
    """Base of the frozen dataclasses of a configuration: a YAML mapping under `key` (empty at
    the top level). Building one checks each setting (`FieldSpec.check`) and stores it typed,
    so a name given as a string becomes its enumeration member."""

    key: ClassVar[str]

    def __init_subclass__(cls, key: str = "", **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.key = key

    def __post_init__(self) -> None:
        for spec in self.settings():
            object.__setattr__(self, spec.name, spec.check(getattr(self, spec.name)))

    @classmethod
    @cache
    def settings(cls) -> tuple[FieldSpec, ...]:
        """The `FieldSpec` of each setting, with its path."""
        return tuple(replace(item.metadata[SPEC], path=f"{cls.key}.{item.name}" if cls.key else item.name)
                     for item in fields(cls) if SPEC in item.metadata)
