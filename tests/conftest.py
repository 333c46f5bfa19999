"""Hypothesis profiles: `HYPOTHESIS_PROFILE=ci` (set by `.ci/run`) derandomizes the property
tests so a CI run is reproducible; local runs keep drawing new examples. Slow tests run first,
so that with `pytest -n 2 --dist worksteal` the run ends on short tests and both workers
finish together."""
import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move the tests marked `slow` to the front, keeping the order within each group."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
