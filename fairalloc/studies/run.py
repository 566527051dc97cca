"""Running a study: each task on a worker, each row into the store as it arrives.

Three executors share one contract — an iterator over tasks in, an iterator over rows out, in
the order they finish, at most a window of tasks in flight:

* ``serial`` (``--workers 1``): in this process;
* ``pool`` (``--workers N``): a local process pool; a worker process that dies (killed, out of
  memory) has its tasks run again in a fresh pool, and a task that kills three is an error row;
* ``adaptive`` (the default): serial for the first ``SERIAL_SECONDS``, then a pool of one
  process per core for the rest, so a study of a few quick tasks (a sweep) pays no pool
  start-up and a long one still uses every core;
* ``dask`` (``--cluster local:N`` or ``tcp://HOST:PORT``): a ``dask.distributed`` cluster —
  a ``LocalCluster`` of N worker processes, or a running scheduler. Rows stream back with
  ``as_completed``; a lost worker's tasks are run again elsewhere by the scheduler.

A task never raises: a method that fails is a row with status ``error`` and its message, one
that does not apply to the instance a row with status ``not_applicable``. Only the driver
writes to the store, one transaction per batch (at most ``BATCH_ROWS`` rows or
``BATCH_SECONDS`` of results), so an interrupted run loses at most the tasks in flight and the
last unwritten batch, and ``--resume`` skips every stored row.
"""

from __future__ import annotations

import fnmatch
import itertools
import json
import logging
import os
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from fairalloc import engine
from fairalloc.contract import MethodDoesNotApply
from fairalloc.registry import KINDS
from fairalloc.result import flat_metrics
from fairalloc.spec import build
from fairalloc.studies.plan import Study, Task, make_instance
from fairalloc.studies.store import Store, utc_now

BATCH_ROWS = 1000
BATCH_SECONDS = 1.0
WINDOW_PER_WORKER = 4          # tasks in flight per worker: enough to keep it busy
DEATHS_ALLOWED = 3             # worker processes a task may take down with it
SERIAL_SECONDS = 1.0           # the default executor runs this long in-process before a pool


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _numbers(metrics: dict, patterns: tuple[str, ...]) -> dict[str, float]:
    """The chosen metrics (names or patterns) that are numbers, as floats."""
    out = {}
    for name, value in flat_metrics(metrics):
        if any(fnmatch.fnmatchcase(name, p) for p in patterns):
            try:
                out[f"metric.{name}"] = float(value)
            except (TypeError, ValueError):     # a list: not a column
                continue
    return out


def task_row(task: Task, **fields) -> dict:
    """A row's identity: study, instance, method, repeat, seed and the grid point's values."""
    return {"study": task.study, "instance": task.instance.id, "method": task.method,
            "repeat": task.repeat, "seed": task.instance.seed, **dict(task.instance.point),
            **fields}


def run_task(task: Task) -> dict:
    """Make the instance, solve it with the task's method, run the chosen checks: the row."""
    start = time.perf_counter()
    try:
        raw = make_instance(task.kind, task.recipe, task.instance.seed, task.edits)
        if task.options:
            raw = {**raw, "options": {**raw.get("options", {}), **dict(task.options)}}
        spec = build(raw, None)
        result = engine.solve(spec, task.method, task.checks != (), False, task.checks,
                              engine.Knobs(**dict(task.solver)))
        fields = {"status": result.status, "objective": result.objective,
                  "gap": result.solver.get("gap"), "bound": result.solver.get("bound"),
                  "time_s": result.solver["time_s"],
                  **{f"check.{f.check}": f.verdict for f in result.validation},
                  **_numbers(result.metrics, task.metrics)}
        if task.keep_result:
            fields["result"] = json.dumps(result.to_dict(), allow_nan=False)
        if task.bound:
            fields["reference_bound"] = float(KINDS[task.kind].bound(spec.problem))
    except MethodDoesNotApply as exc:
        fields = {"status": "not_applicable",
                  "error": "; ".join(v.rule for v in exc.violations)}
    except Exception as exc:         # any failure of one task is its row, never the study's
        fields = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:2000]}
    fields.setdefault("time_s", time.perf_counter() - start)
    return task_row(task, worker=worker_name(),
                    finished=utc_now(), **fields)


def lost(task: Task, why: str) -> dict:
    """The row of a task the infrastructure could not run."""
    return task_row(task, status="error", error=why,
                    finished=utc_now())


def serial(tasks: Iterable[Task]) -> Iterator[dict]:
    for task in tasks:
        yield run_task(task)


def _forkserver():
    """Workers forked from a single-threaded server that has fairalloc imported: a fork from
    this (threaded) process can leak one worker's death pipe into another, and a pool then
    never notices that a worker was killed. A kind registered at run time is not in the
    server: run such studies with ``--workers 1``, or register the kind by entry point."""
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["fairalloc.studies.run", "fairalloc.engine",
                                    "fairalloc.registry"])
    return context


def pool(tasks: Iterable[Task], workers: int) -> Iterator[dict]:
    """A local process pool of ``workers`` processes; a broken pool (a worker killed) is
    replaced and the tasks in flight are submitted again."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    todo = iter(tasks)
    retry: list[Task] = []
    deaths: Counter = Counter()
    window = workers * WINDOW_PER_WORKER
    context = _forkserver()
    executor = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    flight: dict = {}
    try:
        while True:
            broken = False
            while len(flight) < window and not broken:
                task = retry.pop() if retry else next(todo, None)
                if task is None:
                    break
                try:
                    flight[executor.submit(run_task, task)] = task
                except BrokenProcessPool:   # a worker (even an idle one) died since the wait
                    retry.append(task)
                    broken = True
            if flight:
                finished, _ = wait(flight, return_when=FIRST_COMPLETED)
                for future in finished:
                    task = flight.pop(future)
                    try:
                        yield future.result()
                    except BrokenProcessPool:
                        broken = True
                        deaths[task.key] += 1
                        if deaths[task.key] >= DEATHS_ALLOWED:
                            yield lost(task, f"its worker process died {DEATHS_ALLOWED} times")
                        else:
                            retry.append(task)
            elif not broken:
                return
            if broken:
                retry += flight.values()
                flight.clear()
                executor.shutdown(wait=False, cancel_futures=True)
                executor = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    finally:
        executor.shutdown(wait=False, cancel_futures=True)


def adaptive(tasks: Iterable[Task], workers: int) -> Iterator[dict]:
    """Serial in this process until ``SERIAL_SECONDS`` have passed, then a pool of
    ``workers`` for the tasks left (none left: no pool is started)."""
    todo = iter(tasks)
    start = time.monotonic()
    for task in todo:
        yield run_task(task)
        if time.monotonic() - start >= SERIAL_SECONDS:
            break
    rest = next(todo, None)
    if rest is not None:
        yield from pool(itertools.chain([rest], todo), workers)


def parse_cluster(text: str) -> tuple[str, int | str]:
    """``local:N`` -> ("local", N); ``tcp://HOST:PORT`` (any Dask address) -> ("address", it).

    >>> parse_cluster("local:2"), parse_cluster("tcp://10.0.0.5:8786")
    (('local', 2), ('address', 'tcp://10.0.0.5:8786'))
    """
    if text.startswith("local:"):
        count = text.removeprefix("local:")
        if not count.isdigit() or not 1 <= int(count) <= 1024:
            raise ValueError(f"{text!r}: local:N takes N from 1 to 1024 worker processes")
        return "local", int(count)
    if "://" not in text or not text.split("://", 1)[1]:
        raise ValueError(f"{text!r}: expected local:N or a scheduler address tcp://HOST:PORT")
    return "address", text


def dask(tasks: Iterable[Task], cluster: tuple[str, int | str]) -> Iterator[dict]:
    """Run on a ``dask.distributed`` cluster: a ``LocalCluster`` of N single-threaded worker
    processes, or the scheduler at an address. ``as_completed`` streams rows back; a task whose
    workers keep dying (Dask's ``KilledWorker``) or that is lost becomes an error row."""
    from dask.distributed import Client, LocalCluster, as_completed

    how, what = cluster
    local = None
    if how == "local":
        local = LocalCluster(n_workers=what, threads_per_worker=1, processes=True,
                             dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(local)
    else:
        try:
            client = Client(what, timeout="10s")
        except OSError as exc:
            raise ConnectionError(f"cannot reach the Dask scheduler at {what}: {exc}") from None
    try:
        slots = sum(client.nthreads().values()) or 1
        todo = iter(tasks)
        flight: dict = {}
        done = as_completed()

        def submit() -> None:
            task = next(todo, None)
            if task is not None:
                future = client.submit(run_task, task, pure=False)
                flight[future.key] = task
                done.add(future)

        for _ in range(max(slots * WINDOW_PER_WORKER, 8)):
            submit()
        for future in done:
            task = flight.pop(future.key)
            try:
                row = future.result()
            except Exception as exc:   # KilledWorker, a cancelled or lost future
                row = lost(task, f"{type(exc).__name__}: {exc}"[:2000])
            future.release()
            yield row
            submit()
    finally:
        client.close()
        if local is not None:
            local.close()


@dataclass
class Progress:
    """What a run did: rows stored now, rows found stored before, error rows, and whether it
    was interrupted."""

    total: int
    skipped: int
    stored: int = 0
    errors: int = 0
    interrupted: bool = False


def rows_of(tasks: Iterable[Task], workers: int | None = None,
            cluster: tuple[str, int | str] | None = None, count: int = 0) -> Iterator[dict]:
    """Rows of ``tasks`` from the chosen executor (``count``: how many, to size the pool);
    ``workers`` None: the adaptive one."""
    if cluster is not None:
        return dask(tasks, cluster)
    if workers is None:
        cores = min(os.cpu_count() or 1, max(count, 1))
        return serial(tasks) if cores <= 1 else adaptive(tasks, cores)
    return serial(tasks) if workers <= 1 else pool(tasks, workers)


def run_study(study: Study, store: Store, *, resume: bool = False, workers: int | None = None,
              cluster: tuple[str, int | str] | None = None,
              on_start: Callable[[Progress], None] | None = None,
              on_row: Callable[[dict], None] | None = None) -> Progress:
    """Run every task of ``study`` not yet in ``store`` and store its row. Ctrl-C stops the
    run after storing what has arrived (``Progress.interrupted``); ``--resume`` continues.
    ``on_start`` sees the totals once the store is open, ``on_row`` every row."""
    done = store.open_study(study, resume)
    progress = Progress(total=study.task_count, skipped=len(done))
    if on_start:
        on_start(progress)
    rows = rows_of(study.tasks(done), workers, cluster, study.task_count - len(done))
    batch: list[dict] = []
    last = time.monotonic()
    try:
        for row in rows:
            batch.append(row)
            progress.errors += row["status"] == "error"
            if on_row:
                on_row(row)
            if len(batch) >= BATCH_ROWS or time.monotonic() - last >= BATCH_SECONDS:
                store.add(batch)
                progress.stored += len(batch)
                batch, last = [], time.monotonic()
    except KeyboardInterrupt:
        progress.interrupted = True
    finally:
        rows.close()
        store.add(batch)
        progress.stored += len(batch)
    return progress
