"""The packages stack in the order of the data flow (`[tool.importlinter]` in pyproject.toml):
common -> hwgen -> planner -> sim -> boards -> scheduler -> explore -> cli, no import running back up."""
from pathlib import Path

from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent


def test_no_import_runs_back_up(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0


def test_the_contract_catches_an_import_running_back_up(monkeypatch, tmp_path):
    """A copy of the contract with the layers inverted must break: the check can fail."""
    text = (ROOT / "pyproject.toml").read_text()
    layers = '    "cli",\n    "explore",\n    "scheduler",\n    "boards",\n    "sim",\n    "planner",\n    "hwgen",\n    "common",\n'
    assert layers in text
    inverted = text.replace(layers, "".join(reversed(layers.splitlines(keepends=True))))
    (tmp_path / "pyproject.toml").write_text(inverted)
    monkeypatch.chdir(ROOT)
    assert lint_imports(config_filename=str(tmp_path / "pyproject.toml"), no_cache=True) == 1
