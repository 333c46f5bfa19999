"""The adversarial suite (issue #23): bad inputs of every kind through the real command line.

Each case (`adversarial.cases`) must end in exit 2 with one error line naming its culprit, or
in a correct result checked against an independent reference (the golden model against the
instruction-level simulator, onnxruntime, a clean sweep, the wire format's reference model);
never a traceback, a hang or unbounded memory, and nothing half-written. The cases run in two
child processes (`adversarial.runner`: in-process through `cli.main`, fresh caches and folder
per case, RLIMIT_AS and a time limit per case), and a sample again as separate `python -m cli`
processes.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from adversarial import fixtures as fx
from adversarial.cases import MODEL, SWEEP_SPACE, all_cases
from adversarial.runner import MEMORY_LIMIT, problems, snapshot

ROOT = Path(__file__).resolve().parents[1]
CODE = Path(os.environ.get("ADVERSARIAL_CODE", ROOT))
"""The checkout whose command line the cases run (another one's, to count how it fares)."""
WORKERS = 2
SEPARATE = 16
"""Cases also run as separate processes (every category's first)."""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(CODE), str(ROOT / "tests")]), "COLUMNS": "200",
            "PYTHONWARNINGS": "default"}


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _cli(argv: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *argv], cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=timeout, preexec_fn=_limit_memory)


def _sweep_reference(fixtures: Path) -> dict[str, bytes]:
    (fixtures / "space.yaml").write_text(SWEEP_SPACE)
    done = _cli(["sweep", str(fixtures / "tiny.onnx"), "--space", "space.yaml", "-o", "sweep_ref"], fixtures)
    assert done.returncode == 0, done.stderr
    return {path.name: path.read_bytes() for path in sorted((fixtures / "sweep_ref" / "points").iterdir())}


def _materialize(cases, root: Path) -> list[dict]:
    manifest = []
    for index, case in enumerate(cases):
        folder = root / f"{index:04d}"
        folder.mkdir(parents=True)
        for name, data in case.files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        for name in case.folders:
            (folder / name).mkdir(parents=True, exist_ok=True)
        manifest.append({**case.to_json(), "folder": str(folder)})
    return manifest


def _run_batches(manifest: list[dict], fixtures: Path, work: Path) -> list[dict]:
    # the heavier cases spread over the workers: interleave
    batches = [manifest[k::WORKERS] for k in range(WORKERS)]
    children = []
    for k, batch in enumerate(batches):
        (work / f"batch{k}.json").write_text(json.dumps(batch))
        children.append(subprocess.Popen([sys.executable, "-m", "adversarial.runner", str(work / f"batch{k}.json"),
                                          str(fixtures), str(work / f"results{k}.json")], env=_env(), cwd=work))
    results = []
    for k, child in enumerate(children):
        code = child.wait(timeout=1200)
        lines = [json.loads(line) for line in (work / f"results{k}.json").read_text().splitlines()]
        results += [line for line in lines if "started" not in line]
        if code != 0:  # the runner died in its last started case
            results.append({"id": lines[-1].get("started", "?"), "category": "runner",
                            "problems": [f"the runner process died (exit {code}) in this case"]})
    return results


def _separate(manifest: list[dict], fixtures: Path) -> list[dict]:
    """A sample of cases as separate processes: the first of every category, then more."""
    first = {}
    for case in manifest:
        if case["kind"] == "cli" and case["expect"] == "error" and "&&" not in case["argv"]:
            first.setdefault(case["category"], case)
    sample = list(first.values())
    results = []
    for case in sample[:SEPARATE]:
        folder = Path(case["folder"])
        before = snapshot(folder)
        argv = [arg.replace("@/", f"{fixtures}/") for arg in case["argv"]]
        done = _cli(argv, folder)
        found = problems(case, done.returncode, done.stdout, done.stderr, before, snapshot(folder))
        results.append({"id": f"separate:{case['category']}/{case['name']}", "category": case["category"], "problems": found})
    return results


def test_adversarial_inputs_end_in_one_clear_error_or_a_correct_result(tmp_path):
    start = time.perf_counter()
    fixtures = tmp_path / "fixtures"
    fx.write_common(fixtures)
    cases = all_cases(_sweep_reference(fixtures))
    assert len(cases) >= 500
    only = os.environ.get("ADVERSARIAL_ONLY")  # a category, to rerun it alone while fixing
    cases = [case for case in cases if only is None or case.category == only]
    assert MODEL.startswith("@/")
    manifest = _materialize(cases, tmp_path / "cases")
    results = _run_batches(manifest, fixtures, tmp_path) + _separate(manifest, fixtures)
    counts = Counter(result["category"] for result in results)
    bad = [result for result in results if result["problems"]]
    print(f"\n{len(results)} cases in {time.perf_counter() - start:.0f} s: "
          + ", ".join(f"{category} {n}" for category, n in sorted(counts.items())))
    assert not bad, f"{len(bad)} of {len(results)} cases not clean:\n" + "\n".join(
        f"{result['id']}: {result['problems']}" for result in bad[:40])
