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
  a ``LocalCluster`` of N worker processes, or a running scheduler. Each future carries a
  chunk of tasks (``ChunkSize``: one at first, then about ``CHUNK_SECONDS`` of work), so the
  scheduler's round trip of some milliseconds is paid per chunk, not per task; rows stream
  back with ``as_completed``, a chunk's all at once; a lost worker's chunk is run again whole
  elsewhere by the scheduler, and it is only then that its rows arrive.

A task never raises: a method that fails is a row with status ``error`` and its message, one
that does not apply to the instance a row with status ``not_applicable``. Only the driver
writes to the store, one transaction per batch (at most ``BATCH_ROWS`` rows or
``BATCH_SECONDS`` of results), and ``--resume`` skips every stored row.

Ctrl-C reaches the whole foreground process group, and HiGHS turns a KeyboardInterrupt raised
in its callback into an error status. So worker processes never see it (the pool's ignore it,
a local Dask cluster's are forked with it ignored), the driver stops them and stores only the
rows that arrived; a task Ctrl-C cut short in the driver's own process is never a row, and a
batch's transaction and the executors' shutdown finish before the run returns interrupted.
A task the infrastructure lost (its future cancelled, the scheduler gone) is no row either:
``--resume`` runs it.
"""

from __future__ import annotations

import contextlib
import fnmatch
import itertools
import json
import logging
import os
import re
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError
from dataclasses import dataclass

from fairalloc import engine
from fairalloc.contract import MethodDoesNotApply
from fairalloc.registry import KINDS
from fairalloc.result import flat_metrics
from fairalloc.spec import build
from fairalloc.studies.plan import REPLAY, Study, Task, make_instance
from fairalloc.studies.replays import replay_fields
from fairalloc.studies.store import Store, utc_now

BATCH_ROWS = 1000
BATCH_SECONDS = 1.0
WINDOW_PER_WORKER = 4          # tasks in flight per worker: enough to keep it busy
DEATHS_ALLOWED = 3             # worker processes a task may take down with it
SERIAL_SECONDS = 1.0           # the default executor runs this long in-process before a pool
HANDSHAKE_SECONDS = 10.0       # a scheduler's connect, handshake and first answer, in all
LOST = "lost"                  # a row's status when the infrastructure lost its task: not stored
CHUNK_SECONDS = 0.2            # measured work a Dask future carries: its round trip is ~5 ms
CHUNK_TASKS = 100              # at most, so a lost worker or a misjudged chunk costs little


class CtrlC:
    """The driver's Ctrl-C while a study runs. It raises KeyboardInterrupt where it lands, as
    Python's own handler does, except inside ``noted()`` or ``held()``, where it is only noted
    (a batch's transaction, a cluster's start, the executors' shutdown are never cut); ``seen``
    tells whether it came."""

    def __init__(self) -> None:
        self.seen = False
        self._holding = 0

    def _handle(self, signum, frame) -> None:
        self.seen = True
        if not self._holding:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def installed(self) -> Iterator[CtrlC]:
        """Handle SIGINT for the block (only the main thread may; elsewhere Python's own
        handler stays, and it interrupts the main thread, not this one)."""
        self.seen = False
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = signal.signal(signal.SIGINT, self._handle)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)

    @contextlib.contextmanager
    def noted(self) -> Iterator[None]:
        """Only note Ctrl-C during the block."""
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Note Ctrl-C during the block, and raise it as KeyboardInterrupt once it ends."""
        with self.noted():
            yield
        self.check()

    def check(self) -> None:
        """Raise KeyboardInterrupt if Ctrl-C came (outside a block that notes it)."""
        if self.seen and not self._holding:
            raise KeyboardInterrupt


CTRL_C = CtrlC()


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


_TASKS_RUN = [0]      # tasks this process has run: its first pays the imports and first models


def run_task(task: Task) -> dict:
    """Make the instance, solve it with the task's method, run the chosen checks: the row (a
    replay study's task: its replay played, ``studies.replays``). Its ``warm`` says whether
    this process had run a task before: a worker's first task pays one-off costs (importing a
    modelling library, the first model of its kind) that its ``time_s`` may hold, so time
    statistics leave it out."""
    warm = _TASKS_RUN[0] > 0
    _TASKS_RUN[0] += 1
    start = time.perf_counter()
    try:
        if task.recipe[0] == REPLAY:
            return task_row(task, worker=worker_name(), warm=warm, finished=utc_now(),
                            **replay_fields(task))
        raw = make_instance(task.kind, task.recipe, task.instance.seed, task.edits)
        if task.options:
            raw = {**raw, "options": {**raw.get("options", {}), **dict(task.options)}}
        spec = build(raw, None)
        result = engine.solve(spec, task.method, task.checks != (), False, task.checks,
                              engine.SolverSettings(**dict(task.solver)))
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
    return task_row(task, worker=worker_name(), warm=warm,
                    finished=utc_now(), **fields)


def lost(task: Task, why: str, status: str = "error") -> dict:
    """The row of a task the infrastructure could not run: an ``error`` when the task itself
    is to blame (it keeps killing workers), else ``LOST`` (not stored; ``--resume`` runs it)."""
    return task_row(task, status=status, error=why,
                    finished=utc_now())


def run_in_driver(task: Task) -> dict:
    """``run_task`` in the driver's own process. A task Ctrl-C cut short raises
    KeyboardInterrupt instead of being a row: HiGHS turns the KeyboardInterrupt raised in its
    callback into an error status, which would store the interruption as the method's error."""
    row = run_task(task)
    CTRL_C.check()
    return row


def run_chunk(tasks: tuple[Task, ...]) -> tuple[list[dict], float]:
    """``run_task`` of each task in turn: their rows, and the seconds they took in all."""
    start = time.perf_counter()
    rows = [run_task(task) for task in tasks]
    return rows, time.perf_counter() - start


class ChunkSize:
    """How many tasks the next chunk carries: one until a chunk's time is measured, then
    enough for ``CHUNK_SECONDS`` at the task time measured so far, at most twice the largest
    chunk sent yet (a few quick tasks first say little of the rest) and at most
    ``CHUNK_TASKS``. The task time is the larger of the mean over every chunk and the mean
    over the latest: a study whose tasks grow (a grid of sizes) gets smaller chunks as soon
    as one slower chunk comes back, not once the overall mean has caught up.

    >>> size = ChunkSize(); first = size.next(); size.measured(1, 0.002)
    >>> first, size.next(), size.next(), size.next()
    (1, 2, 4, 8)
    >>> size.measured(2, 0.004); size.measured(4, 0.008); size.measured(4, 0.4)
    >>> size.next()         # 0.1 s a task in the latest chunk, 0.04 s over all
    2
    """

    def __init__(self) -> None:
        self.tasks = 0
        self.seconds = 0.0
        self.latest = 0.0           # the latest chunk's seconds a task
        self.largest = 1

    def measured(self, tasks: int, seconds: float) -> None:
        """A chunk of ``tasks`` took ``seconds`` on its worker."""
        self.tasks += tasks
        self.seconds += seconds
        self.latest = seconds / tasks

    def next(self) -> int:
        """The size of the chunk about to be sent (the largest sent so far is noted)."""
        if not self.tasks:
            return 1
        task = max(self.seconds / self.tasks, self.latest)
        fits = int(CHUNK_SECONDS / task) if task > 0 else CHUNK_TASKS
        size = max(1, min(fits, 2 * self.largest, CHUNK_TASKS))
        self.largest = max(self.largest, size)
        return size


def serial(tasks: Iterable[Task]) -> Iterator[dict]:
    for task in tasks:
        yield run_in_driver(task)


def _ignore_ctrl_c() -> None:
    """A pool worker's initializer: Ctrl-C, sent to the whole process group, is the driver's
    to handle; inside HiGHS it would turn the task into an error row."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _end(executor) -> None:
    """Cancel the pool's waiting tasks and end its worker processes now: a task in flight is
    lost (``--resume`` runs it), and waiting for a HiGHS run to finish would keep Ctrl-C
    waiting. (No public way to end the workers before Python 3.14's ``terminate_workers``.)"""
    processes = list((executor._processes or {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()


def _forkserver():
    """Workers forked from a single-threaded server that has fairalloc imported: a fork from
    this (threaded) process can leak one worker's death pipe into another, and a pool then
    never notices that a worker was killed. A kind registered at run time is not in the
    server: run such studies with ``--workers 1``, or register the kind by entry point.
    The server is started with Ctrl-C ignored, which it and every process it forks inherit
    from their first instruction (a handler set in the child would leave a window; a blocked
    signal is not inherited through its exec, and a Ctrl-C then killed the server in its
    imports). The driver's main thread blocks it meanwhile, so that a Ctrl-C sent to it then
    stays pending and is taken once the server runs, and one already pending is noted before
    ignoring it would discard it (ignoring alone lost a Ctrl-C that came during the start,
    and the study ran on to its end). A signal another thread of the driver takes in that
    window is still lost."""
    import multiprocessing
    from multiprocessing import forkserver

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["fairalloc.studies.run", "fairalloc.engine",
                                    "fairalloc.registry"])
    if threading.current_thread() is threading.main_thread():
        with CTRL_C.held():
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            came = signal.SIGINT in signal.sigpending()
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                forkserver.ensure_running()
            finally:
                signal.signal(signal.SIGINT, previous)
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)    # a pending one: taken
            if came and callable(previous):
                previous(signal.SIGINT, None)
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

    def start():
        return ProcessPoolExecutor(max_workers=workers, mp_context=context,
                                   initializer=_ignore_ctrl_c)

    executor = start()
    flight: dict = {}
    try:
        while True:
            broken = False
            while len(flight) < window and not broken:
                task = retry.pop() if retry else next(todo, None)
                if task is None:
                    break
                try:
                    with CTRL_C.held():     # a worker process Ctrl-C caught mid-start would
                        # be no process of the pool's to end, and fail alone after the driver
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
                _end(executor)
                executor = start()
    finally:
        with CTRL_C.noted():        # a second Ctrl-C does not cut the workers' end short
            _end(executor)


def adaptive(tasks: Iterable[Task], workers: int) -> Iterator[dict]:
    """Serial in this process until ``SERIAL_SECONDS`` have passed, then a pool of
    ``workers`` for the tasks left (none left: no pool is started)."""
    todo = iter(tasks)
    start = time.monotonic()
    for task in todo:
        yield run_in_driver(task)
        if time.monotonic() - start >= SERIAL_SECONDS:
            break
    rest = next(todo, None)
    if rest is not None:
        yield from pool(itertools.chain([rest], todo), workers)


ADDRESS = re.compile(r"tcp://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9._-]*):([0-9]{1,5})")


def parse_cluster(text: str) -> tuple[str, int | str]:
    """``local:N`` -> ("local", N); ``tcp://HOST:PORT`` -> ("address", it). Dask's other
    transports (``tls://`` needs security settings, ``ucx://``, ``inproc://``) are refused.

    >>> parse_cluster("local:2"), parse_cluster("tcp://10.0.0.5:8786")
    (('local', 2), ('address', 'tcp://10.0.0.5:8786'))
    """
    if text.startswith("local:"):
        count = text.removeprefix("local:")
        if not count.isdigit() or not 1 <= int(count) <= 1024:
            raise ValueError(f"{text!r}: local:N takes N from 1 to 1024 worker processes")
        return "local", int(count)
    found = ADDRESS.fullmatch(text)
    if found is None or not 1 <= int(found[2]) <= 65535:
        raise ValueError(f"{text!r}: expected local:N or a scheduler address tcp://HOST:PORT "
                         "(PORT from 1 to 65535)")
    return "address", text


def connect(address: str, seconds: float = HANDSHAKE_SECONDS):
    """A ``Client`` of the Dask scheduler at ``address`` once it has answered a first call,
    all within ``seconds``; else ConnectionError in one line. Client's own timeout bounds
    only the connect, and a service that is not a scheduler makes it hang or raise anything
    (MemoryError on an HTTP answer's bytes read as a frame length, struct.error)."""
    from dask.distributed import Client

    outcome: dict = {}

    def attempt() -> None:
        try:
            client = Client(address, timeout=f"{seconds}s")
            outcome["client"] = client
            client.nthreads()
            outcome["answered"] = True
        except Exception as exc:      # whatever the service's bytes make of the protocol
            outcome["error"] = exc

    thread = threading.Thread(target=attempt, name="fairalloc-connect", daemon=True)
    thread.start()
    thread.join(seconds)
    if "answered" in outcome:
        return outcome["client"]
    if "client" in outcome:
        outcome["client"].close()
    if thread.is_alive():
        why = f"no answer within {seconds:g} s (is it a Dask scheduler?)"
    else:
        exc = outcome["error"]
        name = type(exc).__name__ if type(exc).__module__ == "builtins" else \
            f"{type(exc).__module__}.{type(exc).__name__}"
        text = f"{name}: {(str(exc).splitlines() or [''])[0][:120]}"
        why = text if isinstance(exc, OSError) else \
            f"the service there does not answer in Dask's protocol ({text})"
    raise ConnectionError(f"cannot reach a Dask scheduler at {address}: {why}")


def dask(tasks: Iterable[Task], cluster: tuple[str, int | str]) -> Iterator[dict]:
    """Run on a ``dask.distributed`` cluster: a ``LocalCluster`` of N single-threaded worker
    processes (forked from ``_forkserver``, so only the driver sees Ctrl-C), or the scheduler
    at an address. ``as_completed`` streams rows back; a task whose workers keep dying (Dask's
    ``KilledWorker``) becomes an error row, one whose future was cancelled or whose scheduler
    was lost a ``LOST`` row."""
    from dask import config
    from dask.distributed import Client, LocalCluster

    how, what = cluster
    if how == "address":
        yield from _on_dask(tasks, connect(what))
        return
    _forkserver()
    with config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
        with CTRL_C.noted():        # a cluster cut mid-start fails its close at exit, loudly
            local = LocalCluster(n_workers=what, threads_per_worker=1, processes=True,
                                 # its HTTP server on loopback, any free port (none given:
                                 # 8787, and a warning when that is taken)
                                 dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
            client = Client(local)
        yield from _on_dask(tasks, client, local)


def _on_dask(tasks: Iterable[Task], client, local=None) -> Iterator[dict]:
    """``dask``'s rows from ``client``, a future per chunk of tasks; closes it and the
    ``local`` cluster when done. A chunk that fails as a whole other than by being lost
    (``KilledWorker``: its workers keep dying) is run again a task a future, so that only the
    task to blame becomes an error row."""
    from dask.distributed import as_completed

    try:
        CTRL_C.check()
        slots = sum(client.nthreads().values()) or 1
        todo = iter(tasks)
        size = ChunkSize()
        flight: dict = {}
        done = as_completed()

        def submit(chunk: tuple[Task, ...]) -> None:
            if chunk:
                future = client.submit(run_chunk, chunk, pure=False)
                flight[future.key] = chunk
                done.add(future)

        def submit_next() -> None:
            submit(tuple(itertools.islice(todo, size.next())))

        for _ in range(max(slots * WINDOW_PER_WORKER, 8)):
            submit_next()
        for future in done:
            chunk = flight.pop(future.key)
            try:
                rows, seconds = future.result()
                size.measured(len(chunk), seconds)
            except (CancelledError, OSError) as exc:   # cancelled, or the scheduler lost
                rows = [lost(task, f"{type(exc).__name__}: {exc}"[:2000], LOST)
                        for task in chunk]
            except Exception as exc:   # KilledWorker: a task keeps killing workers
                if len(chunk) > 1:
                    rows = []
                    for task in chunk:
                        submit((task,))
                else:
                    rows = [lost(chunk[0], f"{type(exc).__name__}: {exc}"[:2000])]
            future.release()
            yield from rows
            submit_next()
    finally:
        with CTRL_C.noted():        # a second Ctrl-C does not cut the cluster's close short
            client.close()
            if local is not None:
                local.close()


@dataclass
class Progress:
    """What a run did: rows stored now, rows found stored before, error rows, tasks the
    infrastructure lost (not stored), and whether it was interrupted."""

    total: int
    skipped: int
    stored: int = 0
    errors: int = 0
    lost: int = 0
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
    run, its workers and tasks in flight, after storing the rows that arrived
    (``Progress.interrupted``); ``--resume`` continues. A ``LOST`` row is counted, not stored.
    ``on_start`` sees the totals once the store is open, ``on_row`` every row."""
    done = store.open_study(study, resume)
    progress = Progress(total=study.task_count, skipped=len(done))
    if on_start:
        on_start(progress)
    rows = rows_of(study.tasks(done), workers, cluster, study.task_count - len(done))
    batch: list[dict] = []
    last = time.monotonic()
    with CTRL_C.installed():
        try:
            for row in rows:
                if row["status"] == LOST:
                    progress.lost += 1
                    continue
                batch.append(row)
                progress.errors += row["status"] == "error"
                if on_row:
                    on_row(row)
                if len(batch) >= BATCH_ROWS or time.monotonic() - last >= BATCH_SECONDS:
                    with CTRL_C.held():
                        store.add(batch)
                        progress.stored += len(batch)
                        batch, last = [], time.monotonic()
        except KeyboardInterrupt:
            progress.interrupted = True
        finally:
            with CTRL_C.noted():
                rows.close()
                store.add(batch)
                progress.stored += len(batch)
            progress.interrupted |= CTRL_C.seen
    return progress
