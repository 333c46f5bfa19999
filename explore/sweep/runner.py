"""Running points in parallel: a local process pool (pebble) or a Dask distributed cluster.

The local pool takes batches of points (`explore.sweep.driver.batches`): points that share
planning work run on one worker, one after the other, and the worker stores each record as it
is made. Dask takes the points one by one.

Every point ends in a record: an exception inside a worker, a worker process that dies and a
point that runs past its timeout become `failed` records with the error, and the sweep goes on.
Records reach `on_result` in the calling process as points finish (the caller stores them).

Timeouts: on the local pool a late point is interrupted in its worker (SIGALRM), and a worker
stuck beyond that is killed and replaced; on Dask the point is recorded as timed out at the
deadline while its worker thread finishes in the background (Python threads cannot be
killed). Synthesis has its own timeout in its own process group either way
(`explore.sweep.synth_job`).
"""
from __future__ import annotations

import multiprocessing
import signal
import threading
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, wait
from concurrent.futures.process import BrokenProcessPool
from concurrent.futures import TimeoutError as FutureTimeout

from pebble import ProcessExpired, ProcessPool

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from common.console import PIPED_WIDTH
from common.errors import HwgenError
from explore.sweep.cache import PointCache
from explore.sweep.evaluate import FAILED, INFEASIBLE, OK, Task, evaluate_point, network, record

Evaluate = Callable[[Task], dict]
KILL_GRACE_SECONDS = 60.0


def failure(task: Task, error: str) -> dict:
    return record(task, FAILED, error)


def _describe(error: BaseException) -> str:
    lines = traceback.format_exception(error)
    return f"{type(error).__name__}: {error}\n{''.join(lines[-6:])}".strip()


def _attempt(evaluate: Evaluate, task: Task) -> dict:
    try:
        return evaluate(task)
    except Exception as error:  # noqa: BLE001 - any error of a point is recorded, the sweep goes on
        return failure(task, _describe(error))


class PointTimeout(BaseException):
    """Raised in a worker when a point's time is up (a BaseException: no handler of the
    evaluation swallows it)."""


def guarded(evaluate: Evaluate, task: Task, timeout: float | None = None) -> dict:
    """`evaluate(task)`, an exception turned into a failed record; with `timeout`, a point
    still running at the deadline is recorded as timed out: interrupted by SIGALRM on a
    process's main thread (local workers), else left running in its thread (Dask workers)."""
    try:
        network(task.model)  # loaded once per process, before any point's clock starts
    except Exception as error:  # noqa: BLE001 - any error of a point is recorded, the sweep goes on
        return failure(task, _describe(error))
    if timeout is None:
        return _attempt(evaluate, task)
    late = failure(task, f"timed out after {timeout:g} s")
    if threading.current_thread() is not threading.main_thread():
        outcome: list[dict] = []
        worker = threading.Thread(target=lambda: outcome.append(_attempt(evaluate, task)), daemon=True)
        worker.start()
        worker.join(timeout)
        return outcome[0] if outcome else late

    def expire(signum, frame):
        raise PointTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    try:
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            return _attempt(evaluate, task)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except PointTimeout:
        return late
    finally:
        signal.signal(signal.SIGALRM, previous)


def guarded_batch(evaluate: Evaluate, tasks: Sequence[Task], cache: PointCache) -> list[dict]:
    """`guarded` on each task of a batch in turn (one worker: the points share planning work),
    each record stored in `cache` as soon as it is made."""
    results = []
    for task in tasks:
        result = guarded(evaluate, task, task.timeout)
        cache.put(result)
        results.append(result)
    return results


def _pool_timeout(batch: Sequence[Task]) -> float | None:
    """The pool's backstop: a worker still busy this long after its points' own timeouts (stuck
    where the alarm cannot interrupt it) is killed and replaced."""
    if any(task.timeout is None for task in batch):
        return None
    return sum(task.timeout for task in batch) + KILL_GRACE_SECONDS


def _batch_failure(batch: Sequence[Task], error: BaseException) -> str:
    if isinstance(error, FutureTimeout):
        return f"timed out after {batch[0].timeout:g} s"
    if isinstance(error, ProcessExpired):
        return f"worker process died (exit code {error.exitcode})"
    return _describe(error)


def _leave_interrupts_to_the_sweep() -> None:
    """A worker ignores Ctrl-C (SIGINT reaches the terminal's whole process group): the sweep
    process alone takes it and stops the pool, so no worker dies under a batch meanwhile."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_local(batches: Sequence[Sequence[Task]], evaluate: Evaluate, jobs: int, on_result: Callable[[dict], None],
               cache: PointCache) -> None:
    """Batches on a process pool; the workers store their records. A batch whose worker dies or
    hangs: its finished points come from `cache`, the point it was on fails (stored here), the
    rest run again as a new batch."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["explore.sweep.evaluate"])
    pool = ProcessPool(max_workers=jobs, context=context, initializer=_leave_interrupts_to_the_sweep)
    pending = {}

    def submit(batch: Sequence[Task]) -> None:
        pending[pool.schedule(guarded_batch, args=(evaluate, batch, cache), timeout=_pool_timeout(batch))] = batch

    try:
        for batch in batches:
            submit(batch)
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                batch = pending.pop(future)
                try:
                    results = future.result()
                except BrokenProcessPool as error:  # no worker can start: not the fault of a point
                    raise HwgenError(f"the local worker processes stopped starting ({error}); records made so far "
                                     "are kept, rerun to resume") from error
                except Exception as error:  # noqa: BLE001 - a dead or stuck worker, an unpicklable result
                    stored = [cache.get(task.key) for task in batch]
                    done = next((i for i, record in enumerate(stored) if record is None), len(batch))
                    results = stored[:done]
                    if done < len(batch):
                        results.append(failure(batch[done], _batch_failure(batch, error)))
                        cache.put(results[-1])
                    if done + 1 < len(batch):
                        submit(batch[done + 1:])
                for result in results:
                    on_result(result)
    finally:
        pool.stop()
        pool.join()


def _run_dask(tasks: Sequence[Task], evaluate: Evaluate, address: str, on_result: Callable[[dict], None],
              cache: PointCache) -> None:
    """Each task on the Dask scheduler at `address`; records stored here as they arrive."""
    from distributed import Client
    from distributed import as_completed as dask_completed

    with Client(address) as client:
        futures = {client.submit(guarded, evaluate, task, task.timeout, pure=False): task for task in tasks}
        try:
            for future in dask_completed(list(futures)):
                task = futures[future]
                try:
                    result = future.result()
                except Exception as error:  # noqa: BLE001 - e.g. KilledWorker: the point's workers kept dying
                    result = failure(task, _describe(error))
                cache.put(result)
                on_result(result)
        finally:
            client.cancel([future for future in futures if not future.done()])


def run_points(batches: Sequence[Sequence[Task]], cache: PointCache, on_result: Callable[[dict], None], *,
               jobs: int = 1, scheduler: str | None = None, evaluate: Evaluate = evaluate_point,
               title: str = "sweep") -> None:
    """Evaluate the tasks of `batches` on `jobs` local processes (a batch per worker at a time),
    or each task on the Dask scheduler at `scheduler` (e.g. tcp://host:8786), with a progress
    bar. Every record is stored in `cache` once, as soon as it is made; `on_result` receives it."""
    tasks = [task for batch in batches for task in batch]
    if not tasks:
        return
    counts = {OK: 0, INFEASIBLE: 0, FAILED: 0}
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("elapsed"),
               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
    console = Console(stderr=True)
    if not console.is_terminal:
        console = Console(stderr=True, width=PIPED_WIDTH)
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task(title, total=len(tasks))

        def done(result: dict) -> None:
            on_result(result)
            counts[result["status"]] += 1
            summary = " · ".join(f"{n} {status}" for status, n in counts.items())
            progress.update(bar, advance=1, description=f"{title} ({summary})")

        if scheduler is not None:
            _run_dask(tasks, evaluate, scheduler, done, cache)
        else:
            _run_local(batches, evaluate, jobs, done, cache)
