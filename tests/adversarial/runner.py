"""Runs adversarial cases in this process, one after another, each in a fresh folder with fresh
caches: `python -m adversarial.runner CASES.json FIXTURES RESULTS.json`. Memory is bounded
(RLIMIT_AS) and every case has a time limit."""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import resource
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path

MEMORY_LIMIT = 6 << 30
CASE_SECONDS = 60


KEPT_CACHES = ("tool_versions",)
"""Memoised functions of the code alone (the sweep's digest of its sources), kept between cases."""


class CaseTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise CaseTimeout(f"no result within {CASE_SECONDS} s")


def snapshot(folder: Path) -> dict[str, str]:
    """Every file and folder under `folder` with a digest of its contents."""
    found = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        found[rel] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def fresh_state() -> None:
    """Clear the memoised functions of the project's modules, so no case sees another's results."""
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] in ("cli", "common", "hwgen", "planner", "sim", "boards", "explore"):
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)) and getattr(value, "__name__", "") not in KEPT_CACHES:
                    value.cache_clear()
    from explore.sweep import evaluate

    evaluate.LAYER_MEMO.__init__()


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    from cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        for command in _commands(argv):
            try:
                code = main(command)
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
            if code:
                break
    return code, out.getvalue(), err.getvalue()


def _commands(argv: list[str]) -> list[list[str]]:
    commands, current = [], []
    for arg in argv:
        if arg == "&&":
            commands.append(current)
            current = []
        else:
            current.append(arg)
    return commands + [current]


def run_python(argv: list) -> tuple[int, str, str]:
    from adversarial import link
    from common.errors import HwgenError

    try:
        getattr(link, argv[0])(*argv[1:])
    except HwgenError as error:
        return 2, "", f"hwgen: error: {error}\n"
    return 0, "", ""


def problems(case: dict, code: int, out: str, err: str, before: dict, after: dict) -> list[str]:
    """What is wrong with a case's outcome (empty: clean)."""
    found = []
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if ": error: " in line]
    stray = [line for line in lines if ": error: " not in line and ": warning: " not in line
             and not line.startswith(("usage:", " ")) and "━" not in line]
    if stray:
        found.append(f"stray stderr lines: {stray[:3]}")
    if case["expect"] == "error":
        if code != 2:
            found.append(f"exit {code}, expected 2")
        if len(errors) != 1:
            found.append(f"{len(errors)} error lines, expected 1")
        missing = [c for c in case["culprits"] if not any(c in line for line in errors)]
        if missing:
            found.append(f"error line {errors[:1]} does not name {missing}")
        if after != before:
            changed = sorted(set(after.items()) ^ set(before.items()))
            found.append(f"files changed on error: {changed[:4]}")
        for check in case["checks"]:
            if check[0] == "reasoned":
                found += _reasoned(errors, check[1])
    else:
        if code != 0:
            found.append(f"exit {code}, expected 0: {errors[:1]}")
        if errors:
            found.append(f"error lines: {errors[:2]}")
        if not found:
            for check in case["checks"]:
                found += _check(check, out, err, before, after)
    return found


def _reasoned(lines: list[str], marker: str) -> list[str]:
    """`marker` (e.g. "no legal tile; ") is followed by a reason wherever it appears."""
    return [f"nothing after {marker!r}: {line!r}" for line in lines if marker in line
            and len(line.split(marker, 1)[1].strip()) < 10]


def _check(check: list, out: str, err: str, before: dict, after: dict) -> list[str]:
    import numpy as np

    kind, *args = check
    if kind == "stdout":
        return [] if args[0] in out else [f"stdout lacks {args[0]!r}"]
    if kind == "stderr":
        return [] if args[0] in err else [f"stderr lacks {args[0]!r}"]
    if kind == "reasoned":
        return _reasoned(out.splitlines(), args[0])
    if kind == "json":
        value = json.loads(out).get(args[0])
        return [] if value == args[1] else [f"{args[0]} is {value!r}, expected {args[1]!r}"]
    if kind == "same_npy":
        a, b = np.load(args[0]), np.load(args[1])
        return [] if a.shape == b.shape and np.array_equal(a, b) else [f"{args[0]} differs from {args[1]}"]
    if kind == "files":
        new = sorted({name.split("/")[0] for name in after} - {name.split("/")[0] for name in before})
        return [] if new == sorted(args) else [f"new outputs {new}, expected {sorted(args)}"]
    if kind == "vcd":
        text = Path(args[0]).read_text()
        leftovers = [p.name for p in Path(args[0]).parent.iterdir() if p.name.endswith(".tmp")]
        return ([] if "$enddefinitions" in text else [f"{args[0]} is not a VCD"]) + \
            ([f"temporary files left: {leftovers}"] if leftovers else [])
    if kind == "sweep_like":
        rows = _rows(Path(args[0]) / "points.json")
        reference = _rows(Path(os.environ["ADVERSARIAL_FIXTURES"]) / "sweep_ref" / "points.json")
        return [] if rows == reference else [f"{args[0]}/points.json differs from a clean sweep"]
    if kind == "near_onnxruntime":
        import onnxruntime

        x = np.load(args[1]).astype(np.float32)
        session = onnxruntime.InferenceSession(args[0], providers=["CPUExecutionProvider"])
        reference = np.concatenate([session.run(None, {session.get_inputs()[0].name: sample[None]})[0] for sample in x])
        y = np.load(args[2])
        tolerance = 0.05 * float(np.abs(reference).max()) + 1e-3
        error = float(np.abs(y - reference).max())
        return [] if y.shape == reference.shape and error <= tolerance else [f"{args[2]} is {error:.3g} from onnxruntime"]
    return [f"unknown check {kind}"]


def _rows(path: Path) -> list[dict]:
    rows = json.loads(path.read_text())
    rows = rows["points"] if isinstance(rows, dict) and "points" in rows else rows
    return [{k: v for k, v in row.items() if k not in ("seconds",)} for row in rows]


def run_case(case: dict, fixtures: Path, folder: Path) -> dict:
    argv = [arg.replace("@/", f"{fixtures}/") if isinstance(arg, str) else arg for arg in case["argv"]]
    fixtures_before = snapshot(fixtures)
    before = snapshot(folder)
    os.chdir(folder)
    fresh_state()
    start = time.perf_counter()
    signal.alarm(CASE_SECONDS)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            code, out, err = (run_python if case["kind"] == "python" else run_cli)(argv)
        signal.alarm(0)
        found = problems(case, code, out, err, before, snapshot(folder))
    except BaseException as error:  # a traceback, a hang or memory exhaustion: not clean
        signal.alarm(0)
        if isinstance(error, KeyboardInterrupt):
            raise
        code, out, err = -1, "", ""
        found = [f"{type(error).__name__}: {error}", traceback.format_exc(limit=-4)]
    finally:
        os.chdir(fixtures.parent)
    if snapshot(fixtures) != fixtures_before:
        found.append("the shared fixtures changed")
    return {"id": f"{case['category']}/{case['name']}", "category": case["category"], "problems": found,
            "seconds": time.perf_counter() - start, "stderr": err[-600:]}


def main() -> None:
    cases_file, fixtures, results_file = (Path(arg).resolve() for arg in sys.argv[1:4])
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    signal.signal(signal.SIGALRM, _alarm)
    os.environ["ADVERSARIAL_FIXTURES"] = str(fixtures)
    os.environ.setdefault("COLUMNS", "200")
    cases = json.loads(Path(cases_file).read_text())
    with open(results_file, "w") as out:  # a line per case as it ends: a dying runner leaves the rest
        for case in cases:
            out.write(json.dumps({"started": f"{case['category']}/{case['name']}"}) + "\n")
            out.flush()
            out.write(json.dumps(run_case(case, fixtures, Path(case["folder"]))) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
