"""What a configuration field may hold: a number in a range, one value of a few, a set of names,
a string. Each kind checks a value (`ConfigError` naming the field, the value and what is
allowed) and returns it typed (names as their `StrEnum` members, lists as tuples)."""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import Any

from common.errors import ConfigError


def refuse(path: str, value: Any, allowed: str) -> ConfigError:
    """The error for `value` at `path`, saying what is `allowed`."""
    return ConfigError(f"{path}: {value!r} is not allowed; expected {allowed}")


def number_text(value: float) -> str:
    """`value` as the docs write it: `2^30`, `1/64`, `0.5`, `256`."""
    if value == int(value):
        value = int(value)
        return f"2^{value.bit_length() - 1}" if value >= 1 << 16 and not value & (value - 1) else str(value)
    return f"1/{int(1 / value)}" if (1 / value) == int(1 / value) else f"{value:g}"


def plain(value: Any) -> Any:
    """A typed value in its YAML shape's types: names as plain strings (a tuple stays a tuple)."""
    if isinstance(value, tuple):
        return tuple(plain(item) for item in value)
    return str(value) if isinstance(value, StrEnum) else value


@dataclass(frozen=True)
class Number:
    """A number in [`low`, `high`]: an integer (a power of two) unless `integer` is false."""

    low: float
    high: float
    integer: bool = True
    power_of_two: bool = False

    def describe(self) -> str:
        kind = "a power of two" if self.power_of_two else ("an integer" if self.integer else "a number")
        return f"{kind} in [{number_text(self.low)}, {number_text(self.high)}]"

    def check(self, path: str, value: Any) -> int | float:
        ok_type = isinstance(value, int) if self.integer else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok_type or not self.low <= value <= self.high or (
            self.power_of_two and value & (value - 1)
        ):
            raise refuse(path, value, self.describe())
        return value


@dataclass(frozen=True)
class OneOf:
    """One of a few `choices` of one type: booleans (YAML `true`, `false`) or integers."""

    choices: tuple[bool | int, ...]

    def describe(self) -> str:
        names = [str(v).lower() if isinstance(v, bool) else str(v) for v in self.choices]
        return names[0] if len(names) == 1 else f"one of: {', '.join(names)}"

    def check(self, path: str, value: Any) -> bool | int:
        if not any(type(value) is type(choice) and value == choice for choice in self.choices):
            raise refuse(path, value, self.describe())
        return value


@dataclass(frozen=True)
class Choice:
    """One name of the enumeration `names`."""

    names: type[StrEnum]

    @cached_property
    def choices(self) -> tuple[StrEnum, ...]:
        return tuple(self.names)

    def describe(self) -> str:
        return f"one of: {', '.join(self.names)}"

    def check(self, path: str, value: Any) -> StrEnum:
        if not isinstance(value, str) or value not in self.choices:
            raise refuse(path, value, self.describe())
        return self.names(value)


@dataclass(frozen=True)
class Names:
    """A list of distinct names from `choices` (members of one enumeration), possibly empty."""

    choices: tuple[StrEnum, ...]

    def describe(self) -> str:
        return f"a list of distinct names from: {', '.join(self.choices)}"

    def check(self, path: str, value: Any) -> tuple[StrEnum, ...]:
        if not isinstance(value, (list, tuple)) or not all(
            isinstance(name, str) and name in self.choices for name in value
        ) or len(set(value)) != len(value):
            raise refuse(path, value, self.describe())
        return tuple(type(self.choices[0])(name) for name in value)


@dataclass(frozen=True)
class Text:
    """Any string."""

    def describe(self) -> str:
        return "a string"

    def check(self, path: str, value: Any) -> str:
        if not isinstance(value, str):
            raise refuse(path, value, self.describe())
        return value


Kind = Number | OneOf | Choice | Names | Text
