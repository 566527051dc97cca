"""Benchmark: the study layer — per-task overhead of each executor, scaling from one worker to
two, and the store's write throughput."""

from __future__ import annotations

import os
import time

from harness import Row, Table, log, safe

TINY = {"study": "tiny", "kind": "drf", "seed": 1, "checks": [], "metrics": [],
        "instances": {"generate": {"users": 2}, "count": 1000},
        "methods": ["progressive-filling"]}
# a DRF leximin LP of 40,000 users: about 0.2 s a task here (instance, build and solve), as
# measured by ``scaling`` and reported in its table. HiGHS on one thread: left to itself it
# takes a second core, and two workers would then share two cores with four threads
STEADY = {"study": "steady", "kind": "drf", "seed": 1, "checks": [], "metrics": [],
          "instances": {"generate": {"users": 40_000}, "count": 40}, "methods": ["lp"],
          "solver": {"threads": 1}}


def _wall(study: dict, **execution) -> float:
    from fairalloc.studies.plan import load_study
    from fairalloc.studies.run import run_study
    from fairalloc.studies.store import Store

    plan = load_study(study)
    with Store(None) as store:
        start = time.perf_counter()
        progress = run_study(plan, store, **execution)
        wall = time.perf_counter() - start
    if progress.stored != plan.task_count or progress.errors:
        raise RuntimeError(f"{progress.stored} rows, {progress.errors} errors")
    return wall


def _compute(study: dict) -> float:
    """The tasks alone, in this process, with no store: what every executor must spend."""
    from fairalloc.studies.plan import load_study
    from fairalloc.studies.run import run_task

    tasks = list(load_study(study).tasks())
    start = time.perf_counter()
    for task in tasks:
        run_task(task)
    return time.perf_counter() - start


def overhead(quick: bool) -> Table:
    count = 1000                # tiny: about a second of work in all, even when quick
    study = {**TINY, "instances": {**TINY["instances"], "count": count}}
    compute = _compute(study)
    log(f"study overhead: {count} tiny tasks compute {compute:.3f} s in process")
    rows = []
    for case, execution, target, workers in (
            ("in process (--workers 1)", {"workers": 1}, None, 1),
            ("local pool, 2 processes", {"workers": 2}, 0.005, 2),
            ("Dask LocalCluster, 2 workers", {"cluster": ("local", 2)}, 0.010, 2)):
        def run(execution=execution, workers=workers, case=case, target=target) -> Row:
            wall = _wall(study, **execution)
            per_task = (wall - compute / workers) / count
            log(f"study overhead {case}: {wall:.2f} s, {per_task * 1e3:.2f} ms a task")
            return Row(f"{count} tiny solves, {case}: overhead a task", max(per_task, 0.0),
                       target, 1, f"wall {wall:.2f} s for {count} tasks (start-up "
                       f"included); the tasks alone take {compute / count * 1e3:.2f} ms "
                       "each in process")
        rows.append(safe(case, run, target=target))
    return Table("study-overhead", "Studies: per-task overhead",
                 "A study of tiny DRF solves (2 users, progressive filling, no checks) run "
                 "into an in-memory store. Overhead a task = (wall − the tasks' own time in "
                 "process ÷ workers) ÷ tasks: scheduling, pickling, the store's writes and the "
                 "executor's start-up. Targets: ≤ 5 ms on the local pool, ≤ 10 ms on Dask "
                 "(which sends tasks in chunks of about 0.2 s of work a future).",
                 rows)


def _pool_wall(study: dict, workers: int) -> float:
    """Wall time of the local pool of ``workers`` processes over the study's tasks."""
    from fairalloc.studies.plan import load_study
    from fairalloc.studies.run import pool

    tasks = list(load_study(study).tasks())
    start = time.perf_counter()
    rows = list(pool(tasks, workers))
    wall = time.perf_counter() - start
    if len(rows) != len(tasks) or any(r["status"] == "error" for r in rows):
        raise RuntimeError("a task failed")
    return wall


def scaling(quick: bool) -> Table:
    count = 12 if quick else STEADY["instances"]["count"]
    study = {**STEADY, "instances": {**STEADY["instances"], "count": count}}
    walls: dict[int, float] = {}

    def in_process() -> Row:
        compute = _compute(study)
        log(f"study scaling, in process: {compute / count:.3f} s a task")
        return Row(f"{count} DRF leximin LPs (40,000 users), in process", compute, None, 1,
                   f"{compute / count:.3f} s a task (aim: about 0.2 s)")
    rows = [safe("scaling in process", in_process)]
    for workers in (1, 2):
        def run(workers=workers) -> Row:
            wall = _pool_wall(study, workers)
            walls[workers] = wall
            note = f"{wall / count:.3f} s a task"
            verdict = None
            if workers == 2 and 1 in walls:
                efficiency = walls[1] / (2 * wall)
                note += f"; efficiency {efficiency:.0%} of the one-worker time halved"
                verdict = "PASS" if efficiency >= 0.8 else "MISS"
            log(f"study scaling, pool of {workers}: {wall:.2f} s")
            return Row(f"{count} DRF leximin LPs (40,000 users), pool of {workers}", wall,
                       None, 1, note, verdict=verdict)
        rows.append(safe(f"scaling {workers}", run))
    return Table("study-scaling", "Studies: one worker to two",
                 f"Tasks of about 0.2 s (the exact DRF LP at 40,000 users, HiGHS on one "
                 f"thread, no checks; their time in process is the first row) on the local "
                 f"pool of one process, then two; {os.cpu_count()} cores here. Both "
                 "walls include the pool's start-up (the per-task overhead above measures "
                 "it). Target: two workers at ≥ 80% efficiency (wall with one ÷ (2 × wall "
                 "with two)).", rows)


def store_throughput(quick: bool) -> Table:
    import datetime

    from fairalloc.studies.store import Store

    count = 20_000 if quick else 200_000

    def run() -> Row:
        now = datetime.datetime(2026, 1, 1)
        rows = [{"study": "bulk", "instance": i, "method": "m", "repeat": 0, "seed": i,
                 "status": "heuristic", "objective": 1.0 + i, "time_s": 0.001,
                 "worker": "here:1", "finished": now, "check.feasibility": "holds",
                 "metric.makespan": 2.0 + i} for i in range(count)]
        with Store(None) as store:
            store.con.execute("INSERT INTO studies VALUES ('bulk', 'moldable', 'min', 'exact', "
                              "'best', [], '{}', NULL, now()::TIMESTAMP, 'bench')")
            start = time.perf_counter()
            for k in range(0, count, 1000):
                store.add(rows[k:k + 1000])
            wall = time.perf_counter() - start
        rate = count / wall
        log(f"store: {rate:,.0f} rows/s")
        return Row(f"{count:,} rows in batches of 1,000", wall, None, 1,
                   f"{rate:,.0f} rows/s", verdict="PASS" if rate >= 10_000 else "MISS")
    return Table("study-store", "Studies: store throughput",
                 "`Store.add` of rows as the driver writes them (one transaction per batch of "
                 "1,000; 14 columns) into an in-memory DuckDB store. Target: ≥ 10,000 rows/s.",
                 [safe("store", run)])


def bench_studies(quick: bool) -> list[Table]:
    """Studies: per-task overhead (local pool ≤ 5 ms, Dask ≤ 10 ms), scaling, store rows/s."""
    return [overhead(quick), scaling(quick), store_throughput(quick)]
