"""The docs name only what exists: every repository path in backquotes (`hwgen/dma/units.py`)
is a file or folder, and every dotted project name (`hwgen.timing.conv_cycles`) imports."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PACKAGES = "hwgen|planner|sim|boards|explore|scheduler|cli|common"
PATH = re.compile(rf"`((?:{PACKAGES}|bench|tests|scripts|constraints)/[\w/.\-]*)`")
DOTTED = re.compile(rf"`((?:{PACKAGES})(?:\.\w+)+)")


def resolves(name: str) -> bool:
    """Whether `name` is a module, or an attribute path inside the longest importable module."""
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def stale_references(text: str) -> list[str]:
    """The paths and dotted names in `text` that name nothing in the repository."""
    paths = [path for path in PATH.findall(text) if not (ROOT / path).exists()]
    return paths + [name for name in DOTTED.findall(text) if not resolves(name)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.name)
def test_doc_names_only_what_exists(doc):
    assert stale_references(doc.read_text()) == []


def test_a_stale_reference_is_caught():
    text = "`hwgen/dma_units.py` and `hwgen.timing.no_such_formula`, beside `hwgen/timing.py`"
    assert stale_references(text) == ["hwgen/dma_units.py", "hwgen.timing.no_such_formula"]
