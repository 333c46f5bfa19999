"""Running sweeps: failures are recorded and the sweep goes on, interrupted sweeps resume without
re-evaluating, and a Dask cluster gives the same results as the local pool."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from hwgen.config import config_from_dict
from planner.frontend import load_network
from planner.plan import plan_network
from explore.sweep.driver import run_sweep
from explore.sweep.evaluate import ModelSpec
from explore.sweep.space import load_space
from planner.zoo import resolve_model
from hw_configs import data_config_path
from sweep_helpers import CountingEvaluator, evaluating_processes, evaluations

ROOT = Path(__file__).resolve().parents[1]


def space_file(tmp_path: Path, text: str) -> Path:
    """A space over the test-only 8x4x4 configuration on no particular device (no resource estimate)."""
    base = yaml.safe_load(data_config_path("ecp5-85f").read_text())
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(dict(base, device="generic")))
    path = tmp_path / "space.yaml"
    path.write_text("base: base.yaml\n" + text)
    return path


def reference_cycles(model: str, config: dict) -> int:
    """The planner run directly on one point's configuration (what `hwgen plan` prints)."""
    return plan_network(load_network(resolve_model(model)), config_from_dict(config)).cycles


def comparable(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]


@pytest.mark.parametrize("jobs, raise_at, exit_at, hang_at", [
    (2, 1, 3, 5),  # 8 points on 2 workers: one point per batch
    (1, 1, 2, 5),  # 1 worker: batches of 2 points sharing a PE array; the worker dies on a batch's first point
])
def test_failures_are_recorded_and_the_sweep_goes_on(tmp_path, jobs, raise_at, exit_at, hang_at):
    # input_bytes 64: one bank of 32 bytes holds no tile of the digits CNN (no legal plan)
    space = load_space(space_file(tmp_path, "pe: {rows: [8, 16], cols: [2, 4]}\nbuffers: {input_bytes: [64, 65536]}\n"))
    points = list(space.points())
    log = tmp_path / "log"
    log.mkdir()
    evaluator = CountingEvaluator(str(log), raise_at=raise_at, exit_at=exit_at, hang_at=hang_at)
    out = tmp_path / "out"
    result = run_sweep(ModelSpec("digits"), space, out, jobs=jobs, timeout=8, evaluate=evaluator)
    assert evaluations(log) == list(range(len(points)))  # each point once, none lost with its batch
    status = {row["index"]: (row["status"], row["reason"]) for row in result.rows}
    assert status[raise_at][0] == "failed" and "RuntimeError: injected failure" in status[raise_at][1]
    assert status[exit_at] == ("failed", "worker process died (exit code 3)")
    assert status[hang_at] == ("failed", "timed out after 8 s")
    failed = sorted((raise_at, exit_at, hang_at))
    for point in points:
        if point.index in failed:
            continue
        row = result.rows[point.index]
        if point.values["buffers.input_bytes"] == 64:
            assert row["status"] == "infeasible" and row["reason"].startswith("plan: layer")
        else:
            assert row["status"] == "ok" and row["cycles"] == reference_cycles("digits", point.config)

    log2 = tmp_path / "log2"
    log2.mkdir()
    again = run_sweep(ModelSpec("digits"), space, out, jobs=jobs, timeout=8, evaluate=CountingEvaluator(str(log2)))
    assert evaluations(log2) == [] and (again.evaluated, again.reused) == (0, len(points))
    assert comparable(again.rows) == comparable(result.rows)

    retried = run_sweep(ModelSpec("digits"), space, out, jobs=jobs, retry_failed=True,
                        evaluate=CountingEvaluator(str(log2)))
    assert evaluations(log2) == failed
    assert all(retried.rows[i]["status"] != "failed" for i in failed)


# `hwgen sweep` in a process of its own (as from a terminal), its points evaluated by a
# `CountingEvaluator` whose evaluation after `hang_after` others never returns: the sweep cannot
# finish on its own, and it is interrupted with exactly that many records made.
HELD_SWEEP = """
import functools, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as from a terminal (a test runner may ignore it)
sys.path.insert(0, {tests!r})
import cli.commands.sweep as command
from cli.main import main
from sweep_helpers import CountingEvaluator
command.run_sweep = functools.partial(command.run_sweep, evaluate=CountingEvaluator({log!r}, hang_after={after}))
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_an_interrupted_sweep_loses_nothing_and_resumes(tmp_path):
    # 8 points in batches of 2 on one worker: the 4th evaluation holds the sweep in its second batch,
    # whose first point is done
    space_path = space_file(tmp_path, "pe: {rows: [8, 16], cols: [2, 4]}\n"
                                      "buffers: {weight_bytes: [65536, 131072]}\n")
    out = tmp_path / "out"
    held = tmp_path / "held"
    held.mkdir()
    finished = 3
    program = HELD_SWEEP.format(tests=str(Path(__file__).parent), log=str(held), after=finished)
    command = [sys.executable, "-c", program, "sweep", "digits", "--space", str(space_path), "--jobs", "1",
               "-o", str(out)]
    process = subprocess.Popen(command, cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 1800  # a guard against a hang only: the sweep waits for the interrupt
        while len(evaluations(held)) <= finished:  # until the held evaluation has begun
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        _, stderr = process.communicate(timeout=1800)  # a guard against a hang only
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 130, stderr
    assert b"interrupted" in stderr
    assert not (out / "summary.md").exists()
    stored = [json.loads(path.read_text()) for path in (out / "points").iterdir()]  # every file is whole
    done = {record["index"] for record in stored}
    space = load_space(space_path)
    assert len(stored) == len(done) == finished and space.size > finished

    log = tmp_path / "log"
    log.mkdir()
    result = run_sweep(ModelSpec("digits"), space, out, jobs=2, evaluate=CountingEvaluator(str(log)))
    assert evaluations(log) == sorted(set(range(space.size)) - done)
    for point, row in zip(space.points(), result.rows):
        assert row["status"] == "ok" and row["index"] == point.index
        if point.index in (0, space.size - 1):
            assert row["cycles"] == reference_cycles("digits", point.config)
    log2 = tmp_path / "log2"
    log2.mkdir()
    assert run_sweep(ModelSpec("digits"), space, out, evaluate=CountingEvaluator(str(log2))).evaluated == 0
    assert evaluations(log2) == []


@pytest.mark.slow
def test_dask_local_cluster_gives_the_local_results(tmp_path):
    from distributed import Client, LocalCluster

    space = load_space(space_file(tmp_path, "pe: {rows: [4, 8, 16], cols: [2, 4]}\n"))
    local = run_sweep(ModelSpec("digits"), space, tmp_path / "local", jobs=2)
    log = tmp_path / "log"
    log.mkdir()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        workers = set(client.run(os.getpid).values())
        remote = run_sweep(ModelSpec("digits"), space, tmp_path / "dask", scheduler=cluster.scheduler_address,
                           evaluate=CountingEvaluator(str(log)))
    assert evaluations(log) == list(range(space.size))
    assert evaluating_processes(log) <= workers and os.getpid() not in evaluating_processes(log)
    assert comparable(remote.rows) == comparable(local.rows)
    assert all(row["status"] == "ok" for row in local.rows)
